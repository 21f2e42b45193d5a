/* counters.c: the cold half of the accounting (see counters.h): atomic
 * updates once the process is multithreaded, peak time stamps, mapping
 * figures.  Async-signal-safe; never allocates, locks or makes a system call
 * (clock_gettime is a vDSO call). */
#include <pthread.h>
#include <string.h>

#include "counters.h"
#include "sys.h"

static struct mt_record counters_scratch;
struct mt_record *counters_rec = &counters_scratch;
int counters_mt;
uint64_t counters_heap_stamp_next = 1, counters_total_stamp_next = 1;
uint64_t counters_maps_now;
int counters_fast;
static int counters_glibc_sizes;

/* ---- per-thread shards of the activity counters ---------------------------
 * Once multithreaded, calls[], hist[], heap_requested_total and
 * heap_largest_request are first counted in a per-thread shard with plain
 * stores and added to the record every COUNTERS_FLUSH operations, when the
 * thread exits (a pthread key destructor), and when the image ends (the
 * ending thread takes every other shard's pending counts).  Only the live
 * figures (heap_current, total_current, peaks) stay shared atomics: on two
 * cores five shared read-modify-writes per malloc made the cache lines
 * bounce, 2.5-10x bare; the shards leave one or two.  A thread that cannot
 * get a shard (registry full, no key) updates the record directly. */
#define COUNTERS_FLUSH 64u
#define COUNTERS_MAX_SHARDS 256u

struct counters_shard {
	uint64_t calls[MT_CALL_SLOTS];
	uint64_t hist[MT_HIST_BUCKETS];
	uint64_t requested, largest;
	uint32_t pending;
	int state; /* 0 new, 1 registered, -1 direct */
};

static __thread struct counters_shard counters_tls __attribute__((tls_model("initial-exec")));
static struct counters_shard *counters_shards[COUNTERS_MAX_SHARDS];
static pthread_key_t counters_key;
static int counters_key_ok;

static void counters_shard_leave(void *arg);
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
	if (!counters_key_ok)
		counters_key_ok = pthread_key_create(&counters_key, counters_shard_leave) == 0;
	__atomic_fetch_or(&counters_rec->flags, MT_FLAG_MULTITHREADED, __ATOMIC_RELAXED);
	/* pthread_create publishes this store to the new thread; the calling
	 * thread sees it at once. */
	__atomic_store_n(&counters_mt, 1, __ATOMIC_RELAXED);
	__atomic_store_n(&counters_fast, 0, __ATOMIC_RELAXED);
}

void counters_go_single(void)
{
	/* A fork child: the other threads and their shards are gone, and this
	 * one's pending counts were the parent's. */
	memset(&counters_tls, 0, sizeof counters_tls);
	memset(counters_shards, 0, sizeof counters_shards);
	counters_mt = 0;
	counters_fast = counters_glibc_sizes;
}

void counters_set_glibc_sizes(int yes)
{
	counters_glibc_sizes = yes;
	counters_fast = yes && !counters_mt;
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


/* Adds what `sh` holds to the record; `steal` when sh is another thread's
 * (atomic exchange, so a count racing with the end of the image is taken
 * at most once). */
static void counters_shard_drain(struct counters_shard *sh, int steal)
{
	struct mt_record *r = counters_rec;
	uint64_t v;
	for (unsigned i = 0; i < MT_CALL_COUNT; i++) {
		v = steal ? __atomic_exchange_n(&sh->calls[i], 0, __ATOMIC_RELAXED) : sh->calls[i];
		if (v) {
			__atomic_fetch_add(&r->calls[i], v, __ATOMIC_RELAXED);
			sh->calls[i] = 0;
		}
	}
	for (unsigned b = 0; b < MT_HIST_BUCKETS; b++) {
		v = steal ? __atomic_exchange_n(&sh->hist[b], 0, __ATOMIC_RELAXED) : sh->hist[b];
		if (v) {
			__atomic_fetch_add(&r->hist[b], v, __ATOMIC_RELAXED);
			sh->hist[b] = 0;
		}
	}
	v = steal ? __atomic_exchange_n(&sh->requested, 0, __ATOMIC_RELAXED) : sh->requested;
	if (v)
		__atomic_fetch_add(&r->heap_requested_total, v, __ATOMIC_RELAXED);
	sh->requested = 0;
	counters_max(&r->heap_largest_request, __atomic_load_n(&sh->largest, __ATOMIC_RELAXED));
	sh->pending = 0;
}

static void counters_shard_leave(void *arg)
{
	struct counters_shard *sh = arg;
	counters_shard_drain(sh, 0);
	for (unsigned i = 0; i < COUNTERS_MAX_SHARDS; i++)
		if (__atomic_load_n(&counters_shards[i], __ATOMIC_ACQUIRE) == sh)
			__atomic_store_n(&counters_shards[i], NULL, __ATOMIC_RELEASE);
	/* Direct from now on: glibc still frees after the key destructors
	 * (tcache, TLS), and a shard registered then would outlive the thread. */
	sh->state = -1;
}

static struct counters_shard *counters_shard_get(void)
{
	struct counters_shard *sh = &counters_tls;
	if (MT_LIKELY(sh->state > 0))
		return sh;
	if (sh->state < 0 || !counters_key_ok)
		return NULL;
	sh->state = -1; /* until registered: pthread_setspecific may allocate */
	for (unsigned i = 0; i < COUNTERS_MAX_SHARDS; i++) {
		struct counters_shard *none = NULL;
		if (__atomic_compare_exchange_n(&counters_shards[i], &none, sh, 0, __ATOMIC_ACQ_REL,
						__ATOMIC_RELAXED)) {
			if (pthread_setspecific(counters_key, sh) != 0) {
				__atomic_store_n(&counters_shards[i], NULL, __ATOMIC_RELEASE);
				return NULL;
			}
			sh->state = 1;
			return sh;
		}
	}
	return NULL;
}

static void counters_request_mt(struct mt_record *r, unsigned kind, size_t req)
{
	struct counters_shard *sh = counters_shard_get();
	if (MT_LIKELY(sh != NULL)) {
		sh->calls[kind]++;
		sh->requested += req;
		sh->hist[counters_bucket(req)]++;
		if (req > sh->largest)
			sh->largest = req;
		if (++sh->pending >= COUNTERS_FLUSH)
			counters_shard_drain(sh, 0);
		return;
	}
	__atomic_fetch_add(&r->calls[kind], 1, __ATOMIC_RELAXED);
	__atomic_fetch_add(&r->heap_requested_total, req, __ATOMIC_RELAXED);
	__atomic_fetch_add(&r->hist[counters_bucket(req)], 1, __ATOMIC_RELAXED);
	counters_max(&r->heap_largest_request, req);
}

void counters_read_calls(uint64_t calls[MT_CALL_SLOTS])
{
	for (unsigned i = 0; i < MT_CALL_SLOTS; i++)
		calls[i] = __atomic_load_n(&counters_rec->calls[i], __ATOMIC_RELAXED);
	if (!__atomic_load_n(&counters_mt, __ATOMIC_RELAXED))
		return;
	for (unsigned k = 0; k < COUNTERS_MAX_SHARDS; k++) {
		struct counters_shard *sh = __atomic_load_n(&counters_shards[k], __ATOMIC_ACQUIRE);
		for (unsigned i = 0; sh && i < MT_CALL_SLOTS; i++)
			calls[i] += __atomic_load_n(&sh->calls[i], __ATOMIC_RELAXED);
	}
}

void counters_settle(void)
{
	struct counters_shard *own = &counters_tls;
	if (!__atomic_load_n(&counters_mt, __ATOMIC_RELAXED))
		return;
	counters_refresh_total(counters_rec);
	if (own->state > 0)
		counters_shard_drain(own, 0);
	for (unsigned i = 0; i < COUNTERS_MAX_SHARDS; i++) {
		struct counters_shard *sh = __atomic_load_n(&counters_shards[i], __ATOMIC_ACQUIRE);
		if (sh && sh != own)
			counters_shard_drain(sh, 1);
	}
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
	struct counters_shard *sh = counters_shard_get();
	if (MT_LIKELY(sh != NULL)) {
		sh->calls[MT_CALL_FREE]++;
		if (++sh->pending >= COUNTERS_FLUSH)
			counters_shard_drain(sh, 0);
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
