/* track.c: mapping hooks' bodies (see track.h). */
#include <errno.h>
#include <sys/auxv.h>
#include <sys/mman.h>
#include <unistd.h>

#include "base/boot.h"
#include "base/sys.h"
#include "core/counters.h"
#include "core/track.h"
#include "invariant.h"
#include "record.h"
#include "sampling/sample.h"
#include "sampling/sites.h"

#ifndef MREMAP_DONTUNMAP
#define MREMAP_DONTUNMAP 4
#endif

static struct maps_region track_slots[MT_MAP_SLOTS] MT_TABLE;
struct maps_table track_maps = { track_slots, MT_MAP_SLOTS, 0, 0 };
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
		track_sample_new(p, n, (flags & MAP_ANONYMOUS) != 0, ra);
		maps_add(&track_maps, (uintptr_t)p, n, (flags & MAP_ANONYMOUS) ? MAPS_ANON : MAPS_FILE,
			 &d);
		track_apply(&d, n);
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
	maps_lock(&track_maps);
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
	maps_lock(&track_maps);
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
