/* merge_static.c: a statically linked program (no ELF interpreter, so
 * LD_PRELOAD never applies) that holds a known block: the merged view
 * must list it as sampled, untraced, untraced_why "static".
 *   merge_static MB HOLD_MS */
#include <stdlib.h>
#include <time.h>

int main(int argc, char **argv)
{
	size_t n = (size_t)(argc > 1 ? atol(argv[1]) : 20) * 1000000UL;
	long ms = argc > 2 ? atol(argv[2]) : 300;
	char *p = malloc(n);
	if (!p)
		return 2;
	for (size_t i = 0; i < n; i += 4096)
		p[i] = 1;
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };
	while (nanosleep(&ts, &ts) != 0)
		;
	return 0;
}
