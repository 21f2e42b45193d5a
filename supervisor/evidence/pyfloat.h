/* pyfloat.h: the one number format of memsup's evidence files.
 *
 * A double is written as Python's repr(float) writes it ("0.01", "1e-05",
 * "100.0"): the shortest text that reads back as the same double.  So
 * rss.jsonl, timeline.jsonl and resources.json carry, for the same values,
 * the bytes the original Python measure_command() wrote, and Python reads
 * back exactly the double memsup had.  No allocation, no locale (the C
 * locale's strtod/snprintf are assumed, as everywhere in memsup); the last
 * value's text is kept (not thread-safe: memsup has one thread).
 */
#ifndef MEMSUP_PYFLOAT_H
#define MEMSUP_PYFLOAT_H

#include <stddef.h>

#define PYFLOAT_BYTES 32u          /* enough for any double, NUL included */

/* v into buf (cap >= PYFLOAT_BYTES, else buf gets "" and 0 is returned);
 * "null" for NaN and infinities, which JSON cannot say.  Returns the
 * length. */
size_t pyfloat_format(double v, char *buf, size_t cap);

#endif /* MEMSUP_PYFLOAT_H */
