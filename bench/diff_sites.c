/* diff_sites.c: call sites of known sizes for bench/diff_false_alarms.py
 * (a regression gate judged by sampling error).
 *
 * Usage: diff_sites PROCS GROW_PCT [HOLD_MS]
 *
 * PROCS processes (the parent and PROCS-1 forked children) each hold, at
 * once, twelve sites' blocks: site 0 allocates 30 MB, site k (1..11)
 * 1 + k/2 MB, in blocks of 1 KiB to 64 KiB (sizes from a fixed sequence,
 * the same in every run), so the small sites are a few blocks the sampler
 * sees (at its default 512 KiB interval, a few samples each).  Site 0
 * holds GROW_PCT percent more in the parent (the growth the gate must
 * catch; 0: none).  All touched, held HOLD_MS
 * (default 200), freed, exit 0. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define SITES 12
#define MB 1000000L

static char *volatile keep;

/* one function per site: a stack of its own */
#define SITE(k)                                                                    \
	__attribute__((noinline)) static void site_##k(long bytes, uint32_t *x)    \
	{                                                                          \
		while (bytes > 0) {                                                \
			*x = *x * 1103515245u + 12345u;                            \
			size_t n = 1024 + (*x >> 8) % (63 * 1024);                 \
			char *p = malloc(n);                                       \
			if (!p)                                                    \
				exit(2);                                           \
			memset(p, k + 1, n);                                       \
			keep = p;                                                  \
			bytes -= (long)n;                                          \
		}                                                                  \
	}
SITE(0) SITE(1) SITE(2) SITE(3) SITE(4) SITE(5)
SITE(6) SITE(7) SITE(8) SITE(9) SITE(10) SITE(11)

static void (*const sites[SITES])(long, uint32_t *) = {
	site_0, site_1, site_2, site_3, site_4, site_5,
	site_6, site_7, site_8, site_9, site_10, site_11,
};

static void hold(int grow_pct, long hold_ms, int parent)
{
	uint32_t x = 12345;
	for (int k = 0; k < SITES; k++) {
		long bytes = k ? MB + (long)k * MB / 2 : 30 * MB;
		if (k == 0 && parent)
			bytes += bytes * grow_pct / 100;
		sites[k](bytes, &x);
	}
	struct timespec ts = { hold_ms / 1000, (hold_ms % 1000) * 1000000L };
	nanosleep(&ts, NULL);
}

int main(int argc, char **argv)
{
	if (argc < 3) {
		fprintf(stderr, "usage: diff_sites PROCS GROW_PCT [HOLD_MS]\n");
		return 2;
	}
	int procs = atoi(argv[1]), grow = atoi(argv[2]);
	long hold_ms = argc > 3 ? atol(argv[3]) : 200;
	for (int i = 1; i < procs; i++) {
		pid_t p = fork();
		if (p < 0)
			return 2;
		if (p == 0) {
			hold(0, hold_ms, 0);
			return 0;
		}
	}
	hold(grow, hold_ms, 1);
	while (wait(NULL) > 0)
		;
	return 0;
}
