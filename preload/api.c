/* api.c: the public API of memtrace.h, exported from the shim. */
#include <errno.h>
#include <sched.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>

#include "api.h"
#include "base/sys.h"
#include "core/counters.h"
#include "memtrace.h"
#include "base/shim.h"

static int api_mark_lock;

static uint64_t api_load(const uint64_t *p)
{
	return __atomic_load_n(p, __ATOMIC_RELAXED);
}

MT_EXPORT int memtrace_read_stats(struct memtrace_stats *st, size_t size)
{
	const struct mt_record *r = counters_rec;
	struct memtrace_stats s;
	struct counters_live live;
	uint64_t calls = 0;
	if (!st)
		return -EINVAL;
	counters_read_live(&live);
	s.heap_current = live.heap_current;
	s.heap_peak = api_load(&r->heap_peak);
	s.map_anon_current = api_load(&r->map_anon_current);
	s.map_anon_peak = api_load(&r->map_anon_peak);
	s.map_file_current = api_load(&r->map_file_current);
	s.map_file_peak = api_load(&r->map_file_peak);
	/* Not r->total_current: multithreaded, that one may lag (record.h). */
	s.total_current = s.heap_current + s.map_anon_current + s.map_file_current;
	s.total_peak = api_load(&r->total_peak);
	for (unsigned i = MT_CALL_MALLOC; i <= MT_CALL_PVALLOC; i++)
		if (i != MT_CALL_FREE)
			calls += live.calls[i];
	s.calls_malloc_family = calls;
	s.calls_free = live.calls[MT_CALL_FREE];
	memcpy(st, &s, size < sizeof s ? size : sizeof s);
	return 0;
}

MT_EXPORT int memtrace_mark(const char *label)
{
	struct mt_record *r = counters_rec;
	uint32_t i;
	int spins = 0;
	if (!label)
		return -EINVAL;
	/* A signal handler that interrupted this thread inside the shim (maybe
	 * holding the lock below) must not wait for itself. */
	if (!shim_guard_enter()) {
		counters_set_flag(MT_FLAG_MARKERS_DROPPED);
		return -EBUSY;
	}
	/* Markers are rare: a lock keeps "fill slot i, then publish i+1"
	 * (record.h) simple.  Bounded all the same. */
	while (__atomic_exchange_n(&api_mark_lock, 1, __ATOMIC_ACQUIRE)) {
		if (++spins > 1000) {
			counters_set_flag(MT_FLAG_MARKERS_DROPPED);
			shim_guard_leave();
			return -EBUSY;
		}
		sched_yield();
	}
	i = r->marker_count;
	if (i < MT_MARKERS) {
		struct mt_marker *m = &r->markers[i];
		size_t n = strnlen(label, MT_LABEL_BYTES - 1);
		struct counters_live live;
		counters_read_live(&live);
		m->mono_ns = sys_mono_ns_cold();
		m->heap_current = live.heap_current;
		m->map_current = api_load(&r->map_anon_current) + api_load(&r->map_file_current);
		memcpy(m->label, label, n);
		memset(m->label + n, 0, MT_LABEL_BYTES - n);
		/* What memsup cannot read from /proc: the process's and its
		 * children's high-water marks, as measure_command's snapshots had. */
		struct rusage ru;
		r->marker_rusage[i].maxrss_self_kb =
			sys_call6(SYS_getrusage, RUSAGE_SELF, (long)&ru, 0, 0, 0, 0) == 0 ? (uint64_t)ru.ru_maxrss : 0;
		r->marker_rusage[i].maxrss_children_kb =
			sys_call6(SYS_getrusage, RUSAGE_CHILDREN, (long)&ru, 0, 0, 0, 0) == 0 ? (uint64_t)ru.ru_maxrss : 0;
	} else {
		counters_set_flag(MT_FLAG_MARKERS_DROPPED);
	}
	__atomic_store_n(&r->marker_count, i + 1, __ATOMIC_RELEASE);
	__atomic_store_n(&api_mark_lock, 0, __ATOMIC_RELEASE);
	shim_guard_leave();
	return 0;
}

void api_fork_prepare(void)
{
	while (__atomic_exchange_n(&api_mark_lock, 1, __ATOMIC_ACQUIRE))
		sched_yield();
}

void api_fork_release(void)
{
	__atomic_store_n(&api_mark_lock, 0, __ATOMIC_RELEASE);
}
