/* test_pidmap.c: the pid-keyed table every stage shares: entries found
 * again across growth, added once, zeroed when new, iterated in an order
 * that depends on the keys alone, cleared without freeing. */
#include <criterion/criterion.h>
#include <stdint.h>
#include <string.h>

#include "base/pidmap.h"

struct ent {
	pid_t pid;
	uint64_t value;
	char tag[13];              /* an odd size: entries are not pid_t-sized */
};

Test(pidmap, add_find_and_grow)
{
	struct pidmap m;
	pidmap_init(&m, sizeof(struct ent));
	cr_expect_null(pidmap_find(&m, 1), "an empty table finds nothing");
	for (pid_t p = 1; p <= 5000; p++) {
		int added = 0;
		struct ent *e = pidmap_add(&m, p * 7, &added);
		cr_assert_not_null(e);
		cr_expect(added);
		cr_expect_eq(e->pid, p * 7);
		cr_expect_eq(e->value, 0, "a new entry is zeroed");
		e->value = (uint64_t)p;
	}
	cr_expect_eq(m.used, 5000);
	cr_expect_geq(m.cap, 2 * m.used, "at most half full");
	cr_expect_eq(m.cap & (m.cap - 1), 0, "a power of two");
	for (pid_t p = 1; p <= 5000; p++) {
		struct ent *e = pidmap_find(&m, p * 7);
		cr_assert_not_null(e, "pid %d lost in growth", p * 7);
		cr_expect_eq(e->value, (uint64_t)p);
		cr_expect_null(pidmap_find(&m, p * 7 + 1));
	}
	int added = 1;
	struct ent *e = pidmap_add(&m, 35, &added);
	cr_expect(!added, "a second add finds the first entry");
	cr_expect_eq(e->value, 5);
	cr_expect_eq(m.used, 5000);
	cr_expect_null(pidmap_add(&m, 0, &added), "0 marks an empty slot: never a key");
	cr_expect_null(pidmap_find(&m, 0));
	pidmap_free(&m);
	cr_expect_eq(m.cap, 0);
}

Test(pidmap, iteration_sees_each_entry_once_in_a_repeatable_order)
{
	struct pidmap a, b;
	pidmap_init(&a, sizeof(struct ent));
	pidmap_init(&b, sizeof(struct ent));
	cr_assert_eq(pidmap_reserve(&b, 1000), 0);
	pid_t pids[] = { 4000000, 3, 257, 513, 1, 2, 99999, 256, 512, 4096 };
	size_t n = sizeof pids / sizeof pids[0];
	for (size_t i = 0; i < n; i++) {
		cr_assert_not_null(pidmap_add(&a, pids[i], NULL));
		cr_assert_not_null(pidmap_add(&b, pids[i], NULL));
	}
	size_t seen = 0;
	for (size_t i = 0; i < a.cap; i++) {
		struct ent *e = pidmap_slot(&a, i);
		if (!e)
			continue;
		seen++;
		size_t k = 0;
		while (k < n && pids[k] != e->pid)
			k++;
		cr_expect_lt(k, n, "pid %d was never added", e->pid);
	}
	cr_expect_eq(seen, n);
	cr_expect_null(pidmap_slot(&a, a.cap), "past the end");

	/* the same keys in the same order: the same layout, whatever the
	 * table's history (b was reserved larger, then a grows to match) */
	cr_assert_eq(pidmap_reserve(&a, 1000), 0);
	cr_assert_eq(a.cap, b.cap);
	for (size_t i = 0; i < a.cap; i++) {
		struct ent *x = pidmap_slot(&a, i), *y = pidmap_slot(&b, i);
		cr_expect((x == NULL) == (y == NULL) && (!x || x->pid == y->pid), "slot %zu", i);
	}
	pidmap_free(&a);
	pidmap_free(&b);
}

Test(pidmap, clear_keeps_the_slots)
{
	struct pidmap m;
	pidmap_init(&m, sizeof(struct ent));
	for (pid_t p = 1; p <= 300; p++)
		cr_assert_not_null(pidmap_add(&m, p, NULL));
	size_t cap = m.cap;
	pidmap_clear(&m);
	cr_expect_eq(m.used, 0);
	cr_expect_eq(m.cap, cap);
	cr_expect_null(pidmap_find(&m, 5));
	struct ent *e = pidmap_add(&m, 5, NULL);
	cr_assert_not_null(e);
	cr_expect_eq(e->value, 0);
	cr_expect_eq(m.cap, cap, "no growth after a clear");
	pidmap_free(&m);
}
