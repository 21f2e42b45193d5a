/* sample.h: which allocations the shim samples (stacks.h, "Sampling").
 *
 * Each thread counts down the usable bytes it allocates, in initial-exec
 * TLS (-ftls-model=initial-exec: one %fs-relative instruction, no
 * __tls_get_addr; while the image has one thread, in a global instead:
 * sample_st_left below), from a value drawn from an exponential
 * distribution of mean R = MEMTRACE_SAMPLE_BYTES.  An allocation that
 * does not take the count to zero costs one subtract-and-test
 * (sample_count, sample_count_st); the one
 * that does calls sample_take(), which draws the next count and hands the
 * block to sites.c with its weight, S / (1 - exp(-S/R)).  Only the thread
 * itself ever touches its count (glibc unmaps an ended thread's TLS: shards.h),
 * and losing a count to a signal handler only moves a sampling point.
 *
 * A thread's count starts at 0, so its first allocation calls sample_take,
 * which seeds the thread's generator and draws its first count.  Before the
 * constructor has run, and with sampling off (R = 0), sample_take gives the
 * thread SAMPLE_IDLE bytes and does nothing else.
 *
 * The hooks call sample_note_alloc *before* counting the block
 * (counters_note_alloc), so that sites.c sees the heap peak as it was
 * before this block (its peak snapshots depend on that order).
 *
 * No libm: the shim links libc only, so exp() and log() are approximated
 * here (relative error below 1e-9 on the ranges used).
 */
#ifndef MEMTRACE_SAMPLE_H
#define MEMTRACE_SAMPLE_H

#include <stddef.h>
#include <stdint.h>

#include "base/shim.h"

/* Bytes a thread allocates before it asks again when sampling is idle. */
#define SAMPLE_IDLE (1 << 20)

extern MT_HIDDEN __thread int64_t sample_tls_left;
/* While the image has one thread (counters_mt == 0) the count is this
 * global instead: a RIP-relative operand, one instruction fewer than the
 * TLS variable's offset load and %fs access.  counters.c carries the
 * count over when the image goes multithreaded (into the calling
 * thread's TLS, before a second thread exists) and back in a fork child
 * (sample_go_single).  A signal handler that allocates during either
 * switch can only move a sampling point. */
extern MT_HIDDEN int64_t sample_st_left;
extern MT_HIDDEN int counters_mt;
void sample_go_multithreaded(void);
void sample_go_single(void);

/* The cold half: the count reached zero. */
void sample_take(void *p, size_t usable, uintptr_t ra);

/* Takes `usable` bytes off the calling thread's count; 1 when it reached
 * zero.  On x86-64 one memory-destination subtraction and the branch on
 * its flags (the compiler's own code loads, subtracts, stores and tests). */
static inline int sample_count(size_t usable)
{
#if defined(__x86_64__) && defined(__PIC__)
	__asm__ goto("movq sample_tls_left@gottpoff(%%rip), %%rax\n\t"
		     "subq %0, %%fs:(%%rax)\n\t"
		     "jle %l[due]"
		     :
		     : "r"(usable)
		     : "rax", "cc", "memory"
		     : due);
	return 0;
due:
	return 1;
#else
	return (sample_tls_left -= (int64_t)usable) <= 0;
#endif
}

/* sample_count for the single-threaded shortest paths (sample_st_left). */
static inline int sample_count_st(size_t usable)
{
#if defined(__x86_64__)
	__asm__ goto("subq %0, %1\n\t"
		     "jle %l[due]"
		     :
		     : "r"(usable), "m"(sample_st_left)
		     : "cc", "memory"
		     : due);
	return 0;
due:
	return 1;
#else
	return (sample_st_left -= (int64_t)usable) <= 0;
#endif
}

/* Either count, as the image's mode says (the paths off the shortest). */
static inline int sample_count_any(size_t usable)
{
	if (__atomic_load_n(&counters_mt, __ATOMIC_RELAXED))
		return sample_count(usable);
	return sample_count_st(usable);
}

/* An allocation of `usable` bytes at p, returned to the code at `ra`, on
 * a path off the shortest: out of line (sample.c), so that the two counts'
 * code is not copied into each of those paths. */
void sample_note_alloc(void *p, size_t usable, uintptr_t ra);

/* An anonymous mapping of `len` bytes (whole pages) at p, made by the code
 * at `ra` (stacks.h, "Mapped memory"): the same countdown as the heap's,
 * so a thread's bytes, allocated or mapped, are one stream.  Called by
 * track.c with the shim's guard held (sites_note_map expects it). */
void sample_take_map(void *p, size_t len, uintptr_t ra);
#define sample_note_map(p, len, ra)                                     \
	do {                                                            \
		if (MT_UNLIKELY(sample_count_any(len)))                 \
			sample_take_map((p), (len), (ra));              \
	} while (0)

/* Constructor: sampling at mean interval `rate` bytes from now on (0 off);
 * restarts the calling thread's count. */
void sample_start(uint64_t rate);
/* The interval in force (0: off, or not started). */
uint64_t sample_rate(void);
/* Fork child: a generator of its own (else parent and child would sample
 * the same points). */
void sample_fork_child(void);

/* ---- the arithmetic, exposed for the unit tests --------------------------- */
/* e^-x for x >= 0. */
double sample_exp_neg(double x);
/* ln x for 0 < x <= 1. */
double sample_log(double x);
/* xorshift64*; the state must not be 0. */
uint64_t sample_next(uint64_t *state);
/* An exponential variate of mean `rate` bytes (>= 0). */
uint64_t sample_draw(uint64_t *state, uint64_t rate);
/* Estimated bytes of a sampled block of `size` bytes: size / (1 -
 * exp(-size/rate)), rounded; size itself when rate is 1. */
uint64_t sample_weight(uint64_t size, uint64_t rate);
/* Its variance estimate w * (w - size), in KiB^2 (stacks.h). */
uint64_t sample_var_kib2(uint64_t weight, uint64_t size);

#endif /* MEMTRACE_SAMPLE_H */
