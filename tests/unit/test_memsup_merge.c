/* test_memsup_merge.c: memsup with the shim (the merged view) end to end,
 * on workloads of known shape and heap (tests/progs/merge_tree.c,
 * merge_static.c).  processes.json, timeline.jsonl and resources.json are
 * parsed by python3's json module; each check script asserts and the test
 * fails with its message.
 *
 * Heap tolerance: a malloc of N bytes served by mmap has a usable size of N
 * rounded up to a page, and the program's own small allocations add a few
 * KiB, so a heap peak must lie in [N, N + 64 KiB]. */
#include "test_memsup_util.h"
#include "collect/trace.h"

/* Run `script` (python3) with the evidence directory as argv[1]; a prelude
 * loads P (processes.json), R (resources.json), T (timeline.jsonl lines)
 * and defines img(pid, gen) and a heap check. */
static void py_check(const struct sup_run *r, const char *script)
{
	static const char prelude[] =
		"import json, os, sys\n"
		"D = sys.argv[1]\n"
		"P = json.load(open(D + '/processes.json'))\n"
		"R = json.load(open(D + '/resources.json'))\n"
		"T = [json.loads(l) for l in open(D + '/timeline.jsonl')]\n"
		"def img(pid, gen):\n"
		"    m = [p for p in P if p['pid'] == pid and p['gen'] == gen]\n"
		"    assert len(m) == 1, 'no single image %d.%d in %s' % (pid, gen, P)\n"
		"    return m[0]\n"
		"def heap_ok(p, n):\n"
		"    h = p['record']['heap_peak']\n"
		"    assert n <= h <= n + 65536, 'heap peak %d of %s not in [%d, +64KiB]' % (h, p['argv'], n)\n";
	char path[PATH_MAX + 32], cmd[2 * PATH_MAX + 64], out[8192];
	snprintf(path, sizeof path, "%s/check.py", r->tmp);
	FILE *f = fopen(path, "w");
	cr_assert_not_null(f);
	fputs(prelude, f);
	fputs(script, f);
	fclose(f);
	snprintf(cmd, sizeof cmd, "python3 '%s' '%s' 2>&1", path, r->dir);
	FILE *p = popen(cmd, "r");
	cr_assert_not_null(p);
	size_t n = fread(out, 1, sizeof out - 1, p);
	out[n] = '\0';
	int st = pclose(p);
	cr_assert_eq(st, 0, "check failed:\n%s\nmemsup stderr:\n%s", out, r->err);
}

/* A fork+exec tree: four images with the right lineage, exact heap peaks,
 * statuses, and a timeline whose heap column holds the three blocks at
 * once -- and not more. */
Test(memsup_merge, tree_lineage_heaps_and_timeline, .timeout = 30)
{
	struct sup_run r;
	const char *args[] = { "--", prog("merge_tree"), "tree", "20", "30", "40", "400", NULL };
	cr_assert_eq(memsup_run(&r, args), 0, "stderr: %s", r.err);
	py_check(&r,
		 "assert R['traced'] is True and R['exit_code'] == 0\n"
		 "assert os.path.isdir(D + '/records')\n"
		 "assert len(P) == 4, [(p['pid'], p['gen'], p['argv']) for p in P]\n"
		 "assert all(p['traced'] and p['record_error'] is None for p in P)\n"
		 "assert R['processes_traced'] == 4\n"
		 "root = img(R['pid'], 0)\n"
		 "assert root['lineage']['relation'] == 'root' and root['argv'][1] == 'tree'\n"
		 "assert root['sampled'] and root['exit_code'] == 0\n"
		 "heap_ok(root, 20000000)\n"
		 "kids = [p for p in P if p['pid'] != root['pid']]\n"
		 "a = [p for p in kids if p['record']['state'] == 'exited' and p['gen'] == 0]\n"
		 "assert len(a) == 1, kids\n"
		 "a = a[0]\n"
		 "assert a['lineage'] == {'relation': 'fork', 'parent_pid': root['pid'], 'parent_gen': 0, 'guessed': False}, a['lineage']\n"
		 "heap_ok(a, 30000000)\n"
		 "assert a['sampled'] and a['polled_peak_rss'] >= 30000000 and a['exit_code'] == 0\n"
		 "b1 = [p for p in kids if p['gen'] == 1]\n"
		 "assert len(b1) == 1\n"
		 "b1 = b1[0]\n"
		 "b0 = img(b1['pid'], 0)\n"
		 "assert b0['lineage']['relation'] == 'fork' and b0['lineage']['parent_pid'] == root['pid']\n"
		 "assert b0['record']['state'] == 'execed'\n"
		 "assert b1['lineage'] == {'relation': 'exec', 'parent_pid': b1['pid'], 'parent_gen': 0, 'guessed': False}\n"
		 "assert b1['argv'][1:] == ['leaf', '40', '400', '3'], b1['argv']\n"
		 "heap_ok(b1, 40000000)\n"
		 "assert b1['record']['heap_current'] < 65536, 'the leaf frees its block'\n"
		 "assert b1['exit_code'] == 3 and b1['sampled']\n"
		 "assert b1['polled_peak_rss'] >= 40000000\n"
		 "assert b1['vm_hwm_from'] == 'shim' and b1['vm_hwm_kb'] * 1024 >= 40000000\n"
		 "assert b1['record']['largest_request'] == 40000000\n"
		 "assert b1['record']['calls']['malloc'] >= 1 and b1['record']['calls']['free'] >= 1\n"
		 "# the timeline: one line per sample, the three blocks live at once\n"
		 "assert len(T) == R['samples']\n"
		 "for l in T:\n"
		 "    assert set(['t', 'rss', 'processes', 'heap', 'mapped_anon', 'mapped_file']) <= set(l), l\n"
		 "hmax = max(l['heap'] for l in T)\n"
		 "assert 90000000 <= hmax <= 90000000 + 3 * 65536, hmax\n"
		 "assert any('pss' in l for l in T)\n"
		 "assert max(l['rss'] for l in T) / 1e6 == R['peak_tree_rss_mb']\n"
		 "# the peak sample, broken down\n"
		 "assert 90.0 <= R['peak_heap_mb'] <= 90.2, R['peak_heap_mb']\n"
		 "assert R['peak_pss_mb'] is not None and R['peak_pss_mb'] >= 75, R['peak_pss_mb']\n"
		 "for p, n in ((root, 20e6), (a, 30e6), (b1, 40e6)):\n"
		 "    assert p['at_peak'] and p['at_peak']['heap'] >= n and p['at_peak']['rss'] >= n, p\n"
		 "assert isinstance(R['blind_spots'], list)\n");
	/* the summary's per-process table names the leaf */
	cr_expect_not_null(strstr(r.err, "leaf 40 400 3"), "summary: %s", r.err);
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
	py_check(&r,
		 "assert len(P) == 1 and P[0]['traced'], P\n"
		 "heap_ok(P[0], 5000000 + 4096)\n"
		 "assert P[0]['record']['calls']['malloc'] >= 3, P[0]['record']['calls']\n"
		 "assert R['env']['LD_PRELOAD'].endswith('libshimctor.so')\n");
}

/* --no-trace: polling alone -- no records, nothing traced, why said. */
Test(memsup_merge, no_trace_polls_alone, .timeout = 30)
{
	struct sup_run r;
	const char *args[] = { "--no-trace", "--", prog("merge_tree"), "tree", "10", "10", "10",
			       "300", NULL };
	cr_assert_eq(memsup_run(&r, args), 0, "stderr: %s", r.err);
	py_check(&r,
		 "assert not os.path.exists(D + '/records')\n"
		 "assert R['traced'] is False and R['processes_traced'] == 0\n"
		 "assert R['processes_sampled'] >= 3, R['processes_sampled']\n"
		 "assert R['peak_heap_mb'] is None and R['peak_mapped_mb'] is None\n"
		 "assert len(P) >= 3\n"
		 "for p in P:\n"
		 "    assert not p['traced'] and p['record'] is None\n"
		 "    assert p['untraced_why'] == 'not_requested', p\n"
		 "assert all(l['heap'] is None for l in T)\n"
		 "assert any(p['argv'][1:2] == ['tree'] for p in P)\n");
}

/* A static binary never loads the shim: sampled, not traced, "static". */
Test(memsup_merge, static_binary_is_untraced, .timeout = 30)
{
	struct sup_run r;
	const char *args[] = { "--", prog("merge_static"), "20", "400", NULL };
	cr_assert_eq(memsup_run(&r, args), 0, "stderr: %s", r.err);
	py_check(&r,
		 "assert R['traced'] is True and R['processes_traced'] == 0\n"
		 "assert len(P) == 1, P\n"
		 "p = P[0]\n"
		 "assert p['pid'] == R['pid'] and not p['traced'] and p['sampled']\n"
		 "assert p['untraced_why'] == 'static', p['untraced_why']\n"
		 "assert p['polled_peak_rss'] >= 20000000\n"
		 "assert p['argv'][1:] == ['20', '400'], p['argv']\n"
		 "assert p['exit_code'] == 0\n");
}

/* env -i drops the shim: env's image is traced, the program it execs is
 * not (no_preload), and it is the next generation of the same pid. */
Test(memsup_merge, scrubbed_env_exec_is_next_image, .timeout = 30)
{
	struct sup_run r;
	const char *args[] = { "--", "/usr/bin/env", "-i", prog("merge_tree"), "hold", "10", "400",
			       NULL };
	cr_assert_eq(memsup_run(&r, args), 0, "stderr: %s", r.err);
	py_check(&r,
		 "e = img(R['pid'], 0)\n"
		 "assert e['traced'] and e['record']['state'] == 'execed', e\n"
		 "h = img(R['pid'], 1)\n"
		 "assert not h['traced'] and h['sampled'], h\n"
		 "assert h['untraced_why'] == 'no_preload', h['untraced_why']\n"
		 "assert h['argv'][1:] == ['hold', '10', '400'], h['argv']\n"
		 "assert h['lineage']['relation'] == 'exec' and h['lineage']['parent_gen'] == 0\n"
		 "assert h['polled_peak_rss'] >= 10000000\n"
		 "assert h['exit_code'] == 0\n"
		 "assert len(P) == 2\n");
}

/* SIGKILL: no exit handler ran, the record is still read (state running,
 * the heap it had), and memsup's wait status says -9. */
Test(memsup_merge, sigkilled_record_still_read, .timeout = 30)
{
	struct sup_run r;
	const char *args[] = { "--", prog("merge_tree"), "killed", "30", NULL };
	cr_assert_eq(memsup_run(&r, args), 128 + 9, "stderr: %s", r.err);
	py_check(&r,
		 "assert len(P) == 1 and P[0]['traced'], P\n"
		 "p = P[0]\n"
		 "assert p['record']['state'] == 'running'\n"
		 "heap_ok(p, 30000000)\n"
		 "assert p['record']['heap_current'] >= 30000000\n"
		 "assert p['exit_code'] == -9\n");
}

/* A child that lives between two polls is traced but not sampled; its
 * heap is known all the same.  With --poll-ms 5000 the only sample is the
 * first one, taken before the parent forks (it sleeps 150 ms first). */
Test(memsup_merge, unsampled_child_is_traced, .timeout = 30)
{
	struct sup_run r;
	const char *args[] = { "--poll-ms", "5000", "--", prog("merge_tree"), "quick", NULL };
	cr_assert_eq(memsup_run(&r, args), 0, "stderr: %s", r.err);
	py_check(&r,
		 "assert len(P) == 2, P\n"
		 "root = img(R['pid'], 0)\n"
		 "assert root['sampled'] and root['traced']\n"
		 "c = [p for p in P if p is not root][0]\n"
		 "assert c['traced'] and not c['sampled'] and c['samples'] == 0\n"
		 "assert c['polled_peak_rss'] is None and c['first_seen_s'] is None\n"
		 "heap_ok(c, 1000000)\n"
		 "assert c['lineage']['relation'] == 'fork' and c['lineage']['parent_pid'] == root['pid']\n"
		 "assert R['processes_traced'] == 2 and R['processes_sampled'] == 1\n");
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
	py_check(&r,
		 "assert R['traced'] is False\n"
		 "assert any('libmemtrace.so' in n and 'not traced' in n for n in R['notes']), R['notes']\n"
		 "assert not os.path.exists(D + '/records')\n"
		 "assert len(P) == 1 and P[0]['untraced_why'] == 'not_requested'\n");
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
	py_check(&r,
		 "assert len(P) == 1, P\n"
		 "p = P[0]\n"
		 "if p['traced']:\n"
		 "    raise SystemExit('secure mode did not apply (nosuid mount?): traced')\n"
		 "assert p['sampled'] and p['untraced_why'] == 'secure', p['untraced_why']\n"
		 "assert p['polled_peak_rss'] >= 10000000\n");
}
