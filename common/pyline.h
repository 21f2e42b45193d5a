/* pyline.h: the line of a Python instruction, from the copy of its code
 * object's line table a stacks file keeps (common/stacks.h, "Python
 * frames").  The one reader of that table: memsup's naming of call sites
 * (supervisor/analyze/callsites.c) and the shim's standalone summary
 * (preload/report/topsites.c) both call it.
 *
 * The table is laid out as the interpreter version that wrote it lays it
 * out: 3.11's location table, kept by 3.12 and 3.13 (PEP 657: one entry
 * per run of code units, its line as a delta from the previous entry's).
 * Pure: no allocation, no stdio, no state; async-signal-safe, so the
 * shim's exit path may call it.
 */
#ifndef MEMTRACE_PYLINE_H
#define MEMTRACE_PYLINE_H

#include <stddef.h>
#include <stdint.h>

#include "stacks.h"

/* The line of the instruction `instr` (code units from the code's first)
 * by 3.11's location table t[0..len), the code's first line being
 * firstlineno.  0 with *line set; -1 when the table does not say (an
 * entry without a line, or the instruction lies past the copy). */
int pyline_311(const uint8_t *t, size_t len, uint32_t firstlineno, uint32_t instr,
	       uint32_t *line);

/* The line of instruction `instr` of code entry c of an image whose
 * interpreter is py_version (Py_Version); -1 for a version whose table
 * this reader does not decode, or a line table longer than its slot. */
int pyline_of(uint64_t py_version, const struct mt_stacks_code *c, uint32_t instr,
	      uint32_t *line);

#endif /* MEMTRACE_PYLINE_H */
