/* phases.c: phase markers from the marks file and the shim, and the phases
 * they open (see phases.h). */
#include "analyze/phases.h"
#include "collect/live.h"
#include "collect/procfs.h"
#include "contain/contain.h"
#include "pidmap.h"
#include "units.h"
#include "grow.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <unistd.h>

#define PHASES_LABEL_BYTES 128u  /* labels longer than this are cut, and say so */
#define PHASES_LINE_BYTES 4096u  /* a longer line is cut at this many bytes */
#define PHASES_HEAPS 16u         /* largest traced heaps kept per marker */
#define PHASES_READ_BUDGET 65536u /* bytes of the marks file read per call */
#define PHASES_PENDING 512u      /* samples held back for late markers */
#define PHASES_SETTLE_MIN_S 0.25 /* ... for at least this long */

enum marker_source { SOURCE_FILE, SOURCE_SHIM };

struct pid_heap {
	int32_t pid;
	uint64_t heap;
};

struct marker {
	double t;                 /* seconds since the launch */
	enum marker_source source;
	int32_t pid;              /* 0: not known */
	char label[PHASES_LABEL_BYTES];
	int label_cut;
	/* the newest sample when the marker was seen */
	double sample_t;          /* < 0: no sample yet */
	uint64_t tree_rss;
	unsigned processes;
	int traced;
	uint64_t tree_heap;
	struct pid_heap heaps[PHASES_HEAPS];
	unsigned n_heaps, n_heaps_total;
	/* the marking process */
	int have_status;
	int pid_in_tree;          /* pid was a member of the tree at a sample */
	uint64_t vm_rss_kb, vm_peak_kb, vm_hwm_kb;
	int64_t maxrss_kb, maxrss_children_kb;   /* < 0: not known */
	int have_shim_figures;
	uint64_t heap_current, map_current;
	/* the phase this marker opens, from the samples after it */
	struct phase_peak {
		uint64_t samples;
		uint64_t rss;
		double rss_at_s;
		uint64_t heap;
		int have_heap;
		int seeded;       /* no sample yet: rss is the boundary's */
	} phase;
};

struct phase_log {
	int marks_fd;             /* DIR/marks, read-only */
	int ino_fd;               /* inotify on it, or -1 */
	off_t read_off;
	char line[PHASES_LINE_BYTES];
	size_t line_len;
	int line_cut;
	struct phases_sample last; /* the newest sample */
	int have_last;
	struct phase_peak before; /* "(start)": before the first marker */
	struct marker *m;
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
	char env[PATH_MAX + 16];
};

int phases_open(struct phase_log **out, int dirfd, const char *dirpath)
{
	struct phase_log *pl = calloc(1, sizeof *pl);
	if (!pl)
		return -ENOMEM;
	pl->ino_fd = -1;
	pidmap_init(&pl->members, sizeof(pid_t));
	/* 0666 (less the umask): any process of the tree, whatever it did to
	 * its credentials within the same user, can append. */
	int wfd = openat(dirfd, "marks", O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
	if (wfd < 0) {
		int err = errno;
		free(pl);
		return -err;
	}
	close(wfd);
	pl->marks_fd = openat(dirfd, "marks", O_RDONLY | O_CLOEXEC);
	if (pl->marks_fd < 0) {
		int err = errno;
		free(pl);
		return -err;
	}
	if ((size_t)snprintf(pl->env, sizeof pl->env, "MEMSUP_MARK=%s/marks", dirpath) >=
	    sizeof pl->env) {
		close(pl->marks_fd);
		free(pl);
		return -ENAMETOOLONG;
	}
	/* IN_MODIFY wakes memsup at the write, so a marker's time is when it
	 * was written, not the next sample; IN_ATTRIB|IN_DELETE_SELF would not
	 * help (the file is never replaced by writers that follow the rules). */
	pl->ino_fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
	if (pl->ino_fd >= 0 &&
	    inotify_add_watch(pl->ino_fd, pl->env + strlen("MEMSUP_MARK="), IN_MODIFY) < 0) {
		close(pl->ino_fd);
		pl->ino_fd = -1;
	}
	*out = pl;
	return 0;
}

void phases_close(struct phase_log *pl)
{
	if (!pl)
		return;
	if (pl->marks_fd >= 0)
		close(pl->marks_fd);
	if (pl->ino_fd >= 0)
		close(pl->ino_fd);
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

const char *phases_env_entry(const struct phase_log *pl)
{
	return pl->env;
}

int phases_fd(const struct phase_log *pl)
{
	return pl ? pl->ino_fd : -1;
}

size_t phases_count(const struct phase_log *pl)
{
	return pl ? pl->n : 0;
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
static void take_heaps(struct marker *mk, const struct live *live)
{
	size_t n = live ? live_active_count(live) : 0;
	for (size_t a = 0; a < n; a++) {
		const struct live_rec *lr = live_get(live, live_active_index(live, a));
		if (!lr->map || !lr->believed || live_state(lr->map) != MT_STATE_RUNNING)
			continue;
		struct pid_heap h = { lr->pid, live_heap_current(lr->map) };
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
static struct marker *marker_new(struct phase_log *pl, double t, enum marker_source src,
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
	struct marker *mk = &pl->m[at];
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
	if (pl->ino_fd < 0)
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
			struct marker *mk = marker_new(pl, t, SOURCE_SHIM, lr->pid, label,
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

/* "key=N" fields after the label. */
static int field_int(const char *f, size_t len, const char *key, int64_t *out)
{
	size_t kl = strlen(key);
	if (len <= kl + 1 || memcmp(f, key, kl) != 0 || f[kl] != '=')
		return 0;
	int64_t v = 0;
	for (size_t i = kl + 1; i < len; i++) {
		if (f[i] < '0' || f[i] > '9' || v > (INT64_MAX - 9) / 10)
			return 0;
		v = v * 10 + (f[i] - '0');
	}
	*out = v;
	return 1;
}

static void take_line(struct phase_log *pl, double t, const char *proc_root,
		      const struct live *live)
{
	const char *s = pl->line;
	size_t len = pl->line_len;
	if (len && s[len - 1] == '\r')
		len--;
	const char *tab = memchr(s, '\t', len);
	size_t label_len = tab ? (size_t)(tab - s) : len;
	int64_t pid = 0, maxrss = -1, maxrss_children = -1, mono = -1;
	for (const char *f = tab; f && f < s + len;) {
		f++;
		const char *next = memchr(f, '\t', (size_t)(s + len - f));
		size_t fl = next ? (size_t)(next - f) : (size_t)(s + len - f);
		int64_t v;
		if (field_int(f, fl, "pid", &v) && v > 0 && v <= INT32_MAX)
			pid = v;
		else if (field_int(f, fl, "maxrss_kb", &v))
			maxrss = v;
		else if (field_int(f, fl, "maxrss_children_kb", &v))
			maxrss_children = v;
		else if (field_int(f, fl, "mono_ns", &v))
			mono = v;
		f = next;
	}
	/* The writer's own CLOCK_MONOTONIC stamp (one clock for every process)
	 * is exact; trusted only between the launch and now. */
	if (mono >= 0 && pl->start_ns && (uint64_t)mono >= pl->start_ns &&
	    (double)((uint64_t)mono - pl->start_ns) / 1e9 <= t)
		t = (double)((uint64_t)mono - pl->start_ns) / 1e9;
	struct marker *mk = marker_new(pl, t, SOURCE_FILE, (int32_t)pid, s, label_len,
				       live, proc_root);
	if (!mk)
		return;
	mk->label_cut |= pl->line_cut && !tab;
	mk->maxrss_kb = maxrss;
	mk->maxrss_children_kb = maxrss_children;
}

void phases_read_file(struct phase_log *pl, double t, int final, const char *proc_root,
		      const struct live *live)
{
	char buf[4096];
	size_t budget = PHASES_READ_BUDGET;
	if (!pl)
		return;
	if (pl->ino_fd >= 0) {
		/* drain the events; the file itself says what is new */
		char ev[1024];
		while (read(pl->ino_fd, ev, sizeof ev) > 0)
			;
	}
	while (budget || final) {
		ssize_t got = pread(pl->marks_fd, buf, sizeof buf, pl->read_off);
		if (got <= 0)
			break;
		pl->read_off += got;
		if ((size_t)got < budget)
			budget -= (size_t)got;
		else
			budget = 0;
		for (ssize_t i = 0; i < got; i++) {
			if (buf[i] == '\n') {
				take_line(pl, t, proc_root, live);
				pl->line_len = 0;
				pl->line_cut = 0;
			} else if (pl->line_len < sizeof pl->line) {
				pl->line[pl->line_len++] = buf[i];
			} else {
				pl->line_cut = 1;
			}
		}
	}
	if (final && pl->line_len) {
		take_line(pl, t, proc_root, live);
		pl->line_len = 0;
	}
}

/* Microseconds: the finest any marker or sample time means. */
static void put_double(struct jsonw *w, double v)
{
	jsonw_double(w, v, 6);
}

static void put_kb(struct jsonw *w, const char *key, int have, uint64_t kb)
{
	jsonw_key(w, key);
	if (have)
		jsonw_uint(w, kb);
	else
		jsonw_null(w);
}

static void put_phase(struct jsonw *w, const char *label, double start, double end, int ended,
		      const struct phase_peak *p)
{
	jsonw_object_begin(w);
	jsonw_key(w, "label");
	jsonw_string(w, label);
	jsonw_key(w, "start_s");
	put_double(w, start);
	jsonw_key(w, "end_s");
	if (ended)
		put_double(w, end);
	else
		jsonw_null(w);
	jsonw_key(w, "samples");
	jsonw_uint(w, p->samples);
	int known = p->samples || p->seeded;
	jsonw_key(w, "peak_tree_rss");
	if (known)
		jsonw_uint(w, p->rss);
	else
		jsonw_null(w);
	jsonw_key(w, "peak_tree_rss_mb");
	if (known)
		put_double(w, (double)p->rss / UNITS_MB);
	else
		jsonw_null(w);
	jsonw_key(w, "peak_at_s");
	if (known)
		put_double(w, p->rss_at_s);
	else
		jsonw_null(w);
	jsonw_key(w, "peak_heap");
	if (p->have_heap)
		jsonw_uint(w, p->heap);
	else
		jsonw_null(w);
	jsonw_key(w, "peak_source");
	jsonw_string(w, p->samples ? "samples" : p->seeded ? "boundary_sample" : "none");
	jsonw_object_end(w);
}

void phases_write_json(struct jsonw *w, const struct phase_log *pl, double end_s, int ended)
{
	size_t n = pl ? pl->n : 0;
	jsonw_key(w, "markers");
	jsonw_array_begin(w);
	for (size_t i = 0; i < n; i++) {
		const struct marker *mk = &pl->m[i];
		jsonw_object_begin(w);
		jsonw_key(w, "t");
		put_double(w, mk->t);
		jsonw_key(w, "label");
		jsonw_string(w, mk->label);
		jsonw_key(w, "label_truncated");
		jsonw_bool(w, mk->label_cut);
		jsonw_key(w, "source");
		jsonw_string(w, mk->source == SOURCE_SHIM ? "shim" : "file");
		jsonw_key(w, "pid_in_tree");
		jsonw_bool(w, mk->pid_in_tree);
		jsonw_key(w, "pid");
		if (mk->pid > 0)
			jsonw_int(w, mk->pid);
		else
			jsonw_null(w);
		jsonw_key(w, "sample_t");
		if (mk->sample_t >= 0)
			put_double(w, mk->sample_t);
		else
			jsonw_null(w);
		jsonw_key(w, "tree_rss");
		if (mk->sample_t >= 0)
			jsonw_uint(w, mk->tree_rss);
		else
			jsonw_null(w);
		jsonw_key(w, "processes");
		jsonw_uint(w, mk->processes);
		jsonw_key(w, "tree_heap");
		if (mk->sample_t >= 0 && mk->traced)
			jsonw_uint(w, mk->tree_heap);
		else
			jsonw_null(w);
		jsonw_key(w, "heaps");
		jsonw_array_begin(w);
		for (unsigned k = 0; k < mk->n_heaps; k++) {
			jsonw_object_begin(w);
			jsonw_key(w, "pid");
			jsonw_int(w, mk->heaps[k].pid);
			jsonw_key(w, "heap");
			jsonw_uint(w, mk->heaps[k].heap);
			jsonw_object_end(w);
		}
		jsonw_array_end(w);
		jsonw_key(w, "heaps_omitted");
		jsonw_uint(w, mk->n_heaps_total - mk->n_heaps);
		jsonw_key(w, "snapshot");
		jsonw_object_begin(w);
		put_kb(w, "vm_rss_kb", mk->have_status, mk->vm_rss_kb);
		put_kb(w, "vm_peak_kb", mk->have_status, mk->vm_peak_kb);
		put_kb(w, "vm_hwm_kb", mk->have_status, mk->vm_hwm_kb);
		put_kb(w, "maxrss_kb", mk->maxrss_kb >= 0, (uint64_t)mk->maxrss_kb);
		put_kb(w, "maxrss_children_kb", mk->maxrss_children_kb >= 0,
		       (uint64_t)mk->maxrss_children_kb);
		/* where the maxrss figures come from: the shim's getrusage, or
		 * what the line's writer says of itself */
		jsonw_key(w, "maxrss_from");
		if (mk->maxrss_kb < 0 && mk->maxrss_children_kb < 0)
			jsonw_null(w);
		else
			jsonw_string(w, mk->source == SOURCE_SHIM ? "shim" : "self_reported");
		jsonw_key(w, "heap_current");
		if (mk->have_shim_figures)
			jsonw_uint(w, mk->heap_current);
		else
			jsonw_null(w);
		jsonw_key(w, "mapped_current");
		if (mk->have_shim_figures)
			jsonw_uint(w, mk->map_current);
		else
			jsonw_null(w);
		jsonw_object_end(w);
		jsonw_object_end(w);
	}
	jsonw_array_end(w);
	jsonw_key(w, "markers_dropped");
	jsonw_uint(w, pl ? pl->dropped : 0);

	jsonw_key(w, "phases");
	jsonw_array_begin(w);
	if (n) {
		put_phase(w, "(start)", 0.0, pl->m[0].t, 1, &pl->before);
		for (size_t i = 0; i < n; i++) {
			int last = i + 1 == n;
			put_phase(w, pl->m[i].label, pl->m[i].t, last ? end_s : pl->m[i + 1].t,
				  last ? ended : 1, &pl->m[i].phase);
		}
	}
	jsonw_array_end(w);
}

static void print_row(FILE *f, const char *label, double start, double end,
		      const struct phase_peak *p)
{
	fprintf(f, "memsup:   %-24.24s %9.3f %9.3f", label, start, end);
	if (p->samples || p->seeded)
		fprintf(f, " %10.1f %9.3f", (double)p->rss / UNITS_MB, p->rss_at_s);
	else
		fprintf(f, " %10s %9s", "-", "-");
	if (p->have_heap)
		fprintf(f, " %10.1f\n", (double)p->heap / UNITS_MB);
	else
		fprintf(f, " %10s\n", "-");
}

void phases_print(FILE *f, const struct phase_log *pl, double end_s)
{
	if (!pl || !pl->n)
		return;
	/* the summed RSS of the samples, named as such: the run's answer is
	 * the cgroup's, which has no per-phase peak */
	fprintf(f, "memsup: phases (the largest summed RSS and heap of the samples inside each):\n");
	fprintf(f, "memsup:   %-24s %9s %9s %10s %9s %10s\n", "phase", "start_s", "end_s",
		"rss_MB", "at_s", "heap_MB");
	print_row(f, "(start)", 0.0, pl->m[0].t, &pl->before);
	for (size_t i = 0; i < pl->n; i++)
		print_row(f, pl->m[i].label, pl->m[i].t, i + 1 < pl->n ? pl->m[i + 1].t : end_s,
			  &pl->m[i].phase);
	if (pl->dropped)
		fprintf(f, "memsup:   (%zu later markers dropped)\n", pl->dropped);
}
