/* test_shim_cfi.c: unwind rules from .eh_frame (cfi.h), checked against
 * the frames they describe: the CFA a rule gives must hold the return
 * address the compiler says the frame has.  Built with frame pointers;
 * some functions here drop theirs. */
#include <criterion/criterion.h>
#include <signal.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>

#include "sampling/cfi.h"

extern void _start(void);

/* What a probe found, while its caller's frame was still live: the
 * caller's pc (the probe's return address), its rule, and the return
 * address and saved %rbp the rule leads to. */
static uintptr_t probe_pc, found_ra, found_rbp;
static struct cfi_rule probe_rule;

__attribute__((noinline, optimize("omit-frame-pointer"))) static void probe(void)
{
	uintptr_t sp = (uintptr_t)__builtin_dwarf_cfa(), rbp, cfa; /* the caller's %rsp */
	__asm__ volatile("mov %%rbp, %0" : "=r"(rbp));       /* and its %rbp */
	probe_pc = (uintptr_t)__builtin_return_address(0);
	cfi_rule_at(probe_pc - 1, &probe_rule);
	if (probe_rule.kind != CFI_STEP)
		return;
	if (probe_rule.cfa_deref) {
		cfa = *(const uintptr_t *)(rbp - probe_rule.cfa_offset);
		found_rbp = *(const uintptr_t *)rbp;
	} else {
		cfa = (probe_rule.cfa_from_rbp ? rbp : sp) + probe_rule.cfa_offset;
		found_rbp = probe_rule.rbp_slot ? *(const uintptr_t *)(cfa - probe_rule.rbp_slot)
						: rbp;
	}
	found_ra = *(const uintptr_t *)(cfa - 8);
}

static uintptr_t caller_ra, caller_frame;
static volatile int sink;

__attribute__((noinline)) static void with_frame_pointer(void)
{
	caller_ra = (uintptr_t)__builtin_return_address(0);
	caller_frame = *(const uintptr_t *)__builtin_frame_address(0); /* saved %rbp */
	probe();
	__asm__ volatile("" ::: "memory");
}

__attribute__((noinline, optimize("omit-frame-pointer"))) static void without_frame_pointer(void)
{
	volatile char pad[328];
	pad[7] = 1;
	caller_ra = (uintptr_t)__builtin_return_address(0);
	probe();
	sink = pad[7];
}

/* A local aligned above 16 bytes beside an alloca: GCC realigns the stack
 * through %r10 (its "DRAP") and describes the frame with DWARF
 * expressions, the CFA saved below %rbp and %rbp saved at %rbp (as it does
 * for some main()s with such a local, bench/malloc_bench.c's among them).
 * The check below the call says the compiler still does. */
__attribute__((noinline)) static void realigned(int n)
{
	_Alignas(128) volatile char pad[256];
	volatile char *more = __builtin_alloca((size_t)n);
	pad[7] = 1;
	more[0] = 2;
	caller_ra = (uintptr_t)__builtin_return_address(0);
	probe();
	sink = pad[7] + more[0];
}

static void expect_same_as_cached(uintptr_t pc)
{
	struct cfi_rule a, b, c;
	cfi_rule_uncached(pc, &a);
	cfi_rule_at(pc, &b); /* fills the cache */
	cfi_rule_at(pc, &c); /* from it */
	cr_expect_eq(memcmp(&a, &b, sizeof a), 0);
	cr_expect_eq(memcmp(&a, &c, sizeof a), 0);
}

Test(cfi, a_frame_pointer_function_takes_its_cfa_from_rbp)
{
	struct cfi_rule r;
	with_frame_pointer();
	r = probe_rule;
	cr_assert_eq(r.kind, CFI_STEP);
	cr_expect_eq(r.cfa_from_rbp, 1);
	cr_expect_eq(r.cfa_offset, 16);
	cr_expect_eq(r.rbp_slot, 16);
	cr_expect_eq(found_ra, caller_ra);
	cr_expect_eq(found_rbp, caller_frame);
	expect_same_as_cached(probe_pc - 1);
}

Test(cfi, a_function_without_one_takes_its_cfa_from_rsp)
{
	struct cfi_rule r;
	without_frame_pointer();
	r = probe_rule;
	cr_assert_eq(r.kind, CFI_STEP);
	cr_expect_eq(r.cfa_from_rbp, 0);
	cr_expect_geq(r.cfa_offset, 328 + 8);
	cr_expect_eq(r.rbp_slot, 0);
	cr_expect_eq(found_ra, caller_ra, "ra %#lx, expected %#lx; cfa offset %u",
		     (unsigned long)found_ra, (unsigned long)caller_ra, r.cfa_offset);
	expect_same_as_cached(probe_pc - 1);
}

Test(cfi, a_realigned_frame_takes_its_cfa_from_below_rbp)
{
	struct cfi_rule r;
	uintptr_t frame = (uintptr_t)__builtin_frame_address(0); /* this test's %rbp */
	realigned(40);
	r = probe_rule;
	cr_assert_eq(r.kind, CFI_STEP, "kind %u", r.kind);
	cr_expect_eq(r.cfa_deref, 1);
	cr_expect_eq(r.cfa_from_rbp, 1);
	cr_expect_gt(r.cfa_offset, 0);
	cr_expect_eq(found_ra, caller_ra);
	cr_expect_eq(found_rbp, frame, "rbp %#lx, expected %#lx", (unsigned long)found_rbp,
		     (unsigned long)frame);
	expect_same_as_cached(probe_pc - 1);
}

Test(cfi, at_a_function_entry_the_cfa_is_just_above_the_return_address)
{
	struct cfi_rule r;
	cfi_rule_uncached((uintptr_t)without_frame_pointer, &r);
	cr_assert_eq(r.kind, CFI_STEP);
	cr_expect_eq(r.cfa_from_rbp, 0);
	cr_expect_eq(r.cfa_offset, 8);
	cr_expect_eq(r.rbp_slot, 0);
}

Test(cfi, the_program_entry_is_the_outermost_frame)
{
	struct cfi_rule r;
	cfi_rule_uncached((uintptr_t)_start + 1, &r);
	cr_expect_eq(r.kind, CFI_OUTERMOST);
}

Test(cfi, a_pc_in_no_object_has_no_rule)
{
	struct cfi_rule r;
	void *anon = mmap(NULL, 4096, PROT_READ | PROT_EXEC, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	cr_assert_neq(anon, MAP_FAILED);
	cfi_rule_at((uintptr_t)anon + 16, &r);
	cr_expect_eq(r.kind, CFI_NONE);
	cfi_rule_at((uintptr_t)&r, &r); /* the stack */
	cr_expect_eq(r.kind, CFI_NONE);
	munmap(anon, 4096);
}

static uintptr_t handler_ra;
static void on_signal(int sig)
{
	(void)sig;
	handler_ra = (uintptr_t)__builtin_return_address(0);
}

Test(cfi, a_signal_frame_is_left_to_libgcc)
{
	struct cfi_rule r;
	signal(SIGUSR1, on_signal);
	raise(SIGUSR1);
	signal(SIGUSR1, SIG_DFL);
	cr_assert_neq(handler_ra, 0);
	/* the handler returns into the C library's sigreturn trampoline */
	cfi_rule_at(handler_ra - 1, &r);
	cr_expect_eq(r.kind, CFI_FOREIGN);
}
