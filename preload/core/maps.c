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
	t->lock = 0;
}

void maps_lock(struct maps_table *t)
{
	while (__atomic_exchange_n(&t->lock, 1, __ATOMIC_ACQUIRE))
		sched_yield();
}

void maps_unlock(struct maps_table *t)
{
	__atomic_store_n(&t->lock, 0, __ATOMIC_RELEASE);
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

static int maps_add_locked(struct maps_table *t, uintptr_t s, uintptr_t e, unsigned k,
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

int maps_remap(struct maps_table *t, uintptr_t old, size_t old_len, uintptr_t new_addr,
	       size_t new_len, int keep_old, struct maps_delta *d)
{
	int r;
	maps_lock(t);
	r = maps_remap_locked(t, old, old_len, new_addr, new_len, keep_old, d);
	maps_unlock(t);
	return r;
}
