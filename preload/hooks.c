/* hooks.c: the interposers, at the top of the shim's layers (preload/LAYERS):
 * each resolves lazily (boot_ensure), calls the real function and tells
 * the modules below, which never name it back.  malloc and free reach
 * their path through the router hooks_start registers with route.h; the
 * switch to threads is ordered here (sampling count, counts, paths), the
 * mapping hooks' bodies are track.c's beside it.
 *
 * Heap figures are malloc_usable_size() of the real allocator, taken at
 * allocation and again at free (before the block is released).
 *
 * Sampling (sample.h, sites.h): every allocation hook hands the new block
 * to sample_note_alloc before counting it, with the hook's own return
 * address (the program's call site); every free hands the block to
 * sites_note_free before the real free.
 *
 * vfork is not wrapped: a C wrapper would return into a frame the child
 * may already have torn down.  The vfork child shares our memory, so the
 * exec hooks recognise it (getpid() != the record's pid), leave the parent's
 * record alone and hand on relation VFORK; _exit does the same check.
 */
#include <aio.h>
#include <errno.h>
#include <malloc.h>
#include <mqueue.h>
#include <netdb.h>
#include <pthread.h>
#include <spawn.h>
#include <stdio.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "base/boot.h"
#include "base/errfd.h"
#include "base/route.h"
#include "base/sys.h"
#include "core/counters.h"
#include "image.h"
#include "life.h"
#include "record.h"
#include "record/lineage.h"
#include "report/report.h"
#include "sampling/callstack.h"
#include "sampling/sample.h"
#include "sampling/sites.h"
#include "track.h"

extern char **environ;

/* ---- malloc family ------------------------------------------------------ */

/* The record the counting hooks update: its home at a fixed address
 * (counters.h), which counters_rec always points at in the shim, reached
 * %rip-relative without a load of the pointer. */
#define HOOKS_REC (&counters_home.rec)

/* The program's call site of the hook that expands this. */
#define HOOKS_RA ((uintptr_t)__builtin_return_address(0))

/* The shortest paths read glibc's chunk header themselves (boot.h,
 * boot_chunk_usable) and send the rare mmapped chunk (IS_MMAPPED, 16
 * bytes of overhead instead of 8) out of line: then a block's usable size
 * is two instructions from its header, not five. */
#define HOOKS_CHUNK_MMAPPED 2u
static inline size_t hooks_chunk_head(const void *p)
{
	return ((const size_t *)p)[-1];
}

static inline size_t hooks_chunk_usable(size_t h)
{
	return (h & ~(size_t)7) - 8;
}

/* Bootstrap-arena blocks (boot.h) carry a header word of their own in
 * front, with glibc's IS_MMAPPED bit set: the shortest free paths, which
 * read the header anyway, send them out of line with the mmapped chunks,
 * where boot_owns() tells them apart, and need no range test of their
 * own (five instructions a free).  The header sits in the block's own
 * reservation, `align` bytes below it, so no neighbour can overwrite it. */
/* Size 16 as well: glibc's malloc_usable_size of such a block (the
 * program may ask; it is not interposed) is then 16 - 16 = 0, as it was
 * for the zeroes in front of an arena block before. */
#define HOOKS_ARENA_HEAD ((size_t)16 | HOOKS_CHUNK_MMAPPED)
static void *hooks_boot_alloc(size_t n, size_t align)
{
	char *q;
	if (align < 16)
		align = 16;
	/* at least one byte past the header, so the block is inside the
	 * arena even when it is empty and ends it (boot_owns) */
	if (n > SIZE_MAX - align - 1 || !(q = boot_alloc((n ? n : 1) + align, align)))
		return NULL;
	q += align;
	((size_t *)(void *)q)[-1] = HOOKS_ARENA_HEAD;
	return q;
}

/* malloc and free have two shortest paths that a malloc/free loop stays
 * on: one thread (ROUTE_ST: plain counter updates in the record), and
 * many (ROUTE_MT: the calling thread's shard, when it has one).
 * Both need the real functions resolved and block sizes from glibc chunk
 * headers.  Everything else goes out of line.
 *
 * The exported malloc and free only jump through a pointer to the path
 * of the current mode (hooks_route, the router hooks_start registers with
 * route.h, called whenever the mode changes), so no call tests the mode,
 * and each path is
 * specialised for it.  Because they jump, the path's own return address
 * is the program's call site (HOOKS_RA). */

/* malloc off the shortest paths.  ra is malloc's call site. */
static __attribute__((noinline)) void *hooks_malloc_other(size_t n, uintptr_t ra)
{
	void *p;
	size_t u;
	if (MT_UNLIKELY(!boot_ensure()))
		return hooks_boot_alloc(n, 16);
	boot_heap_ensure();
	p = real.malloc(n);
	u = p ? boot_usable(p) : 0;
	if (p)
		sample_note_alloc(p, u, ra);
	counters_note_alloc(MT_CALL_MALLOC, n, u);
	return p;
}

static void *hooks_malloc_slow(size_t n)
{
	return hooks_malloc_other(n, HOOKS_RA);
}

/* sample_take from a hook that the exported function reached by jumps
 * alone, its frame's call frame address the program's stack pointer
 * after the call (callstack_tls_from; callstack.c checks that ra lies
 * below it before it believes it).  Always inlined: the frame must be the
 * hook's own. */
#define hooks_sample_take(p, u, ra)                                                  \
	do {                                                                         \
		callstack_tls_from = (uintptr_t)__builtin_dwarf_cfa();               \
		sample_take((p), (u), (ra));                                         \
		callstack_tls_from = 0;                                              \
	} while (0)

/* The rest of malloc for a block picked for sampling (sample.h): out of
 * line, so that malloc keeps only the block across its calls. */
static __attribute__((noinline, cold)) void *hooks_malloc_sampled(void *p, size_t u, uintptr_t ra)
{
	hooks_sample_take(p, u, ra);
	counters_grow_st(HOOKS_REC, u);
	return p;
}

static __attribute__((noinline, cold)) void *hooks_malloc_sampled_mt(void *p, size_t u,
								      uintptr_t ra)
{
	hooks_sample_take(p, u, ra);
	counters_grow_shard(shards_tls_mine, u);
	return p;
}

/* The end of a threaded malloc whose bytes left the shard's room or
 * whose shard is due a flush (the bytes are in the delta already):
 * reached by a tail call, so that the threaded malloc keeps nothing but
 * the call site across its one call. */
static __attribute__((noinline, cold)) void *hooks_malloc_shard_slow(void *p, struct shard *sh)
{
	counters_shard_settle(sh, 1);
	return p;
}

/* The end of a threaded malloc or calloc (of `kind`) that returned an
 * mmapped chunk. */
static __attribute__((noinline, cold)) void *hooks_malloc_mt_mmapped(void *p, uintptr_t ra,
								      unsigned kind)
{
	size_t u = boot_chunk_usable(p);
	struct shard *sh;
	sample_note_alloc(p, u, ra);
	sh = shards_tls_mine;
	counters_bump((uint64_t *)&sh->heap_delta, (uint64_t)u);
	if (MT_UNLIKELY(sh->heap_delta > sh->heap_room) || counters_flush_due(sh, kind))
		counters_shard_settle(sh, 1);
	return p;
}

/* The end of a single-threaded malloc that returned an mmapped chunk. */
static __attribute__((noinline, cold)) void *hooks_malloc_st_mmapped(void *p, uintptr_t ra)
{
	size_t u = boot_chunk_usable(p);
	sample_note_alloc(p, u, ra);
	counters_grow_st(HOOKS_REC, u);
	return p;
}

/* The end of a single-threaded malloc whose block may make a new peak:
 * reached by a tail call, so that nothing lives across the real call. */
static __attribute__((noinline, cold)) void *hooks_malloc_st_peak(void *p, uint64_t cur)
{
	counters_peaks_st(HOOKS_REC, cur);
	return p;
}

/* malloc while single-threaded.  The request is counted before the real
 * call (nothing reads the request counts between the two), so that n need
 * not live across it; the block is counted after it with tail calls only
 * (counters_grow_st spelt out), so that p need not live across a call
 * either and the frame is the stack's alignment alone. */
static void *hooks_malloc_st(size_t n)
{
	void *p;
	size_t h, u;
	uint64_t cur;
	n = counters_request_st(HOOKS_REC, MT_CALL_MALLOC, n);
	p = real.malloc(n);
	if (MT_LIKELY(p != NULL)) {
		h = hooks_chunk_head(p);
		if (MT_UNLIKELY(h & HOOKS_CHUNK_MMAPPED))
			return hooks_malloc_st_mmapped(p, HOOKS_RA);
		u = hooks_chunk_usable(h);
		if (MT_UNLIKELY(sample_count_st(u)))
			return hooks_malloc_sampled(p, u, HOOKS_RA);
		cur = counters_add_st(&HOOKS_REC->heap_current, u);
		if (MT_UNLIKELY(cur > counters_peak_limit))
			return hooks_malloc_st_peak(p, cur);
	}
	return p;
}

/* malloc while multithreaded, on the thread's shard.  Only the call site
 * lives across the real call: the shard's pointer is read again from TLS
 * (two instructions, where keeping it would cost a saved register's
 * three), and everything that needs a call after it is a tail call. */
static void *hooks_malloc_mt(size_t n)
{
	struct shard *sh = shards_tls_mine;
	void *p;
	size_t h, u;
	if (MT_UNLIKELY(sh == NULL))
		return hooks_malloc_other(n, HOOKS_RA);
	n = counters_request_shard(sh, MT_CALL_MALLOC, n);
	p = real.malloc(n);
	if (MT_UNLIKELY(p == NULL))
		return p; /* a flush due waits for the next call */
	h = hooks_chunk_head(p);
	if (MT_UNLIKELY(h & HOOKS_CHUNK_MMAPPED))
		return hooks_malloc_mt_mmapped(p, HOOKS_RA, MT_CALL_MALLOC);
	u = hooks_chunk_usable(h);
	if (MT_UNLIKELY(sample_count(u)))
		return hooks_malloc_sampled_mt(p, u, HOOKS_RA);
	sh = shards_tls_mine; /* the same shard: only this thread changes it */
	/* counted first, then one compare of the stored delta with the room
	 * (a handler of this thread that counts in between tests its own) */
	counters_bump((uint64_t *)&sh->heap_delta, (uint64_t)u);
	if (MT_UNLIKELY(sh->heap_delta > sh->heap_room) ||
	    counters_flush_due(sh, MT_CALL_MALLOC))
		return hooks_malloc_shard_slow(p, sh);
	return p;
}

/* The end of a free whose block the sampled-block filter could not rule
 * out: out of line, so that the fast paths below make no call but the
 * tail call to the real free and need no stack frame. */
static __attribute__((noinline, cold)) void hooks_free_maybe_sampled(void *p)
{
	sites_forget(p);
	real.free(p);
}

/* free off the shortest paths (and of NULL, mmapped chunks and arena
 * blocks on them). */
static __attribute__((noinline)) void hooks_free_slow(void *p)
{
	size_t u;
	if (MT_UNLIKELY(!boot_ensure()) || MT_UNLIKELY(boot_owns(p)))
		return; /* arena blocks are never reused */
	if (!p) {
		counters_note_free(0);
		return;
	}
	u = boot_usable(p);
	sites_note_free(p);
	real.free(p);
	counters_note_free(u);
}

/* free while single-threaded, with and without sampled blocks live.
 * Counted first, so the call to the real free is a tail call and neither
 * builds a stack frame. */
static void hooks_free_st_sites(void *p)
{
	size_t h;
	if (MT_UNLIKELY(p == NULL) ||
	    MT_UNLIKELY((h = hooks_chunk_head(p)) & HOOKS_CHUNK_MMAPPED)) {
		hooks_free_slow(p);
		return;
	}
	counters_free_st(HOOKS_REC, hooks_chunk_usable(h));
	if (MT_UNLIKELY(sites_maybe(p))) {
		hooks_free_maybe_sampled(p);
		return;
	}
	real.free(p);
}

static void hooks_free_st(void *p)
{
	size_t h;
	if (MT_UNLIKELY(p == NULL) ||
	    MT_UNLIKELY((h = hooks_chunk_head(p)) & HOOKS_CHUNK_MMAPPED)) {
		hooks_free_slow(p);
		return;
	}
	counters_free_st(HOOKS_REC, hooks_chunk_usable(h));
	real.free(p);
}

/* The end of a threaded free whose count is due a flush or whose delta
 * went below -COUNTERS_DELTA_MAX (both already counted). */
static __attribute__((noinline, cold)) void hooks_free_shard_slow(void *p, struct shard *sh,
								   int sites)
{
	counters_shard_settle(sh, 0);
	if (sites && sites_maybe(p)) {
		hooks_free_maybe_sampled(p);
		return;
	}
	real.free(p);
}

/* free while multithreaded, on the thread's shard: counted first (the
 * call, then the bytes), then one compare each of the stored count and
 * delta against their limits; each call is a tail call, so it builds no
 * stack frame.  A thread without a shard yet goes the slow way (it claims
 * one only when a count needs it).  A shrinking delta makes no peak, so
 * the room is not tested. */
static inline __attribute__((always_inline)) void hooks_free_mt_common(void *p, int sites)
{
	struct shard *sh;
	size_t h;
	if (MT_UNLIKELY(p == NULL) ||
	    MT_UNLIKELY((h = hooks_chunk_head(p)) & HOOKS_CHUNK_MMAPPED) ||
	    MT_UNLIKELY((sh = shards_tls_mine) == NULL)) {
		hooks_free_slow(p);
		return;
	}
	counters_bump(&sh->calls[MT_CALL_FREE], 1);
	counters_drop((uint64_t *)&sh->heap_delta, (uint64_t)hooks_chunk_usable(h));
	if (MT_UNLIKELY(counters_flush_due(sh, MT_CALL_FREE)) ||
	    MT_UNLIKELY(sh->heap_delta <= -COUNTERS_DELTA_MAX)) {
		hooks_free_shard_slow(p, sh, sites);
		return;
	}
	if (sites && MT_UNLIKELY(sites_maybe(p))) {
		hooks_free_maybe_sampled(p);
		return;
	}
	real.free(p);
}

static void hooks_free_mt_sites(void *p)
{
	hooks_free_mt_common(p, 1);
}

static void hooks_free_mt(void *p)
{
	hooks_free_mt_common(p, 0);
}

/* calloc's and realloc's paths (below), one per mode as malloc's. */
static void *hooks_calloc_st_entry(size_t n, size_t m);
static void *hooks_calloc_mt_entry(size_t n, size_t m);
static void *hooks_calloc_slow(size_t n, size_t m);
static void *hooks_realloc_st_entry(void *p, size_t n);
static void *hooks_realloc_mt_entry(void *p, size_t n);
static void *hooks_realloc_slow(void *p, size_t n);

/* Where malloc, free and realloc jump: hooks_route sets them from
 * route_mode. */
MT_HIDDEN void *(*hooks_malloc_path)(size_t) = hooks_malloc_slow;
MT_HIDDEN void (*hooks_free_path)(void *) = hooks_free_slow;
MT_HIDDEN void *(*hooks_realloc_path)(void *, size_t) = hooks_realloc_slow;
MT_HIDDEN void *(*hooks_calloc_path)(size_t, size_t) = hooks_calloc_slow;

static void hooks_route(unsigned fast)
{
	void *(*m)(size_t) = hooks_malloc_slow;
	void (*f)(void *) = hooks_free_slow;
	void *(*r)(void *, size_t) = hooks_realloc_slow;
	void *(*c)(size_t, size_t) = hooks_calloc_slow;
	if (fast & ROUTE_ST) {
		m = hooks_malloc_st;
		f = (fast & ROUTE_SITES) ? hooks_free_st_sites : hooks_free_st;
		r = hooks_realloc_st_entry;
		c = hooks_calloc_st_entry;
	} else if (fast & ROUTE_MT) {
		m = hooks_malloc_mt;
		f = (fast & ROUTE_SITES) ? hooks_free_mt_sites : hooks_free_mt;
		r = hooks_realloc_mt_entry;
		c = hooks_calloc_mt_entry;
	}
	__atomic_store_n(&hooks_calloc_path, c, __ATOMIC_RELAXED);
	__atomic_store_n(&hooks_malloc_path, m, __ATOMIC_RELAXED);
	__atomic_store_n(&hooks_free_path, f, __ATOMIC_RELAXED);
	__atomic_store_n(&hooks_realloc_path, r, __ATOMIC_RELAXED);
}

/* The router registered before every other constructor of the shim (life.c's
 * among them): it takes the paths of the mode in force at once, and of each
 * change from then on.  Allocations before it (other objects' constructors)
 * took the general paths, which are right in every mode.  No allocation. */
__attribute__((constructor(101))) static void hooks_start(void)
{
	route_register(hooks_route);
}

/* The interposers proper: one indirect jump each.  On x86-64 written as
 * such, so that the path is entered with the program's return address on
 * top of the stack whatever the compiler's options; elsewhere a C tail
 * call, which GCC and clang make at -O1 and above. */
#if defined(__x86_64__)
__asm__(".text\n"
	".globl malloc\n"
	".type malloc, @function\n"
	"malloc:\n"
	"\tjmp *hooks_malloc_path(%rip)\n"
	".size malloc, .-malloc\n"
	".globl free\n"
	".type free, @function\n"
	"free:\n"
	"\tjmp *hooks_free_path(%rip)\n"
	".size free, .-free\n"
	".globl realloc\n"
	".type realloc, @function\n"
	"realloc:\n"
	"\tjmp *hooks_realloc_path(%rip)\n"
	".size realloc, .-realloc\n"
	".globl calloc\n"
	".type calloc, @function\n"
	"calloc:\n"
	"\tjmp *hooks_calloc_path(%rip)\n"
	".size calloc, .-calloc\n");
#else
MT_EXPORT void *malloc(size_t n)
{
	return hooks_malloc_path(n);
}

MT_EXPORT void free(void *p)
{
	hooks_free_path(p);
}

MT_EXPORT void *realloc(void *p, size_t n)
{
	return hooks_realloc_path(p, n);
}

MT_EXPORT void *calloc(size_t n, size_t m)
{
	return hooks_calloc_path(n, m);
}
#endif

/* calloc while single-threaded: as hooks_malloc_st, on the same cold
 * paths. */
static inline __attribute__((always_inline)) void *hooks_calloc_st(size_t n, size_t m,
								   size_t bytes, uintptr_t ra)
{
	void *p;
	size_t h, u;
	uint64_t cur;
	/* n * m did not overflow here (else bytes is SIZE_MAX, which fails
	 * as n, m would), so calloc(1, bytes) is the same call, and only
	 * bytes, which the count gives back, lives across the count */
	(void)n;
	(void)m;
	bytes = counters_request_st(HOOKS_REC, MT_CALL_CALLOC, bytes);
	p = real.calloc(1, bytes);
	if (MT_LIKELY(p != NULL)) {
		h = hooks_chunk_head(p);
		if (MT_UNLIKELY(h & HOOKS_CHUNK_MMAPPED))
			return hooks_malloc_st_mmapped(p, ra);
		u = hooks_chunk_usable(h);
		if (MT_UNLIKELY(sample_count_st(u)))
			return hooks_malloc_sampled(p, u, ra);
		cur = counters_add_st(&HOOKS_REC->heap_current, u);
		if (MT_UNLIKELY(cur > counters_peak_limit))
			return hooks_malloc_st_peak(p, cur);
	}
	return p;
}

/* calloc off the shortest path. */
static __attribute__((noinline)) void *hooks_calloc_other(size_t n, size_t m, size_t bytes,
							   uintptr_t ra)
{
	size_t u;
	void *p;
	if (MT_UNLIKELY(!boot_ensure()))
		return hooks_boot_alloc(bytes, 16);
	boot_heap_ensure();
	p = real.calloc(n, m);
	u = p ? boot_usable(p) : 0;
	if (p)
		sample_note_alloc(p, u, ra);
	counters_note_alloc(MT_CALL_CALLOC, bytes, u);
	return p;
}

/* calloc while multithreaded, for a thread with a shard: as
 * hooks_malloc_mt. */
static __attribute__((noinline)) void *hooks_calloc_mt(size_t bytes,
							uintptr_t ra, struct shard *sh)
{
	void *p;
	size_t h, u;
	bytes = counters_request_shard(sh, MT_CALL_CALLOC, bytes); /* as hooks_calloc_st */
	p = real.calloc(1, bytes);
	if (MT_UNLIKELY(p == NULL))
		return p;
	h = hooks_chunk_head(p);
	if (MT_UNLIKELY(h & HOOKS_CHUNK_MMAPPED))
		return hooks_malloc_mt_mmapped(p, ra, MT_CALL_CALLOC);
	u = hooks_chunk_usable(h);
	if (MT_UNLIKELY(sample_count(u)))
		return hooks_malloc_sampled_mt(p, u, ra);
	sh = shards_tls_mine;
	counters_bump((uint64_t *)&sh->heap_delta, (uint64_t)u);
	if (MT_UNLIKELY(sh->heap_delta > sh->heap_room) || counters_flush_due(sh, MT_CALL_CALLOC))
		return hooks_malloc_shard_slow(p, sh);
	return p;
}

/* The exported calloc jumps to one of these (hooks_route), as realloc. */
static inline size_t hooks_calloc_bytes(size_t n, size_t m)
{
	size_t bytes;
	if (__builtin_mul_overflow(n, m, &bytes))
		bytes = SIZE_MAX;
	return bytes;
}

static void *hooks_calloc_st_entry(size_t n, size_t m)
{
	return hooks_calloc_st(n, m, hooks_calloc_bytes(n, m), HOOKS_RA);
}

static void *hooks_calloc_mt_entry(size_t n, size_t m)
{
	struct shard *sh = shards_tls_mine;
	if (MT_LIKELY(sh != NULL))
		return hooks_calloc_mt(hooks_calloc_bytes(n, m), HOOKS_RA, sh);
	return hooks_calloc_other(n, m, hooks_calloc_bytes(n, m), HOOKS_RA);
}

static void *hooks_calloc_slow(size_t n, size_t m)
{
	return hooks_calloc_other(n, m, hooks_calloc_bytes(n, m), HOOKS_RA);
}

/* realloc of a bootstrap-arena block: move it to the real heap. */
static void *hooks_realloc_boot(void *p, size_t n, unsigned kind, uintptr_t ra)
{
	size_t span = boot_span(p), u = 0;
	void *q;
	boot_heap_ensure();
	q = real.malloc(n);
	if (q) {
		memcpy(q, p, n < span ? n : span);
		u = boot_usable(q);
		sample_note_alloc(q, u, ra);
	}
	counters_note_alloc(kind, n, u);
	return q;
}

/* The realloc family once resolved: the old block's sample out before the
 * real call (sites.h), the new block's in after it. */
static void *hooks_realloc_real(void *p, size_t n, unsigned kind, uintptr_t ra)
{
	struct sites_held held = { 0, 0, 0, 0 };
	size_t old, u;
	void *q;
	boot_heap_ensure();
	old = p ? boot_usable(p) : 0;
	if (p && sites_maybe(p))
		sites_hold(p, &held);
	/* Not real.reallocarray for reallocarray: glibc's calls realloc through
	 * the PLT, which is our hook, and the call would count twice. */
	q = real.realloc(p, n);
	if (q) {
		u = boot_usable(q);
		sample_note_alloc(q, u, ra);
		counters_note_realloc(kind, n, old, u);
	} else if (p && n == 0) {
		counters_note_realloc(kind, n, old, 0); /* glibc: freed */
	} else {
		if (held.held)
			sites_unhold(p, &held);
		counters_note_realloc(kind, n, 0, 0); /* failed: p intact */
	}
	return q;
}

/* realloc's shortest paths: malloc's route says one is on (as for
 * calloc), the old block is an arena chunk of glibc's and surely not a
 * sampled block (whose sample must be held across the call:
 * hooks_realloc_real), and the new size is not 0 (glibc's realloc(p, 0)
 * frees p and returns NULL).  As a free and a malloc: the request and the
 * old block (its size from its header, while it is still ours) are
 * counted before the real call, the new block after it, on malloc's own
 * cold paths; so only the old pointer, for a failure, lives across the
 * call.  A failed realloc leaves the old block as it was: its bytes go
 * back. */
static __attribute__((noinline, cold)) void *hooks_realloc_st_failed(void *p)
{
	counters_bump(&HOOKS_REC->heap_current, (uint64_t)boot_chunk_usable(p));
	return NULL;
}

static __attribute__((noinline)) void *hooks_realloc_st(void *p, size_t n)
{
	void *q;
	size_t h, u;
	uint64_t cur;
	n = counters_request_st(HOOKS_REC, MT_CALL_REALLOC, n);
	counters_drop(&HOOKS_REC->heap_current, (uint64_t)hooks_chunk_usable(hooks_chunk_head(p)));
	q = real.realloc(p, n);
	if (MT_UNLIKELY(q == NULL))
		return hooks_realloc_st_failed(p);
	h = hooks_chunk_head(q);
	if (MT_UNLIKELY(h & HOOKS_CHUNK_MMAPPED))
		return hooks_malloc_st_mmapped(q, HOOKS_RA);
	u = hooks_chunk_usable(h);
	if (MT_UNLIKELY(sample_count_st(u)))
		return hooks_malloc_sampled(q, u, HOOKS_RA);
	cur = counters_add_st(&HOOKS_REC->heap_current, u);
	if (MT_UNLIKELY(cur > counters_peak_limit))
		return hooks_malloc_st_peak(q, cur);
	return q;
}

/* Threaded: the shard's delta may pass its bounds between the two counts;
 * the test after the second sends it to counters_shard_settle as a
 * malloc's would. */
static __attribute__((noinline, cold)) void *hooks_realloc_mt_failed(void *p)
{
	struct shard *sh = shards_tls_mine;
	counters_bump((uint64_t *)&sh->heap_delta, (uint64_t)boot_chunk_usable(p));
	if (!counters_in_room(sh, sh->heap_delta))
		counters_shard_settle(sh, 1);
	return NULL;
}

static __attribute__((noinline)) void *hooks_realloc_mt(void *p, size_t n, struct shard *sh)
{
	void *q;
	size_t u;
	n = counters_request_shard(sh, MT_CALL_REALLOC, n);
	counters_drop((uint64_t *)&sh->heap_delta, (uint64_t)hooks_chunk_usable(hooks_chunk_head(p)));
	q = real.realloc(p, n);
	if (MT_UNLIKELY(q == NULL))
		return hooks_realloc_mt_failed(p);
	u = boot_chunk_usable(q);
	if (MT_UNLIKELY(sample_count(u)))
		sample_take(q, u, HOOKS_RA);
	sh = shards_tls_mine; /* the same shard: only this thread changes it */
	counters_bump((uint64_t *)&sh->heap_delta, (uint64_t)u);
	if (MT_UNLIKELY(!counters_in_room(sh, sh->heap_delta)) ||
	    counters_flush_due(sh, MT_CALL_REALLOC))
		return hooks_malloc_shard_slow(q, sh);
	return q;
}

static __attribute__((noinline)) void *hooks_realloc_other(void *p, size_t n, uintptr_t ra)
{
	void *q;
	if (MT_UNLIKELY(!boot_ensure())) {
		q = hooks_boot_alloc(n, 16);
		if (q && p)
			memcpy(q, p, n < boot_span(p) ? n : boot_span(p));
		return q;
	}
	if (MT_UNLIKELY(boot_owns(p)))
		return hooks_realloc_boot(p, n, MT_CALL_REALLOC, ra);
	return hooks_realloc_real(p, n, MT_CALL_REALLOC, ra);
}

/* The exported realloc jumps to one of these (hooks_route), so that
 * HOOKS_RA is the program's call site in each. */
static inline int hooks_realloc_short(void *p, size_t n)
{
	return MT_LIKELY(p != NULL) && MT_LIKELY(n != 0) &&
	       MT_LIKELY(!(hooks_chunk_head(p) & HOOKS_CHUNK_MMAPPED)) && MT_LIKELY(!sites_maybe(p));
}

static void *hooks_realloc_st_entry(void *p, size_t n)
{
	if (hooks_realloc_short(p, n))
		return hooks_realloc_st(p, n);
	return hooks_realloc_other(p, n, HOOKS_RA);
}

static void *hooks_realloc_mt_entry(void *p, size_t n)
{
	struct shard *sh;
	if (hooks_realloc_short(p, n) && MT_LIKELY((sh = shards_tls_mine) != NULL))
		return hooks_realloc_mt(p, n, sh);
	return hooks_realloc_other(p, n, HOOKS_RA);
}

static void *hooks_realloc_slow(void *p, size_t n)
{
	return hooks_realloc_other(p, n, HOOKS_RA);
}

MT_EXPORT void *reallocarray(void *p, size_t n, size_t m)
{
	size_t bytes;
	if (__builtin_mul_overflow(n, m, &bytes)) {
		if (boot_ensure())
			counters_note_realloc(MT_CALL_REALLOCARRAY, SIZE_MAX, 0, 0);
		errno = ENOMEM;
		return NULL;
	}
	if (MT_UNLIKELY(!boot_ensure()))
		return hooks_realloc_other(p, bytes, HOOKS_RA);
	if (MT_UNLIKELY(boot_owns(p)))
		return hooks_realloc_boot(p, bytes, MT_CALL_REALLOCARRAY, HOOKS_RA);
	return hooks_realloc_real(p, bytes, MT_CALL_REALLOCARRAY, HOOKS_RA);
}

MT_EXPORT int posix_memalign(void **out, size_t align, size_t n)
{
	size_t u;
	int rc;
	if (MT_UNLIKELY(!boot_ensure())) {
		*out = hooks_boot_alloc(n, align);
		return *out ? 0 : ENOMEM;
	}
	boot_heap_ensure();
	rc = real.posix_memalign(out, align, n);
	u = rc == 0 && *out ? boot_usable(*out) : 0;
	if (u)
		sample_note_alloc(*out, u, HOOKS_RA);
	counters_note_alloc(MT_CALL_POSIX_MEMALIGN, n, u);
	return rc;
}

static void *hooks_aligned(void *(*fn)(size_t, size_t), unsigned kind, size_t align, size_t n,
			   uintptr_t ra)
{
	size_t u;
	void *p;
	if (MT_UNLIKELY(!boot_ensure()))
		return hooks_boot_alloc(n, align);
	boot_heap_ensure();
	p = fn(align, n);
	u = p ? boot_usable(p) : 0;
	if (p)
		sample_note_alloc(p, u, ra);
	counters_note_alloc(kind, n, u);
	return p;
}

MT_EXPORT void *aligned_alloc(size_t align, size_t n)
{
	if (MT_UNLIKELY(!boot_ensure()))
		return hooks_boot_alloc(n, align);
	return hooks_aligned(real.aligned_alloc, MT_CALL_ALIGNED_ALLOC, align, n, HOOKS_RA);
}

MT_EXPORT void *memalign(size_t align, size_t n)
{
	if (MT_UNLIKELY(!boot_ensure()))
		return hooks_boot_alloc(n, align);
	return hooks_aligned(real.memalign, MT_CALL_MEMALIGN, align, n, HOOKS_RA);
}

MT_EXPORT void *valloc(size_t n)
{
	size_t u;
	void *p;
	if (MT_UNLIKELY(!boot_ensure()))
		return hooks_boot_alloc(n, 4096);
	boot_heap_ensure();
	p = real.valloc(n);
	u = p ? boot_usable(p) : 0;
	if (p)
		sample_note_alloc(p, u, HOOKS_RA);
	counters_note_alloc(MT_CALL_VALLOC, n, u);
	return p;
}

MT_EXPORT void *pvalloc(size_t n)
{
	size_t u;
	void *p;
	if (MT_UNLIKELY(!boot_ensure()))
		return hooks_boot_alloc(n, 4096);
	boot_heap_ensure();
	p = real.pvalloc(n);
	u = p ? boot_usable(p) : 0;
	if (p)
		sample_note_alloc(p, u, HOOKS_RA);
	counters_note_alloc(MT_CALL_PVALLOC, n, u);
	return p;
}

/* ---- mmap family -------------------------------------------------------- */

/* The program's mappings, and its call site for the sampler (track.h). */
MT_EXPORT void *mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off)
{
	boot_ensure();
	return track_mmap(real.mmap, addr, len, prot, flags, fd, off, HOOKS_RA);
}

MT_EXPORT void *mmap64(void *addr, size_t len, int prot, int flags, int fd, off_t off)
{
	boot_ensure();
	return track_mmap(real.mmap64 ? real.mmap64 : real.mmap, addr, len, prot, flags, fd, off,
			  HOOKS_RA);
}

MT_EXPORT int munmap(void *addr, size_t len)
{
	boot_ensure();
	return track_munmap(addr, len);
}

MT_EXPORT void *mremap(void *old, size_t old_len, size_t new_len, int flags, ...)
{
	void *new_addr = NULL;
	va_list ap;
	if (flags & MREMAP_FIXED) {
		va_start(ap, flags);
		new_addr = va_arg(ap, void *);
		va_end(ap);
	}
	if (!boot_ensure() || !real.mremap) {
		long r = sys_call6(SYS_mremap, (long)old, (long)old_len, (long)new_len, flags,
				   (long)new_addr, 0);
		if (r < 0 && r > -4096) {
			errno = (int)-r;
			return MAP_FAILED;
		}
		return (void *)r;
	}
	return track_mremap(old, old_len, new_len, flags, new_addr, HOOKS_RA);
}

/* ---- threads -------------------------------------------------------------- */

/* Atomics from here on: the switch happens before the new thread exists.
 * The heap probe, if still due, runs first, while one thread is all
 * there is (boot.h). */
static void hooks_go_multithreaded(void)
{
	if (boot_ensure())
		boot_heap_ensure();
	if (counters_mt)
		return;
	/* the sampling count moves to this thread's TLS first (sample.h), then
	 * the counts to the shards, then the paths */
	sample_go_multithreaded();
	counters_go_multithreaded();
	route_threads(1);
}

MT_EXPORT int pthread_create(pthread_t *t, const pthread_attr_t *attr, void *(*fn)(void *),
			     void *arg)
{
	hooks_go_multithreaded();
	return real.pthread_create(t, attr, fn, arg);
}

/* glibc's thrd_create calls its internal pthread_create, past the hook. */
MT_EXPORT int thrd_create(thrd_t *t, thrd_start_t fn, void *arg)
{
	hooks_go_multithreaded();
	return real.thrd_create(t, fn, arg);
}

/* glibc starts threads of its own, past the pthread_create hook, for
 * SIGEV_THREAD notifications (timers, message queues, aio completion), for
 * the aio helper threads and for getaddrinfo_a.  Those threads may run the
 * program's callbacks and allocate while the thread that asked goes on:
 * counting goes atomic before such a thread can exist.  Switching costs
 * nothing but speed, so any doubt (no sigevent, another notify kind for
 * aio, which starts helpers anyway) switches. */
static void hooks_threads_ahead(void)
{
	hooks_go_multithreaded();
}

/* A real function that cannot be resolved (a libc without it) behaves as
 * the missing function would: ENOSYS. */
#define HOOKS_CALL_REAL(fn, ...) \
	(real.fn ? real.fn(__VA_ARGS__) : (errno = ENOSYS, -1))

MT_EXPORT int timer_create(clockid_t clock, struct sigevent *sev, timer_t *id)
{
	boot_ensure();
	if (sev && sev->sigev_notify == SIGEV_THREAD)
		hooks_go_multithreaded();
	return HOOKS_CALL_REAL(timer_create, clock, sev, id);
}

MT_EXPORT int mq_notify(mqd_t q, const struct sigevent *sev)
{
	boot_ensure();
	if (sev && sev->sigev_notify == SIGEV_THREAD)
		hooks_go_multithreaded();
	return HOOKS_CALL_REAL(mq_notify, q, sev);
}

MT_EXPORT int aio_read(struct aiocb *cb)
{
	hooks_threads_ahead();
	return HOOKS_CALL_REAL(aio_read, cb);
}

MT_EXPORT int aio_write(struct aiocb *cb)
{
	hooks_threads_ahead();
	return HOOKS_CALL_REAL(aio_write, cb);
}

MT_EXPORT int aio_fsync(int op, struct aiocb *cb)
{
	hooks_threads_ahead();
	return HOOKS_CALL_REAL(aio_fsync, op, cb);
}

MT_EXPORT int lio_listio(int mode, struct aiocb *const list[], int n, struct sigevent *sev)
{
	hooks_threads_ahead();
	return HOOKS_CALL_REAL(lio_listio, mode, list, n, sev);
}

MT_EXPORT int aio_read64(struct aiocb64 *cb)
{
	hooks_threads_ahead();
	return HOOKS_CALL_REAL(aio_read64, cb);
}

MT_EXPORT int aio_write64(struct aiocb64 *cb)
{
	hooks_threads_ahead();
	return HOOKS_CALL_REAL(aio_write64, cb);
}

MT_EXPORT int aio_fsync64(int op, struct aiocb64 *cb)
{
	hooks_threads_ahead();
	return HOOKS_CALL_REAL(aio_fsync64, op, cb);
}

MT_EXPORT int lio_listio64(int mode, struct aiocb64 *const list[], int n, struct sigevent *sev)
{
	hooks_threads_ahead();
	return HOOKS_CALL_REAL(lio_listio64, mode, list, n, sev);
}

/* getaddrinfo_a returns EAI_* codes, not -1/errno. */
MT_EXPORT int getaddrinfo_a(int mode, struct gaicb *list[], int n, struct sigevent *sev)
{
	hooks_threads_ahead();
	return real.getaddrinfo_a ? real.getaddrinfo_a(mode, list, n, sev) : EAI_SYSTEM;
}

/* ---- exec family: MEMTRACE_PARENT in the envp handed on -------------- */

#define HOOKS_EXEC(call, envp)                                                          \
	do {                                                                            \
		size_t slots_ = lineage_env_slots(envp);                                \
		char *env_[slots_ ? slots_ : 1];                                        \
		struct lineage_env le_;                                                 \
		unsigned rel_;                                                          \
		int marked_, rc_;                                                       \
		char *const *use_ = (envp);                                             \
		boot_ensure();                                                          \
		marked_ = image_exec_begin(&rel_);                                      \
		if (slots_)                                                             \
			use_ = lineage_env_build(envp, env_, slots_, &le_, counters_rec->pid, \
						 counters_rec->gen, rel_);               \
		rc_ = call;                                                             \
		image_exec_end(marked_);                                                \
		return rc_;                                                             \
	} while (0)

MT_EXPORT int execve(const char *path, char *const argv[], char *const envp[])
{
	HOOKS_EXEC(real.execve(path, argv, use_), envp);
}

MT_EXPORT int execv(const char *path, char *const argv[])
{
	HOOKS_EXEC(real.execve(path, argv, use_), environ);
}

MT_EXPORT int execvpe(const char *file, char *const argv[], char *const envp[])
{
	HOOKS_EXEC(real.execvpe(file, argv, use_), envp);
}

MT_EXPORT int execvp(const char *file, char *const argv[])
{
	HOOKS_EXEC(real.execvpe(file, argv, use_), environ);
}

MT_EXPORT int fexecve(int fd, char *const argv[], char *const envp[])
{
	HOOKS_EXEC(real.fexecve(fd, argv, use_), envp);
}

MT_EXPORT int execveat(int dirfd, const char *path, char *const argv[], char *const envp[],
		       int flags)
{
	if (!boot_ensure() || !real.execveat) {
		errno = ENOSYS;
		return -1;
	}
	HOOKS_EXEC(real.execveat(dirfd, path, argv, use_, flags), envp);
}

/* The execl family: collect the variadic list into an argv on the stack. */
#define HOOKS_COLLECT(arg0, argv_, envp_out)                                   \
	size_t argc_ = 1;                                                      \
	va_list ap_;                                                           \
	va_start(ap_, arg0);                                                   \
	while (va_arg(ap_, char *))                                            \
		argc_++;                                                       \
	va_end(ap_);                                                           \
	char *argv_[argc_ + 1];                                                \
	argv_[0] = (char *)(arg0);                                             \
	va_start(ap_, arg0);                                                   \
	for (size_t i_ = 1; i_ <= argc_; i_++)                                 \
		argv_[i_] = va_arg(ap_, char *);                               \
	envp_out;                                                              \
	va_end(ap_)

MT_EXPORT int execl(const char *path, const char *arg, ...)
{
	HOOKS_COLLECT(arg, av, (void)0);
	return execve(path, av, environ);
}

MT_EXPORT int execlp(const char *file, const char *arg, ...)
{
	HOOKS_COLLECT(arg, av, (void)0);
	return execvpe(file, av, environ);
}

MT_EXPORT int execle(const char *path, const char *arg, ...)
{
	char *const *envp;
	HOOKS_COLLECT(arg, av, envp = va_arg(ap_, char *const *));
	return execve(path, av, envp);
}

/* ---- posix_spawn, system, popen ------------------------------------------ */

#define HOOKS_SPAWN(call, envp)                                                   \
	do {                                                                      \
		size_t slots_ = lineage_env_slots(envp);                          \
		char *env_[slots_ ? slots_ : 1];                                  \
		struct lineage_env le_;                                           \
		char *const *use_ = (envp);                                       \
		boot_ensure();                                                    \
		if (slots_ && counters_is_own_process())                          \
			use_ = lineage_env_build(envp, env_, slots_, &le_,        \
						 counters_rec->pid, counters_rec->gen, \
						 MT_REL_SPAWN);                   \
		return call;                                                      \
	} while (0)

MT_EXPORT int posix_spawn(pid_t *pid, const char *path, const posix_spawn_file_actions_t *fa,
			  const posix_spawnattr_t *attr, char *const argv[], char *const envp[])
{
	HOOKS_SPAWN(real.posix_spawn(pid, path, fa, attr, argv, use_), envp);
}

MT_EXPORT int posix_spawnp(pid_t *pid, const char *file, const posix_spawn_file_actions_t *fa,
			   const posix_spawnattr_t *attr, char *const argv[], char *const envp[])
{
	HOOKS_SPAWN(real.posix_spawnp(pid, file, fa, attr, argv, use_), envp);
}

static int hooks_popen_open;

MT_EXPORT int system(const char *cmd)
{
	int rc;
	boot_ensure();
	__atomic_store_n(&counters_rec->spawn_relation, MT_REL_SYSTEM, __ATOMIC_RELEASE);
	rc = real.system(cmd);
	/* The child has run its constructor (system waits for it), so the tag
	 * can go; an open popen stream keeps its own. */
	__atomic_store_n(&counters_rec->spawn_relation,
			 __atomic_load_n(&hooks_popen_open, __ATOMIC_RELAXED) ? MT_REL_POPEN : 0,
			 __ATOMIC_RELEASE);
	return rc;
}

MT_EXPORT FILE *popen(const char *cmd, const char *mode)
{
	FILE *f;
	boot_ensure();
	__atomic_fetch_add(&hooks_popen_open, 1, __ATOMIC_RELAXED);
	__atomic_store_n(&counters_rec->spawn_relation, MT_REL_POPEN, __ATOMIC_RELEASE);
	f = real.popen(cmd, mode);
	/* Keep the tag until pclose: the child may read it after we return. */
	if (!f && __atomic_sub_fetch(&hooks_popen_open, 1, __ATOMIC_RELAXED) == 0)
		__atomic_store_n(&counters_rec->spawn_relation, 0, __ATOMIC_RELEASE);
	return f;
}

MT_EXPORT int pclose(FILE *f)
{
	int rc;
	boot_ensure();
	rc = real.pclose(f);
	if (__atomic_load_n(&hooks_popen_open, __ATOMIC_RELAXED) > 0 &&
	    __atomic_sub_fetch(&hooks_popen_open, 1, __ATOMIC_RELAXED) == 0)
		__atomic_store_n(&counters_rec->spawn_relation, 0, __ATOMIC_RELEASE);
	return rc;
}

/* ---- closing stderr: the shim's report still has to reach it ------------
 * A program may close its stderr before the shim's report, which runs
 * last: gnulib's close_stdout (ls, cat, sort) in an atexit handler, GNU tar
 * at the end of main.  When the image will speak at its end, the close of
 * its last descriptor on the original stderr leaves the shim a duplicate
 * (errfd.h).  Only fd 2, and only close and fclose: a dup2 over fd 2 is how
 * daemons and servers redirect, and must let the old reader see EOF. */

MT_EXPORT int close(int fd)
{
	long rc;
	if (MT_UNLIKELY(!boot_ensure())) { /* inside our own dlsym */
		rc = sys_call6(SYS_close, fd, 0, 0, 0, 0, 0);
		if (rc < 0) {
			errno = (int)-rc;
			return -1;
		}
		return 0;
	}
	if (MT_UNLIKELY(fd == 2) && report_will_speak(counters_rec))
		errfd_before_close(fd);
	return real.close(fd);
}

MT_EXPORT int fclose(FILE *f)
{
	boot_ensure();
	if (MT_UNLIKELY(f == stderr) && report_will_speak(counters_rec))
		errfd_before_close(2);
	return real.fclose(f);
}

/* ---- quick_exit: its handlers get no status, so keep it for life.c ----- */

MT_EXPORT _Noreturn void quick_exit(int status)
{
	void (*fn)(int);
	boot_ensure();
	life_quick_status = status;
	fn = (void (*)(int))real.quick_exit;
	if (fn)
		fn(status);
	for (;;)
		sys_call6(SYS_exit_group, status, 0, 0, 0, 0, 0);
}

/* ---- _exit / _Exit ------------------------------------------------------ */

static _Noreturn void hooks_exit_now(int upper, int status)
{
	void (*fn)(int);
	boot_ensure();
	fn = upper ? real.exit_upper : real.exit_;
	image_end(MT_STATE_UNDERSCORE_EXIT, status);
	if (fn)
		fn(status);
	for (;;)
		sys_call6(SYS_exit_group, status, 0, 0, 0, 0, 0);
}

MT_EXPORT void _exit(int status)
{
	hooks_exit_now(0, status);
}

MT_EXPORT void _Exit(int status)
{
	hooks_exit_now(1, status);
}
