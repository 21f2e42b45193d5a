/* counters.c: the cold half of the accounting (see counters.h): atomic
 * updates once the process is multithreaded, peak time stamps, mapping
 * figures.  Async-signal-safe; never allocates, locks or makes a system call
 * (clock_gettime is a vDSO call). */
#include <pthread.h>
#include <string.h>

#include "base/sys.h"
#include "core/counters.h"
#include "core/shards.h"
#include "invariant.h"

/* In .lbss with the large tables (shim.h): its alignment then pads no
 * small variable onto a page of its own. */
_Alignas(COUNTERS_HOME_ALIGN) union counters_home counters_home MT_TABLE;
struct mt_record *counters_rec = &counters_home.rec;
int counters_mt;
uint64_t counters_heap_stamp_next = 1, counters_total_stamp_next = 1;
uint64_t counters_maps_now;
uint64_t counters_peak_limit;
uint64_t counters_gate;

static void counters_refresh_total(struct mt_record *r);

/* The peak stamps taken before the first counters_bind (the bootstrap and
 * the constructor, until store_publish).  heap_peak_stamp and
 * total_peak_stamp lie on the record's second page, which nothing else
 * writes that early: kept here, they let the record file be mapped over
 * the home (counters.h) before that page is first written, and the image
 * pays no page fault for it. */
static uint64_t counters_early_heap_stamp, counters_early_total_stamp;
static int counters_bound;

struct mt_record *counters_local(void)
{
	return &counters_home.rec;
}

#define STAMP_MIN_STEP (64u * 1024u)

static uint64_t counters_next_stamp(uint64_t stamp)
{
	uint64_t step = stamp / 64;
	return stamp + (step > STAMP_MIN_STEP ? step : STAMP_MIN_STEP);
}

/* counters_peak_limit from the record's peaks and the mappings, read
 * after whatever moved them.  A signal handler of this thread may move them
 * again between the reads and the store and leave a limit a little too
 * low (a needless trip to counters_peaks_st, which compares the real
 * figures) or, if it mapped memory, too high by what it mapped until the
 * next peak or mapping call. */
static void counters_set_limit(const struct mt_record *r)
{
	uint64_t heap = __atomic_load_n(&r->heap_peak, __ATOMIC_RELAXED);
	uint64_t total = __atomic_load_n(&r->total_peak, __ATOMIC_RELAXED);
	uint64_t maps = __atomic_load_n(&counters_maps_now, __ATOMIC_RELAXED);
	uint64_t rest = total > maps ? total - maps : 0;
	__atomic_store_n(&counters_peak_limit, heap < rest ? heap : rest, __ATOMIC_RELAXED);
}

void counters_bind(struct mt_record *r)
{
	counters_rec = r;
	if (!counters_bound) {
		uint64_t h = __atomic_load_n(&counters_early_heap_stamp, __ATOMIC_RELAXED);
		uint64_t t = __atomic_load_n(&counters_early_total_stamp, __ATOMIC_RELAXED);
		__atomic_store_n(&counters_bound, 1, __ATOMIC_RELAXED);
		if (h)
			r->heap_peak_stamp = h;
		if (t)
			r->total_peak_stamp = t;
	}
	/* the gate only says what this record's largest request holds */
	counters_gate = counters_gate_for(r->heap_largest_request);
	counters_maps_now = r->map_anon_current + r->map_file_current;
	counters_set_limit(r);
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
}

static void counters_add_delta(struct shard *sh, void *ctx)
{
	*(int64_t *)ctx += sh->heap_delta;
}

void counters_go_single(void)
{
	/* A fork child: the other threads are gone.  Their shards' activity
	 * counts were the parent's; their live bytes are blocks the child
	 * inherited, so they join the child's figure (the forking thread
	 * flushed its own before the fork). */
	int64_t held = 0;
	if (counters_mt) {
		shards_for_each(counters_add_delta, &held);
		counters_rec->heap_current += (uint64_t)held;
		if ((int64_t)counters_rec->heap_current < 0)
			counters_rec->heap_current = 0;
	}
	counters_refresh_total(counters_rec);
	counters_set_limit(counters_rec);
	shards_reset_in_child();
	MT_ASSERT(shards_owned() == 0);
	counters_mt = 0;
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
	uint64_t now = sys_mono_ns_cold();
	__atomic_store_n(&r->heap_peak_mono_ns, now, __ATOMIC_RELAXED);
	__atomic_store_n(__atomic_load_n(&counters_bound, __ATOMIC_RELAXED)
				 ? &r->heap_peak_stamp
				 : &counters_early_heap_stamp,
			 cur, __ATOMIC_RELAXED);
	__atomic_store_n(&counters_heap_stamp_next, counters_next_stamp(cur), __ATOMIC_RELAXED);
}

void counters_stamp_total(uint64_t cur)
{
	struct mt_record *r = counters_rec;
	uint64_t now = sys_mono_ns_cold();
	__atomic_store_n(&r->total_peak_mono_ns, now, __ATOMIC_RELAXED);
	__atomic_store_n(__atomic_load_n(&counters_bound, __ATOMIC_RELAXED)
				 ? &r->total_peak_stamp
				 : &counters_early_total_stamp,
			 cur, __ATOMIC_RELAXED);
	__atomic_store_n(&counters_total_stamp_next, counters_next_stamp(cur), __ATOMIC_RELAXED);
}

void counters_peaks_st(struct mt_record *r, uint64_t cur)
{
	uint64_t tot = cur + counters_maps_now;
	if (cur > r->heap_peak && counters_raise_st(&r->heap_peak, cur) &&
	    cur >= counters_heap_stamp_next)
		counters_stamp_heap(cur);
	if (tot > r->total_peak) {
		r->total_current = tot;
		if (counters_raise_st(&r->total_peak, tot) && tot >= counters_total_stamp_next)
			counters_stamp_total(tot);
	}
	/* counters.h: after an update neither peak is below the figure it
	 * bounds (peaks only rise, so a handler of this thread that counted
	 * meanwhile cannot undo it).  Local values only: a handler may store
	 * total_current between a mapping call's store and its raise. */
	MT_ASSERT(r->heap_peak >= cur);
	MT_ASSERT(r->total_peak >= tot);
	counters_set_limit(r);
	/* the single-threaded allocation's one compare stands for both peaks */
	MT_ASSERT(counters_peak_limit <= r->heap_peak);
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


static inline uint64_t counters_take(uint64_t *x)
{
	return __atomic_load_n(x, __ATOMIC_RELAXED) ? __atomic_exchange_n(x, 0, __ATOMIC_RELAXED)
						    : 0;
}

/* Adds what `sh` holds to the record and zeroes it.  Every count is taken
 * with an exchange, so a shard drained by its owner (flush, thread end)
 * and by the image's end at once gives each count to the record once. */
static void counters_publish(struct mt_record *r, int64_t bytes);

void counters_drain_shard(struct shard *sh)
{
	struct mt_record *r = counters_rec;
	uint64_t v;
	int64_t d = __atomic_load_n(&sh->heap_delta, __ATOMIC_RELAXED)
			    ? __atomic_exchange_n(&sh->heap_delta, 0, __ATOMIC_RELAXED)
			    : 0;
	counters_publish(r, d);
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
}

/* The request's counts; returns the thread's shard (NULL: none, counted
 * in the record directly). */
static struct shard *counters_request_mt(struct mt_record *r, unsigned kind, size_t req)
{
	struct shard *sh = shards_mine();
	if (MT_LIKELY(sh != NULL)) {
		counters_request_shard(sh, kind, req);
		if (counters_flush_due(sh, kind))
			counters_flush_shard(sh);
		return sh;
	}
	__atomic_fetch_add(&r->calls[kind], 1, __ATOMIC_RELAXED);
	__atomic_fetch_add(&r->heap_requested_total, req, __ATOMIC_RELAXED);
	__atomic_fetch_add(&r->hist[counters_bucket(req)], 1, __ATOMIC_RELAXED);
	counters_max(&r->heap_largest_request, req);
	return NULL;
}

/* The room of a shard whose delta is d (counters.h, counters_live_shard):
 * how far d may grow before heap_current + d could pass either peak, from
 * the shared figures as they are now; never negative (a delta at or below
 * zero makes no peak), always below COUNTERS_DELTA_MAX. */
static int64_t counters_room(const struct mt_record *r)
{
	int64_t cur = (int64_t)__atomic_load_n(&r->heap_current, __ATOMIC_RELAXED);
	int64_t heap = (int64_t)__atomic_load_n(&r->heap_peak, __ATOMIC_RELAXED) - cur;
	int64_t total = (int64_t)__atomic_load_n(&r->total_peak, __ATOMIC_RELAXED) -
			(int64_t)__atomic_load_n(&counters_maps_now, __ATOMIC_RELAXED) - cur;
	int64_t room = heap < total ? heap : total;
	if (room < 0)
		return 0;
	return room < COUNTERS_DELTA_MAX ? room : COUNTERS_DELTA_MAX - 1;
}

/* shards.h: a shard's room is never negative and stays below
 * COUNTERS_DELTA_MAX, which lets counters_grow_fits test a growing delta
 * with one compare. */
static void counters_check_room(const struct shard *sh)
{
	MT_ASSERT(sh->heap_room >= 0);
	MT_ASSERT(sh->heap_room < COUNTERS_DELTA_MAX);
	(void)sh;
}

/* The owner's periodic flush: its delta is now in the shared figure, so
 * its room is computed afresh too. */
void counters_flush_shard(struct shard *sh)
{
	counters_drain_shard(sh);
	sh->heap_room = counters_room(counters_rec);
	counters_check_room(sh);
}

static void counters_add_shard(struct shard *sh, void *ctx)
{
	struct counters_live *live = ctx;
	for (unsigned i = 0; i < MT_CALL_SLOTS; i++)
		live->calls[i] += __atomic_load_n(&sh->calls[i], __ATOMIC_RELAXED);
	live->heap_current += (uint64_t)__atomic_load_n(&sh->heap_delta, __ATOMIC_RELAXED);
}

void counters_read_live(struct counters_live *live)
{
	const struct mt_record *r = counters_rec;
	int64_t heap;
	for (unsigned i = 0; i < MT_CALL_SLOTS; i++)
		live->calls[i] = __atomic_load_n(&r->calls[i], __ATOMIC_RELAXED);
	live->heap_current = __atomic_load_n(&r->heap_current, __ATOMIC_RELAXED);
	if (__atomic_load_n(&counters_mt, __ATOMIC_RELAXED))
		shards_for_each(counters_add_shard, live);
	/* Read while others run, the sum can be off by what moved between the
	 * loads, below zero included: never report less than nothing. */
	heap = (int64_t)live->heap_current;
	live->heap_current = heap > 0 ? (uint64_t)heap : 0;
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
	if (__atomic_load_n(&counters_mt, __ATOMIC_RELAXED))
		shards_for_each(counters_settle_shard, NULL);
	counters_refresh_total(counters_rec);
}

void counters_flush_own(void)
{
	struct shard *sh = shards_tls_mine;
	if (sh)
		counters_drain_shard(sh);
}

/* Signed: heap_current can read below zero while threads hold deltas
 * (see COUNTERS_DELTA_MAX), and a wrapped figure must never become a peak. */
static inline int counters_raise_signed(uint64_t *field, int64_t v)
{
	uint64_t old = __atomic_load_n(field, __ATOMIC_RELAXED);
	while (v > (int64_t)old) {
		if (__atomic_compare_exchange_n(field, &old, (uint64_t)v, 1, __ATOMIC_RELAXED,
						__ATOMIC_RELAXED))
			return 1;
	}
	return 0;
}

/* heap (shared figure plus what the caller knows is not in it yet) may be
 * a new peak of the heap and of heap + mappings.  total_current is stored
 * only when total_peak rises (and by mapping calls and at the end), so its
 * cache line is read, not written, by an ordinary allocation; heap_current
 * + map_*_current is the current total (record.h). */
static void counters_peaks_mt(struct mt_record *r, int64_t heap)
{
	int64_t tot;
	if (heap > (int64_t)__atomic_load_n(&r->heap_peak, __ATOMIC_RELAXED) &&
	    counters_raise_signed(&r->heap_peak, heap) &&
	    (uint64_t)heap >= __atomic_load_n(&counters_heap_stamp_next, __ATOMIC_RELAXED))
		counters_stamp_heap((uint64_t)heap);
	tot = heap + (int64_t)__atomic_load_n(&counters_maps_now, __ATOMIC_RELAXED);
	if (tot > (int64_t)__atomic_load_n(&r->total_peak, __ATOMIC_RELAXED)) {
		__atomic_store_n(&r->total_current, (uint64_t)tot, __ATOMIC_RELAXED);
		if (counters_raise_signed(&r->total_peak, tot) &&
		    (uint64_t)tot >= __atomic_load_n(&counters_total_stamp_next, __ATOMIC_RELAXED))
			counters_stamp_total((uint64_t)tot);
	}
}

/* Adds bytes to the shared heap_current: the one shared read-modify-write,
 * made once per COUNTERS_DELTA_MAX of a thread's churn (or per call for a
 * thread without a shard). */
static void counters_publish(struct mt_record *r, int64_t bytes)
{
	int64_t cur;
	if (bytes == 0)
		return;
	cur = (int64_t)__atomic_add_fetch(&r->heap_current, (uint64_t)bytes, __ATOMIC_RELAXED);
	if (bytes > 0)
		counters_peaks_mt(r, cur);
}

/* A call whose live bytes would take the delta past its room or below
 * -COUNTERS_DELTA_MAX.  A delta that passes +-COUNTERS_DELTA_MAX goes to
 * the shared figure whole, taken with an atomic exchange (so neither a
 * signal handler of this thread nor the image's end, which drains every
 * shard, can count it twice); a smaller one stays, and is tested against
 * the peaks as they are now.  Either way the room is computed afresh. */
void counters_live_shard_slow(struct shard *sh, int64_t bytes)
{
	struct mt_record *r = counters_rec;
	int64_t d = sh->heap_delta + bytes;
	if (d >= COUNTERS_DELTA_MAX || d <= -COUNTERS_DELTA_MAX) {
		counters_publish(r, bytes + __atomic_exchange_n(&sh->heap_delta, 0,
								 __ATOMIC_RELAXED));
	} else {
		/* a delta that stays is within +-COUNTERS_DELTA_MAX */
		MT_ASSERT(d > -COUNTERS_DELTA_MAX && d < COUNTERS_DELTA_MAX);
		counters_bump((uint64_t *)&sh->heap_delta, (uint64_t)bytes);
		if (bytes > 0)
			counters_peaks_mt(r, (int64_t)__atomic_load_n(&r->heap_current,
								      __ATOMIC_RELAXED) +
						     d);
	}
	sh->heap_room = counters_room(r);
	counters_check_room(sh);
}

/* counters_live_shard_slow for a call whose bytes the owner has already
 * added to its delta (hooks.c's threaded shortest paths count first and
 * test after, so that the test is one compare of the stored figure):
 * `grew` says whether they were an allocation's.  Also the flush of a
 * shard whose call count is due one. */
void counters_shard_settle(struct shard *sh, int grew)
{
	struct mt_record *r = counters_rec;
	int64_t d = __atomic_load_n(&sh->heap_delta, __ATOMIC_RELAXED);
	unsigned k;
	for (k = 0; k < MT_CALL_COUNT; k++)
		if (counters_flush_due(sh, k))
			break;
	if (k < MT_CALL_COUNT) {
		counters_flush_shard(sh); /* the delta goes too, peaks tested */
		return;
	}
	if (d >= COUNTERS_DELTA_MAX || d <= -COUNTERS_DELTA_MAX)
		counters_publish(r, __atomic_exchange_n(&sh->heap_delta, 0, __ATOMIC_RELAXED));
	else if (grew)
		counters_peaks_mt(r, (int64_t)__atomic_load_n(&r->heap_current, __ATOMIC_RELAXED) + d);
	sh->heap_room = counters_room(r);
	counters_check_room(sh);
}

static void counters_live_mt(struct mt_record *r, struct shard *sh, int64_t bytes)
{
	if (sh)
		counters_live_shard(sh, bytes);
	else
		counters_publish(r, bytes);
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
	struct shard *sh = counters_request_mt(r, kind, req);
	counters_live_mt(r, sh, (int64_t)usable);
}

void counters_note_free_mt(size_t usable)
{
	struct mt_record *r = counters_rec;
	/* free(NULL) claims no shard: glibc's thread teardown calls it after
	 * the key destructors, and a shard claimed then is never freed. */
	struct shard *sh = usable ? shards_mine() : shards_tls_mine;
	if (MT_LIKELY(sh != NULL)) {
		counters_bump(&sh->calls[MT_CALL_FREE], 1);
		if (counters_flush_due(sh, MT_CALL_FREE))
			counters_flush_shard(sh);
	} else {
		__atomic_fetch_add(&r->calls[MT_CALL_FREE], 1, __ATOMIC_RELAXED);
	}
	if (usable)
		counters_live_mt(r, sh, -(int64_t)usable);
}

void counters_note_realloc_mt(unsigned kind, size_t req, size_t old_usable, size_t new_usable)
{
	struct mt_record *r = counters_rec;
	struct shard *sh = counters_request_mt(r, kind, req);
	if (new_usable != old_usable)
		counters_live_mt(r, sh, (int64_t)new_usable - (int64_t)old_usable);
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
	counters_set_limit(r);
}

void counters_note_map_untracked(uint64_t bytes)
{
	struct mt_record *r = counters_rec;
	__atomic_fetch_add(&r->map_untracked_calls, 1, __ATOMIC_RELAXED);
	__atomic_fetch_add(&r->map_untracked_bytes, bytes, __ATOMIC_RELAXED);
	counters_set_flag(MT_FLAG_MAP_OVERFLOW);
}

void counters_note_alloc(unsigned kind, size_t req, size_t usable)
{
	struct mt_record *r = counters_rec;
	if (MT_UNLIKELY(counters_mt)) {
		counters_note_alloc_mt(kind, req, usable);
		return;
	}
	counters_request_st(r, kind, req);
	counters_grow_st(r, usable);
}

void counters_note_free(size_t usable)
{
	if (MT_UNLIKELY(counters_mt)) {
		counters_note_free_mt(usable);
		return;
	}
	counters_free_st(counters_rec, usable);
}

void counters_note_realloc(unsigned kind, size_t req, size_t old_usable, size_t new_usable)
{
	struct mt_record *r = counters_rec;
	if (MT_UNLIKELY(counters_mt)) {
		counters_note_realloc_mt(kind, req, old_usable, new_usable);
		return;
	}
	counters_request_st(r, kind, req);
	if (new_usable >= old_usable)
		counters_grow_st(r, new_usable - old_usable);
	else
		counters_drop(&r->heap_current, (uint64_t)(old_usable - new_usable));
}

size_t counters_request_rare_st(struct mt_record *r, size_t req)
{
	r->hist[counters_bucket(req)]++;
	if (req > r->heap_largest_request)
		r->heap_largest_request = req;
	if (req != 0)
		counters_gate = counters_gate_for(req);
	return req;
}

size_t counters_request_rare_shard(struct shard *sh, size_t req)
{
	counters_bump(&sh->hist[counters_bucket(req)], 1);
	if (req > sh->largest)
		sh->largest = req; /* a handler's larger request may be lost */
	if (req != 0)
		sh->gate = counters_gate_for(req);
	return req;
}
