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

/* The same, at least `width` digits: zeros in front ("007" for 7 and 3),
 * the digits after a decimal point.  buf holds the larger of width and
 * DECIMAL_U64_BYTES - 1, and the NUL; returns how many digits. */
size_t decimal_format_u64_width(char *buf, uint64_t v, size_t width);

#endif /* MEMTRACE_DECIMAL_H */
