/* answer.h: the one figure memsup gives for "how much memory did this
 * command need": the most the whole tree held at once, by the best witness
 * the run had.
 *
 *   cgroup      the run's memory cgroup peak (memory.peak, v1
 *               memory.max_usage_in_bytes): the kernel's own count of every
 *               page charged to the tree, at every moment, shared pages
 *               once, page cache and kernel memory the tree caused
 *               included.  Exact; nothing polled.
 *   polled_pss  no memory cgroup: the largest sum of the processes'
 *               proportional set size (smaps_rollup Pss, shared pages
 *               divided among their sharers) that memsup read, at the
 *               polled peaks of summed RSS.  A lower bound: a spike between
 *               two polls, and page cache, are not in it.
 *   polled_rss  no cgroup and no readable smaps: the largest summed RSS a
 *               poll saw (peak_tree_rss_mb, memsup's first figure), which
 *               counts every shared page once per process that maps it,
 *               and misses spikes between polls.
 *
 * Pure: reads the record, writes its answer fields.  The candidates are
 * kept as the run goes on, sample by sample (answer_note_sample).
 */
#ifndef MEMSUP_ANSWER_H
#define MEMSUP_ANSWER_H

#include "analyze/runrecord.h"

/* A sample's figures as candidates for the answer, at `at_s` into the
 * run: the polled peak (the largest summed RSS `rss`, the first of equals
 * kept: peak_bytes, peak_at_s) and the cgroup's counters `k` where its
 * usage was largest (kernel_at_peak, kernel_peak_at_s).  Returns whether
 * the sample is a new polled peak. */
int answer_note_sample(struct sup_record *r, double at_s, uint64_t rss,
		       const struct contain_state *k);

/* The record's peak_mb, peak_source and peak_source_at_s from what the run
 * measured (the cgroup's figures, peak_pss_mb, the polled peak): call after
 * peak_pss_mb is known. */
void answer_apply(struct sup_record *r);

/* What the record's answer is, in a few plain words for the summary's first
 * line ("the kernel's exact count for the run's cgroup, the whole tree at
 * once"); "" when there is no answer. */
const char *answer_words(const struct sup_record *r);

#endif /* MEMSUP_ANSWER_H */
