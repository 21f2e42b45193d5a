/* test_belief.c: the belief rule (collect/belief.h) -- its pure tests of
 * pids and times, and live_believe() applying it to hand-made record files
 * with a fixture pid_max: sightings that fit or not, lineage with a parent
 * alive or not, an exec predecessor, pids that cannot exist, and the one
 * look at a live pid (inside the tree by its ancestors, or outside). */
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

#include "analyze/merge.h"
#include "collect/belief.h"
#include "collect/live.h"
#include "contain/contain.h"
#include "test_tmp.h"

#define S UINT64_C(1000000000)

/* ---- the pure tests ---------------------------------------------------- */

Test(belief, pid_possible_below_pid_max_only)
{
	cr_expect(belief_pid_possible(1, 32768));
	cr_expect(belief_pid_possible(32767, 32768), "the largest pid is pid_max - 1");
	cr_expect(!belief_pid_possible(32768, 32768), "pid_max itself is never handed out");
	cr_expect(!belief_pid_possible(3000000, 32768));
	cr_expect(!belief_pid_possible(0, 32768));
	cr_expect(!belief_pid_possible(-5, 32768));
	cr_expect(belief_pid_possible(3000000, 0), "pid_max unknown: only the sign");
	cr_expect(!belief_pid_possible(0, 0));
}

Test(belief, seen_fits_an_overlapping_life)
{
	struct belief_span ran = { 10 * S, 12 * S }, runs = { 10 * S, 0 };
	cr_expect(belief_seen_fits(&ran, 11 * S, 20 * S), "seen while it ran");
	cr_expect(belief_seen_fits(&runs, 30 * S, 40 * S), "still running when seen");
	cr_expect(belief_seen_fits(&ran, 13 * S, 20 * S), "ended within the slack before");
	cr_expect(!belief_seen_fits(&ran, 15 * S, 20 * S), "ended long before the pid was seen");
	struct belief_span late = { 30 * S, 0 };
	cr_expect(!belief_seen_fits(&late, 5 * S, 20 * S), "started long after the last sighting");
	struct belief_span just = { 21 * S, 0 };
	cr_expect(belief_seen_fits(&just, 5 * S, 20 * S), "forked during the listing");
}

Test(belief, parent_fits_when_alive_at_the_start)
{
	struct belief_span parent = { 10 * S, 20 * S }, running = { 10 * S, 0 };
	struct belief_span child = { 15 * S, 0 };
	cr_expect(belief_parent_fits(&parent, &child));
	cr_expect(belief_parent_fits(&running, &child));
	child.start_ns = 21 * S;
	cr_expect(belief_parent_fits(&parent, &child), "a fork handler a second late");
	child.start_ns = 25 * S;
	cr_expect(!belief_parent_fits(&parent, &child), "the parent was gone for 5 s");
	child.start_ns = 9 * S;
	cr_expect(!belief_parent_fits(&parent, &child), "a child older than its parent");
	struct belief_span none = { 0, 0 };
	child.start_ns = 15 * S;
	cr_expect(!belief_parent_fits(&none, &child), "a parent with no start");
}

static char dir[PATH_MAX];

static void mkdir_tmp(void)
{
	snprintf(dir, sizeof dir, "/tmp/test-belief-XXXXXX");
	cr_assert_not_null(mkdtemp(dir));
	tmp_adopt(dir); /* removed at exit, even when an assertion ends the test */
}

static void rm_tmp(void)
{
	char cmd[PATH_MAX + 16];
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
	cr_expect_eq(system(cmd), 0);
}

Test(belief, pid_max_read_from_a_file)
{
	char path[PATH_MAX + 16];
	mkdir_tmp();
	snprintf(path, sizeof path, "%s/pid_max", dir);
	FILE *f = fopen(path, "w");
	cr_assert_not_null(f);
	fputs("32768\n", f);
	fclose(f);
	cr_expect_eq(belief_read_pid_max(path), 32768);
	f = fopen(path, "w");
	fputs("many\n", f);
	fclose(f);
	cr_expect_eq(belief_read_pid_max(path), -EINVAL);
	snprintf(path, sizeof path, "%s/none", dir);
	cr_expect_lt(belief_read_pid_max(path), 0);
	rm_tmp();
}

/* ---- live_believe() on record files ------------------------------------ */

struct rec_file {
	struct mt_record r;
	char pad[MT_RECORD_SIZE - sizeof(struct mt_record)];
};

/* pid.gen.mtr: relation `rel` from parent.pgen, alive from start to end
 * (0: running) */
static void put(int32_t pid, uint32_t gen, uint32_t rel, int32_t parent, uint32_t pgen,
		uint64_t start, uint64_t end)
{
	static struct rec_file f;
	char path[PATH_MAX + 64];
	memset(&f, 0, sizeof f);
	f.r.magic = MT_RECORD_MAGIC;
	f.r.version = MT_RECORD_VERSION;
	f.r.record_size = MT_RECORD_SIZE;
	f.r.pid = pid;
	f.r.ppid = parent;
	f.r.gen = gen;
	f.r.relation = rel;
	f.r.parent_pid = parent;
	f.r.parent_gen = pgen;
	f.r.start_mono_ns = start;
	f.r.end_mono_ns = end;
	f.r.state = end ? MT_STATE_EXITED : MT_STATE_RUNNING;
	snprintf(path, sizeof path, "%s/%d.%u.mtr", dir, (int)pid, (unsigned)gen);
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	cr_assert_geq(fd, 0);
	cr_assert_eq(write(fd, &f, sizeof f), (ssize_t)sizeof f);
	close(fd);
}

static const struct live_rec *find(struct live *l, pid_t pid, uint32_t gen, size_t *idx)
{
	for (size_t i = 0; i < live_count(l); i++) {
		const struct live_rec *r = live_get(l, i);
		if (r->pid == pid && r->gen == gen) {
			if (idx)
				*idx = i;
			return r;
		}
	}
	cr_assert_fail("no record %d.%u", (int)pid, (unsigned)gen);
	return NULL;
}

static const char *why(struct live *l, pid_t pid, uint32_t gen)
{
	static char buf[256];
	size_t i;
	find(l, pid, gen, &i);
	cr_assert_geq(live_why(l, i, 0, buf, sizeof buf), 0, "%d.%u is believed", (int)pid,
		      (unsigned)gen);
	return buf;
}

/* A made-up tree with a fixture pid_max of 1000 and no look at /proc:
 * the command 300 (10 s on), its fork child 301 and grandchild 302, a
 * child that claims 300 but started before it, pids at or above pid_max,
 * a pid seen as a member at other times than its record's, and an exec
 * chain whose later image a sample saw. */
Test(belief, lineage_sightings_and_pid_max, .timeout = 10)
{
	mkdir_tmp();
	struct live *l;
	cr_assert_eq(live_open(&l, dir), 0);
	live_set_checks(l, NULL, 1000);
	put(300, 0, MT_REL_ROOT, 0, 0, 10 * S, 0);
	put(301, 0, MT_REL_FORK, 300, 0, 11 * S, 11 * S + 1000);
	put(302, 0, MT_REL_SPAWN, 301, 0, 11 * S + 500, 12 * S);
	put(303, 0, MT_REL_FORK, 300, 0, 5 * S, 6 * S);         /* older than 300 */
	put(304, 0, MT_REL_FORK, 303, 0, 5 * S + 10, 6 * S);    /* 303's child */
	put(1000, 0, MT_REL_FORK, 300, 0, 11 * S, 12 * S);      /* pid_max itself */
	put(999999, 0, MT_REL_FORK, 300, 0, 11 * S, 12 * S);
	put(305, 0, MT_REL_FORK, 777, 0, 50 * S, 51 * S);       /* seen at 20 s only */
	put(306, 0, MT_REL_FORK, 777, 0, 30 * S, 31 * S);       /* 777.0 does not exist */
	put(306, 1, MT_REL_EXEC, 306, 0, 31 * S, 0);            /* seen at 40 s */
	put(307, 0, MT_REL_FORK, 301, 0, 20 * S, 0);            /* 301 long gone */
	cr_assert_eq(live_update(l, 1), 0);
	struct tree_member m[2] = { { .pid = 305 }, { .pid = 306 } };
	live_believe(l, m, 1, 300, 20 * S, 20 * S + 1000);
	live_believe(l, m + 1, 1, 300, 40 * S, 40 * S + 1000);
	live_believe(l, NULL, 0, 300, 0, 0);

	cr_expect(find(l, 300, 0, NULL)->believed, "the command");
	cr_expect(find(l, 301, 0, NULL)->believed, "its fork child, never seen");
	cr_expect(find(l, 302, 0, NULL)->believed, "a grandchild through it");
	cr_expect(find(l, 306, 1, NULL)->believed, "seen while it ran");
	cr_expect(find(l, 306, 0, NULL)->believed, "exec'd into a believed image");

	cr_expect(!find(l, 303, 0, NULL)->believed);
	cr_expect_not_null(strstr(why(l, 303, 0), "not alive when it started"), "%s",
			   why(l, 303, 0));
	cr_expect(!find(l, 304, 0, NULL)->believed);
	cr_expect_not_null(strstr(why(l, 304, 0), "not believed either"), "%s", why(l, 304, 0));
	cr_expect(!find(l, 1000, 0, NULL)->believed);
	cr_expect_not_null(strstr(why(l, 1000, 0), "pid_max is 1000"), "%s", why(l, 1000, 0));
	cr_expect(!find(l, 999999, 0, NULL)->believed);
	cr_expect_eq(find(l, 999999, 0, NULL)->doubt, BELIEF_PID_MAX);
	cr_expect(!live_pid_possible(l, 999999));
	cr_expect(!find(l, 305, 0, NULL)->believed);
	cr_expect_not_null(strstr(why(l, 305, 0), "in the tree from 20.000"), "%s",
			   why(l, 305, 0));
	cr_expect(!find(l, 307, 0, NULL)->believed, "a child of an image long gone");
	live_close(l);
	rm_tmp();
}

/* The one look at a live pid: a record for a process outside the tree
 * (this test's parent: its ancestors lead to init) is not believed, even
 * as a fork child of the command; one for a grandchild of this process
 * (memsup here) under the command is believed with no lineage at all. */
Test(belief, live_pid_inside_or_outside, .timeout = 10)
{
	mkdir_tmp();
	int ready[2];
	cr_assert_eq(pipe(ready), 0);
	pid_t command = fork();
	cr_assert_geq(command, 0);
	if (command == 0) {
		/* each dies with its parent: an assertion that ends the test
		 * leaves neither behind */
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		pid_t g = fork();
		if (g == 0) {
			prctl(PR_SET_PDEATHSIG, SIGKILL);
			pause();
			_exit(0);
		}
		if (write(ready[1], &g, sizeof g) != (ssize_t)sizeof g)
			_exit(1);
		pause();
		_exit(0);
	}
	pid_t grandchild;
	cr_assert_eq(read(ready[0], &grandchild, sizeof grandchild), (ssize_t)sizeof grandchild);
	struct live *l;
	cr_assert_eq(live_open(&l, dir), 0);
	put(command, 0, MT_REL_ROOT, 0, 0, 1 * S, 0);
	put(getppid(), 0, MT_REL_FORK, command, 0, 2 * S, 0);
	put(grandchild, 0, MT_REL_ROOT, 0, 0, 3 * S, 0);
	cr_assert_eq(live_update(l, 1), 0);
	live_believe(l, NULL, 0, command, 0, 0);
	cr_expect(find(l, command, 0, NULL)->believed);
	cr_expect(!find(l, getppid(), 0, NULL)->believed, "a live pid outside the tree");
	cr_expect_eq(find(l, getppid(), 0, NULL)->doubt, BELIEF_OUTSIDE);
	cr_expect_not_null(strstr(why(l, getppid(), 0), "outside the tree"), "%s",
			   why(l, getppid(), 0));
	cr_expect(find(l, grandchild, 0, NULL)->believed, "a descendant of the command");
	live_close(l);
	kill(grandchild, SIGKILL);
	kill(command, SIGKILL);
	waitpid(command, NULL, 0);
	rm_tmp();
}

/* The merged view keeps no image of a record not believed, and none of a
 * pid at or above pid_max even when its file is not a valid record (a
 * corrupt file of pid 5000 is not "process 5000, corrupt record"): each
 * is an aside with live_why()'s sentence. */
Test(belief, merge_sets_aside_what_is_not_believed, .timeout = 10)
{
	mkdir_tmp();
	struct live *l;
	cr_assert_eq(live_open(&l, dir), 0);
	live_set_checks(l, NULL, 1000);
	put(300, 0, MT_REL_ROOT, 0, 0, 10 * S, 0);
	put(301, 0, MT_REL_FORK, 300, 0, 11 * S, 12 * S);
	put(302, 0, MT_REL_FORK, 300, 0, 5 * S, 6 * S);         /* before its parent */
	put(999999, 0, MT_REL_FORK, 300, 0, 11 * S, 12 * S);
	char path[PATH_MAX + 32];
	snprintf(path, sizeof path, "%s/5000.0.mtr", dir);
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	cr_assert_geq(fd, 0);
	cr_assert_eq(ftruncate(fd, 100), 0, "a short file: never a record");
	close(fd);
	cr_assert_eq(live_update(l, 1), 0);
	live_believe(l, NULL, 0, 300, 0, 0);
	struct sup_record rec;
	runrecord_init(&rec);
	struct merge_input in = {
		.rec = &rec, .tracing = 1, .command_pid = 300, .start_mono_ns = 9 * S,
		.live = l, .end_mono_ns = 20 * S,
	};
	struct merged_run m;
	cr_assert_eq(merge_build(&m, &in), 0);
	cr_expect_eq(m.n_images, 2, "300 and 301 only, got %zu", m.n_images);
	for (size_t i = 0; i < m.n_images; i++)
		cr_expect(m.images[i].pid == 300 || m.images[i].pid == 301, "image of %d",
			  (int)m.images[i].pid);
	cr_expect_eq(m.n_aside, 3);
	for (size_t i = 0; i < m.n_aside; i++) {
		const struct merge_aside *a = &m.aside[i];
		cr_expect(!a->in_tree, "%d", (int)a->pid);
		if (a->pid == 302)
			cr_expect_not_null(strstr(a->why, "not alive when it started"), "%s", a->why);
		else if (a->pid == 5000 || a->pid == 999999)
			cr_expect_not_null(strstr(a->why, "pid_max is 1000"), "%s", a->why);
		else
			cr_expect_fail("aside %d", (int)a->pid);
	}
	merge_free(&m);
	runrecord_free(&rec);
	live_close(l);
	rm_tmp();
}

/* A record's VmHWM against the kernel's bound of any process of the tree
 * (the larger of the children's maxrss and the cgroup's peak): far above
 * it -- more than twice it and 64 MiB -- cannot be true; at it, or a
 * little past it (file pages charged before the run, a child reaped
 * without its rusage), it can. */
Test(belief, hwm_far_above_the_kernels_bound)
{
	cr_expect(belief_hwm_fits(2048000, 0), "bound unknown: anything fits");
	cr_expect(belief_hwm_fits(2400, 2400));
	cr_expect(belief_hwm_fits(2 * 2400 + 65536, 2400), "twice the bound and 64 MiB");
	cr_expect_not(belief_hwm_fits(2 * 2400 + 65537, 2400));
	cr_expect_not(belief_hwm_fits(2048000, 2400), "2,000 MB against 2.4 MB");
	cr_expect(belief_hwm_fits(1500000, 1000000), "a genuine image half again the bound");
	cr_expect_not(belief_hwm_fits(UINT64_MAX, UINT64_C(1) << 40));
}
