/* shards.h: per-thread counter shards, in memory the shim owns.
 *
 * Once the image is multithreaded each thread counts its activity (calls,
 * histogram, requested bytes, largest request) and its live heap bytes into
 * a shard of its own with plain stores, and counters.c moves a shard's
 * counts into the record now and then, when the thread ends and when the
 * image ends.
 *
 * The shards live in a static pool, never in thread-local storage.  glibc
 * unmaps an ended thread's stack and TLS whenever its stack cache is over
 * its limit (about 40 MB, five default stacks), so memory inside a thread is
 * only safe to touch from that thread while it runs; the image's end, the
 * fork child and the reclaim pass below all read other threads' shards, and
 * may do so after those threads are gone.  A thread keeps only a pointer to
 * its shard in TLS, and only it reads that pointer.
 *
 * A shard's life:
 *   free (tid 0) -> claimed by a thread on its first counted call (tid =
 *   its kernel tid, the shard becomes its pthread key value) -> drained and
 *   freed by the key's destructor when the thread ends.
 * A thread whose first counted call comes after its key destructors ran
 * (glibc frees during thread teardown, in __libc_thread_freeres) gets a
 * shard no destructor will free: its tid outlives it in the shard.  When
 * the pool is full, a claim looks for shards whose tid no longer names a
 * thread of this process (tgkill(pid, tid, 0) fails with ESRCH), drains
 * them and takes them back.  A thread that cannot get a shard (pool full of
 * live threads, or no key) updates the record directly with atomics: slower,
 * never wrong.
 *
 * Everything here is async-signal-safe and never allocates: a signal
 * handler that counts while its thread is claiming sees the claim in
 * progress and updates the record directly.
 */
#ifndef MEMTRACE_SHARDS_H
#define MEMTRACE_SHARDS_H

#include <stddef.h>
#include <stdint.h>

#include "record.h"
#include "base/shim.h"

/* Threads that can own a shard at once; later threads count directly. */
#define SHARDS_MAX 1024u

struct shard {
	/* Owner's kernel tid; 0 free; -1 being drained by a reclaim pass. */
	int32_t tid;
	/* Heap bytes this thread allocated less those it freed since it last
	 * added them to the record's heap_current (counters.c). */
	int64_t heap_delta;
	/* The largest heap_delta that cannot make a new peak, as last seen
	 * (counters.h, counters_live_shard); below COUNTERS_DELTA_MAX. */
	int64_t heap_room;
	/* Requests of 1 to gate bytes cannot raise the largest request
	 * (counters.h, counters_request_st): at most 2^63 and at most a
	 * request this image made, which the shard's `largest` or the
	 * record's heap_largest_request holds.  Only rises; left as it is
	 * when the shard changes hands (the record is the same), zeroed with
	 * the shard in a fork child (whose record starts again). */
	uint64_t gate;
	uint64_t calls[MT_CALL_SLOTS];
	uint64_t hist[MT_HIST_BUCKETS];
	uint64_t requested, largest;
} __attribute__((aligned(64))); /* one owner per cache line */

/* This thread's shard, or NULL until it has claimed one. */
extern MT_HIDDEN __thread struct shard *shards_tls_mine;

/* Claims a shard for the calling thread (first counted call), or NULL:
 * pool full, no key, a claim already under way on this thread, or this
 * thread's shard already freed (it is ending). */
struct shard *shards_claim(void);

/* The calling thread's shard, claiming one if it has none. */
static inline struct shard *shards_mine(void)
{
	struct shard *sh = shards_tls_mine;
	if (MT_LIKELY(sh != NULL))
		return sh;
	return shards_claim();
}

/* Creates the pthread key whose destructor frees a thread's shard.  Called
 * while the image still has one thread (before its first pthread_create).
 * Returns 1 if shards can be used. */
int shards_enable(void);

/* Calls fn(shard, ctx) on every shard owned now (any thread's, ended or
 * not).  An owner may still be counting: fn reads with atomic loads and
 * drains with atomic exchanges. */
void shards_for_each(void (*fn)(struct shard *, void *), void *ctx);

/* In a fork child (one thread again): every shard is freed and forgotten,
 * the calling thread's too (its counts were the parent's). */
void shards_reset_in_child(void);

/* How many shards are owned now (tests and the debug summary). */
unsigned shards_owned(void);

#endif /* MEMTRACE_SHARDS_H */
