/* test_memsup_harden_escape.c: nothing of the tree escapes memsup.
 * Processes that move themselves in the tree (CLONE_PARENT, a subreaper of
 * their own), a churn of ~500 short-lived processes a second, and INT, TERM,
 * HUP, QUIT to memsup while the tree is busy: afterwards no pid of the tree
 * is alive or unreaped, and the record is complete.  A SIGKILLed memsup:
 * its sentinel kills the grandchildren too.  Last, a descendant that
 * writes itself out of the run's cgroups, one hierarchy at a time and all
 * at once: killed all the same, and listed. */
#include "test_memsup_harden.h"
#include "contain/track.h"

#include <time.h>

/* The moved process of h_reparent MODE: measured while it lives (the peak
 * holds both blocks), killed when the main process exits, listed, and
 * reaped by memsup. */
static void reparent_run(const char *mode)
{
	struct sup_run r;
	char pidfile[PATH_MAX + 16], text[64], needle[96];
	tmp_make(&r);
	snprintf(pidfile, sizeof pidfile, "%s/moved.pid", r.tmp);
	const char *argv[] = { env_or_skip("MEMSUP"), "-o", r.dir, "--", prog("h_reparent"),
			       mode, pidfile, "20", "300", NULL };
	harden_start(&r, NULL, argv);
	cr_assert_eq(memsup_wait(&r), 0, "%s: stderr: %s", mode, r.err);
	no_children_left();
	slurp(pidfile, text, sizeof text);
	pid_t moved = (pid_t)atoi(text);
	cr_assert_gt(moved, 0, "%s: no pid written", mode);
	cr_expect_eq(all_pids_gone(pidfile), 1);
	rec_load(&r);
	double peak = rec_num(&r, "peak_tree_rss_mb");
	cr_expect_geq(peak, 40.0, "%s: peak %.1f MB misses the moved process's 20 MB", mode, peak);
	snprintf(needle, sizeof needle, "{\"pid\": %d, \"argv\": [", (int)moved);
	const char *left = rec_str(&r, "leftover_processes_killed");
	cr_expect_not_null(strstr(left, needle), "%s: %d not listed: %s", mode, (int)moved, left);
	snprintf(needle, sizeof needle, "{\"pid\": %d, \"exit_code\": -9}", (int)moved);
	const char *orph = rec_str(&r, "orphans_reaped");
	cr_expect_not_null(strstr(orph, needle), "%s: %d not reaped by memsup: %s", mode,
			   (int)moved, orph);
}

/* clone(CLONE_PARENT): a child of memsup that memsup did not start. */
Test(harden_escape, clone_parent_sibling_measured_and_killed, .timeout = 30)
{
	reparent_run("cloneparent");
}

/* A subreaper inside the tree takes a double-forked setsid() grandchild;
 * when it exits, the grandchild comes to memsup. */
Test(harden_escape, nested_subreaper_orphan_measured_and_killed, .timeout = 30)
{
	reparent_run("subreaper");
}

/* rss.jsonl and the record agree on the number of samples, and both are
 * whole. */
static void expect_record_complete(struct sup_run *r)
{
	char path[PATH_MAX + 32];
	rec_load(r);
	snprintf(path, sizeof path, "%s/rss.jsonl", r->dir);
	long lines = jsonl_whole_lines(path);
	cr_expect_eq((double)lines, rec_num(r, "samples"), "rss.jsonl has %ld lines", lines);
	cr_expect_gt(lines, 0);
	snprintf(path, sizeof path, "%s/timeline.jsonl", r->dir);
	cr_expect_eq(jsonl_whole_lines(path), lines);
	snprintf(path, sizeof path, "%s/processes.json", r->dir);
	cr_expect(path_exists(path), "no processes.json");
	snprintf(path, sizeof path, "%s/resources.json.tmp", r->dir);
	cr_expect(!path_exists(path), "a temporary record was left behind");
	cr_expect_gt(rec_num(r, "wall_s"), 0);
	cr_expect_gt(rec_num(r, "pid"), 0);
}

/* 1000 processes of a millisecond or less, about 500 a second: 500 reaped
 * by the command, 500 (clone(CLONE_PARENT) children) by memsup -- exactly
 * 500 in its count --, sampling goes on, and nothing is left. */
Test(harden_escape, churn_500_per_second_every_orphan_reaped, .timeout = 120)
{
	struct sup_run r;
	char pidfile[PATH_MAX + 16];
	tmp_make(&r);
	snprintf(pidfile, sizeof pidfile, "%s/pids", r.tmp);
	const char *argv[] = { env_or_skip("MEMSUP"), "-o", r.dir, "--", prog("h_churn"), "500",
			       pidfile, "20", "2000", NULL };
	harden_start(&r, NULL, argv);
	cr_assert_eq(memsup_wait(&r), 0, "stderr: %s", r.err);
	no_children_left();
	cr_expect_eq(all_pids_gone(pidfile), 500);
	expect_record_complete(&r);
	cr_expect_eq(rec_num(&r, "orphans_reaped_total"), 500);
	cr_expect_geq(rec_num(&r, "peak_tree_rss_mb"), 20.0);
	cr_expect_geq(rec_num(&r, "max_processes"), 1);
	cr_expect_str_eq(rec_str(&r, "reason"), "null");
}

/* Signal sig to memsup while h_churn forks: tree killed, 128+sig, reason
 * "interrupted", evidence complete. */
static void interrupt_run(int sig)
{
	struct sup_run r;
	char pidfile[PATH_MAX + 16], text[65536];
	tmp_make(&r);
	snprintf(pidfile, sizeof pidfile, "%s/pids", r.tmp);
	const char *argv[] = { env_or_skip("MEMSUP"), "-o", r.dir, "--", prog("h_churn"),
			       "1000000", pidfile, "20", "2000", NULL };
	harden_start(&r, NULL, argv);
	/* busy: 50 grandchildren started, so the tree is mid-churn */
	int lines = 0;
	for (int i = 0; i < 3000 && lines < 50; i++) {
		usleep(5000);
		slurp(pidfile, text, sizeof text);
		lines = 0;
		for (const char *p = text; (p = strchr(p, '\n')) != NULL; p++)
			lines++;
	}
	cr_assert_geq(lines, 50, "h_churn did not get going");
	kill(r.pid, sig);
	cr_assert_eq(memsup_wait(&r), 128 + sig, "signal %d: stderr: %s", sig, r.err);
	no_children_left();
	cr_expect_geq(all_pids_gone(pidfile), 50);
	expect_record_complete(&r);
	cr_expect_str_eq(rec_str(&r, "reason"), "\"interrupted\"");
	cr_expect_eq(rec_num(&r, "exit_status"), 128 + sig);
	cr_expect_eq(rec_num(&r, "exit_code"), -SIGKILL);
	cr_expect_geq(rec_num(&r, "peak_tree_rss_mb"), 20.0);
}

Test(harden_escape, sigint_while_busy, .timeout = 60) { interrupt_run(SIGINT); }
Test(harden_escape, sigterm_while_busy, .timeout = 60) { interrupt_run(SIGTERM); }
Test(harden_escape, sighup_while_busy, .timeout = 60) { interrupt_run(SIGHUP); }
Test(harden_escape, sigquit_while_busy, .timeout = 60) { interrupt_run(SIGQUIT); }

/* SIGKILL cannot be caught, so memsup cannot kill the tree itself; its
 * sentinel does: the command and its children -- which re-parent to the
 * test, a subreaper -- are all dead within a second, with or without a
 * cgroup. */
static void sigkilled_memsup_run(const char *cgroup)
{
	struct sup_run r;
	char pidfile[PATH_MAX + 16], text[4096];
	tmp_make(&r);
	snprintf(pidfile, sizeof pidfile, "%s/pids", r.tmp);
	const char *argv[] = { env_or_skip("MEMSUP"), "-o", r.dir, "--cgroup", cgroup, "--",
			       prog("sleeper"), "60", "2", pidfile, NULL };
	harden_start(&r, NULL, argv);
	cr_assert(wait_for_file(pidfile), "sleeper never wrote its pids");
	usleep(100000); /* seen by a sample or two */
	kill(r.pid, SIGKILL);
	cr_assert_eq(memsup_wait(&r), 1000 + SIGKILL);
	slurp(pidfile, text, sizeof text);
	long pids[3];
	int n = 0;
	for (char *p = text, *end; n < 3; p = end) {
		pids[n] = strtol(p, &end, 10);
		if (end == p)
			break;
		n++;
	}
	cr_assert_eq(n, 3);
	/* they are our children now (we are a subreaper): dead means reaped
	 * here, within a second */
	int alive = 3;
	for (int i = 0; i < 100 && alive; i++) {
		usleep(10000);
		alive = 0;
		for (int k = 0; k < 3; k++) {
			waitpid((pid_t)pids[k], NULL, WNOHANG);
			alive += kill((pid_t)pids[k], 0) == 0;
		}
	}
	cr_expect_eq(alive, 0, "%s: %d of the tree outlived a SIGKILLed memsup by 1 s", cgroup,
		     alive);
	for (int k = 0; k < 3; k++) {
		kill((pid_t)pids[k], SIGKILL);
		waitpid((pid_t)pids[k], NULL, 0);
	}
	rec_load_after_sentinel(&r, 2);
	cr_expect_str_eq(rec_str(&r, "reason"), "\"supervisor_killed\"", "%s", cgroup);
}

Test(harden_escape, sigkilled_memsup_leaves_nothing, .timeout = 30)
{
	sigkilled_memsup_run("auto");
	sigkilled_memsup_run("off");
}

/* ---- a descendant out of the run's cgroups ------------------------------------ */

/* h_cgmove WHICH: a setsid()'d grandchild writes itself into the parent
 * cgroup of each hierarchy in WHICH and becomes `sleep 30`; the main
 * process exits.  memsup returns 0 in well under 3 s (not after the
 * sleep's 30, nor the 3 s a zombie nobody reaps would cost), the sleep is
 * gone within a second, nothing is left to us, and the record lists it
 * with the hierarchies it left.  Without a cgroup (the run fell back to
 * the /proc scan) there is nothing to leave: skipped. */
static void cgmove_run(const char *which, const char *const *names)
{
	struct sup_run r;
	char pidfile[PATH_MAX + 16], text[512], needle[96];
	struct timespec t0, t1;
	tmp_make(&r);
	snprintf(pidfile, sizeof pidfile, "%s/moved.pid", r.tmp);
	const char *argv[] = { env_or_skip("MEMSUP"), "--no-trace", "-o", r.dir, "--",
			       prog("h_cgmove"), which, pidfile, "300", NULL };
	clock_gettime(CLOCK_MONOTONIC, &t0);
	harden_start(&r, NULL, argv);
	int rc = memsup_wait(&r);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	double took = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
	slurp(pidfile, text, sizeof text);
	rec_load(&r);
	if (strstr(rec_str(&r, "containment"), "\"mode\": \"procscan\""))
		cr_skip_test("%s: memsup made no cgroup here: nothing to leave", which);
	if (strncmp(text, "ERR", 3) == 0 && strstr(text, strerror(ENOENT)))
		cr_skip_test("%s: no such hierarchy mounted here: %s", which, text);
	cr_assert(strncmp(text, "ERR", 3) != 0, "%s: the escape itself failed: %s", which, text);
	pid_t moved = (pid_t)atoi(text);
	cr_assert_gt(moved, 0, "%s: no pid written", which);
	int gone = 0;
	for (int i = 0; i < 100 && !gone; i++) {
		errno = 0;
		gone = kill(moved, 0) < 0 && errno == ESRCH;
		if (!gone)
			usleep(10000);
	}
	if (!gone)
		kill(moved, SIGKILL);
	cr_expect(gone, "%s: the escapee %d outlived memsup by 1 s", which, (int)moved);
	cr_expect_eq(rc, 0, "%s: stderr: %s", which, r.err);
	cr_expect_lt(took, 3.0, "%s: memsup took %.2f s", which, took);
	no_children_left();
	const char *left = rec_str(&r, "leftover_processes_killed");
	snprintf(needle, sizeof needle, "{\"pid\": %d, \"argv\": [\"sleep\", \"30\"], "
		 "\"left_cgroups\": [", (int)moved);
	const char *entry = strstr(left, needle);
	cr_expect_not_null(entry, "%s: %d not listed with how it left: %s", which, (int)moved,
			   left);
	const char *end = entry ? strchr(entry, '}') : NULL;
	for (size_t i = 0; entry && end && names[i]; i++) {
		char mnt[64];
		/* "all" moves in the hierarchies mounted here */
		snprintf(mnt, sizeof mnt, "/sys/fs/cgroup/%s", names[i]);
		if (strcmp(names[i], "v2") != 0 && !path_exists(mnt))
			continue;
		snprintf(needle, sizeof needle, "\"%s\"", names[i]);
		const char *at = strstr(entry, needle);
		cr_expect(at && at < end, "%s: left_cgroups does not name %s: %s", which, names[i],
			  left);
	}
	cr_log_info("%s: memsup returned in %.2f s; %s", which, took, left);
}

Test(harden_escape, moved_out_of_v2_killed_and_listed, .timeout = 30)
{
	const char *n[] = { "v2", NULL };
	cgmove_run("v2", n);
}

Test(harden_escape, moved_out_of_memory_killed_and_listed, .timeout = 30)
{
	const char *n[] = { "memory", NULL };
	cgmove_run("memory", n);
}

Test(harden_escape, moved_out_of_pids_killed_and_listed, .timeout = 30)
{
	const char *n[] = { "pids", NULL };
	cgmove_run("pids", n);
}

Test(harden_escape, moved_out_of_freezer_killed_and_listed, .timeout = 30)
{
	const char *n[] = { "freezer", NULL };
	cgmove_run("freezer", n);
}

/* Out of every hierarchy at once: nothing of the run's cgroups reaches it
 * any more; only the pidfd does. */
Test(harden_escape, moved_out_of_all_killed_and_listed, .timeout = 30)
{
	const char *n[] = { "v2", "memory", "pids", "freezer", NULL };
	cgmove_run("all", n);
}

/* track.h on its own: a held child and an unseen grandchild (a
 * descendant only the end's scan finds) are stopped and killed by the
 * sweep; an excluded child -- memsup's sentinel, in a run -- and its own
 * child are left alone.  No cgroup here: nothing is said to have left. */
static void found_none(void *ctx, pid_t pid, const char *left)
{
	(void)pid;
	++*(int *)ctx;
	cr_expect_str_eq(left, "", "no run cgroups, yet %d left %s", (int)pid, left);
}

static void sleep_wait(void *ctx, int ms)
{
	(void)ctx;
	usleep((useconds_t)ms * 1000);
	while (waitpid(-1, NULL, WNOHANG) > 0)
		;
}

static pid_t sleeper_with_child(void)
{
	int p[2];
	cr_assert_eq(pipe(p), 0);
	pid_t c = fork();
	cr_assert_geq(c, 0);
	if (c == 0) {
		setpgid(0, 0);
		if (fork() == 0) {
			close(p[0]);
			close(p[1]); /* the grandchild is there: the parent may go on */
			for (;;)
				pause();
		}
		close(p[1]);
		char b;
		while (read(p[0], &b, 1) > 0)
			;
		for (;;)
			pause();
	}
	close(p[1]);
	char b;
	while (read(p[0], &b, 1) > 0)
		;
	close(p[0]);
	return c;
}

Test(harden_escape, track_sweep_kills_descendants_spares_excluded, .timeout = 20)
{
	if (prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) < 0)
		cr_skip_test("no PR_SET_CHILD_SUBREAPER");
	pid_t held = sleeper_with_child(), spared = sleeper_with_child();
	struct track *t;
	cr_assert_eq(track_open(&t, NULL, getpid()), 0);
	track_exclude(t, spared);
	track_set_home(t, held); /* the same cgroups as ours: no home at all */
	track_note(t, &held, 1);
	cr_expect_eq(track_count(t), 1);
	int found = 0;
	struct track_waiter w = { sleep_wait, found_none, &found };
	int n = track_sweep(t, &w, 2000);
	cr_expect_eq(n, 2, "the held child and its unseen child: %d stopped", n);
	cr_expect_eq(found, 0);
	sleep_wait(NULL, 50);
	errno = 0;
	cr_expect(kill(held, 0) < 0 && errno == ESRCH, "the held child is not dead and reaped");
	cr_expect_eq(kill(spared, 0), 0, "the excluded child was killed");
	track_close(t);
	kill(-spared, SIGKILL); /* it and its child: a group of their own */
	waitpid(spared, NULL, 0);
	sleep_wait(NULL, 50);
}
