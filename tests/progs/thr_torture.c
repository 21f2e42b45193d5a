/* thr_torture.c: threads living and dying every way a program can make
 * them, for the shim (tests/e2e/test_shim_threads.c runs each mode bare and
 * under libmemtrace.so and compares stdout, stderr and the exit status).
 *
 *   thr_torture concurrent N       N threads alive at once, each churning
 *   thr_torture noalloc N          N threads at once that never allocate
 *   thr_torture waves W N          W waves of N threads; half churn, half
 *                                  never allocate (stack cache reuse/unmap)
 *   thr_torture detached N         N detached threads; main returns as the
 *                                  last of them are still ending
 *   thr_torture mainexit N         main calls pthread_exit while N churn
 *   thr_torture exitbusy N         exit(7) while N threads still allocate
 *   thr_torture timer C            C SIGEV_THREAD timer callbacks churn
 *                                  while main does too (glibc's threads)
 *   thr_torture aio F              F aio_write requests whose SIGEV_THREAD
 *                                  completions churn while main does too
 *   thr_torture forkthread N       a thread forks while N others churn; the
 *                                  child allocates and exits 5
 *   thr_torture execthread N       a thread execs /bin/echo while N churn
 *   thr_torture dlopen LIB N       dlopen a library that starts N threads of
 *                                  its own (and one from its constructor),
 *                                  then dlclose it
 *
 * Ground truth: every mode whose count is deterministic prints
 * "marked=COUNT": the number of allocation requests of exactly MARK_SIZE
 * bytes the program made (no other code in it requests anything in that
 * size's histogram bucket, 32 KiB < n <= 64 KiB), which the test compares
 * with the record's histogram.  Under the shim, `concurrent` also checks
 * through memtrace_read_stats() that the heap rose by exactly the usable
 * bytes its threads hold and came back to the same figure when they freed
 * them, and `timer` and `aio` that the heap figure came back to where it
 * started once every block was freed (within what glibc keeps for its own
 * threads); a mismatch is printed on stderr and makes the exit status 1.
 */
#include <aio.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <malloc.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "memtrace.h"

#define MARK_SIZE 40000u /* bucket 16 of the record's histogram */
#define CHURN_OPS 3000   /* operations per churning thread */
#define CHURN_MARKS 30   /* of which MARK_SIZE requests */

static memtrace_read_stats_fn *stats_fn;
static long marked; /* MARK_SIZE requests made, all threads */

static void die(const char *what)
{
	fprintf(stderr, "thr_torture: %s: %s\n", what, strerror(errno));
	exit(2);
}

static void *xmalloc(size_t n)
{
	void *p = malloc(n);
	if (!p)
		die("malloc");
	return p;
}

/* One MARK_SIZE block, touched so that no compiler can drop the pair. */
static void mark_once(void)
{
	volatile char *p = xmalloc(MARK_SIZE);
	p[0] = 1;
	p[MARK_SIZE - 1] = 2;
	free((void *)p);
	__atomic_fetch_add(&marked, 1, __ATOMIC_RELAXED);
}

/* CHURN_OPS operations over a ring of 16 blocks of assorted sizes (never in
 * MARK_SIZE's bucket), CHURN_MARKS of them MARK_SIZE requests. */
static void churn(unsigned seed)
{
	void *ring[16] = { 0 };
	for (int i = 0; i < CHURN_OPS; i++) {
		unsigned k = (seed + (unsigned)i * 7u) % 16u;
		seed = seed * 1103515245u + 12345u;
		if (i % (CHURN_OPS / CHURN_MARKS) == 0) {
			mark_once();
			continue;
		}
		switch (i % 4) {
		case 0:
			free(ring[k]);
			ring[k] = xmalloc(16 + (seed >> 16) % 2000);
			break;
		case 1:
			free(ring[k]);
			ring[k] = calloc(1, 8 + (seed >> 20) % 300);
			if (!ring[k])
				die("calloc");
			break;
		case 2: {
			void *q = realloc(ring[k], 32 + (seed >> 12) % 20000);
			if (!q)
				die("realloc");
			ring[k] = q;
			break;
		}
		default:
			free(ring[k]);
			ring[k] = NULL;
		}
		if (ring[k])
			*(volatile char *)ring[k] = 1;
	}
	for (int k = 0; k < 16; k++)
		free(ring[k]);
}

static uint64_t heap_now(void)
{
	struct memtrace_stats st;
	if (!stats_fn || stats_fn(&st, sizeof st) != 0)
		return 0;
	return st.heap_current;
}

static void xcreate(pthread_t *t, void *(*fn)(void *), void *arg)
{
	int rc = pthread_create(t, NULL, fn, arg);
	if (rc != 0) {
		errno = rc;
		die("pthread_create");
	}
}

/* ---- concurrent: N alive at once, figures checked at two quiet points -- */

static pthread_barrier_t bar;
static uint64_t held_bytes; /* usable bytes the threads hold at the hold point */
#define HOLD_BLOCKS 4

static void *concurrent_worker(void *arg)
{
	void *held[HOLD_BLOCKS];
	unsigned id = (unsigned)(uintptr_t)arg;
	pthread_barrier_wait(&bar); /* 1: main has the base figure */
	churn(id);
	for (int i = 0; i < HOLD_BLOCKS; i++) {
		held[i] = xmalloc(64 + 64 * (size_t)i + id % 64);
		__atomic_fetch_add(&held_bytes, malloc_usable_size(held[i]), __ATOMIC_RELAXED);
	}
	pthread_barrier_wait(&bar); /* 2: main checks base + held */
	pthread_barrier_wait(&bar); /* 3: main has looked */
	for (int i = 0; i < HOLD_BLOCKS; i++)
		free(held[i]);
	pthread_barrier_wait(&bar); /* 4: main checks base again */
	pthread_barrier_wait(&bar); /* 5 */
	return NULL;
}

static int mode_concurrent(long n)
{
	pthread_t *t = calloc((size_t)n, sizeof *t);
	uint64_t base, hold, after;
	int bad = 0;
	if (!t)
		die("calloc");
	pthread_barrier_init(&bar, NULL, (unsigned)n + 1);
	for (long i = 0; i < n; i++)
		xcreate(&t[i], concurrent_worker, (void *)(uintptr_t)i);
	base = heap_now();
	pthread_barrier_wait(&bar);
	pthread_barrier_wait(&bar);
	hold = heap_now();
	pthread_barrier_wait(&bar);
	pthread_barrier_wait(&bar);
	after = heap_now();
	pthread_barrier_wait(&bar);
	for (long i = 0; i < n; i++)
		pthread_join(t[i], NULL);
	if (stats_fn && hold - base != held_bytes) {
		fprintf(stderr, "concurrent %ld: heap rose by %llu, threads hold %llu\n", n,
			(unsigned long long)(hold - base), (unsigned long long)held_bytes);
		bad = 1;
	}
	if (stats_fn && after != base) {
		fprintf(stderr, "concurrent %ld: heap %llu after the frees, %llu before\n", n,
			(unsigned long long)after, (unsigned long long)base);
		bad = 1;
	}
	free(t);
	printf("concurrent %ld: marked=%ld\n", n, marked);
	return bad;
}

/* ---- noalloc and waves ---------------------------------------------- */

static void *idle_worker(void *arg)
{
	volatile unsigned long x = (uintptr_t)arg;
	for (int i = 0; i < 1000; i++)
		x = x * 3 + 1;
	return NULL;
}

static void *churn_worker(void *arg)
{
	churn((unsigned)(uintptr_t)arg);
	return NULL;
}

static int mode_noalloc(long n)
{
	pthread_t *t = calloc((size_t)n, sizeof *t);
	if (!t)
		die("calloc");
	for (long i = 0; i < n; i++)
		xcreate(&t[i], idle_worker, (void *)(uintptr_t)i);
	for (long i = 0; i < n; i++)
		pthread_join(t[i], NULL);
	free(t);
	printf("noalloc %ld: ok\n", n);
	return 0;
}

static int mode_waves(long waves, long n)
{
	pthread_t *t = calloc((size_t)n, sizeof *t);
	if (!t)
		die("calloc");
	for (long w = 0; w < waves; w++) {
		for (long i = 0; i < n; i++)
			xcreate(&t[i], (i + w) % 2 ? churn_worker : idle_worker,
				(void *)(uintptr_t)(w * n + i));
		for (long i = 0; i < n; i++)
			pthread_join(t[i], NULL);
	}
	free(t);
	printf("waves %ld x %ld: marked=%ld\n", waves, n, marked);
	return 0;
}

/* ---- detached, mainexit, exitbusy ------------------------------------ */

static long running;

static void *detached_worker(void *arg)
{
	churn((unsigned)(uintptr_t)arg);
	__atomic_fetch_sub(&running, 1, __ATOMIC_RELEASE);
	return NULL; /* still ending (destructors, stack release) as main returns */
}

static int mode_detached(long n)
{
	pthread_attr_t a;
	pthread_t t;
	pthread_attr_init(&a);
	pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
	running = n;
	for (long i = 0; i < n; i++) {
		int rc = pthread_create(&t, &a, detached_worker, (void *)(uintptr_t)i);
		if (rc != 0) {
			errno = rc;
			die("pthread_create");
		}
	}
	while (__atomic_load_n(&running, __ATOMIC_ACQUIRE) > 0)
		sched_yield();
	printf("detached %ld: marked=%ld\n", n, __atomic_load_n(&marked, __ATOMIC_RELAXED));
	return 0;
}

static int mode_mainexit(long n)
{
	pthread_t t;
	for (long i = 0; i < n; i++)
		xcreate(&t, churn_worker, (void *)(uintptr_t)i);
	printf("mainexit %ld: main leaves first\n", n);
	fflush(stdout);
	pthread_exit(NULL); /* the last thread to end exits the process, status 0 */
}

static void *busy_worker(void *arg)
{
	for (unsigned s = (unsigned)(uintptr_t)arg;; s++)
		churn(s);
	return NULL;
}

static int mode_exitbusy(long n)
{
	pthread_t t;
	for (long i = 0; i < n; i++)
		xcreate(&t, busy_worker, (void *)(uintptr_t)i);
	struct timespec ts = { 0, 50 * 1000 * 1000 };
	nanosleep(&ts, NULL);
	printf("exitbusy %ld: exit 7 while they allocate\n", n);
	fflush(stdout);
	exit(7);
}

/* ---- threads glibc starts itself -------------------------------------- */

static long timer_started, timer_done, timer_goal;

static void timer_tick(union sigval v)
{
	(void)v;
	long k = __atomic_fetch_add(&timer_started, 1, __ATOMIC_RELAXED);
	if (k >= timer_goal)
		return;
	churn((unsigned)k);
	__atomic_fetch_add(&timer_done, 1, __ATOMIC_RELEASE);
}

/* Main churns a fixed number of rounds while the callbacks run, then waits
 * for the last callback without allocating: the count stays exact. */
static void churn_rounds_then_wait(long rounds, const long *done, long goal)
{
	for (long i = 0; i < rounds; i++)
		churn((unsigned)i);
	while (__atomic_load_n(done, __ATOMIC_ACQUIRE) < goal)
		sched_yield();
}

/* Every block of the callbacks and of main was freed: the heap figure may
 * differ from `base` only by what glibc keeps for the threads it started
 * (their TLS vectors, a few hundred bytes each, for the stacks it caches).
 * An update lost between two threads moves it by a whole block. */
#define DRIFT_SLACK (64u * 1024u)

static int heap_drift_bad(const char *what, uint64_t base)
{
	uint64_t now = heap_now();
	uint64_t drift = now > base ? now - base : base - now;
	if (!stats_fn || drift <= DRIFT_SLACK)
		return 0;
	fprintf(stderr, "%s: heap %llu at the end, %llu at the start\n", what,
		(unsigned long long)now, (unsigned long long)base);
	return 1;
}

static int mode_timer(long goal)
{
	struct sigevent sev;
	struct itimerspec its = { { 0, 1000000 }, { 0, 1000000 } };
	timer_t tm;
	memset(&sev, 0, sizeof sev);
	sev.sigev_notify = SIGEV_THREAD;
	sev.sigev_notify_function = timer_tick;
	uint64_t base = heap_now();
	timer_goal = goal;
	if (timer_create(CLOCK_MONOTONIC, &sev, &tm) != 0)
		die("timer_create");
	if (timer_settime(tm, 0, &its, NULL) != 0)
		die("timer_settime");
	churn_rounds_then_wait(200, &timer_done, goal);
	timer_delete(tm);
	printf("timer %ld: marked=%ld\n", goal, __atomic_load_n(&marked, __ATOMIC_RELAXED));
	return heap_drift_bad("timer", base);
}

static long aio_done;

/* Each completion is announced on a thread glibc starts for it. */
static void aio_completed(union sigval v)
{
	churn((unsigned)v.sival_int);
	__atomic_fetch_add(&aio_done, 1, __ATOMIC_RELEASE);
}

static int mode_aio(long requests)
{
	char path[] = "/tmp/thr_torture.XXXXXX", buf[512];
	struct aiocb *cb = calloc((size_t)requests, sizeof *cb);
	int fd = mkstemp(path);
	uint64_t base;
	if (fd < 0 || !cb)
		die("mkstemp");
	base = heap_now();
	unlink(path);
	memset(buf, 'a', sizeof buf);
	for (long i = 0; i < requests; i++) {
		cb[i].aio_fildes = fd;
		cb[i].aio_buf = buf;
		cb[i].aio_nbytes = sizeof buf;
		cb[i].aio_offset = (off_t)(i * (long)sizeof buf);
		cb[i].aio_sigevent.sigev_notify = SIGEV_THREAD;
		cb[i].aio_sigevent.sigev_notify_function = aio_completed;
		cb[i].aio_sigevent.sigev_value.sival_int = (int)i;
		if (aio_write(&cb[i]) != 0)
			die("aio_write");
	}
	churn_rounds_then_wait(200, &aio_done, requests);
	for (long i = 0; i < requests; i++)
		if (aio_return(&cb[i]) != (ssize_t)sizeof buf)
			die("aio_return");
	close(fd);
	free(cb);
	printf("aio %ld: marked=%ld\n", requests, __atomic_load_n(&marked, __ATOMIC_RELAXED));
	return heap_drift_bad("aio", base);
}

/* ---- fork and exec from a thread ------------------------------------ */

static long stop_churn;

static void *churn_until_stopped(void *arg)
{
	unsigned s = (unsigned)(uintptr_t)arg;
	while (!__atomic_load_n(&stop_churn, __ATOMIC_ACQUIRE))
		churn(s++);
	return NULL;
}

static void *forking_thread(void *arg)
{
	(void)arg;
	pid_t pid = fork();
	int st;
	if (pid < 0)
		die("fork");
	if (pid == 0) {
		/* one thread here: the others did not come along */
		long before = marked;
		for (int i = 0; i < 10; i++)
			mark_once();
		printf("child: marked %ld more\n", marked - before);
		fflush(stdout);
		exit(5);
	}
	if (waitpid(pid, &st, 0) != pid)
		die("waitpid");
	printf("child exit %d\n", WIFEXITED(st) ? WEXITSTATUS(st) : -1);
	return NULL;
}

static void *execing_thread(void *arg)
{
	(void)arg;
	fflush(stdout);
	execl("/bin/echo", "echo", "exec'd from a thread", (char *)NULL);
	die("execl");
	return NULL;
}

static int mode_from_thread(long n, void *(*fn)(void *))
{
	pthread_t *t = calloc((size_t)n + 1, sizeof *t);
	if (!t)
		die("calloc");
	for (long i = 0; i < n; i++)
		xcreate(&t[i], churn_until_stopped, (void *)(uintptr_t)i);
	xcreate(&t[n], fn, NULL);
	pthread_join(t[n], NULL);
	__atomic_store_n(&stop_churn, 1, __ATOMIC_RELEASE);
	for (long i = 0; i < n; i++)
		pthread_join(t[i], NULL);
	free(t);
	printf("from a thread: done\n");
	return 0;
}

/* ---- a library with threads of its own ------------------------------- */

static int mode_dlopen(const char *lib, long n)
{
	for (int round = 0; round < 3; round++) {
		void *h = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
		long (*run)(long, void (*)(void));
		if (!h) {
			fprintf(stderr, "thr_torture: dlopen: %s\n", dlerror());
			return 2;
		}
		run = (long (*)(long, void (*)(void)))dlsym(h, "thrlib_run");
		if (!run) {
			fprintf(stderr, "thr_torture: dlsym: %s\n", dlerror());
			return 2;
		}
		printf("dlopen round %d: the library's threads made %ld\n", round, run(n, mark_once));
		if (dlclose(h) != 0) {
			fprintf(stderr, "thr_torture: dlclose: %s\n", dlerror());
			return 2;
		}
	}
	printf("dlopen: marked=%ld\n", marked);
	return 0;
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "";
	long a = argc > 2 ? strtol(argv[2], NULL, 10) : 0;
	long b = argc > 3 ? strtol(argv[3], NULL, 10) : 0;
	stats_fn = (memtrace_read_stats_fn *)dlsym(RTLD_DEFAULT, "memtrace_read_stats");
	if (stats_fn) {
		/* The figures are ours only if the shim's malloc is the one we
		 * call (not another allocator preloaded ahead of it). */
		Dl_info im, is;
		void *m = dlsym(RTLD_DEFAULT, "malloc");
		if (!m || !dladdr(m, &im) || !dladdr((void *)stats_fn, &is) ||
		    im.dli_fbase != is.dli_fbase)
			stats_fn = NULL;
	}
	setvbuf(stdout, NULL, _IOLBF, 0); /* fork and exec: nothing printed twice */
	if (!strcmp(mode, "concurrent") && a > 0)
		return mode_concurrent(a);
	if (!strcmp(mode, "noalloc") && a > 0)
		return mode_noalloc(a);
	if (!strcmp(mode, "waves") && a > 0 && b > 0)
		return mode_waves(a, b);
	if (!strcmp(mode, "detached") && a > 0)
		return mode_detached(a);
	if (!strcmp(mode, "mainexit") && a > 0)
		return mode_mainexit(a);
	if (!strcmp(mode, "exitbusy") && a > 0)
		return mode_exitbusy(a);
	if (!strcmp(mode, "timer") && a > 0)
		return mode_timer(a);
	if (!strcmp(mode, "aio") && a > 0)
		return mode_aio(a);
	if (!strcmp(mode, "forkthread") && a >= 0 && argc > 2)
		return mode_from_thread(a, forking_thread);
	if (!strcmp(mode, "execthread") && a >= 0 && argc > 2)
		return mode_from_thread(a, execing_thread);
	if (!strcmp(mode, "dlopen") && argc > 3)
		return mode_dlopen(argv[2], b);
	fprintf(stderr, "usage: thr_torture MODE ARGS (see the source)\n");
	return 2;
}
