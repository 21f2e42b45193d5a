/* sites.h: the image's sampled call sites: the stacks table of stacks.h
 * (a "<pid>.<gen>.mts" file beside the record, or the shim's own memory),
 * the private table of sampled blocks still live, and the peak snapshots.
 *
 * The hot paths are inline and touch no lock: an allocation that is not
 * sampled never comes here (sample.h), and a free tests one bit of
 * sites_filter, an 8 KiB bitmap indexed by a hash of the address (0: no
 * sampled block hashes there), before anything else: small enough to stay
 * in the L1 cache of a program that frees all the time.  (A freed block's
 * bit is cleared, under the lock, unless another live block shares it:
 * sites.c, sites_filter_drop.)  Everything
 * behind them is cold: a spinlock (never held across a system call that
 * can block, never taken by a thread that is already inside the shim)
 * serialises the tables.  A signal handler that frees a sampled block
 * while its thread is inside the shim queues the address (up to 64), and
 * the next holder of the lock removes it.  Nothing here allocates.
 *
 * Only the image's own threads and its memory are involved; the table is
 * made at the first sample (file creation, /proc/self/maps) under the lock.
 */
#ifndef MEMTRACE_SITES_H
#define MEMTRACE_SITES_H

#include <stddef.h>
#include <stdint.h>

#include "record.h"
#include "base/shim.h"
#include "stacks.h"

#define SITES_FILTER_BITS 16u
extern MT_HIDDEN uint64_t sites_filter[(1u << SITES_FILTER_BITS) / 64];

/* The slot of an address: Fibonacci hashing of its low 32 bits (the top
 * SITES_FILTER_BITS of their 32-bit product with 2^32 / phi).  A 32-bit
 * multiply takes its constant as an immediate, so the slot is two
 * instructions (imul, shr), where the 64-bit constant needs a third to
 * load it.  Blocks whose addresses differ only above 4 GiB share a slot:
 * the filter only ever answers "maybe", so that costs a lookup, never a
 * wrong answer. */
static inline unsigned sites_slot(const void *p)
{
	return ((uint32_t)(uintptr_t)p * UINT32_C(0x9E3779B1)) >> (32 - SITES_FILTER_BITS);
}

/* 0 if p is surely not a sampled block.  On x86-64 the bit is tested in
 * memory by one bt: the slot (below 2^16) indexes the bitmap from its
 * start, so the word's load, the shift and the test are one instruction
 * (four fewer on every free; bench/RESULTS.md).  A relaxed
 * read either way: bits are set under the lock before the block is
 * handed out (sites.c). */
static inline int sites_maybe(const void *p)
{
	unsigned k = sites_slot(p);
#if defined(__x86_64__)
	__asm__ goto("btq %q0, %1\n\t"
		     "jc %l[hit]"
		     :
		     : "r"((uint64_t)k), "m"(*(const uint64_t(*)[(1u << SITES_FILTER_BITS) / 64])sites_filter)
		     : "cc"
		     : hit);
	return 0;
hit:
	return 1;
#else
	return (__atomic_load_n(&sites_filter[k / 64], __ATOMIC_RELAXED) >> (k % 64)) & 1;
#endif
}

/* The cold half of sites_note_free. */
void sites_forget(void *p);

/* Block p is about to be freed.  Called before the real free: once the
 * allocator has it back, another thread may be handed the same address. */
static inline void sites_note_free(void *p)
{
	if (MT_UNLIKELY(sites_maybe(p)))
		sites_forget(p);
}

/* realloc: the old block's sample is taken out before the real realloc
 * (for the same reason), and put back if the realloc failed. */
struct sites_held {
	uint64_t weight, var;
	uint32_t stack;
	int held;
};
void sites_hold(void *p, struct sites_held *held);
void sites_unhold(void *p, const struct sites_held *held);

/* A sampled block (sample.c): p of `usable` bytes counting for `weight`
 * estimated bytes, allocated by the code at return address ra. */
void sites_note_sample(void *p, size_t usable, uint64_t weight, uintptr_t ra);

/* Sampled mappings (stacks.h, "Mapped memory"), from track.c with the
 * shim's guard held: an anonymous mapping [p, p + len) sampled by
 * sample_take_map, and a range [start, end) that is no longer what it
 * was (munmap, the old range of an mremap, any new mapping over it).
 * Ranges are kept apart from the live table of heap blocks, in a sorted
 * table of up to MT_STACKS_MAP_SAMPLES, so free() never sees them.
 * sites_note_unmap costs one load while no sampled mapping is live.  Lock
 * order: track.c may hold the map table's lock (maps.h) around these; the
 * sites lock is never held while the map table's is taken. */
void sites_note_map(void *p, size_t len, uint64_t weight, uintptr_t ra);
void sites_note_unmap(uintptr_t start, uintptr_t end);

/* Constructor: sampling on (config.sample_bytes) once the record exists;
 * has_file: the record is in a file (store_has_file), so the table goes in
 * one beside it.  The caller (image.c) asks the store; sites.c never does. */
void sites_start(int has_file);
/* The image ends (store_finish, with the record's state): last peak
 * snapshot, module table completed, state FINISHED.  A fork child that
 * sampled nothing of its own and execs leaves no file. */
void sites_finish(unsigned record_state);
/* The exec failed: RUNNING again. */
void sites_unfinish(void);
/* pthread_atfork: the lock is held across fork(); the child gets a copy of
 * the table of its own (its file made at its first sample or its end). */
void sites_fork_prepare(void);
void sites_fork_parent(void);
void sites_fork_child(int has_file); /* has_file: the child's record's */

/* The table (NULL until the first sample). */
struct mt_stacks_header *sites_table(void);

#endif /* MEMTRACE_SITES_H */
