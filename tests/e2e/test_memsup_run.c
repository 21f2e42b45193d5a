/* test_memsup_run.c: memsup end to end on workloads with known sizes.
 * Sizes are decimal MB; a workload block of M MB is M rounded up to 2 MiB
 * (huge pages) plus about 1 MB of program per process, so the bounds below
 * leave that much room and a little more for a noisy machine. */
#include "test_memsup_util.h"
#include <sys/prctl.h>

/* steady 60 MB: the peak is the block, not more, not less. */
Test(memsup_run, steady_peak_within_tolerance, .timeout = 30)
{
	struct sup_run r;
	const char *args[] = { "--", prog("steady"), "60", "400", NULL };
	cr_assert_eq(memsup_run(&r, args), 0, "stderr: %s", r.err);
	rec_load(&r);
	double peak = rec_num(&r, "peak_tree_rss_mb");
	cr_expect_geq(peak, 60.0, "peak %.1f MB below the 60 MB held", peak);
	cr_expect_leq(peak, 70.0, "peak %.1f MB far above the 60 MB held", peak);
	cr_expect_eq(rec_num(&r, "exit_code"), 0);
	cr_expect_eq(rec_num(&r, "exit_status"), 0);
	cr_expect_str_eq(rec_str(&r, "reason"), "null");
	cr_expect_str_eq(rec_str(&r, "signal"), "null");
	cr_expect_str_eq(rec_str(&r, "wall_budget_s"), "null");
	cr_expect_str_eq(rec_str(&r, "rss_budget_mb"), "null");
	cr_expect_geq(rec_num(&r, "samples"), 10);
	cr_expect_geq(rec_num(&r, "max_processes"), 1);
	cr_expect_str_eq(rec_str(&r, "leftover_processes_killed"), "[]");
	double at = rec_num(&r, "peak_tree_rss_at_s"), wall = rec_num(&r, "wall_s");
	cr_expect(at > 0 && at <= wall, "peak at %.3f s outside the run (%.3f s)", at, wall);
	cr_expect_gt(rec_num(&r, "poll_interval_p99_s"), 0);
	cr_expect_eq(rec_num(&r, "poll_s"), 0.01);
	/* the summary names the evidence directory */
	cr_expect_not_null(strstr(r.err, "/ev"), "summary: %s", r.err);
}

/* The summary's heap beside other tools' figures says it is malloc's
 * usable bytes, not the bytes asked for that heaptrack, massif and
 * memusage count. */
Test(memsup_run, other_figures_heap_says_usable, .timeout = 30)
{
	struct sup_run r;
	const char *args[] = { "--", prog("steady"), "60", "400", NULL };
	cr_assert_eq(memsup_run(&r, args), 0, "stderr: %s", r.err);
	const char *line = strstr(r.err, "memsup: other figures:");
	cr_assert_not_null(line, "%s", r.err);
	const char *heap = strstr(line, ", heap peak ");
	cr_assert_not_null(heap, "a traced run's heap: %s", line);
	const char *eol = strchr(heap, '\n');
	const char *usable = strstr(heap, " MB (usable sizes)");
	cr_expect(usable && (!eol || usable < eol), "%s", line);
	sup_done(&r);
}

/* rss.jsonl: one [elapsed_s, bytes] line per sample, measure_command's
 * format (scripts/memsup.py), and its maximum is the recorded peak. */
Test(memsup_run, rss_jsonl_matches_record, .timeout = 30)
{
	struct sup_run r;
	const char *args[] = { "--", prog("steady"), "30", "300", NULL };
	cr_assert_eq(memsup_run(&r, args), 0, "stderr: %s", r.err);
	rec_load(&r);
	char path[PATH_MAX + 16];
	snprintf(path, sizeof path, "%s/rss.jsonl", r.dir);
	FILE *f = fopen(path, "r");
	cr_assert_not_null(f);
	char line[256];
	unsigned long lines = 0;
	double max = 0, prev = -1;
	while (fgets(line, sizeof line, f)) {
		double t;
		unsigned long long b;
		char tail;
		cr_assert_eq(sscanf(line, "[%lf, %llu%c", &t, &b, &tail), 3, "bad line %s", line);
		cr_assert_eq(tail, ']');
		cr_assert_gt(t, prev, "time goes backwards: %s", line);
		prev = t;
		if ((double)b > max)
			max = (double)b;
		lines++;
	}
	fclose(f);
	cr_expect_eq((double)lines, rec_num(&r, "samples"));
	cr_expect_eq(max / 1e6, rec_num(&r, "peak_tree_rss_mb"));
}

/* Four children hold 30 MB each at once: the tree's peak is the SUM, well
 * above the largest process -- which is all getrusage(RUSAGE_CHILDREN) (and
 * so `time -v`) can see. */
Test(memsup_run, forktree_peak_is_sum_of_children, .timeout = 30)
{
	struct sup_run r;
	const char *args[] = { "--", prog("forktree"), "4", "30", "400", NULL };
	cr_assert_eq(memsup_run(&r, args), 0, "stderr: %s", r.err);
	rec_load(&r);
	double peak = rec_num(&r, "peak_tree_rss_mb");
	cr_expect_geq(peak, 4 * 30.0, "peak %.1f MB is not the sum of 4 x 30 MB", peak);
	cr_expect_leq(peak, 4 * 30.0 + 20, "peak %.1f MB too high", peak);
	cr_expect_geq(rec_num(&r, "max_processes"), 5);
	double ru = rec_num(&r, "rusage_children_maxrss_mb");
	cr_expect(ru >= 30 && ru < 45, "getrusage maxrss %.1f MB should be one child", ru);
	cr_expect_gt(peak, 2.5 * ru);
}

/* --discovery is how the /proc scan finds the tree: without a cgroup.  The
 * children hold their 30 MB together for 1 s: at 300 ms a loaded machine
 * (make distcheck in CI) once gave the scan no sample with all three. */
static double forktree_peak(const char *discovery, char *method, size_t cap)
{
	struct sup_run r;
	const char *args[] = { "--cgroup", "off", "--discovery", discovery, "--",
			       prog("forktree"), "3", "30", "1000", NULL };
	cr_assert_eq(memsup_run(&r, args), 0, "stderr: %s", r.err);
	rec_load(&r);
	snprintf(method, cap, "%.31s", rec_str(&r, "discovery"));
	return rec_num(&r, "peak_tree_rss_mb");
}

/* auto runs the scan, and says so; both see the whole fork tree. */
Test(memsup_run, discovery_scan_matches_auto, .timeout = 40)
{
	char m1[32], m2[32];
	double scan = forktree_peak("scan", m1, sizeof m1);
	double aut = forktree_peak("auto", m2, sizeof m2);
	cr_expect_str_eq(m1, "\"scan\"");
	cr_expect_str_eq(m2, "\"scan\"");
	cr_expect_geq(scan, 90.0);
	cr_expect_geq(aut, 90.0);
	cr_expect_leq(scan > aut ? scan - aut : aut - scan, 6.0,
		      "scan %.1f MB vs auto %.1f MB", scan, aut);
}

/* The ppid scan and the children files see the same tree: the same peak
 * within a few MB. */
Test(memsup_run, discovery_children_matches_scan, .timeout = 40)
{
	if (access("/proc/self/task/self/children", R_OK) != 0) {
		char p[64];
		snprintf(p, sizeof p, "/proc/%d/task/%d/children", (int)getpid(), (int)getpid());
		if (access(p, R_OK) != 0)
			cr_skip_test("this kernel has no children files");
	}
	char m1[32], m2[32];
	double scan = forktree_peak("scan", m1, sizeof m1);
	double kids = forktree_peak("children", m2, sizeof m2);
	cr_expect_str_eq(m2, "\"children\"");
	cr_expect_leq(scan > kids ? scan - kids : kids - scan, 6.0,
		      "scan %.1f MB vs children %.1f MB", scan, kids);
}

/* A double-fork + setsid escapee is measured while it lives, killed when
 * the main process exits, and listed in the record. */
Test(memsup_run, escaper_is_measured_killed_and_listed, .timeout = 30)
{
	if (prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) < 0)
		cr_skip_test("no PR_SET_CHILD_SUBREAPER: memsup cannot keep escapees");
	prctl(PR_SET_CHILD_SUBREAPER, 0, 0, 0, 0);
	struct sup_run r;
	char pidfile[PATH_MAX + 16];
	tmp_make(&r);
	snprintf(pidfile, sizeof pidfile, "%s/escapee.pid", r.tmp);
	const char *args[] = { "--", prog("escaper"), pidfile, "20", "300", NULL };
	memsup_start(&r, 1, args);
	cr_assert_eq(memsup_wait(&r), 0, "stderr: %s", r.err);
	char text[64];
	slurp(pidfile, text, sizeof text);
	pid_t esc = (pid_t)atoi(text);
	cr_assert_gt(esc, 0, "escaper wrote no pid");
	cr_expect(!pid_alive(esc), "escapee %d outlived memsup", (int)esc);
	rec_load(&r);
	char needle[64];
	snprintf(needle, sizeof needle, "{\"pid\": %d, \"argv\": [", (int)esc);
	const char *left = rec_str(&r, "leftover_processes_killed");
	cr_expect_not_null(strstr(left, needle), "escapee %d not listed: %s", (int)esc, left);
	cr_expect_not_null(strstr(left, "escaper"), "argv not recorded: %s", left);
	cr_expect_geq(rec_num(&r, "peak_tree_rss_mb"), 20.0);
	cr_expect_eq(rec_num(&r, "exit_code"), 0);
	/* memsup, the subreaper, reaped the escapee itself: killed, -9 */
	snprintf(needle, sizeof needle, "{\"pid\": %d, \"exit_code\": -9}", (int)esc);
	const char *orph = rec_str(&r, "orphans_reaped");
	cr_expect_not_null(strstr(orph, needle), "escapee %d not reaped by memsup: %s", (int)esc, orph);
}

/* `path` holds chatty's `total` bytes of pattern with `line` (stderr's
 * one write) once, after the pattern or, in the log where the two streams
 * meet, inside it at a write's boundary: memsup reads the two pipes apart,
 * and memsup(1), OUTPUT, allows a few of one stream's writes to land
 * before the other's that came first.  Every pattern byte must be there,
 * in order, and nothing else. */
static void expect_chatty(const char *path, size_t total, const char *line, int line_last)
{
	size_t ll = strlen(line);
	struct stat st;
	cr_assert_eq(stat(path, &st), 0);
	cr_assert_eq((size_t)st.st_size, total + ll, "%s", path);
	char *buf = malloc(total + ll + 1);
	cr_assert_not_null(buf);
	FILE *f = fopen(path, "rb");
	cr_assert_not_null(f);
	cr_assert_eq(fread(buf, 1, total + ll, f), total + ll);
	fclose(f);
	buf[total + ll] = '\0';
	size_t at = total;
	if (ll) {
		/* the pattern is letters and newlines: the line (a colon, a
		 * space) can only be found where it was put */
		const char *hit = strstr(buf, line);
		cr_assert_not_null(hit, "%s: no \"%s\"", path, line);
		at = (size_t)(hit - buf);
		if (line_last)
			cr_assert_eq(at, total, "%s: the line at byte %zu, not at the end", path, at);
		memmove(buf + at, buf + at + ll, total - at);
	}
	for (size_t k = 0; k < total; k++) {
		char want = k % 64 == 63 ? '\n' : (char)('a' + k % 26);
		if (buf[k] != want) {
			char got = buf[k];
			free(buf);
			cr_assert_fail("%s byte %zu is %d, not %d (the line was at %zu)", path, k,
				       got, want, at);
		}
	}
	free(buf);
}

/* stdout.log holds exactly what the command wrote to stdout and stderr;
 * memsup's own stdout and stderr got the same streams apart (tee). */
Test(memsup_run, chatty_output_is_complete, .timeout = 30)
{
	struct sup_run r;
	const size_t total = 20000000;
	/* the whole log: by default (--log-max) it keeps the first and last MiB */
	const char *args[] = { "-q", "--log-max", "unlimited", "--", prog("chatty"), "20000000",
			       NULL };
	cr_assert_eq(memsup_run(&r, args), 0, "stderr: %s", r.err);
	cr_expect_str_eq(r.err, "chatty: done\n", "-q printed: %s", r.err);
	char path[PATH_MAX + 16];
	snprintf(path, sizeof path, "%s/memsup.stdout", r.tmp);
	expect_chatty(path, total, "", 1);
	unlink(path);
	snprintf(path, sizeof path, "%s/stdout.log", r.dir);
	expect_chatty(path, total, "chatty: done\n", 0);
}

/* --json prints the same record on stdout: alone with --output log, after
 * the command's own stdout with tee. */
Test(memsup_run, json_on_stdout, .timeout = 30)
{
	struct sup_run r;
	const char *args[] = { "--json", "-q", "--output", "log", "-e", "MT_TEST_A=1", "-e",
			       "MT_TEST_A=2", "--", prog("steady"), "4", "50", NULL };
	cr_assert_eq(memsup_run(&r, args), 0, "stderr: %s", r.err);
	char path[PATH_MAX + 32];
	snprintf(path, sizeof path, "%s/resources.json", r.dir);
	static char file[65536], both[65536 + 256];
	slurp(path, file, sizeof file);
	cr_expect_str_eq(r.out, file);
	struct sup_run t;
	const char *targs[] = { "--json", "-q", "--", "echo", "from the command", NULL };
	cr_assert_eq(memsup_run(&t, targs), 0, "stderr: %s", t.err);
	snprintf(path, sizeof path, "%s/resources.json", t.dir);
	slurp(path, file, sizeof file);
	snprintf(both, sizeof both, "from the command\n%s", file);
	cr_expect_str_eq(t.out, both);
	rec_load(&r);
	cr_expect_str_eq(rec_str(&r, "env"), "{\"MT_TEST_A\": \"2\"}");
}

/* -e reaches the command, -C is its working directory. */
Test(memsup_run, env_and_cwd_reach_the_command, .timeout = 30)
{
	struct sup_run r;
	tmp_make(&r);
	const char *args[] = { "-C", "/usr", "-e", "MT_HELLO=wor ld", "--", "/bin/sh", "-c",
			       "echo \"$MT_HELLO\"; pwd", NULL };
	memsup_start(&r, 1, args);
	cr_assert_eq(memsup_wait(&r), 0, "stderr: %s", r.err);
	char path[PATH_MAX + 16], log[256];
	snprintf(path, sizeof path, "%s/stdout.log", r.dir);
	slurp(path, log, sizeof log);
	cr_expect_str_eq(log, "wor ld\n/usr\n");
	rec_load(&r);
	cr_expect_str_eq(rec_str(&r, "cwd"), "\"/usr\"");
}

/* The command's exit status passes through. */
Test(memsup_run, exit_status_passes_through, .timeout = 30)
{
	struct sup_run r;
	const char *args[] = { "--", prog("spike"), "4", "50", "0", "3", NULL };
	cr_assert_eq(memsup_run(&r, args), 3, "stderr: %s", r.err);
	rec_load(&r);
	cr_expect_eq(rec_num(&r, "exit_code"), 3);
	cr_expect_eq(rec_num(&r, "exit_status"), 3);
}

/* A command killed by a signal: 128+N, exit_code -N (Python's convention). */
Test(memsup_run, killed_by_signal, .timeout = 30)
{
	struct sup_run r;
	char sig[8];
	snprintf(sig, sizeof sig, "%d", SIGUSR1);
	const char *args[] = { "--", prog("spike"), "10", "100", sig, NULL };
	cr_assert_eq(memsup_run(&r, args), 128 + SIGUSR1, "stderr: %s", r.err);
	rec_load(&r);
	cr_expect_eq(rec_num(&r, "exit_code"), -SIGUSR1);
	cr_expect_eq(rec_num(&r, "signal"), SIGUSR1);
	cr_expect_str_eq(rec_str(&r, "reason"), "null");
	cr_expect_geq(rec_num(&r, "peak_tree_rss_mb"), 10.0);
}
