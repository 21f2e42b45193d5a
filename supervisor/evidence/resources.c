/* resources.c: the run record as JSON (see resources.h). */
#include "evidence/files.h"
#include "evidence/resources.h"
#include "analyze/findings.h"
#include "analyze/merge.h"
#include "collect/oomwatch.h"
#include "collect/slurmjob.h"
#include "jsonw.h"
#include "evidence/phasesout.h"
#include "evidence/pyfloat.h"
#include "base/version.h"
#include "units.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The record's "scope" and "limitation": what its figures cover. */
static const char resources_scope[] =
	"command launch through exit; simultaneous descendants; observer excluded";
static const char resources_limitation[] =
	"polled observations do not bound arbitrary transient allocations";

/* ---- the JSON ---------------------------------------------------------------- */

static void put_float(struct jsonw *w, double v)
{
	char f[40];
	size_t n = pyfloat_format(v, f, sizeof f);
	jsonw_raw(w, f, n);
}

/* memory.stat's split at the cgroup's largest sample: what the answer was
 * made of, in the kernel's words; null without one. */
static void put_breakdown(struct jsonw *w, const struct sup_record *r)
{
	const struct contain_state *k = &r->kernel_at_peak;
	jsonw_key(w, "peak_breakdown");
	if (r->peak_source != SUP_PEAK_CGROUP || !k->have_split || r->kernel_peak_at_s < 0) {
		jsonw_null(w);
		return;
	}
	jsonw_object_begin(w);
	jsonw_key(w, "at_s");
	put_float(w, r->kernel_peak_at_s);
	jsonw_key(w, "cgroup_mb");
	put_float(w, (double)k->usage / UNITS_MB);
	jsonw_key(w, "anon_mb");
	put_float(w, (double)k->anon / UNITS_MB);
	jsonw_key(w, "page_cache_mb");
	put_float(w, (double)k->page_cache / UNITS_MB);
	jsonw_key(w, "shmem_mb");
	put_float(w, (double)k->shmem / UNITS_MB);
	jsonw_key(w, "kernel_mb");
	put_float(w, (double)k->kernel / UNITS_MB);
	jsonw_object_end(w);
}

static void put_float_or_null(struct jsonw *w, double v, int present)
{
	if (present)
		put_float(w, v);
	else
		jsonw_null(w);
}

/* A leftover that had left the run's cgroups says which
 * ("left_cgroups": ["v2", "memory"]); the others have no such key. */
static void put_left_cgroups(struct jsonw *w, const char *left)
{
	if (!left[0])
		return;
	jsonw_key(w, "left_cgroups");
	jsonw_array_begin(w);
	for (const char *p = left; *p;) {
		size_t n = strcspn(p, ",");
		jsonw_string_n(w, p, n);
		p += n + (p[n] == ',');
	}
	jsonw_array_end(w);
}

/* What held --max-procs, and when a sample first saw it reached */
static void put_max_procs_by(struct jsonw *w, const struct sup_record *r)
{
	jsonw_key(w, "max_procs_by");
	jsonw_string(w, r->max_procs_by);
	jsonw_key(w, "max_procs_reached_at_s");
	put_float_or_null(w, r->max_procs_reached_at_s, r->max_procs_reached_at_s >= 0);
}

static void put_env(struct jsonw *w, char *const *env, size_t n)
{
	jsonw_object_begin(w);
	for (size_t i = 0; i < n; i++) {
		const char *eq = strchr(env[i], '=');
		size_t kl = (size_t)(eq - env[i]);
		/* -e may repeat a key: the last one is what the command gets. */
		int later = 0;
		for (size_t j = i + 1; j < n && !later; j++)
			later = strncmp(env[j], env[i], kl + 1) == 0;
		if (later)
			continue;
		char key[256];
		if (kl >= sizeof key) {
			/* keys this long are odd but legal: write without the
			 * NUL-terminated copy */
			jsonw_key(w, "");
			jsonw_string(w, env[i]);
			continue;
		}
		memcpy(key, env[i], kl);
		key[kl] = '\0';
		jsonw_key(w, key);
		jsonw_string(w, eq + 1);
	}
	jsonw_object_end(w);
}

/* "output": the mode ("terminal" for a job at memsup's terminal, else the
 * relay's), what stdout.log holds and its bound, what the command wrote and
 * how much of it the log left out, and for tee each stream's bytes, how
 * many passed through, were logged and were left out, and how the
 * pass-through ended. */
static void put_output(struct jsonw *w, const struct relay_report *o, enum terminal_mode t)
{
	static const char *const names[RELAY_STREAMS] = { "stdout", "stderr" };
	jsonw_object_begin(w);
	jsonw_key(w, "mode");
	jsonw_string(w, t != TERMINAL_NONE ? terminal_mode_name(t) : relay_mode_name(o->mode));
	jsonw_key(w, "log");
	jsonw_string(w, o->logged ? EVIDENCE_STDOUT_LOG : NULL);
	jsonw_key(w, "logged");
	jsonw_array_begin(w);
	for (int i = 0; o->logged && i < RELAY_STREAMS; i++)
		jsonw_string(w, names[i]);
	jsonw_array_end(w);
	jsonw_key(w, "log_bytes");
	if (o->logged && o->have_log_bytes)
		jsonw_uint(w, o->log_bytes);
	else
		jsonw_null(w);
	for (int i = 0; i < RELAY_STREAMS; i++) {
		const struct relay_stream_report *s = &o->stream[i];
		jsonw_key(w, names[i]);
		if (!o->have_streams) {
			jsonw_null(w);
			continue;
		}
		jsonw_object_begin(w);
		jsonw_key(w, "bytes");
		jsonw_uint(w, s->bytes);
		jsonw_key(w, "passed");
		jsonw_uint(w, s->passed);
		jsonw_key(w, "logged");
		jsonw_uint(w, s->logged);
		jsonw_key(w, "left_out");
		jsonw_uint(w, s->left_out);
		jsonw_key(w, "end");
		jsonw_string(w, relay_end_name(s->end));
		jsonw_key(w, "error");
		jsonw_string(w, s->err ? strerror(s->err) : NULL);
		jsonw_object_end(w);
	}
	/* after the streams: the keys above kept their places when these came */
	jsonw_key(w, "log_max");
	if (o->bounded)
		jsonw_uint(w, o->log_max);
	else
		jsonw_null(w);
	jsonw_key(w, "bytes");
	if (o->have_bytes)
		jsonw_uint(w, o->bytes);
	else
		jsonw_null(w);
	jsonw_key(w, "left_out");
	if (o->logged)
		jsonw_uint(w, o->left_out);
	else
		jsonw_null(w);
	jsonw_object_end(w);
}

static void put_mb_or_null(struct jsonw *w, const char *key, uint64_t bytes, int present)
{
	jsonw_key(w, key);
	put_float_or_null(w, (double)bytes / UNITS_MB, present);
}

static void put_count_or_null(struct jsonw *w, const char *key, uint64_t n, int present)
{
	jsonw_key(w, key);
	if (present)
		jsonw_uint(w, n);
	else
		jsonw_null(w);
}

/* "containment" (how the run was held together, and what was missing),
 * then the kernel's figures of its cgroup. */
/* "sampling": which rate applied when (runrecord.h's sup_sampling); null
 * before the run started. */
/* "slurm": the job memsup ran in and what Slurm's poll could read of the
 * run (slurmjob.h, slowpoll.h); null outside Slurm. */
static void put_slurm(struct jsonw *w, const struct sup_record *r)
{
	const struct slurm_job *j = r->slurm;
	jsonw_key(w, "slurm");
	if (!j || !j->job_id[0]) {
		jsonw_null(w);
		return;
	}
	jsonw_object_begin(w);
	jsonw_key(w, "job_id");
	jsonw_string(w, j->job_id);
	jsonw_key(w, "step_id");
	jsonw_string(w, j->step_id[0] ? j->step_id : NULL);
	jsonw_key(w, "config");
	jsonw_string(w, j->conf);
	jsonw_key(w, "config_error");
	jsonw_string(w, j->conf_error ? strerror(j->conf_error) : NULL);
	jsonw_key(w, "jobacct_gather");
	jsonw_string(w, j->gather[0] ? j->gather : NULL);
	jsonw_key(w, "poll_s");
	put_float(w, j->poll_s);
	jsonw_key(w, "poll_from");
	jsonw_string(w, j->poll_from);
	jsonw_key(w, "poll_reads");
	jsonw_string(w, r->slurm_poll_reads);
	jsonw_key(w, "memsup_anon_mb");
	put_float_or_null(w, (double)r->slurm_memsup_anon / UNITS_MB, r->slurm_memsup_anon > 0);
	jsonw_key(w, "poll_low_mb");
	put_float_or_null(w, (double)r->slurm_poll_low / UNITS_MB, r->have_slurm_poll);
	jsonw_key(w, "poll_high_mb");
	put_float_or_null(w, (double)r->slurm_poll_high / UNITS_MB, r->have_slurm_poll);
	jsonw_object_end(w);
}

static void put_sampling(struct jsonw *w, const struct sup_record *r)
{
	const struct sup_sampling *s = &r->sampling;
	jsonw_key(w, "sampling");
	if (s->dense_s <= 0) {
		jsonw_null(w);
		return;
	}
	jsonw_object_begin(w);
	jsonw_key(w, "dense_ms");
	put_float(w, s->dense_s * 1000);
	jsonw_key(w, "sparse_ms");
	put_float_or_null(w, s->sparse_s * 1000, s->sparse_s > 0);
	jsonw_key(w, "sparse_max_ms");
	put_float_or_null(w, s->sparse_max_s * 1000, s->sparse_max_s > 0);
	jsonw_key(w, "adaptive");
	jsonw_bool(w, s->adaptive);
	jsonw_key(w, "why_not");
	jsonw_string(w, s->adaptive ? NULL : s->why_not);
	jsonw_key(w, "sparse_s");
	put_float(w, s->sparse_time_s);
	jsonw_key(w, "samples_sparse");
	jsonw_uint(w, s->samples_sparse);
	jsonw_key(w, "switches");
	jsonw_uint(w, s->switches);
	jsonw_key(w, "lengthened");
	jsonw_uint(w, s->lengthened);
	jsonw_key(w, "slice_us");
	put_float_or_null(w, s->slice_s * 1e6, s->slice_s > 0);
	jsonw_key(w, "threshold_wakeups");
	jsonw_uint(w, s->threshold_wakeups);
	jsonw_key(w, "churn_wakeups");
	jsonw_uint(w, s->churn_wakeups);
	jsonw_key(w, "changes");
	jsonw_array_begin(w);
	for (size_t i = 0; i < s->n_changes && i < RUNRECORD_MAX_PACE_CHANGES; i++) {
		jsonw_array_begin(w);
		put_float(w, s->changes[i].t);
		jsonw_string(w, s->changes[i].sparse ? "sparse" : "dense");
		put_float(w, s->changes[i].interval_s * 1000);
		jsonw_array_end(w);
	}
	jsonw_array_end(w);
	jsonw_key(w, "changes_total");
	jsonw_uint(w, s->n_changes);
	jsonw_object_end(w);
}

static void put_mb_value(struct jsonw *w, const char *key, uint64_t bytes, int present)
{
	jsonw_key(w, key);
	put_float_or_null(w, (double)bytes / UNITS_MB, present);
}

/* The victim of one kill (oomwatch.h; memsup(1) "oom"). */
static void put_oom_victim(struct jsonw *w, const struct oom_kill *k)
{
	jsonw_key(w, "victim");
	jsonw_object_begin(w);
	jsonw_key(w, "pid");
	if (k->pid > 0)
		jsonw_int(w, k->pid);
	else
		jsonw_null(w);
	jsonw_key(w, "gen");
	if (k->have_gen)
		jsonw_uint(w, k->gen);
	else
		jsonw_null(w);
	jsonw_key(w, "comm");
	jsonw_string(w, k->comm[0] ? k->comm : NULL);
	jsonw_key(w, "exe");
	jsonw_string(w, k->exe[0] ? k->exe : NULL);
	jsonw_key(w, "argv");
	if (k->argv_len) {
		jsonw_array_begin(w);
		for (size_t i = 0; i < k->argv_len;) {
			size_t n = strnlen(k->argv + i, k->argv_len - i);
			jsonw_string_n(w, k->argv + i, n);
			i += n + 1;
		}
		jsonw_array_end(w);
	} else {
		jsonw_null(w);
	}
	jsonw_key(w, "lineage");
	jsonw_array_begin(w);
	for (size_t i = 0; i < k->n_lineage; i++)
		jsonw_int(w, k->lineage[i]);
	jsonw_array_end(w);
	put_mb_value(w, "rss_mb", k->rss, k->have_rss);
	put_mb_value(w, "anon_rss_mb", k->anon_rss, k->have_kernel_rss);
	put_mb_value(w, "file_rss_mb", k->file_rss, k->have_kernel_rss);
	put_mb_value(w, "shmem_rss_mb", k->shmem_rss, k->have_kernel_rss);
	put_mb_value(w, "heap_mb", k->heap, k->have_heap);
	jsonw_key(w, "top_sites");
	jsonw_array_begin(w);
	for (size_t i = 0; i < k->n_sites; i++) {
		jsonw_object_begin(w);
		jsonw_key(w, "site");
		jsonw_string(w, k->sites[i].name);
		put_mb_value(w, "mb", k->sites[i].bytes, 1);
		jsonw_object_end(w);
	}
	jsonw_array_end(w);
	jsonw_object_end(w);
}

static void put_oom_tree(struct jsonw *w, const struct oom_kill *k)
{
	jsonw_key(w, "tree");
	if (k->tree_at_s < 0) {
		jsonw_null(w);
		return;
	}
	jsonw_object_begin(w);
	jsonw_key(w, "at_s");
	put_float(w, k->tree_at_s);
	put_mb_value(w, "cgroup_mb", k->cgroup_usage, k->have_cgroup);
	put_mb_value(w, "anon_mb", k->anon, k->have_split);
	put_mb_value(w, "page_cache_mb", k->page_cache, k->have_split);
	put_mb_value(w, "shmem_mb", k->shmem, k->have_split);
	put_mb_value(w, "kernel_mb", k->kernel, k->have_split);
	jsonw_key(w, "processes");
	jsonw_array_begin(w);
	for (size_t i = 0; i < k->n_procs; i++) {
		const struct oom_proc *p = &k->procs[i];
		jsonw_object_begin(w);
		jsonw_key(w, "pid");
		jsonw_int(w, p->pid);
		jsonw_key(w, "comm");
		jsonw_string(w, p->comm[0] ? p->comm : NULL);
		put_mb_value(w, "rss_mb", p->rss, 1);
		put_mb_value(w, "heap_mb", p->heap, p->have_heap);
		jsonw_key(w, "victim");
		jsonw_bool(w, p->victim);
		jsonw_object_end(w);
	}
	jsonw_array_end(w);
	jsonw_key(w, "processes_total");
	jsonw_uint(w, k->procs_total);
	jsonw_object_end(w);
}

/* "oom": every OOM kill of the tree; null when nothing could
 * have told one. */
static void put_oom(struct jsonw *w, const struct oom_log *o)
{
	jsonw_key(w, "oom");
	if (!o || !o->watching) {
		jsonw_null(w);
		return;
	}
	jsonw_array_begin(w);
	for (size_t i = 0; i < o->n; i++) {
		const struct oom_kill *k = &o->kills[i];
		jsonw_object_begin(w);
		jsonw_key(w, "at_s");
		put_float(w, k->at_s);
		jsonw_key(w, "woken_by");
		jsonw_string(w, oomwatch_woken_name(k->woken));
		jsonw_key(w, "after_event_ms");
		put_float_or_null(w, k->after_event_ms, k->after_event_ms >= 0);
		jsonw_key(w, "kernel_at_s");
		put_float_or_null(w, k->kernel_at_s, k->kernel_at_s > -1);
		jsonw_key(w, "source");
		jsonw_string(w, k->from_log ? "kernel_log" : "inferred");
		jsonw_key(w, "evidence");
		jsonw_string(w, k->evidence);
		put_oom_victim(w, k);
		jsonw_key(w, "limit");
		jsonw_object_begin(w);
		jsonw_key(w, "by");
		jsonw_string(w, oomlimit_by_name(k->by));
		jsonw_key(w, "cgroup");
		jsonw_string(w, k->cgroup[0] ? k->cgroup : NULL);
		put_mb_value(w, "limit_mb", k->limit, k->have_limit);
		jsonw_key(w, "constraint");
		jsonw_string(w, k->constraint[0] ? k->constraint : NULL);
		jsonw_object_end(w);
		put_oom_tree(w, k);
		jsonw_object_end(w);
	}
	jsonw_array_end(w);
	jsonw_key(w, "oom_log");
	jsonw_string(w, o->log_why ? o->log_why : "read");
	jsonw_key(w, "oom_unlisted");
	jsonw_uint(w, o->unlisted);
	jsonw_key(w, "oom_memsup_protected");
	jsonw_bool(w, o->memsup_protected);
}

static void put_containment(struct jsonw *w, const struct sup_record *r)
{
	const struct contain_info *c = r->containment;
	jsonw_key(w, "containment");
	if (!c) {
		jsonw_null(w);
	} else {
		jsonw_object_begin(w);
		jsonw_key(w, "mode");
		jsonw_string(w, c->mode);
		jsonw_key(w, "requested");
		jsonw_string(w, c->requested);
		jsonw_key(w, "kill");
		jsonw_string(w, c->kill);
		jsonw_key(w, "memory");
		jsonw_bool(w, c->memory);
		jsonw_key(w, "pids");
		jsonw_bool(w, c->pids);
		jsonw_key(w, "paths");
		jsonw_array_begin(w);
		for (size_t i = 0; i < c->n_paths; i++)
			jsonw_string(w, c->paths[i]);
		jsonw_array_end(w);
		jsonw_key(w, "missing");
		jsonw_array_begin(w);
		for (size_t i = 0; i < c->n_missing; i++)
			jsonw_string(w, c->missing[i]);
		jsonw_array_end(w);
		jsonw_key(w, "hint");
		jsonw_string(w, c->hint);
		/* the systemd scope memsup moved itself into (scope.h) */
		jsonw_key(w, "scope");
		if (c->scope[0]) {
			jsonw_object_begin(w);
			jsonw_key(w, "unit");
			jsonw_string(w, c->scope);
			jsonw_key(w, "manager");
			jsonw_string(w, c->scope_manager);
			jsonw_object_end(w);
		} else {
			jsonw_null(w);
		}
		/* cgroups the end of the run could not remove (the run's, or
		 * ones its command made below them), each with why; the
		 * count, when more were left than are named */
		jsonw_key(w, "cgroups_left");
		jsonw_array_begin(w);
		for (size_t i = 0; i < c->n_left && i < CONTAIN_MAX_LEFT; i++) {
			jsonw_object_begin(w);
			jsonw_key(w, "path");
			jsonw_string(w, c->left[i].path);
			jsonw_key(w, "why");
			jsonw_string(w, c->left[i].why);
			jsonw_object_end(w);
		}
		jsonw_array_end(w);
		jsonw_key(w, "cgroups_left_count");
		jsonw_uint(w, c->n_left);
		jsonw_object_end(w);
	}
	jsonw_key(w, "mem_max_mb");
	put_float_or_null(w, r->mem_max_mb, r->mem_max_mb > 0);
	const struct contain_figures *f = &r->cgroup;
	put_mb_or_null(w, "peak_cgroup_mb", f->peak, f->have_peak);
	jsonw_key(w, "cgroup_memory_at_end");
	if (f->have_stat) {
		jsonw_object_begin(w);
		put_mb_or_null(w, "anon_mb", f->anon, 1);
		put_mb_or_null(w, "file_mb", f->file, 1);
		put_mb_or_null(w, "kernel_mb", f->kernel, 1);
		jsonw_object_end(w);
	} else {
		jsonw_null(w);
	}
	put_count_or_null(w, "oom_kills", f->oom_kills, f->have_oom);
	put_count_or_null(w, "forks_refused", f->forks_refused, f->have_pids);
	put_oom(w, r->oom);
}

/* "records_not_believed": each record file memsup put aside, its name,
 * pid and why, up to RUNRECORD_MAX_NOT_BELIEVED of them (a command can
 * write thousands); "records_not_believed_total" counts them all, so a cut
 * list says it is one. */
static void put_not_believed(struct jsonw *w, const struct sup_record *r)
{
	char name[64];
	jsonw_key(w, "records_not_believed");
	jsonw_array_begin(w);
	for (size_t i = 0; i < r->n_not_believed && i < RUNRECORD_MAX_NOT_BELIEVED; i++) {
		const struct merge_aside *a = &r->not_believed[i];
		snprintf(name, sizeof name, "%d.%u%s", (int)a->pid, (unsigned)a->gen,
			 MT_RECORD_SUFFIX);
		jsonw_object_begin(w);
		jsonw_key(w, "file");
		jsonw_string(w, name);
		jsonw_key(w, "pid");
		jsonw_int(w, a->pid);
		jsonw_key(w, "in_tree");
		jsonw_bool(w, a->in_tree);
		jsonw_key(w, "why");
		jsonw_string(w, a->why);
		jsonw_object_end(w);
	}
	jsonw_array_end(w);
	jsonw_key(w, "records_not_believed_total");
	jsonw_uint(w, r->n_not_believed);
}

/* The keys of the record's first layout, in its order, same meaning and
 * units: what a reader of that layout still finds first. */
static void put_first_keys(struct jsonw *w, const struct sup_record *r)
{
	jsonw_key(w, "command");
	jsonw_array_begin(w);
	for (int i = 0; i < r->command_argc; i++)
		jsonw_string(w, r->command[i]);
	jsonw_array_end(w);
	jsonw_key(w, "exit_code");
	if (r->have_exit)
		jsonw_int(w, r->exit_code);
	else
		jsonw_null(w);
	jsonw_key(w, "reason");
	jsonw_string(w, runrecord_reason_name(r->reason));
	jsonw_key(w, "wall_s");
	put_float(w, r->wall_s);
	jsonw_key(w, "peak_tree_rss_mb");
	put_float(w, (double)r->peak_bytes / UNITS_MB);
	jsonw_key(w, "poll_s");
	put_float(w, r->poll_s);
	jsonw_key(w, "rss_budget_mb");
	put_float_or_null(w, r->rss_budget_mb, r->rss_budget_mb > 0);
	jsonw_key(w, "wall_budget_s");
	put_float_or_null(w, r->wall_budget_s, r->wall_budget_s > 0);
	jsonw_key(w, "scope");
	jsonw_string(w, resources_scope);
	jsonw_key(w, "limitation");
	jsonw_string(w, resources_limitation);

}

/* The processes killed at the end, and the orphans reaped during the run. */
static void put_leftovers(struct jsonw *w, const struct sup_record *r)
{
	jsonw_key(w, "leftover_processes_killed");
	jsonw_array_begin(w);
	for (size_t i = 0; i < r->n_leftovers; i++) {
		const struct sup_leftover *l = &r->leftovers[i];
		jsonw_object_begin(w);
		jsonw_key(w, "pid");
		jsonw_int(w, l->pid);
		jsonw_key(w, "argv");
		jsonw_array_begin(w);
		for (size_t s = 0; s < l->argv_len;) {
			size_t m = strnlen(l->argv + s, l->argv_len - s);
			jsonw_string_n(w, l->argv + s, m);
			s += m + 1;
		}
		jsonw_array_end(w);
		put_left_cgroups(w, l->left_cgroups);
		jsonw_object_end(w);
	}
	jsonw_array_end(w);
	jsonw_key(w, "orphans_reaped");
	jsonw_array_begin(w);
	for (size_t i = 0; i < r->n_reaped && i < RUNRECORD_MAX_REAPED; i++) {
		jsonw_object_begin(w);
		jsonw_key(w, "pid");
		jsonw_int(w, r->reaped[i].pid);
		jsonw_key(w, "exit_code");
		jsonw_int(w, r->reaped[i].exit_code);
		jsonw_object_end(w);
	}
	jsonw_array_end(w);
	jsonw_key(w, "orphans_reaped_total");
	jsonw_uint(w, r->n_reaped);
}

/* What the merged view of the processes found. */
static void put_merged_view(struct jsonw *w, const struct sup_record *r)
{
	jsonw_key(w, "traced");
	jsonw_bool(w, r->traced);
	jsonw_key(w, "processes_traced");
	jsonw_uint(w, r->processes_traced);
	jsonw_key(w, "processes_sampled");
	jsonw_uint(w, r->processes_sampled);
	jsonw_key(w, "peak_heap_mb");
	put_float_or_null(w, r->peak_heap_mb, r->peak_heap_mb >= 0);
	jsonw_key(w, "peak_mapped_mb");
	put_float_or_null(w, r->peak_mapped_mb, r->peak_mapped_mb >= 0);
	jsonw_key(w, "peak_pss_mb");
	put_float_or_null(w, r->peak_pss_mb, r->peak_pss_mb >= 0);
	/* phases: "markers", "markers_dropped", "phases" */
	phasesout_json(w, r->phases, r->wall_s, r->exit_status >= 0);
	put_not_believed(w, r);
	jsonw_key(w, "blind_spots");
	if (r->n_findings)
		findings_write_json(w, r->findings, r->n_findings);
	else {
		jsonw_array_begin(w);
		jsonw_array_end(w);
	}
}

int resources_write_json(int fd, const struct sup_record *r)
{
	struct jsonw w;
	jsonw_init(&w, fd, 2);
	jsonw_object_begin(&w);

	put_first_keys(&w, r);

	/* memsup's additions: first the answer (analyze/answer.h) */
	jsonw_key(&w, "peak_mb");
	put_float_or_null(&w, r->peak_mb, r->peak_mb >= 0);
	jsonw_key(&w, "peak_source");
	jsonw_string(&w, runrecord_peak_source_name(r->peak_source));
	jsonw_key(&w, "peak_at_s");
	put_float_or_null(&w, r->peak_source_at_s, r->peak_source_at_s >= 0);
	put_breakdown(&w, r);
	jsonw_key(&w, "max_procs_budget");
	if (r->max_procs_budget)
		jsonw_uint(&w, r->max_procs_budget);
	else
		jsonw_null(&w);
	put_max_procs_by(&w, r);
	jsonw_key(&w, "signal");
	if (r->have_exit && r->signal)
		jsonw_int(&w, r->signal);
	else
		jsonw_null(&w);
	jsonw_key(&w, "exit_status");
	if (r->exit_status >= 0)
		jsonw_int(&w, r->exit_status);
	else
		jsonw_null(&w);
	jsonw_key(&w, "error");
	jsonw_string(&w, r->error);
	jsonw_key(&w, "pid");
	if (r->pid > 0)
		jsonw_int(&w, r->pid);
	else
		jsonw_null(&w);
	jsonw_key(&w, "peak_tree_rss_at_s");
	put_float_or_null(&w, r->peak_at_s, r->peak_at_s >= 0);
	jsonw_key(&w, "samples");
	jsonw_uint(&w, r->samples);
	jsonw_key(&w, "max_processes");
	jsonw_uint(&w, r->max_processes);
	put_leftovers(&w, r);
	jsonw_key(&w, "rusage_children_maxrss_mb");
	put_float_or_null(&w, r->rusage_children_maxrss_mb, r->rusage_children_maxrss_mb >= 0);
	jsonw_key(&w, "poll_interval_p99_s");
	put_float_or_null(&w, r->poll_interval_p99_s, r->poll_interval_p99_s >= 0);
	jsonw_key(&w, "longest_gap_s");
	put_float_or_null(&w, r->longest_gap_s, r->longest_gap_s >= 0);
	jsonw_key(&w, "longest_gap_at_s");
	put_float_or_null(&w, r->longest_gap_at_s, r->longest_gap_at_s >= 0);
	put_sampling(&w, r);
	put_slurm(&w, r);
	jsonw_key(&w, "memsup_cpu_s");
	put_float_or_null(&w, r->memsup_cpu_s, r->memsup_cpu_s >= 0);
	jsonw_key(&w, "discovery");
	jsonw_string(&w, r->discovery);
	put_containment(&w, r);
	jsonw_key(&w, "notes");
	jsonw_array_begin(&w);
	for (size_t i = 0; i < r->n_notes; i++)
		jsonw_string(&w, r->notes[i]);
	jsonw_array_end(&w);
	jsonw_key(&w, "grace_s");
	put_float_or_null(&w, r->grace_s, r->grace_s > 0);
	jsonw_key(&w, "cwd");
	jsonw_string(&w, r->cwd);
	jsonw_key(&w, "env");
	put_env(&w, r->env, r->n_env);
	jsonw_key(&w, "meta");
	put_env(&w, r->meta, r->n_meta);
	jsonw_key(&w, "memsup_version");
	jsonw_string(&w, memsup_version());
	jsonw_key(&w, "started_at");
	jsonw_string(&w, r->started_at);
	jsonw_key(&w, "output");
	put_output(&w, &r->output, r->terminal);

	put_merged_view(&w, r);

	jsonw_object_end(&w);
	return jsonw_finish_line(&w);
}

/* ---- the sentinel's patch ------------------------------------------------------
 * The writer above puts each top-level key on a line of its own, indented by
 * two spaces, so `\n  "key": value,` names one key of the record and no
 * nested one (those are indented further; a string value cannot hold a raw
 * newline).  The patch replaces three such values and nothing else. */

struct patch {
	const char *from, *to;
};

/* The top-level line `"key": value,` as a needle: from the newline before
 * it to its comma, so that the needles of adjacent lines never overlap. */
static int needle(char *buf, size_t cap, const char *key, const char *value)
{
	int n = snprintf(buf, cap, "\n  \"%s\": %s,", key, value);
	return n > 0 && (size_t)n < cap ? n : -1;
}

static const char *find(const char *in, size_t len, const char *pat, size_t plen)
{
	for (size_t i = 0; i + plen <= len; i++)
		if (in[i] == pat[0] && memcmp(in + i, pat, plen) == 0)
			return in + i;
	return NULL;
}

int resources_patch_killed(const char *in, size_t len, const char *error, char **out,
			   size_t *out_len)
{
	char from[3][64], to[3][400], quoted[320];
	size_t q = 0;
	quoted[q++] = '"';
	for (const char *e = error ? error : ""; *e && q < sizeof quoted - 2; e++)
		quoted[q++] = (*e == '"' || *e == '\\' || (unsigned char)*e < 0x20) ? '?' : *e;
	quoted[q++] = '"';
	quoted[q] = '\0';
	char status[16];
	snprintf(status, sizeof status, "%d",
		 runrecord_exit_status(SUP_REASON_SUPERVISOR_KILLED, -1));
	int fl[3], tl[3];
	fl[0] = needle(from[0], sizeof from[0], "reason", "\"running\"");
	tl[0] = needle(to[0], sizeof to[0], "reason", "\"supervisor_killed\"");
	fl[1] = needle(from[1], sizeof from[1], "exit_status", "null");
	tl[1] = needle(to[1], sizeof to[1], "exit_status", status);
	fl[2] = needle(from[2], sizeof from[2], "error", "null");
	tl[2] = needle(to[2], sizeof to[2], "error", quoted);
	const char *at[3];
	for (int k = 0; k < 3; k++) {
		if (fl[k] < 0 || tl[k] < 0)
			return -EINVAL;
		at[k] = find(in, len, from[k], (size_t)fl[k]);
		if (!at[k])
			return k == 0 ? -ENOENT : -EINVAL;
	}
	/* the keys come in the writer's order: reason, exit_status, error */
	if (!(at[0] < at[1] && at[1] < at[2]))
		return -EINVAL;
	size_t n = len;
	for (int k = 0; k < 3; k++)
		n += (size_t)tl[k] - (size_t)fl[k];
	char *o = malloc(n);
	if (!o)
		return -ENOMEM;
	size_t w = 0;
	const char *p = in;
	for (int k = 0; k < 3; k++) {
		memcpy(o + w, p, (size_t)(at[k] - p));
		w += (size_t)(at[k] - p);
		memcpy(o + w, to[k], (size_t)tl[k]);
		w += (size_t)tl[k];
		p = at[k] + fl[k];
	}
	memcpy(o + w, p, (size_t)(in + len - p));
	w += (size_t)(in + len - p);
	*out = o;
	*out_len = w;
	return 0;
}
