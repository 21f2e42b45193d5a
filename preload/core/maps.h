/* maps.h: exact tracking of the regions the program mapped through mmap and
 * mremap, so that a partial munmap or an mremap that grows, shrinks or moves
 * a region changes the figures by exactly the bytes involved.
 *
 * A table is a sorted array of disjoint [start, end) regions, each anonymous
 * or file-backed, in caller-provided memory (the shim's is static, of
 * MT_MAP_SLOTS entries; unit tests use small ones).  Adjacent regions of the
 * same kind are merged.  A spinlock protects the table; it is taken only
 * around the array update and the munmap/mremap system call (track.h), and
 * the fork handlers hold it across fork() so the child inherits a
 * consistent table.  Never allocates.  Lengths are rounded up to whole
 * pages by the caller.
 *
 * A fork must not make a mapping hook wait.  Another allocator (jemalloc,
 * tcmalloc) takes its own locks in a pthread_atfork handler of its own,
 * which glibc may run after ours, while our fork handler already holds this
 * lock; its threads call mmap and munmap holding those locks.  A hook that
 * waited here for the fork would hold the allocator's lock the fork waits
 * for: neither goes on.  So while a fork holds the lock (MAPS_LOCK_FORK),
 * the hooks do not wait: they queue their update (maps_reserve before the
 * system call, maps_publish after it) in a small ring of the caller's
 * memory, and whoever next holds the lock applies the queue, in the order
 * the system calls were made, before anything else (maps_lock_unless_fork,
 * maps_fork_parent, maps_fork_child).  Nothing waits on the fork; a
 * holder waits only for queued updates whose system call is under way.
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

/* One queued update (maps.c: its state word carries its sequence number). */
enum { MAPS_OP_ADD = 1, MAPS_OP_REMOVE = 2, MAPS_OP_REMAP = 3 };
struct maps_pending {
	uint64_t state;      /* seq * 4 + MAPS_PEND_* (maps.c) */
	uintptr_t a, b;      /* ADD, REMOVE: start, end; REMAP: old, new */
	size_t old_len, new_len;
	unsigned op, arg;    /* arg: ADD's kind, REMAP's keep_old */
};

/* The lock word's values. */
enum { MAPS_LOCK_FREE = 0, MAPS_LOCK_HELD = 1, MAPS_LOCK_FORK = 2 };

struct maps_table {
	struct maps_region *slots;
	size_t cap, n;
	int lock;
	struct maps_pending *pend; /* the queue (NULL: none), pend_cap a power of 2 */
	size_t pend_cap;
	uint64_t pend_head, pend_tail; /* next to reserve, next to apply */
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
int maps_add_locked(struct maps_table *t, uintptr_t start, uintptr_t end, unsigned kind,
		    struct maps_delta *d);
int maps_remap_locked(struct maps_table *t, uintptr_t old, size_t old_len, uintptr_t new_addr,
		      size_t new_len, int keep_old, struct maps_delta *d);

/* Waits for the lock whoever holds it (a fork too), and applies nothing
 * queued: for tables without a queue (the unit tests'). */
void maps_lock(struct maps_table *t);
void maps_unlock(struct maps_table *t);

/* Called with each queued update's figures as it is applied: `largest` is
 * the size of the mapping it made (0 for a removal).  The shim's counts
 * them into the record (track.c). */
typedef void (*maps_apply_fn)(const struct maps_delta *d, uint64_t largest);

/* The queue's memory: `cap` entries, a power of 2 (else no queue). */
void maps_init_pending(struct maps_table *t, struct maps_pending *q, size_t cap);
/* 1: the lock is this thread's and everything queued before is applied;
 * 0: a fork holds it, and the caller queues its update instead (a table
 * without a queue waits for the fork and always returns 1). */
int maps_lock_unless_fork(struct maps_table *t, maps_apply_fn fn);
/* A place in the queue, taken before the system call so that the queue
 * keeps the calls' order: a ticket, or 0 when the queue is full (the
 * caller counts its mapping as untracked). */
uint64_t maps_reserve(struct maps_table *t);
/* The update of a ticket, once its system call returned (a failed one:
 * op 0, applied as nothing).  Applies the queue when the lock is free. */
void maps_publish(struct maps_table *t, uint64_t ticket, unsigned op, uintptr_t a, uintptr_t b,
		  size_t old_len, size_t new_len, unsigned arg, maps_apply_fn fn);

/* Fork handlers: the fork holds the lock from prepare to the parent's or
 * the child's handler, and neither waits for a hook.  The parent applies
 * what was queued meanwhile; the child applies what was queued before the
 * fork and counts as untracked (map_untracked_*) the updates whose system
 * call another thread had under way: those threads are not in the child,
 * and whether their call happened before the fork is not known. */
void maps_lock_fork(struct maps_table *t);
void maps_fork_parent(struct maps_table *t, maps_apply_fn fn);
void maps_fork_child(struct maps_table *t, maps_apply_fn fn); /* fn NULL: drop */

#endif /* MEMTRACE_MAPS_H */
