/* names.h: the one name of each value of record.h's enums, as every
 * output of both halves writes it (the shim's JSON report, memsup's
 * processes.json and report) and as the Python API and the man pages
 * spell it.  The names are part of the contract: change one and every
 * reader of the evidence changes with it.
 */
#ifndef MEMTRACE_NAMES_H
#define MEMTRACE_NAMES_H

#include <stdint.h>

#include "record.h"

/* enum mt_call: "malloc", ..., "mremap"; NULL out of range. */
const char *names_call(uint32_t call);
/* enum mt_relation: "root", "fork", ..., "unknown"; NULL out of range. */
const char *names_relation(uint32_t relation);
/* enum mt_state: "running", "exited", "_exit", "execed", "signaled"; NULL
 * out of range. */
const char *names_state(uint32_t state);

#endif /* MEMTRACE_NAMES_H */
