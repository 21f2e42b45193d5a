/* counters.h: heap and mapping accounting on a struct mt_record.
 *
 * The hot path (the inline pieces below, which hooks.c's shortest paths
 * put together; counters_note_alloc/free/realloc in counters.c for the
 * other paths) makes no system call, lock, allocation or stdio.  While
 * the process has one thread the updates are plain loads and stores (the
 * live figure one instruction, so that a signal handler that allocates
 * cannot split it), and an allocation tests one limit for both peaks
 * (counters_peak_limit).  hooks.c calls
 * counters_go_multithreaded() before the first pthread_create/thrd_create,
 * i.e. before a second thread can exist; from then on each thread counts
 * into a shard of its own (below), which reaches the record by atomic RMWs,
 * and peaks move by compare-and-swap max, so no update is lost.
 *
 * Heap bytes are the real allocator's malloc_usable_size(), taken by the
 * caller at allocation and again at free, so the two always cancel out.
 * Peak times: see heap_peak_stamp in record.h (a clock read only when a peak
 * has grown by max(64 KiB, stamp/64) since the last read).
 */
#ifndef MEMTRACE_COUNTERS_H
#define MEMTRACE_COUNTERS_H

#include <stddef.h>
#include <stdint.h>

#include "core/shards.h"
#include "record.h"
#include "base/shim.h"

/* Where the shim's record lives, at an address fixed when the shim is
 * linked: a page-aligned region of MT_RECORD_SIZE bytes of its own .lbss,
 * so that the hooks reach every counter %rip-relative instead of loading
 * a pointer first (two loads a malloc).  Counting starts in its zero
 * pages (the bootstrap, an image without a record file); store.c maps the
 * record file over it with the counts so far (MREMAP_FIXED), and a fork
 * child puts private pages back before it starts its own record.  The
 * region holds whole pages and nothing else: a mapping replaces them. */
#define COUNTERS_HOME_ALIGN 4096u
union counters_home {
	struct mt_record rec;
	unsigned char bytes[MT_RECORD_SIZE];
};
_Static_assert(MT_RECORD_SIZE % COUNTERS_HOME_ALIGN == 0,
	       "the record's home must be whole pages");
extern MT_HIDDEN union counters_home counters_home;

/* The record being updated and the threading mode.  In the shim it is
 * always &counters_home.rec (the hooks address that directly); the unit
 * tests bind records of their own to test the cold paths.  Written only
 * by counters_bind() and counters_go_multithreaded(). */
extern MT_HIDDEN struct mt_record *counters_rec;
extern MT_HIDDEN int counters_mt;
/* Next heap/total peak value at which to read the clock. */
extern MT_HIDDEN uint64_t counters_heap_stamp_next, counters_total_stamp_next;
/* map_anon_current + map_file_current. */
extern MT_HIDDEN uint64_t counters_maps_now;
/* Single-threaded: the largest heap_current that makes no new peak,
 * min(heap_peak, total_peak - counters_maps_now), so that an allocation
 * compares one figure instead of computing the total and comparing two.
 * Recomputed whenever a peak or the mappings move (counters.c). */
extern MT_HIDDEN uint64_t counters_peak_limit;
/* The record's home, &counters_home.rec (what the shim's counters_rec
 * always is; a record file, when there is one, is mapped there). */
struct mt_record *counters_local(void);
/* Makes `r` the record the counters update (the caller has copied whatever
 * counts it must keep into it).  Resets the stamping thresholds from it.
 * The first call also stores into `r` the peak stamps taken before it
 * (counters.c keeps them off the record's second page until then). */
void counters_bind(struct mt_record *r);
/* Switches to atomic updates; sets MT_FLAG_MULTITHREADED.  Idempotent.
 * The counts only: the caller (hooks.c) moves the sampling count and the
 * dispatch mode (route.h) with it. */
void counters_go_multithreaded(void);
/* In a fork child: one thread again, so plain updates are safe.  The
 * heap bytes other threads still held in their shards at the fork are
 * added to the record first (the child inherited those blocks).  The
 * counts only, as counters_go_multithreaded (life.c does the rest). */
void counters_go_single(void);

/* Multithreaded, the activity counts (calls[], hist[], requested, largest)
 * and the live heap bytes collect in per-thread shards first (shards.h,
 * counters.c): the record's heap_current then lags by less than 64 KiB
 * (and 64 calls) per running thread.
 * counters_settle() moves every shard into the record; the image's end
 * calls it (store_finish).  counters_read_live() is the record's calls[]
 * and heap_current plus what the shards still hold, without moving
 * anything (exact when the other threads are quiet).  counters_flush_own()
 * moves the calling thread's shard (before fork).  counters_drain_shard()
 * moves one shard's counts into the record (its owner's flush, the
 * thread's end, a reclaimed shard). */
struct shard;
struct counters_live {
	uint64_t calls[MT_CALL_SLOTS];
	uint64_t heap_current;
};
void counters_settle(void);
void counters_read_live(struct counters_live *live);
void counters_flush_own(void);
void counters_drain_shard(struct shard *sh);
/* 1 unless the caller is a vfork child (or raw clone) running on the
 * record owner's memory: getpid() is the record's pid. */
int counters_is_own_process(void);

/* Cold paths (counters.c). */
/* Single-threaded, the heap at cur: heap_peak to at least cur, total_peak
 * to at least cur + the mappings (total_current stored then), each raised
 * as safely against this thread's signal handlers as counters_add_st,
 * stamped when it crossed its threshold; counters_peak_limit follows. */
void counters_peaks_st(struct mt_record *r, uint64_t cur);
void counters_stamp_heap(uint64_t cur);
void counters_stamp_total(uint64_t cur);
void counters_note_alloc_mt(unsigned kind, size_t req, size_t usable);
void counters_note_free_mt(size_t usable);
void counters_note_realloc_mt(unsigned kind, size_t req, size_t old_usable, size_t new_usable);
void counters_note_call(unsigned kind);

/* Mapping figures: delta bytes of anonymous/file mappings (may be negative),
 * `largest` the size of a mapping just made (0 if none). */
void counters_note_map(int64_t anon, int64_t file, uint64_t largest);
void counters_note_map_untracked(uint64_t bytes);
void counters_set_flag(uint32_t flag);

/* bucket b: 2^(b-1) < n <= 2^b; bucket 0 holds 0 and 1 (record.h).
 * One test sends the rare ends (n <= 1, and n > 2^63, which the last
 * bucket takes) out of the way; for the rest the bucket is the bit length
 * of n - 1, at most 63: 63 ^ clz is the index of its top bit, one bsr. */
_Static_assert(MT_HIST_BUCKETS == 64, "counters_bucket assumes 64 buckets");
static inline unsigned counters_bucket(size_t n)
{
	int64_t m = (int64_t)(n - 1);
	if (MT_LIKELY(m > 0))
		return 1u + (63u ^ (unsigned)__builtin_clzll((unsigned long long)m));
	return n <= 1 ? 0 : MT_HIST_BUCKETS - 1;
}

/* The index of the top bit of x > 0, as a 64-bit value: GCC's own bsr
 * for 63 ^ clz is an int it then widens and adds to (three instructions
 * where the +1 can be the address's displacement). */
static inline uint64_t counters_top_bit(uint64_t x)
{
#if defined(__x86_64__)
	uint64_t b;
	__asm__("bsrq %1, %0" : "=r"(b) : "rm"(x) : "cc");
	return b;
#else
	return 63 ^ (uint64_t)__builtin_clzll((unsigned long long)x);
#endif
}

/* The largest request and the histogram share one test, against a gate:
 * a request of 1 to `gate` bytes cannot raise the largest request, since
 * gate is at most a request this image has made (and it lags nothing: it
 * only rises), and it is at most 2^63, so its bucket is the top bit of
 * 2n - 1 (2^(b-1) < n <= 2^b makes 2^b <= 2n - 1 < 2^(b+1)) with no
 * overflow: one compare, a lea and a bsr, where testing the ends of
 * counters_bucket and the largest request apart took two compares more.
 * Requests of 0 bytes (n - 1 wraps) and the rest take the long way, which
 * raises the gate.  Single-threaded the gate is counters_gate (reset by
 * counters_bind, since a new record's largest starts again); each shard
 * keeps its own (shards.h). */
#define COUNTERS_GATE_MAX (UINT64_C(1) << 63)
extern MT_HIDDEN uint64_t counters_gate;

/* The gate after a request of req > 0 bytes that went the long way
 * (req - 1 >= gate: the gate rises, or stays at 2^63). */
static inline uint64_t counters_gate_for(size_t req)
{
	return req < COUNTERS_GATE_MAX ? req : COUNTERS_GATE_MAX;
}

/* The long way, out of line (counters.c): it returns req, so that a
 * caller that needs the size after it has it back in the return register
 * and keeps nothing across the call. */
size_t counters_request_rare_st(struct mt_record *r, size_t req);
size_t counters_request_rare_shard(struct shard *sh, size_t req);

/* Returns req (see counters_request_rare_st). */
static inline size_t counters_request_st(struct mt_record *r, unsigned kind, size_t req)
{
	r->calls[kind]++;
	r->heap_requested_total += req;
	if (MT_LIKELY(req - 1 < counters_gate)) {
		r->hist[counters_top_bit(2 * (uint64_t)req - 1)]++;
		return req;
	}
	return counters_request_rare_st(r, req);
}

/* While single-threaded the live figures are updated without a lock, but a
 * signal handler of this very thread may allocate between the load and the
 * store of a plain `x += d`: its update is lost and heap_current drifts for
 * good (tests/progs/x_stress.c found it), or a peak is lowered under the
 * current figure.  On x86-64 an xadd or cmpxchg without the lock prefix is
 * one instruction, which a handler cannot split, and costs about what the
 * plain add did; elsewhere relaxed atomics do it. */
/* It returns the figure read back after the add: a handler that counts in
 * between makes that a figure the counter really had too, and tests its
 * own peak.  (Add, load: two instructions where an xadd needs a copy of
 * the delta before it and an add after it.) */
static inline uint64_t counters_add_st(uint64_t *field, uint64_t delta)
{
#if defined(__x86_64__)
	__asm__ __volatile__("addq %1, %0" : "+m"(*field) : "er"(delta) : "cc");
	return *(volatile const uint64_t *)field;
#else
	return __atomic_add_fetch(field, delta, __ATOMIC_RELAXED);
#endif
}

/* *field = max(*field, v), as safe against this thread's handlers as
 * counters_add_st; returns 1 if this call raised it. */
static inline int counters_raise_st(uint64_t *field, uint64_t v)
{
	uint64_t old = *(volatile uint64_t *)field;
	while (v > old) {
#if defined(__x86_64__)
		uint64_t seen = old;
		__asm__ __volatile__("cmpxchgq %2, %1" : "+a"(seen), "+m"(*field) : "r"(v) : "cc");
		if (seen == old)
			return 1;
		old = seen;
#else
		if (__atomic_compare_exchange_n(field, &old, v, 1, __ATOMIC_RELAXED,
						__ATOMIC_RELAXED))
			return 1;
#endif
	}
	return 0;
}

/* x += d as one instruction on x86-64 (not locked: used where one thread
 * owns x, a shard or a single-threaded image's record), so that a signal
 * handler of that thread that counts too cannot split it and lose an
 * update; the drains take shard counts with atomic exchanges. */
static inline void counters_bump(uint64_t *x, uint64_t d)
{
#if defined(__x86_64__)
	__asm__ __volatile__("addq %1, %0" : "+m"(*x) : "er"(d) : "cc");
#else
	__atomic_add_fetch(x, d, __ATOMIC_RELAXED);
#endif
}

/* x -= d, as counters_bump: a subtraction from memory, so that a block's
 * size, (head & ~7) - 8, is taken off in three instructions, where adding
 * its negative took four (GCC loads 8 and subtracts the size from it). */
static inline void counters_drop(uint64_t *x, uint64_t d)
{
#if defined(__x86_64__)
	__asm__ __volatile__("subq %1, %0" : "+m"(*x) : "er"(d) : "cc");
#else
	__atomic_sub_fetch(x, d, __ATOMIC_RELAXED);
#endif
}

/* The heap grew by `bytes`.  total_current is not stored here: it is
 * stored when total_peak rises, on mapping calls and at the end (record.h),
 * so that an ordinary call writes one live figure, not two.  Raising a
 * peak is out of line (counters_peaks_st), so that the common case, no new
 * peak, keeps no value across a call. */
static inline void counters_grow_st(struct mt_record *r, size_t bytes)
{
	uint64_t cur = counters_add_st(&r->heap_current, bytes);
	if (MT_UNLIKELY(cur > counters_peak_limit))
		counters_peaks_st(r, cur);
}

/* An allocation call of `kind` asking for `req` bytes that returned a block
 * of `usable` bytes (0 when it failed).  Out of line (counters.c): only
 * the paths off the shortest call these three, and inlined into each of
 * them they made the start code's 64 KB of .text spill over. */
void counters_note_alloc(unsigned kind, size_t req, size_t usable);

/* free() of a block of `usable` bytes while single-threaded (the caller
 * knows: route_mode, or counters_mt tested). */
static inline void counters_free_st(struct mt_record *r, size_t usable)
{
	r->calls[MT_CALL_FREE]++;
	counters_drop(&r->heap_current, (uint64_t)usable);
}

/* free() of a block of `usable` bytes (0 for free(NULL)). */
void counters_note_free(size_t usable);

/* realloc-like call: the old block (old_usable, 0 if none) was replaced by
 * a block of new_usable bytes (0 if none: failure keeps the old block, so the
 * caller passes old_usable == new_usable == 0 then). */
void counters_note_realloc(unsigned kind, size_t req, size_t old_usable, size_t new_usable);

/* Multithreaded, every count first goes to the calling thread's shard
 * (shards.h) with plain stores, so that two cores do not fight over the
 * record's cache lines (five shared read-modify-writes per malloc made it
 * 2.5-10x bare on two cores, and even one shared live-bytes counter 1.9x):
 *  - calls[], hist[], heap_requested_total and heap_largest_request reach
 *    the record whenever the thread has made COUNTERS_FLUSH calls of one
 *    kind (malloc, free, ...) since they last did;
 *  - the thread's live heap bytes (allocated less freed) reach the shared
 *    heap_current whenever they pass +-COUNTERS_DELTA_MAX (and at those
 *    flushes), so an ordinary malloc or free writes no shared cache line;
 *  - everything reaches the record when the thread ends and when the image
 *    ends (exact then), and is read by memtrace_read_stats and markers
 *    without being moved.
 * heap_current therefore lags the truth by less than COUNTERS_DELTA_MAX
 * per thread, and may even read below zero (as a signed number) while one
 * thread holds bytes not yet added that another thread freed; heap_peak is
 * raised from the shared figure plus the calling thread's own delta, tested
 * against a room the thread last computed (below), so it is exact to within
 * COUNTERS_DELTA_MAX per running thread.  A thread without a shard updates
 * the record directly. */
#define COUNTERS_FLUSH 1024u
#define COUNTERS_DELTA_MAX (64 * 1024)

/* Out of line: the shard's counts to the record; the call's live bytes
 * when they leave the shard's room (counters_live_shard). */
void counters_flush_shard(struct shard *sh);
void counters_live_shard_slow(struct shard *sh, int64_t bytes);

void counters_shard_settle(struct shard *sh, int grew);

/* A shard is flushed when one kind of call has been counted
 * COUNTERS_FLUSH times since its last drain: the call count itself is the
 * clock (a drain takes it back to zero), so no second counter is kept.  A
 * signal handler counting between the bump and the test only makes the
 * flush come one call later. */
static inline int counters_flush_due(const struct shard *sh, unsigned kind)
{
	return MT_UNLIKELY(sh->calls[kind] >= COUNTERS_FLUSH);
}

/* The request's counts, in the shard; the caller tests counters_flush_due
 * when it suits it (the threaded malloc does after the real call, so that
 * nothing but its call site lives across that). */
static inline size_t counters_request_shard(struct shard *sh, unsigned kind, size_t req)
{
	counters_bump(&sh->calls[kind], 1);
	counters_bump(&sh->requested, req);
	/* the gate as counters_request_st's */
	if (MT_LIKELY(req - 1 < sh->gate)) {
		counters_bump(&sh->hist[counters_top_bit(2 * (uint64_t)req - 1)], 1);
		return req;
	}
	return counters_request_rare_shard(sh, req);
}

/* Live bytes of one call into the thread's delta (see above).  The shard
 * keeps its room: how far its delta may grow before the shared figure
 * plus the delta could pass heap_peak (or, with the mappings, total_peak),
 * as of the last time this thread looked at the shared figures.  So an
 * ordinary call reads no shared cache line at all: with two threads, the
 * four shared loads of a peak test on every allocation cost 4-9% of a
 * malloc/free loop (bench/RESULTS.md, run W), because the other thread's
 * publishes and flushes keep taking those lines away.  The room goes stale
 * when another thread adds to heap_current; the peak then misses at most
 * this thread's delta, under COUNTERS_DELTA_MAX (record.h's bound counts
 * every running thread for that reason). */
static inline int counters_in_room(const struct shard *sh, int64_t d)
{
	return MT_LIKELY(d <= sh->heap_room) && MT_LIKELY(d > -COUNTERS_DELTA_MAX);
}

static inline void counters_live_shard(struct shard *sh, int64_t bytes)
{
	int64_t d = sh->heap_delta + bytes;
	if (MT_UNLIKELY(!counters_in_room(sh, d))) {
		counters_live_shard_slow(sh, bytes);
		return;
	}
	counters_bump((uint64_t *)&sh->heap_delta, (uint64_t)bytes);
}

/* Whether a block that arrived keeps the delta in its room: a delta that
 * grows can only leave it upwards (the room is below COUNTERS_DELTA_MAX),
 * so one compare does. */
static inline int counters_grow_fits(const struct shard *sh, size_t bytes)
{
	return MT_LIKELY(sh->heap_delta + (int64_t)bytes <= sh->heap_room);
}

/* counters_live_shard for a block that arrived. */
static inline void counters_grow_shard(struct shard *sh, size_t bytes)
{
	if (!counters_grow_fits(sh, bytes)) {
		counters_live_shard_slow(sh, (int64_t)bytes);
		return;
	}
	counters_bump((uint64_t *)&sh->heap_delta, (uint64_t)bytes);
}

/* A free on the multithreaded shortest path (ROUTE_MT), for a
 * thread with a shard: it touches only its shard. */
static inline void counters_free_shard(struct shard *sh, size_t usable)
{
	counters_bump(&sh->calls[MT_CALL_FREE], 1);
	if (counters_flush_due(sh, MT_CALL_FREE))
		counters_flush_shard(sh);
	counters_live_shard(sh, -(int64_t)usable);
}

/* counters_free_shard when it would make no call (no flush due, the delta
 * stays above -COUNTERS_DELTA_MAX): then it is done and 1 returned; else
 * nothing is done and 0 returned, for the caller to call
 * counters_free_shard out of line.  So the threaded free can end in tail
 * calls only, with no stack frame.  A shrinking delta makes no peak, so
 * the room above is not tested. */
static inline int counters_free_shard_quick(struct shard *sh, size_t usable)
{
	if (MT_UNLIKELY(sh->calls[MT_CALL_FREE] >= COUNTERS_FLUSH - 1) ||
	    MT_UNLIKELY(sh->heap_delta - (int64_t)usable <= -COUNTERS_DELTA_MAX))
		return 0;
	counters_bump(&sh->calls[MT_CALL_FREE], 1);
	counters_drop((uint64_t *)&sh->heap_delta, (uint64_t)usable);
	return 1;
}

#endif /* MEMTRACE_COUNTERS_H */
