/* callstack.c: call stacks for the sampler (see callstack.h).  Never
 * allocates, except callstack_init (the constructor's, from the bootstrap
 * arena). */
#include <dlfcn.h>
#include <string.h>
#if defined(HAVE_UNWIND_H)
#include <unwind.h>
#endif

#include "base/boot.h"
#include "base/selfmaps.h"
#include "base/sys.h"
#include "invariant.h"
#include "sampling/callstack.h"
#include "sampling/cfi.h"
#include "sampling/modules.h"
#include "sampling/python.h"
#include "stacks.h"

/* The main thread's stack top, set by the dynamic loader. */
extern void *__libc_stack_end;

/* This thread's stack bounds (only this thread reads them). */
static __thread uintptr_t callstack_tls_lo, callstack_tls_hi
	__attribute__((tls_model("initial-exec")));
static __thread int callstack_tls_main __attribute__((tls_model("initial-exec")));
__thread uintptr_t callstack_tls_from __attribute__((tls_model("initial-exec")));

/* The main thread's frames lie in [top - span, top): nothing else is
 * mapped that close below the stack (the kernel keeps at least 128 MiB
 * free under it). */
#define CALLSTACK_MAIN_SPAN (64u << 20)
/* A walk that ends on a bad frame pointer this close to the top of the
 * stack has reached the outermost frames (the C library's start code,
 * built without frame pointers, leaves a junk %rbp for main). */
#define CALLSTACK_TOP_SLACK 1024u
/* Unwinder frames of the shim itself, above the hook's caller. */
#define CALLSTACK_SKIP_MAX 8u

/* [lo, hi) of the stack holding sp, or 0 if unknown. */
static int callstack_bounds(uintptr_t sp, uintptr_t *hi)
{
	uintptr_t lo, top = (uintptr_t)__libc_stack_end;
	if (sp >= callstack_tls_lo && sp < callstack_tls_hi) {
		*hi = callstack_tls_hi;
		return 1;
	}
	if (!callstack_tls_main)
		callstack_tls_main = sys_gettid() == sys_getpid() ? 1 : 2;
	if (callstack_tls_main == 1 && top && sp < top && top - sp < CALLSTACK_MAIN_SPAN) {
		lo = top - CALLSTACK_MAIN_SPAN;
	} else if (selfmaps_find(sp, &lo, &top) != 0) {
		return 0;
	}
	callstack_tls_lo = lo;
	callstack_tls_hi = top;
	*hi = top;
	return 1;
}

unsigned callstack_walk(uintptr_t fp, uintptr_t sp, uint64_t *pcs, unsigned max, uintptr_t ra,
			int *complete, int *miss)
{
	uintptr_t hi, last = 0, lo = sp;
	unsigned n = 0;
	*complete = 0;
	if (max == 0)
		return 0;
	pcs[n++] = ra;
	if (!callstack_bounds(sp, &hi) || hi < 16)
		return n;
	for (;;) {
		uintptr_t next, r;
		if (fp == 0) {
			*complete = 1;
			break;
		}
		if (fp < lo || fp > hi - 16 || (fp & 7)) {
			*complete = last && hi - last <= CALLSTACK_TOP_SLACK;
			break;
		}
		next = ((const uintptr_t *)fp)[0];
		r = ((const uintptr_t *)fp)[1];
		/* a module's code, or a JIT's (V8 keeps frame pointers in its
		 * builtins and generated code: the walk goes on through them) */
		if (!modules_code(r)) {
			*miss = 1;
			break;
		}
		/* No shim function on the way here keeps a frame (with
		 * -ffixed-rbp only functions with variable-length arrays do,
		 * the exec hooks); had one, the check against the DWARF
		 * unwinder would distrust the module. */
		last = fp;
		lo = fp + 16;
		fp = next;
		if (n == max) {
			*complete = 2; /* deep enough: MT_STACK_TRUNCATED */
			break;
		}
		pcs[n++] = r;
	}
	return n;
}

unsigned callstack_fp(uint64_t *pcs, unsigned max, uintptr_t ra, int *complete, int *miss)
{
#if defined(__x86_64__) && defined(MT_FIXED_RBP)
	uintptr_t fp;
	/* -ffixed-rbp: nothing in the shim has touched %rbp since the program
	 * called the allocator. */
	__asm__ volatile("mov %%rbp, %0" : "=r"(fp));
	return callstack_walk(fp, (uintptr_t)&fp, pcs, max, ra, complete, miss);
#else
	(void)miss;
	*complete = 0;
	if (max == 0)
		return 0;
	pcs[0] = ra;
	return 1;
#endif
}

#if defined(HAVE_UNWIND_H) && defined(MT_STATIC_UNWINDER)
/* libgcc's unwinder is linked into the shim (configure.ac: libgcc_eh.a,
 * its symbols local to libmemtrace.so): nothing to find or load.  It is a
 * copy of its own, so frames that a JIT registered with the program's
 * libgcc_s (__register_frame) end a stack here, as code without unwind
 * tables does. */
#define unwind_backtrace _Unwind_Backtrace
#define unwind_get_ip _Unwind_GetIP
#define unwind_found() 1

void callstack_init(void)
{
}
#elif defined(HAVE_UNWIND_H)
/* libgcc's unwinder, found at start by callstack_init; NULL without it. */
static _Unwind_Reason_Code (*unwind_backtrace)(_Unwind_Trace_Fn, void *);
static _Unwind_Ptr (*unwind_get_ip)(struct _Unwind_Context *);
#define unwind_found() (unwind_backtrace != NULL)

void callstack_init(void)
{
	/* A program that already has libgcc_s (C++, anything that threw or
	 * called backtrace()) shares it (dlopen finds it loaded); else it is
	 * loaded now, in the constructor, its few allocations from the
	 * bootstrap arena: never inside an allocation, where the loader's lock
	 * may be held.  One dlopen, not an RTLD_NOLOAD look first: that look
	 * opens and reads the file as well, and cost every process without
	 * libgcc_s a second search. */
	boot_arena_begin(); /* dlerror's state too: a failed look allocates */
	void *h = dlopen("libgcc_s.so.1", RTLD_NOW | RTLD_LOCAL);
	if (h) {
		unwind_get_ip = (_Unwind_Ptr (*)(struct _Unwind_Context *))dlsym(
			h, "_Unwind_GetIP");
		unwind_backtrace = (_Unwind_Reason_Code (*)(_Unwind_Trace_Fn, void *))dlsym(
			h, "_Unwind_Backtrace");
		if (!unwind_get_ip)
			unwind_backtrace = NULL;
	} /* else frame pointers only */
	boot_arena_end();
}
#else
void callstack_init(void)
{
}
#endif

/* A stack being collected by either unwinder: our own frames come first
 * (at most CALLSTACK_SKIP_MAX), then the allocator's caller (ra), from
 * which on every frame is kept. */
struct callstack_walk {
	uint64_t *pcs;
	unsigned max, n, skipped;
	uintptr_t ra;
	int found, more;
};

static void callstack_walk_init(struct callstack_walk *w, uint64_t *pcs, unsigned max,
				uintptr_t ra)
{
	memset(w, 0, sizeof *w);
	w->pcs = pcs;
	w->max = max > MT_STACKS_FRAMES ? MT_STACKS_FRAMES : max;
	w->ra = ra;
}

/* Takes the frame returning to ip; 0 once the stack is full. */
static int callstack_take(struct callstack_walk *w, uintptr_t ip)
{
	if (!w->found) {
		if (ip != w->ra && ++w->skipped <= CALLSTACK_SKIP_MAX)
			return 1;
		/* ra never came (the unwinder lost a frame on the way): it
		 * is the one frame known for sure, and the rest follows. */
		if (ip != w->ra) {
			MT_ASSERT(w->n == 0 && w->max > 0);
			w->pcs[w->n++] = w->ra;
		}
		w->found = 1;
	}
	if (w->n == w->max) {
		w->more = 1;
		return 0;
	}
	/* callstack.h: never more than max (<= MT_STACKS_FRAMES) frames */
	MT_ASSERT(w->n < w->max && w->max <= MT_STACKS_FRAMES);
	w->pcs[w->n++] = ip;
	return 1;
}

#if defined(HAVE_UNWIND_H)
static _Unwind_Reason_Code callstack_step(struct _Unwind_Context *ctx, void *arg)
{
	uintptr_t ip = (uintptr_t)unwind_get_ip(ctx);
	if (!ip || !callstack_take(arg, ip))
		return _URC_END_OF_STACK;
	return _URC_NO_REASON;
}
#endif

unsigned callstack_libgcc(uint64_t *pcs, unsigned max, uintptr_t ra, int *truncated)
{
	*truncated = 0;
#if defined(HAVE_UNWIND_H)
	if (unwind_found()) {
		struct callstack_walk w;
		callstack_walk_init(&w, pcs, max, ra);
		if (!w.max)
			return 0;
		unwind_backtrace(callstack_step, &w);
		*truncated = w.more;
		return w.n;
	}
#endif
	(void)pcs;
	(void)max;
	(void)ra;
	return 0; /* no unwinder: the frame-pointer walk alone */
}

#if defined(__x86_64__) && defined(HAVE__DL_FIND_OBJECT)
#define CALLSTACK_CFI 1
/* The walk with cfi.h's rules, from the frame of its caller: 1 when it
 * ended (outermost frame, a pc without unwind information, the stack full,
 * or a frame outside the thread's stack), 0 when a frame needs libgcc.
 * Every read lies inside [sp, top of the thread's stack).  %rbp is the
 * program's own all through the shim (-ffixed-rbp), or else recovered by
 * the shim's own rules like any other frame's. */
static __attribute__((noinline)) int callstack_cfi_walk(struct callstack_walk *w, unsigned *fp_at)
{
	uintptr_t pc = (uintptr_t)__builtin_return_address(0);
	uintptr_t sp = (uintptr_t)__builtin_dwarf_cfa(), rbp, hi;
	__asm__ volatile("mov %%rbp, %0" : "=r"(rbp));
	if (!callstack_bounds(sp, &hi))
		return 0;
#if defined(MT_FIXED_RBP)
	{
		/* callstack.h: straight to the allocator's caller's frame */
		uintptr_t from = callstack_tls_from;
		if (from > sp && from <= hi && !(from & 7) &&
		    *(const uintptr_t *)(from - 8) == w->ra) {
			pc = w->ra;
			sp = from;
		}
	}
#endif
	for (;;) {
		struct cfi_rule r;
		uintptr_t cfa;
		if (!pc || !callstack_take(w, pc))
			return 1;
		cfi_rule_at(pc - 1, &r);
		if (r.kind != CFI_STEP) {
			struct cfi_frame f = { pc, sp, rbp };
			if (r.kind == CFI_FOREIGN)
				return 0;
			/* No unwind information: V8's builtins (in node's
			 * text) and generated code (in anonymous executable
			 * mappings), which keep frame pointers; stepped by
			 * %rbp (cfi.h), or the stack ends there, as libgcc's
			 * does.  An outermost frame ends it too. */
			if (r.kind != CFI_NONE || !w->found || !cfi_step_fp(&f, hi))
				return 1;
			if (!*fp_at)
				*fp_at = w->n; /* n >= 1 once found */
			pc = f.pc;
			sp = f.sp;
			rbp = f.rbp;
			continue;
		}
		if (r.cfa_deref) {
			/* a realigned frame: the CFA and the caller's %rbp
			 * were saved below and at %rbp */
			uintptr_t at = rbp - r.cfa_offset;
			if (at < sp || rbp < at || rbp > hi - 8 || ((rbp | at) & 7))
				return 1;
			cfa = *(const uintptr_t *)at;
			if (cfa <= sp || cfa > hi || (cfa & 7))
				return 1;
			rbp = *(const uintptr_t *)rbp;
			pc = *(const uintptr_t *)(cfa - 8);
			sp = cfa;
			continue;
		}
		cfa = (r.cfa_from_rbp ? rbp : sp) + r.cfa_offset;
		if (cfa <= sp || cfa > hi || (cfa & 7) || cfa - sp < r.rbp_slot)
			return 1;
		if (r.rbp_slot)
			rbp = *(const uintptr_t *)(cfa - r.rbp_slot);
		pc = *(const uintptr_t *)(cfa - 8);
		sp = cfa;
	}
}
#endif

unsigned callstack_cfi(uint64_t *pcs, unsigned max, uintptr_t ra, int *truncated, unsigned *fp_at)
{
	*truncated = 0;
	*fp_at = 0;
#if defined(CALLSTACK_CFI)
	struct callstack_walk w;
	callstack_walk_init(&w, pcs, max, ra);
	if (w.max && callstack_cfi_walk(&w, fp_at)) {
		*truncated = w.more;
		return w.n;
	}
#else
	(void)pcs;
	(void)max;
	(void)ra;
#endif
	return 0;
}

/* The CFI walk is checked against libgcc on its first samples and every
 * 256th after; at the first difference it is switched off for the image. */
#define CALLSTACK_CFI_CHECK_FIRST 16u
#define CALLSTACK_CFI_CHECK_EVERY 256u
static unsigned callstack_cfi_walks;
static int callstack_cfi_off;

int callstack_cfi_is_off(void)
{
	return __atomic_load_n(&callstack_cfi_off, __ATOMIC_RELAXED);
}

void callstack_cfi_switch_off(void)
{
	__atomic_store_n(&callstack_cfi_off, 1, __ATOMIC_RELAXED);
}

unsigned callstack_dwarf(uint64_t *pcs, unsigned max, uintptr_t ra, int *truncated)
{
	uint64_t check[MT_STACKS_FRAMES];
	unsigned n, nc, k, fp_at;
	int tc;
	if (!callstack_cfi_is_off()) {
		n = callstack_cfi(pcs, max, ra, truncated, &fp_at);
		if (n == 0)
			return callstack_libgcc(pcs, max, ra, truncated);
		k = __atomic_fetch_add(&callstack_cfi_walks, 1, __ATOMIC_RELAXED);
		if (k >= CALLSTACK_CFI_CHECK_FIRST && k % CALLSTACK_CFI_CHECK_EVERY != 0)
			return n;
		nc = callstack_libgcc(check, max, ra, &tc);
		if (nc == 0)
			return n;
		/* Both walks read the same unwind tables up to the first
		 * frame without them, where libgcc stops and the walk goes on
		 * by frame pointers: that common part must be the same,
		 * frame for frame, and end where it should (libgcc's last
		 * frame that one, not cut short by the stack's end). */
		if (nc == (fp_at ? fp_at : n) && tc == (fp_at ? 0 : *truncated) &&
		    memcmp(check, pcs, nc * sizeof pcs[0]) == 0)
			return n;
		callstack_cfi_switch_off();
		memcpy(pcs, check, nc * sizeof pcs[0]);
		*truncated = tc;
		return nc;
	}
	return callstack_libgcc(pcs, max, ra, truncated);
}

unsigned callstack_capture(uint64_t *pcs, unsigned max, uintptr_t ra, uint32_t *flags, int *miss)
{
	uint64_t fp[MT_STACKS_FRAMES];
	int complete, truncated, m = modules_find(ra);
	unsigned trust = m >= 0 ? modules_trust(m) : MODULES_TRUST_NO, nfp, nbt;

	if (max > MT_STACKS_FRAMES)
		max = MT_STACKS_FRAMES;
	if (m < 0)
		*miss = 1;
	nfp = callstack_fp(fp, max, ra, &complete, miss);
	if (trust == MODULES_TRUST_FP && complete && (modules_tick(m) & 63u) != 0) {
		memcpy(pcs, fp, nfp * sizeof fp[0]);
		*flags = MT_STACK_FP | (complete == 2 ? MT_STACK_TRUNCATED : 0);
		return nfp;
	}
	nbt = callstack_dwarf(pcs, max, ra, &truncated);
	if (m >= 0 && trust != MODULES_TRUST_NO && complete && nfp >= 2 && nbt > 0) {
		/* The walk agrees if its frames are the first of backtrace()'s
		 * (backtrace also sees the C library's start code). */
		int same = nbt >= nfp && memcmp(pcs, fp, nfp * sizeof fp[0]) == 0;
		modules_set_trust(m, same ? MODULES_TRUST_FP : MODULES_TRUST_NO);
		if (same) {
			/* The walk's shape, as this module's other samples will
			 * have it: one call site, one stack. */
			memcpy(pcs, fp, nfp * sizeof fp[0]);
			*flags = MT_STACK_FP | (complete == 2 ? MT_STACK_TRUNCATED : 0);
			return nfp;
		}
	}
	MT_ASSERT(nfp <= max && nbt <= max);
	if (nbt >= nfp && nbt > 0) {
		*flags = MT_STACK_BACKTRACE | (truncated ? MT_STACK_TRUNCATED : 0);
		return nbt;
	}
	memcpy(pcs, fp, nfp * sizeof fp[0]);
	*flags = MT_STACK_FP | (complete == 2 ? MT_STACK_TRUNCATED : 0);
	return nfp;
}
