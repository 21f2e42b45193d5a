/* callstack.h: the call stack of a sampled allocation.
 *
 * Two ways, chosen per sample:
 *  - The frame-pointer walk (x86-64): the shim is built with -ffixed-rbp,
 *    so %rbp inside it is still the frame pointer of the code that called
 *    the allocator.  The walk follows saved frame pointers upwards, and
 *    reads a frame only after checking that it lies inside the current
 *    thread's stack (above the current stack pointer, below the top of the
 *    stack: __libc_stack_end for the main thread, the mapping in
 *    /proc/self/maps for the others, cached per thread), is aligned, and is
 *    above the previous one; a return address must lie in a module
 *    (modules.h) or in generated code (modules_jit_find: the walk goes
 *    on through V8's frames).  The first frame that fails ends the walk:
 *    it never dereferences anything else, so a wild %rbp cannot crash it.
 *    Cost: a few dozen loads.
 *  - The unwind tables (.eh_frame), right for code built without frame
 *    pointers (most distribution packages).  First the shim's own walk with
 *    the rules of cfi.h, worked out once per pc and cached: a few loads
 *    a frame once the program's hot pcs are known.  A frame it
 *    cannot step (a signal frame, a DWARF expression) hands the whole
 *    stack to libgcc's unwinder (_Unwind_Backtrace, what glibc's backtrace()
 *    calls), a few microseconds a stack.  Where the compiler
 *    has libgcc_eh.a (configure: MT_STATIC_UNWINDER) a copy of it is linked
 *    into libmemtrace.so with its symbols kept local, so that nothing is
 *    loaded in each traced image (loading libgcc_s.so.1 cost an image about
 *    0.2 ms, half of it its constructor's cpuid probe).  Else the shim,
 *    which links only libc and libdl, has callstack_init, from the
 *    constructor when sampling is on, dlopen libgcc_s.so.1 (its allocations
 *    from the bootstrap arena) before any hook samples: glibc's backtrace()
 *    would dlopen it at its first call instead, and that first call would
 *    allocate (in the program's figures) and take the loader's lock inside
 *    an allocation.  With glibc >= 2.35 libgcc finds a pc's unwind tables
 *    through _dl_find_object, which takes no lock and does not allocate.
 * Frames without unwind information, V8's builtins (in node's text, with
 * no .eh_frame entries) and generated code (a JIT's, in anonymous
 * executable mappings: modules.h), are stepped by their frame pointers,
 * which V8 keeps, with the frame-pointer walk's checks (cfi.h,
 * cfi_step_fp): that is how a stack of an allocation made from JavaScript
 * reaches through the JavaScript frames to the C++ frames that called
 * into them.  Before, both walks ended at the first such frame.  The
 * frames of generated code are raw addresses, in no module, which memsup
 * names from the runtime's /tmp/perf-PID.map.  libgcc stops at that same
 * frame, so the check of the shim's walk against it compares the frames
 * up to it.
 * Frame pointers are trusted per module, the module of the allocator's
 * caller: the first samples from a module take both stacks and compare;
 * the module is trusted if the walk's frames are a prefix of the DWARF
 * unwinder's (which also sees the C library's start code),
 * and distrusted for good at the first difference (code without frame
 * pointers, or a function in between that keeps none and so hides its
 * caller).  A trusted module is checked again every 64th sample.  A walk
 * that stops early (not at the outermost frame) is never used alone.
 */
#ifndef MEMTRACE_CALLSTACK_H
#define MEMTRACE_CALLSTACK_H

#include <stdint.h>

/* Fills pcs (at most max, max <= MT_STACKS_FRAMES) with return addresses,
 * innermost first; pcs[0] is `ra`, the allocator hook's return address.
 * Returns the count; *flags gets MT_STACK_FP or MT_STACK_BACKTRACE, and
 * MT_STACK_TRUNCATED when there were more frames; *miss is set when a
 * frame pointed into no known module (time to refresh the table). */
unsigned callstack_capture(uint64_t *pcs, unsigned max, uintptr_t ra, uint32_t *flags, int *miss);

/* Where the allocator's caller's frame begins, when a hook knows it: the
 * stack pointer just after the call returns to `ra` (the call frame
 * address of a hook that the exported function reached by jumps alone,
 * whose return address is the program's).  Set by the hooks around a
 * sample, 0 otherwise.  The cached-rule walk then starts at that frame
 * instead of unwinding the shim's own half dozen first (about 700
 * instructions a sample), once it has checked that the word below it is
 * `ra`; with -ffixed-rbp only, so that %rbp is the program's there too.
 * A signal handler that samples in between finds its own ra missing
 * there unless it allocates from the very call site it interrupted. */
extern __attribute__((visibility("hidden"))) __thread uintptr_t callstack_tls_from;

/* Finds libgcc's unwinder when it is not linked in (dlopen of
 * libgcc_s.so.1, shared if the program has it already); without one,
 * stacks come from frame pointers alone.  Constructor only (sites_start,
 * when sampling is on). */
void callstack_init(void);

/* The pieces, for the unit tests.  callstack_fp's *complete: 0 the walk
 * stopped early, 1 it reached the outermost frame, 2 it filled pcs. */
unsigned callstack_fp(uint64_t *pcs, unsigned max, uintptr_t ra, int *complete, int *miss);
/* The walk itself, from frame pointer fp, for a thread whose stack pointer
 * is about sp (callstack_fp passes %rbp and its own frame). */
unsigned callstack_walk(uintptr_t fp, uintptr_t sp, uint64_t *pcs, unsigned max, uintptr_t ra,
			int *complete, int *miss);
/* The stack from unwind tables: callstack_cfi if it can, checked against
 * libgcc on its first samples and every 256th after (at the first
 * difference libgcc alone from then on), else callstack_libgcc.  Where the
 * walk stepped a frame without unwind information, libgcc's stack ends at
 * that frame, and the check is of the frames up to it. */
unsigned callstack_dwarf(uint64_t *pcs, unsigned max, uintptr_t ra, int *truncated);
/* Whether callstack_dwarf has switched the cached-rule walk off for this
 * image (it disagreed with libgcc once), and switching it off. */
int callstack_cfi_is_off(void);
void callstack_cfi_switch_off(void);
/* The walk with cfi.h's cached rules, frames without unwind information
 * stepped by their frame pointers; 0 when a frame needs libgcc (or there
 * is no cfi.h here).  *fp_at: the first frame it stepped so, pcs[*fp_at -
 * 1] (libgcc's stack ends there), or 0 for none. */
unsigned callstack_cfi(uint64_t *pcs, unsigned max, uintptr_t ra, int *truncated,
		       unsigned *fp_at);
/* libgcc's _Unwind_Backtrace; 0 without it. */
unsigned callstack_libgcc(uint64_t *pcs, unsigned max, uintptr_t ra, int *truncated);

#endif /* MEMTRACE_CALLSTACK_H */
