/* answer.c: the one figure for "how much memory did this need" (answer.h). */
#include "analyze/answer.h"

#include "units.h"

int answer_note_sample(struct sup_record *r, double at_s, uint64_t rss,
		       const struct contain_state *k)
{
	int new_peak = rss > r->peak_bytes || r->peak_at_s < 0;
	if (new_peak) {
		r->peak_bytes = rss;
		r->peak_at_s = at_s;
	}
	/* What the cgroup's usage was made of where it was largest: the
	 * sample's own counters, read with it (the first of equals kept).  A
	 * sample whose parts did not add up to its usage (cgroup.c: a member's
	 * pages unmapped and not yet uncharged as it exits) does not displace
	 * one whose parts did. */
	const struct contain_state *best = &r->kernel_at_peak;
	int fits = k->have_split && k->split_agrees;
	int best_fits = best->have_split && best->split_agrees;
	if (k->have_usage &&
	    (r->kernel_peak_at_s < 0 || (fits && !best_fits) ||
	     (fits == best_fits && k->usage > best->usage))) {
		r->kernel_at_peak = *k;
		r->kernel_peak_at_s = at_s;
	}
	return new_peak;
}

void answer_apply(struct sup_record *r)
{
	r->peak_source = SUP_PEAK_NONE;
	r->peak_mb = r->peak_source_at_s = -1;
	if (r->cgroup.have_peak) {
		/* The kernel's watermark is exact and covers every moment; the
		 * sample with the largest usage is only when it was, roughly. */
		r->peak_source = SUP_PEAK_CGROUP;
		r->peak_mb = (double)r->cgroup.peak / UNITS_MB;
		r->peak_source_at_s = r->kernel_peak_at_s;
	} else if (r->peak_pss_mb >= 0) {
		r->peak_source = SUP_PEAK_POLLED_PSS;
		r->peak_mb = r->peak_pss_mb;
		r->peak_source_at_s = r->peak_at_s;
	} else if (r->peak_at_s >= 0) {
		r->peak_source = SUP_PEAK_POLLED_RSS;
		r->peak_mb = (double)r->peak_bytes / UNITS_MB;
		r->peak_source_at_s = r->peak_at_s;
	}
}

const char *answer_words(const struct sup_record *r)
{
	switch (r->peak_source) {
	case SUP_PEAK_CGROUP:
		return "the whole tree at once, counted by the kernel for the run's cgroup (exact; "
		       "shared pages once, page cache and kernel memory included)";
	case SUP_PEAK_POLLED_PSS:
		return "the whole tree at once, polled: the processes' summed Pss at the largest "
		       "sample (no memory cgroup; shared pages divided among their sharers; a "
		       "lower bound, spikes between polls and page cache not in it)";
	case SUP_PEAK_POLLED_RSS:
		return "the whole tree at once, polled: the processes' summed RSS at the largest "
		       "sample (no memory cgroup, no smaps; shared pages counted once per process, "
		       "spikes between polls missed)";
	case SUP_PEAK_NONE:
	case SUP_PEAK_COUNT:
		break;
	}
	return "";
}
