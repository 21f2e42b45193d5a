/* track.h: the bodies of the mapping hooks: call the real function and keep
 * the shim's map table (maps.h, MT_MAP_SLOTS regions, static) and the
 * record's map figures exact.  munmap and mremap hold the table lock across
 * the system call, so another thread cannot map the freed range and have its
 * new region removed by our late update; mmap adds after the call (the new
 * range is ours alone).  While a fork holds the table (life.c), none of
 * them waits for it: each queues its update (maps.h says why).  A thread already inside the shim (a signal handler
 * that maps memory) is passed through untracked: its munmap then finds
 * nothing to remove, so the figures stay consistent.
 *
 * Anonymous mappings are also sampled for call sites (stacks.h, "Mapped
 * memory"; sample.h, sites.h): the cost of an mmap that is not sampled is
 * one countdown and one load; of munmap, one load while no sampled
 * mapping is live.
 */
#ifndef MEMTRACE_TRACK_H
#define MEMTRACE_TRACK_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "core/maps.h"
#include "base/shim.h"

extern MT_HIDDEN struct maps_table track_maps;

void track_init(void);
/* `ra` is the program's call site of the hook (the return address of
 * mmap, mmap64 or mremap): the first frame of a sampled mapping's stack
 * (stacks.h, "Mapped memory"). */
void *track_mmap(void *(*fn)(void *, size_t, int, int, int, off_t), void *addr, size_t len,
		 int prot, int flags, int fd, off_t off, uintptr_t ra);
int track_munmap(void *addr, size_t len);
void *track_mremap(void *old, size_t old_len, size_t new_len, int flags, void *new_addr,
		   uintptr_t ra);

/* Fork handlers (life.c): the table's lock held by the fork, the hooks of
 * other threads queueing meanwhile instead of waiting (maps.h); the parent
 * applies the queue, the child what of it was made before the fork.  The
 * child's must run after its record is its own (store_fork_child): the
 * queued figures count there. */
void track_fork_prepare(void);
void track_fork_parent(void);
/* `held`: this fork's prepare took the lock (else the table may be in the
 * middle of an update: the lock is only freed, the queue dropped). */
void track_fork_child(int held);

#endif /* MEMTRACE_TRACK_H */
