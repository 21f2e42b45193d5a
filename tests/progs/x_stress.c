/* x_stress.c: the shim under threads, fork, exec and signal handlers that
 * allocate (tests/e2e/test_shim_hostile.c runs it under memsup).
 *
 *   x_stress [THREADS [ITERS [FORKS]]]      (defaults 3 20000 16)
 *
 * THREADS workers each do ITERS random malloc/calloc/realloc/free/mmap/
 * munmap operations on their own slots, checking a fill pattern on every
 * block before it is resized or released.  Meanwhile SIGALRM (an interval
 * timer) and SIGUSR1 (sent by the main thread to itself and to each worker)
 * arrive; their handler either mallocs a small block into the next of its
 * thread's few slots or frees the block there (so each call moves the heap).
 * The main thread forks FORKS children: each runs a single-threaded
 * malloc/free loop under its own fast interval timer whose handler also
 * allocates, checks through memtrace_read_stats() (when the shim is there)
 * that its heap figure came back to where it started, then execs /bin/true.
 *
 * Markers (memtrace_mark, when the shim is there):
 *   "base"          workers started and idle, no block of ours held
 *   "hold H M"      workers parked holding their final blocks: H = the sum of
 *                   malloc_usable_size() of every block this program holds
 *                   (workers' slots and handlers' blocks), M = the bytes of
 *                   its live mmap regions.  The record's heap_current at
 *                   "hold" minus that at "base" must be exactly H, and its
 *                   map figure likewise M.
 *   "end"           everything of ours freed and unmapped, threads joined
 * The same checks are made here from memtrace_read_stats(); any mismatch,
 * corrupt pattern or failed child is printed on stderr and makes the exit
 * status 1.  The handler's malloc is legal only "in practice": it uses a
 * size class (24 bytes) no other code here uses, and each thread first fills
 * its glibc tcache bin for it, so the handler's malloc/free stay on glibc's
 * lock-free per-thread cache and cannot deadlock on an arena lock.  That
 * cache is not reentrant, so the handler blocks both signals while it runs:
 * a SIGALRM handler nested in a SIGUSR1 one on the same thread would work on
 * the bin the outer call is in the middle of.
 */
#include <dlfcn.h>
#include <errno.h>
#include <malloc.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#include "memtrace.h"
#include "record.h"

#define SLOTS 48
#define MAPS 6
#define HSLOTS 4       /* blocks a thread's signal handler keeps */
#define HSIZE 24       /* the handler's own size class */
#define MAX_THREADS 16
#define PAGE 4096u

static memtrace_mark_fn *mark_fn;
static memtrace_read_stats_fn *stats_fn;
static volatile sig_atomic_t failed_sig;

struct hslots {
	void *p[HSLOTS];
	unsigned long n;
};
static __thread struct hslots hs;
static struct hslots *hs_all[MAX_THREADS + 1];

static void fail(const char *what)
{
	fprintf(stderr, "x_stress: %s\n", what);
	exit(1);
}

/* The handler: the next of this thread's slots gets a small block if it is
 * empty and loses it if not, so that every call changes the heap figure
 * (a malloc and a free of the same size in one call would cancel, and an
 * update the handler's shim call made and the interrupted one lost would go
 * unnoticed). */
static void on_signal(int sig)
{
	int saved = errno;
	unsigned i = (unsigned)(hs.n++ % HSLOTS);
	unsigned char *old = hs.p[i];
	(void)sig;
	if (old) {
		if (old[0] != 0xA5 || old[HSIZE - 1] != 0xA5)
			failed_sig = 1;
		hs.p[i] = NULL;
		free(old);
	} else if ((hs.p[i] = malloc(HSIZE)) != NULL) {
		memset(hs.p[i], 0xA5, HSIZE);
	}
	errno = saved;
}

/* Fills this thread's tcache bin of the handler's size class, so that the
 * handler's malloc is served from it without an arena lock. */
static void hs_warm(void)
{
	void *w[7];
	for (int i = 0; i < 7; i++)
		w[i] = malloc(HSIZE);
	for (int i = 0; i < 7; i++)
		free(w[i]);
}

static size_t hs_held(const struct hslots *h)
{
	size_t s = 0;
	for (int i = 0; i < HSLOTS; i++)
		if (h->p[i])
			s += malloc_usable_size(h->p[i]);
	return s;
}

static void hs_free(struct hslots *h)
{
	for (int i = 0; i < HSLOTS; i++) {
		free(h->p[i]);
		h->p[i] = NULL;
	}
}

static void signals_block(int how)
{
	sigset_t s;
	sigemptyset(&s);
	sigaddset(&s, SIGALRM);
	sigaddset(&s, SIGUSR1);
	pthread_sigmask(how, &s, NULL);
}

static void timer_set(long usec)
{
	struct itimerval it = { { 0, usec }, { 0, usec } };
	setitimer(ITIMER_REAL, &it, NULL);
}

static uint64_t rnd(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

/* ---- workers ------------------------------------------------------------ */

struct block {
	unsigned char *p;
	size_t n;         /* bytes filled with the pattern */
	unsigned char tag;
};

struct mapping {
	unsigned char *p;
	size_t len;
};

struct worker {
	pthread_t tid;
	int idx, iters;
	struct block b[SLOTS];
	struct mapping m[MAPS];
	size_t held_heap, held_map;
	int bad;
};

static pthread_barrier_t bar_ready, bar_go, bar_parked, bar_release;

static void block_check(struct worker *w, struct block *b, size_t upto)
{
	for (size_t i = 0; i < upto; i += 61)
		if (b->p[i] != b->tag)
			w->bad = 1;
	if (upto && b->p[upto - 1] != b->tag)
		w->bad = 1;
}

static void block_fill(struct block *b, size_t from)
{
	memset(b->p + from, b->tag, b->n - from);
}

static void worker_step(struct worker *w, uint64_t *seed)
{
	uint64_t r = rnd(seed);
	struct block *b = &w->b[r % SLOTS];
	size_t n = 100 + (size_t)((r >> 8) % 12000); /* never the handler's class */
	switch ((r >> 32) % 8) {
	case 0:
	case 1: /* malloc or calloc into an empty slot, else free it */
		if (!b->p) {
			b->p = (r >> 40) & 1 ? malloc(n) : calloc(1, n);
			if (!b->p)
				fail("malloc failed");
			b->n = n;
			b->tag = (unsigned char)(r >> 48);
			block_fill(b, 0);
			break;
		}
		/* fall through */
	case 2:
	case 3:
		if (b->p) {
			block_check(w, b, b->n);
			free(b->p);
			b->p = NULL;
		}
		break;
	case 4:
	case 5: { /* realloc: the kept prefix must survive */
		unsigned char *q = realloc(b->p, n);
		if (!q)
			fail("realloc failed");
		size_t keep = b->p ? (b->n < n ? b->n : n) : 0;
		b->p = q;
		if (keep)
			block_check(w, b, keep);
		else
			b->tag = (unsigned char)(r >> 48);
		b->n = n;
		block_fill(b, keep);
		break;
	}
	default: { /* map or unmap a region of 1..8 pages */
		struct mapping *m = &w->m[(r >> 16) % MAPS];
		if (m->p) {
			if (m->p[0] != (unsigned char)w->idx || m->p[m->len - 1] != (unsigned char)w->idx)
				w->bad = 1;
			munmap(m->p, m->len);
			m->p = NULL;
		} else {
			size_t len = PAGE * (1 + (r >> 24) % 8);
			void *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
				       -1, 0);
			if (p == MAP_FAILED)
				fail("mmap failed");
			m->p = p;
			m->len = len;
			m->p[0] = m->p[len - 1] = (unsigned char)w->idx;
		}
		break;
	}
	}
}

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	uint64_t seed = 0x9E3779B97F4A7C15ull * (uint64_t)(w->idx + 1);
	hs_warm();
	hs_all[w->idx + 1] = &hs;
	pthread_barrier_wait(&bar_ready);
	pthread_barrier_wait(&bar_go); /* "base" is marked in between */
	for (int i = 0; i < w->iters; i++)
		worker_step(w, &seed);
	signals_block(SIG_BLOCK); /* from here on no handler runs here */
	for (int i = 0; i < SLOTS; i++)
		if (w->b[i].p) {
			block_check(w, &w->b[i], w->b[i].n);
			w->held_heap += malloc_usable_size(w->b[i].p);
		}
	for (int i = 0; i < MAPS; i++)
		if (w->m[i].p)
			w->held_map += w->m[i].len;
	pthread_barrier_wait(&bar_parked);
	pthread_barrier_wait(&bar_release); /* "hold" is marked in between */
	for (int i = 0; i < SLOTS; i++)
		free(w->b[i].p);
	for (int i = 0; i < MAPS; i++)
		if (w->m[i].p)
			munmap(w->m[i].p, w->m[i].len);
	hs_free(&hs);
	return NULL;
}

/* ---- fork children -------------------------------------------------------- */

/* Single-threaded: the shim's fast path, interrupted every 50 us by a
 * handler that allocates.  Returns 0 when its heap figure came back. */
static int child_work(int k)
{
	struct memtrace_stats a, b;
	void *v[32] = { 0 };
	uint64_t seed = 0xC0FFEEull + (uint64_t)k;
	if (stats_fn && stats_fn(&a, sizeof a) != 0)
		return 2;
	memset(&hs, 0, sizeof hs); /* the parent thread's blocks are not ours */
	hs_warm();
	signals_block(SIG_UNBLOCK);
	timer_set(50);
	for (int i = 0; i < 60000; i++) {
		uint64_t r = rnd(&seed);
		void **s = &v[r % 32];
		if (*s) {
			free(*s);
			*s = NULL;
		} else if (!(*s = malloc(40 + (r >> 20) % 3000))) {
			return 2;
		}
	}
	timer_set(0);
	signals_block(SIG_BLOCK);
	for (int i = 0; i < 32; i++)
		free(v[i]);
	hs_free(&hs);
	if (failed_sig)
		return 3;
	if (stats_fn && stats_fn(&b, sizeof b) == 0 && b.heap_current != a.heap_current) {
		char msg[160];
		int len = snprintf(msg, sizeof msg,
				   "x_stress: child %d: heap_current %llu at start, %llu after freeing all\n",
				   k, (unsigned long long)a.heap_current,
				   (unsigned long long)b.heap_current);
		if (write(2, msg, (size_t)len) < 0)
			return 4;
		return 4;
	}
	return 0;
}

static int run_child(int k)
{
	pid_t pid = fork();
	if (pid < 0)
		fail("fork failed");
	if (pid == 0) {
		int rc = child_work(k);
		if (rc)
			_exit(rc);
		execl("/bin/true", "true", (char *)NULL);
		_exit(5);
	}
	int st;
	while (waitpid(pid, &st, 0) < 0)
		if (errno != EINTR)
			fail("waitpid failed");
	if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
		fprintf(stderr, "x_stress: child %d ended with status 0x%x\n", k, st);
		return 1;
	}
	return 0;
}

/* ---- main ------------------------------------------------------------------ */

static void mark(const char *label)
{
	if (mark_fn && mark_fn(label) != 0)
		fail("memtrace_mark failed");
}

int main(int argc, char **argv)
{
	int nthreads = argc > 1 ? atoi(argv[1]) : 3;
	int iters = argc > 2 ? atoi(argv[2]) : 20000;
	int forks = argc > 3 ? atoi(argv[3]) : 16;
	static struct worker w[MAX_THREADS];
	struct memtrace_stats base, hold, end;
	int bad = 0;
	if (nthreads < 1 || nthreads > MAX_THREADS || iters < 1 || forks < 0)
		fail("usage: x_stress [THREADS(1..16) [ITERS [FORKS]]]");
	mark_fn = (memtrace_mark_fn *)dlsym(RTLD_DEFAULT, "memtrace_mark");
	stats_fn = (memtrace_read_stats_fn *)dlsym(RTLD_DEFAULT, "memtrace_read_stats");
	setvbuf(stdout, NULL, _IONBF, 0); /* no stdio buffer allocated between markers */

	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_signal;
	sa.sa_flags = SA_RESTART;
	sigemptyset(&sa.sa_mask); /* no nesting: see the top of this file */
	sigaddset(&sa.sa_mask, SIGALRM);
	sigaddset(&sa.sa_mask, SIGUSR1);
	sigaction(SIGALRM, &sa, NULL);
	sigaction(SIGUSR1, &sa, NULL);
	hs_warm();
	hs_all[0] = &hs;

	pthread_barrier_init(&bar_ready, NULL, (unsigned)nthreads + 1);
	pthread_barrier_init(&bar_go, NULL, (unsigned)nthreads + 1);
	pthread_barrier_init(&bar_parked, NULL, (unsigned)nthreads + 1);
	pthread_barrier_init(&bar_release, NULL, (unsigned)nthreads + 1);
	for (int i = 0; i < nthreads; i++) {
		w[i].idx = i;
		w[i].iters = iters;
		if (pthread_create(&w[i].tid, NULL, worker_main, &w[i]) != 0)
			fail("pthread_create failed");
	}
	pthread_barrier_wait(&bar_ready);
	if (stats_fn && stats_fn(&base, sizeof base) != 0)
		fail("memtrace_read_stats failed");
	mark("base");
	timer_set(500);
	pthread_barrier_wait(&bar_go);

	for (int k = 0; k < forks; k++) {
		bad |= run_child(k);
		raise(SIGUSR1);
		for (int i = 0; i < nthreads; i++)
			pthread_kill(w[i].tid, SIGUSR1);
	}

	pthread_barrier_wait(&bar_parked);
	timer_set(0);
	signals_block(SIG_BLOCK);
	size_t held_heap = 0, held_map = 0;
	for (int i = 0; i < nthreads; i++) {
		held_heap += w[i].held_heap;
		held_map += w[i].held_map;
		bad |= w[i].bad;
	}
	for (int i = 0; i <= nthreads; i++)
		held_heap += hs_held(hs_all[i]);
	char label[MT_LABEL_BYTES];
	snprintf(label, sizeof label, "hold %zu %zu", held_heap, held_map);
	if (stats_fn && stats_fn(&hold, sizeof hold) != 0)
		fail("memtrace_read_stats failed");
	mark(label);
	pthread_barrier_wait(&bar_release);
	for (int i = 0; i < nthreads; i++)
		pthread_join(w[i].tid, NULL);
	hs_free(&hs);
	if (stats_fn && stats_fn(&end, sizeof end) != 0)
		fail("memtrace_read_stats failed");
	mark("end");

	if (failed_sig) {
		fprintf(stderr, "x_stress: a handler's block was overwritten\n");
		bad = 1;
	}
	if (stats_fn) {
		uint64_t dh = hold.heap_current - base.heap_current;
		uint64_t dm = (hold.map_anon_current + hold.map_file_current) -
			      (base.map_anon_current + base.map_file_current);
		if (dh != held_heap || dm != held_map) {
			fprintf(stderr, "x_stress: at hold the shim says heap +%llu map +%llu, "
					"the program holds heap %zu map %zu\n",
				(unsigned long long)dh, (unsigned long long)dm, held_heap, held_map);
			bad = 1;
		}
		printf("x_stress: base heap %llu, hold heap +%llu map +%llu, end heap %llu\n",
		       (unsigned long long)base.heap_current, (unsigned long long)dh,
		       (unsigned long long)dm, (unsigned long long)end.heap_current);
	}
	printf("x_stress: %d threads x %d ops, %d children, held heap %zu map %zu: %s\n",
	       nthreads, iters, forks, held_heap, held_map, bad ? "FAILED" : "ok");
	return bad;
}
