/* track.c: mapping hooks' bodies (see track.h). */
#include <errno.h>
#include <sys/auxv.h>
#include <sys/mman.h>
#include <unistd.h>

#include "boot.h"
#include "counters.h"
#include "invariant.h"
#include "record.h"
#include "sys.h"
#include "track.h"

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

void *track_mmap(void *(*fn)(void *, size_t, int, int, int, off_t), void *addr, size_t len,
		 int prot, int flags, int fd, off_t off)
{
	void *p = fn ? fn(addr, len, prot, flags, fd, off) : sys_mmap(addr, len, prot, flags, fd, off);
	struct maps_delta d = { { 0, 0 }, 0, 0 };
	if (!boot_ready || !shim_guard_enter())
		return p;
	counters_note_call(MT_CALL_MMAP);
	if (p != MAP_FAILED) {
		size_t n = track_round(len);
		int saved = errno;
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
		maps_remove_locked(&track_maps, (uintptr_t)addr, (uintptr_t)addr + track_round(len),
				   &d);
		errno = saved;
	}
	maps_unlock(&track_maps);
	track_apply(&d, 0);
	shim_guard_leave();
	return rc;
}

void *track_mremap(void *old, size_t old_len, size_t new_len, int flags, void *new_addr)
{
	struct maps_delta d = { { 0, 0 }, 0, 0 };
	int tracked = 0;
	void *p;
	if (!shim_guard_enter())
		return real.mremap(old, old_len, new_len, flags, new_addr);
	counters_note_call(MT_CALL_MREMAP);
	maps_lock(&track_maps);
	p = real.mremap(old, old_len, new_len, flags, new_addr);
	if (p != MAP_FAILED) {
		int saved = errno;
		int keep = (flags & MREMAP_DONTUNMAP) || old_len == 0;
		tracked = maps_remap_locked(&track_maps, (uintptr_t)old, track_round(old_len),
					    (uintptr_t)p, track_round(new_len), keep, &d);
		errno = saved;
	}
	maps_unlock(&track_maps);
	if (tracked)
		track_apply(&d, track_round(new_len));
	shim_guard_leave();
	return p;
}
