/* track.c: the mapping hooks' bodies (see track.h), at the top beside
 * hooks.c: they order the map table (maps.h), the counts and the sampler. */
#include <errno.h>
#include <sys/auxv.h>
#include <sys/mman.h>
#include <unistd.h>

#include "base/boot.h"
#include "base/sys.h"
#include "core/counters.h"
#include "track.h"
#include "invariant.h"
#include "record.h"
#include "sampling/sample.h"
#include "sampling/sites.h"

#ifndef MREMAP_DONTUNMAP
#define MREMAP_DONTUNMAP 4
#endif

static struct maps_region track_slots[MT_MAP_SLOTS] MT_TABLE;
/* Updates made while a fork holds the table's lock (maps.h).  Threads
 * that map and unmap memory fast go on doing so through a fork (three of
 * them filled 64 places in one fork of tests/progs/x_stress): 256 places,
 * 12 KB touched only as they are used, and an update that finds them full
 * waits a while for the fork to end (maps_reserve) before it is counted as
 * untracked, never lost silently. */
#define TRACK_PENDING 256
static struct maps_pending track_pending[TRACK_PENDING] MT_TABLE;
struct maps_table track_maps = { track_slots, MT_MAP_SLOTS, 0, 0, track_pending, TRACK_PENDING,
				 0, 0 };
static size_t track_page = 4096;

void track_init(void)
{
	/* from the auxv, as sysconf would, with no call into a page of libc
	 * the program may never touch (config_load reads the auxv too) */
	unsigned long p = getauxval(AT_PAGESZ);
	if (p)
		track_page = (size_t)p;
}

static size_t track_round(size_t len)
{
	return (len + track_page - 1) & ~(track_page - 1);
}

/* Also maps_apply_fn: a queued update's figures, applied by whichever
 * thread holds the lock then (counters_note_map is atomic). */
static void track_apply(const struct maps_delta *d, uint64_t largest)
{
	/* track.h: the shim's table is its static MT_MAP_SLOTS regions.  Read
	 * without the lock: n only moves between 0 and cap. */
	MT_ASSERT(track_maps.slots == track_slots && track_maps.cap == MT_MAP_SLOTS);
	MT_ASSERT(__atomic_load_n(&track_maps.n, __ATOMIC_RELAXED) <= MT_MAP_SLOTS);
	counters_note_map(d->bytes[MAPS_ANON], d->bytes[MAPS_FILE], largest);
	if (d->untracked_calls)
		counters_note_map_untracked(d->untracked_bytes);
}

/* Sampled mappings (stacks.h, "Mapped memory"): a new mapping first ends
 * whatever sampled range it lands on (MAP_FIXED, or one unmapped where the
 * shim could not see it), then an anonymous one goes to the sampler, all
 * before the map figures count it: sites.c compares the record's peaks at
 * each change of the sampled set, which must not yet include the new
 * range (as the heap hooks sample before counting). */
static void track_sample_new(void *p, size_t n, int anon, uintptr_t ra)
{
	sites_note_unmap((uintptr_t)p, (uintptr_t)p + n);
	if (anon)
		sample_note_map(p, n, ra);
}

/* A mapping call made while a fork held the table's lock: its update
 * queued under `ticket` (maps_reserve, taken before the system call for
 * munmap and mremap, so that the queue keeps the calls' order), or, when
 * the queue was full (ticket 0), counted as untracked. */
static __attribute__((noinline, cold)) void track_queued(uint64_t ticket, unsigned op,
							uintptr_t a, uintptr_t b,
							size_t old_len, size_t new_len,
							unsigned arg, size_t bytes)
{
	if (!ticket) {
		struct maps_delta d = { { 0, 0 }, bytes, 1 };
		if (op)
			track_apply(&d, 0);
		return;
	}
	maps_publish(&track_maps, ticket, op, a, b, old_len, new_len, arg, track_apply);
}

/* munmap while a fork holds the table (maps.h): the system call without
 * the lock, its update queued.  The sampled ranges it ends are cut now if
 * the sampler's lock is free (sites_note_unmap yields to a fork too). */
static __attribute__((noinline, cold)) int track_munmap_queued(void *addr, size_t len)
{
	uint64_t ticket = maps_reserve(&track_maps);
	int rc = real.munmap(addr, len), saved = errno;
	uintptr_t end = (uintptr_t)addr + track_round(len);
	if (rc == 0)
		sites_note_unmap((uintptr_t)addr, end);
	track_queued(ticket, rc == 0 ? MAPS_OP_REMOVE : 0, (uintptr_t)addr, end, 0, 0, 0,
		     end - (uintptr_t)addr);
	shim_guard_leave();
	errno = saved;
	return rc;
}

/* mremap likewise.  The new range is not sampled for call sites: the
 * kind of the old one is known only once the queue is applied. */
static __attribute__((noinline, cold)) void *track_mremap_queued(void *old, size_t old_len,
								 size_t new_len, int flags,
								 void *new_addr)
{
	uint64_t ticket = maps_reserve(&track_maps);
	void *p = real.mremap(old, old_len, new_len, flags, new_addr);
	int saved = errno, keep = (flags & MREMAP_DONTUNMAP) || old_len == 0;
	if (p != MAP_FAILED && !keep)
		sites_note_unmap((uintptr_t)old, (uintptr_t)old + track_round(old_len));
	track_queued(ticket, p != MAP_FAILED ? MAPS_OP_REMAP : 0, (uintptr_t)old, (uintptr_t)p,
		     track_round(old_len), track_round(new_len), (unsigned)keep,
		     track_round(new_len));
	shim_guard_leave();
	errno = saved;
	return p;
}

void *track_mmap(void *(*fn)(void *, size_t, int, int, int, off_t), void *addr, size_t len,
		 int prot, int flags, int fd, off_t off, uintptr_t ra)
{
	void *p = fn ? fn(addr, len, prot, flags, fd, off) : sys_mmap(addr, len, prot, flags, fd, off);
	struct maps_delta d = { { 0, 0 }, 0, 0 };
	if (!boot_ready || !shim_guard_enter())
		return p;
	counters_note_call(MT_CALL_MMAP);
	if (p != MAP_FAILED) {
		size_t n = track_round(len);
		int saved = errno;
		unsigned kind = (flags & MAP_ANONYMOUS) ? MAPS_ANON : MAPS_FILE;
		/* Huge pages from the pool are in no RSS or VmHWM: the
		 * anonymous figures now hold memory those never show. */
		if (MT_UNLIKELY(flags & MAP_HUGETLB))
			counters_set_flag(MT_FLAG_HUGETLB);
		track_sample_new(p, n, kind == MAPS_ANON, ra);
		if (MT_LIKELY(maps_lock_unless_fork(&track_maps, track_apply))) {
			maps_add_locked(&track_maps, (uintptr_t)p, (uintptr_t)p + n, kind, &d);
			maps_unlock(&track_maps);
			track_apply(&d, n);
		} else {
			track_queued(maps_reserve(&track_maps), MAPS_OP_ADD, (uintptr_t)p,
				     (uintptr_t)p + n, 0, 0, kind, n);
		}
		errno = saved;
	}
	shim_guard_leave();
	return p;
}

int track_munmap(void *addr, size_t len)
{
	struct maps_delta d = { { 0, 0 }, 0, 0 };
	int rc;
	if (!boot_ready || !real.munmap) {
		rc = sys_munmap(addr, len);
		if (rc < 0) {
			errno = -rc;
			return -1;
		}
		return 0;
	}
	if (!shim_guard_enter())
		return real.munmap(addr, len);
	counters_note_call(MT_CALL_MUNMAP);
	if (MT_UNLIKELY(!maps_lock_unless_fork(&track_maps, track_apply)))
		return track_munmap_queued(addr, len);
	rc = real.munmap(addr, len);
	if (rc == 0) {
		int saved = errno;
		uintptr_t end = (uintptr_t)addr + track_round(len);
		maps_remove_locked(&track_maps, (uintptr_t)addr, end, &d);
		/* under the map lock, as the table's update: the range cannot
		 * be mapped (and sampled) again by another thread before its
		 * old samples are gone (sites.h: this lock order) */
		sites_note_unmap((uintptr_t)addr, end);
		errno = saved;
	}
	maps_unlock(&track_maps);
	track_apply(&d, 0);
	shim_guard_leave();
	return rc;
}

/* The kind of the tracked region holding addr, or -1 (under the lock). */
static int track_kind_at(uintptr_t addr)
{
	size_t lo = 0, hi = track_maps.n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (track_maps.slots[mid].end > addr)
			hi = mid;
		else
			lo = mid + 1;
	}
	if (lo < track_maps.n && track_maps.slots[lo].start <= addr)
		return (int)track_maps.slots[lo].kind;
	return -1;
}

void *track_mremap(void *old, size_t old_len, size_t new_len, int flags, void *new_addr,
		   uintptr_t ra)
{
	struct maps_delta d = { { 0, 0 }, 0, 0 };
	int tracked = 0, kind = -1;
	void *p;
	if (!shim_guard_enter())
		return real.mremap(old, old_len, new_len, flags, new_addr);
	counters_note_call(MT_CALL_MREMAP);
	if (MT_UNLIKELY(!maps_lock_unless_fork(&track_maps, track_apply)))
		return track_mremap_queued(old, old_len, new_len, flags, new_addr);
	p = real.mremap(old, old_len, new_len, flags, new_addr);
	if (p != MAP_FAILED) {
		int saved = errno;
		int keep = (flags & MREMAP_DONTUNMAP) || old_len == 0;
		kind = track_kind_at((uintptr_t)old);
		tracked = maps_remap_locked(&track_maps, (uintptr_t)old, track_round(old_len),
					    (uintptr_t)p, track_round(new_len), keep, &d);
		/* stacks.h: the old range unmapped (as munmap, under the lock) */
		if (tracked && !keep)
			sites_note_unmap((uintptr_t)old, (uintptr_t)old + track_round(old_len));
		errno = saved;
	}
	maps_unlock(&track_maps);
	if (tracked) {
		int saved = errno;
		/* ... and the new one mapped anew, sampled at this call site */
		track_sample_new(p, track_round(new_len), kind == MAPS_ANON, ra);
		errno = saved;
		track_apply(&d, track_round(new_len));
	}
	shim_guard_leave();
	return p;
}

void track_fork_prepare(void)
{
	maps_lock_fork(&track_maps);
}

void track_fork_parent(void)
{
	maps_fork_parent(&track_maps, track_apply);
}

void track_fork_child(int held)
{
	maps_fork_child(&track_maps, held ? track_apply : NULL);
}
