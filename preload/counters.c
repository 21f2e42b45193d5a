/* counters.c: the cold half of the accounting (see counters.h): atomic
 * updates once the process is multithreaded, peak time stamps, mapping
 * figures.  Async-signal-safe; never allocates, locks or makes a system call
 * (clock_gettime is a vDSO call). */
#include "counters.h"
#include "sys.h"

static struct mt_record counters_scratch;
struct mt_record *counters_rec = &counters_scratch;
int counters_mt;
uint64_t counters_heap_stamp_next = 1, counters_total_stamp_next = 1;
uint64_t counters_maps_now;
int counters_fast;
static int counters_glibc_sizes;

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
	__atomic_fetch_or(&counters_rec->flags, MT_FLAG_MULTITHREADED, __ATOMIC_RELAXED);
	/* pthread_create publishes this store to the new thread; the calling
	 * thread sees it at once. */
	__atomic_store_n(&counters_mt, 1, __ATOMIC_RELAXED);
	__atomic_store_n(&counters_fast, 0, __ATOMIC_RELAXED);
}

void counters_go_single(void)
{
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

static void counters_request_mt(struct mt_record *r, unsigned kind, size_t req)
{
	__atomic_fetch_add(&r->calls[kind], 1, __ATOMIC_RELAXED);
	__atomic_fetch_add(&r->heap_requested_total, req, __ATOMIC_RELAXED);
	__atomic_fetch_add(&r->hist[counters_bucket(req)], 1, __ATOMIC_RELAXED);
	counters_max(&r->heap_largest_request, req);
}

static void counters_add_mt(struct mt_record *r, int64_t bytes)
{
	uint64_t cur, tot;
	if (bytes == 0)
		return;
	cur = __atomic_add_fetch(&r->heap_current, (uint64_t)bytes, __ATOMIC_RELAXED);
	tot = __atomic_add_fetch(&r->total_current, (uint64_t)bytes, __ATOMIC_RELAXED);
	if (bytes < 0)
		return;
	if (counters_max_raised(&r->heap_peak, cur) &&
	    cur >= __atomic_load_n(&counters_heap_stamp_next, __ATOMIC_RELAXED))
		counters_stamp_heap(cur);
	if (counters_max_raised(&r->total_peak, tot) &&
	    tot >= __atomic_load_n(&counters_total_stamp_next, __ATOMIC_RELAXED))
		counters_stamp_total(tot);
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
	__atomic_fetch_add(&r->calls[MT_CALL_FREE], 1, __ATOMIC_RELAXED);
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
	__atomic_add_fetch(&counters_maps_now, (uint64_t)(anon + file), __ATOMIC_RELAXED);
	tot = __atomic_add_fetch(&r->total_current, (uint64_t)(anon + file), __ATOMIC_RELAXED);
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
