/* phasesout.h: the markers and the phases they open (analyze/phases.h), as
 * the record's "markers", "markers_dropped" and "phases" and as the
 * end-of-run summary's table.  Writes only.
 */
#ifndef MEMSUP_PHASESOUT_H
#define MEMSUP_PHASESOUT_H

#include <stdio.h>

#include "jsonw.h"

struct phase_log;

/* The "markers", "markers_dropped" and "phases" members of the record;
 * `end_s` closes the last phase when `ended`, else it is null (still
 * running).  pl may be NULL: empty. */
void phasesout_json(struct jsonw *w, const struct phase_log *pl, double end_s, int ended);

/* The phases as a short table for the end-of-run summary (nothing without
 * markers). */
void phasesout_print(FILE *f, const struct phase_log *pl, double end_s);

#endif /* MEMSUP_PHASESOUT_H */
