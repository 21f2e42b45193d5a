/* cfi.h: how to step from a frame to its caller on x86-64, read from the
 * call frame information (.eh_frame) of the object that holds the pc and
 * kept per pc in a small cache: the part of a DWARF unwinder that the
 * sampler's call stacks need for code built without frame pointers
 * (callstack.c walks the stack with these rules).
 *
 * Why not libgcc's unwinder alone: it interprets the frame's CFI program
 * afresh for every frame of every stack: a sampled allocation cost 1.2 us
 * through it here, 0.3 us with the rules below (bench/RESULTS.md, run AM).
 * A program's samples come from a few hundred pcs at most, so the rule for
 * each is worked out once.
 *
 * Only the rules that compiled C and C++ code uses are understood: the
 * canonical frame address (CFA, the caller's stack pointer) is %rsp or
 * %rbp plus a constant, the return address is saved at CFA - 8, and %rbp is
 * unchanged or saved at a constant distance below the CFA.  One DWARF
 * expression is understood too: GCC's for a frame that realigns its stack
 * (a local declared with an alignment above 16, main() included), where
 * the CFA was saved at a constant distance below %rbp and %rbp itself at
 * %rbp.  Anything else (another DWARF expression, a signal frame, an
 * encoding not seen in practice) makes the rule CFI_FOREIGN, and the
 * caller hands that stack to libgcc, which knows them all.
 *
 * A look-up never allocates, takes no lock and makes no system call: the
 * object comes from glibc's _dl_find_object (lock-free, async-signal-safe,
 * glibc >= 2.35), the FDE from the binary search table of its
 * .eh_frame_hdr.  The cache is one page: 512 words, direct-mapped by the
 * low bits of the pc, each word the rest of the pc and the rule, read and
 * written with one atomic access each, so threads and signal handlers
 * share it without a lock and never see half a word.  A pc in no object is
 * not cached (a library may be loaded there later).  The pcs looked up are
 * return addresses of the thread's live frames, whose objects cannot be
 * unloaded while those frames run; a library unloaded and another loaded
 * at its place could leave stale rules, which can only make a stack wrong,
 * never a stack read stray (callstack.c bounds every one by the thread's
 * stack).
 */
#ifndef MEMTRACE_CFI_H
#define MEMTRACE_CFI_H

#include <stdint.h>

enum cfi_kind {
	CFI_NONE = 0,  /* no unwind information for the pc: the stack ends */
	CFI_STEP,      /* the rule below steps to the caller */
	CFI_OUTERMOST, /* the return address is undefined: the outermost frame */
	CFI_FOREIGN,   /* a rule this file does not handle: ask libgcc */
};

struct cfi_rule {
	unsigned kind;
	unsigned cfa_from_rbp; /* CFA = %rbp + cfa_offset, else %rsp + cfa_offset */
	/* A realigned frame: CFA = *(%rbp - cfa_offset), and the caller's %rbp
	 * is saved at %rbp (cfa_from_rbp is 1, rbp_slot 0). */
	unsigned cfa_deref;
	uint32_t cfa_offset;
	uint32_t rbp_slot; /* 0: %rbp unchanged; else saved at CFA - rbp_slot */
};

/* The rule of the frame executing at pc.  For a caller's frame pass its
 * return address minus 1 (the call instruction, which the FDE covers even
 * when the call is the function's last instruction). */
void cfi_rule_at(uintptr_t pc, struct cfi_rule *r);

/* The same, worked out from the object without the cache (unit tests). */
void cfi_rule_uncached(uintptr_t pc, struct cfi_rule *r);

/* The step from a frame whose pc has no unwind information (CFI_NONE):
 * V8's builtins, which lie in node's text without .eh_frame entries, and a
 * JIT's generated code, in anonymous executable mappings (modules.h).  Such
 * code keeps frame pointers (V8's does: its frames are chained through
 * %rbp), so the caller's %rbp is saved at %rbp, the return address at
 * %rbp + 8 and the caller's stack pointer is %rbp + 16.  Taken only when
 * f->pc is code (modules_code), f->rbp lies in [f->sp, hi - 16] and is
 * aligned (hi: the top of the thread's stack), and the return address read
 * there is code too; nothing else is read.  1 and *f the caller's frame,
 * or 0 and nothing changed (the stack ends there).  A function without
 * unwind information that keeps no frame pointer hides its caller this
 * way (the step lands on its caller's caller), as it would from the
 * frame-pointer walk. */
struct cfi_frame {
	uintptr_t pc, sp, rbp; /* a return address, the stack pointer after
				  the return, the %rbp the frame has then */
};
int cfi_step_fp(struct cfi_frame *f, uintptr_t hi);

#endif /* MEMTRACE_CFI_H */
