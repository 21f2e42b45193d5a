/* shards.c: the pool of per-thread shards and their life (see shards.h).
 * Async-signal-safe; never allocates, locks or blocks. */
#include <pthread.h>
#include <string.h>

#include "base/sys.h"
#include "core/counters.h"
#include "core/shards.h"
#include "invariant.h"

static struct shard shards_pool[SHARDS_MAX] MT_TABLE;
/* One past the highest shard ever claimed: loops stop there, so a process
 * with few threads never touches (nor faults in) the rest of the pool. */
static unsigned shards_top;
/* Failed claims; a reclaim pass runs on the first and then every 64th, so
 * a pool full of live threads costs a new thread one scan, not one
 * tgkill per shard. */
static unsigned shards_failed;

static pthread_key_t shards_key;
static int shards_key_ok;

__thread struct shard *shards_tls_mine __attribute__((tls_model("initial-exec")));
/* 0: may claim; 1: claimed; -1: claiming now, or ended, or refused. */
static __thread int shards_tls_state __attribute__((tls_model("initial-exec")));

/* Drained, then free: counts first, tid last (release), so that the next
 * owner starts from zeros. */
static void shards_free(struct shard *sh)
{
	counters_drain_shard(sh);
	__atomic_store_n(&sh->tid, 0, __ATOMIC_RELEASE);
}

/* The key destructor: the thread is ending.  Its shard is drained and
 * freed, and the thread counts directly from now on (glibc still frees
 * after the destructors).  `arg` is checked against the thread's own
 * pointer: in a fork child the key may still hold a shard of the parent's
 * that the child has since freed and someone else may own. */
static void shards_leave(void *arg)
{
	struct shard *sh = shards_tls_mine;
	shards_tls_state = -1;
	if (!sh || sh != arg)
		return;
	shards_tls_mine = NULL;
	shards_free(sh);
}

int shards_enable(void)
{
	if (!shards_key_ok)
		shards_key_ok = pthread_key_create(&shards_key, shards_leave) == 0;
	return shards_key_ok;
}

static struct shard *shards_take(int32_t tid)
{
	for (unsigned i = 0; i < SHARDS_MAX; i++) {
		int32_t none = 0;
		if (__atomic_load_n(&shards_pool[i].tid, __ATOMIC_RELAXED) != 0)
			continue;
		if (__atomic_compare_exchange_n(&shards_pool[i].tid, &none, tid, 0,
						__ATOMIC_ACQUIRE, __ATOMIC_RELAXED)) {
			unsigned top = __atomic_load_n(&shards_top, __ATOMIC_RELAXED);
			while (top < i + 1 &&
			       !__atomic_compare_exchange_n(&shards_top, &top, i + 1, 1,
							    __ATOMIC_RELEASE, __ATOMIC_RELAXED)) {
			}
			return &shards_pool[i];
		}
	}
	return NULL;
}

/* Takes back the shards of threads that ended without their destructor. */
static void shards_reclaim(void)
{
	pid_t pid = sys_getpid();
	unsigned top = __atomic_load_n(&shards_top, __ATOMIC_ACQUIRE);
	for (unsigned i = 0; i < top; i++) {
		struct shard *sh = &shards_pool[i];
		int32_t tid = __atomic_load_n(&sh->tid, __ATOMIC_ACQUIRE);
		if (tid <= 0 || sys_thread_alive(pid, tid) != 0)
			continue;
		/* -1 while draining, so two passes never drain one shard twice. */
		if (__atomic_compare_exchange_n(&sh->tid, &tid, -1, 0, __ATOMIC_ACQUIRE,
						__ATOMIC_RELAXED))
			shards_free(sh);
	}
}

struct shard *shards_claim(void)
{
	struct shard *sh;
	int32_t tid;
	if (shards_tls_state != 0 || !shards_key_ok)
		return NULL;
	shards_tls_state = -1; /* a signal handler arriving now counts directly */
	tid = (int32_t)sys_gettid();
	if (!counters_is_own_process()) {
		/* A vfork child runs on its parent's thread, TLS and all: a
		 * shard claimed now would carry the child's tid and be taken
		 * back once the child execs, under the parent's feet. */
		shards_tls_state = 0;
		return NULL;
	}
	sh = shards_take(tid);
	if (!sh && __atomic_fetch_add(&shards_failed, 1, __ATOMIC_RELAXED) % 64 == 0) {
		shards_reclaim();
		sh = shards_take(tid);
	}
	if (!sh)
		return NULL;
	/* a claimed shard is in the pool, below the top, and this thread's */
	MT_ASSERT(sh >= shards_pool && sh < shards_pool + SHARDS_MAX);
	MT_ASSERT((unsigned)(sh - shards_pool) < __atomic_load_n(&shards_top, __ATOMIC_ACQUIRE));
	MT_ASSERT(__atomic_load_n(&sh->tid, __ATOMIC_RELAXED) == tid);
	/* Keys below PTHREAD_KEY_2NDLEVEL_SIZE (32) are stored in the thread
	 * descriptor without allocating; a later key may calloc, which comes
	 * back here, finds the claim under way and counts directly. */
	if (pthread_setspecific(shards_key, sh) != 0) {
		shards_free(sh);
		return NULL;
	}
	shards_tls_mine = sh;
	shards_tls_state = 1;
	return sh;
}

void shards_for_each(void (*fn)(struct shard *, void *), void *ctx)
{
	unsigned top = __atomic_load_n(&shards_top, __ATOMIC_ACQUIRE);
	MT_ASSERT(top <= SHARDS_MAX);
	for (unsigned i = 0; i < top; i++)
		if (__atomic_load_n(&shards_pool[i].tid, __ATOMIC_ACQUIRE) > 0)
			fn(&shards_pool[i], ctx);
}

void shards_reset_in_child(void)
{
	unsigned top = shards_top;
	for (unsigned i = 0; i < top; i++)
		if (shards_pool[i].tid != 0)
			memset(&shards_pool[i], 0, sizeof shards_pool[i]);
	shards_top = 0;
	shards_failed = 0;
	shards_tls_mine = NULL;
	shards_tls_state = 0;
}

unsigned shards_owned(void)
{
	unsigned n = 0, top = __atomic_load_n(&shards_top, __ATOMIC_ACQUIRE);
	for (unsigned i = 0; i < top; i++)
		n += __atomic_load_n(&shards_pool[i].tid, __ATOMIC_RELAXED) > 0;
	return n;
}
