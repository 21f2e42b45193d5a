/* topsites.h: the standalone summary's call sites: the ten stacks that held
 * the most sampled heap at the image's peak, each named by its innermost
 * frames, written after the "memtrace:" summary lines on stderr.
 *
 * Runs at the end of the image, never on an allocation: it reads the ELF
 * files of the modules involved (elfsym.h, pread through raw system calls,
 * stack buffers), which is the slow part (a few milliseconds for a large
 * .symtab).  Async-signal-safe, never allocates, takes no lock; its work
 * space is static (the exit path runs once per image).  The 64 largest
 * stacks of each table are named (by the table's own module list), those
 * that read the same (the same functions, calls from several places in one
 * function, or the same code in several images) are merged, and the ten
 * largest lines are written.
 */
#ifndef MEMTRACE_TOPSITES_H
#define MEMTRACE_TOPSITES_H

#include <stdint.h>

#include "record.h"

#define TOPSITES_SITES 10u  /* sites listed */
#define TOPSITES_FRAMES 4u  /* frames named per site, innermost first */

/* Writes the lines for the image whose record is r (this image) to the
 * program's original stderr (errfd.h; nothing when no sample was taken). */
void topsites_write(const struct mt_record *r);

/* The same for a standalone tree's table (summary.h): the sites of the
 * images listed, each at its own heap peak (as the table's peaks are),
 * added up and merged by name, from their stacks files in `dir`. */
struct topsites_image {
	int32_t pid;
	uint32_t gen;
	uint64_t heap_peak; /* its record's */
};
void topsites_write_tree(const char *dir, const struct topsites_image *images, unsigned n);

#endif /* MEMTRACE_TOPSITES_H */
