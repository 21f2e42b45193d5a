/* counters.c: the cold half of the accounting (see counters.h): atomic
 * updates once the process is multithreaded, peak time stamps, mapping
 * figures.  Async-signal-safe; never allocates, locks or makes a system call
 * (clock_gettime is a vDSO call). */
#include <pthread.h>
#include <string.h>

#include "counters.h"
#include "shards.h"
#include "sys.h"

static struct mt_record counters_scratch;
struct mt_record *counters_rec = &counters_scratch;
int counters_mt;
uint64_t counters_heap_stamp_next = 1, counters_total_stamp_next = 1;
uint64_t counters_maps_now;
int counters_fast;
static int counters_glibc_sizes;

/* Once multithreaded, calls[], hist[], heap_requested_total and
 * heap_largest_request are first counted in the thread's shard (shards.h)
 * with plain stores and added to the record every COUNTERS_FLUSH
 * operations, when the thread ends and when the image ends.  Only the live
 * figures (heap_current, total_current, peaks) stay shared atomics: on two
 * cores five shared read-modify-writes per malloc made the cache lines
 * bounce, 2.5-10x bare; the shards leave one or two.  A thread without a
 * shard updates the record directly. */
#define COUNTERS_FLUSH 64u

static void counters_refresh_total(struct mt_record *r);

struct mt_record *counters_local(void)
{
	return &counters_scratch;
}

#define STAMP_MIN_STEP (64u * 1024u)

static uint64_t counters_next_stamp(uint64_t stamp)
{
	uint64_t step = stamp / 64;
	return stamp + (step > STAMP_MIN_STEP ? step : STAMP_MIN_STEP);
}

void counters_bind(struct mt_record *r)
{
	counters_rec = r;
	counters_maps_now = r->map_anon_current + r->map_file_current;
	counters_heap_stamp_next = r->heap_peak_stamp ? counters_next_stamp(r->heap_peak_stamp) : 1;
	counters_total_stamp_next =
		r->total_peak_stamp ? counters_next_stamp(r->total_peak_stamp) : 1;
}

void counters_go_multithreaded(void)
{
	if (counters_mt)
		return;
	/* Still one thread here: no race on the key.  No allocation either. */
	shards_enable();
	__atomic_fetch_or(&counters_rec->flags, MT_FLAG_MULTITHREADED, __ATOMIC_RELAXED);
	/* pthread_create publishes this store to the new thread; the calling
	 * thread sees it at once. */
	__atomic_store_n(&counters_mt, 1, __ATOMIC_RELAXED);
	__atomic_store_n(&counters_fast, 0, __ATOMIC_RELAXED);
}

void counters_go_single(void)
{
	/* A fork child: the other threads are gone, and every shard's pending
	 * counts (this thread's too) are the parent's. */
	shards_reset_in_child();
	counters_mt = 0;
	counters_fast = counters_glibc_sizes;
}

void counters_set_glibc_sizes(int yes)
{
	counters_glibc_sizes = yes;
	counters_fast = yes && !counters_mt;
}

int counters_is_own_process(void)
{
	return sys_getpid() == __atomic_load_n(&counters_rec->pid, __ATOMIC_RELAXED);
}

void counters_set_flag(uint32_t flag)
{
	__atomic_fetch_or(&counters_rec->flags, flag, __ATOMIC_RELAXED);
}

/* The stamp fields are written by whoever crosses the threshold; with
 * threads two may race and the later clock value can win, which only moves
 * the time by the width of the race. */
void counters_stamp_heap(uint64_t cur)
{
	struct mt_record *r = counters_rec;
	uint64_t now = sys_mono_ns();
	__atomic_store_n(&r->heap_peak_mono_ns, now, __ATOMIC_RELAXED);
	__atomic_store_n(&r->heap_peak_stamp, cur, __ATOMIC_RELAXED);
	__atomic_store_n(&counters_heap_stamp_next, counters_next_stamp(cur), __ATOMIC_RELAXED);
}

void counters_stamp_total(uint64_t cur)
{
	struct mt_record *r = counters_rec;
	uint64_t now = sys_mono_ns();
	__atomic_store_n(&r->total_peak_mono_ns, now, __ATOMIC_RELAXED);
	__atomic_store_n(&r->total_peak_stamp, cur, __ATOMIC_RELAXED);
	__atomic_store_n(&counters_total_stamp_next, counters_next_stamp(cur), __ATOMIC_RELAXED);
}

static inline void counters_max(uint64_t *field, uint64_t v)
{
	uint64_t old = __atomic_load_n(field, __ATOMIC_RELAXED);
	while (v > old && !__atomic_compare_exchange_n(field, &old, v, 1, __ATOMIC_RELAXED,
							__ATOMIC_RELAXED)) {
	}
}

/* Raises peak to v; returns 1 if this call raised it. */
static inline int counters_max_raised(uint64_t *field, uint64_t v)
{
	uint64_t old = __atomic_load_n(field, __ATOMIC_RELAXED);
	while (v > old) {
		if (__atomic_compare_exchange_n(field, &old, v, 1, __ATOMIC_RELAXED,
						__ATOMIC_RELAXED))
			return 1;
	}
	return 0;
}


/* x += d as one instruction on x86-64 (not locked: only the owner thread
 * adds to its shard), so that a signal handler of the owner that counts
 * too cannot split it and lose an update; the drains take counts with
 * atomic exchanges. */
static inline void counters_bump(uint64_t *x, uint64_t d)
{
#if defined(__x86_64__)
	__asm__ __volatile__("addq %1, %0" : "+m"(*x) : "er"(d) : "cc");
#else
	__atomic_add_fetch(x, d, __ATOMIC_RELAXED);
#endif
}

static inline uint64_t counters_take(uint64_t *x)
{
	return __atomic_load_n(x, __ATOMIC_RELAXED) ? __atomic_exchange_n(x, 0, __ATOMIC_RELAXED)
						    : 0;
}

/* Adds what `sh` holds to the record and zeroes it.  Every count is taken
 * with an exchange, so a shard drained by its owner (flush, thread end)
 * and by the image's end at once gives each count to the record once. */
void counters_drain_shard(struct shard *sh)
{
	struct mt_record *r = counters_rec;
	uint64_t v;
	for (unsigned i = 0; i < MT_CALL_COUNT; i++)
		if ((v = counters_take(&sh->calls[i])) != 0)
			__atomic_fetch_add(&r->calls[i], v, __ATOMIC_RELAXED);
	for (unsigned b = 0; b < MT_HIST_BUCKETS; b++)
		if ((v = counters_take(&sh->hist[b])) != 0)
			__atomic_fetch_add(&r->hist[b], v, __ATOMIC_RELAXED);
	if ((v = counters_take(&sh->requested)) != 0)
		__atomic_fetch_add(&r->heap_requested_total, v, __ATOMIC_RELAXED);
	if ((v = counters_take(&sh->largest)) != 0)
		counters_max(&r->heap_largest_request, v);
	__atomic_store_n(&sh->pending, 0, __ATOMIC_RELAXED);
}

static void counters_request_mt(struct mt_record *r, unsigned kind, size_t req)
{
	struct shard *sh = shards_mine();
	if (MT_LIKELY(sh != NULL)) {
		counters_bump(&sh->calls[kind], 1);
		counters_bump(&sh->requested, req);
		counters_bump(&sh->hist[counters_bucket(req)], 1);
		if (req > sh->largest)
			sh->largest = req; /* a handler's larger request may be lost */
		if (++sh->pending >= COUNTERS_FLUSH)
			counters_drain_shard(sh);
		return;
	}
	__atomic_fetch_add(&r->calls[kind], 1, __ATOMIC_RELAXED);
	__atomic_fetch_add(&r->heap_requested_total, req, __ATOMIC_RELAXED);
	__atomic_fetch_add(&r->hist[counters_bucket(req)], 1, __ATOMIC_RELAXED);
	counters_max(&r->heap_largest_request, req);
}

static void counters_add_shard_calls(struct shard *sh, void *ctx)
{
	uint64_t *calls = ctx;
	for (unsigned i = 0; i < MT_CALL_SLOTS; i++)
		calls[i] += __atomic_load_n(&sh->calls[i], __ATOMIC_RELAXED);
}

void counters_read_calls(uint64_t calls[MT_CALL_SLOTS])
{
	for (unsigned i = 0; i < MT_CALL_SLOTS; i++)
		calls[i] = __atomic_load_n(&counters_rec->calls[i], __ATOMIC_RELAXED);
	if (__atomic_load_n(&counters_mt, __ATOMIC_RELAXED))
		shards_for_each(counters_add_shard_calls, calls);
}

static void counters_settle_shard(struct shard *sh, void *ctx)
{
	(void)ctx;
	counters_drain_shard(sh);
}

/* Reads only the shard pool (shim memory), never another thread's TLS or
 * stack: those threads may be gone (shards.h). */
void counters_settle(void)
{
	if (!__atomic_load_n(&counters_mt, __ATOMIC_RELAXED))
		return;
	counters_refresh_total(counters_rec);
	shards_for_each(counters_settle_shard, NULL);
}

/* Live bytes while multithreaded: heap_current is the one shared
 * read-modify-write.  total_current is stored only when total_peak rises
 * (and by mapping calls and at the end), so its cache line is read, not
 * written, on an ordinary allocation and stays shared between the cores;
 * heap_current + map_*_current is always the current total (record.h). */
static void counters_add_mt(struct mt_record *r, int64_t bytes)
{
	uint64_t cur, tot;
	if (bytes == 0)
		return;
	cur = __atomic_add_fetch(&r->heap_current, (uint64_t)bytes, __ATOMIC_RELAXED);
	if (bytes < 0)
		return;
	if (counters_max_raised(&r->heap_peak, cur) &&
	    cur >= __atomic_load_n(&counters_heap_stamp_next, __ATOMIC_RELAXED))
		counters_stamp_heap(cur);
	tot = cur + __atomic_load_n(&counters_maps_now, __ATOMIC_RELAXED);
	if (tot > __atomic_load_n(&r->total_peak, __ATOMIC_RELAXED)) {
		__atomic_store_n(&r->total_current, tot, __ATOMIC_RELAXED);
		if (counters_max_raised(&r->total_peak, tot) &&
		    tot >= __atomic_load_n(&counters_total_stamp_next, __ATOMIC_RELAXED))
			counters_stamp_total(tot);
	}
}

/* heap_current + mappings, stored: exact when nothing runs concurrently. */
static void counters_refresh_total(struct mt_record *r)
{
	__atomic_store_n(&r->total_current,
			 __atomic_load_n(&r->heap_current, __ATOMIC_RELAXED) +
				 __atomic_load_n(&counters_maps_now, __ATOMIC_RELAXED),
			 __ATOMIC_RELAXED);
}

void counters_note_alloc_mt(unsigned kind, size_t req, size_t usable)
{
	struct mt_record *r = counters_rec;
	counters_request_mt(r, kind, req);
	counters_add_mt(r, (int64_t)usable);
}

void counters_note_free_mt(size_t usable)
{
	struct mt_record *r = counters_rec;
	/* free(NULL) claims no shard: glibc's thread teardown calls it after
	 * the key destructors, and a shard claimed then is never freed. */
	struct shard *sh = usable ? shards_mine() : shards_tls_mine;
	if (MT_LIKELY(sh != NULL)) {
		counters_bump(&sh->calls[MT_CALL_FREE], 1);
		if (++sh->pending >= COUNTERS_FLUSH)
			counters_drain_shard(sh);
	} else {
		__atomic_fetch_add(&r->calls[MT_CALL_FREE], 1, __ATOMIC_RELAXED);
	}
	counters_add_mt(r, -(int64_t)usable);
}

void counters_note_realloc_mt(unsigned kind, size_t req, size_t old_usable, size_t new_usable)
{
	struct mt_record *r = counters_rec;
	counters_request_mt(r, kind, req);
	counters_add_mt(r, (int64_t)new_usable - (int64_t)old_usable);
}

void counters_note_call(unsigned kind)
{
	__atomic_fetch_add(&counters_rec->calls[kind], 1, __ATOMIC_RELAXED);
}

/* Mapping calls already cost a system call, so they always use atomics. */
void counters_note_map(int64_t anon, int64_t file, uint64_t largest)
{
	struct mt_record *r = counters_rec;
	uint64_t tot;
	if (anon) {
		uint64_t a = __atomic_add_fetch(&r->map_anon_current, (uint64_t)anon, __ATOMIC_RELAXED);
		if (anon > 0)
			counters_max(&r->map_anon_peak, a);
	}
	if (file) {
		uint64_t f = __atomic_add_fetch(&r->map_file_current, (uint64_t)file, __ATOMIC_RELAXED);
		if (file > 0)
			counters_max(&r->map_file_peak, f);
	}
	if (largest)
		counters_max(&r->map_largest, largest);
	if (anon + file == 0)
		return;
	tot = __atomic_add_fetch(&counters_maps_now, (uint64_t)(anon + file), __ATOMIC_RELAXED) +
	      __atomic_load_n(&r->heap_current, __ATOMIC_RELAXED);
	__atomic_store_n(&r->total_current, tot, __ATOMIC_RELAXED);
	if (anon + file > 0 && counters_max_raised(&r->total_peak, tot) &&
	    tot >= __atomic_load_n(&counters_total_stamp_next, __ATOMIC_RELAXED))
		counters_stamp_total(tot);
}

void counters_note_map_untracked(uint64_t bytes)
{
	struct mt_record *r = counters_rec;
	__atomic_fetch_add(&r->map_untracked_calls, 1, __ATOMIC_RELAXED);
	__atomic_fetch_add(&r->map_untracked_bytes, bytes, __ATOMIC_RELAXED);
	counters_set_flag(MT_FLAG_MAP_OVERFLOW);
}
