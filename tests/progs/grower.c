/* grower.c: grow by STEP MB (default 8) every STEP_MS (default 20) up to MAX
 * MB (default 2000), then sleep forever.  Usage: grower [STEP [STEP_MS [MAX]]].
 * Meant to break memsup's --rss-mb and be killed. */
#include "workload.h"

int main(int argc, char **argv)
{
	long step = wl_arg(argc, argv, 1, 8), ms = wl_arg(argc, argv, 2, 20);
	long max = wl_arg(argc, argv, 3, 2000);
	for (long held = 0; held + step <= max; held += step) {
		wl_hold((size_t)step * WL_MB);
		wl_sleep_ms(ms);
	}
	for (;;)
		pause();
}
