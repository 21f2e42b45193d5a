/* test_memsup_budget.c: budgets and interrupts kill the whole tree, and the
 * record still comes out complete. */
#include "test_cgprobe.h"
#include "test_guard.h"
#include "test_memsup_util.h"
#include "test_repeat.h"

#include <time.h>

static void expect_all_dead(const char *pidfile)
{
	char text[4096];
	slurp(pidfile, text, sizeof text);
	int n = 0;
	for (char *p = text, *end; *p; p = end) {
		long pid = strtol(p, &end, 10);
		if (end == p)
			break;
		cr_expect(!pid_alive((pid_t)pid), "pid %ld outlived memsup", pid);
		n++;
	}
	cr_expect_gt(n, 0, "no pids in %s", pidfile);
}

/* A grower crosses --rss-mb: 123, reason, killed by SIGKILL. */
Test(memsup_budget, rss_budget_kills_tree, .timeout = 30)
{
	struct sup_run r;
	const char *args[] = { "--rss-mb", "100", "--", prog("grower"), "8", "20", "2000", NULL };
	cr_assert_eq(memsup_run(&r, args), 123, "stderr: %s", r.err);
	rec_load(&r);
	cr_expect_str_eq(rec_str(&r, "reason"), "\"rss_budget_exceeded\"");
	cr_expect_eq(rec_num(&r, "exit_code"), -9);
	cr_expect_eq(rec_num(&r, "signal"), 9);
	cr_expect_eq(rec_num(&r, "exit_status"), 123);
	cr_expect_eq(rec_num(&r, "rss_budget_mb"), 100);
	double peak = rec_num(&r, "peak_tree_rss_mb");
	cr_expect(peak >= 100 && peak < 200, "peak %.1f MB", peak);
	cr_expect(!pid_alive((pid_t)rec_num(&r, "pid")));
}

/* A bounded fork bomb crosses --max-procs: 122, reason, every process of
 * it dead after memsup returns.  With a pids cgroup the kernel refuses the
 * 41st process, so no sample ever sees more than 40; without one (--cgroup
 * off) a sample sees more. */
static void fork_bomb_run(const char *cgroup)
{
	struct sup_run r;
	char pidfile[PATH_MAX + 16];
	tmp_make(&r);
	snprintf(pidfile, sizeof pidfile, "%s/pids", r.tmp);
	const char *args[] = { "--cgroup", cgroup, "--max-procs", "40", "--", prog("forkbomb"),
			       "7", pidfile, NULL };
	memsup_start(&r, 1, args);
	cr_assert_eq(memsup_wait(&r), 122, "stderr: %s", r.err);
	rec_load(&r);
	cr_expect_str_eq(rec_str(&r, "reason"), "\"procs_budget_exceeded\"");
	cr_expect_eq(rec_num(&r, "max_procs_budget"), 40);
	cr_expect_eq(rec_num(&r, "exit_status"), 122);
	if (strstr(rec_str(&r, "containment"), "\"pids\": true"))
		cr_expect_leq(rec_num(&r, "max_processes"), 40, "%s", cgroup);
	else
		cr_expect_gt(rec_num(&r, "max_processes"), 40, "%s", cgroup);
	expect_all_dead(pidfile);
}

Test(memsup_budget, procs_budget_kills_fork_bomb, .timeout = 60)
{
	guard_require();
	fork_bomb_run("auto");
	fork_bomb_run("off");
}

/* A shell gives up at its first refused fork ("Cannot fork", exit 2)
 * milliseconds after the start, long before the second sample (5 s): with
 * a pids cgroup the budget was crossed all the same (122, the reason, the
 * refusal counted), not a run that ended on its own with leftovers (the
 * fork bomb above met this race under load: its root died of a refusal
 * between two samples). */
Test(memsup_budget, refused_fork_between_samples_is_the_budget, .timeout = 60)
{
	struct sup_run r;
	char script[PATH_MAX + 128], pidfile[PATH_MAX + 16];
	guard_require();
	tmp_make(&r);
	snprintf(pidfile, sizeof pidfile, "%s/pids", r.tmp);
	snprintf(script, sizeof script,
		 "for i in 1 2 3; do sleep 30 & echo $! >> '%s'; done; wait", pidfile);
	const char *args[] = { "--max-procs", "3", "--poll-ms", "5000", "--", "/bin/sh", "-c",
			       script, NULL };
	memsup_start(&r, 1, args);
	int st = memsup_wait(&r);
	rec_load(&r);
	if (!strstr(rec_str(&r, "containment"), "\"pids\": true"))
		cgprobe_skip_or_fail("pids", "the run had no pids cgroup, so the budget is only "
				     "what samples see");
	cr_assert_eq(st, 122, "stderr: %s", r.err);
	cr_expect_str_eq(rec_str(&r, "reason"), "\"procs_budget_exceeded\"");
	/* refused, or (a sample at the start that found N already) reached */
	cr_expect(rec_num(&r, "forks_refused") > 0 || rec_num(&r, "max_processes") >= 3,
		  "forks_refused %g, max_processes %g", rec_num(&r, "forks_refused"),
		  rec_num(&r, "max_processes"));
	cr_expect_lt(rec_num(&r, "wall_s"), 5, "the run waited for a sample");
	expect_all_dead(pidfile);
}

/* Without --max-procs the budget is null in the record. */
Test(memsup_budget, no_procs_budget_is_null, .timeout = 30)
{
	struct sup_run r;
	const char *args[] = { "--", "/bin/true", NULL };
	cr_assert_eq(memsup_run(&r, args), 0, "stderr: %s", r.err);
	rec_load(&r);
	cr_expect_str_eq(rec_str(&r, "max_procs_budget"), "null");
}

/* memsup SIGKILLed mid-run: the record it rewrote about once a second is
 * still whole (samples counted), its sentinel marked it supervisor_killed,
 * and rss.jsonl ends on a whole line; the command is dead. */
Test(memsup_budget, sigkilled_memsup_leaves_valid_evidence, .timeout = 30)
{
	struct sup_run r;
	char path[PATH_MAX + 32], text[65536];
	tmp_make(&r);
	/* --rss-mb far above the tree keeps every sample dense (a flat tree
	 * is sampled every 100 ms otherwise: memsup(1) --poll-ms), so the
	 * rewritten record's count below is the dense rate's */
	const char *args[] = { "--no-trace", "--rss-mb", "100000", "--", prog("steady"), "20",
			       "20000", NULL };
	memsup_start(&r, 1, args);
	usleep(2500 * 1000); /* past two record rewrites */
	kill(r.pid, SIGKILL);
	cr_assert_eq(memsup_wait(&r), 1000 + SIGKILL);
	rec_load_after_sentinel(&r, 2);
	cr_expect_str_eq(rec_str(&r, "reason"), "\"supervisor_killed\"");
	cr_expect_eq(rec_num(&r, "exit_status"), 137);
	cr_expect_not_null(strstr(rec_str(&r, "error"), "sentinel"), "%s", rec_str(&r, "error"));
	cr_expect_gt(rec_num(&r, "samples"), 50, "the record was not rewritten while running");
	cr_expect_geq(rec_num(&r, "peak_tree_rss_mb"), 20);
	snprintf(path, sizeof path, "%s/rss.jsonl", r.dir);
	slurp(path, text, sizeof text);
	size_t n = strlen(text);
	cr_assert_gt(n, 0, "rss.jsonl is empty");
	cr_expect_eq(text[n - 1], '\n', "rss.jsonl ends mid-line");
	pid_t cmd = (pid_t)rec_num(&r, "pid");
	for (int i = 0; i < 100 && pid_alive(cmd); i++)
		usleep(20000); /* the parent-death signal is asynchronous */
	cr_expect(!pid_alive(cmd), "the command outlived a SIGKILLed memsup");
}

/* memsup's stdout a pipe of 8 KiB nobody reads: the relay's end waits for
 * it (until the wall budget), long after the command is reaped.  memsup
 * keeps the read end open, so its writes wait rather than fail; a pipe
 * sized on purpose keeps its size (relay.c grows only default ones). */
static void stdout_never_read(const struct sup_run *r)
{
	(void)r;
	int p[2];
	if (pipe(p) < 0 || fcntl(p[1], F_SETPIPE_SZ, 8192) < 0 || dup2(p[1], STDOUT_FILENO) < 0)
		_exit(97);
	close(p[1]);
}

/* memsup SIGKILLed during its end, after the command exited 7 and while
 * the output still drains to a reader that never comes: the record the
 * sentinel closes keeps the command's exit code (it was the last running
 * record before, without one). */
Test(memsup_budget, sigkilled_during_the_end_keeps_the_exit_code, .timeout = 60)
{
	struct sup_run r;
	char pidfile[PATH_MAX + 16], script[PATH_MAX + 96];
	tmp_make(&r);
	snprintf(pidfile, sizeof pidfile, "%s/pid", r.tmp);
	/* 32 KiB of output: past memsup's stdout (8 KiB), within the
	 * command's pipe (64 KiB at least), so the command ends */
	snprintf(script, sizeof script, "echo $$ >'%s'; head -c 32768 /dev/zero; exit 7",
		 pidfile);
	const char *argv[] = { env_or_skip("MEMSUP"), "--no-trace", "-o", r.dir, "--wall-s", "60",
			       "--", "sh", "-c", script, NULL };
	sup_spawn(&r, stdout_never_read, argv);
	cr_assert(wait_for_file(pidfile), "the command never started");
	char text[64] = "";
	for (int i = 0; i < 500 && !text[0]; i++) {
		slurp(pidfile, text, sizeof text);
		if (!text[0])
			usleep(10000);
	}
	pid_t cmd = (pid_t)atoi(text);
	cr_assert_gt(cmd, 0, "pid file: '%s'", text);
	/* reaped by memsup: gone from /proc (a zombie is still there) */
	for (int i = 0; i < 1000 && pid_alive(cmd); i++)
		usleep(10000);
	cr_assert(!pid_alive(cmd), "the command never ended");
	/* the exit is in the record within a moment (bounded: this is what
	 * fails without the record written at the exit) */
	int have = 0;
	time_t until = time(NULL) + 5;
	do {
		rec_load(&r);
		have = strcmp(rec_str(&r, "exit_code"), "null") != 0;
	} while (!have && time(NULL) < until && usleep(20000) == 0);
	cr_assert(have, "5 s after the command ended, the record has no exit_code");
	cr_expect_str_eq(rec_str(&r, "reason"), "\"running\"",
			 "memsup is still draining: its record is not the end's");
	cr_assert_eq(waitpid(r.pid, NULL, WNOHANG), 0, "memsup ended; it was to be draining");
	kill(r.pid, SIGKILL);
	cr_assert_eq(memsup_wait(&r), 1000 + SIGKILL);
	rec_load_after_sentinel(&r, 15);
	cr_expect_str_eq(rec_str(&r, "reason"), "\"supervisor_killed\"");
	cr_expect_eq(rec_num(&r, "exit_code"), 7);
	cr_expect_eq(rec_num(&r, "exit_status"), 137);
}

/* A sleeper (with children) outlives --wall-s: 124, all of it killed. */
Test(memsup_budget, wall_budget_kills_tree, .timeout = 30)
{
	struct sup_run r;
	char pidfile[PATH_MAX + 16];
	tmp_make(&r);
	snprintf(pidfile, sizeof pidfile, "%s/pids", r.tmp);
	const char *args[] = { "--wall-s", "0.5", "--", prog("sleeper"), "30", "2", pidfile, NULL };
	memsup_start(&r, 1, args);
	cr_assert_eq(memsup_wait(&r), 124, "stderr: %s", r.err);
	rec_load(&r);
	cr_expect_str_eq(rec_str(&r, "reason"), "\"wall_budget_exceeded\"");
	cr_expect_eq(rec_num(&r, "exit_code"), -9);
	cr_expect_eq(rec_num(&r, "wall_budget_s"), 0.5);
	cr_expect_geq(rec_num(&r, "wall_s"), 0.5);
	cr_expect_geq(rec_num(&r, "max_processes"), 3);
	expect_all_dead(pidfile);
}

/* --grace-s: SIGTERM first; the sleeper dies of it (exit_code -15). */
Test(memsup_budget, grace_sends_sigterm_first, .timeout = 30)
{
	struct sup_run r;
	const char *args[] = { "--wall-s", "0.3", "--grace-s", "5", "--", prog("sleeper"), "30",
			       NULL };
	cr_assert_eq(memsup_run(&r, args), 124, "stderr: %s", r.err);
	rec_load(&r);
	cr_expect_eq(rec_num(&r, "exit_code"), -SIGTERM);
	cr_expect_eq(rec_num(&r, "grace_s"), 5);
}

/* A signal to memsup during a long --grace-s ends the grace: the tree,
 * ignoring SIGTERM, would otherwise live out all 30 s (45 s were waited
 * before memsup heard anything).  SIGTERM, SIGINT and SIGHUP each. */
Test(memsup_budget, signal_during_grace_ends_it, .timeout = 60)
{
	static const int sigs[] = { SIGTERM, SIGINT, SIGHUP };
	for (size_t i = 0; i < sizeof sigs / sizeof sigs[0]; i++) {
		struct sup_run r;
		const char *args[] = { "--wall-s", "0.3", "--grace-s", "30", "--", "sh", "-c",
				       "trap '' TERM; sleep 100", NULL };
		tmp_make(&r);
		memsup_start(&r, 1, args);
		/* past the budget, into the grace: the tree ignores its SIGTERM */
		usleep(1500000);
		struct timespec a, b;
		clock_gettime(CLOCK_MONOTONIC, &a);
		kill(r.pid, sigs[i]);
		int rc = memsup_wait(&r);
		clock_gettime(CLOCK_MONOTONIC, &b);
		double took = (double)(b.tv_sec - a.tv_sec) + (double)(b.tv_nsec - a.tv_nsec) / 1e9;
		cr_expect_eq(rc, 124, "signal %d: stderr: %s", sigs[i], r.err);
		cr_expect_lt(took, 10.0, "signal %d: memsup ended %.1f s after it, in the "
			     "30 s grace", sigs[i], took);
		rec_load(&r);
		cr_expect_str_eq(rec_str(&r, "reason"), "\"wall_budget_exceeded\"");
		cr_expect_eq(rec_num(&r, "exit_code"), -SIGKILL);
		sup_done(&r);
	}
}

/* SIGTERM in memsup's first milliseconds, at 0 to 40 ms in 6 ms steps (2 ms
 * in CI's thorough check, test_repeat.h):
 * the evidence directory is either never made (memsup died of it before
 * making anything) or ends with a whole record whose reason says it was
 * interrupted, and no temporary file -- never an empty directory, a
 * record that says "running" forever, or a .tmp beside it. */
Test(memsup_budget, sigterm_in_the_first_milliseconds_leaves_a_whole_record, .timeout = 240)
{
	int made = 0, interrupted = 0, runs = 0;
	const int step_us = test_runs(6000, 2000);
	for (int us = 0; us <= 40000; us += step_us, runs++) {
		struct sup_run r;
		const char *args[] = { "--", "sleep", "5", NULL };
		tmp_make(&r);
		memsup_start(&r, 1, args);
		if (us)
			usleep((useconds_t)us);
		kill(r.pid, SIGTERM);
		int rc = memsup_wait(&r);
		if (access(r.dir, F_OK) == 0) {
			made++;
			char cmd[PATH_MAX + 64];
			snprintf(cmd, sizeof cmd, "ls -a '%s' | grep -q '\\.tmp'", r.dir);
			cr_expect_neq(system(cmd), 0, "at %d us: a .tmp is left in %s", us, r.dir);
			rec_load(&r);
			const char *reason = rec_str(&r, "reason");
			cr_expect_str_eq(reason, "\"interrupted\"", "at %d us: reason %s (exit %d)", us,
					 reason, rc);
			cr_expect_eq(rc, 128 + SIGTERM, "at %d us", us);
			interrupted += strcmp(reason, "\"interrupted\"") == 0;
		} else {
			/* killed by the default action before it made anything */
			cr_expect_eq(rc, 1000 + SIGTERM, "at %d us: no evidence, exit %d", us, rc);
		}
		sup_done(&r);
	}
	cr_log_info("%d of %d runs made their evidence, %d of them interrupted", made, runs,
		    interrupted);
}

/* SIGTERM to memsup: the tree dies, reason "interrupted", status 128+15. */
Test(memsup_budget, sigterm_to_memsup_interrupts, .timeout = 30)
{
	struct sup_run r;
	char pidfile[PATH_MAX + 16];
	tmp_make(&r);
	snprintf(pidfile, sizeof pidfile, "%s/pids", r.tmp);
	const char *args[] = { "--", prog("sleeper"), "30", "3", pidfile, NULL };
	memsup_start(&r, 1, args);
	cr_assert(wait_for_file(pidfile), "sleeper never wrote its pids");
	usleep(50000);
	/* mid-run, the record is already there, whole, and says so */
	rec_load(&r);
	cr_expect_str_eq(rec_str(&r, "reason"), "\"running\"");
	cr_expect_str_eq(rec_str(&r, "exit_status"), "null");
	cr_expect_gt(rec_num(&r, "pid"), 0);
	kill(r.pid, SIGTERM);
	cr_assert_eq(memsup_wait(&r), 128 + SIGTERM, "stderr: %s", r.err);
	rec_load(&r);
	cr_expect_str_eq(rec_str(&r, "reason"), "\"interrupted\"");
	cr_expect_eq(rec_num(&r, "exit_status"), 128 + SIGTERM);
	cr_expect_eq(rec_num(&r, "exit_code"), -9);
	cr_expect_geq(rec_num(&r, "samples"), 1);
	expect_all_dead(pidfile);
}
