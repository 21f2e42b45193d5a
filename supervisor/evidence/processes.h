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
#include "evidence/jsonr.h"

/* DIR/processes.json: a JSON array, one object per image (see memsup(1)),
 * written to a temporary file and renamed over, like resources.json.  In
 * the lean form: a key whose value is its default is left out (processes.c
 * lists the defaults), so an image with nothing to tell is a short line. */
int processes_write(int dirfd, const struct merged_run *m);

enum processes_form {
	PROCESSES_LEAN, /* what memsup writes */
	PROCESSES_ALL,  /* every key, as memsup wrote before the lean form */
};
/* processes_write in either form (the tests write a run both ways). */
int processes_write_form(int dirfd, const struct merged_run *m, enum processes_form form);

/* The one reader of processes.json.  processes_fill puts back into an
 * image's object (jsonr) every key the lean form left out, as its default,
 * so that an image reads the same whichever form wrote it, and a file of
 * either form (or of a memsup before the lean one) reads as the whole
 * form.  0, or -ENOMEM.  processes_read_each is jsonr_read_file_each over
 * DIR/processes.json with every image filled before fn gets it. */
int processes_fill(struct jsonr_value *image);
int processes_read_each(int dirfd, size_t max_bytes, jsonr_item_fn *fn, void *ctx, char *err,
			size_t errlen);

/* The table: the `max_rows` images with the largest peak (polled RSS or
 * VmHWM), one line each: pid, polled peak, VmHWM, heap peak, argv. */
void processes_print_table(FILE *out, const struct merged_run *m, size_t max_rows);

#endif /* MEMSUP_PROCESSES_H */
