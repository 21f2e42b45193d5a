/* test_timeline_points.h: the samples of a run's timeline.jsonl (or any
 * file of its lines), read with memsup's own reader (evidence/timeline.h),
 * for the end-to-end tests that look at each sample.  Header only; one run
 * per test process, so the points live in one static table. */
#ifndef TEST_TIMELINE_POINTS_H
#define TEST_TIMELINE_POINTS_H

#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

#include "evidence/timeline.h"
#include "test_memsup_util.h"

struct tl {
	size_t n;
	struct timeline_point p[8192]; /* 80 s at 100 samples a second */
};

static struct tl tl;

static inline int tl_line(void *ctx, const char *line, size_t len, int whole)
{
	struct tl *t = ctx;
	if (t->n < sizeof t->p / sizeof t->p[0] &&
	    timeline_parse_sample(line, len, whole, &t->p[t->n]) == 0)
		t->n++;
	return 0;
}

/* The samples of DIR/name into tl; fails the test without one. */
static inline void tl_load(const struct sup_run *r, const char *name)
{
	int found = 0;
	int dfd = open(r->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	cr_assert_geq(dfd, 0, "%s: %s", r->dir, strerror(errno));
	tl.n = 0;
	cr_assert_eq(timeline_read_file(dfd, name, tl_line, &tl, &found), 0);
	close(dfd);
	cr_assert(found, "no %s in %s", name, r->dir);
	cr_assert_gt(tl.n, 0, "no sample in %s", name);
}

#endif /* TEST_TIMELINE_POINTS_H */
