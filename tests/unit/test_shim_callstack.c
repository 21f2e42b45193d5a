/* test_shim_callstack.c: call stacks (callstack.h) from both unwinders.
 * This file is built with frame pointers, so the walk has real frames to
 * follow; `capture` stands for an allocator hook (no frame of its own).
 * Frames are named through the ELF symbols of this executable. */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sampling/callstack.h"
#include "elfsym.h"
#include "sampling/modules.h"
#include "stacks.h"

static _Alignas(4096) unsigned char table[MT_STACKS_MODULES_OFFSET + 64 * MT_STACKS_MODULE_BYTES];

static int reserve_ok(uint32_t n)
{
	return n <= 64;
}

static ssize_t test_pread(void *ctx, void *buf, size_t n, uint64_t off)
{
	ssize_t r = pread(*(int *)ctx, buf, n, (off_t)off);
	return r < 0 ? -errno : r;
}

/* What the walk should find: frames in chain_a, chain_b, chain_c, in that
 * order.  `capture` plays the allocator hook: no frame of its own, so %rbp
 * is still its caller's frame pointer, and ra is its return address. */
static uint64_t got[MT_STACKS_FRAMES];
static unsigned ngot;
static int got_complete, got_miss, which;

__attribute__((noinline, optimize("omit-frame-pointer"))) static void capture(void)
{
	uintptr_t ra = (uintptr_t)__builtin_return_address(0);
	int truncated;
	got_miss = 0;
	if (which == 0)
		ngot = callstack_fp(got, MT_STACKS_FRAMES, ra, &got_complete, &got_miss);
	else
		ngot = callstack_dwarf(got, MT_STACKS_FRAMES, ra, &truncated);
}

__attribute__((noinline)) static void chain_c(void)
{
	capture();
	__asm__ volatile("" ::: "memory");
}

__attribute__((noinline)) static void chain_b(void)
{
	chain_c();
	__asm__ volatile("" ::: "memory");
}

__attribute__((noinline)) static void chain_a(void)
{
	chain_b();
	__asm__ volatile("" ::: "memory");
}

/* The name of the function holding pc (a return address) in this exe. */
static const char *name_of(uint64_t pc)
{
	static char name[128];
	char exe[PATH_MAX];
	ssize_t len = readlink("/proc/self/exe", exe, sizeof exe - 1);
	struct elfsym e;
	struct elfsym_query q;
	int fd;
	uintptr_t base = 0;
	FILE *maps = fopen("/proc/self/maps", "r");
	char line[1024];
	exe[len] = '\0';
	/* the exe's load bias: its mapping at offset 0 */
	while (fgets(line, sizeof line, maps)) {
		unsigned long lo, off;
		char path[PATH_MAX];
		if (sscanf(line, "%lx-%*x %*s %lx %*s %*s %s", &lo, &off, path) == 3 && off == 0 &&
		    !strcmp(path, exe)) {
			base = lo;
			break;
		}
	}
	fclose(maps);
	fd = open(exe, O_RDONLY);
	cr_assert_eq(elfsym_open(&e, test_pread, &fd), 0);
	memset(&q, 0, sizeof q);
	q.addr = pc - 1 - base;
	cr_assert_eq(elfsym_resolve(&e, &q, 1), 0);
	name[0] = '\0';
	if (q.found)
		elfsym_name(&e, &q, name, sizeof name);
	close(fd);
	return name;
}

static void modules_ready(void)
{
	modules_refresh((struct mt_stacks_header *)table, reserve_ok);
}

Test(callstack, frame_pointer_walk_follows_the_chain)
{
	modules_ready();
	which = 0;
	chain_a();
	cr_assert_geq(ngot, 3, "frames: %u", ngot);
	cr_expect_str_eq(name_of(got[0]), "chain_c");
	cr_expect_str_eq(name_of(got[1]), "chain_b");
	cr_expect_str_eq(name_of(got[2]), "chain_a");
	cr_expect_eq(got_miss, 0);
}

Test(callstack, dwarf_unwinder_agrees)
{
	uint64_t fp[MT_STACKS_FRAMES];
	unsigned nfp;
	modules_ready();
	callstack_init(); /* the constructor's: finds libgcc's unwinder */
	which = 0;
	chain_a();
	nfp = ngot;
	memcpy(fp, got, sizeof fp);
	which = 1;
	chain_a();
	cr_assert_geq(ngot, 4);
	cr_expect_str_eq(name_of(got[0]), "chain_c");
	cr_expect_str_eq(name_of(got[1]), "chain_b");
	cr_expect_str_eq(name_of(got[2]), "chain_a");
	/* The walk's frames are a prefix of the unwinder's (the return
	 * addresses into the chain differ: two calls of chain_a). */
	for (unsigned i = 0; i < 3 && i < nfp; i++)
		cr_expect_str_eq(name_of(fp[i]), name_of(got[i]));
}

/* A wild frame pointer ends the walk; it never crashes it. */
Test(callstack, wild_frame_pointers_end_the_walk)
{
	static uintptr_t fake_frames[4];
	/* a fake frame on this stack, at the bottom of what the walk may read */
	uintptr_t *pad = __builtin_alloca(8 * sizeof(uintptr_t));
	uintptr_t wild[] = { 1, 8, 0x7ffffffff000, (uintptr_t)-16, (uintptr_t)fake_frames,
			     (uintptr_t)pad, (uintptr_t)pad + 3 };
	uint64_t pcs[MT_STACKS_FRAMES];
	int complete, miss;
	modules_ready();
	pad[0] = 0;
	pad[1] = 1; /* a return address in no module */
	fake_frames[0] = (uintptr_t)&fake_frames[2];
	fake_frames[1] = (uintptr_t)reserve_ok;
	for (size_t i = 0; i < sizeof wild / sizeof wild[0]; i++) {
		miss = 0;
		cr_expect_eq(callstack_walk(wild[i], (uintptr_t)pad, pcs, MT_STACKS_FRAMES,
					    0x1234, &complete, &miss),
			     1, "fp %#lx", (unsigned long)wild[i]);
		cr_expect_eq(pcs[0], 0x1234);
		cr_expect_neq(complete, 1, "fp %#lx", (unsigned long)wild[i]);
	}
	/* fp 0 is the outermost frame's mark: complete */
	cr_expect_eq(callstack_walk(0, (uintptr_t)pad, pcs, MT_STACKS_FRAMES, 0x1234,
				    &complete, &miss),
		     1);
	cr_expect_eq(complete, 1);
	/* a return address in no module ends the walk and asks for a refresh */
	miss = 0;
	cr_expect_eq(callstack_walk((uintptr_t)pad, (uintptr_t)pad, pcs, MT_STACKS_FRAMES,
				    0x1234, &complete, &miss),
		     1);
	cr_expect_eq(miss, 1);
}

/* ---- the shim's own walk of the unwind tables (cfi.h) against libgcc ----- */

static uint64_t cfi_pcs[MT_STACKS_FRAMES], gcc_pcs[MT_STACKS_FRAMES];
static unsigned cfi_n, gcc_n;
static int cfi_trunc, gcc_trunc;
static unsigned cfi_fp_at;

/* Takes the stack both ways, as an allocator hook would (no frame of its
 * own). */
__attribute__((noinline, optimize("omit-frame-pointer"))) static void capture_both(void)
{
	uintptr_t ra = (uintptr_t)__builtin_return_address(0);
	cfi_n = callstack_cfi(cfi_pcs, MT_STACKS_FRAMES, ra, &cfi_trunc, &cfi_fp_at);
	gcc_n = callstack_libgcc(gcc_pcs, MT_STACKS_FRAMES, ra, &gcc_trunc);
}

static void expect_same_stacks(void)
{
	cr_assert_gt(gcc_n, 0, "libgcc found no stack");
	cr_expect_eq(cfi_n, gcc_n, "frames: cfi %u, libgcc %u", cfi_n, gcc_n);
	cr_expect_eq(cfi_trunc, gcc_trunc);
	for (unsigned i = 0; i < cfi_n && i < gcc_n; i++)
		cr_expect_eq(cfi_pcs[i], gcc_pcs[i], "frame %u: cfi %#lx, libgcc %#lx", i,
			     (unsigned long)cfi_pcs[i], (unsigned long)gcc_pcs[i]);
}

static volatile int sink;

/* qsort's comparator: the stack runs through the C library's own frames
 * (built without frame pointers) on the way up. */
static int capture_armed;
static int compare_and_capture(const void *a, const void *b)
{
	if (capture_armed) {
		capture_armed = 0;
		capture_both();
		__asm__ volatile("" ::: "memory");
	}
	return *(const int *)a - *(const int *)b;
}

/* %rbp-based: a variable-length array makes the compiler keep a frame
 * pointer and take the CFA from it. */
__attribute__((noinline)) static void frame_with_vla(int n)
{
	int v[n];
	for (int i = 0; i < n; i++)
		v[i] = n - i;
	qsort(v, (size_t)n, sizeof v[0], compare_and_capture);
	sink = v[0];
}

/* %rsp-based, with a frame of its own. */
__attribute__((noinline, optimize("omit-frame-pointer"))) static void frame_without_fp(int n)
{
	volatile char pad[200];
	pad[n % 200] = 1;
	frame_with_vla(n);
	sink = pad[0];
}

Test(callstack, cfi_walk_agrees_with_libgcc_through_mixed_frames)
{
	modules_ready();
	callstack_init();
	capture_armed = 1;
	frame_without_fp(37);
	cr_assert_geq(cfi_n, 5, "frames: %u", cfi_n);
	expect_same_stacks();
	/* again: now every rule comes from the cache */
	cfi_n = gcc_n = 0;
	capture_armed = 1;
	frame_without_fp(41);
	expect_same_stacks();
}

/* Realigned through %r10 (an over-aligned local beside an alloca): the
 * frame is described by DWARF expressions that the shim's rules read
 * (cfi.h), so the walk goes through it rather than handing the stack to
 * libgcc. */
__attribute__((noinline)) static void frame_realigned(int n)
{
	_Alignas(128) volatile char pad[256];
	volatile char *more = __builtin_alloca((size_t)n);
	pad[n % 256] = 1;
	more[0] = 1;
	frame_without_fp(n);
	sink = pad[0] + more[0];
}

Test(callstack, cfi_walk_agrees_with_libgcc_through_a_realigned_frame)
{
	modules_ready();
	callstack_init();
	capture_armed = 1;
	frame_realigned(43);
	cr_assert_geq(cfi_n, 6, "frames: %u (none: the walk gave up on the realigned frame)",
		      cfi_n);
	expect_same_stacks();
	cfi_n = gcc_n = 0;
	capture_armed = 1;
	frame_realigned(47);
	expect_same_stacks();
}

__attribute__((noinline, optimize("omit-frame-pointer"))) static void recurse(int depth)
{
	volatile char pad[24 + (depth % 3) * 16];
	pad[0] = (char)depth;
	if (depth == 0)
		capture_both();
	else
		recurse(depth - 1);
	sink = pad[0];
}

Test(callstack, cfi_walk_agrees_with_libgcc_when_the_stack_is_deeper_than_kept)
{
	callstack_init();
	recurse(50);
	cr_expect_eq(cfi_n, MT_STACKS_FRAMES);
	cr_expect_eq(cfi_trunc, 1);
	expect_same_stacks();
}

static void on_signal(int sig)
{
	(void)sig;
	capture_both();
	__asm__ volatile("" ::: "memory");
}

Test(callstack, signal_frames_go_to_libgcc)
{
	uint64_t pcs[MT_STACKS_FRAMES];
	int truncated;
	uintptr_t ra = (uintptr_t)__builtin_return_address(0);
	callstack_init();
	signal(SIGUSR1, on_signal);
	raise(SIGUSR1);
	signal(SIGUSR1, SIG_DFL);
	/* the signal frame is beyond the shim's rules: no stack from them */
	cr_expect_eq(cfi_n, 0, "frames: %u", cfi_n);
	cr_expect_gt(gcc_n, 2);
	/* and the combined path gives libgcc's */
	cr_expect_eq(callstack_dwarf(pcs, MT_STACKS_FRAMES, ra, &truncated) > 0, 1);
}

/* ---- generated code: no unwind tables, a frame pointer (callstack.h) ----- */

#if defined(__x86_64__)
#include <sys/mman.h>

static unsigned dwarf_n;
static uint64_t dwarf_pcs[MT_STACKS_FRAMES];
static int fp_complete, fp_miss;
static unsigned fp_n;
static uint64_t fp_pcs[MT_STACKS_FRAMES];

/* Called from the generated code; takes the stack every way. */
__attribute__((noinline)) static void jit_callee(void)
{
	capture_both();
	__asm__ volatile("" ::: "memory");
	which = 1;
	capture();
	dwarf_n = ngot;
	memcpy(dwarf_pcs, got, sizeof got);
	which = 0;
	capture();
	fp_n = ngot;
	fp_complete = got_complete;
	fp_miss = got_miss;
	memcpy(fp_pcs, got, sizeof got);
}

/* As a JIT writes it (V8's builtins and code keep frame pointers):
 * push rbp; mov rbp, rsp; movabs rax, fn; call rax; pop rbp; ret, in an
 * anonymous executable mapping (no file, no unwind tables).  Returns the
 * return address of its call. */
static uintptr_t jit_make(void (*fn)(void), void (**entry)(void))
{
	unsigned char *code = mmap(NULL, 4096, PROT_READ | PROT_WRITE,
				   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0), *c;
	uint64_t target = (uint64_t)(uintptr_t)fn;
	size_t n = 0;
	cr_assert_neq(code, MAP_FAILED);
	c = code + 32;
	c[n++] = 0x55;
	c[n++] = 0x48; c[n++] = 0x89; c[n++] = 0xe5;
	c[n++] = 0x48; c[n++] = 0xb8; memcpy(c + n, &target, 8); n += 8;
	c[n++] = 0xff; c[n++] = 0xd0;
	c[n++] = 0x5d;
	c[n++] = 0xc3;
	cr_assert_eq(mprotect(code, 4096, PROT_READ | PROT_EXEC), 0);
	*entry = (void (*)(void))(uintptr_t)c;
	return (uintptr_t)c + 16; /* after the call */
}

__attribute__((noinline)) static void jit_caller(void (*entry)(void))
{
	entry();
	__asm__ volatile("" ::: "memory");
}

static int has_name(const uint64_t *pcs, unsigned n, const char *fn)
{
	for (unsigned i = 0; i < n; i++)
		if (pcs[i] && !strcmp(name_of(pcs[i]), fn))
			return 1;
	return 0;
}

/* The walks go on through a frame of generated code by its frame pointer
 * (before, the stack ended there); libgcc stops at it, and the part both
 * walk is the same, so the shim's walk stays on. */
Test(callstack, walks_go_through_generated_code)
{
	void (*entry)(void);
	uintptr_t jit_ra = jit_make(jit_callee, &entry);
	unsigned at;
	modules_ready(); /* after the code is mapped, as a refresh would be */
	callstack_init();
	cr_assert_lt(modules_find(jit_ra), 0, "generated code is in no module");
	cr_assert_eq(modules_jit_find(jit_ra), 1, "its mapping is known as code");
	cr_assert_eq(modules_code(jit_ra), 1);
	cr_assert_eq(modules_jit_find((uintptr_t)jit_callee), 0);
	jit_caller(entry);
	/* libgcc: up to the generated code's frame, which it cannot step */
	cr_assert_geq(gcc_n, 2);
	cr_expect_eq(gcc_pcs[gcc_n - 1], jit_ra, "libgcc ends at the generated frame");
	/* the shim's CFI walk: the same frames, then on by frame pointers */
	cr_assert_gt(cfi_n, gcc_n, "cfi %u frames, libgcc %u", cfi_n, gcc_n);
	for (at = 0; at < gcc_n; at++)
		cr_expect_eq(cfi_pcs[at], gcc_pcs[at], "frame %u", at);
	cr_expect_str_eq(name_of(cfi_pcs[gcc_n]), "jit_caller");
	cr_expect_eq(cfi_fp_at, gcc_n, "the frame-pointer step's frame is libgcc's last");
	/* and on through the test's own frame, above it */
	cr_expect(has_name(cfi_pcs, cfi_n, "callstack_walks_go_through_generated_code_impl"));
	/* the checked path keeps the shim's walk on, and gives its stack */
	cr_expect_eq(callstack_cfi_is_off(), 0, "the libgcc check switched the walk off");
	cr_expect_eq(dwarf_n > 2 && has_name(dwarf_pcs, dwarf_n, "jit_caller"), 1);
	cr_expect(has_name(dwarf_pcs, dwarf_n, "callstack_walks_go_through_generated_code_impl"));
	/* the frame-pointer walk takes the generated frame as well */
	cr_expect_eq(fp_miss, 0);
	cr_expect_eq(fp_complete, 1);
	cr_expect(has_name(fp_pcs, fp_n, "jit_caller"));
	int seen = 0;
	for (unsigned i = 0; i < fp_n; i++)
		seen |= fp_pcs[i] == jit_ra;
	cr_expect(seen, "the generated frame is in the frame-pointer walk");
}

/* Code unmapped since the table was read is no code: a walk ends there. */
Test(callstack, unmapped_code_ends_the_walks)
{
	void (*entry)(void);
	uintptr_t jit_ra = jit_make(jit_callee, &entry);
	modules_ready();
	cr_assert_eq(modules_jit_find(jit_ra), 1);
	cr_assert_eq(munmap((void *)(jit_ra & ~(uintptr_t)4095), 4096), 0);
	modules_ready();
	cr_expect_eq(modules_jit_find(jit_ra), 0);
	cr_expect_eq(modules_code(jit_ra), 0);
}
#endif
