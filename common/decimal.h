/* decimal.h: the decimal text of an unsigned number, the one digit writer
 * of the code both halves compile (the shim's string builder, image file
 * names, byte figures).  Pure and async-signal-safe. */
#ifndef MEMTRACE_DECIMAL_H
#define MEMTRACE_DECIMAL_H

#include <stddef.h>
#include <stdint.h>

/* The longest text, UINT64_MAX's 20 digits, and its NUL. */
#define DECIMAL_U64_BYTES 21u

/* The digits of v and a NUL into buf (DECIMAL_U64_BYTES at least);
 * returns how many digits. */
size_t decimal_format_u64(char *buf, uint64_t v);

/* The digits of v, at least `width` of them (zeros in front: the
 * decimals after a point), written backwards so that the last ends just
 * before `end`; returns where the first is.  No NUL.  For text built from
 * the right (a number with a fixed count of decimals): no copy. */
char *decimal_u64_back(char *end, uint64_t v, size_t width);

#endif /* MEMTRACE_DECIMAL_H */
