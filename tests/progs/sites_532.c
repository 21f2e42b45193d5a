/* sites_532.c: one process whose three call sites hold 50%, 30% and 20% of
 * its heap peak, touched, and let go at once: the heap peak the poller is
 * least likely to see (tests/e2e/test_memsup_sites_peak.c).
 *
 * Usage: sites_532 [MIB [HOLD_MS [BLOCK_KIB]]]     (defaults 100 0 2048)
 *
 * Three functions that call malloc themselves, site_half (50% of MIB
 * mebibytes), site_three_tenths (30%) and site_fifth (20%), in that order,
 * each take their share in blocks of BLOCK_KIB KiB and memset every block
 * (first-touch faults: the heap grows at the speed of the page faults,
 * about 11 us a 4 KiB page, so the last site is still growing when the
 * poller takes its last sample before the peak).  With all of them held,
 * it prints one line
 *   pid=N half=B three_tenths=B fifth=B
 * with B the malloc_usable_size sums (the truth), holds HOLD_MS more
 * milliseconds, frees every block in the order it took them and exits 0
 * (2 on a bad argument or a failed allocation).
 *
 * Blocks of 2 MiB are sampled almost surely at the shim's default interval
 * (512 KiB: probability 1 - exp(-4)), so the estimated shares are within a
 * point of the truth and what the test sees is the moment they are taken
 * at, not the sampling.
 */
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define SITES_MAX_BLOCKS 8192

static void *held[SITES_MAX_BLOCKS];
static size_t nheld;

/* Each site calls malloc itself, so that a sampled stack's first frame is
 * the site; each counts its calls in a variable of its own, so that -O2
 * does not fold the three identical bodies into one (-fipa-icf). */
#define SITES_SITE(name)                                                           \
	static volatile unsigned name##_calls;                                     \
	__attribute__((noinline)) static size_t name(size_t bytes, size_t block)   \
	{                                                                          \
		size_t got = 0;                                                    \
		name##_calls++;                                                    \
		while (got < bytes) {                                              \
			size_t n = bytes - got < block ? bytes - got : block;      \
			void *p = malloc(n);                                       \
			if (!p || nheld == SITES_MAX_BLOCKS) {                     \
				fprintf(stderr, "sites_532: allocation failed\n"); \
				exit(2);                                           \
			}                                                          \
			memset(p, 0x5a, n);                                        \
			/* the pages are touched: keep the stores */               \
			__asm__ volatile("" : : "r"(p) : "memory");                \
			held[nheld++] = p;                                         \
			got += malloc_usable_size(p);                              \
		}                                                                  \
		return got;                                                        \
	}

SITES_SITE(site_half)
SITES_SITE(site_three_tenths)
SITES_SITE(site_fifth)

int main(int argc, char **argv)
{
	double mib = argc > 1 ? atof(argv[1]) : 100.0;
	long hold_ms = argc > 2 ? strtol(argv[2], NULL, 10) : 0;
	long block_kib = argc > 3 ? strtol(argv[3], NULL, 10) : 2048;
	if (!(mib > 0) || mib > 4096 || hold_ms < 0 || block_kib < 1 || block_kib > 1L << 20)
		return 2;
	double bytes = mib * 1024 * 1024;
	size_t block = (size_t)block_kib * 1024;
	size_t a = site_half((size_t)(bytes * 0.5), block);
	size_t b = site_three_tenths((size_t)(bytes * 0.3), block);
	size_t c = site_fifth((size_t)(bytes * 0.2), block);
	char line[160];
	int n = snprintf(line, sizeof line, "pid=%d half=%zu three_tenths=%zu fifth=%zu\n",
			 (int)getpid(), a, b, c);
	if (write(1, line, (size_t)n) != n)
		return 2;
	struct timespec ts = { hold_ms / 1000, (hold_ms % 1000) * 1000000L };
	while (nanosleep(&ts, &ts) != 0)
		;
	for (size_t i = 0; i < nheld; i++)
		free(held[i]);
	return 0;
}
