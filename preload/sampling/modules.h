/* modules.h: the executable mappings of files in this image, for the
 * sampler's call stacks: the module table of stacks.h (written here, read
 * by memsup to turn a pc into module + offset) and a private sorted index
 * of it (for the frame-pointer walk, which takes a return address only if
 * it lies in a module).
 *
 * The table is filled from /proc/self/maps (selfmaps.h) when the stacks
 * table is made and again when a new stack holds a pc in no module (a
 * library dlopen'ed since, or new JIT code), with raw system calls only: no loader lock, so
 * no deadlock against a dlopen in another thread.  Build-ids are read from
 * the mapped ELF headers with process_vm_readv on ourselves, which fails
 * with EFAULT instead of faulting if a library is unmapped meanwhile.
 *
 * Entries are appended and never change (stacks.h's rule); a library
 * unloaded and another mapped at its place gets a new entry, and the index
 * keeps the newer.  The index is double-buffered: a refresh builds the
 * unused copy and then publishes it, so a lookup never waits; a lookup that
 * races two refreshes may get a wrong answer, never a crash (nothing here
 * dereferences a pc).  Callers of modules_refresh serialise it (sites.c
 * holds its lock).
 */
#ifndef MEMTRACE_MODULES_H
#define MEMTRACE_MODULES_H

#include <stdint.h>

#include "stacks.h"

/* Makes room for `n` module entries in the table (the file grows in
 * pieces); returns 1 if there is room. */
typedef int (*modules_reserve_fn)(uint32_t n);

/* Adds every executable file mapping not yet in the table of `h` (entries
 * after `h`, MT_STACKS_MODULES_OFFSET) and rebuilds the index.  Returns
 * the number added, or -errno. */
int modules_refresh(struct mt_stacks_header *h, modules_reserve_fn reserve);

/* The table entry whose range holds pc (the newest), or -1. */
int modules_find(uintptr_t pc);

/* Anonymous executable mappings (a JIT's generated code: V8's, a JVM's)
 * are in no module; the refresh keeps their ranges apart, at most
 * MODULES_JIT_SLOTS of them (adjacent ones merged), for the call stacks'
 * frame-pointer steps (callstack.h), which take a return address there as
 * a frame of generated code: a raw address, which memsup names from the
 * runtime's /tmp/perf-PID.map.  1 if pc lies in one, else 0. */
#define MODULES_JIT_SLOTS 64u
int modules_jit_find(uintptr_t pc);
/* pc lies in a module or in generated code: a return address a walk may
 * take. */
int modules_code(uintptr_t pc);

/* What the frame-pointer walk may trust for stacks that start in module i
 * (callstack.c learns it by comparing with the DWARF unwinder). */
enum { MODULES_TRUST_UNKNOWN = 0, MODULES_TRUST_FP = 1, MODULES_TRUST_NO = 2 };
unsigned modules_trust(int i);
void modules_set_trust(int i, unsigned trust);
/* A per-module counter, for "check again every Nth time". */
unsigned modules_tick(int i);

#endif /* MEMTRACE_MODULES_H */
