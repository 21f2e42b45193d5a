/* read.c: the one reader of resources.json and processes.json for the
 * subcommands (read.h says what a directory may be and the rule for
 * each).  Every key of both files the subcommands use is named here, and
 * each has one rule for when it is missing: a number that is absent or
 * null is NAN (or -1 where the field says so), a string NULL. */
#include "evidence/read.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "evidence/files.h"
#include "evidence/processes.h"
#include "analyze/runrecord.h"

static const char *const state_names[] = {
	[EVIDENCE_ENDED] = "ended",
	[EVIDENCE_KILLED] = "killed",
	[EVIDENCE_RUNNING] = "running",
	[EVIDENCE_START_FAILED] = "start_failed",
};

const char *evidence_state_name(enum evidence_state s)
{
	return (size_t)s < sizeof state_names / sizeof state_names[0] ? state_names[s] : "?";
}

static double num_or_nan(const struct jsonr_value *obj, const char *key)
{
	return jsonr_num(jsonr_get(obj, key), NAN);
}

static const struct jsonr_value *of_type(const struct jsonr_value *obj, const char *key,
					 enum jsonr_type type)
{
	const struct jsonr_value *v = jsonr_get(obj, key);
	return v && v->type == type ? v : NULL;
}

static void run_broken(struct evidence_run *r, const char *what, const char *detail)
{
	/* the first problem found is the one said */
	if (!r->broken[0])
		snprintf(r->broken, sizeof r->broken, EVIDENCE_RESOURCES ": %s%s", what, detail);
}

/* The reason, as the state the rules of read.h know.  A reason this
 * memsup does not know (a newer one's) is a run that ended. */
static enum evidence_state state_of(const char *reason)
{
	enum sup_reason why = SUP_REASON_NONE;
	if (runrecord_reason_parse(reason, &why) < 0)
		return EVIDENCE_ENDED;
	switch (why) {
	case SUP_REASON_RUNNING:
		return EVIDENCE_RUNNING;
	case SUP_REASON_SUPERVISOR_KILLED:
		return EVIDENCE_KILLED;
	case SUP_REASON_START_FAILED:
		return EVIDENCE_START_FAILED;
	default:
		return EVIDENCE_ENDED;
	}
}

/* The answer: peak_mb and what it is.  Without one (a memsup before the
 * answer, or one killed before its end: null), the polled RSS sum's peak,
 * named as such.  A command that never started has none: its summed RSS
 * is a 0 of no sample, which must not read as a run that held nothing. */
static void read_answer(struct evidence_run *r)
{
	r->answer_mb = num_or_nan(r->doc, "peak_mb");
	r->source = jsonr_str(jsonr_get(r->doc, "peak_source"), NULL);
	if (isnan(r->answer_mb)) {
		r->answer_mb = r->rss_mb;
		r->source = isnan(r->rss_mb) ? NULL : runrecord_peak_source_name(SUP_PEAK_POLLED_RSS);
	}
	if (r->state == EVIDENCE_START_FAILED) {
		r->answer_mb = NAN;
		r->source = NULL;
	}
}

/* Markers, else the starts of the phases, as moments of the run. */
static int read_marks(struct evidence_run *r)
{
	const struct jsonr_value *m = of_type(r->doc, "markers", JSONR_ARRAY);
	const char *tkey = "t";
	if (!m || !m->n) {
		m = of_type(r->doc, "phases", JSONR_ARRAY);
		tkey = "start_s";
	}
	if (!m || !m->n)
		return 0;
	if (!(r->marks = calloc(m->n, sizeof *r->marks)))
		return -ENOMEM;
	for (size_t i = 0; i < m->n; i++) {
		double t = num_or_nan(&m->items[i], tkey);
		if (!isfinite(t))
			continue;
		r->marks[r->n_marks++] = (struct evidence_mark){
			t, jsonr_str(jsonr_get(&m->items[i], "label"), "")
		};
	}
	return 0;
}

/* The figures, each absent or null as NAN (or -1). */
static void read_figures(struct evidence_run *r)
{
	const struct jsonr_value *d = r->doc, *v;
	r->meta = of_type(d, "meta", JSONR_OBJECT);
	r->command = of_type(d, "command", JSONR_ARRAY);
	if ((v = of_type(d, "exit_status", JSONR_NUMBER))) {
		r->has_exit = 1;
		r->exit_status = (long long)v->number;
	}
	r->error = jsonr_str(jsonr_get(d, "error"), NULL);
	r->exit_code = num_or_nan(d, "exit_code");
	double sig = jsonr_num(jsonr_get(d, "signal"), 0);
	r->signal = sig > 0 && sig < 256 ? (int)sig : 0;
	r->wall_s = num_or_nan(d, "wall_s");
	r->rss_mb = num_or_nan(d, "peak_tree_rss_mb");
	r->rss_at_s = num_or_nan(d, "peak_tree_rss_at_s");
	r->samples = (long long)jsonr_num(jsonr_get(d, "samples"), -1);
	r->heap_mb = num_or_nan(d, "peak_heap_mb");
	r->pss_mb = num_or_nan(d, "peak_pss_mb");
	r->cgroup_mb = num_or_nan(d, "peak_cgroup_mb");
	r->rss_budget_mb = num_or_nan(d, "rss_budget_mb");
	r->wall_budget_s = num_or_nan(d, "wall_budget_s");
	r->blind_spots = (v = of_type(d, "blind_spots", JSONR_ARRAY)) ? (long long)v->n : -1;
}

void evidence_run_init(struct evidence_run *r)
{
	memset(r, 0, sizeof *r);
	r->exit_code = r->wall_s = r->answer_mb = r->rss_mb = r->rss_at_s = NAN;
	r->heap_mb = r->pss_mb = r->cgroup_mb = r->rss_budget_mb = r->wall_budget_s = NAN;
	r->samples = r->blind_spots = -1;
}

int evidence_read_run(int dirfd, struct evidence_run *out, char *err, size_t errlen)
{
	char oerr[200];
	int rc;

	evidence_run_init(out);
	if ((rc = jsonr_read_file(dirfd, EVIDENCE_RESOURCES, EVIDENCE_MAX_FILE_BYTES, &out->doc, err,
				  errlen)) < 0)
		return rc;
	if (out->doc->type != JSONR_OBJECT) {
		snprintf(err, errlen, EVIDENCE_RESOURCES ": not a JSON object");
		return -EINVAL;
	}
	out->reason = jsonr_str(jsonr_get(out->doc, "reason"), NULL);
	out->state = state_of(out->reason);
	read_figures(out);
	read_answer(out);
	if (read_marks(out) < 0)
		goto nomem;
	/* a forged "oom" breaks the run (named) but not its other figures */
	rc = oomkills_read(out->doc, &out->oom, oerr, sizeof oerr);
	if (rc == -ENOMEM)
		goto nomem;
	if (rc < 0)
		run_broken(out, "", oerr);
	/* memsup writes the record with reason "running" at the start and
	 * rewrites it as it goes; processes.json comes only at the end, and
	 * never when memsup was killed. */
	out->has_processes = out->state == EVIDENCE_ENDED || out->state == EVIDENCE_START_FAILED;
	if (out->state == EVIDENCE_RUNNING)
		return 0;
	if (!out->command)
		run_broken(out, "no \"command\" array", "");
	else if (isnan(out->wall_s))
		run_broken(out, "no numeric \"wall_s\"", "");
	else if (isnan(out->rss_mb))
		run_broken(out, "no numeric \"peak_tree_rss_mb\"", "");
	return 0;
nomem:
	snprintf(err, errlen, EVIDENCE_RESOURCES ": %s", strerror(ENOMEM));
	evidence_run_free(out);
	return -ENOMEM;
}

void evidence_run_free(struct evidence_run *r)
{
	jsonr_free(r->doc);
	r->doc = NULL;
	oomkills_free(&r->oom);
	free(r->marks);
	r->marks = NULL;
	r->n_marks = 0;
}

int evidence_run_comparable(const struct evidence_run *r)
{
	return r->state == EVIDENCE_ENDED && !r->broken[0] && !isnan(r->answer_mb);
}

/* ---- processes.json ---- */

struct proc_read {
	evidence_process_fn *fn;
	void *ctx;
};

/* What an image still held when it chose to end (exit or _exit): heap's
 * current, or the flat heap_current of a memsup before the one record
 * layout (common/recordjson.h).  The flat key comes first: only an old
 * record has it, and processes_fill has put a default heap (current 0)
 * into that record too.  An image killed, still running or replaced by
 * exec has no such figure. */
static double live_of(const struct jsonr_value *rec)
{
	const char *state = jsonr_str(jsonr_get(rec, "state"), "");
	double live = jsonr_num(jsonr_get(rec, "heap_current"),
				jsonr_num(jsonr_get(jsonr_get(rec, "heap"), "current"), NAN));
	if ((strcmp(state, "exited") == 0 || strcmp(state, "_exit") == 0) && live >= 0)
		return live;
	return NAN;
}

static int process_one(const struct jsonr_value *p, void *ctx)
{
	const struct proc_read *pr = ctx;
	const struct jsonr_value *lin = jsonr_get(p, "lineage"), *rec = jsonr_get(p, "record");
	struct evidence_process e = {
		.pid = (long long)jsonr_num(jsonr_get(p, "pid"), -1),
		.gen = (long long)jsonr_num(jsonr_get(p, "gen"), 0),
		.parent_pid = (long long)jsonr_num(jsonr_get(lin, "parent_pid"), -1),
		.parent_gen = (long long)jsonr_num(jsonr_get(lin, "parent_gen"), 0),
		.argv = of_type(p, "argv", JSONR_ARRAY),
		.exe = jsonr_str(jsonr_get(p, "exe"), NULL),
		.polled_peak_bytes = jsonr_num(jsonr_get(p, "polled_peak_rss"), -1),
		.polled_peak_at_s = jsonr_num(jsonr_get(p, "polled_peak_at_s"), -1),
		.live_bytes = live_of(rec),
		.first_seen_s = num_or_nan(p, "first_seen_s"),
		.last_seen_s = num_or_nan(p, "last_seen_s"),
	};
	double kb = jsonr_num(jsonr_get(p, "vm_hwm_kb"), -1);
	e.peak_bytes = kb >= 0 ? kb * 1024 : e.polled_peak_bytes;
	/* the shim's own start and end when it has them (exact), else what
	 * the poller saw; a memsup before the one record layout kept them
	 * inside the record.  An end the poller saw only for an image whose
	 * exit it saw. */
	e.start_s = jsonr_num(jsonr_get(p, "start_s"), jsonr_num(jsonr_get(rec, "start_s"), e.first_seen_s));
	e.end_s = jsonr_num(jsonr_get(p, "end_s"), num_or_nan(rec, "end_s"));
	if (!isfinite(e.end_s) && of_type(p, "exit_code", JSONR_NUMBER))
		e.end_s = e.last_seen_s;
	return pr->fn(&e, pr->ctx);
}

int evidence_read_processes(int dirfd, evidence_process_fn *fn, void *ctx, char *err,
			    size_t errlen)
{
	struct proc_read pr = { fn, ctx };
	return processes_read_each(dirfd, EVIDENCE_MAX_FILE_BYTES, process_one, &pr, err, errlen);
}
