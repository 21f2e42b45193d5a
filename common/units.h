/* units.h: the one unit rule for byte figures that people read, in both
 * halves, the man pages and the README: decimal SI units, 1 kB = 1,000
 * bytes and 1 MB = 1,000,000 bytes, as memsup's record, its Python API and
 * measure_command (the Python function whose record memsup's resources.json
 * stays compatible with) have them.  Files for programs carry bytes, KiB
 * where the kernel prints KiB (*_kb fields), or MB where a key says so.
 * Pure and async-signal-safe: the shim formats with it.
 */
#ifndef MEMTRACE_UNITS_H
#define MEMTRACE_UNITS_H

#include <stddef.h>
#include <stdint.h>

#define UNITS_KB 1000.0
#define UNITS_MB 1e6     /* bytes in an MB: every "_mb" figure is bytes / UNITS_MB */
#define UNITS_KIB 1024.0 /* the kernel's kB (VmRSS, ru_maxrss): bytes = kB * 1024 */

/* bytes for people: "12345 B" below 10 kB, else one decimal (truncated, so
 * never more than is there) in the largest of kB, MB, GB, TB that keeps
 * the whole part at or above 1: "9.9 kB", "60.0 MB", "1.4 GB".  Writes at
 * most cap - 1 bytes and a NUL; returns the length written.  A buffer of
 * UNITS_BYTES_MAX holds any value. */
#define UNITS_BYTES_MAX 32u
size_t units_format_bytes(char *buf, size_t cap, uint64_t bytes);

#endif /* MEMTRACE_UNITS_H */
