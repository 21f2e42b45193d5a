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
#include <mqueue.h>
#include <netdb.h>
#include <signal.h>
#include <spawn.h>
#include <time.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>
#include <threads.h>

#include "base/shim.h"

struct boot_real {
	void *(*malloc)(size_t);
	void (*free)(void *);
	void *(*calloc)(size_t, size_t);
	void *(*realloc)(void *, size_t);
	int (*posix_memalign)(void **, size_t, size_t);
	void *(*aligned_alloc)(size_t, size_t);
	void *(*memalign)(size_t, size_t);
	void *(*valloc)(size_t);
	void *(*pvalloc)(size_t);
	size_t (*usable)(void *); /* malloc_usable_size, or a stub returning 0 */
	void *(*mmap)(void *, size_t, int, int, int, off_t);
	void *(*mmap64)(void *, size_t, int, int, int, off_t);
	int (*munmap)(void *, size_t);
	void *(*mremap)(void *, size_t, size_t, int, ...);
	int (*execve)(const char *, char *const[], char *const[]);
	int (*execvpe)(const char *, char *const[], char *const[]);
	int (*fexecve)(int, char *const[], char *const[]);
	int (*execveat)(int, const char *, char *const[], char *const[], int);
	int (*posix_spawn)(pid_t *, const char *, const posix_spawn_file_actions_t *,
			   const posix_spawnattr_t *, char *const[], char *const[]);
	int (*posix_spawnp)(pid_t *, const char *, const posix_spawn_file_actions_t *,
			    const posix_spawnattr_t *, char *const[], char *const[]);
	int (*system)(const char *);
	FILE *(*popen)(const char *, const char *);
	int (*pclose)(FILE *);
	int (*pthread_create)(void *, const void *, void *(*)(void *), void *);
	int (*thrd_create)(thrd_t *, thrd_start_t, void *);
	/* glibc starts threads of its own inside these, past pthread_create */
	int (*timer_create)(clockid_t, struct sigevent *, timer_t *);
	int (*mq_notify)(mqd_t, const struct sigevent *);
	int (*aio_read)(struct aiocb *);
	int (*aio_write)(struct aiocb *);
	int (*aio_fsync)(int, struct aiocb *);
	int (*lio_listio)(int, struct aiocb *const[], int, struct sigevent *);
	int (*aio_read64)(struct aiocb64 *);
	int (*aio_write64)(struct aiocb64 *);
	int (*aio_fsync64)(int, struct aiocb64 *);
	int (*lio_listio64)(int, struct aiocb64 *const[], int, struct sigevent *);
	int (*getaddrinfo_a)(int, struct gaicb *[], int, struct sigevent *);
	int (*close)(int);
	int (*fclose)(FILE *);
	void (*exit_)(int); /* _exit */
	void (*exit_upper)(int); /* _Exit */
	void (*quick_exit)(int);
};

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
