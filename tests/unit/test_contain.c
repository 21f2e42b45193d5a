/* test_contain.c: the containment interface with its /proc scan backend
 * (--cgroup off) -- on the fake proc roots (tests/data/proc: tree1 has
 * children files, tree2 not) for what it finds and says, and live, on a
 * small tree it starts, for killing: every member found and killed (the
 * SIGSTOP sweeps), SIGTERM first under a grace -- and, last, the cgroup
 * backend live where this machine lets a cgroup be made (the backends on
 * fake cgroup trees: test_cgroup.c) -- and what MEMSUP_DEBUG=1 says of the
 * choice. */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/procfs.h"
#include "contain/contain.h"
#include "test_cgprobe.h"
#include "test_proc_fixtures.h"

extern char **environ;

Test(contain, check_before_anything_is_made)
{
	char err[256] = "";
	struct contain_config cc = { proc_fixture("tree2"), 100, TREE_CHILDREN, CONTAIN_OFF, NULL, 0, 0, 0 };
	cr_expect_eq(contain_check(&cc, err, sizeof err), -1);
	cr_expect_str_eq(err, "--discovery: 'children': this kernel has no "
			 "/proc/PID/task/TID/children files (CONFIG_PROC_CHILDREN)");
	cc.discovery = TREE_AUTO;
	cr_expect_eq(contain_check(&cc, err, sizeof err), 0);
	cc = (struct contain_config){ proc_fixture("tree1"), 100, TREE_CHILDREN, CONTAIN_OFF,
				      NULL, 0, 0, 0 };
	cr_expect_eq(contain_check(&cc, err, sizeof err), 0);
}

/* The fixtures' tree (see test_tree.c): self 100, six descendants. */
Test(contain, procscan_on_a_fixture)
{
	static const pid_t want[] = { 50, 101, 102, 103, 104, 300 };
	for (int fixture = 1; fixture <= 2; fixture++) {
		struct contain *c;
		struct contain_config cc = { proc_fixture(fixture == 1 ? "tree1" : "tree2"), 100,
					     TREE_AUTO, CONTAIN_OFF, NULL, 0, 0, 0 };
		cr_assert_eq(contain_open(&c, &cc), 0);
		cr_expect_str_eq(contain_name(c), "scan", "auto is the scan");
		const char *const *notes;
		size_t nn = contain_notes(c, &notes);
		if (fixture == 1) {
			cr_expect_eq(nn, 0);
		} else {
			cr_assert_eq(nn, 1, "no children files: said in the record");
			cr_expect_not_null(strstr(notes[0], "CONFIG_PROC_CHILDREN"));
		}
		const pid_t *pids;
		size_t n;
		cr_assert_eq(contain_members(c, &pids, &n), 0);
		cr_assert_eq(n, sizeof want / sizeof want[0]);
		for (size_t i = 0; i < n; i++) {
			size_t k = 0;
			while (k < n && want[k] != pids[i])
				k++;
			cr_expect_lt(k, n, "pid %d is not of the tree", (int)pids[i]);
		}
		uint64_t rss;
		unsigned np;
		cr_assert_eq(contain_sample(c, &rss, &np), 0);
		cr_expect_eq(np, n);
		const struct tree_member *m;
		cr_assert_eq(contain_sampled(c, &m), n);
		uint64_t sum = 0;
		for (size_t i = 0; i < n; i++)
			sum += m[i].rss;
		cr_expect_eq(sum, rss, "the sample's terms add up to it");
		contain_close(c);
	}
	struct contain *c;
	struct contain_config cc = { proc_fixture("tree1"), 100, TREE_CHILDREN, CONTAIN_OFF,
				     NULL, 0, 0, 0 };
	cr_assert_eq(contain_open(&c, &cc), 0);
	cr_expect_str_eq(contain_name(c), "children");
	contain_close(c);
}

/* ---- MEMSUP_DEBUG: the decision said on stderr ------------------------------ */

/* contain_open(cfg) with stderr caught; the text into buf. */
static void open_saying(const struct contain_config *cc, char *buf, size_t cap)
{
	struct contain *c;
	FILE *f = tmpfile();
	cr_assert_not_null(f);
	int saved = dup(2);
	cr_assert_geq(saved, 0);
	dup2(fileno(f), 2);
	int rc = contain_open(&c, cc);
	dup2(saved, 2);
	close(saved);
	cr_assert_eq(rc, 0);
	contain_close(c);
	rewind(f);
	size_t n = fread(buf, 1, cap - 1, f);
	buf[n] = '\0';
	fclose(f);
}

Test(contain, debug_says_the_choice_and_the_fallback)
{
	char err[4096];
	setenv("MEMSUP_DEBUG", "1", 1);
	struct contain_config cc = { proc_fixture("tree1"), 100, TREE_AUTO, CONTAIN_OFF, NULL, 0,
				     0, 0 };
	open_saying(&cc, err, sizeof err);
	cr_expect_not_null(strstr(err, "memsup: debug: containment: --cgroup off: the /proc scan, "
				       "no cgroup tried\n"), "%s", err);
	cr_expect_not_null(strstr(err, "memsup: debug: containment: chose procscan (discovery "
				       "scan): kill by stop-and-kill"), "%s", err);
	/* no cgroup file in the fixture: the reason, then the fallback */
	cc.cgroup = CONTAIN_AUTO;
	open_saying(&cc, err, sizeof err);
	cr_expect_not_null(strstr(err, "containment: --cgroup auto\n"), "%s", err);
	cr_expect_not_null(strstr(err, "containment: cannot tell the layout: cannot read "), "%s",
			   err);
	cr_expect_not_null(strstr(err, "containment: no cgroup of the run's own: falling back "
				       "to the /proc scan\n"), "%s", err);
	cr_expect_not_null(strstr(err, "containment: chose procscan"), "%s", err);
	for (const char *l = err; *l; l = strchr(l, '\n') + 1)
		cr_expect_eq(strncmp(l, "memsup: debug: ", 15), 0, "a line of another kind: %s", l);
}

Test(contain, no_debug_says_nothing)
{
	char err[4096];
	setenv("MEMSUP_DEBUG", "0", 1);
	struct contain_config cc = { proc_fixture("tree1"), 100, TREE_AUTO, CONTAIN_AUTO, NULL, 0,
				     0, 0 };
	open_saying(&cc, err, sizeof err);
	cr_expect_str_empty(err);
}

/* ---- live: a shell and two sleeps, started inside, then killed ---------- */

struct seen {
	pid_t pid[16];
	size_t n;
};

static void reap_wait(void *ctx, int ms)
{
	(void)ctx;
	usleep((useconds_t)ms * 1000);
	while (waitpid(-1, NULL, WNOHANG) > 0)
		;
}

static void note_found(void *ctx, pid_t pid)
{
	struct seen *s = ctx;
	if (s->n < 16)
		s->pid[s->n++] = pid;
}

/* Start `sh -c 'sleep 30 & sleep 30 & wait'` inside c; returns once the
 * three are members. */
static pid_t start_three(struct contain *c)
{
	char *argv[] = { "/bin/sh", "-c", "sleep 30 & sleep 30 & wait", NULL };
	sigset_t mask;
	sigprocmask(SIG_SETMASK, NULL, &mask);
	int out = open("/dev/null", O_WRONLY | O_CLOEXEC);
	cr_assert_geq(out, 0);
	struct spawn_request req = { .argv = argv, .envp = environ, .out_fd = out, .err_fd = out,
				     .mask = &mask };
	struct spawn_result res;
	cr_assert_eq(contain_start(c, &req, &res), 0);
	cr_assert_eq(res.start_errno, 0);
	close(out);
	const pid_t *pids;
	size_t n = 0;
	for (int i = 0; i < 1000 && n < 3; i++) {
		cr_assert_eq(contain_members(c, &pids, &n), 0);
		if (n < 3)
			usleep(10000);
	}
	cr_assert_eq(n, 3, "the shell and its two sleeps are the tree");
	return res.pid;
}

static struct contain *open_live(void)
{
	/* orphans come to us, as to memsup, whatever dies first */
	if (prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) < 0)
		cr_skip_test("no child subreaper here");
	struct contain *c;
	struct contain_config cc = { "/proc", getpid(), TREE_AUTO, CONTAIN_OFF, NULL, 0, 0, 0 };
	cr_assert_eq(contain_open(&c, &cc), 0);
	return c;
}

Test(contain, kill_finds_and_kills_every_member, .timeout = 30)
{
	struct contain *c = open_live();
	pid_t sh = start_three(c);
	uint64_t rss;
	unsigned np;
	cr_assert_eq(contain_sample(c, &rss, &np), 0);
	cr_expect_eq(np, 3);
	cr_expect_gt(rss, 0);

	struct seen s = { .n = 0 };
	struct contain_waiter w = { reap_wait, note_found, &s, NULL, 0 };
	cr_expect_eq(contain_kill(c, 0, &w), 0);
	cr_expect_geq(s.n, 3, "each member is told before it is killed");
	int saw_sh = 0;
	for (size_t i = 0; i < s.n; i++)
		saw_sh |= s.pid[i] == sh;
	cr_expect(saw_sh);
	const pid_t *pids;
	size_t n;
	cr_assert_eq(contain_members(c, &pids, &n), 0);
	cr_expect_eq(n, 0, "nothing left");
	reap_wait(NULL, 0);
	cr_expect(waitpid(-1, NULL, WNOHANG) < 0 && errno == ECHILD, "and nothing unreaped");
	contain_close(c);
}

Test(contain, grace_sends_sigterm_first, .timeout = 30)
{
	struct contain *c = open_live();
	start_three(c);
	struct seen s = { .n = 0 };
	struct contain_waiter w = { reap_wait, note_found, &s, NULL, 0 };
	/* a sleep dies of SIGTERM: gone within the grace, no SIGKILL round
	 * finds anything */
	cr_expect_eq(contain_kill(c, 20, &w), 0);
	cr_expect_eq(s.n, 0, "%zu members were still there for SIGKILL", s.n);
	const pid_t *pids;
	size_t n;
	cr_assert_eq(contain_members(c, &pids, &n), 0);
	cr_expect_eq(n, 0);
	contain_close(c);
}

/* ---- live, in a cgroup of the run's own (where this machine lets us) ----- */

/* The cgroup backend on the real kernel: the command is inside from the
 * start, its members are the cgroup's, one cgroup.kill (or freeze) ends
 * them, and finish removes every cgroup made. */
Test(contain, cgroup_live_start_inside_kill_and_remove, .timeout = 30)
{
	if (prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) < 0)
		cr_skip_test("no child subreaper here");
	struct contain *c;
	struct contain_config cc = { .proc_root = "/proc", .self = getpid(),
				     .discovery = TREE_AUTO, .cgroup = CONTAIN_AUTO };
	cr_assert_eq(contain_open(&c, &cc), 0);
	const struct contain_info *in = contain_info(c);
	if (strcmp(in->mode, "procscan") == 0) {
		contain_close(c);
		cgprobe_skip_or_fail("memory+pids", "contain_open chose the /proc scan");
	}
	cr_expect_str_eq(contain_name(c), "cgroup");
	pid_t sh = start_three(c);
	char path[64], text[4096], name[64];
	snprintf(path, sizeof path, "/proc/%d/cgroup", (int)sh);
	FILE *f = fopen(path, "r");
	cr_assert_not_null(f);
	size_t n = fread(text, 1, sizeof text - 1, f);
	text[n] = '\0';
	fclose(f);
	snprintf(name, sizeof name, "/memsup-%d-run", (int)getpid());
	cr_expect_not_null(strstr(text, name), "not started inside:\n%s", text);
	char paths[CONTAIN_MAX_PATHS][PATH_MAX];
	size_t np = in->n_paths;
	for (size_t i = 0; i < np; i++) {
		snprintf(paths[i], PATH_MAX, "%s", in->paths[i]);
		cr_expect_eq(access(paths[i], F_OK), 0, "%s", paths[i]);
	}
	struct seen s = { .n = 0 };
	struct contain_waiter w = { reap_wait, note_found, &s, NULL, 0 };
	cr_expect_eq(contain_kill(c, 0, &w), 0);
	cr_expect_geq(s.n, 3, "each member is told before it is killed");
	const pid_t *pids;
	size_t nm;
	cr_assert_eq(contain_members(c, &pids, &nm), 0);
	cr_expect_eq(nm, 0, "nothing left");
	cr_expect_eq(contain_finish(c), 0);
	for (size_t i = 0; i < np; i++)
		cr_expect_neq(access(paths[i], F_OK), 0, "%s was not removed", paths[i]);
	contain_close(c);
	reap_wait(NULL, 0);
}
