/* alloc_threads.c: 8 threads doing random malloc/free, all freed at the
 * end.  Prints (write(2)) the exact number of malloc and free calls the
 * threads made and the figures read through memtrace_read_stats (found
 * with dlsym) before the threads start their work and after they finish,
 * so a test can check that no update was lost.
 */
#include <dlfcn.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "memtrace.h"

#define THREADS 8
#define OPS 50000
#define SLOTS 64

static pthread_barrier_t start, go, done, leave;
static uint64_t mallocs[THREADS], frees[THREADS];

static void *work(void *arg)
{
	unsigned id = (unsigned)(uintptr_t)arg, seed = id * 2654435761u + 1;
	void *slot[SLOTS] = { 0 };
	pthread_barrier_wait(&start);
	pthread_barrier_wait(&go);
	for (int i = 0; i < OPS; i++) {
		unsigned r = rand_r(&seed), k = r % SLOTS;
		if (slot[k]) {
			free(slot[k]);
			slot[k] = NULL;
			frees[id]++;
		} else {
			slot[k] = malloc(1 + (r >> 8) % 4000);
			mallocs[id]++;
		}
	}
	for (int k = 0; k < SLOTS; k++)
		if (slot[k]) {
			free(slot[k]);
			frees[id]++;
		}
	pthread_barrier_wait(&done);
	/* Thread exit frees too (tcache, TLS): not before main has read. */
	pthread_barrier_wait(&leave);
	return NULL;
}

int main(void)
{
	memtrace_read_stats_fn *rd = (memtrace_read_stats_fn *)dlsym(RTLD_DEFAULT,
								       "memtrace_read_stats");
	struct memtrace_stats before = { 0 }, after = { 0 };
	pthread_t t[THREADS];
	uint64_t m = 0, f = 0;
	char buf[512];
	int len;

	pthread_barrier_init(&start, NULL, THREADS + 1);
	pthread_barrier_init(&go, NULL, THREADS + 1);
	pthread_barrier_init(&done, NULL, THREADS + 1);
	pthread_barrier_init(&leave, NULL, THREADS + 1);
	for (int i = 0; i < THREADS; i++)
		if (pthread_create(&t[i], NULL, work, (void *)(uintptr_t)i) != 0)
			return 2;
	pthread_barrier_wait(&start); /* every thread exists and waits at `go` */
	if (rd)
		rd(&before, sizeof before);
	pthread_barrier_wait(&go);
	pthread_barrier_wait(&done);
	if (rd)
		rd(&after, sizeof after);
	pthread_barrier_wait(&leave);
	for (int i = 0; i < THREADS; i++) {
		m += mallocs[i];
		f += frees[i];
	}
	len = snprintf(buf, sizeof buf,
		       "mallocs=%llu\nfrees=%llu\nhave_api=%d\n"
		       "delta_malloc_family=%llu\ndelta_free=%llu\n"
		       "heap_before=%llu\nheap_after=%llu\n",
		       (unsigned long long)m, (unsigned long long)f, rd != NULL,
		       (unsigned long long)(after.calls_malloc_family - before.calls_malloc_family),
		       (unsigned long long)(after.calls_free - before.calls_free),
		       (unsigned long long)before.heap_current,
		       (unsigned long long)after.heap_current);
	if (write(1, buf, (size_t)len) != len)
		return 1;
	for (int i = 0; i < THREADS; i++)
		pthread_join(t[i], NULL);
	return 0;
}
