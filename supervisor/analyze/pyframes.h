/* pyframes.h: the Python frames of sampled stacks, after the run
 * (common/stacks.h, "Python frames"; the shim's half is preload/sampling/python.h).
 *
 * Two jobs, both pure:
 *  - the line of an instruction, from the copy of its code object's line
 *    table the shim kept, decoded as the interpreter version that wrote it
 *    lays the table out (3.11's location table, kept by 3.12 and 3.13,
 *    PEP 657: one entry per run of code units, its line as a delta from
 *    the previous entry's);
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
#define PYFRAMES_EVAL_FUNCTION "_PyEval_EvalFrameDefault"

/* In a frame list before pyframes_interleave: a Python frame entered
 * from C (its symbols index | this bit). */
#define PYFRAMES_ENTRY_BIT UINT32_C(0x80000000)

/* The line of the instruction `instr` (code units from the code's first)
 * by 3.11's location table t[0..len), the code's first line being
 * firstlineno.  0 with *line set; -1 when the table does not say (an
 * entry without a line, or the instruction lies past the copy). */
int pyframes_line_311(const uint8_t *t, size_t len, uint32_t firstlineno, uint32_t instr,
		      uint32_t *line);

/* The line of instruction `instr` of code entry c of an image whose
 * interpreter is py_version (Py_Version); -1 for a version whose table
 * this reader does not decode. */
int pyframes_line(uint64_t py_version, const struct mt_stacks_code *c, uint32_t instr,
		  uint32_t *line);

/* list[0..n): symbols frame indices, native frames first (innermost
 * first) then the Python frames (PYFRAMES_ENTRY_BIT on those entered from
 * C), rewritten in place as described above, the bits cleared.  Returns
 * the new count (<= n). */
uint32_t pyframes_interleave(uint32_t *list, uint32_t n, const struct symbols *s);

/* "3.11.7" (with "a1", "b2", "rc1" for a pre-release) of a Py_Version
 * into buf. */
void pyframes_version_text(uint64_t py_version, char *buf, size_t cap);

#endif /* MEMSUP_PYFRAMES_H */
