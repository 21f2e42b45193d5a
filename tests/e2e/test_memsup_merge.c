/* test_memsup_merge.c: memsup with the shim (the merged view) end to end,
 * on workloads of known shape and heap (tests/progs/merge_tree.c,
 * merge_static.c).  processes.json, timeline.jsonl and resources.json are
 * parsed by python3's json module; each check (tests/py/memsup_merge.py,
 * one per test) asserts and the test fails with its message.
 *
 * Heap tolerance: a malloc of N bytes served by mmap has a usable size of N
 * rounded up to a page, and the program's own small allocations add a few
 * KiB, so a heap peak must lie in [N, N + 64 KiB]. */
#include "test_memsup_util.h"
#include "collect/trace.h"
#include "test_py.h"

/* Run the check named `name` of tests/py/memsup_merge.py (the test's own
 * name) with the evidence directory; fail the test with its output if it
 * raises. */
static void py_check(const struct sup_run *r, const char *name)
{
	char cmd[2 * PATH_MAX + 128], out[8192];
	snprintf(cmd, sizeof cmd, "python3 '%s' '%s' '%s' 2>&1", py_script("memsup_merge.py"),
		 name, r->dir);
	int st = py_output(cmd, out, sizeof out);
	cr_assert_eq(st, 0, "check %s failed:\n%s\nmemsup stderr:\n%s", name, out, r->err);
}

/* A fork+exec tree: four images with the right lineage, exact heap peaks,
 * statuses, and a timeline whose heap column holds the three blocks at
 * once -- and not more. */
Test(memsup_merge, tree_lineage_heaps_and_timeline, .timeout = 30)
{
	struct sup_run r;
	const char *args[] = { "--", prog("merge_tree"), "tree", "20", "30", "40", "400", NULL };
	cr_assert_eq(memsup_run(&r, args), 0, "stderr: %s", r.err);
	py_check(&r, "tree_lineage_heaps_and_timeline");
	/* the summary's per-process table names the leaf */
	cr_expect_not_null(strstr(r.err, "leaf 40 400 3"), "summary: %s", r.err);
}

/* One record layout (common/recordjson.h): each image that ended by exit
 * wrote its own JSON through MEMTRACE_OUT (the shim's writer), and
 * processes.json's "record" for it is the same figures, key for key and
 * value for value; its identity keys are the image's own there.  The tree
 * forks and execs, and its three exits are read back from two writers. */
Test(memsup_merge, record_json_is_the_shims_own, .timeout = 30)
{
	struct sup_run r;
	tmp_make(&r);
	char env[PATH_MAX + 32];
	snprintf(env, sizeof env, "MEMTRACE_OUT=%s", sup_tmp_path(&r, "shim.%p.json"));
	const char *args[] = { "-e", env, "--", prog("merge_tree"), "tree", "20", "30", "40", "400", NULL };
	memsup_start(&r, 1, args); /* in the temporary directory made above */
	cr_assert_eq(memsup_wait(&r), 0, "stderr: %s", r.err);
	char cmd[3 * PATH_MAX + 128], out[8192];
	snprintf(cmd, sizeof cmd, "python3 '%s' record_json_is_the_shims_own '%s' '%s' 2>&1",
		 py_script("memsup_merge.py"), r.dir, r.tmp);
	int st = py_output(cmd, out, sizeof out);
	cr_assert_eq(st, 0, "check failed:\n%s\nmemsup stderr:\n%s", out, r.err);
}

/* The user's own LD_PRELOAD is kept (its constructor prints a line) and
 * the shim is appended (the process has a record that counted that
 * constructor's three mallocs). */
Test(memsup_merge, user_preload_kept_and_shim_appended, .timeout = 30)
{
	struct sup_run r;
	char env[PATH_MAX + 32];
	snprintf(env, sizeof env, "LD_PRELOAD=%s/.libs/libshimctor.so", env_or_skip("MT_PROGS"));
	cr_assert(path_exists(env + strlen("LD_PRELOAD=")), "%s missing", env);
	const char *args[] = { "-e", env, "--", prog("merge_tree"), "hold", "5", "100", NULL };
	cr_assert_eq(memsup_run(&r, args), 0, "stderr: %s", r.err);
	char log[4096], path[PATH_MAX + 32];
	snprintf(path, sizeof path, "%s/stdout.log", r.dir);
	slurp(path, log, sizeof log);
	cr_expect_not_null(strstr(log, "ctor_usable="), "the user's preload did not run: %s", log);
	py_check(&r, "user_preload_kept_and_shim_appended");
}

/* --no-trace: polling alone -- no records, nothing traced, why said. */
Test(memsup_merge, no_trace_polls_alone, .timeout = 30)
{
	struct sup_run r;
	const char *args[] = { "--no-trace", "--", prog("merge_tree"), "tree", "10", "10", "10",
			       "300", NULL };
	cr_assert_eq(memsup_run(&r, args), 0, "stderr: %s", r.err);
	py_check(&r, "no_trace_polls_alone");
}

/* A static binary never loads the shim: sampled, not traced, "static". */
Test(memsup_merge, static_binary_is_untraced, .timeout = 30)
{
	struct sup_run r;
	const char *args[] = { "--", prog("merge_static"), "20", "400", NULL };
	cr_assert_eq(memsup_run(&r, args), 0, "stderr: %s", r.err);
	py_check(&r, "static_binary_is_untraced");
}

/* env -i drops the shim: env's image is traced, the program it execs is
 * not (no_preload), and it is the next generation of the same pid. */
Test(memsup_merge, scrubbed_env_exec_is_next_image, .timeout = 30)
{
	struct sup_run r;
	const char *args[] = { "--", "/usr/bin/env", "-i", prog("merge_tree"), "hold", "10", "400",
			       NULL };
	cr_assert_eq(memsup_run(&r, args), 0, "stderr: %s", r.err);
	py_check(&r, "scrubbed_env_exec_is_next_image");
}

/* SIGKILL: no exit handler ran, the record is still read (state running,
 * the heap it had), and memsup's wait status says -9. */
Test(memsup_merge, sigkilled_record_still_read, .timeout = 30)
{
	struct sup_run r;
	const char *args[] = { "--", prog("merge_tree"), "killed", "30", NULL };
	cr_assert_eq(memsup_run(&r, args), 128 + 9, "stderr: %s", r.err);
	py_check(&r, "sigkilled_record_still_read");
}

/* A child that lives between two polls is traced but not sampled; its
 * heap is known all the same.  With --poll-ms 5000 the only sample is the
 * first one, taken before the parent forks (it sleeps 150 ms first). */
Test(memsup_merge, unsampled_child_is_traced, .timeout = 30)
{
	struct sup_run r;
	const char *args[] = { "--poll-ms", "5000", "--", prog("merge_tree"), "quick", NULL };
	cr_assert_eq(memsup_run(&r, args), 0, "stderr: %s", r.err);
	py_check(&r, "unsampled_child_is_traced");
}

/* A memsup binary with no shim beside it (and none installed): the run
 * goes on untraced and says so, on stderr and in notes. */
Test(memsup_merge, missing_shim_is_a_note, .timeout = 30)
{
	char inst[PATH_MAX + 64];
	snprintf(inst, sizeof inst, "%s/libmemtrace.so", trace_pkglibdir());
	if (path_exists(inst))
		cr_skip_test("a shim is installed in %s", inst);
	struct sup_run r;
	tmp_make(&r);
	char copy[PATH_MAX + 32], cmd[2 * PATH_MAX + 64];
	snprintf(copy, sizeof copy, "%s/memsup", r.tmp);
	snprintf(cmd, sizeof cmd, "cp '%s' '%s'", env_or_skip("MEMSUP"), copy);
	cr_assert_eq(system(cmd), 0);
	setenv("MEMSUP", copy, 1);
	const char *args[] = { "--", prog("merge_tree"), "hold", "1", "400", NULL };
	memsup_start(&r, 1, args);
	cr_assert_eq(memsup_wait(&r), 0, "stderr: %s", r.err);
	cr_expect_not_null(strstr(r.err, "libmemtrace.so"), "stderr: %s", r.err);
	py_check(&r, "missing_shim_is_a_note");
}

/* A setuid program runs in secure mode: the loader ignores the shim.  It
 * is sampled, untraced, and said to be "secure" (from its real and
 * effective uids in /proc/PID/status, readable whoever runs it).  Needs
 * root to make a program setuid to another user. */
Test(memsup_merge, setuid_program_is_secure, .timeout = 30)
{
	if (geteuid() != 0)
		cr_skip_test("needs root to make a setuid program");
	struct sup_run r;
	tmp_make(&r);
	char copy[PATH_MAX + 32], cmd[4 * PATH_MAX + 256];
	snprintf(copy, sizeof copy, "%s/merge_tree_suid", r.tmp);
	snprintf(cmd, sizeof cmd, "cp '%s' '%s' && chown 65534 '%s' && chmod 4755 '%s'",
		 prog("merge_tree"), copy, copy, copy);
	cr_assert_eq(system(cmd), 0);
	chmod(r.tmp, 0755);
	const char *args[] = { "--", copy, "hold", "10", "400", NULL };
	memsup_start(&r, 1, args);
	cr_assert_eq(memsup_wait(&r), 0, "stderr: %s", r.err);
	py_check(&r, "setuid_program_is_secure");
}
