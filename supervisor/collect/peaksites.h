/* peaksites.h: each traced image's sampled call sites at the tree's peaks,
 * read from its stacks file (common/stacks.h) while the run goes on.
 *
 Three moments count: the sample where the tree's traced heap (the sum
 * of heap_current over the members with a record, as pview.h sums it) was
 * largest, the sample where the tree's RSS was (the run's peak_tree_rss),
 * and the sample where the traced heap plus the traced mappings (heap,
 * anonymous and file mappings the programs made: the sum of each record's
 * total) was largest, the memory the answer counts as far as the shim sees
 * it and the default moment of the tree's call sites.  At a sample that is
 * a new peak of any, every image counted in that sum gets its live sampled
 * set copied as "at that peak"; images not counted then are not part of
 * it.  An image's file is read
 * again only when its record's stacks_changes (record.h, a load from the
 * mapped record) moved since the last read, so an image that took no
 * sample since costs no system call; one that never sampled (0) has no
 * stacks file: an empty set.
 *
 * The shim's sets change only at sampled events, and memsup reads the
 * record's heap and then the stacks file a moment apart, so the set "at
 * the peak" is the one of that moment, as the heap figure is.
 *
 * With each image's set it keeps the heap the sample counted for it, and
 * with each peak the times of the samples just before and just after it:
 * what the poll could not see into.  The merged view (merge.h) takes an
 * image that peaked within that window at its exact peak instead.
 *
 * Not thread-safe.  Return convention: 0 or -errno.
 */
#ifndef MEMSUP_PEAKSITES_H
#define MEMSUP_PEAKSITES_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "collect/stackfile.h"

/* TOTAL: heap + mappings (above), the default moment of the tree's sites. */
enum { PEAKSITES_HEAP, PEAKSITES_RSS, PEAKSITES_TOTAL, PEAKSITES_KINDS };

struct peaksites_image {
	pid_t pid;
	uint32_t gen;
	struct stackfile_set cur;                    /* the last read */
	struct stackfile_set at[PEAKSITES_KINDS];    /* at each kind of peak */
	unsigned long serial[PEAKSITES_KINDS];       /* the peak it was copied at */
	uint64_t heap[PEAKSITES_KINDS];              /* its heap counted then
							(TOTAL: heap + mappings) */
	uint64_t changes;                            /* stacks_changes at the read */
	int error;                                   /* last read's, 0 if fine */
};

struct peaksites;
struct live;
struct pview_peak_member;

int peaksites_open(struct peaksites **out, const char *records_dir);
void peaksites_close(struct peaksites *p);

/* One sample of the tree (run.c), `at_s` into the run, with the traced
 * heap, the traced mappings (anonymous and file) and the RSS it summed: `m`
 * are the members as pview attributed them (pview_current()), so the
 * images here are the very ones whose heap is in `heap` and whose mappings
 * are in `mapped`.  Peaks are kept here (a first sample is a peak of
 * each). */
void peaksites_sample(struct peaksites *p, const struct live *l,
		      const struct pview_peak_member *m, size_t n, double at_s, uint64_t heap,
		      uint64_t mapped, uint64_t rss);

/* After the run: the images that took part in a peak, and that peak. */
size_t peaksites_count(const struct peaksites *p);
const struct peaksites_image *peaksites_get(const struct peaksites *p, size_t i);
/* 1 if image `im` was counted at the last peak of `kind`. */
int peaksites_at(const struct peaksites *p, const struct peaksites_image *im, int kind);
/* The peak of `kind`: its time into the run (< 0: none), the traced heap
 * and the RSS at that sample. */
double peaksites_when(const struct peaksites *p, int kind, uint64_t *heap, uint64_t *rss);
/* The traced heap plus mappings at the peak of `kind` (0: none). */
uint64_t peaksites_total(const struct peaksites *p, int kind);
/* The samples around the peak of `kind`, in seconds into the run: the one
 * before it (< 0: the peak was the first) and the one after it (< 0: it
 * was the last).  Both < 0 when there is no peak. */
void peaksites_window(const struct peaksites *p, int kind, double *before_s, double *after_s);

#endif /* MEMSUP_PEAKSITES_H */
