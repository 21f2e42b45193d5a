/* maps.h: exact tracking of the regions the program mapped through mmap and
 * mremap, so that a partial munmap or an mremap that grows, shrinks or moves
 * a region changes the figures by exactly the bytes involved.
 *
 * A table is a sorted array of disjoint [start, end) regions, each anonymous
 * or file-backed, in caller-provided memory (the shim's is static, of
 * MT_MAP_SLOTS entries; unit tests use small ones).  Adjacent regions of the
 * same kind are merged.  A spinlock protects the table; it is taken only
 * around the array update (never across a system call) and the fork handlers
 * hold it across fork() so the child inherits a consistent table.  Never
 * allocates.  Lengths are rounded up to whole pages by the caller.
 */
#ifndef MEMTRACE_MAPS_H
#define MEMTRACE_MAPS_H

#include <stddef.h>
#include <stdint.h>

enum { MAPS_ANON = 0, MAPS_FILE = 1 };

struct maps_region {
	uintptr_t start, end; /* end exclusive */
	unsigned kind;        /* MAPS_ANON or MAPS_FILE */
};

struct maps_table {
	struct maps_region *slots;
	size_t cap, n;
	int lock;
};

/* What one operation did to the figures. */
struct maps_delta {
	int64_t bytes[2];         /* by kind, signed */
	uint64_t untracked_bytes; /* dropped because the table was full */
	uint64_t untracked_calls;
};

void maps_init(struct maps_table *t, struct maps_region *slots, size_t cap);

/* A new mapping [start, start+len) of `kind`; whatever tracked region it
 * overlapped (MAP_FIXED) is removed first.  Returns 0, or -ENOSPC when the
 * table is full (then the region is counted in untracked_*). */
int maps_add(struct maps_table *t, uintptr_t start, size_t len, unsigned kind,
	     struct maps_delta *d);
/* munmap of [start, start+len): removes whatever part of it is tracked. */
void maps_remove(struct maps_table *t, uintptr_t start, size_t len, struct maps_delta *d);
/* A successful mremap of [old, old+old_len) to [new, new+new_len).  Tracked
 * only if `old` lies in a tracked region (the result takes that region's
 * kind); `keep_old` (MREMAP_DONTUNMAP, or old_len 0) leaves the old range.
 * Returns 1 if the mapping was tracked, 0 if not. */
int maps_remap(struct maps_table *t, uintptr_t old, size_t old_len, uintptr_t new_addr,
	       size_t new_len, int keep_old, struct maps_delta *d);

/* The same with the lock already held by the caller (track.c holds it
 * across the munmap/mremap system call).  Note: _locked variants take an
 * END address (start + len), not a length. */
void maps_remove_locked(struct maps_table *t, uintptr_t start, uintptr_t end,
			struct maps_delta *d);
int maps_remap_locked(struct maps_table *t, uintptr_t old, size_t old_len, uintptr_t new_addr,
		      size_t new_len, int keep_old, struct maps_delta *d);

/* Fork handlers: hold the lock across fork(); the child re-initialises it. */
void maps_lock(struct maps_table *t);
void maps_unlock(struct maps_table *t);

#endif /* MEMTRACE_MAPS_H */
