/* number.h: the one reader of numbers given on a command line (memsup's
 * options, memsup plot's and memsup report's).
 *
 * Strict on both sides: plain decimal digits, an optional fraction and, for
 * real numbers, an optional exponent ("0.5", "10", "2e3"); no sign, no
 * space before or after, no hexadecimal, no "inf" or "nan".  Every option
 * has a range, checked here, so that a value the clock or the machine
 * cannot mean (a wall budget past the nanosecond clock, a poll period of a
 * nanosecond) is refused before anything is created instead of silently
 * turning into something else.
 *
 * number_real/number_count return 0, -EINVAL (not a number of that form)
 * or -ERANGE (a number, outside [lo, hi]; lo excluded when lo_open).
 * number_message() words either for an error line.
 */
#ifndef MEMSUP_NUMBER_H
#define MEMSUP_NUMBER_H

#include <stddef.h>
#include <stdint.h>

int number_real(const char *s, double lo, int lo_open, double hi, double *out);
int number_count(const char *s, uint64_t lo, uint64_t hi, uint64_t *out);
/* A size in bytes: a count, then nothing or one of K, M, G, T (powers of
 * 1024, as sort -S and head -c read them), which may be spelt KiB, MiB,
 * GiB, TiB; at most hi bytes.  0, -EINVAL or -ERANGE. */
int number_size(const char *s, uint64_t hi, uint64_t *out);

/* "--NAME: 'S' is not a number" / "--NAME: 'S' is out of range (RANGE)"
 * into buf, where RANGE is the caller's words ("more than 0, at most
 * 100000000 seconds").  Returns buf. */
char *number_message(char *buf, size_t cap, const char *name, const char *s, int rc,
		     const char *range);

#endif /* MEMSUP_NUMBER_H */
