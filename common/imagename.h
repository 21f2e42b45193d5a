/* imagename.h: the one name rule of the per-image files in a records
 * directory, for every reader and writer of them (the shim, memsup and,
 * by the same rule written in Python, scripts/memsup.py).
 *
 * An image's files are named "<pid>.<gen><suffix>": <pid> in 1..INT32_MAX
 * and <gen> in 0..UINT32_MAX, both plain decimal with no sign and no
 * leading zero ("0" alone is the only number that starts with 0), the
 * suffix MT_RECORD_SUFFIX or MT_STACKS_SUFFIX.  One image, one name: a
 * reader that took "012.0.mtr" as image 12.0 would see a second record of
 * an image the shim wrote once.  Pure and async-signal-safe: no allocation,
 * no locale, no errno.
 */
#ifndef MEMTRACE_IMAGENAME_H
#define MEMTRACE_IMAGENAME_H

#include <stddef.h>
#include <stdint.h>

/* The longest name: 10 digits, '.', 10 digits, a suffix of up to 7 bytes,
 * NUL. */
#define IMAGENAME_MAX_BYTES 32u

/* Writes "<pid>.<gen><suffix>" and a NUL into buf; its length, or -1 when
 * pid is out of range or the name does not fit cap (buf then holds ""). */
int imagename_format(char *buf, size_t cap, int32_t pid, uint32_t gen, const char *suffix);
/* "<dir>/<pid>.<gen><suffix>" into buf; its length, or -1 as above. */
int imagename_path(char *buf, size_t cap, const char *dir, int32_t pid, uint32_t gen,
		   const char *suffix);
/* "<pid>.<gen><suffix>" -> pid, gen; 0, or -1 for any other name (out
 * parameters then untouched). */
int imagename_parse(const char *name, const char *suffix, int32_t *pid, uint32_t *gen);

#endif /* MEMTRACE_IMAGENAME_H */
