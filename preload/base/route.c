/* route.c: the dispatch mode and its registered router (see route.h).
 * Async-signal-safe; never allocates, locks or makes a system call. */
#include <stddef.h>

#include "base/route.h"

unsigned route_mode;
static route_fn *route_router;
static int route_sizes, route_mt;

static void route_changed(void)
{
	route_fn *fn = __atomic_load_n(&route_router, __ATOMIC_RELAXED);
	if (fn)
		fn(__atomic_load_n(&route_mode, __ATOMIC_RELAXED));
}

void route_register(route_fn *fn)
{
	__atomic_store_n(&route_router, fn, __ATOMIC_RELAXED);
	route_changed();
}

unsigned route_clear(unsigned bits)
{
	unsigned old = __atomic_fetch_and(&route_mode, ~bits, __ATOMIC_RELAXED);
	route_changed();
	return old & bits;
}

void route_set(unsigned bits)
{
	__atomic_fetch_or(&route_mode, bits, __ATOMIC_RELAXED);
	route_changed();
}

/* The fast bit the sizes and the thread mode allow, the other one off. */
static void route_fast_bits(void)
{
	unsigned mode = route_mt ? ROUTE_MT : ROUTE_ST;
	__atomic_fetch_and(&route_mode, ~(ROUTE_ST | ROUTE_MT), __ATOMIC_RELAXED);
	if (route_sizes)
		__atomic_fetch_or(&route_mode, mode, __ATOMIC_RELAXED);
	route_changed();
}

void route_glibc_sizes(int yes)
{
	route_sizes = yes;
	route_fast_bits();
}

void route_threads(int mt)
{
	route_mt = mt;
	route_fast_bits();
}
