/* bs_static.c: hold MB (default 20) for HOLD_MS (default 400), exit 0.
 * Linked statically (-all-static): the dynamic loader never runs, so no
 * LD_PRELOAD shim can load into it.  Usage: bs_static [MB [HOLD_MS]]. */
#include "workload.h"

int main(int argc, char **argv)
{
	long mb = wl_arg(argc, argv, 1, 20), ms = wl_arg(argc, argv, 2, 400);
	wl_hold((size_t)mb * WL_MB);
	wl_sleep_ms(ms);
	return 0;
}
