/* test_shim_counters.c: the shim's tracking core without LD_PRELOAD:
 * counters (single-threaded and atomic paths, histogram, peak stamps) and
 * the mapped-region table, including its overflow. */
#include <criterion/criterion.h>
#include <errno.h>
#include <pthread.h>
#include <string.h>
#include <unistd.h>

#include "base/boot.h"
#include "base/route.h"
#include "core/counters.h"
#include "core/maps.h"
#include "record.h"

static struct mt_record rec;

/* A fresh record owned by this process (shards are only claimed by the
 * process whose pid the record names: never by a vfork child). */
static void bind_fresh(void)
{
	memset(&rec, 0, sizeof rec);
	rec.pid = getpid();
	counters_go_single();
	counters_bind(&rec);
}

/* The shortest paths take block sizes from glibc's chunk headers, which
 * the shim trusts only once its probe of real blocks agrees with
 * malloc_usable_size (boot.c).  On the glibc the tests run on it must: a
 * probe that failed would send every call down the slow paths, and
 * nothing else would say so.  boot_init only makes the probe due: it
 * runs at the first allocation (boot_heap_ensure), so that a program
 * that never allocates gets no heap. */
Test(counters, glibc_chunk_headers_are_trusted_after_boot)
{
#if defined(__SANITIZE_ADDRESS__)
	cr_skip_test("the next malloc is ASan's here, not glibc's");
#endif
	bind_fresh();
	cr_assert_eq(boot_init(), 1);
	cr_expect_eq(boot_probe_due, 1);
	cr_expect_eq(boot_glibc_chunks, 0);
	cr_expect_not(route_mode & ROUTE_ST, "route_mode %#x", route_mode);
	boot_heap_ensure();
	cr_expect_eq(boot_probe_due, 0);
	cr_expect_eq(boot_glibc_chunks, 1);
	cr_expect(route_mode & ROUTE_ST, "route_mode %#x", route_mode);
}

Test(counters, bucket_edges)
{
	cr_expect_eq(counters_bucket(0), 0);
	cr_expect_eq(counters_bucket(1), 0);
	cr_expect_eq(counters_bucket(2), 1);
	cr_expect_eq(counters_bucket(3), 2);
	cr_expect_eq(counters_bucket(4), 2);
	cr_expect_eq(counters_bucket(5), 3);
	cr_expect_eq(counters_bucket(1u << 20), 20);
	cr_expect_eq(counters_bucket((1u << 20) + 1), 21);
	cr_expect_eq(counters_bucket(SIZE_MAX), MT_HIST_BUCKETS - 1);
}

Test(counters, single_thread_sequence)
{
	bind_fresh();
	counters_note_alloc(MT_CALL_MALLOC, 100, 104);
	counters_note_alloc(MT_CALL_CALLOC, 1000, 1008);
	counters_note_realloc(MT_CALL_REALLOC, 5000, 104, 5016);
	counters_note_free(1008);
	counters_note_alloc(MT_CALL_MALLOC, 7, 0); /* failed */
	cr_expect_eq(rec.heap_current, 5016);
	cr_expect_eq(rec.heap_peak, 104 + 1008 - 104 + 5016);
	cr_expect_eq(rec.total_peak, rec.heap_peak);
	cr_expect_eq(rec.total_current, rec.total_peak, "stored when the total peaked");
	counters_settle(); /* the end stores it */
	cr_expect_eq(rec.total_current, 5016);
	cr_expect_eq(rec.heap_requested_total, 100 + 1000 + 5000 + 7);
	cr_expect_eq(rec.heap_largest_request, 5000);
	cr_expect_eq(rec.calls[MT_CALL_MALLOC], 2);
	cr_expect_eq(rec.calls[MT_CALL_CALLOC], 1);
	cr_expect_eq(rec.calls[MT_CALL_REALLOC], 1);
	cr_expect_eq(rec.calls[MT_CALL_FREE], 1);
	cr_expect_eq(rec.hist[7], 1);  /* 100 */
	cr_expect_eq(rec.hist[10], 1); /* 1000 */
	cr_expect_eq(rec.hist[13], 1); /* 5000 */
	cr_expect_eq(rec.hist[3], 1);  /* 7 */
	/* realloc shrink gives bytes back */
	counters_note_realloc(MT_CALL_REALLOC, 10, 5016, 24);
	cr_expect_eq(rec.heap_current, 24);
}

/* The histogram's bucket and the largest request share one test, against
 * a gate that only rises (counters.h): every request, in any order, still
 * lands in counters_bucket's bucket, the largest request is the largest,
 * and a new record's largest starts again (a fork child's). */
static const size_t gate_reqs[] = {
	5, 3, 0, 1, 2, 4, 100, 64, 65, 1000, 999, 7, 0, 1,
	(size_t)1 << 62, ((size_t)1 << 63) - 1, (size_t)1 << 63, ((size_t)1 << 63) + 1,
	SIZE_MAX, ((size_t)1 << 63) + 5, 17, 1, 0, 4096, SIZE_MAX - 4096, 33,
};
#define GATE_N (sizeof gate_reqs / sizeof gate_reqs[0])

static void gate_expect(const char *how)
{
	uint64_t hist[MT_HIST_BUCKETS] = { 0 }, requested = 0, largest = 0;
	for (unsigned i = 0; i < GATE_N; i++) {
		hist[counters_bucket(gate_reqs[i])]++;
		requested += gate_reqs[i];
		if (gate_reqs[i] > largest)
			largest = gate_reqs[i];
	}
	for (unsigned b = 0; b < MT_HIST_BUCKETS; b++)
		cr_expect_eq(rec.hist[b], hist[b], "%s: hist[%u] %llu, want %llu", how, b,
			     (unsigned long long)rec.hist[b], (unsigned long long)hist[b]);
	cr_expect_eq(rec.heap_requested_total, requested, "%s", how);
	cr_expect_eq(rec.heap_largest_request, largest, "%s", how);
	cr_expect_eq(rec.calls[MT_CALL_MALLOC], GATE_N, "%s", how);
}

Test(counters, gated_buckets_and_largest_single_thread)
{
	bind_fresh();
	for (unsigned i = 0; i < GATE_N; i++)
		counters_note_alloc(MT_CALL_MALLOC, gate_reqs[i], 0);
	gate_expect("single-threaded");
	/* a new record: its largest starts at 0, so the gate must too */
	bind_fresh();
	counters_note_alloc(MT_CALL_MALLOC, 5, 0);
	counters_note_alloc(MT_CALL_MALLOC, 3, 0);
	cr_expect_eq(rec.heap_largest_request, 5);
	cr_expect_eq(rec.hist[3], 1);
	cr_expect_eq(rec.hist[2], 1);
}

static void *gate_thread(void *arg)
{
	(void)arg;
	for (unsigned i = 0; i < GATE_N; i++)
		counters_note_alloc(MT_CALL_MALLOC, gate_reqs[i], 0);
	return NULL;
}

Test(counters, gated_buckets_and_largest_in_a_shard, .timeout = 30)
{
	pthread_t t;
	bind_fresh();
	counters_go_multithreaded();
	pthread_create(&t, NULL, gate_thread, NULL);
	pthread_join(t, NULL);
	counters_settle();
	gate_expect("a thread's shard");
	counters_go_single();
}

Test(counters, peak_stamp_is_within_step)
{
	bind_fresh();
	/* Grow in 1 KiB steps to 10 MiB: the clock is read O(log) times, and
	 * the last stamp is within max(64 KiB, stamp/64) of the peak. */
	for (int i = 0; i < 10240; i++)
		counters_note_alloc(MT_CALL_MALLOC, 1024, 1024);
	cr_expect_eq(rec.heap_peak, 10u << 20);
	cr_expect_neq(rec.heap_peak_mono_ns, 0);
	uint64_t step = rec.heap_peak_stamp / 64 > 65536 ? rec.heap_peak_stamp / 64 : 65536;
	cr_expect_leq(rec.heap_peak_stamp, rec.heap_peak);
	cr_expect_lt(rec.heap_peak - rec.heap_peak_stamp, step);
	cr_expect_leq(rec.total_peak_stamp, rec.total_peak);
}

/* Heap under its own peak, heap + mappings over theirs: a total peak all
 * the same (the one limit an allocation compares covers both). */
Test(counters, total_peak_with_the_heap_under_its_peak)
{
	bind_fresh();
	counters_note_alloc(MT_CALL_MALLOC, 4000, 4000);
	counters_note_free(4000);
	counters_note_map(8192, 0, 8192);
	cr_expect_eq(rec.total_peak, 8192);
	counters_note_alloc(MT_CALL_MALLOC, 1000, 1000);
	cr_expect_eq(rec.heap_peak, 4000);
	cr_expect_eq(rec.total_peak, 9192);
	cr_expect_eq(rec.total_current, 9192);
	counters_note_map(-8192, 0, 0);
	counters_note_alloc(MT_CALL_MALLOC, 3000, 3000); /* 4000: no new peak */
	cr_expect_eq(rec.heap_peak, 4000);
	cr_expect_eq(rec.total_peak, 9192);
	counters_note_alloc(MT_CALL_MALLOC, 1, 24); /* 4024: the heap's */
	cr_expect_eq(rec.heap_peak, 4024);
	cr_expect_eq(rec.total_peak, 9192);
}

Test(counters, maps_and_total_peak)
{
	bind_fresh();
	counters_note_alloc(MT_CALL_MALLOC, 4000, 4000);
	counters_note_map(8192, 0, 8192);
	counters_note_free(4000);
	counters_note_map(0, 4096, 4096);
	counters_note_map(-8192, -4096, 0);
	cr_expect_eq(rec.map_anon_peak, 8192);
	cr_expect_eq(rec.map_file_peak, 4096);
	cr_expect_eq(rec.map_largest, 8192);
	cr_expect_eq(rec.total_peak, 12288); /* anon 8192 + file 4096 after the heap went */
	cr_expect_eq(rec.total_current, 0);
	cr_expect_eq(rec.map_anon_current, 0);
}

#define T_THREADS 4
#define T_OPS 200000

static void *hammer(void *arg)
{
	(void)arg;
	for (int i = 0; i < T_OPS; i++) {
		counters_note_alloc(MT_CALL_MALLOC, 32, 48);
		counters_note_free(48);
	}
	return NULL;
}

Test(counters, atomic_mode_loses_nothing, .timeout = 30)
{
	pthread_t t[T_THREADS];
	bind_fresh();
	counters_go_multithreaded();
	for (int i = 0; i < T_THREADS; i++)
		pthread_create(&t[i], NULL, hammer, NULL);
	for (int i = 0; i < T_THREADS; i++)
		pthread_join(t[i], NULL);
	cr_expect(rec.flags & MT_FLAG_MULTITHREADED);
	cr_expect_eq(rec.calls[MT_CALL_MALLOC], (uint64_t)T_THREADS * T_OPS);
	cr_expect_eq(rec.calls[MT_CALL_FREE], (uint64_t)T_THREADS * T_OPS);
	cr_expect_eq(rec.heap_current, 0);
	cr_expect_eq(rec.hist[5], (uint64_t)T_THREADS * T_OPS);
	cr_expect_leq(rec.heap_peak, 48u * T_THREADS);
	cr_expect_geq(rec.heap_peak, 48u);
	counters_go_single();
}

static pthread_barrier_t parked;

static void *count_then_park(void *arg)
{
	(void)arg;
	for (int i = 0; i < 1000; i++) /* fewer than a flush, and under 64 KiB */
		counters_note_alloc(MT_CALL_CALLOC, 8, 16);
	pthread_barrier_wait(&parked); /* counted, not flushed yet */
	pthread_barrier_wait(&parked); /* main has looked */
	return NULL;
}

/* Per-thread shards: what a live thread still holds is visible through
 * counters_read_live and lands in the record at counters_settle. */
Test(counters, shards_read_and_settle, .timeout = 30)
{
	pthread_t t[2];
	struct counters_live live;
	bind_fresh();
	counters_go_multithreaded();
	pthread_barrier_init(&parked, NULL, 3);
	for (int i = 0; i < 2; i++)
		pthread_create(&t[i], NULL, count_then_park, NULL);
	pthread_barrier_wait(&parked);
	cr_expect_lt(rec.calls[MT_CALL_CALLOC], 2000, "some counts are still in shards");
	cr_expect_lt(rec.heap_current, 2 * 1000 * 16, "some live bytes are still in shards");
	counters_read_live(&live);
	cr_expect_eq(live.calls[MT_CALL_CALLOC], 2000);
	cr_expect_eq(live.heap_current, 2 * 1000 * 16);
	counters_settle();
	cr_expect_eq(rec.calls[MT_CALL_CALLOC], 2000);
	cr_expect_eq(rec.hist[3], 2000);
	cr_expect_eq(rec.heap_requested_total, 2 * 1000 * 8);
	cr_expect_eq(rec.heap_current, 2 * 1000 * 16);
	cr_expect_eq(rec.heap_peak, 2 * 1000 * 16);
	cr_expect_eq(rec.total_current, 2 * 1000 * 16);
	pthread_barrier_wait(&parked);
	for (int i = 0; i < 2; i++)
		pthread_join(t[i], NULL);
	cr_expect_eq(rec.calls[MT_CALL_CALLOC], 2000, "nothing counted twice at thread exit");
	cr_expect_eq(rec.heap_current, 2 * 1000 * 16, "nothing counted twice at thread exit");
	counters_go_single();
}

/* A fresh record in threaded mode, and one thread running fn that meets
 * the test at `parked` (two parties) between its steps. */
static void start_parked(pthread_t *t, void *(*fn)(void *))
{
	bind_fresh();
	counters_go_multithreaded();
	pthread_barrier_init(&parked, NULL, 2);
	cr_assert_eq(pthread_create(t, NULL, fn, NULL), 0);
}

/* A block of 64 KiB or more reaches the shared figure at once. */
static void *alloc_big_then_park(void *arg)
{
	(void)arg;
	counters_note_alloc(MT_CALL_MALLOC, 100000, 100016);
	pthread_barrier_wait(&parked);
	pthread_barrier_wait(&parked);
	return NULL;
}

Test(counters, large_block_is_published_at_once, .timeout = 30)
{
	pthread_t t;
	start_parked(&t, alloc_big_then_park);
	pthread_barrier_wait(&parked);
	cr_expect_eq(rec.heap_current, 100016);
	cr_expect_eq(rec.heap_peak, 100016);
	pthread_barrier_wait(&parked);
	pthread_join(t, NULL);
	counters_go_single();
}

/* A shard reaches the record when one kind of call has been counted 1024
 * times since it last did (counters.h, counters_flush_due): 1023 mallocs
 * and 1023 frees stay in the shard, the 1024th malloc moves the lot, the
 * frees' count included; then 1024 frees move themselves.  16-byte blocks
 * keep the live bytes well inside +-64 KiB, so no other rule moves them. */
static void *count_to_each_flush(void *arg)
{
	(void)arg;
	for (int i = 0; i < 1023; i++) {
		counters_note_alloc(MT_CALL_MALLOC, 8, 16);
		counters_note_free(16);
	}
	pthread_barrier_wait(&parked); /* 1: 1023 of each, in the shard */
	pthread_barrier_wait(&parked);
	counters_note_alloc(MT_CALL_MALLOC, 8, 16);
	pthread_barrier_wait(&parked); /* 2: the 1024th malloc */
	pthread_barrier_wait(&parked);
	for (int i = 0; i < 1023; i++)
		counters_note_free(16);
	pthread_barrier_wait(&parked); /* 3: 1023 frees since */
	pthread_barrier_wait(&parked);
	counters_note_free(16);
	pthread_barrier_wait(&parked); /* 4: the 1024th */
	pthread_barrier_wait(&parked);
	return NULL;
}

Test(counters, shard_flushes_at_1024_calls_of_one_kind, .timeout = 30)
{
	pthread_t t;
	start_parked(&t, count_to_each_flush);
	pthread_barrier_wait(&parked); /* 1 */
	cr_expect_eq(rec.calls[MT_CALL_MALLOC], 0, "1023 mallocs are still in the shard");
	cr_expect_eq(rec.calls[MT_CALL_FREE], 0, "1023 frees are still in the shard");
	pthread_barrier_wait(&parked);
	pthread_barrier_wait(&parked); /* 2 */
	cr_expect_eq(rec.calls[MT_CALL_MALLOC], 1024);
	cr_expect_eq(rec.calls[MT_CALL_FREE], 1023, "a flush moves every kind");
	cr_expect_eq(rec.hist[3], 1024);
	cr_expect_eq(rec.heap_requested_total, 1024 * 8);
	cr_expect_eq(rec.heap_current, 0, "the flush moves the live bytes so far, "
		     "before this call's own");
	pthread_barrier_wait(&parked);
	pthread_barrier_wait(&parked); /* 3 */
	cr_expect_eq(rec.calls[MT_CALL_FREE], 1023, "the frees since are in the shard");
	pthread_barrier_wait(&parked);
	pthread_barrier_wait(&parked); /* 4 */
	cr_expect_eq(rec.calls[MT_CALL_FREE], 2047);
	cr_expect_eq(rec.calls[MT_CALL_MALLOC], 1024);
	cr_expect_eq((int64_t)rec.heap_current, 16 - 1023 * 16, "the frees before the 1024th");
	pthread_barrier_wait(&parked);
	pthread_join(t, NULL);
	counters_go_single();
}

/* One thread allocates blocks it keeps in its shard; another frees them
 * (and the main thread's) and goes past -64 KiB first: the shared figure reads below zero for a
 * while.  No figure may wrap into a huge peak, a live read is never below
 * zero, and the end is exact. */
static void *alloc_60_and_park(void *arg)
{
	(void)arg;
	for (int i = 0; i < 60; i++)
		counters_note_alloc(MT_CALL_MALLOC, 1000, 1008);
	pthread_barrier_wait(&parked); /* 1: allocated, delta held */
	pthread_barrier_wait(&parked); /* 2: the other thread freed */
	pthread_barrier_wait(&parked); /* 3: main has looked */
	return NULL;
}

static void *free_66(void *arg)
{
	(void)arg;
	pthread_barrier_wait(&parked); /* 1 */
	for (int i = 0; i < 66; i++) /* the 66th passes -64 KiB: published */
		counters_note_free(1008);
	pthread_barrier_wait(&parked); /* 2 */
	pthread_barrier_wait(&parked); /* 3 */
	return NULL;
}

Test(counters, shared_figure_below_zero_never_wraps, .timeout = 30)
{
	pthread_t a, b;
	struct counters_live live;
	bind_fresh();
	counters_note_alloc(MT_CALL_MALLOC, 6000, 6 * 1008); /* main: 6 blocks */
	counters_go_multithreaded();
	pthread_barrier_init(&parked, NULL, 3);
	pthread_create(&a, NULL, alloc_60_and_park, NULL);
	pthread_create(&b, NULL, free_66, NULL);
	pthread_barrier_wait(&parked); /* 1 */
	pthread_barrier_wait(&parked); /* 2 */
	cr_expect_lt((int64_t)rec.heap_current, 0, "the shared figure is below zero for now");
	cr_expect_eq(rec.heap_peak, 6 * 1008 + 60 * 1008, "the peak did not wrap: %llu",
		     (unsigned long long)rec.heap_peak);
	counters_read_live(&live);
	cr_expect_eq(live.heap_current, 0);
	pthread_barrier_wait(&parked); /* 3 */
	pthread_join(a, NULL);
	pthread_join(b, NULL);
	counters_settle();
	cr_expect_eq(rec.heap_current, 0);
	cr_expect_eq(rec.calls[MT_CALL_FREE], 66);
	counters_go_single();
}

/* A thread's own growth is a peak at once, although its bytes stay in its
 * shard: an allocation past the shard's room tests the peaks, one inside
 * it does not need to (counters.h, counters_live_shard). */
static void *grow_shrink_grow(void *arg)
{
	(void)arg;
	for (int i = 0; i < 50; i++)
		counters_note_alloc(MT_CALL_MALLOC, 1000, 1008);
	pthread_barrier_wait(&parked); /* 1: 50 blocks, under 64 KiB */
	pthread_barrier_wait(&parked); /* 2: main has looked */
	for (int i = 0; i < 20; i++)
		counters_note_free(1008);
	for (int i = 0; i < 10; i++) /* back to 40 blocks: inside the room */
		counters_note_alloc(MT_CALL_MALLOC, 1000, 1008);
	pthread_barrier_wait(&parked); /* 3 */
	pthread_barrier_wait(&parked); /* 4 */
	for (int i = 0; i < 20; i++) /* 60 blocks: past the room */
		counters_note_alloc(MT_CALL_MALLOC, 1000, 1008);
	pthread_barrier_wait(&parked); /* 5 */
	pthread_barrier_wait(&parked); /* 6 */
	return NULL;
}

Test(counters, a_threads_own_growth_is_a_peak_at_once, .timeout = 30)
{
	pthread_t t;
	start_parked(&t, grow_shrink_grow);
	pthread_barrier_wait(&parked); /* 1 */
	cr_expect_eq(rec.heap_current, 0, "the bytes are still in the shard");
	cr_expect_eq(rec.heap_peak, 50 * 1008);
	cr_expect_eq(rec.total_peak, 50 * 1008);
	pthread_barrier_wait(&parked); /* 2 */
	pthread_barrier_wait(&parked); /* 3 */
	cr_expect_eq(rec.heap_peak, 50 * 1008, "no new peak at 40 blocks");
	pthread_barrier_wait(&parked); /* 4 */
	pthread_barrier_wait(&parked); /* 5 */
	cr_expect_eq(rec.heap_peak, 60 * 1008);
	cr_expect_eq(rec.heap_current, 0);
	pthread_barrier_wait(&parked); /* 6 */
	pthread_join(t, NULL);
	cr_expect_eq(rec.heap_current, 60 * 1008, "the thread's end adds its bytes");
	counters_go_single();
}

/* The room goes stale when another thread publishes: the live peak may
 * then miss what the first thread holds in its shard, never more than
 * 64 KiB per running thread (record.h), and the end is exact. */
static void *hold_release_regrow(void *arg)
{
	(void)arg;
	for (int i = 0; i < 32; i++)
		counters_note_alloc(MT_CALL_MALLOC, 1000, 1008);
	for (int i = 0; i < 32; i++)
		counters_note_free(1008);
	pthread_barrier_wait(&parked); /* 1: delta 0, room 32 blocks */
	pthread_barrier_wait(&parked); /* 2: main published a large block */
	for (int i = 0; i < 30; i++)
		counters_note_alloc(MT_CALL_MALLOC, 1000, 1008);
	pthread_barrier_wait(&parked); /* 3 */
	pthread_barrier_wait(&parked); /* 4 */
	return NULL;
}

Test(counters, a_stale_room_misses_less_than_the_bound, .timeout = 30)
{
	pthread_t t;
	uint64_t truth = 100016 + 30 * 1008;
	start_parked(&t, hold_release_regrow);
	pthread_barrier_wait(&parked); /* 1 */
	counters_note_alloc(MT_CALL_MALLOC, 100000, 100016); /* published at once */
	cr_expect_eq(rec.heap_peak, 100016);
	pthread_barrier_wait(&parked); /* 2 */
	pthread_barrier_wait(&parked); /* 3 */
	cr_expect_leq(rec.heap_peak, truth);
	cr_expect_geq(rec.heap_peak + 2 * 65536, truth, "peak %llu, truth %llu",
		      (unsigned long long)rec.heap_peak, (unsigned long long)truth);
	counters_settle();
	cr_expect_eq(rec.heap_current, truth);
	cr_expect_eq(rec.heap_peak, truth, "exact once settled");
	pthread_barrier_wait(&parked); /* 4 */
	pthread_join(t, NULL);
	counters_go_single();
}

/* ---- the map table ------------------------------------------------------ */

#define PG 4096u

static struct maps_region slots[8];
static struct maps_table tab;
static struct maps_delta d;

static void fresh_table(size_t cap)
{
	maps_init(&tab, slots, cap);
	memset(&d, 0, sizeof d);
}

Test(maps, add_remove_split)
{
	fresh_table(8);
	cr_assert_eq(maps_add(&tab, 100 * PG, 10 * PG, MAPS_ANON, &d), 0);
	cr_expect_eq(d.bytes[MAPS_ANON], 10 * PG);
	maps_remove(&tab, 104 * PG, 2 * PG, &d); /* hole: split in two */
	cr_expect_eq(d.bytes[MAPS_ANON], 8 * PG);
	cr_expect_eq(tab.n, 2);
	maps_remove(&tab, 99 * PG, 2 * PG, &d);   /* head, partly outside */
	maps_remove(&tab, 109 * PG, 5 * PG, &d);  /* tail, partly outside */
	cr_expect_eq(d.bytes[MAPS_ANON], 6 * PG);
	maps_remove(&tab, 500 * PG, 5 * PG, &d);  /* untracked: no change */
	cr_expect_eq(d.bytes[MAPS_ANON], 6 * PG);
	maps_remove(&tab, 0, 1000 * PG, &d);      /* everything */
	cr_expect_eq(d.bytes[MAPS_ANON], 0);
	cr_expect_eq(tab.n, 0);
}

Test(maps, fixed_replaces_and_kinds_stay_apart)
{
	fresh_table(8);
	maps_add(&tab, 10 * PG, 4 * PG, MAPS_ANON, &d);
	maps_add(&tab, 11 * PG, 2 * PG, MAPS_FILE, &d); /* MAP_FIXED over the middle */
	cr_expect_eq(d.bytes[MAPS_ANON], 2 * PG);
	cr_expect_eq(d.bytes[MAPS_FILE], 2 * PG);
	cr_expect_eq(tab.n, 3);
	maps_add(&tab, 14 * PG, 1 * PG, MAPS_ANON, &d); /* adjacent same kind: merged */
	cr_expect_eq(tab.n, 3);
	cr_expect_eq(d.bytes[MAPS_ANON], 3 * PG);
}

Test(maps, remap_grow_shrink_move)
{
	fresh_table(8);
	maps_add(&tab, 10 * PG, 4 * PG, MAPS_FILE, &d);
	cr_expect_eq(maps_remap(&tab, 10 * PG, 4 * PG, 10 * PG, 8 * PG, 0, &d), 1); /* grow */
	cr_expect_eq(d.bytes[MAPS_FILE], 8 * PG);
	cr_expect_eq(maps_remap(&tab, 10 * PG, 8 * PG, 50 * PG, 3 * PG, 0, &d), 1); /* move+shrink */
	cr_expect_eq(d.bytes[MAPS_FILE], 3 * PG);
	cr_expect_eq(tab.n, 1);
	cr_expect_eq(tab.slots[0].start, 50 * PG);
	cr_expect_eq(maps_remap(&tab, 900 * PG, PG, 901 * PG, PG, 0, &d), 0); /* not ours */
	cr_expect_eq(maps_remap(&tab, 50 * PG, 3 * PG, 70 * PG, 3 * PG, 1, &d), 1); /* DONTUNMAP */
	cr_expect_eq(d.bytes[MAPS_FILE], 6 * PG);
}

Test(maps, overflow_is_counted_not_lost)
{
	fresh_table(3);
	/* Non-adjacent regions so nothing merges. */
	for (unsigned i = 0; i < 3; i++)
		cr_assert_eq(maps_add(&tab, (10 + 10 * i) * PG, PG, MAPS_ANON, &d), 0);
	cr_expect_eq(maps_add(&tab, 100 * PG, 2 * PG, MAPS_ANON, &d), -ENOSPC);
	cr_expect_eq(d.untracked_calls, 1);
	cr_expect_eq(d.untracked_bytes, 2 * PG);
	cr_expect_eq(d.bytes[MAPS_ANON], 3 * PG);
	/* Splitting with a full table drops the tail from tracking. */
	maps_add(&tab, 40 * PG, 0, MAPS_ANON, &d); /* no-op */
	maps_remove(&tab, 10 * PG, 1 * PG, &d);     /* free a slot */
	maps_add(&tab, 60 * PG, 5 * PG, MAPS_FILE, &d);
	cr_expect_eq(tab.n, 3);
	maps_remove(&tab, 61 * PG, PG, &d); /* split needs a 4th slot */
	cr_expect_eq(d.untracked_calls, 2);
	cr_expect_eq(d.untracked_bytes, 2 * PG + 3 * PG);
	cr_expect_eq(d.bytes[MAPS_FILE], 1 * PG);
	cr_expect_eq(tab.n, 3);
}
