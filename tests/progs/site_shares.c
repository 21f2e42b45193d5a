/* site_shares.c: three call sites holding known shares of the heap at the
 * tree's peak, for the sampler's accuracy tests (test_shim_stacks.c,
 * test_memsup_stacks.c).
 *
 * Usage: site_shares [MB [PROCS [FLAGS [HOLD_MS]]]]     (defaults 300 2 0 0)
 *
 * PROCS processes (the parent and PROCS-1 forked children) each hold
 * MB/PROCS decimal megabytes at once, through three functions that call
 * the allocator directly: hold_half (50%), hold_three_tenths (30%) and
 * hold_fifth (20%).  Each function's blocks have sizes drawn log-uniformly
 * between 4 KiB and 4 MiB from a fixed seed, and cycle through malloc,
 * calloc, realloc (a 1 KiB block grown to its size) and posix_memalign.
 * The pages are never touched (the shim counts malloc_usable_size, so the
 * shares do not need resident memory, and first-touch faults are slow).
 * FLAGS 1: the forked children exec themselves first (a new image each).
 * FLAGS 2: the parent takes its share before it forks, so each child
 * inherits the parent's blocks (and holds them with its own).
 *
 * When every process holds its share, each prints one line
 *   pid=N half=B three_tenths=B fifth=B
 * with B the malloc_usable_size sums (the ground truth); all hold for
 * HOLD_MS more milliseconds (for memsup's samples), then free everything
 * and exit 0 (2 on a bad argument or a failed allocation).
 */
#include <malloc.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define SHARES_MAX_BLOCKS 4096

static void *held[SHARES_MAX_BLOCKS];
static size_t nheld;

static uint64_t shares_rng(uint64_t *s)
{
	uint64_t x = *s;
	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	*s = x;
	return x * UINT64_C(0x2545F4914F6CDD1D);
}

/* Log-uniform in [4 KiB, 4 MiB]: 2^(12 + 10u). */
static size_t shares_size(uint64_t *s)
{
	double u = (double)(shares_rng(s) >> 11) / 9007199254740992.0;
	double v = 4096.0;
	for (double e = 10.0 * u; e >= 1.0; e -= 1.0)
		v *= 2.0;
	{
		double frac = 10.0 * u - (double)(int)(10.0 * u);
		/* 2^frac by a short series: accuracy does not matter here */
		double t = frac * 0.6931471805599453, p = 1.0, term = 1.0;
		for (int i = 1; i < 12; i++) {
			term *= t / i;
			p += term;
		}
		v *= p;
	}
	return (size_t)v;
}

static void shares_keep(void *p)
{
	if (!p || nheld == SHARES_MAX_BLOCKS) {
		fprintf(stderr, "site_shares: allocation failed or too many blocks\n");
		exit(2);
	}
	held[nheld++] = p;
}

/* Each site calls the allocator itself, so that the allocator's caller
 * (a sampled stack's first frame) is the site.  Each counts its calls in
 * a variable of its own: three identical functions would be folded into
 * one at -O2 (-fipa-icf). */
#define SHARES_SITE(name)                                                        \
	static volatile unsigned name##_calls;                                   \
	__attribute__((noinline)) static size_t name(size_t bytes, uint64_t *seed) \
	{                                                                        \
		size_t got = 0;                                                  \
		name##_calls++;                                                  \
		for (unsigned k = 0; got < bytes; k++) {                         \
			size_t n = shares_size(seed);                            \
			void *p = NULL;                                          \
			switch (k % 4) {                                         \
			case 0:                                                  \
				p = malloc(n);                                   \
				break;                                           \
			case 1:                                                  \
				p = calloc(1, n);                                \
				break;                                           \
			case 2:                                                  \
				p = realloc(malloc(1024), n);                    \
				break;                                           \
			default:                                                 \
				if (posix_memalign(&p, 4096, n) != 0)            \
					p = NULL;                                \
				break;                                           \
			}                                                        \
			shares_keep(p);                                          \
			got += malloc_usable_size(p);                            \
		}                                                                \
		__asm__ volatile("" ::: "memory");                               \
		return got;                                                      \
	}

SHARES_SITE(hold_half)
SHARES_SITE(hold_three_tenths)
SHARES_SITE(hold_fifth)

/* Takes this process's share and says so on stdout. */
__attribute__((noinline)) static void shares_take(double bytes, unsigned who)
{
	uint64_t seed = UINT64_C(0x9E3779B97F4A7C15) * (who + 1);
	size_t a = hold_half((size_t)(bytes * 0.5), &seed);
	size_t b = hold_three_tenths((size_t)(bytes * 0.3), &seed);
	size_t c = hold_fifth((size_t)(bytes * 0.2), &seed);
	char line[160];
	int n = snprintf(line, sizeof line, "pid=%d half=%zu three_tenths=%zu fifth=%zu\n",
			 (int)getpid(), a, b, c);
	if (write(1, line, (size_t)n) != n)
		exit(2);
}

static void shares_release(void)
{
	while (nheld)
		free(held[--nheld]);
}

/* A child: its share, "ready", then hold until the parent says go. */
static void shares_child(double bytes, unsigned who, int release_in, int ready_out)
{
	char go;
	shares_take(bytes, who);
	if (write(ready_out, "r", 1) != 1 || read(release_in, &go, 1) != 1)
		exit(2);
	shares_release();
}

int main(int argc, char **argv)
{
	double mb = argc > 1 ? atof(argv[1]) : 300.0;
	long procs = argc > 2 ? strtol(argv[2], NULL, 10) : 2;
	long flags = argc > 3 ? strtol(argv[3], NULL, 10) : 0;
	long hold_ms = argc > 4 ? strtol(argv[4], NULL, 10) : 0;
	int ready[2], release[2];
	char c;

	/* A re-exec'd child: MB PROCS 0 HOLD_MS child WHO RELEASE_FD READY_FD */
	if (argc == 9 && !strcmp(argv[5], "child")) {
		shares_child(mb * 1e6 / (double)procs, (unsigned)atoi(argv[6]), atoi(argv[7]),
			     atoi(argv[8]));
		return 0;
	}
	if (!(mb > 0) || procs < 1 || procs > 16 || hold_ms < 0 || pipe(ready) || pipe(release))
		return 2;
	if (flags & 2)
		shares_take(mb * 1e6 / (double)procs, 0);
	for (long i = 1; i < procs; i++) {
		pid_t pid = fork();
		if (pid < 0)
			return 2;
		if (pid > 0)
			continue;
		if (flags & 1) {
			char a1[32], a2[32], a3[32], a4[32], a5[32];
			snprintf(a1, sizeof a1, "%g", mb);
			snprintf(a2, sizeof a2, "%ld", procs);
			snprintf(a3, sizeof a3, "%ld", i);
			snprintf(a4, sizeof a4, "%d", release[0]);
			snprintf(a5, sizeof a5, "%d", ready[1]);
			execl("/proc/self/exe", argv[0], a1, a2, "0", "0", "child", a3, a4, a5,
			      (char *)NULL);
			_exit(2);
		}
		shares_child(mb * 1e6 / (double)procs, (unsigned)i, release[0], ready[1]);
		_exit(0);
	}
	if (!(flags & 2))
		shares_take(mb * 1e6 / (double)procs, 0);
	for (long i = 1; i < procs; i++)
		if (read(ready[0], &c, 1) != 1)
			return 2;
	{
		struct timespec ts = { hold_ms / 1000, (hold_ms % 1000) * 1000000L };
		while (nanosleep(&ts, &ts) != 0)
			;
	}
	for (long i = 1; i < procs; i++)
		if (write(release[1], "g", 1) != 1)
			return 2;
	shares_release();
	while (wait(NULL) > 0)
		;
	return 0;
}
