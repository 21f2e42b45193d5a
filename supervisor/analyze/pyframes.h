/* pyframes.h: the Python frames of sampled stacks, after the run
 * (common/stacks.h, "Python frames"; the shim's half is preload/sampling/python.h).
 *
 * The line of an instruction is common/pyline.h's (the shim's summary
 * reads it too).  What is here, pure:
 *  - the interleaving: the shim stores a stack's Python frames after its
 *    native ones; each native frame in the interpreter's evaluation loop
 *    (_PyEval_EvalFrameDefault) ran the Python frames from the innermost
 *    one not yet placed up to and including the next frame entered from C
 *    (is_entry), and is replaced by them, so that the stack reads as the
 *    program ran: native frames below, the Python frames where the
 *    interpreter ran them, native frames above (what memray's native mode
 *    shows).  Python frames left over (their evaluation frames were cut
 *    off the stack) go at its outer end; an evaluation frame with no
 *    Python frame left stays as it is.  The marker of a deep chain's
 *    elided frames (symbols_pyelided) stands in its run: when M > 0 of
 *    the frames it stands for were entered from C, the run ends at it and
 *    the next M - 1 evaluation frames (which ran only elided frames) stay
 *    as they are, so that the outermost frames still meet their own.
 */
#ifndef MEMSUP_PYFRAMES_H
#define MEMSUP_PYFRAMES_H

#include <stddef.h>
#include <stdint.h>

#include "analyze/symbols.h"
#include "stacks.h"

/* The native function whose frames are replaced by Python frames. */
#define PYFRAMES_EVAL_FUNCTION MT_PY_EVAL_FUNCTION

/* In a frame list before pyframes_interleave: a Python frame entered
 * from C (its symbols index | this bit). */
#define PYFRAMES_ENTRY_BIT UINT32_C(0x80000000)

/* list[0..n): symbols frame indices, native frames first (innermost
 * first) then the Python frames (PYFRAMES_ENTRY_BIT on those entered from
 * C), rewritten in place as described above, the bits cleared.  Returns
 * the new count (<= n). */
uint32_t pyframes_interleave(uint32_t *list, uint32_t n, const struct symbols *s);

/* "3.11.7" (with "a1", "b2", "rc1" for a pre-release) of a Py_Version
 * into buf. */
void pyframes_version_text(uint64_t py_version, char *buf, size_t cap);

#endif /* MEMSUP_PYFRAMES_H */
