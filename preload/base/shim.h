/* shim.h: what every module of libmemtrace.so shares: export/visibility
 * macros, branch hints and the per-thread recursion guard.
 *
 * Everything in the shim is built with -fvisibility=hidden; only MT_EXPORT
 * symbols (the interposers in hooks.c and the memtrace.h API) leave the .so.
 */
#ifndef MEMTRACE_SHIM_H
#define MEMTRACE_SHIM_H

#define MT_EXPORT __attribute__((visibility("default")))
/* On every extern declaration of the shim's own variables.  -fvisibility=hidden
 * marks only definitions: a plain `extern` may live in another object, so
 * GCC reaches it through the GOT (a load of its address, then the load of
 * the value) in every hook; declared hidden it is one %rip-relative access. */
#define MT_HIDDEN __attribute__((visibility("hidden")))
/* On the shim's large zero-filled tables: placed in .lbss, after .bss, so
 * that the small variables every process writes at its start share a few
 * pages instead of each sitting on its own page between two tables.  The
 * first write to a page is a page fault, 10-20 us on the machines we
 * measure, paid by every image of a traced tree (bench/RESULTS.md). */
#define MT_TABLE __attribute__((section(".lbss")))
#define MT_LIKELY(x) __builtin_expect(!!(x), 1)
#define MT_UNLIKELY(x) __builtin_expect(!!(x), 0)

/* Per-thread recursion guard, initial-exec TLS (-ftls-model=initial-exec in
 * Makefile.am) so that touching it never calls __tls_get_addr, which may
 * allocate.  Accessed through volatile: the compiler may otherwise sink or
 * drop a plain "guard = 1; call(); guard = 0;" store pair around a call it
 * believes cannot observe the variable. */
extern MT_HIDDEN __thread int shim_guard;

/* Returns 1 if this thread was not inside the shim (and now is), 0 if it
 * already was: a signal handler or dlsym re-entering us. */
static inline int shim_guard_enter(void)
{
	volatile int *g = &shim_guard;
	if (*g)
		return 0;
	*g = 1;
	__asm__ volatile("" ::: "memory");
	return 1;
}

static inline void shim_guard_leave(void)
{
	__asm__ volatile("" ::: "memory");
	*(volatile int *)&shim_guard = 0;
}

#endif /* MEMTRACE_SHIM_H */
