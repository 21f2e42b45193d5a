/* runrecord.c: the run record and its outcomes (see runrecord.h). */
#include "analyze/runrecord.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* ---- outcomes ---------------------------------------------------------------- */

#define STATUS_NONE (-1)           /* no exit status yet: null */
#define STATUS_OF_RUN (-2)         /* the run decides (runrecord_exit_status) */

/* Each outcome's name in the record and memsup's exit status (memsup(1)). */
static const struct {
	const char *name;
	int exit_status;
} reasons[SUP_REASON_COUNT] = {
	[SUP_REASON_NONE] = { NULL, STATUS_OF_RUN },
	[SUP_REASON_RUNNING] = { "running", STATUS_NONE },
	[SUP_REASON_WALL_BUDGET] = { "wall_budget_exceeded", 124 },
	[SUP_REASON_RSS_BUDGET] = { "rss_budget_exceeded", 123 },
	[SUP_REASON_PROCS_BUDGET] = { "procs_budget_exceeded", 122 },
	[SUP_REASON_INTERRUPTED] = { "interrupted", STATUS_OF_RUN },
	[SUP_REASON_START_FAILED] = { "start_failed", STATUS_OF_RUN },
	[SUP_REASON_EVIDENCE_FAILED] = { "evidence_failed", SUP_EXIT_ERROR },
	/* 123 as the RSS budget: the memory limit is the same promise, kept
	 * by the kernel instead of a poll */
	[SUP_REASON_MEM_LIMIT] = { "mem_limit_exceeded", 123 },
	/* 128 + SIGKILL: what the shell that ran memsup saw */
	[SUP_REASON_SUPERVISOR_KILLED] = { "supervisor_killed", 128 + 9 },
};

const char *runrecord_reason_name(enum sup_reason reason)
{
	return (unsigned)reason < SUP_REASON_COUNT ? reasons[reason].name : NULL;
}

const char *runrecord_peak_source_name(enum sup_peak_source source)
{
	static const char *const names[SUP_PEAK_COUNT] = {
		[SUP_PEAK_CGROUP] = "cgroup",
		[SUP_PEAK_POLLED_PSS] = "polled_pss",
		[SUP_PEAK_POLLED_RSS] = "polled_rss",
	};
	return (unsigned)source < SUP_PEAK_COUNT ? names[source] : NULL;
}

int runrecord_reason_parse(const char *name, enum sup_reason *out)
{
	if (!name) {
		*out = SUP_REASON_NONE;
		return 0;
	}
	for (unsigned i = 0; i < SUP_REASON_COUNT; i++) {
		if (reasons[i].name && strcmp(reasons[i].name, name) == 0) {
			*out = (enum sup_reason)i;
			return 0;
		}
	}
	return -EINVAL;
}

int runrecord_exit_status(enum sup_reason reason, int run_status)
{
	int st = (unsigned)reason < SUP_REASON_COUNT ? reasons[reason].exit_status : STATUS_OF_RUN;
	return st == STATUS_OF_RUN ? run_status : st;
}

/* ---- the record -------------------------------------------------------------- */

void runrecord_init(struct sup_record *r)
{
	memset(r, 0, sizeof *r);
	r->reason = SUP_REASON_RUNNING;
	r->exit_status = -1;
	r->peak_at_s = -1;
	r->rusage_children_maxrss_mb = -1;
	r->memsup_cpu_s = -1;
	r->poll_interval_p99_s = -1;
	r->longest_gap_s = -1;
	r->max_procs_reached_at_s = -1;
	r->longest_gap_at_s = -1;
	r->peak_heap_mb = r->peak_mapped_mb = r->peak_pss_mb = -1;
	r->kernel_peak_at_s = -1;
	r->peak_mb = r->peak_source_at_s = -1;
}

void runrecord_note(struct sup_record *r, const char *note)
{
	if (r->n_notes < RUNRECORD_MAX_NOTES)
		r->notes[r->n_notes++] = note;
}

void runrecord_free(struct sup_record *r)
{
	for (size_t i = 0; i < r->n_leftovers; i++)
		free(r->leftovers[i].argv);
	free(r->leftovers);
	r->leftovers = NULL;
	r->n_leftovers = 0;
}
