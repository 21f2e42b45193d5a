/* test_pythons.h: the CPython interpreters the Python-frame tests run,
 * one per minor version the shim has a layout for (preload/sampling/python.c).
 *
 * 3.11 is Debian's, /usr/bin/python3.11 (bookworm's only python3).  3.12
 * and 3.13 are found by, in turn: $MT_PYTHON312 / $MT_PYTHON313 (the path
 * of an interpreter), then pyenv's builds, $PYENV_ROOT/versions/3.1N.* and
 * $HOME/.pyenv/versions/3.1N.*, then /root/.pyenv/versions/3.1N.* (the
 * highest release found, bin/python3.1N).  A test without one skips,
 * saying which and where it looked (py_interp_or_skip).  py_include()
 * gives an interpreter's header directory beside it,
 * PREFIX/include/python3.1N, for the layout checks.
 */
#ifndef TEST_PYTHONS_H
#define TEST_PYTHONS_H

#include <criterion/criterion.h>
#include <glob.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The interpreter of 3.minor into buf (cap bytes); 0 when found. */
static inline int py_interp(unsigned minor, char *buf, size_t cap)
{
	char var[32], pat[PATH_MAX];
	const char *roots[3] = { getenv("PYENV_ROOT"), getenv("HOME"), "/root" };
	const char *sub[3] = { "", "/.pyenv", "/.pyenv" };
	if (minor == 11) {
		snprintf(buf, cap, "/usr/bin/python3.11");
		return access(buf, X_OK) == 0 ? 0 : -1;
	}
	snprintf(var, sizeof var, "MT_PYTHON3%u", minor);
	const char *env = getenv(var);
	if (env && *env) {
		snprintf(buf, cap, "%s", env);
		return access(buf, X_OK) == 0 ? 0 : -1;
	}
	for (unsigned i = 0; i < 3; i++) {
		glob_t g;
		if (!roots[i] || !*roots[i])
			continue;
		snprintf(pat, sizeof pat, "%s%s/versions/3.%u.*/bin/python3.%u", roots[i], sub[i],
			 minor, minor);
		if (glob(pat, 0, NULL, &g) == 0 && g.gl_pathc > 0) {
			/* sorted: the last is the highest release of one digit
			 * count, good enough to pick one */
			for (size_t k = g.gl_pathc; k-- > 0;)
				if (access(g.gl_pathv[k], X_OK) == 0) {
					snprintf(buf, cap, "%s", g.gl_pathv[k]);
					globfree(&g);
					return 0;
				}
		}
		globfree(&g);
	}
	return -1;
}

static inline const char *py_interp_or_skip(unsigned minor)
{
	static char path[4][PATH_MAX];
	static unsigned slot;
	char *p = path[slot++ % 4];
	if (py_interp(minor, p, PATH_MAX) != 0) {
		if (minor == 11)
			cr_skip_test("no CPython 3.11: /usr/bin/python3.11 is not installed");
		cr_skip_test("no CPython 3.%u: set MT_PYTHON3%u to one, or install one under "
			     "~/.pyenv/versions/3.%u.*",
			     minor, minor, minor);
	}
	return p;
}

/* PREFIX/include/python3.minor of the interpreter PREFIX/bin/python3.minor
 * (3.11: Debian's /usr/include/python3.11) into buf. */
static inline void py_include(unsigned minor, const char *interp, char *buf, size_t cap)
{
	char prefix[PATH_MAX - 32];
	size_t len = strnlen(interp, sizeof prefix - 1);
	memcpy(prefix, interp, len);
	prefix[len] = '\0';
	for (unsigned up = 0; up < 2; up++) {
		char *slash = strrchr(prefix, '/');
		if (slash)
			*slash = '\0';
	}
	if (snprintf(buf, cap, "%s/include/python3.%u", prefix, minor) >= (int)cap)
		buf[0] = '\0';
}

#endif /* TEST_PYTHONS_H */
