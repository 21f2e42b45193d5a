/* test_repeat.h: how many times a test that repeats a run repeats it.
 *
 * A repeated test asks each run the same question: one wrong answer fails
 * it.  The README's test command (scripts/test.sh) runs enough of them to
 * catch an answer that is wrong every time or most times, and stays a wait
 * a newcomer sits through; CI's extra check `thorough`
 * (scripts/extra-checks.sh) sets MT_THOROUGH=1 and runs the same tests as
 * many times as a failure that comes one run in several needs to show
 * (HACKING.md, "Tests").  The counts a test used are in its log.
 * Header only. */
#ifndef TEST_REPEAT_H
#define TEST_REPEAT_H

#include <stdlib.h>
#include <string.h>

/* MT_THOROUGH set, and neither empty nor "0". */
static inline int test_thorough(void)
{
	const char *v = getenv("MT_THOROUGH");
	return v && *v && strcmp(v, "0") != 0;
}

/* `quick` runs in the README's test command, `thorough` in CI's check. */
static inline int test_runs(int quick, int thorough)
{
	return test_thorough() ? thorough : quick;
}

#endif
