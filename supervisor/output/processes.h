/* processes.h: the per-image outputs of a merged run -- processes.json in
 * the evidence directory, and the per-process table of the end-of-run
 * summary.  Both only read the merged run (merge.h).
 *
 * Return convention: 0 or -errno.
 */
#ifndef MEMSUP_PROCESSES_H
#define MEMSUP_PROCESSES_H

#include <stdio.h>

#include "analyze/merge.h"

/* DIR/processes.json: a JSON array, one object per image (see memsup(1)),
 * written to a temporary file and renamed over, like resources.json. */
int processes_write(int dirfd, const struct merged_run *m);

/* The table: the `max_rows` images with the largest peak (polled RSS or
 * VmHWM), one line each: pid, polled peak, VmHWM, heap peak, argv. */
void processes_print_table(FILE *out, const struct merged_run *m, size_t max_rows);

#endif /* MEMSUP_PROCESSES_H */
