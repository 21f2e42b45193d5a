/* map_three.c: a program whose memory is all anonymous mappings of its own,
 * from three named functions, and nothing of malloc's heap to speak of: the
 * tree's call sites must be taken at the moment the answer counts (heap
 * plus mappings), not at malloc's heap peak (test_memsup_answersites.c).
 *
 * Usage: map_three [MB [HOLD_MS]]          (defaults 300 and 400)
 *
 * With M = MB decimal megabytes, map_half maps M/2, map_third M/3 and
 * map_sixth M/6 (each in pieces of 1 MiB and a last shorter one, whole
 * pages), every page written, so the peak of RSS is the peak of mappings
 * too.  When all are held it prints one line
 *   pid=N half=B third=B sixth=B
 * with B the bytes each function holds mapped, holds for HOLD_MS
 * milliseconds, unmaps everything and exits 0 (2 on a bad argument or a
 * failed call).  The heap holds only stdio's buffer, whatever the C
 * library takes at start: the line goes out through write(2).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#define PIECE ((size_t)1 << 20)
#define PIECES_MAX 4096

struct piece {
	char *p;
	size_t len;
};

static struct piece held[PIECES_MAX];
static size_t nheld, page;

static void fail(const char *what)
{
	perror(what);
	exit(2);
}

/* Each site calls mmap itself and counts its calls in a variable of its
 * own: identical functions would be folded into one at -O2. */
#define THREE_SITE(name)                                                            \
	static volatile unsigned name##_calls;                                      \
	__attribute__((noinline)) static size_t name(size_t bytes)                  \
	{                                                                           \
		size_t got = 0;                                                     \
		name##_calls++;                                                     \
		while (got < bytes) {                                               \
			size_t n = bytes - got < PIECE ? bytes - got : PIECE;       \
			n = (n + page - 1) / page * page;                           \
			char *p = mmap(NULL, n, PROT_READ | PROT_WRITE,             \
				       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);         \
			if (p == MAP_FAILED)                                        \
				fail(#name);                                        \
			if (nheld == PIECES_MAX)                                    \
				fail("too many pieces");                            \
			for (size_t o = 0; o < n; o += page)                        \
				p[o] = 1;                                           \
			held[nheld].p = p;                                          \
			held[nheld++].len = n;                                      \
			got += n;                                                   \
		}                                                                   \
		__asm__ volatile("" ::: "memory");                                  \
		return got;                                                         \
	}

THREE_SITE(map_half)
THREE_SITE(map_third)
THREE_SITE(map_sixth)

int main(int argc, char **argv)
{
	double mb = argc > 1 ? atof(argv[1]) : 300.0;
	long hold_ms = argc > 2 ? strtol(argv[2], NULL, 10) : 400;
	size_t m, a, b, c;
	char line[160];
	int n;

	page = (size_t)sysconf(_SC_PAGESIZE);
	if (!(mb > 0) || mb > 100000 || hold_ms < 0)
		return 2;
	m = (size_t)(mb * 1e6);
	a = map_half(m / 2);
	b = map_third(m / 3);
	c = map_sixth(m / 6);
	n = snprintf(line, sizeof line, "pid=%d half=%zu third=%zu sixth=%zu\n", (int)getpid(), a,
		     b, c);
	if (write(1, line, (size_t)n) != n)
		return 2;
	struct timespec ts = { hold_ms / 1000, (hold_ms % 1000) * 1000000L };
	while (nanosleep(&ts, &ts) != 0)
		;
	while (nheld) {
		nheld--;
		if (munmap(held[nheld].p, held[nheld].len) != 0)
			return 2;
	}
	return 0;
}
