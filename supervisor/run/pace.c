/* pace.c: dense while the memory moves, sparse while it is flat (pace.h).
 * Pure: no clock, no I/O; the caller passes the time. */
#include "run/pace.h"

#include "invariant.h"

#include <string.h>

uint64_t pace_delta(uint64_t v)
{
	uint64_t d = v / 64;
	return d < PACE_DELTA_MIN ? PACE_DELTA_MIN : d > PACE_DELTA_MAX ? PACE_DELTA_MAX : d;
}

/* Whether a figure moved from its mark: by more than the delta of the
 * larger of the two. */
static int pace_moved(uint64_t now, uint64_t mark)
{
	uint64_t d = now > mark ? now - mark : mark - now;
	return d > pace_delta(now > mark ? now : mark);
}

const char *pace_why_not(const struct sup_options *o)
{
	if (o->sparse_ms <= 0)
		return "not asked: --sparse-ms 0 samples every --poll-ms";
	if (o->poll_ms >= o->sparse_ms)
		return "--poll-ms is no denser than --sparse-ms";
	if (o->rss_mb > 0)
		return "--rss-mb is a budget polled at samples: every one is due at --poll-ms";
	if (o->max_procs > 0)
		return "--max-procs is a budget checked at samples: every one is due at --poll-ms";
	return NULL;
}

void pace_open(struct pace *p, struct sup_sampling *s, const struct sup_options *o,
	       const char *why_not, uint64_t start_ns)
{
	memset(p, 0, sizeof *p);
	p->start_ns = start_ns;
	p->period_ns = (uint64_t)(o->poll_ms * 1e6);
	if (p->period_ns == 0)
		p->period_ns = 1;
	p->adaptive = why_not == NULL;
	p->sparse_ns = (uint64_t)(o->sparse_ms * 1e6);
	p->sparse_max_ns = p->sparse_ns > PACE_SPARSE_MAX_NS ? p->sparse_ns : PACE_SPARSE_MAX_NS;
	s->dense_s = o->poll_ms / 1000.0;
	s->adaptive = why_not == NULL;
	s->why_not = why_not;
	s->sparse_s = why_not ? 0 : o->sparse_ms / 1000.0;
	s->sparse_max_s = why_not ? 0 : (double)p->sparse_max_ns / 1e9;
}

/* The record's list of changes: at `now`, to sparse or dense, at
 * `interval` from then (the list may be full: the count goes on). */
static void pace_note_change(const struct pace *p, struct sup_sampling *s, uint64_t now,
			     int sparse, uint64_t interval)
{
	if (s->n_changes < RUNRECORD_MAX_PACE_CHANGES)
		s->changes[s->n_changes] = (struct sup_pace_change){
			(double)(now - p->start_ns) / 1e9, sparse, (double)interval / 1e9 };
	s->n_changes++;
}

static void pace_switch(struct pace *p, struct sup_sampling *s, uint64_t now, int sparse)
{
	if (p->sparse)
		s->sparse_time_s += (double)(now - p->sparse_since) / 1e9;
	p->sparse = sparse;
	p->step_ns = p->sparse_ns; /* every stretch of sparse starts at --sparse-ms */
	if (sparse)
		p->sparse_since = now;
	pace_note_change(p, s, now, sparse, sparse ? p->step_ns : p->period_ns);
	s->switches++;
}

/* Sparse, and a sample found nothing moved: the kernel still watches the
 * marks, so the next sample may wait twice as long (up to sparse_max_ns). */
static void pace_lengthen(struct pace *p, struct sup_sampling *s, uint64_t now)
{
	if (p->step_ns >= p->sparse_max_ns)
		return;
	p->step_ns = p->step_ns > p->sparse_max_ns / 2 ? p->sparse_max_ns : 2 * p->step_ns;
	MT_ASSERT(p->step_ns >= p->sparse_ns && p->step_ns <= p->sparse_max_ns);
	pace_note_change(p, s, now, 1, p->step_ns);
	s->lengthened++;
}

enum pace_verdict pace_after_sample(struct pace *p, struct sup_sampling *s,
				    const struct pace_reading *rd, uint64_t *lo, uint64_t *hi)
{
	if (!p->adaptive)
		return PACE_KEEP;
	int moved = p->woke || !p->have_mark || rd->n != p->mark_n ||
		    pace_moved(rd->rss, p->mark_rss) ||
		    (rd->have_usage && pace_moved(rd->usage, p->mark_usage));
	p->woke = 0;
	if (moved) {
		p->have_mark = 1;
		p->mark_usage = rd->usage;
		p->mark_rss = rd->rss;
		p->mark_n = rd->n;
		p->quiet_since = rd->now;
		if (!p->sparse)
			return PACE_KEEP;
		pace_switch(p, s, rd->now, 0);
		return PACE_TO_DENSE;
	}
	if (p->sparse) {
		pace_lengthen(p, s, rd->now);
		return PACE_KEEP;
	}
	if (!rd->have_usage || rd->now - p->quiet_since < p->sparse_ns)
		return PACE_KEEP;
	/* the peak's per-process view can still be completed by a sample of
	 * about the peak's size: dense, so that it gets every chance a dense
	 * run gives it */
	if (rd->peak_incomplete && rd->rss * 10 >= rd->peak_rss * 9 &&
	    rd->rss * 10 <= rd->peak_rss * 11)
		return PACE_KEEP;
	/* flat for a sparse interval: the kernel may watch the marks around
	 * the usage now, and memsup look less often */
	uint64_t d = pace_delta(rd->usage);
	*lo = rd->usage > d ? rd->usage - d : 0;
	*hi = rd->usage + d;
	return PACE_WATCH;
}

void pace_watching(struct pace *p, struct sup_sampling *s, uint64_t now, uint64_t usage,
		   uint64_t rss)
{
	p->mark_usage = usage;
	p->mark_rss = rss;
	pace_switch(p, s, now, 1);
}

void pace_refused(struct pace *p, struct sup_sampling *s, const char *why)
{
	p->adaptive = 0;
	s->adaptive = 0;
	s->why_not = why;
}

int pace_wake(struct pace *p, uint64_t now, uint64_t last_sample_ns, uint64_t *next,
	      uint64_t *counter)
{
	if (!p->sparse || p->woke)
		return 0;
	p->woke = 1;
	(*counter)++;
	uint64_t soonest = last_sample_ns + p->period_ns;
	uint64_t at = now > soonest ? now : soonest;
	if (at < *next)
		*next = at;
	return 1;
}

uint64_t pace_next(const struct pace *p, uint64_t due, uint64_t now, uint64_t next_record)
{
	uint64_t next = due + (p->sparse ? p->step_ns : p->period_ns);
	if (next <= now)
		next += ((now - next) / p->period_ns + 1) * p->period_ns;
	if (p->sparse && next > next_record && next_record > now)
		next = next_record;
	return next;
}

void pace_end(struct pace *p, struct sup_sampling *s, uint64_t end)
{
	if (p->sparse) /* the last stretch, up to the end memsup saw */
		s->sparse_time_s += (double)(end - p->sparse_since) / 1e9;
	p->sparse = 0;
}

void pace_marks_take(const struct pace *p, const struct sup_record *rec, size_t phases,
		     uint64_t gap_ns, struct pace_marks *m)
{
	memset(m, 0, sizeof *m); /* padding too: compared with memcmp */
	m->peak = rec->peak_bytes;
	m->kernel_peak = rec->kernel_at_peak.usage;
	m->log_bytes = rec->output.log_bytes;
	m->out_bytes = rec->output.bytes;
	m->wakeups = rec->sampling.threshold_wakeups + rec->sampling.churn_wakeups;
	m->notes = rec->n_notes;
	m->reaped = rec->n_reaped;
	m->leftovers = rec->n_leftovers;
	m->changes = rec->sampling.n_changes;
	m->phases = phases;
	m->procs = rec->max_processes;
	m->gap_periods = gap_ns / p->period_ns;
}

int pace_record_due(const struct pace *p, uint64_t now, uint64_t record_at,
		    const struct pace_marks *cur, const struct pace_marks *last)
{
	if (!p->sparse || now - record_at >= PACE_RECORD_SPARSE_NS)
		return 1;
	return memcmp(cur, last, sizeof *cur) != 0;
}
