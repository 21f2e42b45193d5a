/* spike.c: hold MB (default 40) for HOLD_MS (default 200), release it, then
 * end: by raising SIGNAL when given (a command killed by a signal), else
 * exit EXIT (default 0).  Usage: spike [MB [HOLD_MS [SIGNAL [EXIT]]]]. */
#include "workload.h"
#include <signal.h>

int main(int argc, char **argv)
{
	long mb = wl_arg(argc, argv, 1, 40), ms = wl_arg(argc, argv, 2, 200);
	long sig = wl_arg(argc, argv, 3, 0), code = wl_arg(argc, argv, 4, 0);
	char *p = wl_hold((size_t)mb * WL_MB);
	wl_sleep_ms(ms);
	munmap(p, (size_t)mb * WL_MB);
	if (sig > 0) {
		signal((int)sig, SIG_DFL);
		raise((int)sig);
	}
	return (int)code;
}
