/* malloc_bench.c: a deterministic malloc/free microbenchmark for allocator shims.
 *
 * Usage: malloc_bench [THREADS [OPS_PER_THREAD [RING]]]    (defaults 1 10000000 4096)
 *
 * Each thread keeps a ring of RING live blocks.  One operation picks a slot at
 * random, releases what the slot holds (free, or realloc in place of
 * free+malloc for 1 op in 16) and fills it again with a new block: malloc, or
 * calloc for 1 op in 16.  Sizes are mostly small, with a tail of larger blocks
 * (60% 8-64 B, 25% 65-256 B, 10% 257-1024 B, 4.5% 1-8 KiB, 0.5% 8-64 KiB: all
 * below glibc's mmap threshold, so this times the shim around the allocator
 * rather than the kernel).  Because the ring holds blocks for ~RING ops, frees
 * are rarely of the block just allocated, as in real programs.  Every block is
 * written at both ends so that the allocator cannot be optimised away and the
 * memory is really used.
 *
 * The random stream is xorshift64* with a fixed seed per thread, so every run
 * does exactly the same calls in the same order.  The program counts its own
 * calls and requested bytes and prints them, so that a tool's report can be
 * checked against this ground truth (the live-bytes peak is exact only with one
 * thread; with -u it also tracks malloc_usable_size, which costs time: use it
 * for correctness runs, not for timing).
 *
 * Output: one JSON line on stdout, written with write(2) after the timed part.
 * Exit status 0, or 2 on a bad argument, 1 when an allocation fails.
 */
#include <errno.h>
#include <malloc.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

struct bench_thread {
	pthread_t tid;
	unsigned index;
	uint64_t ops;
	size_t ring;
	int track_usable;
	/* results */
	uint64_t n_malloc, n_calloc, n_realloc, n_free;
	uint64_t requested_total;
	uint64_t live, live_peak;           /* requested bytes */
	uint64_t usable_live, usable_peak;  /* malloc_usable_size bytes (-u) */
	uint64_t checksum;
	int failed;
	/* Each thread writes its counters on every operation: a line of its
	 * own, and no neighbour in the pair of lines the L2 prefetcher fetches
	 * together.  Without this, th[] on the stack (128 bytes an entry,
	 * placed by ASLR at any 16-byte boundary) put both threads on one
	 * line in some runs and not in others. */
} __attribute__((aligned(128)));

static uint64_t bench_rng_next(uint64_t *s)
{
	/* xorshift64*: fast, good enough, and identical on every machine. */
	uint64_t x = *s;
	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	*s = x;
	return x * UINT64_C(0x2545F4914F6CDD1D);
}

static size_t bench_pick_size(uint64_t *s)
{
	uint64_t r = bench_rng_next(s);
	unsigned bucket = (unsigned)(r % 1000);
	uint64_t v = r >> 20;

	if (bucket < 600)
		return 8 + v % 57;          /* 8..64 */
	if (bucket < 850)
		return 65 + v % 192;        /* 65..256 */
	if (bucket < 950)
		return 257 + v % 768;       /* 257..1024 */
	if (bucket < 995)
		return 1025 + v % 7168;     /* 1025..8192 */
	return 8193 + v % 57344;            /* 8193..65536 */
}

static void bench_note_alloc(struct bench_thread *t, size_t req, void *p)
{
	t->requested_total += req;
	t->live += req;
	if (t->live > t->live_peak)
		t->live_peak = t->live;
	if (t->track_usable) {
		t->usable_live += malloc_usable_size(p);
		if (t->usable_live > t->usable_peak)
			t->usable_peak = t->usable_live;
	}
}

static void bench_note_free(struct bench_thread *t, size_t req, void *p)
{
	t->live -= req;
	if (t->track_usable)
		t->usable_live -= malloc_usable_size(p);
}

static void *bench_thread_run(void *arg)
{
	struct bench_thread *t = arg;
	void **slot = calloc(t->ring, sizeof *slot);
	size_t *len = calloc(t->ring, sizeof *len);
	uint64_t s = UINT64_C(0x9E3779B97F4A7C15) * (t->index + 1);
	uint64_t sum = 0;

	if (!slot || !len) {
		t->failed = 1;
		free(slot);
		free(len);
		return NULL;
	}
	/* The ring arrays are allocations too: count them, so the totals are the
	 * process's exact calls. */
	t->n_calloc += 2;
	bench_note_alloc(t, t->ring * sizeof *slot, slot);
	bench_note_alloc(t, t->ring * sizeof *len, len);
	for (uint64_t i = 0; i < t->ops; i++) {
		uint64_t r = bench_rng_next(&s);
		size_t k = (size_t)(r % t->ring);
		unsigned kind = (unsigned)((r >> 32) & 15);
		size_t n = bench_pick_size(&s);
		unsigned char *p;

		if (slot[k] && kind == 0) {
			/* realloc: the old block's bytes leave, the new ones arrive. */
			bench_note_free(t, len[k], slot[k]);
			p = realloc(slot[k], n);
			t->n_realloc++;
		} else {
			if (slot[k]) {
				bench_note_free(t, len[k], slot[k]);
				free(slot[k]);
				t->n_free++;
				slot[k] = NULL;
			}
			if (kind == 1) {
				p = calloc(1, n);
				t->n_calloc++;
			} else {
				p = malloc(n);
				t->n_malloc++;
			}
		}
		if (!p) {
			t->failed = 1;
			break;
		}
		bench_note_alloc(t, n, p);
		p[0] = (unsigned char)i;
		p[n - 1] = (unsigned char)(i >> 8);
		sum += p[0] + p[n - 1];
		slot[k] = p;
		len[k] = n;
	}
	for (size_t k = 0; k < t->ring; k++) {
		if (slot[k]) {
			bench_note_free(t, len[k], slot[k]);
			free(slot[k]);
			t->n_free++;
		}
	}
	bench_note_free(t, t->ring * sizeof *slot, slot);
	bench_note_free(t, t->ring * sizeof *len, len);
	free(slot);
	free(len);
	t->n_free += 2;
	t->checksum = sum;
	return NULL;
}

static int bench_parse_u64(const char *s, uint64_t *out)
{
	char *end;
	unsigned long long v;

	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || end == s || *end || v == 0)
		return -EINVAL;
	*out = v;
	return 0;
}

static double bench_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
	enum { MAX_THREADS = 16 };
	struct bench_thread th[MAX_THREADS];
	uint64_t threads = 1, ops = 10000000, ring = 4096;
	int track_usable = 0, argi = 1;
	char out[1024];
	int len;
	double t0, t1;
	struct bench_thread sum = { 0 };

	if (argi < argc && strcmp(argv[argi], "-u") == 0) {
		track_usable = 1;
		argi++;
	}
	if ((argi < argc && bench_parse_u64(argv[argi++], &threads)) ||
	    (argi < argc && bench_parse_u64(argv[argi++], &ops)) ||
	    (argi < argc && bench_parse_u64(argv[argi++], &ring)) ||
	    argi < argc || threads > MAX_THREADS) {
		fprintf(stderr, "usage: malloc_bench [-u] [THREADS(1-%d) [OPS_PER_THREAD [RING]]]\n",
			MAX_THREADS);
		return 2;
	}

	memset(th, 0, sizeof th);
	t0 = bench_now();
	for (unsigned i = 0; i < threads; i++) {
		th[i].index = i;
		th[i].ops = ops;
		th[i].ring = (size_t)ring;
		th[i].track_usable = track_usable;
		if (threads == 1) {
			bench_thread_run(&th[0]);
		} else if (pthread_create(&th[i].tid, NULL, bench_thread_run, &th[i]) != 0) {
			fprintf(stderr, "malloc_bench: pthread_create failed\n");
			return 1;
		}
	}
	if (threads > 1)
		for (unsigned i = 0; i < threads; i++)
			pthread_join(th[i].tid, NULL);
	t1 = bench_now();

	for (unsigned i = 0; i < threads; i++) {
		if (th[i].failed) {
			fprintf(stderr, "malloc_bench: allocation failed\n");
			return 1;
		}
		sum.n_malloc += th[i].n_malloc;
		sum.n_calloc += th[i].n_calloc;
		sum.n_realloc += th[i].n_realloc;
		sum.n_free += th[i].n_free;
		sum.requested_total += th[i].requested_total;
		sum.checksum += th[i].checksum;
	}
	/* With threads > 1 the per-thread peaks happen at different moments, so
	 * their sum bounds the process peak from above; it is exact for 1 thread. */
	for (unsigned i = 0; i < threads; i++) {
		sum.live_peak += th[i].live_peak;
		sum.usable_peak += th[i].usable_peak;
	}
	/* snprintf into a stack buffer and write(2): no stdio buffer is allocated,
	 * so the program's own calls are exactly the ones counted above (with
	 * threads, pthread_create's own allocations come on top). */
	len = snprintf(out, sizeof out,
		       "{\"threads\": %llu, \"ops_per_thread\": %llu, \"ring\": %llu, "
		       "\"loop_s\": %.6f, \"ns_per_op\": %.2f, "
		       "\"malloc\": %llu, \"calloc\": %llu, \"realloc\": %llu, \"free\": %llu, "
		       "\"requested_total\": %llu, \"requested_peak\": %llu, "
		       "\"usable_peak\": %llu, \"peak_exact\": %s, \"checksum\": %llu}\n",
		       (unsigned long long)threads, (unsigned long long)ops,
		       (unsigned long long)ring, t1 - t0,
		       (t1 - t0) * 1e9 / (double)(ops * threads),
		       (unsigned long long)sum.n_malloc, (unsigned long long)sum.n_calloc,
		       (unsigned long long)sum.n_realloc, (unsigned long long)sum.n_free,
		       (unsigned long long)sum.requested_total,
		       (unsigned long long)sum.live_peak,
		       (unsigned long long)(track_usable ? sum.usable_peak : 0),
		       threads == 1 ? "true" : "false",
		       (unsigned long long)sum.checksum);
	if (len > 0 && write(STDOUT_FILENO, out, (size_t)len) != len)
		return 1;
	return 0;
}
