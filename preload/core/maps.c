/* maps.c: the mapped-region table (see maps.h).  Never allocates; the only
 * system call is sched_yield under lock contention, which a mapping call
 * (itself a system call) can afford. */
#include <errno.h>
#include <sched.h>
#include <string.h>

#include "core/maps.h"
#include "invariant.h"

void maps_init(struct maps_table *t, struct maps_region *slots, size_t cap)
{
	t->slots = slots;
	t->cap = cap;
	t->n = 0;
	t->lock = MAPS_LOCK_FREE;
	t->pend = NULL;
	t->pend_cap = 0;
	t->pend_head = t->pend_tail = 0;
}

void maps_init_pending(struct maps_table *t, struct maps_pending *q, size_t cap)
{
	if (!q || !cap || (cap & (cap - 1)))
		return;
	memset(q, 0, cap * sizeof q[0]);
	t->pend = q;
	t->pend_cap = cap;
	t->pend_head = t->pend_tail = 0;
}

/* Takes the lock from FREE to `to`, waiting for any holder. */
static void maps_lock_as(struct maps_table *t, int to)
{
	int free_ = MAPS_LOCK_FREE;
	while (!__atomic_compare_exchange_n(&t->lock, &free_, to, 0, __ATOMIC_ACQUIRE,
					    __ATOMIC_RELAXED)) {
		free_ = MAPS_LOCK_FREE;
		sched_yield();
	}
}

void maps_lock(struct maps_table *t)
{
	maps_lock_as(t, MAPS_LOCK_HELD);
}

void maps_unlock(struct maps_table *t)
{
	__atomic_store_n(&t->lock, MAPS_LOCK_FREE, __ATOMIC_RELEASE);
}

/* First region whose end is above addr (regions are disjoint and sorted, so
 * ends are sorted too). */
static size_t maps_find_end_above(const struct maps_table *t, uintptr_t addr)
{
	size_t lo = 0, hi = t->n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (t->slots[mid].end > addr)
			hi = mid;
		else
			lo = mid + 1;
	}
	return lo;
}

/* maps.h: the regions are sorted, disjoint and not empty.  Checked where
 * a region is made or moved, against its neighbours (O(1)); any table
 * operation goes through here or shrinks a region in place. */
static void maps_check_at(const struct maps_table *t, size_t i)
{
	MT_ASSERT(t->n <= t->cap);
	MT_ASSERT(i < t->n);
	MT_ASSERT(t->slots[i].start < t->slots[i].end);
	MT_ASSERT(t->slots[i].kind == MAPS_ANON || t->slots[i].kind == MAPS_FILE);
	MT_ASSERT(i == 0 || t->slots[i - 1].end <= t->slots[i].start);
	MT_ASSERT(i + 1 == t->n || t->slots[i].end <= t->slots[i + 1].start);
	(void)t;
	(void)i;
}

static void maps_delete_at(struct maps_table *t, size_t i)
{
	MT_ASSERT(i < t->n);
	memmove(&t->slots[i], &t->slots[i + 1], (t->n - i - 1) * sizeof t->slots[0]);
	t->n--;
}

static void maps_insert_at(struct maps_table *t, size_t i, uintptr_t s, uintptr_t e, unsigned k)
{
	MT_ASSERT_MSG(t->n < t->cap, "callers test for a free slot");
	MT_ASSERT(i <= t->n);
	memmove(&t->slots[i + 1], &t->slots[i], (t->n - i) * sizeof t->slots[0]);
	t->slots[i].start = s;
	t->slots[i].end = e;
	t->slots[i].kind = k;
	t->n++;
	maps_check_at(t, i);
}

void maps_remove_locked(struct maps_table *t, uintptr_t s, uintptr_t e,
			       struct maps_delta *d)
{
	size_t i = maps_find_end_above(t, s);
	while (i < t->n && t->slots[i].start < e) {
		struct maps_region *r = &t->slots[i];
		uintptr_t a = r->start, b = r->end;
		unsigned k = r->kind;
		if (a < s && b > e) {
			/* A hole in the middle: the region splits in two. */
			d->bytes[k] -= (int64_t)(e - s);
			r->end = s;
			if (t->n == t->cap) {
				/* No slot for the tail: stop tracking it. */
				d->bytes[k] -= (int64_t)(b - e);
				d->untracked_bytes += b - e;
				d->untracked_calls++;
			} else {
				maps_insert_at(t, i + 1, e, b, k);
			}
			return;
		}
		if (a < s) {
			d->bytes[k] -= (int64_t)(b - s);
			r->end = s;
			i++;
			continue;
		}
		if (b > e) {
			d->bytes[k] -= (int64_t)(e - a);
			r->start = e;
			return;
		}
		d->bytes[k] -= (int64_t)(b - a);
		maps_delete_at(t, i);
	}
}

int maps_add_locked(struct maps_table *t, uintptr_t s, uintptr_t e, unsigned k,
			   struct maps_delta *d)
{
	size_t i;
	maps_remove_locked(t, s, e, d);
	i = maps_find_end_above(t, s); /* first region after s */
	/* Merge with neighbours of the same kind that touch it. */
	if (i > 0 && t->slots[i - 1].end == s && t->slots[i - 1].kind == k) {
		t->slots[i - 1].end = e;
		if (i < t->n && t->slots[i].start == e && t->slots[i].kind == k) {
			t->slots[i - 1].end = t->slots[i].end;
			maps_delete_at(t, i);
		}
		maps_check_at(t, i - 1);
	} else if (i < t->n && t->slots[i].start == e && t->slots[i].kind == k) {
		t->slots[i].start = s;
		maps_check_at(t, i);
	} else if (t->n == t->cap) {
		d->untracked_bytes += e - s;
		d->untracked_calls++;
		return -ENOSPC;
	} else {
		maps_insert_at(t, i, s, e, k);
	}
	d->bytes[k] += (int64_t)(e - s);
	return 0;
}

int maps_add(struct maps_table *t, uintptr_t start, size_t len, unsigned kind,
	     struct maps_delta *d)
{
	int r;
	if (len == 0)
		return 0;
	maps_lock(t);
	r = maps_add_locked(t, start, start + len, kind & 1u, d);
	maps_unlock(t);
	return r;
}

void maps_remove(struct maps_table *t, uintptr_t start, size_t len, struct maps_delta *d)
{
	if (len == 0)
		return;
	maps_lock(t);
	maps_remove_locked(t, start, start + len, d);
	maps_unlock(t);
}

int maps_remap_locked(struct maps_table *t, uintptr_t old, size_t old_len, uintptr_t new_addr,
		      size_t new_len, int keep_old, struct maps_delta *d)
{
	size_t i = maps_find_end_above(t, old);
	unsigned kind;
	if (i == t->n || t->slots[i].start > old)
		return 0;
	kind = t->slots[i].kind;
	if (!keep_old && old_len)
		maps_remove_locked(t, old, old + old_len, d);
	if (new_len)
		maps_add_locked(t, new_addr, new_addr + new_len, kind, d);
	return 1;
}

/* ---- the queue of updates made while a fork holds the lock (maps.h) ----
 *
 * A ring of pend_cap entries.  pend_head counts the places handed out
 * (maps_reserve, a compare-and-swap: any thread); pend_tail the entries
 * applied (only the lock's holder moves it).  An entry's state word says
 * which sequence number it holds and how far it got: seq * 4 + RESERVED
 * while its system call runs, + READY once its update is written.  A
 * state of another sequence number (the entry's previous lap, or 0) is
 * not yet reserved.  Entries are applied strictly in sequence, so that a
 * munmap queued before the mmap that got the same range back is applied
 * first.  A holder that finds an entry not READY waits for it (its thread
 * is inside one system call) but only so long: then it leaves the rest of
 * the queue to the entry's own thread, which applies the queue after
 * publishing when the lock is free, or to the next holder; an update
 * applied late is the worst that can happen, not one lost or applied
 * twice.  In a fork child nobody will publish: what is not READY there is
 * counted as untracked and passed over. */
enum { MAPS_PEND_RESERVED = 1, MAPS_PEND_READY = 2 };
#define MAPS_PEND_YIELDS 20000u /* ~20 ms of sched_yield on an idle core */

static void maps_apply_pending(struct maps_table *t, const struct maps_pending *e,
			       maps_apply_fn fn)
{
	struct maps_delta d = { { 0, 0 }, 0, 0 };
	uint64_t largest = 0;
	switch (e->op) {
	case MAPS_OP_ADD:
		maps_add_locked(t, e->a, e->b, e->arg & 1u, &d);
		largest = e->b - e->a;
		break;
	case MAPS_OP_REMOVE:
		maps_remove_locked(t, e->a, e->b, &d);
		break;
	case MAPS_OP_REMAP:
		if (maps_remap_locked(t, e->a, e->old_len, e->b, e->new_len, (int)e->arg, &d))
			largest = e->new_len;
		break;
	default: /* a failed system call: nothing to do */
		return;
	}
	if (fn)
		fn(&d, largest);
}

/* Applies the queue in order, under the lock.  `child`: this is a fork
 * child, whose other threads are gone. */
static void maps_drain_locked(struct maps_table *t, maps_apply_fn fn, int child)
{
	uint64_t tail, mask;
	if (!t->pend)
		return;
	mask = t->pend_cap - 1;
	tail = t->pend_tail;
	while (tail != __atomic_load_n(&t->pend_head, __ATOMIC_ACQUIRE)) {
		struct maps_pending *e = &t->pend[tail & mask];
		uint64_t ready = tail * 4 + MAPS_PEND_READY;
		unsigned tries = 0;
		while (__atomic_load_n(&e->state, __ATOMIC_ACQUIRE) != ready) {
			if (child) {
				struct maps_delta d = { { 0, 0 }, 0, 1 };
				if (fn)
					fn(&d, 0);
				goto next;
			}
			if (++tries > MAPS_PEND_YIELDS)
				goto out; /* left to its thread or the next holder */
			sched_yield();
		}
		maps_apply_pending(t, e, fn);
next:
		tail++;
		__atomic_store_n(&t->pend_tail, tail, __ATOMIC_RELEASE);
	}
out:
	return;
}

int maps_lock_unless_fork(struct maps_table *t, maps_apply_fn fn)
{
	for (;;) {
		int free_ = MAPS_LOCK_FREE;
		if (__atomic_compare_exchange_n(&t->lock, &free_, MAPS_LOCK_HELD, 0,
						__ATOMIC_ACQUIRE, __ATOMIC_RELAXED))
			break;
		/* a holder other than a fork holds it for a table update
		 * and at most one system call: worth waiting for */
		if (free_ == MAPS_LOCK_FORK && t->pend)
			return 0;
		sched_yield();
	}
	maps_drain_locked(t, fn, 0);
	return 1;
}

uint64_t maps_reserve(struct maps_table *t)
{
	uint64_t h;
	if (!t->pend)
		return 0;
	h = __atomic_load_n(&t->pend_head, __ATOMIC_RELAXED);
	for (unsigned waits = 0;;) {
		if (h - __atomic_load_n(&t->pend_tail, __ATOMIC_ACQUIRE) < t->pend_cap) {
			if (__atomic_compare_exchange_n(&t->pend_head, &h, h + 1, 1,
							__ATOMIC_ACQ_REL, __ATOMIC_RELAXED))
				break;
			continue;
		}
		/* Full: threads that map memory fast go on doing so through a
		 * fork (a stress of three threads filled 64 places in one
		 * fork), and the fork's parent handler, or the next holder,
		 * empties it.  This thread may hold another allocator's lock
		 * that the fork is waiting for, so it waits only so long,
		 * then its update is counted as untracked. */
		if (++waits > MAPS_PEND_YIELDS)
			return 0;
		sched_yield();
		h = __atomic_load_n(&t->pend_head, __ATOMIC_RELAXED);
	}
	__atomic_store_n(&t->pend[h & (t->pend_cap - 1)].state, h * 4 + MAPS_PEND_RESERVED,
			 __ATOMIC_RELEASE);
	return h + 1;
}

void maps_publish(struct maps_table *t, uint64_t ticket, unsigned op, uintptr_t a, uintptr_t b,
		  size_t old_len, size_t new_len, unsigned arg, maps_apply_fn fn)
{
	uint64_t seq = ticket - 1;
	struct maps_pending *e;
	int free_ = MAPS_LOCK_FREE;
	if (!ticket || !t->pend)
		return;
	e = &t->pend[seq & (t->pend_cap - 1)];
	e->op = op;
	e->a = a;
	e->b = b;
	e->old_len = old_len;
	e->new_len = new_len;
	e->arg = arg;
	__atomic_store_n(&e->state, seq * 4 + MAPS_PEND_READY, __ATOMIC_RELEASE);
	/* Apply the queue now if nobody holds the lock (a fork that ended
	 * while this system call ran, or a holder that stopped waiting for
	 * it); never wait for the lock here. */
	if (__atomic_compare_exchange_n(&t->lock, &free_, MAPS_LOCK_HELD, 0, __ATOMIC_ACQUIRE,
					__ATOMIC_RELAXED)) {
		maps_drain_locked(t, fn, 0);
		maps_unlock(t);
	}
}

void maps_lock_fork(struct maps_table *t)
{
	maps_lock_as(t, MAPS_LOCK_FORK);
}

void maps_fork_parent(struct maps_table *t, maps_apply_fn fn)
{
	/* a plain holder from here on: the hooks that come now wait for the
	 * queue to be applied instead of growing it */
	__atomic_store_n(&t->lock, MAPS_LOCK_HELD, __ATOMIC_RELEASE);
	maps_drain_locked(t, fn, 0);
	maps_unlock(t);
}

/* Async-signal-safe: no system call.  Without `fn` the queue is dropped
 * unapplied (the fork did not hold the lock: the table may be torn). */
void maps_fork_child(struct maps_table *t, maps_apply_fn fn)
{
	if (fn)
		maps_drain_locked(t, fn, 1);
	__atomic_store_n(&t->pend_head, t->pend_tail, __ATOMIC_RELAXED);
	__atomic_store_n(&t->lock, MAPS_LOCK_FREE, __ATOMIC_RELEASE);
}

int maps_remap(struct maps_table *t, uintptr_t old, size_t old_len, uintptr_t new_addr,
	       size_t new_len, int keep_old, struct maps_delta *d)
{
	int r;
	maps_lock(t);
	r = maps_remap_locked(t, old, old_len, new_addr, new_len, keep_old, d);
	maps_unlock(t);
	return r;
}
