/* test_shim_sites.c: the sampled-site tables without LD_PRELOAD: samples
 * in and out, sampled mappings cut by munmap (stacks.h "Mapped memory"),
 * the exact peak snapshot (stacks.h "The image's peak"), the
 * free filter, the queue for frees made inside the shim, and what happens
 * when the live table or the stack table is full.  The table lives in the
 * test's own memory (no MEMTRACE_DIR); block addresses are never
 * dereferenced, so any distinct values do. */
#include <criterion/criterion.h>
#include <pthread.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>

#include "sampling/callstack.h"
#include "base/config.h"
#include "core/counters.h"
#include "base/shim.h"
#include "sampling/sites.h"
#include "stacks.h"

static struct mt_record *rec;

static void start(uint64_t rate)
{
	rec = counters_local();
	rec->pid = getpid();
	config.sample_bytes = rate;
	config.dir = "";
	sites_start(0);
}

/* A sample of `bytes` at address p from call site ra (distinct ra,
 * distinct stack: pc[0] is always the allocator's caller). */
static void sample(uintptr_t p, uint64_t bytes, uintptr_t ra)
{
	sites_note_sample((void *)p, bytes, bytes, ra);
}

static const struct mt_stack *stack_of(uintptr_t ra)
{
	struct mt_stacks_header *h = sites_table();
	for (uint32_t i = 1; i < h->stack_count; i++)
		if (mt_stacks_stack(h, i)->pc[0] == ra)
			return mt_stacks_stack(h, i);
	cr_assert_fail("no stack for ra %#lx", (unsigned long)ra);
	return NULL;
}

Test(sites, nothing_before_the_first_sample)
{
	start(1);
	cr_expect_null(sites_table());
	cr_expect(!sites_maybe((void *)0x1000));
}

Test(sites, samples_in_and_out)
{
	struct mt_stacks_header *h;
	start(1);
	sample(0x10000, 100, 0xa1);
	sample(0x20000, 200, 0xa1);
	sample(0x30000, 300, 0xb2);
	h = sites_table();
	cr_assert_not_null(h);
	cr_expect_eq(h->magic, MT_STACKS_MAGIC);
	cr_expect_eq(h->version, MT_STACKS_VERSION);
	cr_expect_eq(h->pid, getpid());
	cr_expect_eq(h->sample_bytes, 1);
	cr_expect_eq(h->samples, 3);
	cr_expect_eq(h->stack_count, 3, "catch-all, a1, b2");
	cr_expect(mt_stacks_stack(h, 0)->flags & MT_STACK_CATCHALL);
	cr_expect_eq(stack_of(0xa1)->live_bytes, 300);
	cr_expect_eq(stack_of(0xa1)->live_count, 2);
	cr_expect_eq(stack_of(0xb2)->live_bytes, 300);
	cr_expect(sites_maybe((void *)0x20000));
	sites_note_free((void *)0x20000);
	cr_expect_eq(stack_of(0xa1)->live_bytes, 100);
	cr_expect_eq(stack_of(0xa1)->total_bytes, 300);
	cr_expect_eq(stack_of(0xa1)->total_count, 2);
	cr_expect_eq(h->sampled_frees, 1);
	/* A free of a block never sampled changes nothing. */
	sites_forget((void *)0x40000);
	cr_expect_eq(h->sampled_frees, 1);
	/* A stale entry (its address handed out again, its free unseen) is
	 * replaced, not counted twice. */
	sample(0x10000, 50, 0xb2);
	cr_expect_eq(stack_of(0xa1)->live_bytes, 0);
	cr_expect_eq(stack_of(0xb2)->live_bytes, 350);
}

/* A freed block's filter bit goes, and a live block's bit never goes: its
 * free is still recognised after thousands of others came and went. */
Test(sites, filter_forgets_freed_blocks_and_keeps_live_ones)
{
	struct mt_stacks_header *h;
	start(1);
	sample(0x10000, 100, 0xa1); /* lives throughout */
	sample(0x20000, 200, 0xa1);
	h = sites_table();
	cr_assert_not_null(h);
	sites_note_free((void *)0x20000);
	cr_expect(sites_maybe((void *)0x10000));
	for (uintptr_t i = 0; i < 5000; i++) {
		uintptr_t p = 0x100000 + i * 48;
		sample(p, 10, 0xb2);
		cr_assert(sites_maybe((void *)p));
		sites_note_free((void *)p);
		cr_assert(sites_maybe((void *)0x10000), "live block's bit lost after %lu frees",
			  (unsigned long)i);
	}
	cr_expect(!sites_maybe((void *)0x20000));
	cr_expect_eq(h->sampled_frees, 5001);
	cr_expect_eq(stack_of(0xb2)->live_count, 0);
	sites_note_free((void *)0x10000);
	cr_expect_eq(h->sampled_frees, 5002);
	cr_expect_eq(stack_of(0xa1)->live_count, 0);
	/* the filter is nearly empty again: most of the churn's bits are gone */
	{
		unsigned set = 0;
		for (uintptr_t i = 0; i < 5000; i++)
			set += (unsigned)sites_maybe((void *)(0x100000 + i * 48));
		cr_expect_lt(set, 100, "%u of 5000 freed blocks still in the filter", set);
	}
}

/* A freed block's bit goes at its free, not some frees later (glibc hands
 * the address out again at once, and each free of the unsampled block
 * that takes its place would take the lock to look for it), unless
 * another live block shares the slot. */
Test(sites, freed_block_leaves_the_filter_at_once_unless_its_slot_is_shared)
{
	uintptr_t a = 0x10000, c = 0x20000, b = 0;
	start(1);
	cr_assert_neq(sites_slot((void *)a), sites_slot((void *)c));
	sample(a, 100, 0xa1);
	sample(c, 100, 0xa1);
	sites_note_free((void *)c);
	cr_expect(!sites_maybe((void *)c), "a freed block's bit is still set");
	cr_expect(sites_maybe((void *)a));
	for (uintptr_t q = a + 16; !b; q += 16)
		if (sites_slot((void *)q) == sites_slot((void *)a))
			b = q;
	sample(b, 100, 0xb2);
	sites_note_free((void *)a);
	cr_expect(sites_maybe((void *)b), "a live block's bit went with its slot mate's");
	cr_expect_eq(stack_of(0xb2)->live_count, 1);
	sites_note_free((void *)b);
	cr_expect(!sites_maybe((void *)b));
	cr_expect_eq(stack_of(0xb2)->live_count, 0);
}

/* The live table doubles as it fills, every entry still found after each
 * doubling. */
Test(sites, live_table_grows_and_keeps_every_block)
{
	struct mt_stacks_header *h;
	start(1);
	for (uintptr_t i = 0; i < 3000; i++)
		sample(0x1000000 + i * 64, 1, 0xc3);
	h = sites_table();
	cr_assert_not_null(h);
	cr_expect_eq(h->untracked_samples, 0);
	cr_expect_eq(stack_of(0xc3)->live_count, 3000);
	for (uintptr_t i = 0; i < 3000; i += 2)
		sites_note_free((void *)(0x1000000 + i * 64));
	cr_expect_eq(h->sampled_frees, 1500);
	cr_expect_eq(stack_of(0xc3)->live_count, 1500);
	for (uintptr_t i = 1; i < 3000; i += 2)
		cr_expect(sites_maybe((void *)(0x1000000 + i * 64)));
}

/* The stack index doubles as stacks come (3,000 stacks: 1024 slots to 8192),
 * and every stack is found again after each doubling: sampling each call
 * site a second time makes no new stack. */
Test(sites, stack_index_grows_and_finds_every_stack, .timeout = 60)
{
	struct mt_stacks_header *h;
	const uintptr_t sites = 3000;
	start(1);
	for (uintptr_t i = 0; i < sites; i++)
		sample(0x1000000 + 64 * i, 10, 0x400000 + 16 * i);
	h = sites_table();
	cr_assert_not_null(h);
	cr_assert_eq(h->stack_count, sites + 1, "stack 0 is the catch-all");
	for (uintptr_t i = 0; i < sites; i++)
		sample(0x2000000 + 64 * i, 10, 0x400000 + 16 * i);
	cr_expect_eq(h->stack_count, sites + 1, "a second sample made a new stack");
	cr_expect_eq(h->catchall_samples, 0);
	for (uint32_t id = 1; id < h->stack_count; id++)
		cr_expect_eq(mt_stacks_stack(h, id)->total_count, 2, "stack %u sampled %lu times",
			     id, (unsigned long)mt_stacks_stack(h, id)->total_count);
}

/* The peak columns hold the set as it stood when the heap peaked. */
/* The record's peaks as an image that maps nothing itself has them: its
 * total peak is its heap peak (stacks.h: the snapshots follow the total). */
static void peak(uint64_t v)
{
	rec->heap_peak = v;
	rec->total_peak = v;
}

Test(sites, peak_snapshot_is_exact)
{
	struct mt_stacks_header *h;
	start(1);
	peak(0);
	sample(0x10000, 1000, 0xa1);      /* {A}, no peak rise seen yet */
	h = sites_table();
	cr_expect_eq(h->peak_seq, 0);
	peak(1000);                    /* the heap peaks with {A} */
	sample(0x20000, 500, 0xb2);       /* event: {A} was live at 1000 */
	cr_expect_eq(h->peak_heap, 1000);
	cr_expect_eq(stack_of(0xa1)->peak_bytes, 1000);
	cr_expect_eq(stack_of(0xb2)->peak_bytes, 0);
	cr_expect_eq(h->peak_seq, 2, "one snapshot, sequence even");
	sites_forget((void *)0x10000);    /* no new peak: no snapshot */
	cr_expect_eq(h->peak_seq, 2);
	cr_expect_eq(stack_of(0xa1)->peak_bytes, 1000);
	peak(1200);                    /* {B} + unsampled blocks peak higher */
	sites_forget((void *)0x20000);    /* event: {B} was live at 1200 */
	cr_expect_eq(h->peak_heap, 1200);
	cr_expect_eq(stack_of(0xa1)->peak_bytes, 0);
	cr_expect_eq(stack_of(0xb2)->peak_bytes, 500);
	/* A rise after the last event: the live set is the peak's, and the
	 * end of the image copies it. */
	sample(0x30000, 700, 0xc3);
	peak(5000);
	cr_expect_eq(h->seen_heap_peak, 1200);
	sites_finish(MT_STATE_EXITED);
	cr_expect_eq(h->state, MT_STACKS_FINISHED);
	cr_expect_eq(h->peak_heap, 5000);
	cr_expect_eq(stack_of(0xc3)->peak_bytes, 700);
	cr_expect_eq(stack_of(0xb2)->peak_bytes, 0);
	sites_unfinish();
	cr_expect_eq(h->state, MT_STACKS_RUNNING);
}

Test(sites, realloc_holds_and_puts_back)
{
	struct sites_held held;
	start(1);
	sample(0x10000, 100, 0xa1);
	sites_hold((void *)0x10000, &held);
	cr_expect(held.held);
	cr_expect_eq(stack_of(0xa1)->live_bytes, 0);
	sites_unhold((void *)0x10000, &held);
	cr_expect_eq(stack_of(0xa1)->live_bytes, 100);
	cr_expect_eq(stack_of(0xa1)->total_count, 1, "putting back is no new sample");
	sites_hold((void *)0x50000, &held);
	cr_expect(!held.held);
}

/* A free made while the thread is inside the shim (a signal handler)
 * waits in the queue; the next holder of the lock applies it. */
Test(sites, frees_inside_the_shim_are_queued)
{
	struct mt_stacks_header *h;
	start(1);
	sample(0x10000, 100, 0xa1);
	sample(0x20000, 100, 0xa1);
	h = sites_table();
	cr_assert(shim_guard_enter());
	sites_note_free((void *)0x10000);
	sample(0x30000, 100, 0xa1); /* skipped: the thread is inside the shim */
	shim_guard_leave();
	cr_expect_eq(stack_of(0xa1)->live_count, 2, "not yet");
	sample(0x40000, 100, 0xb2);
	cr_expect_eq(stack_of(0xa1)->live_count, 1);
	cr_expect_eq(h->sampled_frees, 1);
	cr_expect_eq(h->skipped_samples, 1);
	/* more than the queue holds: counted as lost */
	cr_assert(shim_guard_enter());
	for (int i = 0; i < 80; i++)
		sites_forget((void *)(uintptr_t)(0x900000 + 16 * i));
	shim_guard_leave();
	sites_finish(MT_STATE_EXITED);
	cr_expect_geq(h->lost_frees, 80 - 64);
}

/* What another thread does while a fork holds the lock: in the program,
 * a signal handler that interrupted glibc's malloc there, holding the
 * arena lock the fork waits for. */
static void *during_fork(void *arg)
{
	(void)arg;
	sample(0x50000, 100, 0xc3);     /* skipped, not waited for */
	sites_forget((void *)0x10000); /* queued for the fork's unlock */
	return NULL;
}

/* A fork holds the lock from its prepare handler until glibc's fork has
 * taken every malloc arena's lock; waiting for it from inside glibc's
 * malloc (a handler that allocates) never ends: x_stress hung so, with
 * MEMTRACE_SAMPLE_BYTES=4096.  Without the fix this test times out. */
Test(sites, a_fork_holding_the_lock_is_not_waited_for, .timeout = 20)
{
	pthread_t t;
	start(1);
	sample(0x10000, 100, 0xa1);
	struct mt_stacks_header *h = sites_table();
	sites_fork_prepare();
	cr_assert_eq(pthread_create(&t, NULL, during_fork, NULL), 0);
	cr_assert_eq(pthread_join(t, NULL), 0);
	cr_expect_eq(stack_of(0xa1)->live_count, 1, "the free waits for the unlock");
	sites_fork_parent();
	cr_expect_eq(stack_of(0xa1)->live_count, 0);
	cr_expect(!sites_maybe((void *)0x50000));
	sample(0x60000, 100, 0xb2); /* publishes the count of skips */
	cr_expect_eq(h->skipped_samples, 1);
	cr_expect_eq(h->sampled_frees, 1);
	/* and after the fork a sample waits for the lock as usual */
	cr_expect(sites_maybe((void *)0x60000));
}

Test(sites, full_live_table_counts_untracked, .timeout = 60)
{
	struct mt_stacks_header *h;
	uint64_t n = 0;
	start(1);
	for (uintptr_t p = 0x1000000; n < 30000; p += 64, n++)
		sample(p, 10, 0xa1);
	h = sites_table();
	cr_expect_eq(h->samples, 30000);
	cr_expect_gt(h->untracked_samples, 0);
	cr_expect_eq(h->untracked_bytes, 10 * h->untracked_samples);
	cr_expect_eq(stack_of(0xa1)->live_count + h->untracked_samples, 30000);
	cr_expect_eq(stack_of(0xa1)->total_count, 30000);
}

Test(sites, full_stack_table_goes_to_the_catch_all, .timeout = 120)
{
	struct mt_stacks_header *h;
	start(1);
	for (uintptr_t i = 0; i < MT_STACKS_SLOTS + 100; i++)
		sample(0x1000000 + 64 * i, 10, 0x100000 + 16 * i);
	h = sites_table();
	cr_expect_eq(h->stack_count, MT_STACKS_SLOTS);
	cr_expect_eq(h->catchall_samples, 101);
	cr_expect_eq(mt_stacks_stack(h, 0)->live_count, 101);
	cr_expect_eq(mt_stacks_stack(h, 0)->live_bytes, 1010);
}

/* The table says when the shim's own unwinder was switched off for the
 * image (callstack.h): from the next sample on, not before. */
Test(sites, the_table_says_when_the_cached_unwinder_is_off)
{
	struct mt_stacks_header *h;
	start(1);
	sample(0x10000, 100, 0xa1);
	h = sites_table();
	cr_assert_not_null(h);
	cr_expect_eq(h->flags & MT_STACKS_FLAG_CFI_OFF, 0);
	callstack_cfi_switch_off();
	cr_expect(callstack_cfi_is_off());
	sample(0x20000, 100, 0xb2);
	cr_expect_neq(h->flags & MT_STACKS_FLAG_CFI_OFF, 0, "flags %#x", h->flags);
}

Test(sites, sampling_off_makes_nothing)
{
	start(0);
	sample(0x10000, 100, 0xa1);
	cr_expect_null(sites_table());
}

/* A sampled mapping (stacks.h, "Mapped memory") of `len` bytes at p from
 * call site ra, as track.c hands it over: with the shim's guard held. */
static void map_sample(uintptr_t p, uint64_t len, uint64_t weight, uintptr_t ra)
{
	cr_assert(shim_guard_enter());
	sites_note_map((void *)p, len, weight, ra);
	shim_guard_leave();
}

static void unmap(uintptr_t s, uintptr_t e)
{
	cr_assert(shim_guard_enter());
	sites_note_unmap(s, e);
	shim_guard_leave();
}

/* Mappings are sites of their own kind, apart from heap blocks at the same
 * call site; a partial munmap keeps the rest (its share of the weight), a
 * hole splits one in two pieces, a whole munmap takes it out, a new mapping
 * over a sampled range ends it; free() never sees them. */
Test(sites, mappings_are_cut_by_what_is_unmapped)
{
	struct mt_stacks_header *h;
	const struct mt_stack *m;
	start(1);
	sample(0x10000, 100, 0xa1);
	map_sample(0x100000, 0x10000, 0x10000, 0xa1); /* same call site, kind mmap */
	h = sites_table();
	cr_assert_eq(h->stack_count, 3, "a heap stack and a mapping stack");
	m = mt_stacks_stack(h, 2);
	cr_expect(m->flags & MT_STACK_MMAP);
	cr_expect(!(mt_stacks_stack(h, 1)->flags & MT_STACK_MMAP));
	cr_expect_eq(m->live_bytes, 0x10000);
	cr_expect_eq(h->map_samples, 1);
	cr_expect(!sites_maybe((void *)0x100000), "no filter bit: free() never looks");
	sites_forget((void *)0x100000);            /* a free of its address: nothing */
	cr_expect_eq(m->live_bytes, 0x10000);

	unmap(0x100000, 0x104000);                  /* the head: a quarter */
	cr_expect_eq(m->live_bytes, 0xc000);
	cr_expect_eq(m->live_count, 1);
	unmap(0x108000, 0x10c000);                  /* a hole: two pieces */
	cr_expect_eq(m->live_bytes, 0x8000);
	cr_expect_eq(m->live_count, 2);
	cr_expect_eq(h->map_cuts, 2);
	unmap(0x0f0000, 0x10a000);                  /* the first piece, and around it */
	cr_expect_eq(m->live_bytes, 0x4000);
	cr_expect_eq(m->live_count, 1);
	cr_expect_eq(h->map_unmaps, 1);
	/* a mapping over the rest (MAP_FIXED) ends it */
	map_sample(0x10c000, 0x2000, 0x2000, 0xb2);
	cr_expect_eq(m->live_bytes, 0x2000);
	unmap(0x10e000, 0x110000);
	cr_expect_eq(m->live_bytes, 0, "%lu", (unsigned long)m->live_bytes);
	cr_expect_eq(m->live_count, 0);
	cr_expect_eq(stack_of(0xb2)->live_bytes, 0x2000);
	cr_expect_eq(m->total_bytes, 0x10000, "total: what was sampled");
	cr_expect_eq(stack_of(0xa1)->live_bytes, 100, "the heap block is untouched");
}

/* A piece counts for its share of the sample's weight (unbiased at any
 * interval): a mapping of 4 pages counting for 10 pages keeps 5 for its
 * half, and the variance goes with the square of the share. */
Test(sites, mapping_pieces_keep_their_share_of_the_weight)
{
	const struct mt_stack *m;
	start(1 << 20);
	map_sample(0x200000, 0x4000, 0xa000, 0xc3);
	m = stack_of(0xc3);
	cr_expect_eq(m->live_bytes, 0xa000);
	uint64_t var = m->live_var;
	cr_expect_gt(var, 0);
	unmap(0x202000, 0x204000);
	cr_expect_eq(m->live_bytes, 0x5000);
	cr_expect(m->live_var >= var / 4 - 1 && m->live_var <= var / 4 + 1, "%lu of %lu",
		  (unsigned long)m->live_var, (unsigned long)var);
}

/* The peak columns follow the total peak (heap + mappings): a mapping's
 * rise is a peak the heap alone never had. */
Test(sites, mappings_make_the_total_peak)
{
	struct mt_stacks_header *h;
	start(1);
	peak(1000);
	sample(0x10000, 1000, 0xa1);
	map_sample(0x300000, 0x10000, 0x10000, 0xd4);
	h = sites_table();
	rec->total_peak = 1000 + 0x10000;          /* then the mapping is counted */
	unmap(0x300000, 0x310000);                  /* event: both were live at the peak */
	cr_expect_eq(h->peak_total, 1000 + 0x10000);
	cr_expect_eq(h->peak_heap, 1000);
	cr_expect_eq(stack_of(0xd4)->peak_bytes, 0x10000);
	cr_expect_eq(stack_of(0xa1)->peak_bytes, 1000);
	cr_expect_eq(stack_of(0xd4)->live_bytes, 0);
}
