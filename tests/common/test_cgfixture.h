/* test_cgfixture.h: a private copy of one of the fake cgroup file systems
 * of tests/data/cgroup (pure v2, v2 without memory, v1, hybrid, none),
 * for the tests that open the cgroup backends on it: the backends write
 * their limits into it, so each test takes its own copy and removes it.
 * Header only. */
#ifndef TEST_CGFIXTURE_H
#define TEST_CGFIXTURE_H

#include <criterion/criterion.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>

#include "contain/contain.h"

struct fixture {
	char dir[PATH_MAX];
	char proc[PATH_MAX + 8];  /* its fake /proc */
	char sys[PATH_MAX + 8];   /* its fake /sys/fs/cgroup */
};

/* A private copy of tests/data/cgroup/NAME ($MT_DATA; skipped without). */
static inline void fixture_copy(struct fixture *fx, const char *name)
{
	const char *data = getenv("MT_DATA");
	if (!data)
		cr_skip_test("MT_DATA is not set (run through make check)");
	snprintf(fx->dir, sizeof fx->dir, "/tmp/memsup-cgfx-XXXXXX");
	cr_assert_not_null(mkdtemp(fx->dir));
	char cmd[3 * PATH_MAX];
	snprintf(cmd, sizeof cmd, "cp -a '%s/cgroup/%s/.' '%s'", data, name, fx->dir);
	cr_assert_eq(system(cmd), 0, "%s", cmd);
	snprintf(fx->proc, sizeof fx->proc, "%s/proc", fx->dir);
	snprintf(fx->sys, sizeof fx->sys, "%s/sys", fx->dir);
}

static inline void fixture_remove(struct fixture *fx)
{
	char cmd[PATH_MAX + 32];
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", fx->dir);
	cr_expect_eq(system(cmd), 0);
}

/* The containment of memsup pid 100 over the copy, its run's cgroup made
 * already (a plain directory has no kernel to make a new cgroup's files). */
static inline struct contain_config fixture_config(const struct fixture *fx)
{
	struct contain_config cc = {
		.proc_root = fx->proc, .self = 100, .discovery = TREE_AUTO,
		.cgroup = CONTAIN_AUTO, .cgroup_root = fx->sys, .premade = 1,
	};
	return cc;
}

#endif /* TEST_CGFIXTURE_H */
