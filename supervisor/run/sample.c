/* run/sample.c: one sample of the tree (state.h), as a table of steps run
 * in order.  A feature that reads or records something at every sample adds
 * a step to the table; the loop (run.c) only says when.
 *
 * The order matters where one step uses what another found, and the table
 * says why at each such place: the containment's listing and counters come
 * first, the shim's new records after them; the record's series before the
 * budgets are judged; the per-process view before the call sites, the
 * timeline and the phases, which read it; the budgets' verdict and the
 * pace last, from everything the sample found. */
#include "run/state.h"

#include "analyze/answer.h"
#include "analyze/phases.h"
#include "collect/live.h"
#include "collect/oomwatch.h"
#include "collect/peaksites.h"
#include "collect/pview.h"
#include "collect/slurmjob.h"
#include "contain/track.h"
#include "evidence/timeline.h"
#include "base/clock.h"
#include "units.h"

#include <stdio.h>
#include <string.h>

/* What one sample found so far, handed from step to step. */
struct sample_ctx {
	uint64_t now;              /* when the sample began */
	uint64_t due;              /* when the schedule wanted it */
	uint64_t read_ns;          /* when the reading ended (new records
				      mapped) */
	uint64_t rss;              /* the tree's summed RSS */
	unsigned n;                /* its processes */
	double elapsed;            /* the sample's time into the run */
	int oom_rose;              /* the cgroup's OOM kill counter rose */
	int new_peak;              /* a new polled peak of the summed RSS */
	enum sup_reason breach;    /* the budget this sample breaks */
	enum sup_reason *reason;   /* the run's: the breach, or the evidence
				      failure */
	/* the per-process view, when the run has one */
	const struct tree_member *m;
	size_t nm;
	int viewed;                /* the view took the members (not in a
				      fork bomb's sample) */
	struct pview_sums sums;    /* the view's figures: zero when not */
};

/* What a step says to the rest of the sample. */
enum sample_next {
	SAMPLE_GO,                 /* on to the next step */
	SAMPLE_MISSED,             /* no sample after all: none of the rest */
};

/* Texts the record points at: one run per process, so file scope is fine. */
static char sample_pace_why[160];

/* The (up to TIMELINE_TOP) members with the largest RSS, largest first,
 * ties to the lower pid: an insertion into a fixed array, O(members), no
 * allocation and no full sort per sample. */
static void top_members(struct timeline_sample *tl, const struct tree_member *m, size_t n)
{
	tl->n_top = 0;
	for (size_t i = 0; i < n; i++) {
		size_t k = tl->n_top;
		while (k > 0 && (m[i].rss > tl->top[k - 1].rss ||
				 (m[i].rss == tl->top[k - 1].rss && m[i].pid < tl->top[k - 1].pid)))
			k--;
		if (k >= TIMELINE_TOP)
			continue;
		size_t last = tl->n_top < TIMELINE_TOP ? tl->n_top : TIMELINE_TOP - 1;
		memmove(&tl->top[k + 1], &tl->top[k], (last - k) * sizeof tl->top[0]);
		tl->top[k] = (struct timeline_top){ m[i].pid, m[i].rss };
		if (tl->n_top < TIMELINE_TOP)
			tl->n_top++;
	}
}

/* Slurm's poll, followed (slowpoll.h) on the figure its plugin reads:
 * jobacct_gather/cgroup the task cgroup's anonymous memory (memory.stat's
 * rss, of which the run's cgroup is part), where memsup reads memory.stat,
 * else the summed RSS, as jobacct_gather/linux reads /proc.  Chosen at the
 * first sample and kept, so that one run's range is of one figure; a
 * sample without memory.stat is then no reading of it. */
static void slurm_poll_sample(struct run *r, double elapsed, uint64_t rss)
{
	struct sup_record *rec = r->rec;
	if (!r->slurm_poll.period_s)
		return;
	if (!rec->slurm_poll_reads) {
		r->slurm_poll_anon = strcmp(rec->slurm->gather, "cgroup") == 0 && r->kernel.have_split;
		rec->slurm_poll_reads = r->slurm_poll_anon ? "cgroup_anon" : "summed_rss";
	}
	if (!r->slurm_poll_anon)
		slowpoll_sample(&r->slurm_poll, elapsed, rss);
	else if (r->kernel.have_split)
		slowpoll_sample(&r->slurm_poll, elapsed, r->kernel.anon);
}

/* The command changed the run's --mem-max limit, or (v1) turned its OOM
 * killer off; the containment put memsup's back (contain_state).  Said
 * once each in the notes, the first time and the count; a limit that
 * could not go back (the tree holds more) ends the run as the limit's. */
static void limit_undone(struct run *r, double at_s)
{
	static char raised[256], disabled[200];
	const struct contain_state *k = &r->kernel;
	if (k->limit_found && !r->limit_undone_n++) {
		if (k->limit_restored > 0)
			snprintf(raised, sizeof raised, "the command changed the run's memory limit "
				 "(--mem-max) to %llu bytes at %.3f s; memsup set its own back",
				 (unsigned long long)k->limit_found, at_s);
		else
			snprintf(raised, sizeof raised, "the command changed the run's memory limit "
				 "(--mem-max) to %llu bytes at %.3f s, and memsup could not set its own "
				 "back (%s: the tree held more): the run ended as the limit's",
				 (unsigned long long)k->limit_found, at_s, strerror(-k->limit_restored));
		runrecord_note(r->rec, raised);
	}
	if (k->limit_found && k->limit_restored <= 0)
		r->limit_lost = 1;
	if (k->oom_reenabled && !r->oom_disabled_n++) {
		snprintf(disabled, sizeof disabled, "the command set the run's oom_kill_disable at "
			 "%.3f s, which leaves the tree waiting at the limit for good; memsup turned "
			 "the OOM killer back on", at_s);
		runrecord_note(r->rec, disabled);
	}
}

/* The longest stretch without a sample is evidence (memsup stopped, the
 * machine stalled: findings' sampling_gap). */
void run_note_gap(struct run *r, uint64_t from, uint64_t to)
{
	if (!from) /* no sample yet: the gap runs from the start */
		from = r->start_ns;
	if (to > from && to - from > r->gap_ns) {
		r->gap_ns = to - from;
		r->gap_from_ns = from;
		r->rec->longest_gap_s = (double)r->gap_ns / 1e9;
		r->rec->longest_gap_at_s = run_since_start_s(r, from);
	}
}

/* Under RLIMIT_NPROC, the uid at its limit (procs.h): the tree's next
 * fork is refused though it may have fewer than N, the uid's other
 * processes sharing the limit.  A scan of /proc, so at most every
 * RLIMIT_CHECK_NS. */
#define RLIMIT_CHECK_NS (200 * 1000000ull)
static int rlimit_refuses(struct run *r)
{
	static uint64_t next;
	if (r->procs.by != PROCS_BY_RLIMIT)
		return 0;
	uint64_t now = clock_mono_ns();
	if (now < next)
		return 0;
	next = now + RLIMIT_CHECK_NS;
	return procs_uid_at_limit(&r->procs, r->cfg->proc_root);
}

/* The budget this sample breaks, or SUP_REASON_NONE. */
static enum sup_reason breach(struct run *r, double elapsed, uint64_t rss, unsigned n)
{
	const struct sup_options *o = r->cfg->opt;
	/* with pids.max the kernel refuses the fork past N: a refusal, or N
	 * reached, is the breach; without it, more than N seen */
	int pids_limit = o->max_procs > 0 && (contain_info(r->contain)->pids ||
					      r->procs.by == PROCS_BY_RLIMIT);
	if (o->mem_max_mb > 0 && (r->kernel.oom_kills > 0 || r->limit_lost))
		return SUP_REASON_MEM_LIMIT;
	if (o->wall_s > 0 && elapsed >= o->wall_s && run_still_running(r))
		return SUP_REASON_WALL_BUDGET;
	if (o->rss_mb > 0 && (double)rss >= o->rss_mb * UNITS_MB)
		return SUP_REASON_RSS_BUDGET;
	if (o->max_procs > 0 &&
	    (n > o->max_procs || (pids_limit && (n >= o->max_procs || r->kernel.forks_refused))))
		return SUP_REASON_PROCS_BUDGET;
	if (rlimit_refuses(r))
		return SUP_REASON_PROCS_BUDGET;
	return SUP_REASON_NONE;
}

/* --max-procs N reached: N processes where something refuses the next
 * fork (pids.max, RLIMIT_NPROC), else more than N. */
static int procs_reached(const struct run *r, unsigned n)
{
	unsigned max = r->cfg->opt->max_procs;
	int held = r->procs.by == PROCS_BY_PIDS_MAX || r->procs.by == PROCS_BY_RLIMIT;
	return max > 0 && (n > max || (held && n >= max));
}

/* Whether the samples go without the per-process view because
 * --max-procs comes first, where no pids cgroup holds it.  The
 * view reads each member's smaps_rollup, which waits for the member's
 * memory-map lock; a forking member holds it, and among hundreds of
 * runnable processes the holder gets the CPU back only after seconds --
 * memsup, real-time or not, sleeps meanwhile and the bomb grows unseen
 * (2 s without a sample, measured).  A tree that grows in bursts looks
 * steady between two of them, so no sample can tell it is safe: none
 * takes the view.  procs.c's note says so in the record. */
static int procs_view_skipped(const struct run *r)
{
	return r->procs.by == PROCS_BY_SCAN || r->procs.by == PROCS_BY_RLIMIT;
}

/* The containment's listing and its RSS, then the cgroup's counters.  A
 * failed listing is a missed sample, not a zero. */
static int step_contain(struct run *r, struct sample_ctx *c)
{
	if (contain_sample(r->contain, &c->rss, &c->n) < 0)
		return SAMPLE_MISSED;
	uint64_t oom_was = r->kernel.oom_kills;
	contain_poll(r->contain, &r->kernel);
	c->oom_rose = r->kernel.have_events && r->kernel.oom_kills > oom_was;
	if (r->kernel.limit_found || r->kernel.oom_reenabled)
		limit_undone(r, run_since_start_s(r, clock_mono_ns()));
	return SAMPLE_GO;
}

/* New record files after the RSS reading, not before: an image that
 * finished its start between the two (descheduled memsup, a child that
 * faults in 20 MB of huge pages in a millisecond) would have its memory in
 * the sample and its record not, and its whole RSS would read as memory
 * that is not heap.  Files still being created are retried every sample. */
static int step_live(struct run *r, struct sample_ctx *c)
{
	if (r->live)
		live_update(r->live, 0);
	c->read_ns = clock_mono_ns();
	return SAMPLE_GO;
}

/* The record's series: the gap since the last sample, the counts, the
 * peaks (answer.h's candidates), and the sample's line of rss.jsonl. */
static int step_series(struct run *r, struct sample_ctx *c)
{
	struct sup_record *rec = r->rec;
	/* a sparse interval is no gap while on time: what counts is from one
	 * poll period before the sample was due; poll_interval_p99_s is of
	 * the dense intervals */
	uint64_t from = r->last_sample_ns;
	if (from && c->due > from + r->pace.period_ns)
		from = c->due - r->pace.period_ns;
	else if (from)
		jitter_add(&r->jit, c->now - r->last_sample_ns);
	run_note_gap(r, from, c->now);
	r->last_sample_ns = c->now;
	if (r->pace.sparse)
		rec->sampling.samples_sparse++;
	/* the time of the figures: taken after the reading */
	c->elapsed = run_since_start_s(r, clock_mono_ns());
	rec->samples++;
	c->new_peak = answer_note_sample(rec, c->elapsed, c->rss, &r->kernel);
	if (c->n > rec->max_processes)
		rec->max_processes = c->n;
	return SAMPLE_GO;
}

/* Which budget the sample breaks; the view and the registry below need to
 * know (a fork bomb's sample reads neither), the verdict comes last. */
static int step_breach(struct run *r, struct sample_ctx *c)
{
	c->breach = breach(r, c->elapsed, c->rss, c->n);
	return SAMPLE_GO;
}

/* The sample's line of rss.jsonl: one that cannot be written ends the run,
 * whatever the budgets say. */
static int step_rss_line(struct run *r, struct sample_ctx *c)
{
	if (evidence_append_sample(r->ev, c->elapsed, c->rss) < 0)
		*c->reason = SUP_REASON_EVIDENCE_FAILED;
	return SAMPLE_GO;
}

static int step_slurm(struct run *r, struct sample_ctx *c)
{
	slurm_poll_sample(r, c->elapsed, c->rss);
	return SAMPLE_GO;
}

/* The per-process view (Pss, the shim's figures) and the live records of
 * the same moment: each member's image is the one current at `now`, when
 * the reading began, or, for a pid that had none then, one started by
 * read_ns, the reading's end (memsup descheduled for milliseconds on a
 * loaded machine: a command that started and filled 20 MB meanwhile read
 * as 20 MB no record explained).  Not when the process budget breaks: the
 * members' cmdline and smaps wait for their memory map's lock, which a
 * fork bomb holds nearly all the time -- seconds, for the kill to wait.
 * Nor at all where no pids cgroup holds --max-procs (procs_view_skipped
 * says why).  An OOM kill since the last sample is looked at around it:
 * that sample's members, the victim among them, before this one replaces
 * them. */
static int step_view(struct run *r, struct sample_ctx *c)
{
	if (!r->pv)
		return SAMPLE_GO;
	c->nm = contain_sampled(r->contain, &c->m);
	c->viewed = c->breach != SUP_REASON_PROCS_BUDGET && !procs_view_skipped(r);
	int oom_look = 0;
	if (r->oom) {
		const struct pview_peak_member *prev;
		size_t nprev = pview_current(r->pv, &prev);
		oom_look = oomwatch_before(r->oom, &r->kernel, prev, nprev, r->last_elapsed);
	}
	if (c->viewed) {
		if (r->live)
			live_believe(r->live, c->m, c->nm, r->main_pid, c->now, c->read_ns);
		pview_sample(r->pv, r->live, c->now, c->read_ns, c->m, c->nm, c->new_peak, c->rss,
			     &c->sums);
	} else {
		memset(&c->sums, 0, sizeof c->sums);
	}
	if (oom_look) {
		const struct pview_peak_member *cur;
		size_t ncur = c->viewed ? pview_current(r->pv, &cur) : 0;
		oomwatch_after(r->oom, &r->kernel, ncur ? cur : NULL, ncur, r->pv, r->live,
			       c->elapsed, r->kernel_woke_ns ? r->kernel_woke_ns : r->oom_chase_ns,
			       c->now);
	}
	return SAMPLE_GO;
}

/* The images' sampled call sites at a new peak of the traced heap, of the
 * traced heap plus mappings or of the RSS, with the figures of this very
 * sample: the images the view counted in its heap (none when the records
 * were not read: a fork bomb at --max-procs). */
static int step_sites(struct run *r, struct sample_ctx *c)
{
	if (!r->pv || !r->sites || !c->viewed)
		return SAMPLE_GO;
	const struct pview_peak_member *pm;
	size_t npm = pview_current(r->pv, &pm);
	peaksites_sample(r->sites, r->live, pm, npm, c->elapsed, c->sums.heap,
			 c->sums.map_anon + c->sums.map_file, c->rss);
	return SAMPLE_GO;
}

/* The sample's line of timeline.jsonl: the view's figures, the cgroup's
 * and the largest members. */
static int step_timeline(struct run *r, struct sample_ctx *c)
{
	if (!r->pv)
		return SAMPLE_GO;
	const struct pview_sums *s = &c->sums;
	const struct contain_state *k = &r->kernel;
	struct timeline_sample tl = {
		.t = c->elapsed, .rss = c->rss, .processes = c->n,
		.traced = r->live != NULL && c->viewed,
		.heap = s->heap, .mapped_anon = s->map_anon, .mapped_file = s->map_file,
		.have_pss = s->have_pss, .pss = s->pss,
		.have_cgroup = k->have_usage, .cgroup = k->usage,
		.have_split = k->have_split, .cgroup_anon = k->anon,
		.cgroup_page_cache = k->page_cache, .cgroup_shmem = k->shmem,
		.cgroup_kernel = k->kernel,
		.have_events = k->have_events,
		.cgroup_limit_hits = k->limit_hits,
		.cgroup_oom_kills = k->oom_kills,
	};
	top_members(&tl, c->m, c->nm);
	if (evidence_append_timeline(r->ev, &tl) < 0)
		*c->reason = SUP_REASON_EVIDENCE_FAILED;
	return SAMPLE_GO;
}

/* The sample counted in the open phase (phases.h). */
static int step_phases(struct run *r, struct sample_ctx *c)
{
	if (!r->pv)
		return SAMPLE_GO;
	struct phases_sample ps = {
		.t = c->elapsed, .rss = c->rss, .processes = c->n,
		.traced = r->live != NULL && c->viewed,
		.heap = c->sums.heap, .members = c->m, .n_members = c->nm,
	};
	phases_on_sample(r->cfg->phases, &ps, r->live, r->start_ns, r->cfg->proc_root);
	return SAMPLE_GO;
}

/* Each member held by pidfd (track.h); not in a fork bomb's breaking
 * sample: the end's scan of descendants finds those anyway. */
static int step_track(struct run *r, struct sample_ctx *c)
{
	if (!r->track || c->breach == SUP_REASON_PROCS_BUDGET)
		return SAMPLE_GO;
	const struct tree_member *m;
	size_t nm = contain_sampled(r->contain, &m);
	track_note_members(r->track, m, nm);
	return SAMPLE_GO;
}

/* The budgets' verdict: when --max-procs was first reached, the breach as
 * the run's reason (an evidence failure stays), and the OOM chase.  The
 * kernel's OOM event comes as the OOM begins (v1 notifies before the killer
 * chooses; v2 at the "oom" event, then again at the kill): until the kill
 * shows in the counter, the samples follow it closely (the loop), up to
 * OOM_CHASE_NS. */
static int step_verdict(struct run *r, struct sample_ctx *c)
{
	struct sup_record *rec = r->rec;
	if ((procs_reached(r, c->n) || c->breach == SUP_REASON_PROCS_BUDGET) &&
	    rec->max_procs_reached_at_s < 0)
		rec->max_procs_reached_at_s = c->elapsed;
	if (*c->reason == SUP_REASON_NONE)
		*c->reason = c->breach;
	if (c->oom_rose)
		r->oom_chase_ns = 0;
	else if (r->kernel_woke_ns)
		r->oom_chase_ns = r->kernel_woke_ns;
	else if (r->oom_chase_ns && c->now - r->oom_chase_ns > OOM_CHASE_NS)
		r->oom_chase_ns = 0;
	r->kernel_woke_ns = 0;
	r->last_elapsed = c->elapsed;
	return SAMPLE_GO;
}

/* The rate from here on (pace.h), and what it asks of the kernel: to stop
 * watching the marks, or to watch new ones. */
static int step_pace(struct run *r, struct sample_ctx *c)
{
	const struct contain_state *k = &r->kernel;
	const struct pview_peak *pk = r->pv ? pview_peak(r->pv) : NULL;
	struct pace_reading rd = {
		.now = c->now, .rss = c->rss, .n = c->n,
		.have_usage = k->have_usage, .usage = k->usage,
		.peak_incomplete = pk && pk->n && (!pk->have_smaps || pk->carried),
		.peak_rss = pk ? pk->rss : 0,
	};
	uint64_t lo = 0, hi = 0;
	switch (pace_after_sample(&r->pace, &r->rec->sampling, &rd, &lo, &hi)) {
	case PACE_KEEP:
		break;
	case PACE_TO_DENSE:
		contain_unwatch(r->contain); /* its eventfd closed: unregistered */
		pollset_forget(&r->ps, SLOT_WATCH);
		break;
	case PACE_WATCH: {
		int rc = contain_watch(r->contain, lo, hi);
		pollset_forget(&r->ps, SLOT_WATCH); /* a new eventfd, maybe the old one's number */
		if (rc < 0) {
			snprintf(sample_pace_why, sizeof sample_pace_why, "the kernel refused a usage "
				 "threshold (cgroup.event_control: %s)", strerror(-rc));
			pace_refused(&r->pace, &r->rec->sampling, sample_pace_why);
		} else {
			pace_watching(&r->pace, &r->rec->sampling, c->now, k->usage, c->rss);
		}
		break;
	}
	}
	return SAMPLE_GO;
}

/* The steps, in the order they run. */
static const struct sample_step {
	const char *name;
	int (*run)(struct run *r, struct sample_ctx *c);
} sample_steps[] = {
	{ "contain", step_contain },     /* first: every step uses its figures */
	{ "live", step_live },           /* after the listing (step_live says why) */
	{ "series", step_series },
	{ "breach", step_breach },       /* before the view and the registry */
	{ "rss_line", step_rss_line },
	{ "slurm", step_slurm },
	{ "view", step_view },           /* before what reads the view: */
	{ "sites", step_sites },
	{ "timeline", step_timeline },
	{ "phases", step_phases },
	{ "track", step_track },
	{ "verdict", step_verdict },
	{ "pace", step_pace },           /* last: from all the sample found */
};

void run_take_sample(struct run *r, uint64_t now, uint64_t due, enum sup_reason *reason)
{
	struct sample_ctx c = { .now = now, .due = due, .reason = reason };
	for (size_t i = 0; i < sizeof sample_steps / sizeof sample_steps[0]; i++)
		if (sample_steps[i].run(r, &c) != SAMPLE_GO)
			return;
}
