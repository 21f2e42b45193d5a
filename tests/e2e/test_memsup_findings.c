/* test_memsup_findings.c: memsup's blind_spots end to end.
 *
 * Each test runs the built memsup ($MEMSUP) on a workload with known sizes
 * ($MT_PROGS, tests/progs/bs_*.c and a few older ones) and checks
 * resources.json's "blind_spots" and processes.json with python3 (a real
 * JSON parser, not ours): tests/py/memsup_findings.py, one check per test.  Each finding has a workload that must produce it
 * with the right figures; bs_clean must produce none.
 *
 * Sizes are decimal MB.  A workload block of M MB is M rounded up to 2 MiB
 * (M = 50: 50.3 MB; 150: 151.0; 300: 302.0), plus 1-3 MB of program per
 * process, so bounds leave that much room.  The shim's mapping figures
 * count the whole mmap, which has 2 MiB more for the alignment.  Nothing here asserts a time:
 * where polling could catch or miss something by luck, the assertion is an
 * invariant instead (sequential children: one poll sees at most one child)
 * or the workload itself proves what the poller could not have seen
 * (bs_transient). */
#include "test_cgprobe.h"
#include "test_memsup_util.h"
#include "test_py.h"

/* Run the check named `name` of tests/py/memsup_findings.py (the test's
 * own name) on r->dir with an extra argument; fail the test with python's
 * output if it raises.  Removes the run's temporary directory when all is
 * well. */
static void check(struct sup_run *r, const char *name, const char *arg)
{
	char cmd[2 * PATH_MAX + 600];
	snprintf(cmd, sizeof cmd, "python3 '%s' '%s' '%s' '%s' 2>&1",
		 py_script("memsup_findings.py"), name, r->dir, arg ? arg : "");
	static char out[16384];
	int st = py_output(cmd, out, sizeof out);
	cr_assert_eq(st, 0, "check %s failed:\n%s\nmemsup stderr:\n%s", name, out, r->err);
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", r->tmp);
	if (system(cmd) != 0)
		cr_log_warn("could not remove %s", r->tmp);
}

/* A clean workload: nothing to explain, an empty list (and the key is
 * there, a list, not null). */
Test(memsup_findings, clean_run_has_empty_list, .timeout = 30)
{
	struct sup_run r;
	const char *args[] = { "--", prog("bs_clean"), "20", "400", NULL };
	cr_assert_eq(memsup_run(&r, args), 0, "stderr: %s", r.err);
	check(&r, "clean_run_has_empty_list", NULL);
	cr_expect_null(strstr(r.err, "memsup: transient_peak"), "%s", r.err);
}

/* 300 MB between polls: bs_transient proves that no poll ran while its last
 * 31.5 MB were resident, so the finding must name that child, with VmHWM
 * the full spike and the polled figure no more than the visible part. */
Test(memsup_findings, transient_peak_of_a_spike_between_polls, .timeout = 60)
{
	struct sup_run r;
	const char *args[] = { "--", prog("bs_transient"), "300", "30", NULL };
	cr_assert_eq(memsup_run(&r, args), 0, "stderr: %s", r.err);
	check(&r, "transient_peak_of_a_spike_between_polls", NULL);
}

/* 40 sequential children of 50 MB: every one in processes.json with its own
 * peak, whether or not a poll caught it; those no poll saw are the
 * unsampled_processes finding. */
Test(memsup_findings, forty_short_children_all_with_their_peaks, .timeout = 60)
{
	struct sup_run r;
	const char *args[] = { "--", prog("bs_seqkids"), "40", "50", "3", NULL };
	cr_assert_eq(memsup_run(&r, args), 0, "stderr: %s", r.err);
	check(&r, "forty_short_children_all_with_their_peaks", NULL);
}

/* The same at 200 ms polls: one poll can see at most one of the sequential
 * children, so at least 40 - samples of them are unsampled, each with its
 * peak from the shim. */
Test(memsup_findings, unsampled_processes_between_slow_polls, .timeout = 60)
{
	struct sup_run r;
	const char *args[] = { "--poll-ms", "200", "--", prog("bs_seqkids"), "40", "50", "3", NULL };
	cr_assert_eq(memsup_run(&r, args), 0, "stderr: %s", r.err);
	check(&r, "unsampled_processes_between_slow_polls", NULL);
}

/* A fork tree: four children of 40 MB at once.  time -v's figure is one
 * child; the tree held all four. */
Test(memsup_findings, rusage_children_largest_child_vs_sum, .timeout = 30)
{
	struct sup_run r;
	const char *args[] = { "--", prog("forktree"), "4", "40", "400", NULL };
	cr_assert_eq(memsup_run(&r, args), 0, "stderr: %s", r.err);
	check(&r, "rusage_children_largest_child_vs_sum", NULL);
}

/* A fat parent posix_spawns a small program: the kernel carries the
 * parent's maxrss into the child's ru_maxrss. */
Test(memsup_findings, rusage_exec_floor_small_child_of_fat_parent, .timeout = 30)
{
	struct sup_run r;
	const char *args[] = { "--", prog("bs_execfloor"), "200", "300", NULL };
	cr_assert_eq(memsup_run(&r, args), 0, "stderr: %s", r.err);
	check(&r, "rusage_exec_floor_small_child_of_fat_parent", NULL);
}

/* 150 MB mmapped directly: resident, and no heap explains it. */
Test(memsup_findings, non_heap_memory_of_a_direct_mmap, .timeout = 30)
{
	struct sup_run r;
	const char *args[] = { "--", prog("steady"), "150", "400", NULL };
	cr_assert_eq(memsup_run(&r, args), 0, "stderr: %s", r.err);
	check(&r, "non_heap_memory_of_a_direct_mmap", NULL);
}

/* Three readers of the parent's 300 MB: summed RSS counts it four times,
 * Pss once. */
Test(memsup_findings, shared_pages_three_readers, .timeout = 60)
{
	struct sup_run r;
	const char *args[] = { "--", prog("bs_readers"), "300", "3", "500", NULL };
	cr_assert_eq(memsup_run(&r, args), 0, "stderr: %s", r.err);
	check(&r, "shared_pages_three_readers", NULL);
}

/* The answer is the kernel's where the run has a memory cgroup: a run
 * without one fails where this test could make one (test_cgprobe.h). */
static void require_kernel_answer(struct sup_run *r)
{
	rec_load(r);
	const char *src = rec_str(r, "peak_source");
	if (!src || strcmp(src, "\"cgroup\"") != 0)
		cgprobe_skip_or_fail("memory", "the answer is %s, not the cgroup's peak: %s",
				     src ? src : "missing", rec_str(r, "containment"));
}

/* The demo: 20 MB in a parent, 40 MB more in each of three fork children
 * at once.  The answer is the 140 MB the tree held (within 3 %), and the
 * findings' figures add up to it from each other figure. */
Test(memsup_findings, demo_answer_and_gaps_add_up, .timeout = 30)
{
	struct sup_run r;
	const char *args[] = { "--", prog("demo_tree"), NULL };
	cr_assert_eq(memsup_run(&r, args), 0, "stderr: %s", r.err);
	require_kernel_answer(&r);
	cr_expect_not_null(strstr(r.err, "memsup: peak "), "the answer first: %s", r.err);
	cr_expect(strncmp(strstr(r.err, "memsup: "), "memsup: peak ", 13) == 0,
		  "the summary begins with the answer: %s", r.err);
	check(&r, "demo_answer_and_gaps_add_up", NULL);
}

/* Without a memory cgroup (--cgroup off) the answer is the polled Pss,
 * labelled so, and no finding claims a kernel figure. */
Test(memsup_findings, demo_without_cgroup_is_labelled_polled, .timeout = 30)
{
	struct sup_run r;
	const char *args[] = { "--cgroup", "off", "--", prog("demo_tree"), NULL };
	cr_assert_eq(memsup_run(&r, args), 0, "stderr: %s", r.err);
	cr_expect_not_null(strstr(r.err, "memsup: peak "), "%s", r.err);
	cr_expect_not_null(strstr(r.err, "polled"), "%s", r.err);
	check(&r, "demo_without_cgroup_is_labelled_polled", NULL);
}

/* A small build (the C compiler on six files, two at a time): whatever the
 * page cache held before, each finding that compares a figure with the
 * answer says what the figures say, and none says the opposite. */
Test(memsup_findings, build_findings_match_the_answer, .timeout = 90)
{
	struct sup_run r;
	static const char build[] =
		"set -e; d=$(mktemp -d); trap 'rm -rf \"$d\"' EXIT; cd \"$d\"; "
		"for i in 1 2 3 4 5 6; do "
		"printf '#include <stdio.h>\\nint f%s(int x){printf(\"%%d\", x); return x*%s;}\\n' "
		"$i $i > f$i.c; done; "
		"for p in '1 2' '3 4' '5 6'; do set -- $p; "
		"cc -O2 -c f$1.c & cc -O2 -c f$2.c & wait; done; ls f6.o";
	const char *args[] = { "--", "sh", "-c", build, NULL };
	cr_assert_eq(memsup_run(&r, args), 0, "stderr: %s", r.err);
	require_kernel_answer(&r);
	check(&r, "build_findings_match_the_answer", NULL);
}

/* 64 MB of POSIX shared memory read by four processes: summed RSS counts it
 * four times, the answer once. */
Test(memsup_findings, shm_readers_counted_once, .timeout = 30)
{
	struct sup_run r;
	const char *args[] = { "--", prog("shm_readers"), "64", "500", NULL };
	cr_assert_eq(memsup_run(&r, args), 0, "stderr: %s", r.err);
	require_kernel_answer(&r);
	check(&r, "shm_readers_counted_once", NULL);
}

/* 1000 MB requested, 16 MB written: the heap figure is named as memory
 * never touched, and the answer is what was resident. */
Test(memsup_findings, untouched_heap_named, .timeout = 30)
{
	struct sup_run r;
	const char *args[] = { "--", prog("untouched"), "1000", "16", "300", NULL };
	cr_assert_eq(memsup_run(&r, args), 0, "stderr: %s", r.err);
	require_kernel_answer(&r);
	check(&r, "untouched_heap_named", NULL);
}

/* 200 MB written into a memfd and held for 2 s: shared memory in the
 * cgroup's peak and in every sample's cgroup usage, in no process's RSS.
 * Nothing came and went between two polls, so no transient_peak. */
Test(memsup_findings, memfd_held_steadily_is_no_transient, .timeout = 30)
{
	struct sup_run r;
	const char *args[] = { "--", prog("memkinds"), "memfd", "200", "2000", NULL };
	cr_assert_eq(memsup_run(&r, args), 0, "stderr: %s", r.err);
	require_kernel_answer(&r);
	check(&r, "memfd_held_steadily_is_no_transient", NULL);
}

/* alloc_script asks for SIZE_MAX - 4096 and 2^63 + 5 bytes among its
 * requests; both fail.  A genuine record whose largest request no address
 * space could serve is still believed: the process is traced, no
 * implausible_record. */
Test(memsup_findings, failed_huge_request_is_believed, .timeout = 30)
{
	struct sup_run r;
	const char *args[] = { "--", prog("alloc_script"), NULL };
	cr_assert_eq(memsup_run(&r, args), 0, "stderr: %s", r.err);
	check(&r, "failed_huge_request_is_believed", NULL);
}

/* The same workload with jemalloc before the shim in LD_PRELOAD: the
 * program's malloc is jemalloc's, the shim sees no heap at all, and its
 * mapping figures hold jemalloc's own.  The process is named as one whose
 * heap was not seen; nothing says its memory was never touched, and the
 * heap is unknown (null), not 0. */
Test(memsup_findings, heap_not_seen_under_another_allocator, .timeout = 30)
{
	static const char *const where[] = {
		"/usr/lib/x86_64-linux-gnu/libjemalloc.so.2",
		"/usr/lib/aarch64-linux-gnu/libjemalloc.so.2",
		"/usr/lib64/libjemalloc.so.2",
	};
	const char *je = NULL;
	for (size_t i = 0; !je && i < sizeof where / sizeof where[0]; i++)
		if (access(where[i], R_OK) == 0)
			je = where[i];
	if (!je)
		cr_skip_test("libjemalloc.so.2 not installed (Debian: libjemalloc2)");
	char env[PATH_MAX + 16];
	snprintf(env, sizeof env, "LD_PRELOAD=%s", je);
	struct sup_run r;
	const char *args[] = { "-e", env, "--", prog("untouched"), "1000", "16", "300", NULL };
	cr_assert_eq(memsup_run(&r, args), 0, "stderr: %s", r.err);
	check(&r, "heap_not_seen_under_another_allocator", NULL);
}

/* Debian's python3.11 is a non-PIE program that takes malloc's address
 * (its raw allocator table): the link gives the undefined "malloc" of its
 * dynamic symbol table the PLT stub's address as value, and the shim took
 * that for another allocator's definition.  Its 100 MB heap, which the
 * hooks counted, was then said unknown (heap_not_seen).  It is the shim's. */
Test(memsup_findings, a_program_taking_mallocs_address_keeps_its_heap, .timeout = 60)
{
	const char *py = "/usr/bin/python3.11";
	if (access(py, X_OK) < 0)
		cr_skip_test("%s is not installed (Debian 12's python3)", py);
	struct sup_run r;
	const char *args[] = { "--", py, "-c",
			       "b = bytearray(100 * 1000 * 1000); b[::4096] = b'x' * len(b[::4096])",
			       NULL };
	cr_assert_eq(memsup_run(&r, args), 0, "stderr: %s", r.err);
	check(&r, "a_program_taking_mallocs_address_keeps_its_heap", NULL);
}

/* A field of /proc/meminfo, or -1. */
static long meminfo_field(const char *key)
{
	char buf[8192], *at;
	slurp("/proc/meminfo", buf, sizeof buf);
	if (!(at = strstr(buf, key)))
		return -1;
	return strtol(at + strlen(key), NULL, 10);
}

static long read_long_file(const char *path)
{
	char buf[64];
	slurp(path, buf, sizeof buf);
	return buf[0] ? strtol(buf, NULL, 10) : -1;
}

static int write_long_file(const char *path, long v)
{
	FILE *f = fopen(path, "w");
	if (!f)
		return -1;
	int ok = fprintf(f, "%ld\n", v) > 0;
	return fclose(f) == 0 && ok ? 0 : -1;
}

/* 40 MB of huge pages (MAP_HUGETLB), every page written and held for a
 * second: VmHWM never counts them, so the shim's anonymous mapping figure
 * (41.9 MB) against VmHWM (about 2 MB) must not be called requested and
 * never touched.  The process is named as one that mapped huge pages.
 * Needs 20 free 2 MiB pages in the pool: as root the test adds them for the
 * run and puts the pool back; otherwise it skips, saying why. */
Test(memsup_findings, hugetlb_touched_is_not_called_untouched, .timeout = 30)
{
	static const char nr[] = "/proc/sys/vm/nr_hugepages";
	long size_kb = meminfo_field("Hugepagesize:"), free_pages = meminfo_field("HugePages_Free:");
	long was = read_long_file(nr), want = 20;
	if (size_kb != 2048 || free_pages < 0 || was < 0)
		cr_skip_test("no 2 MiB huge pages here (Hugepagesize %ld kB)", size_kb);
	int grown = 0;
	if (free_pages < want) {
		if (geteuid() != 0 || write_long_file(nr, was + want - free_pages) < 0)
			cr_skip_test("%ld free huge pages, 20 needed, and %s cannot be raised here "
				     "(not root)", free_pages, nr);
		grown = 1;
	}
	struct sup_run r;
	const char *args[] = { "--", prog("memkinds"), "hugetlb", "40", "1000", NULL };
	int st = memsup_run(&r, args);
	if (grown && write_long_file(nr, was) < 0)
		cr_log_warn("could not put %s back to %ld", nr, was);
	if (st == 3)
		cr_skip_test("the huge page pool did not serve 40 MB (%ld free pages)",
			     meminfo_field("HugePages_Free:"));
	cr_assert_eq(st, 0, "stderr: %s", r.err);
	check(&r, "hugetlb_touched_is_not_called_untouched", NULL);
}

/* A static binary and an env -i child, at the same time: both named, with
 * why the shim is not in them. */
Test(memsup_findings, untraced_static_and_env_i, .timeout = 30)
{
	struct sup_run r;
	const char *args[] = { "--", prog("bs_untraced"), prog("bs_static"), prog("steady"), "500", NULL };
	cr_assert_eq(memsup_run(&r, args), 0, "stderr: %s", r.err);
	check(&r, "untraced_static_and_env_i", NULL);
}

/* --no-trace: said once for the run, not per process. */
Test(memsup_findings, no_trace_says_untraced_once, .timeout = 30)
{
	struct sup_run r;
	/* 300 ms a child: a memsup held off the CPU for a quarter of a
	 * second under a loaded suite (seen) still samples the tree */
	const char *args[] = { "--no-trace", "--", prog("bs_seqkids"), "3", "10", "300", NULL };
	cr_assert_eq(memsup_run(&r, args), 0, "stderr: %s", r.err);
	check(&r, "no_trace_says_untraced_once", NULL);
}

/* A Python parent starts a Python child that allocates 200 MB: the memory
 * is the child's, by argv. */
Test(memsup_findings, python_child_owns_its_memory, .timeout = 60)
{
	/* the interpreter itself, not a wrapper script on PATH (pyenv's shims
	 * are bash scripts that start a dozen processes of their own) */
	FILE *f = popen("python3 -c 'import sys; print(sys.executable)'", "r");
	cr_assert_not_null(f);
	char py[PATH_MAX] = "";
	if (!fgets(py, sizeof py, f))
		py[0] = '\0';
	pclose(f);
	py[strcspn(py, "\n")] = '\0';
	if (!py[0])
		cr_skip_test("python3 not available");
	char script[PATH_MAX];
	snprintf(script, sizeof script, "%s/tests/progs/bs_pychild.py", env_or_skip("MT_SRCDIR"));
	struct sup_run r;
	const char *args[] = { "--", py, script, "200", "400", NULL };
	cr_assert_eq(memsup_run(&r, args), 0, "stderr: %s", r.err);
	check(&r, "python_child_owns_its_memory", NULL);
}

/* The escaper's grandchild leaves the session: tracked, killed, named. */
Test(memsup_findings, escaped_descendant_tracked_and_killed, .timeout = 30)
{
	struct sup_run r;
	tmp_make(&r);
	char pidfile[PATH_MAX + 16];
	snprintf(pidfile, sizeof pidfile, "%s/escapee.pid", r.tmp);
	const char *args[] = { "--", prog("escaper"), pidfile, "20", "300", NULL };
	memsup_start(&r, 1, args);
	cr_assert_eq(memsup_wait(&r), 0, "stderr: %s", r.err);
	char text[64] = "";
	slurp(pidfile, text, sizeof text);
	cr_assert_gt(atoi(text), 0, "no escapee pid");
	check(&r, "escaped_descendant_tracked_and_killed", pidfile);
	cr_expect(!pid_alive(atoi(text)), "the escapee survived");
}

/* A child that leaves the session after the poller last looked at it (its
 * third sample), left behind when the main process exits: killed as a
 * leftover, and named by the escaped finding all the same -- its session
 * is read again as it is killed. */
Test(memsup_findings, late_setsid_leftover_is_escaped, .timeout = 30)
{
	struct sup_run r;
	tmp_make(&r);
	char pidfile[PATH_MAX + 16];
	snprintf(pidfile, sizeof pidfile, "%s/child.pid", r.tmp);
	const char *args[] = { "--no-trace", "--", prog("late_setsid"), pidfile, "300", NULL };
	memsup_start(&r, 1, args);
	cr_assert_eq(memsup_wait(&r), 0, "stderr: %s", r.err);
	char text[64] = "";
	slurp(pidfile, text, sizeof text);
	cr_assert_gt(atoi(text), 0, "no child pid");
	check(&r, "late_setsid_leftover_is_escaped", pidfile);
	cr_expect(!pid_alive(atoi(text)), "the child survived");
}

/* --rss-mb 100 on a grower: how far past the budget the last sample was. */
Test(memsup_findings, budget_overshoot_of_a_grower, .timeout = 30)
{
	struct sup_run r;
	const char *args[] = { "--rss-mb", "100", "--", prog("grower"), "8", "20", NULL };
	cr_assert_eq(memsup_run(&r, args), 123, "stderr: %s", r.err);
	check(&r, "budget_overshoot_of_a_grower", NULL);
}

/* A record file that fails validation is named and never trusted; the
 * process's real record still is. */
Test(memsup_findings, corrupt_record_not_trusted, .timeout = 30)
{
	struct sup_run r;
	const char *args[] = { "--", prog("bs_corrupt"), "10", "300", NULL };
	cr_assert_eq(memsup_run(&r, args), 0, "stderr: %s", r.err);
	check(&r, "corrupt_record_not_trusted", NULL);
}

/* A fork child that holds its parent's 60 MB until it execs: the tree's
 * peak counts the block twice, and the finding must say so in every run,
 * smaps read or not (it was once named in some runs of a suite, not others). */
Test(memsup_findings, fork_child_before_exec_is_named, .timeout = 60)
{
	struct sup_run r;
	const char *args[] = { "--", prog("bs_forkexec"), "60", "800", NULL };
	cr_assert_eq(memsup_run(&r, args), 0, "stderr: %s", r.err);
	check(&r, "fork_child_before_exec_is_named", NULL);
}

/* A command that forges records with valid headers (pid 1, never in the
 * tree; a "child" of its own whose VmHWM no machine has) and a marker naming
 * init: none of it is believed, used for a total, or said to be killed
 * (memsup once reported pid 1 with 9e18 MB, 4294967271 markers
 * dropped, init's /proc figures at the marker). */
Test(memsup_findings, forged_records_and_markers_not_believed, .timeout = 30)
{
	struct sup_run r;
	const char *args[] = { "--", prog("x_forge"), "10", "300", NULL };
	cr_assert_eq(memsup_run(&r, args), 0, "stderr: %s", r.err);
	cr_expect_null(strstr(r.err, "    1 "), "pid 1 in the summary: %s", r.err);
	check(&r, "forged_records_and_markers_not_believed", NULL);
}

/* Runs `sh -c "echo > STARTED; TAIL"` under memsup with the budget option
 * `opt` = `val`, stops memsup (SIGSTOP) as soon as the command runs, well
 * before any budget, for 3 s, then lets it finish: no sample in between. */
static void run_stopped_for_3s(struct sup_run *r, const char *opt, const char *val,
			       const char *tail)
{
	char started[PATH_MAX + 16], script[2 * PATH_MAX + 64];
	tmp_make(r);
	snprintf(started, sizeof started, "%s/started", r->tmp);
	snprintf(script, sizeof script, "echo > '%s'; %s", started, tail);
	const char *args[] = { opt, val, "--", "/bin/sh", "-c", script, NULL };
	memsup_start(r, 1, args);
	cr_assert(wait_for_file(started), "the command never started");
	cr_assert_eq(kill(r->pid, SIGSTOP), 0);
	sleep(3);
	cr_assert_eq(kill(r->pid, SIGCONT), 0);
	cr_assert_eq(memsup_wait(r), 0, "stderr: %s", r->err);
}

/* memsup itself stopped for 3 s while its wall budget of 1 s passes and
 * the command (sleep 2) ends: no sample in the gap, so the record must say
 * there was a gap, how long, and that the budget passed unenforced inside
 * it (it used to exit 0 with nothing said). */
Test(memsup_findings, sampling_gap_while_memsup_is_stopped, .timeout = 60)
{
	struct sup_run r;
	run_stopped_for_3s(&r, "--wall-s", "1", "exec sleep 2");
	check(&r, "sampling_gap_while_memsup_is_stopped", NULL);
}

/* An RSS budget crossed while memsup was stopped: the samples never saw
 * it, so memsup cannot have enforced it, but the process's own VmHWM
 * proves it happened; the gap finding must say so. */
Test(memsup_findings, rss_budget_crossed_inside_a_gap, .timeout = 60)
{
	struct sup_run r;
	char tail[PATH_MAX + 64];
	snprintf(tail, sizeof tail, "sleep 0.5; exec '%s' 60 100", prog("bs_clean"));
	run_stopped_for_3s(&r, "--rss-mb", "30", tail);
	check(&r, "rss_budget_crossed_inside_a_gap", NULL);
}
