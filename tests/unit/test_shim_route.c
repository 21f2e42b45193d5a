/* test_shim_route.c: the dispatch mode (base/route.h) without LD_PRELOAD:
 * the router a test registers, as hooks.c registers its own, is told the
 * mode at once and after every change, and the mode's fast bits follow
 * the block sizes and the thread mode as the hooks' paths need. */
#include <criterion/criterion.h>

#include "base/route.h"

static unsigned told[16];
static unsigned ntold;

static void recorder(unsigned mode)
{
	if (ntold < sizeof told / sizeof told[0])
		told[ntold] = mode;
	ntold++;
}

static unsigned last(void)
{
	cr_assert(ntold > 0, "the router was never called");
	return told[ntold - 1];
}

static void fresh(void)
{
	route_register(NULL);
	route_threads(0);
	route_glibc_sizes(0);
	route_clear(ROUTE_ST | ROUTE_MT | ROUTE_SITES);
	ntold = 0;
}

Test(route, registering_tells_the_mode_in_force)
{
	fresh();
	route_glibc_sizes(1); /* before any router: nobody is told */
	cr_expect_eq(ntold, 0);
	route_register(recorder);
	cr_expect_eq(ntold, 1);
	cr_expect_eq(last(), ROUTE_ST);
}

Test(route, every_change_is_told)
{
	fresh();
	route_register(recorder);
	route_set(ROUTE_SITES);
	cr_expect_eq(ntold, 2);
	cr_expect_eq(last(), ROUTE_SITES);
	cr_expect_eq(route_clear(ROUTE_SITES | ROUTE_ST), ROUTE_SITES);
	cr_expect_eq(ntold, 3);
	cr_expect_eq(last(), 0u);
	route_register(NULL);
	route_set(ROUTE_SITES);
	cr_expect_eq(ntold, 3, "an unregistered router is told nothing");
}

/* The shortest single-threaded path needs glibc's block sizes; threads
 * move it to the shard path, a fork child back; the sites bit is left
 * alone by both. */
Test(route, fast_bits_follow_sizes_and_threads)
{
	fresh();
	route_register(recorder);
	route_set(ROUTE_SITES);
	route_glibc_sizes(1);
	cr_expect_eq(last(), ROUTE_ST | ROUTE_SITES);
	route_threads(1);
	cr_expect_eq(last(), ROUTE_MT | ROUTE_SITES);
	route_glibc_sizes(0);
	cr_expect_eq(last(), ROUTE_SITES);
	route_threads(0);
	cr_expect_eq(last(), ROUTE_SITES);
	route_glibc_sizes(1);
	cr_expect_eq(last(), ROUTE_ST | ROUTE_SITES);
	cr_expect_eq(route_mode, ROUTE_ST | ROUTE_SITES);
}

/* boot.c's arena: the fast bits off while it serves, back after; the
 * sites bit is sites.c's and stays. */
Test(route, clear_returns_what_was_set)
{
	unsigned saved;
	fresh();
	route_register(recorder);
	route_glibc_sizes(1);
	route_set(ROUTE_SITES);
	saved = route_clear(ROUTE_ST | ROUTE_MT);
	cr_expect_eq(saved, ROUTE_ST);
	cr_expect_eq(last(), ROUTE_SITES);
	route_set(saved);
	cr_expect_eq(last(), ROUTE_ST | ROUTE_SITES);
}
