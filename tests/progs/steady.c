/* steady.c: hold MB (decimal, default 60) for HOLD_MS (default 400), exit 0.
 * Usage: steady [MB [HOLD_MS]].  Expected peak tree RSS: MB rounded up to
 * 2 MiB plus ~1 MB of program. */
#include "workload.h"

int main(int argc, char **argv)
{
	long mb = wl_arg(argc, argv, 1, 60), ms = wl_arg(argc, argv, 2, 400);
	wl_hold((size_t)mb * WL_MB);
	printf("steady: holding %ld MB for %ld ms\n", mb, ms);
	fflush(stdout);
	wl_sleep_ms(ms);
	return 0;
}
