/* test_memsup_nested.c: cgroups made below the run's own, end to end on
 * this machine's layout -- a memsup inside memsup (the budget on the outer
 * one, and on the inner one), a command that makes a child cgroup in each
 * hierarchy and leaves a process there (thawed first when it froze it):
 * the kill reaches every process, the child cgroups go before the run's,
 * no cgroup of either memsup is left, the run ends within seconds of its
 * budget, and its wall time and findings stay true (the outer memsup once
 * took 89 s for a 1.5 s budget, said wall_s 46.8 and blamed a 45 s
 * sampling gap on "memsup was stopped").  And a read-only memory
 * hierarchy is named as such, with no advice to become root.
 *
 * Each test runs inside the suite's pids-limited cgroup (guard_require);
 * the v1 memory and freezer hierarchies are not the guard's, so a test
 * removes what it made there itself, pass or fail. */
#include "test_cgprobe.h"
#include "test_guard.h"
#include "test_memsup_util.h"

#include <dirent.h>
#include <time.h>

static double mono_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* A pid written by the command into TMP/name; 0 if none. */
static pid_t pid_from(const struct sup_run *r, const char *name)
{
	char buf[32];
	slurp(sup_tmp_path(r, name), buf, sizeof buf);
	return (pid_t)strtol(buf, NULL, 10);
}

/* Alive: it exists and is no zombie (the test is no subreaper here, so a
 * zombie would be some memsup's not reaped). */
static int alive(pid_t pid)
{
	char path[64], buf[512];
	if (pid <= 0)
		return 0;
	snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
	slurp(path, buf, sizeof buf);
	const char *rp = strrchr(buf, ')');
	return rp && rp[1] == ' ' && rp[2] != 'Z' && rp[2] != 'X';
}

/* Every cgroup below `dir` and then dir, bottom-up: what a failing test
 * leaves in the hierarchies the guard does not clean. */
static void rm_cgroup_tree(const char *dir)
{
	DIR *d = opendir(dir);
	if (!d)
		return;
	char sub[PATH_MAX];
	for (struct dirent *e; (e = readdir(d)) != NULL;) {
		if (e->d_type != DT_DIR || e->d_name[0] == '.')
			continue;
		snprintf(sub, sizeof sub, "%s/%s", dir, e->d_name);
		rm_cgroup_tree(sub);
	}
	closedir(d);
	rmdir(dir);
}

/* The record's containment.paths (one JSON line) into paths[]; how many. */
static int rec_paths(struct sup_run *r, char paths[][PATH_MAX], int cap)
{
	const char *c = rec_str(r, "containment");
	const char *p = c ? strstr(c, "\"paths\": [") : NULL;
	int n = 0;
	if (!p)
		return 0;
	p += strlen("\"paths\": [");
	while (*p == '"' && n < cap) {
		const char *e = strchr(p + 1, '"');
		if (!e)
			break;
		snprintf(paths[n++], PATH_MAX, "%.*s", (int)(e - p - 1), p + 1);
		p = e + 1;
		if (strncmp(p, ", ", 2) != 0)
			break;
		p += 2;
	}
	return n;
}

/* The run had a cgroup in each hierarchy its record names; none of them
 * (nor anything below them) is left, and the record names none left. */
static void expect_no_cgroup_left(struct sup_run *r, const char *who)
{
	char paths[4][PATH_MAX];
	const char *c = rec_str(r, "containment");
	cr_assert_not_null(c, "%s: no containment in the record", who);
	if (strstr(c, "\"mode\": \"procscan\""))
		cgprobe_skip_or_fail("memory+pids", "%s made no cgroup: %s", who, c);
	int n = rec_paths(r, paths, 4);
	cr_expect_gt(n, 0, "%s: no paths: %s", who, c);
	for (int i = 0; i < n; i++) {
		cr_expect(!path_exists(paths[i]), "%s: %s is still there", who, paths[i]);
		rm_cgroup_tree(paths[i]);
	}
	cr_expect_not_null(strstr(c, "\"cgroups_left\": []"), "%s: %s", who, c);
}

/* The cleanup is no gap in the sampling: the bug it was (a 45 s gap,
 * "memsup was stopped") is a gap as long as the removal's wait (up to
 * CG_REMOVE_WAIT_MS, 3 s).  A gap of a fraction of a second is the
 * machine's own stall (a loaded distcheck showed one of 0.51 s), which
 * the finding rightly names. */
static void expect_no_cleanup_gap(struct sup_run *r, const char *who)
{
	const char *spots = rec_str(r, "blind_spots");
	for (const char *g = strstr(spots, "\"kind\": \"sampling_gap\""); g;
	     g = strstr(g + 1, "\"kind\": \"sampling_gap\"")) {
		const char *gs = strstr(g, "\"gap_s\": "), *to = strstr(g, "\"to_s\": ");
		cr_assert(gs && to, "%s: a sampling gap without its figures: %s", who, spots);
		double gap = strtod(gs + 9, NULL), end = strtod(to + 8, NULL);
		cr_expect_lt(gap, 1.5, "%s: a sampling gap of %.3f s to %.3f s was claimed: %s",
			     who, gap, end, spots);
	}
}

/* memsup -o TMP/ev [outer...] -- sh -c 'echo $$ >TMP/inner.pid; exec
 * memsup -o TMP/inner [inner...] -- sh -c "echo $$ >TMP/sleep.pid; exec
 * sleep 30"'; returns the elapsed seconds, the outer record loaded into r
 * and the inner one into in. */
static double run_nested(struct sup_run *r, struct sup_run *in, const char *outer_wall,
			 const char *inner_wall)
{
	char cmd[4 * PATH_MAX];
	tmp_make(r);
	snprintf(cmd, sizeof cmd, "echo $$ > %s/inner.pid; exec %s -o %s/inner --no-trace "
		 "--wall-s %s -- sh -c 'echo $$ > %s/sleep.pid; exec sleep 30'", r->tmp,
		 env_or_skip("MEMSUP"), r->tmp, inner_wall, r->tmp);
	const char *args[] = { "--no-trace", "--wall-s", outer_wall, "--", "sh", "-c", cmd, NULL };
	double t0 = mono_s();
	memsup_start(r, 1, args);
	memsup_wait(r);
	double took = mono_s() - t0;
	rec_load(r);
	memset(in, 0, sizeof *in);
	snprintf(in->tmp, sizeof in->tmp, "%s", r->tmp);
	snprintf(in->dir, sizeof in->dir, "%s/inner", r->tmp);
	return took;
}

static struct sup_run outer_run, inner_run;

/* The outer budget (1.5 s) ends an inner memsup whose own budget (20 s)
 * is far off.  cgroup.kill (or the freeze) reaches the inner memsup, its
 * sentinel and its command in their cgroups below the outer's; the inner's
 * cgroups, left by a memsup killed outright, go before the outer's.
 * Before the fix: 89 s, wall_s 46.8, a 45 s gap. */
Test(memsup_nested, outer_budget_ends_inner_memsup_in_seconds, .timeout = 60)
{
	guard_require();
	struct sup_run *r = &outer_run, *in = &inner_run;
	double took = run_nested(r, in, "1.5", "20");
	cr_expect_eq(r->status, 124, "stderr: %s", r->err);
	cr_expect_str_eq(rec_str(r, "reason"), "\"wall_budget_exceeded\"");
	cr_expect_lt(took, 6.0, "memsup took %.1f s for a 1.5 s budget", took);
	double wall = rec_num(r, "wall_s");
	cr_expect(wall >= 1.45 && wall < 3.0, "wall_s %.3f for a 1.5 s budget", wall);
	expect_no_cleanup_gap(r, "outer");
	expect_no_cgroup_left(r, "outer");
	pid_t inner = pid_from(r, "inner.pid"), sl = pid_from(r, "sleep.pid");
	cr_expect_gt(inner, 0, "the inner memsup did not start");
	cr_expect_gt(sl, 0, "the inner command did not start");
	cr_expect(!alive(inner) && !alive(sl), "inner memsup %d or its sleep %d still alive",
		  (int)inner, (int)sl);
	/* the inner record, as its memsup left it, names its own cgroups:
	 * the outer removed them */
	char path[PATH_MAX + 64], name[64];
	static char text[65536];
	snprintf(path, sizeof path, "%.4000s/resources.json", in->dir);
	slurp(path, text, sizeof text);
	snprintf(name, sizeof name, "/memsup-%d-run/memsup-%d-run", (int)r->pid, (int)inner);
	cr_expect_not_null(strstr(text, name), "the inner memsup had no cgroup below the "
			   "outer's: %.2000s", text);
	cr_log_info("outer memsup: %.2f s in all, wall_s %.3f", took, wall);
}

/* The inner budget (1 s) ends first: the inner memsup kills its sleep and
 * removes its cgroups; the outer sees its command end with 124. */
Test(memsup_nested, inner_budget_ends_first_and_both_clean_up, .timeout = 60)
{
	guard_require();
	struct sup_run *r = &outer_run, *in = &inner_run;
	double took = run_nested(r, in, "20", "1");
	cr_expect_eq(r->status, 124, "the inner memsup's status passed on; stderr: %s", r->err);
	cr_expect_str_eq(rec_str(r, "reason"), "null", "the outer budget did not fire");
	cr_expect_lt(took, 6.0, "memsup took %.1f s for a 1 s inner budget", took);
	double wall = rec_num(r, "wall_s");
	cr_expect(wall >= 0.95 && wall < 3.0, "outer wall_s %.3f", wall);
	expect_no_cleanup_gap(r, "outer");
	expect_no_cgroup_left(r, "outer");
	rec_load(in);
	cr_expect_str_eq(rec_str(in, "reason"), "\"wall_budget_exceeded\"");
	double iwall = rec_num(in, "wall_s");
	cr_expect(iwall >= 0.95 && iwall < 2.5, "inner wall_s %.3f", iwall);
	expect_no_cleanup_gap(in, "inner");
	expect_no_cgroup_left(in, "inner");
	pid_t sl = pid_from(r, "sleep.pid");
	cr_expect(sl > 0 && !alive(sl), "the inner command %d is still alive", (int)sl);
}

/* sh: a `sleep 300` moved into a child cgroup made in each hierarchy the
 * command is in (cgroup v2, v1 memory, pids, freezer), the child paths into
 * TMP/children, the sleep's pid into TMP/left.pid; `freeze` also freezes it
 * in its v1 freezer child.  Then the shell ends: the sleep is a leftover
 * that only a listing of the cgroups below the run's finds. */
static const char child_script[] =
	"sleep 300 & p=$!; echo $p > \"$T/left.pid\"\n"
	"if [ -f /sys/fs/cgroup/cgroup.controllers ]; then v2=/sys/fs/cgroup; "
	"else v2=/sys/fs/cgroup/unified; fi\n"
	"while IFS=: read -r id ctl path; do\n"
	"  case $id:$ctl in\n"
	"  0:) [ \"$V2\" = 0 ] && continue; d=$v2$path ;;\n"
	"  *:memory|*:pids|*:freezer) d=/sys/fs/cgroup/$ctl$path ;;\n"
	"  *) continue ;;\n"
	"  esac\n"
	"  [ -d \"$d\" ] || continue\n"
	"  mkdir \"$d/child\" && echo \"$d/child\" >> \"$T/children\" &&\n"
	"    echo $p > \"$d/child/cgroup.procs\" || exit 3\n"
	"  if [ \"$FREEZE\" = 1 ] && [ -f \"$d/child/freezer.state\" ]; then\n"
	"    echo FROZEN > \"$d/child/freezer.state\" || exit 4\n"
	"    echo frozen > \"$T/frozen\"\n"
	"  fi\n"
	"done < /proc/self/cgroup\n";

/* v1only: memsup runs in a mount namespace whose unified (v2) hierarchy
 * is read-only, so that the cgroup1 backend (v1 alone: membership from
 * the pids hierarchy, the kill by the v1 freezer) is the one tested. */
static void child_cgroups_case(int freeze, int v1only)
{
	guard_require();
	struct sup_run *r = &outer_run;
	char env_t[300], children[8192];
	tmp_make(r);
	snprintf(env_t, sizeof env_t, "T=%.255s", r->tmp);
	const char *argv[] = {
		"unshare", "-m", "--propagation", "private", "sh", "-c",
		"mount -o remount,bind,ro /sys/fs/cgroup/unified || exit 77; exec \"$0\" \"$@\"",
		env_or_skip("MEMSUP"), "-o", r->dir, "--no-trace", "--wall-s", "30", "--", "env",
		env_t, freeze ? "FREEZE=1" : "FREEZE=0", v1only ? "V2=0" : "V2=1", "sh", "-c",
		child_script, NULL };
	if (v1only && (geteuid() != 0 || !path_exists("/sys/fs/cgroup/unified/cgroup.procs")))
		cr_skip_test("not root on the hybrid layout: no v2 hierarchy to close here");
	double t0 = mono_s();
	sup_spawn(r, NULL, v1only ? argv : argv + 7);
	memsup_wait(r);
	double took = mono_s() - t0;
	slurp(sup_tmp_path(r, "children"), children, sizeof children);
	pid_t left = pid_from(r, "left.pid");
	int left_alive = alive(left);
	char *child[8];
	int n = 0;
	for (char *p = children, *nl; *p && n < 8; p = nl + 1) {
		nl = strchr(p, '\n');
		if (!nl)
			break;
		*nl = '\0';
		child[n++] = p;
		cr_expect(!path_exists(p), "the child cgroup %s is still there", p);
	}
	/* whatever happened, nothing stays: the leftover thawed and killed,
	 * the child cgroups removed (the v1 ones are not the guard's) */
	if (left_alive) {
		for (int i = 0; i < n; i++) {
			char st[PATH_MAX + 16];
			snprintf(st, sizeof st, "%s/freezer.state", child[i]);
			FILE *f = fopen(st, "w");
			if (f) {
				fputs("THAWED", f);
				fclose(f);
			}
		}
		kill(left, SIGKILL);
		usleep(200000);
	}
	for (int i = 0; i < n; i++)
		rm_cgroup_tree(child[i]);
	if (v1only && (r->status == 77 || r->status == 98 || strstr(r->err, "unshare:")))
		cr_skip_test("cannot remount in a mount namespace here: %s", r->err);
	rec_load(r);
	cr_expect_eq(r->status, 0, "stderr: %s", r->err);
	cr_expect_gt(n, 0, "the command made no child cgroup");
	if (v1only) {
		const char *c = rec_str(r, "containment");
		cr_expect_not_null(strstr(c, "\"mode\": \"cgroup1\""), "%s", c);
		cr_expect_not_null(strstr(c, "\"kill\": \"freezer\""), "%s", c);
	}
	if (freeze && !path_exists(sup_tmp_path(r, "frozen")))
		cr_skip_test("no v1 freezer hierarchy here to freeze a child cgroup in");
	cr_expect(left > 0 && !left_alive, "the process left in the child cgroups (%d) was alive",
		  (int)left);
	char pidtext[32];
	snprintf(pidtext, sizeof pidtext, "%d", (int)left);
	cr_expect_not_null(strstr(rec_str(r, "leftover_processes_killed"), pidtext),
			   "the leftover %d was not listed (found) as the run's: %s", (int)left,
			   rec_str(r, "leftover_processes_killed"));
	cr_expect_lt(took, 8.0, "memsup took %.1f s", took);
	expect_no_cleanup_gap(r, "memsup");
	expect_no_cgroup_left(r, "memsup");
	cr_log_info("%d child cgroups%s removed; memsup took %.2f s", n, freeze ? " (frozen)" : "",
		    took);
}

Test(memsup_nested, child_cgroup_in_each_hierarchy_killed_and_removed, .timeout = 60)
{
	child_cgroups_case(0, 0);
}

/* The leftover froze itself in a v1 freezer cgroup of its own: thawing
 * the run's freezer does not thaw it, and SIGKILLed it would never die. */
Test(memsup_nested, frozen_child_freezer_cgroup_thawed_killed_removed, .timeout = 60)
{
	child_cgroups_case(1, 0);
}

/* The same with cgroup v1 alone: members listed from the pids hierarchy's
 * cgroups below the run's, killed by the v1 freezer, the frozen child
 * thawed. */
Test(memsup_nested, v1_alone_frozen_child_found_killed_removed, .timeout = 60)
{
	child_cgroups_case(1, 1);
}

/* A read-only memory hierarchy (bind-remounted read-only in a mount
 * namespace of the test's own): the error is the kernel's, EROFS, and it
 * gives no advice to run as root (it was "No such file or directory ...
 * run memsup as root", errno clobbered while the advice was looked up). */
Test(memsup_nested, read_only_memory_hierarchy_says_erofs, .timeout = 30)
{
	guard_require();
	if (geteuid() != 0)
		cr_skip_test("needs root to remount the memory hierarchy in a mount namespace");
	if (!path_exists("/sys/fs/cgroup/memory/memory.usage_in_bytes"))
		cr_skip_test("no v1 memory hierarchy mounted at /sys/fs/cgroup/memory");
	struct sup_run *r = &outer_run;
	char cmd[2 * PATH_MAX];
	tmp_make(r);
	snprintf(cmd, sizeof cmd, "mount -o remount,bind,ro /sys/fs/cgroup/memory || exit 77; "
		 "exec %.4000s -o %.255s/ev --no-trace --mem-max 50 -- true", env_or_skip("MEMSUP"),
		 r->tmp);
	const char *argv[] = { "unshare", "-m", "--propagation", "private", "sh", "-c", cmd, NULL };
	sup_spawn(r, NULL, argv);
	int st = memsup_wait(r);
	if (st == 77 || st == 98 || (st == 1 && strstr(r->err, "unshare")))
		cr_skip_test("cannot remount in a mount namespace here: %s", r->err);
	cr_expect_eq(st, 125, "stderr: %s", r->err);
	cr_expect_not_null(strstr(r->err, "Read-only file system"), "%s", r->err);
	cr_expect_null(strstr(r->err, "No such file"), "%s", r->err);
	cr_expect_null(strstr(r->err, "as root"), "advice that does not apply: %s", r->err);
}

/* sh: the test's own `sleep 300` ($P, no process of the run: memsup's
 * kill does not reach it) moved into a child of the run's v1 memory
 * cgroup, which memsup then cannot remove.  TMP/mem: that child. */
static const char foreign_script[] =
	"m=/sys/fs/cgroup/memory$(sed -n 's/^[0-9]*:memory:\\(.*\\)/\\1/p' /proc/self/cgroup)\n"
	"[ -f \"$m/memory.usage_in_bytes\" ] || exit 77\n"
	"mkdir \"$m/child\" && echo \"$m/child\" > \"$T/mem\" && echo $P > \"$m/child/cgroup.procs\"\n";

/* A cgroup memsup cannot remove is waited on CG_REMOVE_WAIT_MS (3 s) at
 * most, then named in containment.cgroups_left with why (and its parent,
 * which keeps it), and the wait is neither wall time nor a sampling gap. */
Test(memsup_nested, cgroup_that_cannot_go_is_named_not_waited_on, .timeout = 60)
{
	guard_require();
	struct sup_run *r = &outer_run;
	char env_t[300], env_p[32], mem[PATH_MAX];
	pid_t foreign = fork();
	cr_assert_geq(foreign, 0);
	if (foreign == 0) {
		execlp("sleep", "sleep", "300", (char *)NULL);
		_exit(127);
	}
	tmp_make(r);
	snprintf(env_t, sizeof env_t, "T=%.255s", r->tmp);
	snprintf(env_p, sizeof env_p, "P=%d", (int)foreign);
	const char *args[] = { "--no-trace", "--", "env", env_t, env_p, "sh", "-c", foreign_script,
			       NULL };
	double t0 = mono_s();
	memsup_start(r, 1, args);
	memsup_wait(r);
	double took = mono_s() - t0;
	slurp(sup_tmp_path(r, "mem"), mem, sizeof mem);
	mem[strcspn(mem, "\n")] = '\0';
	/* the sleep is the test's to end, and the cgroups left its to remove */
	kill(foreign, SIGKILL);
	waitpid(foreign, NULL, 0);
	rec_load(r);
	char paths[4][PATH_MAX];
	int n = rec_paths(r, paths, 4);
	if (mem[0])
		rm_cgroup_tree(mem);
	for (int i = 0; i < n; i++)
		rm_cgroup_tree(paths[i]);
	if (r->status == 77)
		cr_skip_test("no v1 memory hierarchy here");
	cr_assert_eq(r->status, 0, "stderr: %s", r->err);
	cr_assert(mem[0], "the command made no memory cgroup");
	const char *c = rec_str(r, "containment");
	cr_expect_not_null(strstr(c, mem), "the memory child %s is not named: %s", mem, c);
	cr_expect_not_null(strstr(c, "still holds processes"), "%s", c);
	cr_expect_not_null(strstr(c, "a cgroup below it is left"), "%s", c);
	cr_expect_not_null(strstr(c, "\"cgroups_left_count\": 2"), "%s", c);
	cr_expect(took >= 2.9 && took < 6.0, "memsup took %.1f s: the wait is 3 s", took);
	double wall = rec_num(r, "wall_s");
	cr_expect_lt(wall, 1.5, "wall_s %.3f counts the wait for the cgroups", wall);
	expect_no_cleanup_gap(r, "memsup");
	cr_expect_not_null(strstr(rec_str(r, "notes"), "could not all be removed"), "%s",
			   rec_str(r, "notes"));
	cr_log_info("memsup took %.2f s, wall_s %.3f: %s", took, wall, c);
}

/* This process's cgroup directory in hierarchy `ctl` ("" for v2), from
 * /proc/self/cgroup; 0 when there is none. */
static int own_cgroup(const char *ctl, char *out, size_t cap)
{
	char text[4096];
	slurp("/proc/self/cgroup", text, sizeof text);
	for (char *l = text, *nl; *l; l = nl + 1) {
		nl = strchr(l, '\n');
		if (!nl)
			break;
		*nl = '\0';
		char *a = strchr(l, ':'), *b = a ? strchr(a + 1, ':') : NULL;
		if (!b)
			continue;
		*b = '\0';
		int hit = *ctl ? strcmp(a + 1, ctl) == 0 : (a == l + 1 && *l == '0' && b == a + 1);
		if (hit) {
			const char *base = *ctl ? "/sys/fs/cgroup/" : path_exists("/sys/fs/cgroup/unified/"
				"cgroup.procs") ? "/sys/fs/cgroup/unified" : "/sys/fs/cgroup";
			snprintf(out, cap, "%s%s%s", base, *ctl ? ctl : "", strcmp(b + 1, "/") ? b + 1 : "");
			return path_exists(out);
		}
	}
	return 0;
}

/* A memsup killed together with its sentinel leaves its run's cgroups,
 * with the cgroups its command made below them; the next run removes the
 * whole tree, bottom-up (it removed only an empty run cgroup). */
Test(memsup_nested, next_run_sweeps_a_dead_memsups_tree, .timeout = 30)
{
	guard_require();
	static const char *const ctl[] = { "", "memory", "pids", "freezer" };
	char made[4][PATH_MAX + 64], own[PATH_MAX], sub[PATH_MAX + 128];
	int n = 0;
	pid_t dead = fork();
	if (dead == 0)
		_exit(0);
	cr_assert_gt(dead, 0);
	waitpid(dead, NULL, 0);
	for (int i = 0; i < 4; i++) {
		if (!own_cgroup(ctl[i], own, sizeof own))
			continue;
		snprintf(made[n], sizeof made[n], "%s/memsup-%d-run", own, (int)dead);
		snprintf(sub, sizeof sub, "%s/child", made[n]);
		if (mkdir(made[n], 0755) < 0)
			continue;
		cr_expect_eq(mkdir(sub, 0755), 0, "%s: %s", sub, strerror(errno));
		snprintf(sub, sizeof sub, "%s/child/grandchild", made[n]);
		cr_expect_eq(mkdir(sub, 0755), 0, "%s: %s", sub, strerror(errno));
		n++;
	}
	if (n == 0)
		cgprobe_skip_or_fail("memory+pids", "no cgroup of this process could take a child");
	struct sup_run r;
	const char *args[] = { "--no-trace", "--", "true", NULL };
	int st = memsup_run(&r, args);
	int left = 0;
	for (int i = 0; i < n; i++) {
		left += path_exists(made[i]);
		cr_expect(!path_exists(made[i]), "%s is still there after the next run", made[i]);
		rm_cgroup_tree(made[i]);
	}
	cr_expect_eq(st, 0, "stderr: %s", r.err);
	cr_log_info("%d stale trees, %d left", n, left);
}
