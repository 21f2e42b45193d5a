/* spike.c: after DELAY_MS (default 0) of sleep, hold MB (default 40) for
 * HOLD_MS (default 200), release it, then end: by raising SIGNAL when given
 * (a command killed by a signal), else exit EXIT (default 0).
 * Usage: spike [MB [HOLD_MS [SIGNAL [EXIT [DELAY_MS]]]]]. */
#include "workload.h"
#include <signal.h>

int main(int argc, char **argv)
{
	long mb = wl_arg(argc, argv, 1, 40), ms = wl_arg(argc, argv, 2, 200);
	long sig = wl_arg(argc, argv, 3, 0), code = wl_arg(argc, argv, 4, 0);
	long delay = wl_arg(argc, argv, 5, 0);
	if (delay > 0)
		wl_sleep_ms(delay);
	char *p = wl_hold((size_t)mb * WL_MB);
	wl_sleep_ms(ms);
	munmap(p, (size_t)mb * WL_MB);
	if (sig > 0) {
		signal((int)sig, SIG_DFL);
		raise((int)sig);
	}
	return (int)code;
}
