/* oomwatch.c: the OOM autopsy (see oomwatch.h). */
#include "collect/oomwatch.h"
#include "collect/kmsg.h"
#include "collect/live.h"
#include "base/procfs.h"
#include "collect/pview.h"
#include "base/grow.h"
#include "invariant.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MB 1e6

struct oomwatch {
	struct oom_log log;
	struct oom_kill kills[OOM_MAX_KILLS];
	struct kmsg *km;
	char km_why[KMSG_WHY_BYTES + 64];
	struct oomlimit lim;
	int have_lim;
	uint64_t start_ns;
	pid_t command;
	uint64_t counted;          /* oom_kills already turned into entries */
	/* the sample before a rise: its members, copied (pview_current()
	 * is overwritten by the sample that sees the rise) */
	struct pview_peak_member *prev;
	size_t n_prev, cap_prev;
	double prev_at_s;
	uint64_t rise;             /* kills for oomwatch_after() to name */
};

const char *oomwatch_woken_name(enum oom_woken w)
{
	return w == OOM_WOKEN_EVENT ? "kernel_event" : w == OOM_WOKEN_SAMPLE ? "sample" : "end";
}

static void log_unread(struct oomwatch *w, int err)
{
	snprintf(w->km_why, sizeof w->km_why, "no kernel log (MEMSUP_KMSG is empty): %s: "
		 "victims are inferred", strerror(-err));
	w->log.log_why = w->km_why;
}

int oomwatch_open(struct oomwatch **out, const struct oomwatch_config *cfg)
{
	struct oomwatch *w = calloc(1, sizeof *w);
	if (!w)
		return -ENOMEM;
	w->log.kills = w->kills;
	const struct contain_info *ci = cfg->containment;
	if (ci && ci->memory && ci->memory_path >= 0 && (size_t)ci->memory_path < ci->n_paths)
		w->have_lim = oomlimit_open(&w->lim, ci->paths[ci->memory_path], ci->memory_v2,
					    cfg->vmstat_path) == 0;
	if (cfg->kmsg_path && !cfg->kmsg_path[0]) {
		log_unread(w, -ENOENT);
	} else {
		char why[KMSG_WHY_BYTES];
		int rc = kmsg_open(&w->km, cfg->kmsg_path, why, sizeof why);
		if (rc < 0) {
			snprintf(w->km_why, sizeof w->km_why, "%s: victims are inferred", why);
			w->log.log_why = w->km_why;
		}
	}
	w->log.watching = (ci && ci->memory) || w->km;
	*out = w;
	return 0;
}

void oomwatch_launched(struct oomwatch *w, uint64_t start_ns, pid_t command)
{
	w->start_ns = start_ns;
	w->command = command;
}

void oomwatch_protected(struct oomwatch *w, int protected)
{
	w->log.memsup_protected = protected;
}

void oomwatch_close(struct oomwatch *w)
{
	if (!w)
		return;
	kmsg_close(w->km);
	free(w->prev);
	free(w);
}

const struct oom_log *oomwatch_log(const struct oomwatch *w)
{
	return &w->log;
}

static int waits_line(const struct oomwatch *w)
{
	for (size_t i = 0; i < w->log.n; i++)
		if (w->kills[i].waits_killed_line)
			return 1;
	return 0;
}

int oomwatch_before(struct oomwatch *w, const struct contain_state *st,
		    const struct pview_peak_member *prev, size_t n_prev, double prev_at_s)
{
	w->rise = 0;
	if (st->have_events && st->oom_kills > w->counted) {
		w->rise = st->oom_kills - w->counted;
		w->counted = st->oom_kills;
		if (grow_array((void **)&w->prev, &w->cap_prev, n_prev, sizeof *w->prev) == 0) {
			if (n_prev)
				memcpy(w->prev, prev, n_prev * sizeof *prev);
			w->n_prev = n_prev;
		} else {
			w->n_prev = 0; /* named without the tree before it */
		}
		w->prev_at_s = prev_at_s;
		return 1;
	}
	return w->km && waits_line(w);
}

/* ---- the victim's identity ---------------------------------------------------- */

static const struct pview_peak_member *member_in(const struct pview_peak_member *m, size_t n,
						 pid_t pid)
{
	for (size_t i = 0; i < n; i++)
		if (m[i].pid == pid)
			return &m[i];
	return NULL;
}

/* argv[0]'s base name, the comm people would recognise */
static void comm_of(const struct pview *pv, pid_t pid, char *out, size_t cap)
{
	const struct pview_proc *p = pv ? pview_find(pv, pid) : NULL;
	out[0] = '\0';
	if (p && p->argv && p->argv_len) {
		const char *a = p->argv, *slash = strrchr(a, '/');
		snprintf(out, cap, "%s", slash && slash[1] ? slash + 1 : a);
	} else if (p && p->exe) {
		const char *slash = strrchr(p->exe, '/');
		snprintf(out, cap, "%s", slash ? slash + 1 : p->exe);
	} else {
		/* not looked at yet (a traced process is named by its record,
		 * read after the run): the kernel's name, while it lives */
		struct procfs_stat st;
		if (procfs_read_stat("/proc", pid, &st) == 0)
			snprintf(out, cap, "%s", st.comm);
	}
}

static void fill_identity(struct oomwatch *w, struct oom_kill *k, const struct pview *pv,
			  const struct live *live)
{
	const struct pview_proc *p = pv ? pview_find(pv, k->pid) : NULL;
	if (p) {
		if (p->exe)
			snprintf(k->exe, sizeof k->exe, "%s", p->exe);
		if (p->argv && p->argv_len) {
			size_t n = p->argv_len < sizeof k->argv ? p->argv_len : sizeof k->argv - 1;
			memcpy(k->argv, p->argv, n);
			k->argv[n] = '\0';
			k->argv_len = n;
		}
		if (!k->comm[0])
			comm_of(pv, k->pid, k->comm, sizeof k->comm);
	}
	/* the lineage, from the victim up its parents as the view first saw
	 * them, to the command */
	pid_t chain[OOM_MAX_LINEAGE];
	size_t n = 0;
	for (pid_t at = k->pid; at > 0 && n < OOM_MAX_LINEAGE;) {
		chain[n++] = at;
		if (at == w->command)
			break;
		const struct pview_proc *q = pv ? pview_find(pv, at) : NULL;
		if (!q || q->ppid <= 0 || q->ppid == at)
			break;
		at = q->ppid;
	}
	k->n_lineage = n;
	for (size_t i = 0; i < n; i++)
		k->lineage[i] = chain[n - 1 - i];
	/* its record's heap as it died: the record outlives the process */
	if (k->have_gen && live) {
		const struct live_rec *lr = live_find(live, k->pid, k->gen);
		if (lr && lr->map) {
			k->have_heap = 1;
			k->heap = live_heap_current(lr->map);
		}
	}
}

/* ---- the tree ----------------------------------------------------------------- */

static int by_rss_desc(const void *a, const void *b)
{
	const struct oom_proc *x = a, *y = b;
	return x->rss < y->rss ? 1 : x->rss > y->rss ? -1 : (x->pid > y->pid) - (x->pid < y->pid);
}

static void add_proc(struct oom_proc *all, size_t *n, size_t cap, const struct pview *pv,
		     const struct pview_peak_member *m, int victim)
{
	if (*n >= cap)
		return;
	struct oom_proc *p = &all[(*n)++];
	memset(p, 0, sizeof *p);
	p->pid = m->pid;
	p->rss = m->rss;
	p->have_heap = m->heap_counted;
	p->heap = m->heap;
	p->victim = victim;
	comm_of(pv, m->pid, p->comm, sizeof p->comm);
}

static void fill_tree(struct oomwatch *w, struct oom_kill *k, const struct contain_state *st,
		      const struct pview_peak_member *cur, size_t n_cur, const struct pview *pv,
		      double at_s)
{
	k->tree_at_s = at_s;
	k->have_cgroup = st && st->have_usage;
	k->cgroup_usage = st ? st->usage : 0;
	k->have_split = st && st->have_split;
	if (k->have_split) {
		k->anon = st->anon;
		k->page_cache = st->page_cache;
		k->shmem = st->shmem;
		k->kernel = st->kernel;
	}
	/* every member of the woken sample, and the victim as the sample
	 * before saw it when it has gone since (or is going: its pages are
	 * being taken away) */
	size_t cap = n_cur + w->n_prev + 1, n = 0;
	struct oom_proc stack_room[64];
	struct oom_proc *all = cap <= 64 ? stack_room : malloc(cap * sizeof *all);
	if (!all)
		return;
	const struct pview_peak_member *vprev = k->pid ? member_in(w->prev, w->n_prev, k->pid) : NULL;
	for (size_t i = 0; i < n_cur; i++) {
		if (cur[i].pid == k->pid && vprev)
			add_proc(all, &n, cap, pv, vprev, 1);
		else
			add_proc(all, &n, cap, pv, &cur[i], cur[i].pid == k->pid);
	}
	/* ... and every member of the sample before that this one no longer
	 * found: the kill came between the two, and a process that ended
	 * meanwhile (the victim's siblings, ended by a parent that saw it
	 * go) may well have been there at the kill */
	for (size_t i = 0; i < w->n_prev; i++)
		if (!member_in(cur, n_cur, w->prev[i].pid))
			add_proc(all, &n, cap, pv, &w->prev[i], w->prev[i].pid == k->pid);
	/* the victim at its kill: the kernel's own figure where the log gave
	 * one (a sample that saw the rise late, v1's global OOM which
	 * notifies no cgroup, may have read its pages half taken away) */
	for (size_t i = 0; i < n; i++)
		if (all[i].victim && k->have_kernel_rss)
			all[i].rss = k->rss;
	qsort(all, n, sizeof *all, by_rss_desc);
	k->procs_total = n;
	k->n_procs = n < OOM_MAX_PROCS ? n : OOM_MAX_PROCS;
	memcpy(k->procs, all, k->n_procs * sizeof *all);
	/* the victim is listed whatever its rank */
	for (size_t i = OOM_MAX_PROCS; i < n; i++)
		if (all[i].victim)
			k->procs[OOM_MAX_PROCS - 1] = all[i];
	if (all != stack_room)
		free(all);
}

/* ---- the limit ---------------------------------------------------------------- */

static void limit_from_log(struct oomwatch *w, struct oom_kill *k, const struct kmsg_oom *o)
{
	snprintf(k->constraint, sizeof k->constraint, "%s", o->constraint);
	if (o->global || !strcmp(o->constraint, "CONSTRAINT_NONE") ||
	    !strcmp(o->constraint, "CONSTRAINT_CPUSET") ||
	    !strcmp(o->constraint, "CONSTRAINT_MEMORY_POLICY")) {
		k->by = OOM_BY_MACHINE;
		return;
	}
	if (!o->oom_memcg[0]) {
		k->by = OOM_BY_UNKNOWN;
		return;
	}
	snprintf(k->cgroup, sizeof k->cgroup, "%s", o->oom_memcg);
	char view[PATH_MAX] = "";
	enum oomrel rel = w->have_lim ? oomlimit_relation(&w->lim, o->oom_memcg, o->task_memcg,
							  view, sizeof view)
				      : OOMREL_UNRELATED;
	k->by = rel == OOMREL_RUN ? OOM_BY_RUN : rel == OOMREL_INSIDE ? OOM_BY_INSIDE
	      : rel == OOMREL_ABOVE ? OOM_BY_ABOVE : OOM_BY_UNKNOWN;
	uint64_t limit;
	if (view[0] && oomlimit_read_limit(&w->lim, view, &limit) == 0 && limit != UINT64_MAX) {
		k->have_limit = 1;
		k->limit = limit;
	}
}

static void limit_from_counters(struct oomwatch *w, struct oom_kill *k, int use)
{
	struct oomlimit_answer a;
	if (!w->have_lim)
		return;
	oomlimit_which(&w->lim, &a); /* consumed either way: the next kill's base */
	if (!use)
		return;
	k->by = a.by;
	snprintf(k->cgroup, sizeof k->cgroup, "%s", a.cgroup);
	k->have_limit = a.have_limit;
	k->limit = a.limit;
	size_t used = strlen(k->evidence);
	snprintf(k->evidence + used, sizeof k->evidence - used, "; the limit: %s", a.evidence);
}

/* ---- entries ------------------------------------------------------------------ */

static struct oom_kill *new_kill(struct oomwatch *w)
{
	if (w->log.n >= OOM_MAX_KILLS) {
		w->log.unlisted++;
		return NULL;
	}
	struct oom_kill *k = &w->kills[w->log.n++];
	memset(k, 0, sizeof *k);
	k->after_event_ms = -1;
	k->kernel_at_s = -1;
	k->tree_at_s = -1;
	return k;
}

static int log_taken(const struct oomwatch *w, const struct kmsg_oom *o)
{
	for (size_t i = 0; i < w->log.n; i++)
		if (w->kills[i].from_log && w->kills[i].log_seq == o->seq)
			return 1;
	return 0;
}

/* A kill in the log is the run's when the victim's cgroup is the run's or
 * below it, or (no cgroup: the /proc scan) its pid was a member. */
static int log_ours(const struct oomwatch *w, const struct kmsg_oom *o, const struct pview *pv)
{
	if (o->task_memcg[0] && w->have_lim) {
		enum oomrel rel = oomlimit_relation(&w->lim, o->task_memcg, o->task_memcg, NULL, 0);
		return rel == OOMREL_RUN || rel == OOMREL_INSIDE;
	}
	return pv && o->pid > 0 && pview_find(pv, o->pid) != NULL;
}

static void take_killed_line(struct oom_kill *k, const struct kmsg_oom *o)
{
	if (!o->have_killed)
		return;
	k->have_kernel_rss = 1;
	k->anon_rss = o->anon_rss_kb * 1024;
	k->file_rss = o->file_rss_kb * 1024;
	k->shmem_rss = o->shmem_rss_kb * 1024;
	k->have_rss = 1;
	k->rss = k->anon_rss + k->file_rss + k->shmem_rss;
	k->waits_killed_line = 0;
}

static void from_log(struct oomwatch *w, struct oom_kill *k, const struct kmsg_oom *o)
{
	k->from_log = 1;
	k->log_seq = o->seq;
	k->pid = o->pid;
	snprintf(k->comm, sizeof k->comm, "%s", o->comm);
	if (o->ts_us) {
		double t = ((double)o->ts_us * 1e3 - (double)w->start_ns) / 1e9;
		k->kernel_at_s = t;
	}
	if (o->have_summary) {
		limit_from_log(w, k, o);
		snprintf(k->evidence, sizeof k->evidence, "the kernel's log: oom-kill:constraint=%s,"
			 "%s%.200s,task_memcg=%.200s,task=%s,pid=%d", o->constraint,
			 o->global ? "global_oom" : "oom_memcg=", o->global ? "" : o->oom_memcg,
			 o->task_memcg, o->comm, (int)o->pid);
	} else {
		snprintf(k->evidence, sizeof k->evidence, "the kernel's log: Killed process %d (%s), "
			 "without its oom-kill line (a memory.oom.group kill, or the line was lost)",
			 (int)o->pid, o->comm);
	}
	k->waits_killed_line = 1;
	take_killed_line(k, o);
}

/* Without the log: the member that left (or is leaving, SIGKILL pending)
 * between the two samples, the largest such, not already named. */
static int sigkill_pending(pid_t pid, char *state)
{
	char path[64], buf[4096];
	size_t len;
	*state = '?';
	snprintf(path, sizeof path, "/proc/%d/status", (int)pid);
	if (procfs_read_file(path, buf, sizeof buf - 1, &len) < 0)
		return 1; /* gone */
	buf[len] = '\0';
	const char *s = strstr(buf, "\nState:\t");
	if (s)
		*state = s[8];
	if (*state == 'Z' || *state == 'X')
		return 1;
	const char *p = strstr(buf, "\nShdPnd:\t");
	if (!p)
		return 0;
	unsigned long long mask = strtoull(p + 9, NULL, 16);
	return (mask >> 8) & 1; /* SIGKILL: bit 9 - 1 */
}

static int named_now(const struct oomwatch *w, size_t from, pid_t pid)
{
	for (size_t i = from; i < w->log.n; i++)
		if (w->kills[i].pid == pid)
			return 1;
	return 0;
}

static void inferred(struct oomwatch *w, struct oom_kill *k, size_t batch_from,
		     const struct pview_peak_member *cur, size_t n_cur, double at_s)
{
	const struct pview_peak_member *best = NULL;
	unsigned candidates = 0;
	int best_left = 0;
	for (size_t i = 0; i < w->n_prev; i++) {
		const struct pview_peak_member *m = &w->prev[i];
		char state;
		int left = !member_in(cur, n_cur, m->pid);
		if (!left && !sigkill_pending(m->pid, &state))
			continue;
		candidates++;
		if (named_now(w, batch_from, m->pid))
			continue;
		if (!best || m->rss > best->rss) {
			best = m;
			best_left = left;
		}
	}
	if (!best) {
		snprintf(k->evidence, sizeof k->evidence, "inferred: the run's oom_kill counter rose "
			 "between the samples at %.3f s and %.3f s, and no member of the first had "
			 "left or was dying by the second", w->prev_at_s, at_s);
		return;
	}
	k->pid = best->pid;
	k->have_rss = 1;
	k->rss = best->rss;
	snprintf(k->evidence, sizeof k->evidence, "inferred: the run's oom_kill counter rose between "
		 "the samples at %.3f s and %.3f s; pid %d %s by the second (%.1f MB at the first, "
		 "the largest of %u that left or were dying)", w->prev_at_s, at_s, (int)best->pid,
		 best_left ? "had left" : "was dying (SIGKILL pending)", (double)best->rss / MB,
		 candidates);
}

/* The log's new lines: the kills seen so far into *ko (how many), each
 * entry that waited for its Killed process line given it where it came;
 * `last` (the run's end): what did not come will not. */
static size_t read_log(struct oomwatch *w, const struct kmsg_oom **ko, int last)
{
	size_t nko = 0;
	*ko = NULL;
	if (w->km && kmsg_read_new(w->km) >= 0)
		nko = kmsg_kills(w->km, ko);
	for (size_t i = 0; i < w->log.n; i++) {
		struct oom_kill *k = &w->kills[i];
		for (size_t j = 0; k->waits_killed_line && j < nko; j++)
			if ((*ko)[j].seq == k->log_seq)
				take_killed_line(k, &(*ko)[j]);
		if (last)
			k->waits_killed_line = 0;
	}
	return nko;
}

void oomwatch_after(struct oomwatch *w, const struct contain_state *st,
		    const struct pview_peak_member *cur, size_t n_cur, const struct pview *pv,
		    const struct live *live, double at_s, uint64_t woke_ns, uint64_t read_ns)
{
	const struct kmsg_oom *ko;
	size_t nko = read_log(w, &ko, 0);
	size_t batch = w->log.n;
	for (uint64_t r = 0; r < w->rise; r++) {
		struct oom_kill *k = new_kill(w);
		if (!k)
			continue;
		k->at_s = at_s;
		k->woken = woke_ns ? OOM_WOKEN_EVENT : OOM_WOKEN_SAMPLE;
		if (woke_ns && read_ns >= woke_ns)
			k->after_event_ms = (double)(read_ns - woke_ns) / 1e6;
		const struct kmsg_oom *o = NULL;
		for (size_t j = 0; j < nko && !o; j++)
			if (!log_taken(w, &ko[j]) && log_ours(w, &ko[j], pv))
				o = &ko[j];
		if (o) {
			from_log(w, k, o);
			limit_from_counters(w, k, 0);
		} else {
			inferred(w, k, batch, cur, n_cur, at_s);
			limit_from_counters(w, k, 1);
		}
		const struct pview_peak_member *m = k->pid ? member_in(w->prev, w->n_prev, k->pid)
							   : NULL;
		if (m) {
			if (!k->have_rss) {
				k->have_rss = 1;
				k->rss = m->rss;
			}
			if (m->heap_counted) {
				k->have_gen = 1;
				k->gen = m->gen;
			}
		}
		fill_identity(w, k, pv, live);
		fill_tree(w, k, st, cur, n_cur, pv, at_s);
	}
	w->rise = 0;
}

void oomwatch_end(struct oomwatch *w, const struct contain_figures *f, const struct pview *pv,
		  const struct live *live, double at_s)
{
	const struct kmsg_oom *ko;
	size_t nko = read_log(w, &ko, 1);
	/* kills no sample saw: the counter's last value, or (no counter)
	 * the log's lines of the run's members */
	uint64_t left = f && f->have_oom && f->oom_kills > w->counted ? f->oom_kills - w->counted : 0;
	int by_log_only = !(f && f->have_oom);
	if (f && f->have_oom && f->oom_kills > w->counted)
		w->counted = f->oom_kills;
	for (size_t j = 0; j < nko && (left || by_log_only); j++) {
		if (log_taken(w, &ko[j]) || !log_ours(w, &ko[j], pv))
			continue;
		struct oom_kill *k = new_kill(w);
		if (!k)
			break;
		k->at_s = at_s;
		k->woken = OOM_WOKEN_END;
		from_log(w, k, &ko[j]);
		k->waits_killed_line = 0;
		fill_identity(w, k, pv, live);
		if (left)
			left--;
	}
	for (; left; left--) {
		struct oom_kill *k = new_kill(w);
		if (!k)
			continue;
		k->at_s = at_s;
		k->woken = OOM_WOKEN_END;
		snprintf(k->evidence, sizeof k->evidence, "inferred: the run's oom_kill counter was "
			 "higher at the end than at its last sample, and no sample saw the victim go");
		limit_from_counters(w, k, 1);
	}
	if (by_log_only && w->km)
		w->log.watching = 1;
}

void oomwatch_name_sites(struct oomwatch *w, oomwatch_site_fn name, void *ctx)
{
	for (size_t i = 0; i < w->log.n; i++) {
		struct oom_kill *k = &w->kills[i];
		if (k->pid > 0 && k->have_gen)
			k->n_sites = name(ctx, k->pid, k->gen, k->sites, OOM_MAX_SITES);
	}
}

void oomwatch_name_images(struct oomwatch *w, oomwatch_image_fn image, void *ctx)
{
	for (size_t i = 0; i < w->log.n; i++) {
		struct oom_kill *k = &w->kills[i];
		const char *argv = NULL, *exe = NULL;
		size_t len = 0;
		if (k->pid <= 0 || (k->argv_len && k->exe[0]) ||
		    image(ctx, k->pid, k->gen, k->have_gen, &argv, &len, &exe) != 0)
			continue;
		if (!k->argv_len && argv && len) {
			size_t n = len < sizeof k->argv ? len : sizeof k->argv - 1;
			memcpy(k->argv, argv, n);
			k->argv[n] = '\0';
			k->argv_len = n;
		}
		if (!k->exe[0] && exe)
			snprintf(k->exe, sizeof k->exe, "%s", exe);
	}
}

static const char *limit_words(const struct oom_kill *k, char *buf, size_t cap)
{
	char lim[64] = "";
	if (k->have_limit)
		snprintf(lim, sizeof lim, " of %.0f MB", (double)k->limit / MB);
	switch (k->by) {
	case OOM_BY_RUN:
		snprintf(buf, cap, "when the run's cgroup reached its limit%s", lim);
		break;
	case OOM_BY_INSIDE:
		snprintf(buf, cap, "when %s, a cgroup the command made, reached its limit%s",
			 k->cgroup, lim);
		break;
	case OOM_BY_ABOVE:
		snprintf(buf, cap, "when %s, a cgroup above the run's, reached its limit%s",
			 k->cgroup, lim);
		break;
	case OOM_BY_MACHINE:
		snprintf(buf, cap, "when the whole machine ran out of memory (the global OOM "
			 "killer%s%s)", k->constraint[0] ? ", " : "", k->constraint);
		break;
	default:
		snprintf(buf, cap, "by a limit memsup could not tell%s%s", k->cgroup[0] ? ": " : "",
			 k->cgroup);
	}
	return buf;
}

void oomwatch_sentence(const struct oom_kill *k, char *buf, size_t cap)
{
	char who[160], size[400] = "", limit[PATH_MAX + 128], tree[160] = "";
	if (k->pid > 0)
		snprintf(who, sizeof who, "pid %d '%s'", (int)k->pid, k->comm[0] ? k->comm : "?");
	else
		snprintf(who, sizeof who, "a process memsup could not name");
	int largest = k->pid > 0 && k->n_procs && k->procs[0].victim && k->procs_total > 1;
	if (k->have_rss) {
		int n = snprintf(size, sizeof size, " (%s%.1f MB", largest ? "the largest, " : "",
				 (double)k->rss / MB);
		/* the site's innermost frame: the function that asked */
		if (k->n_sites && n > 0 && (size_t)n < sizeof size) {
			const char *site = k->sites[0].name, *outer = strstr(site, " < ");
			int len = outer ? (int)(outer - site) : (int)strlen(site);
			n += snprintf(size + n, sizeof size - (size_t)n, ": %.1f MB from %.*s",
				      (double)k->sites[0].bytes / MB, len, site);
		}
		if (n > 0 && (size_t)n < sizeof size)
			snprintf(size + n, sizeof size - (size_t)n, ")");
	}
	if (k->have_cgroup)
		snprintf(tree, sizeof tree, "; the run's cgroup held %.1f MB in %zu process%s",
			 (double)k->cgroup_usage / MB, k->procs_total,
			 k->procs_total == 1 ? "" : "es");
	else if (k->procs_total)
		snprintf(tree, sizeof tree, "; the tree had %zu process%s", k->procs_total,
			 k->procs_total == 1 ? "" : "es");
	snprintf(buf, cap, "the kernel killed %s%s %s at %.3f s%s (%s)", who, size,
		 limit_words(k, limit, sizeof limit), k->at_s, tree,
		 k->from_log ? "from the kernel's log" : "inferred from the counters");
}
