/* lines_sites.c: call sites at known source lines, for the file:line
 * naming of sampled frames (test_memsup_lines.c).  Built with -g -O2.
 *
 * Usage: lines_sites [HOLD_MS]          (default 300)
 *
 * Holds five blocks at once, each from one call site:
 *   site_big     8 MB   malloc called in site_big itself
 *   site_mid     4 MB   calloc in site_mid
 *   site_small   2 MB   realloc of a small block in site_small
 *   inl_alloc    3 MB   malloc in a static always_inline function, inlined
 *                       into site_inl (so one return address, two frames)
 *   thread_alloc 1 MB   malloc in a thread started by pthread_create (its
 *                       stack runs through libc's start_thread)
 * and prints the truth, one line per site, on stdout:
 *   site=NAME line=L bytes=B [caller=NAME caller_line=L]
 * with L the line of the allocating call (__LINE__ on the same line) and,
 * for the inlined site, the line in site_inl that the inlined function was
 * called from.  Then it holds for HOLD_MS milliseconds (memsup's samples),
 * frees everything and exits 0 (2 on a failure).
 */
#include <malloc.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define MB 1000000u

static void *volatile held[5];
static int line_big, line_mid, line_small, line_inl, line_inl_call, line_thread;

__attribute__((noinline)) static void site_big(void)
{
	held[0] = malloc(8 * MB); line_big = __LINE__;
}

__attribute__((noinline)) static void site_mid(void)
{
	held[1] = calloc(1, 4 * MB); line_mid = __LINE__;
}

__attribute__((noinline)) static void site_small(void)
{
	void *p = malloc(64);
	held[2] = realloc(p, 2 * MB); line_small = __LINE__;
}

static inline __attribute__((always_inline)) void *inl_alloc(size_t n)
{
	void *p = malloc(n); line_inl = __LINE__;
	return p;
}

__attribute__((noinline)) static void site_inl(void)
{
	held[3] = inl_alloc(3 * MB); line_inl_call = __LINE__;
}

__attribute__((noinline)) static void *thread_alloc(void *arg)
{
	(void)arg;
	held[4] = malloc(1 * MB); line_thread = __LINE__;
	return NULL;
}

static size_t usable(int i)
{
	return malloc_usable_size(held[i]);
}

int main(int argc, char **argv)
{
	long hold_ms = argc > 1 ? strtol(argv[1], NULL, 10) : 300;
	pthread_t t;
	site_big();
	site_mid();
	site_small();
	site_inl();
	if (pthread_create(&t, NULL, thread_alloc, NULL) != 0 || pthread_join(t, NULL) != 0)
		return 2;
	for (int i = 0; i < 5; i++)
		if (!held[i])
			return 2;
	printf("site=site_big line=%d bytes=%zu\n", line_big, usable(0));
	printf("site=site_mid line=%d bytes=%zu\n", line_mid, usable(1));
	printf("site=site_small line=%d bytes=%zu\n", line_small, usable(2));
	printf("site=inl_alloc line=%d bytes=%zu caller=site_inl caller_line=%d\n", line_inl,
	       usable(3), line_inl_call);
	printf("site=thread_alloc line=%d bytes=%zu\n", line_thread, usable(4));
	fflush(stdout);
	struct timespec ts = { hold_ms / 1000, hold_ms % 1000 * 1000000 };
	nanosleep(&ts, NULL);
	for (int i = 0; i < 5; i++)
		free(held[i]);
	return 0;
}
