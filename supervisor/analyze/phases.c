/* phases.c: phase markers from the marks file and the shim, and the phases
 * they open (see phases.h). */
#include "analyze/phases.h"
#include "collect/live.h"
#include "collect/marks.h"
#include "base/procfs.h"
#include "contain/contain.h"
#include "base/grow.h"
#include "base/pidmap.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define PHASES_PENDING 512u      /* samples held back for late markers */
#define PHASES_SETTLE_MIN_S 0.25 /* ... for at least this long */

struct phase_log {
	struct marks_file *file;  /* the marks file (collect/marks.h), or NULL */
	struct phases_sample last; /* the newest sample */
	int have_last;
	struct phase_peak before; /* "(start)": before the first marker */
	struct phase_marker *m;
	size_t n, cap;
	size_t dropped;           /* markers beyond PHASES_MAX_MARKERS */
	struct pidmap members;    /* every pid a sample found in the tree */
	uint64_t start_ns;        /* CLOCK_MONOTONIC of the launch; 0: not yet */
	double settle_s;          /* samples wait this long for late markers */
	/* Samples not yet given to a phase: a marker is seen after the moment
	 * it names (a shim slot at the next sample, a file line when memsup
	 * wakes), so a sample is placed only once it is settle_s old, by its
	 * time, among the markers known by then. */
	struct phases_sample pending[PHASES_PENDING];
	size_t pend_head, pend_n;
	uint32_t *shim_seen;      /* per live record index: markers taken */
	size_t shim_seen_cap;
};

int phases_open(struct phase_log **out, struct marks_file *file)
{
	struct phase_log *pl = calloc(1, sizeof *pl);
	if (!pl)
		return -ENOMEM;
	pl->file = file;
	pidmap_init(&pl->members, sizeof(pid_t));
	*out = pl;
	return 0;
}

void phases_close(struct phase_log *pl)
{
	if (!pl)
		return;
	free(pl->m);
	free(pl->shim_seen);
	pidmap_free(&pl->members);
	free(pl);
}

void phases_start(struct phase_log *pl, uint64_t start_ns, double poll_s)
{
	if (!pl)
		return;
	pl->start_ns = start_ns;
	/* a shim marker is found at the next sample: two periods of slack */
	pl->settle_s = 2 * poll_s > PHASES_SETTLE_MIN_S ? 2 * poll_s : PHASES_SETTLE_MIN_S;
}

int phases_fd(const struct phase_log *pl)
{
	return pl ? marks_fd(pl->file) : -1;
}

size_t phases_count(const struct phase_log *pl)
{
	return pl ? pl->n : 0;
}

const struct phase_marker *phases_markers(const struct phase_log *pl, size_t *n)
{
	*n = pl ? pl->n : 0;
	return pl ? pl->m : NULL;
}

const struct phase_peak *phases_before(const struct phase_log *pl)
{
	return pl ? &pl->before : NULL;
}

size_t phases_dropped(const struct phase_log *pl)
{
	return pl ? pl->dropped : 0;
}

static void peak_add(struct phase_peak *p, const struct phases_sample *s)
{
	if (!p->samples) {
		/* the first sample inside replaces the boundary's figures */
		p->have_heap = 0;
		p->rss = s->rss;
		p->rss_at_s = s->t;
	} else if (s->rss > p->rss) {
		p->rss = s->rss;
		p->rss_at_s = s->t;
	}
	if (s->traced && (!p->have_heap || s->heap > p->heap)) {
		p->heap = s->heap;
		p->have_heap = 1;
	}
	p->samples++;
}

/* The phase a sample at `t` belongs to: the last marker at or before it. */
static struct phase_peak *phase_at(struct phase_log *pl, double t)
{
	size_t i = pl->n;
	while (i > 0 && pl->m[i - 1].t > t)
		i--;
	return i ? &pl->m[i - 1].phase : &pl->before;
}

/* Give the pending samples older than `before` to their phases (all of
 * them with INFINITY, but one when the queue is full: see the caller). */
static void settle(struct phase_log *pl, double before)
{
	int one = before == INFINITY && pl->pend_n == PHASES_PENDING;
	while (pl->pend_n) {
		const struct phases_sample *s = &pl->pending[pl->pend_head];
		if (!(s->t < before))
			break;
		peak_add(phase_at(pl, s->t), s);
		pl->pend_head = (pl->pend_head + 1) % PHASES_PENDING;
		pl->pend_n--;
		if (one)
			break;
	}
}

void phases_finish(struct phase_log *pl)
{
	if (pl)
		settle(pl, INFINITY);
}

/* The traced heap of each running image at this moment, largest first,
 * the first PHASES_HEAPS kept. */
static void take_heaps(struct phase_marker *mk, const struct live *live)
{
	size_t n = live ? live_active_count(live) : 0;
	for (size_t a = 0; a < n; a++) {
		const struct live_rec *lr = live_get(live, live_active_index(live, a));
		if (!lr->map || !lr->believed || live_state(lr->map) != MT_STATE_RUNNING)
			continue;
		struct phase_heap h = { lr->pid, live_heap_current(lr->map) };
		mk->n_heaps_total++;
		/* insertion into a short sorted array */
		unsigned k = mk->n_heaps < PHASES_HEAPS ? mk->n_heaps++ : PHASES_HEAPS;
		if (k == PHASES_HEAPS) {
			if (h.heap <= mk->heaps[PHASES_HEAPS - 1].heap)
				continue;
			k = PHASES_HEAPS - 1;
		}
		while (k > 0 && mk->heaps[k - 1].heap < h.heap) {
			mk->heaps[k] = mk->heaps[k - 1];
			k--;
		}
		mk->heaps[k] = h;
	}
}

/* A new marker with the moment filled in, or NULL when full (counted). */
static struct phase_marker *marker_new(struct phase_log *pl, double t, enum phase_source src,
				 int32_t pid, const char *label, size_t label_len,
				 const struct live *live, const char *proc_root)
{
	if (pl->n >= PHASES_MAX_MARKERS) {
		pl->dropped++;
		return NULL;
	}
	if (grow_array((void **)&pl->m, &pl->cap, pl->n + 1, sizeof *pl->m) < 0) {
		pl->dropped++;
		return NULL;
	}
	/* kept in time order: a shim marker may name a moment before a line
	 * read from the marks file since */
	size_t at = pl->n;
	while (at > 0 && pl->m[at - 1].t > t)
		at--;
	memmove(&pl->m[at + 1], &pl->m[at], (pl->n - at) * sizeof *pl->m);
	pl->n++;
	struct phase_marker *mk = &pl->m[at];
	memset(mk, 0, sizeof *mk);
	mk->t = t;
	mk->source = src;
	mk->pid = pid;
	mk->label_cut = label_len >= PHASES_LABEL_BYTES;
	if (mk->label_cut)
		label_len = PHASES_LABEL_BYTES - 1;
	memcpy(mk->label, label, label_len);
	mk->label[label_len] = '\0';
	mk->maxrss_kb = mk->maxrss_children_kb = -1;
	mk->sample_t = -1;
	if (pl->have_last) {
		mk->sample_t = pl->last.t;
		mk->tree_rss = pl->last.rss;
		mk->processes = pl->last.processes;
		mk->traced = pl->last.traced;
		mk->tree_heap = pl->last.heap;
	}
	take_heaps(mk, live);
	/* A phase shorter than the poll period has no sample inside: it is
	 * given the one at its start (and says so), never a figure of the
	 * phase before it otherwise. */
	if (pl->have_last) {
		mk->phase.rss = pl->last.rss;
		mk->phase.rss_at_s = pl->last.t;
		mk->phase.heap = pl->last.heap;
		mk->phase.have_heap = pl->last.traced;
		mk->phase.seeded = 1;
	}
	struct procfs_status st;
	mk->pid_in_tree = pid > 0 && pidmap_find(&pl->members, pid) != NULL;
	if (mk->pid_in_tree && procfs_read_status(proc_root, pid, &st) == 0 &&
	    st.vm_rss_kb + st.vm_hwm_kb) {
		mk->have_status = 1;
		mk->vm_rss_kb = st.vm_rss_kb;
		mk->vm_peak_kb = st.vm_peak_kb;
		mk->vm_hwm_kb = st.vm_hwm_kb;
	}
	return mk;
}

void phases_on_sample(struct phase_log *pl, const struct phases_sample *s,
		      const struct live *live, uint64_t start_ns, const char *proc_root)
{
	if (!pl)
		return;
	pl->last = *s;
	pl->have_last = 1;
	for (size_t i = 0; i < s->n_members; i++) {
		int first;
		pidmap_add(&pl->members, s->members[i].pid, &first);
	}
	pl->last.members = NULL; /* the caller's array: not kept */
	pl->last.n_members = 0;
	if (pl->pend_n == PHASES_PENDING)
		settle(pl, INFINITY); /* full: place the oldest now */
	pl->pending[(pl->pend_head + pl->pend_n++) % PHASES_PENDING] = *s;
	settle(pl, s->t - pl->settle_s);
	if (phases_fd(pl) < 0)
		phases_read_file(pl, s->t, 0, proc_root, live);
	phases_scan_shim(pl, live, start_ns, proc_root);
}

void phases_scan_shim(struct phase_log *pl, const struct live *live, uint64_t start_ns,
		      const char *proc_root)
{
	if (!pl)
		return;
	size_t nl = live ? live_count(live) : 0;
	if (nl > pl->shim_seen_cap) {
		size_t old = pl->shim_seen_cap;
		if (grow_array((void **)&pl->shim_seen, &pl->shim_seen_cap, nl,
			       sizeof *pl->shim_seen) < 0)
			return; /* picked up at a later sample */
		memset(pl->shim_seen + old, 0, (pl->shim_seen_cap - old) * sizeof *pl->shim_seen);
	}
	/* the mapped records only: a folded one had its markers read when it
	 * was folded (live_fold_ended runs after this) */
	for (size_t a = 0, na = live ? live_active_count(live) : 0; a < na; a++) {
		size_t i = live_active_index(live, a);
		const struct live_rec *lr = live_get(live, i);
		if (!lr->map || !lr->believed)
			continue; /* not (yet) known to be the tree's: live_believe() */
		/* acquire: slot k is complete once marker_count > k (record.h) */
		uint32_t count = __atomic_load_n(&lr->map->marker_count, __ATOMIC_ACQUIRE);
		uint32_t seen = pl->shim_seen[i];
		if (count > seen && count > MT_MARKERS) {
			/* the shim kept no slot for those: counted, not walked */
			pl->dropped += count - (seen > MT_MARKERS ? seen : MT_MARKERS);
		}
		for (uint32_t k = seen; k < count && k < MT_MARKERS; k++) {
			const struct mt_marker *sm = &lr->map->markers[k];
			double t = sm->mono_ns >= start_ns
				? (double)(sm->mono_ns - start_ns) / 1e9 : 0.0;
			char label[MT_LABEL_BYTES];
			memcpy(label, sm->label, sizeof label);
			label[MT_LABEL_BYTES - 1] = '\0';
			struct phase_marker *mk = marker_new(pl, t, PHASE_FROM_SHIM, lr->pid, label,
						       strlen(label), live, proc_root);
			if (!mk)
				continue;
			mk->have_shim_figures = 1;
			mk->heap_current = sm->heap_current;
			mk->map_current = sm->map_current;
			const struct mt_marker_rusage *ru = &lr->map->marker_rusage[k];
			if (ru->maxrss_self_kb)
				mk->maxrss_kb = (int64_t)ru->maxrss_self_kb;
			if (ru->maxrss_self_kb || ru->maxrss_children_kb)
				mk->maxrss_children_kb = (int64_t)ru->maxrss_children_kb;
		}
		pl->shim_seen[i] = count;
	}
}

/* What phases_read_file hands marks_read: where and when the lines go. */
struct take_ctx {
	struct phase_log *pl;
	double t;
	const char *proc_root;
	const struct live *live;
};

static void take_line(void *arg, const struct marks_line *l)
{
	const struct take_ctx *c = arg;
	struct phase_log *pl = c->pl;
	double t = c->t;
	/* The writer's own CLOCK_MONOTONIC stamp (one clock for every process)
	 * is exact; trusted only between the launch and now. */
	if (l->mono_ns >= 0 && pl->start_ns && (uint64_t)l->mono_ns >= pl->start_ns &&
	    (double)((uint64_t)l->mono_ns - pl->start_ns) / 1e9 <= t)
		t = (double)((uint64_t)l->mono_ns - pl->start_ns) / 1e9;
	struct phase_marker *mk = marker_new(pl, t, PHASE_FROM_FILE, l->pid, l->label,
					     l->label_len, c->live, c->proc_root);
	if (!mk)
		return;
	mk->label_cut |= l->label_cut;
	mk->maxrss_kb = l->maxrss_kb;
	mk->maxrss_children_kb = l->maxrss_children_kb;
}

void phases_read_file(struct phase_log *pl, double t, int final, const char *proc_root,
		      const struct live *live)
{
	if (!pl)
		return;
	struct take_ctx c = { pl, t, proc_root, live };
	marks_read(pl->file, final, take_line, &c);
}
