/* answer.c: the one figure for "how much memory did this need" (answer.h). */
#include "analyze/answer.h"

#include "units.h"

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
