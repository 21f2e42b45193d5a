/* thr_lib.c: a library with threads of its own, for thr_torture's dlopen
 * mode.  Its constructor starts a thread that allocates until the
 * destructor stops and joins it (so dlclose never unmaps code a thread is
 * running); thrlib_run(n, mark) starts n threads that each call mark() five
 * times and allocate on their own, joins them, and returns how many marks
 * they made. */
#include <pthread.h>
#include <stdlib.h>
#include <time.h>

long thrlib_run(long n, void (*mark)(void)); /* thr_torture finds it by dlsym */

static pthread_t thrlib_ctor_thread;
static int thrlib_ctor_started, thrlib_stop;

static void *thrlib_background(void *arg)
{
	(void)arg;
	while (!__atomic_load_n(&thrlib_stop, __ATOMIC_ACQUIRE)) {
		struct timespec ts = { 0, 200 * 1000 };
		volatile char *p = malloc(100);
		if (p)
			p[0] = 1;
		free((void *)p);
		nanosleep(&ts, NULL);
	}
	return NULL;
}

__attribute__((constructor)) static void thrlib_start(void)
{
	thrlib_ctor_started = pthread_create(&thrlib_ctor_thread, NULL, thrlib_background, NULL) == 0;
}

__attribute__((destructor)) static void thrlib_end(void)
{
	__atomic_store_n(&thrlib_stop, 1, __ATOMIC_RELEASE);
	if (thrlib_ctor_started)
		pthread_join(thrlib_ctor_thread, NULL);
}

static void *thrlib_worker(void *arg)
{
	void (*mark)(void) = *(void (**)(void))arg;
	for (int i = 0; i < 5; i++) {
		volatile char *p = malloc(200 + (size_t)i * 50);
		if (p)
			p[0] = 1;
		mark();
		free((void *)p);
	}
	return NULL;
}

long thrlib_run(long n, void (*mark)(void))
{
	pthread_t t[64];
	long made = 0;
	if (n > 64)
		n = 64;
	for (long i = 0; i < n; i++)
		if (pthread_create(&t[i], NULL, thrlib_worker, &mark) != 0)
			return -1;
	for (long i = 0; i < n; i++) {
		pthread_join(t[i], NULL);
		made += 5;
	}
	return made;
}
