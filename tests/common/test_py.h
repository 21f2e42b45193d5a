/* test_py.h: where the Python checks of tests/py/ are.
 *
 * A test that has python3 judge what memsup wrote (a real JSON or XML
 * parser, not ours) runs a file of tests/py/ rather than a program in a C
 * string: py_script("name.py") is its path below $MT_SRCDIR, which
 * AM_TESTS_ENVIRONMENT sets (the test skips, saying so, without it).  The
 * path is a static buffer, one of four in turn: use it before the fifth
 * call.  py_output() runs such a check's command line and keeps what it
 * printed, for the test's message.
 */
#ifndef TEST_PY_H
#define TEST_PY_H

#include <criterion/criterion.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>

static inline const char *py_script(const char *name)
{
	static char path[4][PATH_MAX];
	static unsigned slot;
	const char *src = getenv("MT_SRCDIR");
	if (!src || !*src)
		cr_skip_test("MT_SRCDIR is not set (run through make check)");
	char *p = path[slot++ % 4];
	snprintf(p, PATH_MAX, "%s/tests/py/%s", src, name);
	return p;
}

/* Run `cmd` (its stderr sent to stdout by the caller, "2>&1"), keep what
 * it printed in out (cap bytes, NUL-terminated, the rest dropped); its
 * status as pclose(3) gives it. */
static inline int py_output(const char *cmd, char *out, size_t cap)
{
	FILE *f = popen(cmd, "r");
	cr_assert_not_null(f, "cannot run %s", cmd);
	size_t got = fread(out, 1, cap - 1, f);
	out[got] = '\0';
	return pclose(f);
}

#endif /* TEST_PY_H */
