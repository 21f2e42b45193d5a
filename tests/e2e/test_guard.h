/* test_guard.h: for the tests that can make many processes or threads.
 *
 * Such a test must run inside a pids-limited cgroup, so that even a broken
 * memsup or shim cannot fill the machine's process table.
 * scripts/pids-guard.sh makes one around the whole of `make check`
 * (scripts/test.sh and scripts/extra-checks.sh run through it) and names it
 * in MEMTRACE_PIDS_GUARD; guard_require() skips the calling test, saying
 * why, unless this process really is inside that cgroup.
 */
#ifndef TEST_GUARD_H
#define TEST_GUARD_H

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static inline void guard_require(void)
{
	const char *g = getenv("MEMTRACE_PIDS_GUARD"), *name;
	char line[4096];
	int inside = 0;
	FILE *f;
	if (!g || !*g)
		cr_skip_test("not inside a pids-limited cgroup: run it through "
			     "scripts/pids-guard.sh (scripts/test.sh does)");
	name = strrchr(g, '/');
	name = name ? name + 1 : g;
	f = fopen("/proc/self/cgroup", "r");
	while (f && fgets(line, sizeof line, f))
		inside |= strstr(line, name) != NULL;
	if (f)
		fclose(f);
	if (!inside)
		cr_skip_test("MEMTRACE_PIDS_GUARD names %s, but this process is not in it", g);
}

#endif /* TEST_GUARD_H */
