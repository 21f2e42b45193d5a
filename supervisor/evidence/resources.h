/* resources.h: the run record's JSON (runrecord.h), DIR/resources.json
 * (and --json).
 *
 * The record keeps every key of the original Python measure_command with
 * the same meaning and units, in its order, then memsup's own (memsup(1)
 * lists them; scripts/memsup.py is measure_command carried on).
 * It is written whole every time: pretty JSON (indent 2) through jsonw,
 * floats as Python writes them (pyfloat.h).  The evidence directory
 * (evidence.h) replaces resources.json atomically with it.
 *
 * Return convention: 0 or -errno.
 */
#ifndef MEMSUP_RESOURCES_H
#define MEMSUP_RESOURCES_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "analyze/runrecord.h"

/* The record as pretty JSON on fd, one write per buffer (resources.json,
 * --json). */
int resources_write_json(int fd, const struct sup_record *r);

/* For memsup's sentinel, once memsup was killed mid-run: the record text
 * `in` (what resources_write_json() wrote, len bytes) with its reason
 * "running" made "supervisor_killed", its exit_status the table's, and its
 * error `error` (plain text; quotes, backslashes and control bytes become
 * '?').  A malloc'd copy in *out (*out_len bytes), or -ENOENT when the
 * record is not a running one (memsup got to write its own end), -EINVAL
 * when the text is not a record of this form, -ENOMEM. */
int resources_patch_killed(const char *in, size_t len, const char *error, char **out,
			   size_t *out_len);

#endif /* MEMSUP_RESOURCES_H */
