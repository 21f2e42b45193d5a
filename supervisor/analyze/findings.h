/* findings.h: the blind spots of one run, explained.
 *
 * findings_compute() reads a merged run (merge.h) and lists what a single
 * number hides: what getrusage/time -v would have said, processes no poll
 * saw, spikes between polls, memory the heap does not explain, pages shared
 * between processes, untraced processes, escapees, budget overshoot, corrupt
 * records.  A finding is listed only when its figures show it (thresholds
 * are stated beside each rule in findings.c); a clean run has none.
 *
 * Pure: no I/O but the writers' output, no allocation.  The strings a
 * finding points at belong to the merged run and must outlive the finding.
 */
#ifndef MEMSUP_FINDINGS_H
#define MEMSUP_FINDINGS_H

#include <stddef.h>
#include <stdio.h>

#include "analyze/merge.h"
#include "jsonw.h"

#define FINDINGS_MAX 32u         /* kinds x a few; more are dropped, counted */
#define FINDING_MAX_FIGURES 12u
#define FINDING_MAX_PROCS 16u    /* processes named per finding */
#define FINDING_SENTENCE_BYTES 1024u

struct finding_figure {
	const char *key;         /* JSON key, e.g. "tree_peak_mb" */
	double value;
	unsigned decimals;       /* 0: written as an integer */
};

struct finding {
	const char *kind;        /* "rusage_children", "transient_peak", ... */
	char sentence[FINDING_SENTENCE_BYTES]; /* one plain sentence */
	struct finding_figure figures[FINDING_MAX_FIGURES];
	size_t n_figures;
	const struct image_view *procs[FINDING_MAX_PROCS]; /* named processes */
	size_t n_procs;
	size_t procs_total;      /* how many matched (n_procs may be fewer) */
	const char *why;         /* untraced in a --no-trace run: "not_requested";
				    in a run that found no shim: "no_shim"
				    (written as "untraced_why"); else NULL */
};

/* Fills out[0..cap) and returns how many findings there are (may exceed
 * cap: the rest were dropped). */
size_t findings_compute(const struct merged_run *m, struct finding *out, size_t cap);

/* The value of resources.json's "blind_spots": a JSON array of objects
 * {"kind", "sentence", <figures...>, "processes": [{pid, gen, argv, ...}]}. */
void findings_write_json(struct jsonw *w, const struct finding *f, size_t n);

/* For the human summary: "memsup: <kind>: <sentence>" lines. */
void findings_print(FILE *out, const struct finding *f, size_t n);

/* The merged view's figures into the record: processes_traced and
 * processes_sampled, peak_heap_mb and peak_mapped_mb (a traced run with a
 * sample), peak_pss_mb (smaps read at the peak), and blind_spots: the
 * findings, computed into buf[0..cap) (kept by pointer: buf must outlive
 * the record's last write; more than cap are dropped). */
void findings_apply(struct sup_record *r, const struct merged_run *m, struct finding *buf,
		    size_t cap);

#endif /* MEMSUP_FINDINGS_H */
