/* bs_clean.c: nothing to explain.  One process mallocs MB (default 20),
 * writes every page, holds it HOLD_MS (default 400), frees it, exits 0:
 * polls see its peak, the heap explains its RSS, nothing is shared, and
 * getrusage tells the truth.  Usage: bs_clean [MB [HOLD_MS]]. */
#include "workload.h"

int main(int argc, char **argv)
{
	long mb = wl_arg(argc, argv, 1, 20), ms = wl_arg(argc, argv, 2, 400);
	size_t len = (size_t)mb * WL_MB;
	char *p = malloc(len);
	if (!p)
		wl_die("malloc");
	/* volatile: a compiler may drop stores to memory that is only freed */
	volatile char *v = p;
	for (size_t i = 0; i < len; i += 4096)
		v[i] = 1;
	wl_sleep_ms(ms);
	free(p);
	return 0;
}
