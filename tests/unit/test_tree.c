/* test_tree.c: discovery on fake proc roots (tests/data/proc/tree1 has
 * children files, tree2 the same processes without them) -- both methods
 * give the same set -- and on a live fork tree. */
#include <criterion/criterion.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include "base/procfs.h"
#include "contain/tree.h"
#include "test_proc_fixtures.h"

static int cmp_pid(const void *a, const void *b)
{
	return *(const pid_t *)a - *(const pid_t *)b;
}

static size_t members(struct tree *t, pid_t *out, size_t cap)
{
	cr_assert_eq(tree_update(t), 0);
	size_t n = tree_pids(t, out, cap);
	cr_assert_leq(n, cap);
	qsort(out, n, sizeof *out, cmp_pid);
	return n;
}

/* self = 100; its descendants: 101, 102 (below 101), 300 (below 102),
 * 50 (below 300: a lower pid than its parent), 103 (comm "a) b"), 104
 * (forked by thread 105).  200/201 and 1 are not ours. */
static const pid_t want[] = { 50, 101, 102, 103, 104, 300 };
static const uint64_t want_pages = 6000 + 1000 + 2000 + 3000 + 4000 + 5000;

static void check_tree(const char *tree_name, enum tree_method m)
{
	struct tree *t;
	cr_assert_eq(tree_open(&t, proc_fixture(tree_name), 100, m), 0);
	pid_t got[32];
	size_t n = members(t, got, 32);
	cr_assert_eq(n, sizeof want / sizeof want[0], "%s/%s: %zu members", tree_name,
		     tree_method_name(m), n);
	for (size_t i = 0; i < n; i++)
		cr_expect_eq(got[i], want[i]);
	uint64_t rss;
	unsigned np;
	cr_assert_eq(tree_sample(t, &rss, &np), 0);
	cr_expect_eq(np, n);
	cr_expect_eq(rss, want_pages * procfs_page_size());
	/* a second update keeps the verdicts */
	n = members(t, got, 32);
	cr_expect_eq(n, sizeof want / sizeof want[0]);
	tree_close(t);
}

Test(tree, probe)
{
	cr_expect_eq(tree_probe(proc_fixture("tree1"), 100), TREE_CHILDREN);
	cr_expect_eq(tree_probe(proc_fixture("tree2"), 100), TREE_SCAN);
	struct tree *t;
	cr_expect_eq(tree_open(&t, proc_fixture("tree2"), 100, TREE_CHILDREN), -ENOTSUP);
	cr_assert_eq(tree_open(&t, proc_fixture("tree2"), 100, TREE_AUTO), 0);
	cr_expect_eq(tree_method_used(t), TREE_SCAN);
	tree_close(t);
	cr_assert_eq(tree_open(&t, proc_fixture("tree1"), 100, TREE_AUTO), 0);
	cr_expect_eq(tree_method_used(t), TREE_SCAN); /* auto is the scan */
	tree_close(t);
}

Test(tree, fixture_children_files)
{
	check_tree("tree1", TREE_CHILDREN);
}

Test(tree, fixture_scan)
{
	check_tree("tree1", TREE_SCAN);
}

Test(tree, fixture_scan_without_children_files)
{
	check_tree("tree2", TREE_SCAN);
}

Test(tree, fixture_other_root)
{
	/* from 200's point of view only 201 is a descendant */
	struct tree *t;
	cr_assert_eq(tree_open(&t, proc_fixture("tree2"), 200, TREE_SCAN), 0);
	pid_t got[8];
	size_t n = members(t, got, 8);
	cr_expect_eq(n, 1);
	cr_expect_eq(got[0], 201);
	tree_close(t);
}

/* Live: the test process forks A and B; A forks C; C forks D and exits
 * (D is orphaned: it re-parents to us, the subreaper).  The tree must be
 * {A, B, C?, D}; killing them empties it. */
static pid_t fork_sleeper(void)
{
	pid_t p = fork();
	cr_assert_geq(p, 0);
	if (p == 0) {
		for (;;)
			pause();
	}
	return p;
}

static int contains(const pid_t *v, size_t n, pid_t x)
{
	for (size_t i = 0; i < n; i++)
		if (v[i] == x)
			return 1;
	return 0;
}

static void live_tree(enum tree_method m)
{
	if (prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) < 0)
		cr_skip_test("no PR_SET_CHILD_SUBREAPER");
	if (m == TREE_CHILDREN && tree_probe(NULL, getpid()) != TREE_CHILDREN)
		cr_skip_test("no children files on this kernel");
	int pfd[2], reaped[2];
	cr_assert_eq(pipe(pfd), 0);
	cr_assert_eq(pipe(reaped), 0);
	pid_t a = fork();
	cr_assert_geq(a, 0);
	if (a == 0) {
		/* A: fork C, which forks D, writes D's pid and exits; A says
		 * when it has reaped C (D is re-parented by then) */
		pid_t c = fork();
		if (c == 0) {
			pid_t d = fork();
			if (d == 0) {
				for (;;)
					pause();
			}
			if (write(pfd[1], &d, sizeof d) != sizeof d)
				_exit(1);
			_exit(0);
		}
		waitpid(c, NULL, 0);
		if (write(reaped[1], "r", 1) != 1)
			_exit(1);
		for (;;)
			pause();
	}
	pid_t b = fork_sleeper();
	pid_t d;
	char r;
	cr_assert_eq(read(pfd[0], &d, sizeof d), (ssize_t)sizeof d);
	/* a sleep would do on a quiet machine, not on a loaded one */
	cr_assert_eq(read(reaped[0], &r, 1), 1);

	struct tree *t;
	cr_assert_eq(tree_open(&t, NULL, getpid(), m), 0);
	pid_t got[64];
	cr_assert_eq(tree_update(t), 0);
	size_t n = tree_pids(t, got, 64);
	cr_expect_eq(n, 3, "members: %zu", n);
	cr_expect(contains(got, n, a));
	cr_expect(contains(got, n, b));
	cr_expect(contains(got, n, d), "the orphan %d is not in the tree", (int)d);
	cr_expect(!contains(got, n, getpid()));
	uint64_t rss;
	unsigned np;
	cr_assert_eq(tree_sample(t, &rss, &np), 0);
	cr_expect_eq(np, 3);
	cr_expect_gt(rss, 0);

	kill(a, SIGKILL);
	kill(b, SIGKILL);
	kill(d, SIGKILL);
	while (waitpid(-1, NULL, 0) > 0)
		;
	cr_assert_eq(tree_update(t), 0);
	cr_expect_eq(tree_pids(t, got, 64), 0);
	cr_assert_eq(tree_sample(t, &rss, &np), 0);
	cr_expect_eq(np, 0);
	cr_expect_eq(rss, 0);
	tree_close(t);
}

Test(tree, live_scan, .timeout = 10)
{
	live_tree(TREE_SCAN);
}

Test(tree, live_children, .timeout = 10)
{
	live_tree(TREE_CHILDREN);
}

/* Processes created after the first sample are found by tree_sample()
 * (which looks only at newly allocated pids when few were allocated),
 * including a grandchild whose parent exits at once, and dropped when they
 * die. */
Test(tree, live_sample_finds_new_processes, .timeout = 10)
{
	if (prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) < 0)
		cr_skip_test("no PR_SET_CHILD_SUBREAPER");
	struct tree *t;
	uint64_t rss;
	unsigned np;
	cr_assert_eq(tree_open(&t, NULL, getpid(), TREE_SCAN), 0);
	cr_assert_eq(tree_sample(t, &rss, &np), 0);
	cr_expect_eq(np, 0);
	int pfd[2];
	cr_assert_eq(pipe(pfd), 0);
	pid_t a = fork_sleeper();
	pid_t mid = fork();
	cr_assert_geq(mid, 0);
	if (mid == 0) {
		pid_t g = fork();
		if (g == 0) {
			for (;;)
				pause();
		}
		if (write(pfd[1], &g, sizeof g) != sizeof g)
			_exit(1);
		_exit(0);
	}
	pid_t g;
	cr_assert_eq(read(pfd[0], &g, sizeof g), (ssize_t)sizeof g);
	waitpid(mid, NULL, 0);
	cr_assert_eq(tree_sample(t, &rss, &np), 0);
	pid_t got[16];
	size_t n = tree_pids(t, got, 16);
	cr_expect_eq(np, 2, "read %u members", np);
	cr_expect_eq(n, 2);
	cr_expect(contains(got, n, a));
	cr_expect(contains(got, n, g), "orphaned grandchild %d missed", (int)g);
	kill(a, SIGKILL);
	waitpid(a, NULL, 0);
	cr_assert_eq(tree_sample(t, &rss, &np), 0);
	cr_expect_eq(np, 1);
	cr_expect_eq(tree_pids(t, got, 16), 1);
	kill(g, SIGKILL);
	waitpid(g, NULL, 0);
	cr_assert_eq(tree_sample(t, &rss, &np), 0);
	cr_expect_eq(np, 0);
	tree_close(t);
}

/* ---- pid reuse and new-pid probing, on a fake root we edit -------------- */

static char fake[256];

static void put(const char *rel, const char *text)
{
	char path[512];
	snprintf(path, sizeof path, "%s/%s", fake, rel);
	FILE *f = fopen(path, "w");
	cr_assert_not_null(f, "%s", path);
	fputs(text, f);
	fclose(f);
}

/* A process with status, stat and statm, like the fixture's. */
static void fake_proc(int pid, int tgid, int ppid, int pages)
{
	char rel[64], text[512], dir[512];
	snprintf(dir, sizeof dir, "%s/%d", fake, pid);
	mkdir(dir, 0755);
	snprintf(rel, sizeof rel, "%d/status", pid);
	snprintf(text, sizeof text, "Name:\tp%d\nTgid:\t%d\nPPid:\t%d\n", pid, tgid, ppid);
	put(rel, text);
	snprintf(rel, sizeof rel, "%d/stat", pid);
	snprintf(text, sizeof text,
		 "%d (p%d) S %d 1 1 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 %d 0 0 0 0\n", pid, pid,
		 ppid, 5000 + pid);
	put(rel, text);
	snprintf(rel, sizeof rel, "%d/statm", pid);
	snprintf(text, sizeof text, "%d %d 0 0 0 0 0\n", pages * 2, pages);
	put(rel, text);
}

static void last_pid_is(int pid)
{
	char text[64];
	snprintf(text, sizeof text, "0.00 0.00 0.00 1/99 %d\n", pid);
	put("loadavg", text);
}

static unsigned sample_count(struct tree *t)
{
	uint64_t rss;
	unsigned np;
	cr_assert_eq(tree_sample(t, &rss, &np), 0);
	return np;
}

Test(tree, reused_pids_and_probing)
{
	char cmd[1024];
	snprintf(fake, sizeof fake, "/tmp/memsup-fakeproc-XXXXXX");
	cr_assert_not_null(mkdtemp(fake));
	snprintf(cmd, sizeof cmd, "cp -r '%s'/. '%s'/", proc_fixture("tree2"), fake);
	cr_assert_eq(system(cmd), 0);
	static const int fixture[][2] = { { 1, 0 },     { 100, 1 },   { 101, 100 }, { 102, 101 },
					  { 103, 100 }, { 104, 100 }, { 300, 102 }, { 50, 300 },
					  { 200, 1 },   { 201, 200 } };
	for (size_t i = 0; i < sizeof fixture / sizeof fixture[0]; i++)
		fake_proc(fixture[i][0], fixture[i][0], fixture[i][1], 10);
	last_pid_is(150);

	struct tree *t;
	cr_assert_eq(tree_open(&t, fake, 100, TREE_SCAN), 0);
	cr_expect_eq(sample_count(t), 6);
	cr_expect_eq(sample_count(t), 6); /* nothing allocated: no listing */

	/* 201 died and its number went to a child of our 103; 80 pids were
	 * allocated, so this is a full listing -- which must not keep 201's
	 * old "not ours" verdict. */
	fake_proc(201, 201, 103, 10);
	last_pid_is(230);
	cr_expect_eq(sample_count(t), 7, "a reused pid kept its old verdict");

	/* A few pids later (probing, no listing): 231 is a child of 201, 232
	 * a thread of 231 (not a process), 233 someone else's. */
	fake_proc(231, 231, 201, 10);
	fake_proc(232, 231, 201, 10);
	fake_proc(233, 233, 200, 10);
	last_pid_is(233);
	cr_expect_eq(sample_count(t), 8, "probing missed a new member or took a thread");

	/* (/proc lists no thread ids, the fake root would: the thread ends.) */
	snprintf(cmd, sizeof cmd, "rm -rf '%s/232'", fake);
	cr_assert_eq(system(cmd), 0);
	/* The counter wraps and 104 (ours) is reused by someone else's child. */
	fake_proc(104, 104, 200, 10);
	last_pid_is(104);
	unsigned n4 = sample_count(t);
	cr_expect_eq(n4, 7, "a reused member pid is still counted (%u)", n4);
	tree_close(t);
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", fake);
	cr_expect_eq(system(cmd), 0);
}
