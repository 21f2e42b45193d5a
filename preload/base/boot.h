/* boot.h: resolving the real functions behind the hooks.
 *
 * Every hook calls boot_ensure() (one predictable branch once resolved) and
 * the constructor calls it too, because other libraries' constructors may
 * allocate before ours runs.  dlsym may itself allocate; while resolution is
 * in progress on this thread, allocations are served from a static bootstrap
 * arena that free() ignores (boot_owns).  If the real malloc cannot be
 * resolved the shim writes one line to stderr and aborts: nothing can work.
 */
#ifndef MEMTRACE_BOOT_H
#define MEMTRACE_BOOT_H

#include <aio.h>
#include <malloc.h>
#include <mqueue.h>
#include <netdb.h>
#include <signal.h>
#include <pthread.h>
#include <spawn.h>
#include <stdlib.h>
#include <time.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>
#include <sys/mman.h>
#include <threads.h>
#include <unistd.h>

#include "base/shim.h"

/* Every real function the shim calls, named once: X(field, symbol, symbol), in
 * the order of struct boot_real's fields.  A field's type is the C
 * library's own declaration of the symbol (__typeof__), which the hook
 * that interposes it (hooks.c) is checked against by the compiler as well,
 * so no interposed signature is written out twice.  BOOT_REAL_NEEDED are
 * the ones the shim cannot run without (boot_die). */
#define BOOT_REAL_NEEDED(X)                                                                    \
	X(malloc, malloc, void *(size_t))                                                      \
	X(free, free, void(void *))                                                            \
	X(calloc, calloc, void *(size_t, size_t))                                              \
	X(realloc, realloc, void *(void *, size_t))
#define BOOT_REAL_LIST(X)                                                                      \
	BOOT_REAL_NEEDED(X)                                                                    \
	X(posix_memalign, posix_memalign, int(void **, size_t, size_t))                        \
	X(aligned_alloc, aligned_alloc, void *(size_t, size_t))                                \
	X(memalign, memalign, void *(size_t, size_t))                                          \
	X(valloc, valloc, void *(size_t))                                                      \
	X(pvalloc, pvalloc, void *(size_t))                                                    \
	X(usable, malloc_usable_size, size_t(void *)) /* or a stub returning 0 */              \
	X(mmap, mmap, mmap)                                                                    \
	X(mmap64, mmap64, mmap64)                                                              \
	X(munmap, munmap, munmap)                                                              \
	X(mremap, mremap, mremap)                                                              \
	X(execve, execve, execve)                                                              \
	X(execvpe, execvpe, execvpe)                                                           \
	X(fexecve, fexecve, fexecve)                                                           \
	X(execveat, execveat, execveat)                                                        \
	X(posix_spawn, posix_spawn, posix_spawn)                                               \
	X(posix_spawnp, posix_spawnp, posix_spawnp)                                            \
	X(system, system, system)                                                              \
	X(popen, popen, popen)                                                                 \
	X(pclose, pclose, pclose)                                                              \
	X(pthread_create, pthread_create, pthread_create)                                      \
	X(thrd_create, thrd_create, thrd_create)                                               \
	/* glibc starts threads of its own inside these, past pthread_create */                \
	X(timer_create, timer_create, timer_create)                                            \
	X(mq_notify, mq_notify, mq_notify)                                                     \
	X(aio_read, aio_read, aio_read)                                                        \
	X(aio_write, aio_write, aio_write)                                                     \
	X(aio_fsync, aio_fsync, aio_fsync)                                                     \
	X(lio_listio, lio_listio, lio_listio)                                                  \
	X(aio_read64, aio_read64, aio_read64)                                                  \
	X(aio_write64, aio_write64, aio_write64)                                               \
	X(aio_fsync64, aio_fsync64, aio_fsync64)                                               \
	X(lio_listio64, lio_listio64, lio_listio64)                                            \
	X(getaddrinfo_a, getaddrinfo_a, getaddrinfo_a)                                         \
	X(close, close, close)                                                                 \
	X(fclose, fclose, fclose)                                                              \
	X(exit_, _exit, _exit)                                                                 \
	X(exit_upper, _Exit, _Exit)                                                            \
	X(quick_exit, quick_exit, quick_exit)

#define BOOT_REAL_FIELD(field, sym, type) __typeof__(type) *field;
struct boot_real {
	BOOT_REAL_LIST(BOOT_REAL_FIELD)
};
#undef BOOT_REAL_FIELD

extern MT_HIDDEN struct boot_real real;
extern MT_HIDDEN int boot_ready;

/* Resolves everything once.  Returns 1 when the real functions are usable,
 * 0 when this thread is inside the resolution (use the arena). */
int boot_init(void);

static inline int boot_ensure(void)
{
	if (MT_LIKELY(__atomic_load_n(&boot_ready, __ATOMIC_ACQUIRE)))
		return 1;
	return boot_init();
}

/* While the shim changes the program's environment (the constructor's
 * setenv calls), the allocations they make come from the bootstrap arena:
 * the shim's own blocks are never counted as the program's, and if the
 * program later reallocates one (glibc's environ array), it moves into the
 * real heap and is counted from then on, like any arena block.  Calls the
 * constructor makes, with the guard held; a hook another thread calls
 * meanwhile waits, as during the first resolution. */
void boot_arena_begin(void);
void boot_arena_end(void);

/* The bootstrap arena: 16-byte aligned bump allocation, never reused. */
#define BOOT_ARENA_BYTES (64u * 1024u)
extern MT_HIDDEN char boot_arena[BOOT_ARENA_BYTES];
void *boot_alloc(size_t n, size_t align);
static inline int boot_owns(const void *p)
{
	return (uintptr_t)p - (uintptr_t)boot_arena < BOOT_ARENA_BYTES;
}

/* malloc_usable_size of a live block.  glibc's own function is slow for
 * what it does (it also reads the *next* chunk's header to check the block
 * is in use, which a live block always is), so when the next allocator is
 * glibc's and a start-up self-check over plain and aligned heap blocks
 * shows the chunk header gives exactly what malloc_usable_size says, the
 * hooks read the header themselves: size & ~7, less 8 (16 for mmapped
 * chunks; see boot_check_glibc for why no mmapped probe).  Any other
 * allocator: its own malloc_usable_size. */
extern MT_HIDDEN int boot_glibc_chunks;
static inline size_t boot_chunk_usable(const void *p)
{
	size_t h = ((const size_t *)p)[-1];
	/* (h & 2) is IS_MMAPPED: 16 bytes of overhead instead of 8.  Written
	 * as arithmetic, not a conditional, which GCC turned into a
	 * compare-sbb-and-add chain on every malloc and free. */
	return (h & ~(size_t)7) - 8 - ((h & 2) << 2);
}

/* What boot learnt of the program's heap, as the record's flags
 * (record.h): MT_FLAG_HEAP_UNSIZED (no malloc_usable_size beside the real
 * malloc), MT_FLAG_HEAP_FOREIGN (the program's malloc is not the C
 * library's).  Boot only says so; the image's start (image.c) puts them
 * in the record. */
extern MT_HIDDEN unsigned boot_heap_flags;

/* The probe behind boot_glibc_chunks runs at the program's first
 * allocation, not at start: a program that never allocates (a `true`)
 * then has no heap made for it, and one that does touches the heap's
 * first page, where the probe's blocks stay, with that allocation
 * anyway (bench/RESULTS.md, section 11).  Every allocating hook calls
 * boot_heap_ensure before the real call, so the probe's blocks come
 * first in the heap, as when it ran at start; so does every hook that
 * makes the process multithreaded, so that it runs while the counters
 * are still single-threaded. */
extern MT_HIDDEN int boot_probe_due;
void boot_probe_heap(void);
static inline void boot_heap_ensure(void)
{
	if (MT_UNLIKELY(__atomic_load_n(&boot_probe_due, __ATOMIC_RELAXED) == 1))
		boot_probe_heap();
}

static inline size_t boot_usable(void *p)
{
#if defined(__x86_64__)
	if (MT_LIKELY(boot_glibc_chunks))
		return boot_chunk_usable(p);
#endif
	return real.usable(p);
}
/* Bytes available from p to the end of the arena (for realloc). */
size_t boot_span(const void *p);

#endif /* MEMTRACE_BOOT_H */
