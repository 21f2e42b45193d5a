/* untouched.c: a large heap block of which only a little is ever written.
 *
 * Usage: untouched [ALLOC_MB [TOUCH_MB [HOLD_MS]]] (defaults 1000, 16, 300).
 * malloc(3)s ALLOC_MB decimal MB in one block (glibc maps it: the kernel
 * gives a page only when it is first written), writes the first TOUCH_MB,
 * holds it HOLD_MS, frees it.  The shim's heap peak is the whole block;
 * what the process ever had resident (VmHWM) is TOUCH_MB plus its program:
 * at least ALLOC_MB - TOUCH_MB - a few MB were requested and never touched
 * (xz -9 and sort do this at scale).
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define MB 1000000UL

int main(int argc, char **argv)
{
	size_t alloc = (argc > 1 ? strtoul(argv[1], NULL, 10) : 1000) * MB;
	size_t touch = (argc > 2 ? strtoul(argv[2], NULL, 10) : 16) * MB;
	long hold_ms = argc > 3 ? strtol(argv[3], NULL, 10) : 300;
	if (touch > alloc)
		touch = alloc;
	char *p = malloc(alloc);
	if (!p) {
		perror("untouched: malloc");
		return 1;
	}
	/* through a volatile pointer: a memset of a block freed unread is a
	 * dead store the compiler may drop */
	volatile char *v = p;
	for (size_t off = 0; off < touch; off++)
		v[off] = 0x5a;
	printf("untouched: %zu bytes requested, %zu written\n", alloc, touch);
	fflush(stdout);
	struct timespec ts = { hold_ms / 1000, (hold_ms % 1000) * 1000000L };
	while (nanosleep(&ts, &ts) != 0)
		;
	free(p);
	return 0;
}
