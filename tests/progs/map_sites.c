/* map_sites.c: anonymous mappings of known sizes from named functions, for
 * the mapped-memory call sites (stacks.h, "Mapped memory";
 * test_shim_mapsites.c, test_memsup_mapsites.c).
 *
 * Usage: map_sites [MB [HOLD_MS [TOUCH]]]          (defaults 100 0 0)
 *
 * With M = MB decimal megabytes, in this order:
 *   drop_early         maps 0.8 M in pieces, then unmaps them all (before
 *                      the peak: none of it is live there);
 *   hold_sixty         maps 0.6 M, hold_thirty 0.3 M, hold_ten 0.1 M, each
 *                      in pieces of log-uniform sizes between 4 KiB and
 *                      1 MiB (whole pages), as an arena allocator would;
 *   hold_partial       maps one region of 0.2 M and unmaps its first
 *                      quarter and a quarter in its middle (three cuts of
 *                      the one mapping: a head, a hole, the rest in two);
 *   hold_grown         maps one region of 0.05 M and grows it with mremap
 *                      (MREMAP_MAYMOVE) to 0.15 M.
 * Then main mallocs one block of 0.01 M (the heap peaks while everything
 * is held, so the tree's heap peak under memsup is that moment too).
 * Each function makes its own mmap and mremap calls, so that the mapping
 * call's caller (a sampled stack's first frame) is the function.  TOUCH 1
 * writes every page held (then the peak of RSS is the peak of mappings).
 * When all are held it prints one line
 *   pid=N sixty=B thirty=B ten=B partial=B grown=B early=B heap=B
 * with B the bytes each function holds mapped now (early: what drop_early
 * mapped, all unmapped since; heap: the block's malloc_usable_size), holds for HOLD_MS milliseconds, unmaps
 * everything, frees the block and exits 0 (2 on a bad argument or a failed
 * call).  The heap holds nothing else: the line goes out through write(2).
 */

#include <malloc.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#define MAPS_MAX 8192

struct piece {
	char *p;
	size_t len;
};

static struct piece held[MAPS_MAX];
static size_t nheld;
static size_t page;
static int touch;

static uint64_t maps_rng(uint64_t *s)
{
	uint64_t x = *s;
	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	*s = x;
	return x * UINT64_C(0x2545F4914F6CDD1D);
}

/* Log-uniform in [4 KiB, 1 MiB], whole pages. */
static size_t maps_size(uint64_t *s)
{
	unsigned e = (unsigned)(maps_rng(s) % 9); /* 2^12 .. 2^20 */
	size_t lo = (size_t)4096 << e, n = lo + (size_t)(maps_rng(s) % lo);
	if (n > (1u << 20))
		n = 1u << 20;
	return (n + page - 1) / page * page;
}

static void fail(const char *what)
{
	perror(what);
	exit(2);
}

static void keep(char *p, size_t len)
{
	if (nheld == MAPS_MAX)
		fail("too many mappings");
	if (touch)
		for (size_t o = 0; o < len; o += page)
			p[o] = 1;
	held[nheld].p = p;
	held[nheld++].len = len;
}

/* Each site calls mmap itself and counts its calls in a variable of its
 * own: identical functions would be folded into one at -O2. */
#define MAPS_SITE(name)                                                          \
	static volatile unsigned name##_calls;                                   \
	__attribute__((noinline)) static size_t name(size_t bytes, uint64_t *seed) \
	{                                                                        \
		size_t got = 0;                                                  \
		name##_calls++;                                                  \
		while (got < bytes) {                                            \
			size_t n = maps_size(seed);                              \
			char *p = mmap(NULL, n, PROT_READ | PROT_WRITE,          \
				       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);      \
			if (p == MAP_FAILED)                                     \
				fail(#name);                                     \
			keep(p, n);                                              \
			got += n;                                                \
		}                                                                \
		__asm__ volatile("" ::: "memory");                               \
		return got;                                                      \
	}

MAPS_SITE(hold_sixty)
MAPS_SITE(hold_thirty)
MAPS_SITE(hold_ten)

/* Maps its pieces and unmaps them all again. */
__attribute__((noinline)) static size_t drop_early(size_t bytes, uint64_t *seed)
{
	size_t got = 0, first = nheld;
	while (got < bytes) {
		size_t n = maps_size(seed);
		char *p = mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (p == MAP_FAILED)
			fail("drop_early");
		keep(p, n);
		got += n;
	}
	while (nheld > first) {
		nheld--;
		if (munmap(held[nheld].p, held[nheld].len) != 0)
			fail("drop_early munmap");
	}
	return got;
}

/* One region, four quarters: the first and the third unmapped. */
__attribute__((noinline)) static size_t hold_partial(size_t bytes)
{
	size_t q = (bytes / 4 + page - 1) / page * page;
	char *p = mmap(NULL, 4 * q, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		fail("hold_partial");
	if (munmap(p, q) != 0 || munmap(p + 2 * q, q) != 0)
		fail("hold_partial munmap");
	keep(p + q, q);
	keep(p + 3 * q, q);
	return 2 * q;
}

/* One region grown to three times its size. */
__attribute__((noinline)) static size_t hold_grown(size_t bytes)
{
	size_t n = (bytes + page - 1) / page * page;
	char *p = mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0), *q;
	if (p == MAP_FAILED)
		fail("hold_grown");
	q = mremap(p, n, 3 * n, MREMAP_MAYMOVE);
	if (q == MAP_FAILED)
		fail("hold_grown mremap");
	keep(q, 3 * n);
	return 3 * n;
}

int main(int argc, char **argv)
{
	double mb = argc > 1 ? atof(argv[1]) : 100.0;
	long hold_ms = argc > 2 ? strtol(argv[2], NULL, 10) : 0;
	uint64_t seed = UINT64_C(0x9E3779B97F4A7C15);
	size_t m, early, a, b, c, part, grown;
	char line[220], *heap;
	int n;

	touch = argc > 3 && atoi(argv[3]) == 1;
	page = (size_t)sysconf(_SC_PAGESIZE);
	if (!(mb > 0) || mb > 100000 || hold_ms < 0)
		return 2;
	m = (size_t)(mb * 1e6);
	early = drop_early(m / 10 * 8, &seed);
	a = hold_sixty(m / 10 * 6, &seed);
	b = hold_thirty(m / 10 * 3, &seed);
	c = hold_ten(m / 10, &seed);
	part = hold_partial(m / 10 * 2);
	grown = hold_grown(m / 20);
	heap = malloc(m / 100);
	if (!heap)
		fail("malloc");
	n = snprintf(line, sizeof line,
		     "pid=%d sixty=%zu thirty=%zu ten=%zu partial=%zu grown=%zu early=%zu "
		     "heap=%zu\n",
		     (int)getpid(), a, b, c, part, grown, early, malloc_usable_size(heap));
	if (write(1, line, (size_t)n) != n)
		return 2;
	{
		struct timespec ts = { hold_ms / 1000, (hold_ms % 1000) * 1000000L };
		while (nanosleep(&ts, &ts) != 0)
			;
	}
	while (nheld) {
		nheld--;
		if (munmap(held[nheld].p, held[nheld].len) != 0)
			return 2;
	}
	free(heap);
	return 0;
}
