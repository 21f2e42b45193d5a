/* test_memsup_cgroup.c: memsup in a cgroup of the run's own, end to end on
 * this machine's layout (the hybrid one here; any that lets memsup make a
 * cgroup): the command starts inside and the cgroups are gone afterwards,
 * the kernel's peak catches a spike no poll saw, --mem-max holds a grower
 * with zero overshoot, fork bombs stop at --max-procs, a SIGKILLed memsup
 * leaves nothing alive (nor does one its pids guard kills, cgroups
 * included), and where no cgroup can be had (--cgroup off, a user
 * without rights) the record says so.  A test that needs a cgroup
 * and finds that memsup fell back to the /proc scan skips, saying why,
 * where the test itself can make no such cgroup either, and fails where it
 * can (test_cgprobe.h): a fallback on a machine that has cgroups is a bug,
 * not a missing precondition.  The fork bombs run only inside the suite's
 * pids-limited cgroup (guard_require). */
#include "test_cgprobe.h"
#include "test_guard.h"
#include "test_memsup_harden.h"
#include "test_repeat.h"

#include <dirent.h>
#include <sys/wait.h>

/* The record's containment says the run had a cgroup; else skip, or fail
 * where the test can make memory and pids cgroups itself. */
static void require_cgroup(struct sup_run *r)
{
	const char *c = rec_str(r, "containment");
	cr_assert_not_null(c, "no containment in the record");
	if (strstr(c, "\"mode\": \"procscan\""))
		cgprobe_skip_or_fail("memory+pids", "memsup made no cgroup: %s", c);
}

/* The record's containment.paths, one by one: the i-th into buf, or 0. */
static int rec_path(struct sup_run *r, int i, char *buf, size_t cap)
{
	const char *c = rec_str(r, "containment");
	const char *p = c ? strstr(c, "\"paths\": [") : NULL;
	if (!p)
		return 0;
	p += strlen("\"paths\": [");
	for (int k = 0; *p == '"'; k++) {
		const char *e = strchr(p + 1, '"');
		if (!e)
			return 0;
		if (k == i) {
			snprintf(buf, cap, "%.*s", (int)(e - p - 1), p + 1);
			return 1;
		}
		p = e + 1;
		if (strncmp(p, ", ", 2) != 0)
			return 0;
		p += 2;
	}
	return 0;
}

/* A process alive: it exists and is not a zombie. */
static int alive(pid_t pid)
{
	char path[64], buf[512];
	snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
	slurp(path, buf, sizeof buf);
	const char *rp = strrchr(buf, ')');
	return rp && rp[1] == ' ' && rp[2] != 'Z' && rp[2] != 'X';
}

/* The directory of pid's pids cgroup (v1 pids, else v2), or 0. */
static int pids_dir(pid_t pid, char *buf, size_t cap)
{
	char path[64], text[4096];
	snprintf(path, sizeof path, "/proc/%d/cgroup", (int)pid);
	slurp(path, text, sizeof text);
	const char *l = strstr(text, ":pids:");
	if (l) {
		const char *e = strchr(l, '\n');
		snprintf(buf, cap, "/sys/fs/cgroup/pids%.*s", (int)(e ? e - l - 6 : (long)strlen(l + 6)),
			 l + 6);
		return 1;
	}
	l = strstr(text, "0::");
	if (!l || (l != text && l[-1] != '\n'))
		return 0;
	const char *e = strchr(l, '\n');
	snprintf(buf, cap, "/sys/fs/cgroup%.*s", (int)(e ? e - l - 3 : (long)strlen(l + 3)), l + 3);
	return 1;
}

static long read_long(const char *path)
{
	char buf[64];
	slurp(path, buf, sizeof buf);
	return buf[0] ? strtol(buf, NULL, 10) : -1;
}

/* The command starts inside the run's cgroups (its own /proc/self/cgroup
 * names them), the record lists them, and they are gone afterwards. */
Test(memsup_cgroup, run_in_its_own_cgroup_removed_after, .timeout = 30)
{
	struct sup_run r;
	char cmd[PATH_MAX + 64], cg[PATH_MAX + 16], text[8192], path[PATH_MAX + 32];
	tmp_make(&r);
	snprintf(cg, sizeof cg, "%s/cg", r.tmp);
	snprintf(cmd, sizeof cmd, "cat /proc/self/cgroup > '%s'", cg);
	const char *args[] = { "--no-trace", "--", "sh", "-c", cmd, NULL };
	memsup_start(&r, 1, args);
	cr_assert_eq(memsup_wait(&r), 0, "stderr: %s", r.err);
	rec_load(&r);
	require_cgroup(&r);
	cr_expect_str_eq(rec_str(&r, "discovery"), "\"cgroup\"");
	slurp(cg, text, sizeof text);
	char name[64];
	snprintf(name, sizeof name, "/memsup-%d-run", (int)r.pid);
	int n = 0;
	for (; rec_path(&r, n, path, sizeof path); n++) {
		cr_expect_not_null(strstr(path, name), "%s is not memsup's", path);
		cr_expect(!path_exists(path), "%s is still there after the run", path);
	}
	cr_expect_gt(n, 0, "no paths: %s", rec_str(&r, "containment"));
	cr_expect_not_null(strstr(text, name), "the command was not in its cgroup:\n%s", text);
	cr_expect_str_eq(rec_str(&r, "oom_kills"), "0");
	/* the timeline holds the cgroup's usage per sample */
	snprintf(path, sizeof path, "%s/timeline.jsonl", r.dir);
	slurp(path, text, sizeof text);
	if (strstr(rec_str(&r, "containment"), "\"memory\": true"))
		cr_expect_not_null(strstr(text, "\"cgroup\": "), "%s", text);
}

/* A spike of 337 MB for 40 ms with polls 100 ms apart: whatever
 * the polls saw, the kernel's peak holds at least 99% of it, 10 runs of
 * 10, and when the polls missed it the transient_peak finding quotes the
 * kernel's figure. */
Test(memsup_cgroup, spike_peak_caught_by_the_kernel_every_run, .timeout = 120)
{
	int missed = 0;
	const int runs = test_runs(3, 10);
	for (int run = 0; run < runs; run++) {
		struct sup_run r;
		const char *args[] = { "--no-trace", "--poll-ms", "100", "--", prog("spike"), "337",
				       "40", NULL };
		cr_assert_eq(memsup_run(&r, args), 0, "stderr: %s", r.err);
		rec_load(&r);
		require_cgroup(&r);
		double kernel = rec_num(&r, "peak_cgroup_mb");
		double polled = rec_num(&r, "peak_tree_rss_mb");
		cr_expect_geq(kernel, 0.99 * 337, "run %d: kernel peak %.1f MB of 337", run, kernel);
		if (polled < 0.9 * 337) {
			missed++;
			const char *bs = rec_str(&r, "blind_spots");
			cr_expect(strstr(bs, "\"transient_peak\"") && strstr(bs, "\"cgroup_peak_mb\""),
				  "run %d: the polls saw %.1f MB and no finding quotes the kernel: %s",
				  run, polled, bs);
		}
	}
	cr_log_info("the polls missed the spike in %d runs of %d", missed, runs);
}

/* A file written and read back: the cgroup counts its page cache, RSS
 * never does, and the page_cache finding says so. */
Test(memsup_cgroup, page_cache_explained, .timeout = 60)
{
	struct sup_run r;
	char cmd[2 * PATH_MAX + 128], big[PATH_MAX + 16];
	tmp_make(&r);
	snprintf(big, sizeof big, "%s/big", r.tmp);
	snprintf(cmd, sizeof cmd, "head -c 80000000 /dev/zero > '%s' && cat '%s' > /dev/null", big,
		 big);
	const char *args[] = { "--no-trace", "--", "sh", "-c", cmd, NULL };
	memsup_start(&r, 1, args);
	cr_assert_eq(memsup_wait(&r), 0, "stderr: %s", r.err);
	unlink(big);
	rec_load(&r);
	require_cgroup(&r);
	if (!strstr(rec_str(&r, "containment"), "\"memory\": true"))
		cgprobe_skip_or_fail("memory", "the run had no memory cgroup: %s",
				     rec_str(&r, "containment"));
	cr_expect_geq(rec_num(&r, "peak_cgroup_mb"), 75);
	cr_expect_lt(rec_num(&r, "peak_tree_rss_mb"), 40);
	/* the answer is the kernel's, page cache and all */
	cr_expect_str_eq(rec_str(&r, "peak_source"), "\"cgroup\"");
	cr_expect_eq(rec_num(&r, "peak_mb"), rec_num(&r, "peak_cgroup_mb"));
	const char *bs = rec_str(&r, "blind_spots");
	cr_expect_not_null(strstr(bs, "\"kind\": \"page_cache\""), "%s", bs);
	/* and the finding says how much of it was page cache: the 80 MB file */
	const char *pc = strstr(bs, "\"page_cache_mb\": ");
	cr_assert_not_null(pc, "%s", bs);
	double cached = strtod(pc + strlen("\"page_cache_mb\": "), NULL);
	cr_expect(cached >= 75 && cached <= rec_num(&r, "peak_mb"), "page cache %.1f MB: %s", cached,
		  bs);
	cr_expect_null(strstr(bs, "\"kind\": \"transient_peak\""), "page cache is no spike: %s", bs);
}

/* --mem-max: the kernel stops a grower at the limit -- zero overshoot --
 * and the record says mem_limit_exceeded, exit 123, the OOM kill counted. */
Test(memsup_cgroup, mem_max_stops_a_grower_with_zero_overshoot, .timeout = 60)
{
	struct sup_run r;
	const char *args[] = { "--no-trace", "--mem-max", "100", "--", prog("grower"), "8", "20",
			       "2000", NULL };
	int st = memsup_run(&r, args);
	if (st == 125 && strstr(r.err, "--mem-max"))
		cgprobe_skip_or_fail("memory", "memsup refused --mem-max: %s", r.err);
	cr_assert_eq(st, 123, "stderr: %s", r.err);
	rec_load(&r);
	cr_expect_str_eq(rec_str(&r, "reason"), "\"mem_limit_exceeded\"");
	cr_expect_eq(rec_num(&r, "exit_status"), 123);
	cr_expect_eq(rec_num(&r, "exit_code"), -9);
	cr_expect_eq(rec_num(&r, "mem_max_mb"), 100);
	cr_expect_leq(rec_num(&r, "peak_cgroup_mb"), 100, "overshoot");
	cr_expect_geq(rec_num(&r, "peak_cgroup_mb"), 90, "it grew to the limit");
	cr_expect_geq(rec_num(&r, "oom_kills"), 1);
}

/* A command running as root can write the run's cgroup files.  One that
 * raises its own memory limit under --mem-max 50 and then takes 300 MB
 * reached 301 MB and exited 0, nothing said; one that sets v1's
 * oom_kill_disable hung at the limit for good.  memsup reads the limit
 * back at every sample, sets its own again (or turns the OOM killer back
 * on), says so in the notes, and the limit still ends the run.  What the
 * command takes before memsup's next sample is past any promise: the
 * grower takes 2 MB every 20 ms, so that a sample (every 20 ms, and a
 * sanitizer build's slower memsup) comes long before 50 MB -- a grower
 * that took 300 MB at once had passed 50 before a sanitizer build's
 * memsup looked. */
Test(memsup_cgroup, a_limit_the_command_undoes_is_restored_and_said, .timeout = 90)
{
	static const char *const undo[] = {
		/* v2's memory.max or v1's limits, whichever the run has */
		"d=$(f=$(grep -m1 -E ':memory:|^0::' /proc/self/cgroup | cut -d: -f3); "
		"for m in /sys/fs/cgroup/memory /sys/fs/cgroup/unified /sys/fs/cgroup; do "
		"[ -e \"$m$f/memory.limit_in_bytes\" ] || [ -e \"$m$f/memory.max\" ] && "
		"{ echo \"$m$f\"; break; }; done); "
		"echo 1000000000 > $d/memory.memsw.limit_in_bytes 2>/dev/null; "
		"echo 1000000000 > $d/memory.limit_in_bytes 2>/dev/null || "
		"echo 1000000000 > $d/memory.max; exec \"$0\" 2 20 300",
		/* v1 only: the OOM killer off */
		"d=/sys/fs/cgroup/memory$(grep ':memory:' /proc/self/cgroup | cut -d: -f3); "
		"[ -e $d/memory.oom_control ] || exit 77; echo 1 > $d/memory.oom_control; "
		"exec \"$0\" 2 20 300",
	};
	static const char *const said[] = { "changed the run's memory limit", "oom_kill_disable" };
	for (size_t i = 0; i < 2; i++) {
		struct sup_run r;
		const char *args[] = { "--no-trace", "--poll-ms", "20", "--mem-max", "50", "--", "sh",
				       "-c", undo[i], prog("grower"), NULL };
		int st = memsup_run(&r, args);
		if (st == 125 && strstr(r.err, "--mem-max"))
			cgprobe_skip_or_fail("memory", "memsup refused --mem-max: %s", r.err);
		rec_load(&r);
		if (i == 1 && rec_num(&r, "exit_code") == 77) {
			cr_log_info("no v1 memory.oom_control here: the second case skipped");
			sup_done(&r);
			continue;
		}
		cr_expect_eq(st, 123, "case %zu: stderr: %s", i, r.err);
		cr_expect_str_eq(rec_str(&r, "reason"), "\"mem_limit_exceeded\"");
		cr_expect_leq(rec_num(&r, "peak_cgroup_mb"), 50.0, "case %zu: past the limit", i);
		const char *notes = rec_str(&r, "notes");
		cr_expect_not_null(strstr(notes, said[i]), "case %zu: notes %s", i, notes);
		sup_done(&r);
	}
}

/* Without a memory cgroup --mem-max is an error before anything is made,
 * never a polled budget: with --cgroup off (here), and for a user who may
 * not make cgroups (the next test). */
Test(memsup_cgroup, mem_max_without_memory_cgroup_is_an_error, .timeout = 30)
{
	struct sup_run r;
	const char *args[] = { "--cgroup", "off", "--mem-max", "100", "--", "true", NULL };
	cr_assert_eq(memsup_run(&r, args), 125, "stderr: %s", r.err);
	cr_expect_not_null(strstr(r.err, "--mem-max"), "%s", r.err);
	cr_expect(!path_exists(r.dir), "a directory was made");
}

/* The same for user nobody, who may make no cgroup.  It needs root to
 * become nobody: it used to end silently, passed, without it. */
Test(memsup_cgroup, mem_max_as_nobody_is_an_error, .timeout = 30)
{
	struct sup_run r;
	if (geteuid() != 0)
		cr_skip_test("not root: this test runs memsup as nobody");
	if (!nobody_can_run())
		cr_skip_test("user nobody cannot run memsup from this build tree");
	char shared[512];
	tmp_make(&r);
	open_tmp_to_nobody(&r, shared, sizeof shared);
	snprintf(r.dir, sizeof r.dir, "%s/ev", shared);
	const char *argv[] = { env_or_skip("MEMSUP"), "-o", r.dir, "--mem-max", "100", "--", "true",
			       NULL };
	harden_start(&r, become_nobody, argv);
	cr_assert_eq(memsup_wait(&r), 125, "stderr: %s", r.err);
	cr_expect_not_null(strstr(r.err, "memsup: --mem-max: "), "%s", r.err);
	cr_expect(!path_exists(r.dir), "a directory was made");
}

/* The run's cgroup dirs of a record, all gone. */
static void expect_paths_gone(struct sup_run *r)
{
	char path[PATH_MAX];
	for (int i = 0; rec_path(r, i, path, sizeof path); i++)
		cr_expect(!path_exists(path), "%s is still there", path);
}

static void bomb_run(const char *const *cmd, const char *what)
{
	struct sup_run r;
	char why[2 * PATH_MAX + 128];
	/* asked first: without a pids cgroup nothing would hold the bomb */
	if (!cgprobe_can_make("pids", why, sizeof why))
		cr_skip_test("no pids cgroup here (%s): the bomb would run unheld", why);
	const char *args[16] = { "--no-trace", "--max-procs", "50", "--" };
	size_t n = 4;
	for (size_t i = 0; cmd[i] && n < 15; i++)
		args[n++] = cmd[i];
	args[n] = NULL;
	cr_assert_eq(memsup_run(&r, args), 122, "%s: stderr: %s", what, r.err);
	rec_load(&r);
	require_cgroup(&r);
	if (!strstr(rec_str(&r, "containment"), "\"pids\": true"))
		cgprobe_skip_or_fail("pids", "the run had no pids cgroup: %s",
				     rec_str(&r, "containment"));
	cr_expect_str_eq(rec_str(&r, "reason"), "\"procs_budget_exceeded\"", "%s", what);
	cr_expect_leq(rec_num(&r, "max_processes"), 50, "%s: more than N alive", what);
	cr_expect_geq(rec_num(&r, "samples"), 1, "%s", what);
	cr_expect_neq(rec_str(&r, "forks_refused"), NULL);
	/* rmdir succeeds only on an empty cgroup: nothing of it is alive */
	expect_paths_gone(&r);
	cr_log_info("%s: stopped after %.3f s, %.0f samples, %.0f forks refused", what,
		    rec_num(&r, "wall_s"), rec_num(&r, "samples"), rec_num(&r, "forks_refused"));
}

/* The C bomb (tests/progs/bomb.c): at most N ever alive, killed, a
 * complete record. */
Test(memsup_cgroup, c_fork_bomb_stopped_at_max_procs, .timeout = 60)
{
	guard_require();
	const char *cmd[] = { prog("bomb"), NULL };
	bomb_run(cmd, "C bomb");
}

Test(memsup_cgroup, shell_fork_bomb_stopped_at_max_procs, .timeout = 60)
{
	guard_require();
	const char *cmd[] = { "bash", "-c", "b() { sleep 5 & sleep 5 & b & b; }; b", NULL };
	bomb_run(cmd, "shell bomb");
}

/* What a script of start_in_inner_guard() runs right after it starts
 * memsup in the background: memsup's pid into $1, whole (a rename, so
 * that the test never reads the file half-written). */
#define WRITE_MEMSUP_PID "echo $! > \"$1.t\" && mv \"$1.t\" \"$1\""

/* Start `sh -c script` inside a pids guard of its own (200), its $0
 * memsup and its $1 the pid file WRITE_MEMSUP_PID writes.  memsup's pid,
 * once that file is there. */
static pid_t start_in_inner_guard(struct sup_run *r, const char *script)
{
	char guard[PATH_MAX], pidfile[PATH_MAX], text[64];
	snprintf(pidfile, sizeof pidfile, "%s", sup_tmp_path(r, "memsup.pid"));
	snprintf(guard, sizeof guard, "%s/scripts/pids-guard.sh", env_or_skip("MT_SRCDIR"));
	const char *argv[] = { guard, "--max", "200", "--", "sh", "-c", script,
			       env_or_skip("MEMSUP"), pidfile, NULL };
	sup_spawn(r, NULL, argv);
	cr_assert(wait_for_file(pidfile), "memsup never started");
	slurp(pidfile, text, sizeof text);
	pid_t m = (pid_t)atoi(text);
	cr_assert_gt(m, 0, "pid file: \"%s\"", text);
	return m;
}

/* SIGKILL to memsup in the middle of the C bomb: its sentinel kills the
 * run's cgroup; a second later nothing of the tree is alive.  The bomb
 * runs in a pids guard of its own (200) so that it cannot take the suite's
 * pids; this test stays outside it. */
Test(memsup_cgroup, sigkilled_during_fork_bomb_leaves_nothing, .timeout = 120)
{
	guard_require();
	struct sup_run r;
	char why[2 * PATH_MAX + 128];
	/* asked first: without a pids cgroup nothing would hold the bomb */
	if (!cgprobe_can_make("pids", why, sizeof why))
		cr_skip_test("no pids cgroup here (%s): the bomb would run unheld", why);
	char shpid[PATH_MAX + 16], script[4 * PATH_MAX];
	char text[64], inner[PATH_MAX], run_pids[2 * PATH_MAX + 64], current[2 * PATH_MAX + 80];
	tmp_make(&r);
	snprintf(shpid, sizeof shpid, "%s/sh.pid", r.tmp);
	/* the guard waits for sh, which becomes `sleep` (same pid): memsup
	 * can die without ending the guard */
	snprintf(script, sizeof script, "echo $$ > '%s'; \"$0\" -q --no-trace -o '%s' -- '%s' & "
		 WRITE_MEMSUP_PID "; exec sleep 100", shpid, r.dir, prog("bomb"));
	pid_t m = start_in_inner_guard(&r, script);
	slurp(shpid, text, sizeof text);
	pid_t sleeper = (pid_t)atoi(text);
	cr_assert_gt(sleeper, 0);
	int have_dir = pids_dir(m, inner, sizeof inner);
	snprintf(run_pids, sizeof run_pids, "%s/memsup-%d-run", inner, (int)m);
	snprintf(current, sizeof current, "%s/pids.current", run_pids);
	long n = 0;
	for (int i = 0; have_dir && i < 1000 && (n = read_long(current)) < 150; i++)
		usleep(10000);
	kill(m, SIGKILL);
	usleep(1000000);
	/* a second later: nothing alive in the guard but its sleep (the
	 * run's cgroups are below it) */
	char cmd[PATH_MAX + 64], list[65536];
	snprintf(cmd, sizeof cmd, "find '%s' -name cgroup.procs -exec cat {} + 2>/dev/null </dev/null", inner);
	FILE *f = have_dir ? popen(cmd, "r") : NULL;
	size_t got = f ? fread(list, 1, sizeof list - 1, f) : 0;
	list[got] = '\0';
	if (f)
		pclose(f);
	int left = 0;
	for (char *p = list, *end; *p; p = end) {
		long pid = strtol(p, &end, 10);
		if (end == p)
			break;
		left += pid != sleeper && alive((pid_t)pid);
	}
	/* the sentinel's last act is the record: the guard (which would kill
	 * the sentinel too) ends after it */
	rec_load_after_sentinel(&r, 15);
	kill(sleeper, SIGTERM);
	memsup_wait(&r);
	if (!have_dir || n < 0)
		cgprobe_skip_or_fail("pids", "memsup made no pids cgroup (%s)", run_pids);
	cr_expect_geq(n, 150, "the bomb never got going");
	cr_expect_eq(left, 0, "%d processes of the bomb outlived memsup by 1 s", left);
	cr_expect_str_eq(rec_str(&r, "reason"), "\"supervisor_killed\"");
	cr_expect(!path_exists(run_pids), "%s is still there", run_pids);
}

/* A test that times out ends inside the pids guard, which kills memsup
 * and its sentinel together: nothing is left to remove memsup's run
 * cgroups in the v1 memory and freezer hierarchies, below memsup's own
 * cgroup there and so outside the guard.  The guard removes them itself.
 * The timeout leaves room for the guard's own bounded wait (30 s). */
Test(memsup_cgroup, guard_removes_the_run_cgroups_of_a_memsup_it_killed, .timeout = 120)
{
	guard_require();
	struct sup_run r;
	char why[2 * PATH_MAX + 128], own[2][PATH_MAX], run[2][PATH_MAX + 64];
	char stop[PATH_MAX + 16], script[4 * PATH_MAX];
	const char *ctl[2] = { "memory", "freezer" };
	if (!cgprobe_can_make("memory", why, sizeof why))
		cr_skip_test("no memory cgroup here (%s)", why);
	int nctl = cgprobe_dir("freezer", own[1], sizeof own[1], why, sizeof why) ? 2 : 1;
	cr_assert(cgprobe_dir("memory", own[0], sizeof own[0], why, sizeof why), "%s", why);
	tmp_make(&r);
	snprintf(stop, sizeof stop, "%s/stop", r.tmp);
	/* the guard's command ends while memsup still runs: the guard's
	 * cleanup then kills memsup, its sentinel and sleep at once */
	snprintf(script, sizeof script, "\"$0\" -q --no-trace -o '%s' -- sleep 100 & "
		 WRITE_MEMSUP_PID "; while [ ! -e '%s' ]; do sleep 0.05; done", r.dir, stop);
	pid_t m = start_in_inner_guard(&r, script);
	for (int c = 0; c < nctl; c++) {
		snprintf(run[c], sizeof run[c], "%s/memsup-%d-run", own[c], (int)m);
		if (!wait_for_file(run[c])) {
			close(open(stop, O_WRONLY | O_CREAT, 0600));
			memsup_wait(&r);
			cgprobe_skip_or_fail(ctl[c], "memsup made no %s cgroup (%s)", ctl[c], run[c]);
		}
	}
	close(open(stop, O_WRONLY | O_CREAT, 0600));
	cr_expect_eq(memsup_wait(&r), 0, "the guard: %s", r.err);
	cr_expect(!pid_alive(m) || !alive(m), "memsup %d outlived its guard", (int)m);
	for (int c = 0; c < nctl; c++)
		cr_expect(!path_exists(run[c]), "%s is still there after the guard ended", run[c]);
}

/* SIGKILL to memsup while a double-forked setsid() escapee runs: a second
 * later neither the command nor the escapee is alive. */
static void sigkilled_escape_run(const char *cgroup)
{
	struct sup_run r;
	char pidfile[PATH_MAX + 16], text[64];
	tmp_make(&r);
	snprintf(pidfile, sizeof pidfile, "%s/escapee.pid", r.tmp);
	const char *args[] = { "--cgroup", cgroup, "--", prog("escaper"), pidfile, "20", "60000",
			       NULL };
	memsup_start(&r, 1, args);
	cr_assert(wait_for_file(pidfile), "the escapee never started");
	usleep(200000);
	slurp(pidfile, text, sizeof text);
	pid_t escapee = (pid_t)atoi(text);
	cr_assert_gt(escapee, 0);
	kill(r.pid, SIGKILL);
	cr_assert_eq(memsup_wait(&r), 1000 + SIGKILL);
	usleep(1000000);
	cr_expect(!alive(escapee), "%s: the escapee %d outlived memsup by 1 s", cgroup,
		  (int)escapee);
	rec_load_after_sentinel(&r, 2);
	cr_expect_str_eq(rec_str(&r, "reason"), "\"supervisor_killed\"", "%s", cgroup);
	cr_expect(!alive((pid_t)rec_num(&r, "pid")), "%s: the command outlived memsup", cgroup);
	expect_paths_gone(&r);
}

Test(memsup_cgroup, sigkilled_during_setsid_escape_leaves_nothing, .timeout = 60)
{
	sigkilled_escape_run("auto");
	sigkilled_escape_run("off");
}

/* --cgroup off: the /proc scan, asked for: no cgroup, no hint, no line. */
Test(memsup_cgroup, cgroup_off_is_the_scan, .timeout = 30)
{
	struct sup_run r;
	const char *args[] = { "--cgroup", "off", "--", "true", NULL };
	cr_assert_eq(memsup_run(&r, args), 0, "stderr: %s", r.err);
	rec_load(&r);
	const char *c = rec_str(&r, "containment");
	cr_expect_not_null(strstr(c, "\"mode\": \"procscan\""), "%s", c);
	cr_expect_not_null(strstr(c, "\"requested\": \"off\""), "%s", c);
	cr_expect_not_null(strstr(c, "\"paths\": []"), "%s", c);
	cr_expect_not_null(strstr(c, "\"hint\": null"), "%s", c);
	cr_expect_str_eq(rec_str(&r, "discovery"), "\"scan\"");
	cr_expect_str_eq(rec_str(&r, "peak_cgroup_mb"), "null");
	cr_expect_null(strstr(r.err, "no cgroup for this run"), "%s", r.err);
}

/* A user who may not make cgroups: memsup runs all the same, by the
 * /proc scan, and says why and what would give one without root. */
Test(memsup_cgroup, non_root_falls_back_and_says_how, .timeout = 30)
{
	struct sup_run r;
	char shared[512];
	if (geteuid() != 0)
		cr_skip_test("not root: this test runs memsup as nobody");
	if (!nobody_can_run())
		cr_skip_test("user nobody cannot run memsup from this build tree");
	tmp_make(&r);
	open_tmp_to_nobody(&r, shared, sizeof shared);
	snprintf(r.dir, sizeof r.dir, "%s/ev", shared);
	const char *argv[] = { env_or_skip("MEMSUP"), "-o", r.dir, "--", "true", NULL };
	harden_start(&r, become_nobody, argv);
	cr_assert_eq(memsup_wait(&r), 0, "stderr: %s", r.err);
	rec_load(&r);
	const char *c = rec_str(&r, "containment");
	cr_expect_not_null(strstr(c, "\"mode\": \"procscan\""), "%s", c);
	cr_expect_null(strstr(c, "\"missing\": []"), "no reason given: %s", c);
	cr_expect_null(strstr(c, "\"hint\": null"), "no hint: %s", c);
	cr_expect_not_null(strstr(r.err, "memsup: no cgroup for this run ("), "%s", r.err);
	cr_expect_not_null(strstr(r.err, "the budgets polled; try: "), "%s", r.err);
}

/* A tree larger than one page of cgroup.procs: the kernel hands the list
 * out about a page a read (a seq_file), so a reader that stopped at the
 * first short read saw about 680 of 2,000 processes -- the summed RSS cut
 * to a third, and --rss-mb never crossed.  2,000 children of forktree,
 * alive together for 1.5 s: every one is counted, and a budget at about
 * two thirds of their summed RSS is enforced.  Inside the pids guard. */
Test(memsup_cgroup, two_thousand_processes_are_all_seen, .timeout = 120)
{
	guard_require();
	struct sup_run r;
	const char *args[] = { "--no-trace", "--", prog("forktree"), "2000", "0", "1500", NULL };
	cr_assert_eq(memsup_run(&r, args), 0, "stderr: %s", r.err);
	rec_load(&r);
	require_cgroup(&r);
	cr_expect_eq(rec_num(&r, "max_processes"), 2001, "%s", rec_str(&r, "max_processes"));
	double rss = rec_num(&r, "peak_tree_rss_mb");
	sup_done(&r);
	/* each child's RSS is its share of the parent's pages, mapped again */
	cr_assert_gt(rss, 2000 * 0.2, "summed RSS of 2,001 processes: %.1f MB", rss);
	char budget[32];
	snprintf(budget, sizeof budget, "%.0f", rss * 0.65);
	const char *over[] = { "--no-trace", "--rss-mb", budget, "--", prog("forktree"), "2000",
			       "0", "1500", NULL };
	cr_expect_eq(memsup_run(&r, over), 123, "--rss-mb %s: stderr: %s", budget, r.err);
	rec_load(&r);
	cr_expect_str_eq(rec_str(&r, "reason"), "\"rss_budget_exceeded\"");
	sup_done(&r);
}

/* A command that moves itself 60 cgroups below the run's (a test runner,
 * a container's nesting, taken to an extreme): the walk stopped at 32
 * levels, so its 50 MB were in no sample (summed RSS 6.7 MB) and 33
 * cgroups stayed behind for good.  Now it is sampled and all are removed. */
Test(memsup_cgroup, a_process_sixty_cgroups_below_is_seen_and_removed, .timeout = 60)
{
	struct sup_run r;
	const char *args[] = { "--no-trace", "--", "sh", "-c",
			       "own=$(grep '^0::' /proc/self/cgroup | cut -d: -f3); "
			       "if [ -e /sys/fs/cgroup/unified ]; then d=/sys/fs/cgroup/unified$own; "
			       "else d=/sys/fs/cgroup$own; fi; "
			       "for i in $(seq 60); do d=$d/c$i; mkdir $d || exit 3; done; "
			       "echo $$ > $d/cgroup.procs || exit 4; exec \"$0\" 50 1500",
			       prog("steady"), NULL };
	int st = memsup_run(&r, args);
	rec_load(&r);
	require_cgroup(&r);
	cr_assert_eq(st, 0, "stderr: %s", r.err);
	cr_expect_geq(rec_num(&r, "peak_tree_rss_mb"), 50.0, "the deep process was not sampled");
	const char *c = rec_str(&r, "containment");
	cr_expect_not_null(strstr(c, "\"cgroups_left\": []"), "%s", c);
	sup_done(&r);
}

/* memsup's own CPU (utime + stime of /proc/PID/stat, its children not
 * counted until it reaps them), seconds. */
static double own_cpu_s(pid_t pid)
{
	char path[64], text[1024];
	snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
	slurp(path, text, sizeof text);
	const char *p = strrchr(text, ')');
	cr_assert_not_null(p, "%s: %s", path, text);
	unsigned long long ut = 0, st = 0;
	/* after ")": state, then fields 4..13; utime and stime are 14 and 15 */
	cr_assert_eq(sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu", &ut,
			    &st),
		     2, "%s: %s", path, text);
	return (double)(ut + st) / (double)sysconf(_SC_CLK_TCK);
}

/* A cgroup made below the run's wakes memsup once (an inotify watch), and
 * then every listing looks below.  memsup let epoll go of that watch only
 * after closing it, and the sentinel's copy kept it open: readable for
 * good, it woke the loop at once every time, and memsup spun a CPU while
 * the command slept.  Over 3 s of sleep, memsup's own CPU stays far below
 * a second (it took about 2.5 s of 3). */
Test(memsup_cgroup, a_cgroup_made_below_never_spins_memsup, .timeout = 60)
{
	struct sup_run r;
	char ready[PATH_MAX + 16], script[PATH_MAX + 400];
	tmp_make(&r);
	snprintf(ready, sizeof ready, "%s/ready", r.tmp);
	snprintf(script, sizeof script,
		 "own=$(grep '^0::' /proc/self/cgroup | cut -d: -f3); "
		 "if [ -e /sys/fs/cgroup/unified ]; then d=/sys/fs/cgroup/unified$own; "
		 "else d=/sys/fs/cgroup$own; fi; "
		 "mkdir $d/below || exit 3; touch '%s'; sleep 4", ready);
	const char *args[] = { "--no-trace", "--", "sh", "-c", script, NULL };
	memsup_start(&r, 1, args);
	cr_assert(wait_for_file(ready), "the command made no cgroup");
	double t0 = own_cpu_s(r.pid);
	sleep(3);
	double used = own_cpu_s(r.pid) - t0;
	int st = memsup_wait(&r);
	rec_load(&r);
	require_cgroup(&r);
	cr_assert_eq(st, 0, "stderr: %s", r.err);
	cr_expect_lt(used, 1.0, "memsup used %.2f s of CPU in 3 s while the command slept", used);
	const char *c = rec_str(&r, "containment");
	cr_expect_not_null(strstr(c, "\"cgroups_left\": []"), "%s", c);
	sup_done(&r);
}

/* ---- frozen cgroups never stop memsup ---------------------------------------- */

/* The v1 freezer cgroup this test may make its own below (its own), or
 * skip. */
static void freezer_dir_or_skip(char *dir, size_t cap)
{
	char why[PATH_MAX + 128];
	if (!cgprobe_dir("freezer", dir, cap, why, sizeof why) || strstr(dir, "/unified"))
		cr_skip_test("no v1 freezer hierarchy here: %s", why);
	if (access(dir, W_OK) < 0)
		cr_skip_test("cannot make a freezer cgroup in %s: %s", dir, strerror(errno));
}

static void write_file(const char *dir, const char *name, const char *text)
{
	char path[PATH_MAX + 64];
	snprintf(path, sizeof path, "%s/%s", dir, name);
	FILE *f = fopen(path, "w");
	cr_assert_not_null(f, "%s: %s", path, strerror(errno));
	fputs(text, f);
	cr_assert_eq(fclose(f), 0, "%s <- %s: %s", path, text, strerror(errno));
}

/* A command that freezes its own v1 freezer cgroup (the run's): the kill
 * used to wait for a thaw that never came, and memsup never returned, not
 * even under --wall-s.  Now it thaws the run's cgroup after SIGKILL, so
 * the budget ends the run on time and nothing is left. */
Test(memsup_cgroup, command_freezing_its_own_cgroup_is_killed_on_time, .timeout = 60)
{
	char dir[PATH_MAX];
	freezer_dir_or_skip(dir, sizeof dir);
	struct sup_run r;
	const char *args[] = { "--wall-s", "1", "--", "sh", "-c",
			       "p=$(grep :freezer: /proc/self/cgroup | cut -d: -f3); "
			       "echo FROZEN > /sys/fs/cgroup/freezer$p/freezer.state; sleep 100",
			       NULL };
	cr_assert_eq(memsup_run(&r, args), 124, "stderr: %s", r.err);
	rec_load(&r);
	double wall = rec_num(&r, "wall_s");
	cr_expect_lt(wall, 3.0, "wall_s %.3f", wall);
	cr_expect_str_eq(rec_str(&r, "reason"), "\"wall_budget_exceeded\"");
	cr_expect_str_eq(rec_str(&r, "exit_code"), "-9");
	cr_expect_not_null(strstr(rec_str(&r, "containment"), "\"cgroups_left\": []"), "%s",
			   rec_str(&r, "containment"));
	sup_done(&r);
}

/* The command's main process moves into a v1 freezer cgroup outside the
 * run and freezes it.  Holding only the run's processes, that cgroup is
 * thawed by the kill, and the process dies; holding another process too,
 * it is left frozen -- not memsup's to thaw -- and memsup still ends, in
 * bounded time, saying the exit status is unknown (a blocking waitpid()
 * used to hang it for as long as the cgroup stayed frozen). */
Test(memsup_cgroup, main_frozen_outside_the_run_never_hangs_memsup, .timeout = 90)
{
	char dir[PATH_MAX], out[PATH_MAX + 64], script[2 * PATH_MAX + 256];
	freezer_dir_or_skip(dir, sizeof dir);
	env_or_skip("MEMSUP");
	env_or_skip("MT_SRCDIR"); /* every skip before the cgroup is made */
	snprintf(out, sizeof out, "%s/mt-frozen-%d", dir, (int)getpid());
	cr_assert_eq(mkdir(out, 0755), 0, "%s: %s", out, strerror(errno));
	snprintf(script, sizeof script, "echo $$ > %s/cgroup.procs; echo FROZEN > "
		 "%s/freezer.state; sleep 100", out, out);
	const char *args[] = { "--wall-s", "1", "--", "sh", "-c", script, NULL };

	/* only the run's own in it: thawed, killed */
	struct sup_run r;
	cr_expect_eq(memsup_run(&r, args), 124, "stderr: %s", r.err);
	rec_load(&r);
	cr_expect_lt(rec_num(&r, "wall_s"), 3.0, "wall_s %s", rec_str(&r, "wall_s"));
	cr_expect_str_eq(rec_str(&r, "exit_code"), "-9");
	sup_done(&r);

	/* a process of the test's in it too: left frozen, memsup bounded */
	pid_t other = fork();
	cr_assert_geq(other, 0);
	if (other == 0) {
		execlp("sleep", "sleep", "100", (char *)NULL);
		_exit(127);
	}
	char pid[32];
	snprintf(pid, sizeof pid, "%d", (int)other);
	write_file(out, "cgroup.procs", pid);
	int rc = memsup_run(&r, args);
	rec_load(&r);
	/* copies: rec_str's text is overwritten by the next call */
	char notes[4096], code[32];
	snprintf(notes, sizeof notes, "%.4000s", rec_str(&r, "notes"));
	snprintf(code, sizeof code, "%.30s", rec_str(&r, "exit_code"));
	char main_pid[64] = "";
	const char *m = strstr(notes, "the command (pid ");
	if (m)
		snprintf(main_pid, sizeof main_pid, "%.*s", (int)strcspn(m + 17, ")"), m + 17);
	/* thaw and clean up before judging: nothing is left behind */
	write_file(out, "freezer.state", "THAWED");
	kill(other, SIGKILL);
	waitpid(other, NULL, 0);
	if (main_pid[0])
		kill((pid_t)atoi(main_pid), SIGKILL);
	for (int i = 0; i < 100 && rmdir(out) < 0; i++)
		usleep(20000);
	/* the run's cgroups memsup could not remove while the process lived */
	char left[PATH_MAX];
	for (int i = 0; rec_path(&r, i, left, sizeof left); i++)
		for (int k = 0; k < 100 && rmdir(left) < 0 && errno == EBUSY; k++)
			usleep(20000);
	cr_expect_eq(rc, 124, "stderr: %s", r.err);
	cr_expect_str_eq(code, "null", "exit_code %s", code);
	cr_expect_not_null(m, "no note of the undead command: %s", notes);
	cr_expect_not_null(strstr(notes, "its exit status is unknown"), "%s", notes);
	sup_done(&r);
	cr_expect_eq(access(out, F_OK), -1, "%s left behind", out);
}
