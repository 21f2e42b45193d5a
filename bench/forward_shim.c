/* forward_shim.c: the floor of interposing on malloc (bench/shim_overhead.py,
 * variant "forward").  An LD_PRELOAD library whose malloc, calloc, realloc
 * and free only call the C library's through dlsym(RTLD_NEXT): what any
 * preloaded allocator tool pays before it counts anything.  Side by side
 * with libmemtrace it shows how much of the shim's cost is its accounting
 * rather than the interposition.  Not installed; shim_overhead.py builds it
 * with the system's cc when it runs this variant.
 *
 * dlsym may allocate before the real functions are known: those few blocks
 * come from a static arena that free() ignores.  Single-threaded start-up
 * only (the constructor runs before any thread of the program).
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stddef.h>
#include <string.h>

static void *(*real_malloc)(size_t);
static void (*real_free)(void *);
static void *(*real_calloc)(size_t, size_t);
static void *(*real_realloc)(void *, size_t);

static _Alignas(16) char arena[65536];
static size_t arena_used;

static void *arena_alloc(size_t n)
{
	size_t need = (n + 15) & ~(size_t)15;
	if (need > sizeof arena - arena_used)
		return NULL;
	void *p = arena + arena_used;
	arena_used += need;
	return p;
}

static int arena_owns(const void *p)
{
	return (const char *)p >= arena && (const char *)p < arena + sizeof arena;
}

__attribute__((constructor)) static void forward_init(void)
{
	real_malloc = (void *(*)(size_t))dlsym(RTLD_NEXT, "malloc");
	real_free = (void (*)(void *))dlsym(RTLD_NEXT, "free");
	real_calloc = (void *(*)(size_t, size_t))dlsym(RTLD_NEXT, "calloc");
	real_realloc = (void *(*)(void *, size_t))dlsym(RTLD_NEXT, "realloc");
}

void *malloc(size_t n)
{
	return real_malloc ? real_malloc(n) : arena_alloc(n);
}

void free(void *p)
{
	if (!arena_owns(p) && p)
		real_free(p);
}

void *calloc(size_t n, size_t m)
{
	if (real_calloc)
		return real_calloc(n, m);
	if (m && n > (size_t)-1 / m)
		return NULL;
	return arena_alloc(n * m); /* static: already zero */
}

void *realloc(void *p, size_t n)
{
	if (arena_owns(p)) { /* a start-up block moves to the real heap */
		void *q = malloc(n);
		if (q)
			memcpy(q, p, n < (size_t)(arena + sizeof arena - (char *)p) ?
				     n : (size_t)(arena + sizeof arena - (char *)p));
		return q;
	}
	return real_realloc(p, n);
}
