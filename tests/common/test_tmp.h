/* test_tmp.h: the temporary directories (and files) of a test process,
 * removed when it exits -- Criterion runs each test in a process of its
 * own -- whether the test passed or an assertion ended it: thousands of
 * runs of the suite must not fill /tmp.  MT_KEEP_TMP=1 keeps them for a
 * look at a failure.  Header only. */
#ifndef TEST_TMP_H
#define TEST_TMP_H

#include <criterion/criterion.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>

#define TMP_MADE_MAX 256 /* a table-driven test makes dozens of runs */
static char tmp_made[TMP_MADE_MAX][256];
static int tmp_n_made;

static int tmp_remove_one(const char *path, const struct stat *st, int flag, struct FTW *f)
{
	(void)st, (void)flag, (void)f;
	remove(path);
	return 0;
}

static int tmp_open_up(const char *path, const struct stat *st, int flag, struct FTW *f)
{
	(void)f;
	if (flag == FTW_D || flag == FTW_DNR)
		chmod(path, (st->st_mode & 07777) | S_IRWXU);
	return 0;
}

static void tmp_remove_all(void)
{
	if (getenv("MT_KEEP_TMP"))
		return;
	for (int i = 0; i < tmp_n_made; i++) {
		/* a test may leave read-only or unsearchable directories: open
		 * them up first (pre-order: before each is read) */
		nftw(tmp_made[i], tmp_open_up, 16, FTW_PHYS);
		nftw(tmp_made[i], tmp_remove_one, 16, FTW_DEPTH | FTW_PHYS);
	}
}

/* Remove `path` (a directory or a file of the test's own) at exit too. */
static inline void tmp_adopt(const char *path)
{
	cr_assert_lt(tmp_n_made, TMP_MADE_MAX, "more temporary directories than tmp_adopt keeps");
	if (tmp_n_made == 0)
		atexit(tmp_remove_all);
	int n = snprintf(tmp_made[tmp_n_made], sizeof tmp_made[0], "%s", path);
	cr_assert(n >= 0 && (size_t)n < sizeof tmp_made[0],
		  "a temporary path too long for tmp_adopt to remove: %s", path);
	tmp_n_made++;
}

#endif
