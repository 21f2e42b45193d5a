/* test_proc_fixtures.h: the fake proc roots of tests/data/proc ($MT_DATA),
 * for the tests of the code that reads /proc (header only).  Skips the test
 * when MT_DATA is not set (run through make check). */
#ifndef TEST_PROC_FIXTURES_H
#define TEST_PROC_FIXTURES_H

#include <criterion/criterion.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>

/* MT_DATA/proc/<name>; two results may be in use at once. */
static inline const char *proc_fixture(const char *name)
{
	static char path[2][PATH_MAX];
	static int slot;
	const char *data = getenv("MT_DATA");
	if (!data)
		cr_skip_test("MT_DATA is not set (run through make check)");
	char *p = path[slot++ % 2];
	snprintf(p, PATH_MAX, "%s/proc/%s", data, name);
	return p;
}

#endif /* TEST_PROC_FIXTURES_H */
