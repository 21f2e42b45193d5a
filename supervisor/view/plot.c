/* plot.c: load an evidence directory into a struct plot_data and draw
 * timeline.svg (see plot.h; `memsup plot` itself is cmd_plot.c).
 *
 * resources.json and processes.json are read through the evidence reader
 * (evidence/read.h), the two .jsonl files line by line through timeline.h,
 * their format's one owner.
 */
#include "view/plot.h"

#include "evidence/files.h"
#include "evidence/read.h"
#include "base/grow.h"
#include "evidence/jsonr.h"
#include "evidence/oomkills.h"
#include "evidence/timeline.h"
#include "units.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>


/* A sample's "top" becomes its stack of bands, one band per entry. */
_Static_assert(TIMELINE_TOP == SVG_MAX_BANDS, "the picture stacks what the timeline keeps");

__attribute__((format(printf, 3, 4)))
static void set_err(char *err, size_t errlen, const char *fmt, ...)
{
	if (!err || !errlen)
		return;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
}

/* ---- the owned arrays --------------------------------------------------------- */

/* pid -> the largest RSS it had in a "top" (a pidmap entry) */
struct plot_pid_peak {
	pid_t pid;
	size_t seen;               /* order of first sight, for ties */
	double peak;
};

/* The loading's scaffolding: what picks and names the bands. */
static void free_loading(struct plot_set *s)
{
	free(s->stack_pid);
	free(s->stack_cmd);
	s->stack_pid = s->stack_cmd = NULL;
	free(s->proc_cmd);
	s->proc_cmd = NULL;
	free(s->cmd_lane);
	free(s->cmd_images);
	free(s->by_pid);
	s->cmd_lane = s->cmd_images = s->by_pid = NULL;
	pidmap_free(&s->peaks);
	pidmap_free(&s->cmd_peaks);
}

void plot_set_free(struct plot_set *s)
{
	free_loading(s);
	free(s->rss);
	free(s->heap);
	free(s->cgroup);
	free(s->pss);
	free(s->kernel);
	free(s->events);
	free(s->procs);
	free(s->proc_pid);
	free(s->proc_argv0);
	free(s->stack);
	free(s->markers);
	free(s->starts);
	free(s->exits);
	free(s->title);
	free(s->subtitle);
	for (size_t i = 0; i < s->n_strings; i++)
		free(s->strings[i]);
	free(s->strings);
	memset(s, 0, sizeof *s);
}

/* Append (t, v), keeping every `stride`-th pair: at PLOT_MAX_POINTS the
 * series is halved (each pair keeps its larger value, an unknown value
 * counting as smallest) and the stride doubles, so memory stays bounded and
 * spikes survive. */
static int push_point(struct plot_point **arr, size_t *n, size_t *cap, size_t *stride,
		      size_t *pending, double t, double v)
{
	if (*stride == 0)
		*stride = 1;
	if (*pending) {
		/* merging into the last point until the stride is full */
		struct plot_point *last = &(*arr)[*n - 1];
		if (v > last->v) {
			last->v = v;
			last->t = t;
		}
		if (++*pending == *stride)
			*pending = 0;
		return 0;
	}
	if (*n == PLOT_MAX_POINTS) {
		for (size_t i = 0; i < *n / 2; i++) {
			struct plot_point a = (*arr)[2 * i], b = (*arr)[2 * i + 1];
			(*arr)[i] = b.v > a.v ? b : a;
		}
		*n /= 2;
		*stride *= 2;
	}
	if (grow_array((void **)arr, cap, *n + 1, sizeof **arr) < 0)
		return -ENOMEM;
	(*arr)[(*n)++] = (struct plot_point){ t, v };
	if (*stride > 1)
		*pending = 1;
	return 0;
}

static char *keep_string(struct plot_set *s, char *str);

/* The largest bytes a key (a pid, a command) had in one sample, and when
 * it was first seen. */
static int peak_note(struct pidmap *m, int key, double bytes)
{
	int first;
	struct plot_pid_peak *e = pidmap_add(m, key, &first);
	if (!e)
		return -ENOMEM;
	if (first) {
		e->seen = m->used - 1;
		e->peak = bytes;
	} else if (bytes > e->peak)
		e->peak = bytes;
	return 0;
}

/* ---- commands ------------------------------------------------------------------ */

static const struct plot_set *sort_set; /* for the qsort comparisons below */

static int lane_by_name(const void *a, const void *b)
{
	size_t x = *(const size_t *)a, y = *(const size_t *)b;
	int c = strcmp(sort_set->proc_argv0[x], sort_set->proc_argv0[y]);
	return c ? c : x < y ? -1 : x > y;
}

static int lane_by_pid(const void *a, const void *b)
{
	size_t x = *(const size_t *)a, y = *(const size_t *)b;
	const struct plot_set *s = sort_set;
	if (s->proc_pid[x] != s->proc_pid[y])
		return s->proc_pid[x] < s->proc_pid[y] ? -1 : 1;
	if (s->procs[x].first_s != s->procs[y].first_s)
		return s->procs[x].first_s < s->procs[y].first_s ? -1 : 1;
	return x < y ? -1 : x > y;
}

/* Each lane's command (its program name: 1 + the index of the distinct
 * name, in order of the name's first lane; 0 for none), and the lanes by
 * pid and first sample, for command_of().  Once, after processes.json,
 * before the samples.  -ENOMEM. */
static int index_commands(struct plot_set *s)
{
	size_t n = s->d.n_procs;
	if (!n)
		return 0;
	size_t *by_name = malloc(n * sizeof *by_name);
	s->proc_cmd = calloc(n, sizeof *s->proc_cmd);
	s->by_pid = malloc(n * sizeof *s->by_pid);
	s->cmd_lane = malloc(n * sizeof *s->cmd_lane);
	s->cmd_images = calloc(n, sizeof *s->cmd_images);
	if (!by_name || !s->proc_cmd || !s->by_pid || !s->cmd_lane || !s->cmd_images) {
		free(by_name);
		return -ENOMEM;
	}
	size_t named = 0;
	for (size_t i = 0; i < n; i++) {
		s->by_pid[i] = i;
		if (s->proc_argv0[i] && *s->proc_argv0[i])
			by_name[named++] = i;
	}
	sort_set = s;
	qsort(by_name, named, sizeof *by_name, lane_by_name);
	qsort(s->by_pid, n, sizeof *s->by_pid, lane_by_pid);
	/* ids in the names' order (equal names are ordered by lane, so the
	 * first of a run is the command's first lane) */
	for (size_t i = 0; i < named;) {
		size_t j = i;
		while (j < named && strcmp(s->proc_argv0[by_name[i]], s->proc_argv0[by_name[j]]) == 0)
			j++;
		s->cmd_lane[s->n_cmds] = by_name[i]; /* the lowest lane: sorted by lane within */
		s->cmd_images[s->n_cmds] = j - i;
		s->n_cmds++;
		for (size_t k = i; k < j; k++)
			s->proc_cmd[by_name[k]] = (int)s->n_cmds;
		i = j;
	}
	free(by_name);
	return 0;
}

/* The command key of pid at time t: the command of the last image of that
 * pid that was first seen by then (processes.json keeps microseconds, the
 * samples nanoseconds: 10 us of slack), or of its first image; n_cmds + 1
 * ("(unnamed)") for a pid no image names. */
static int command_of(const struct plot_set *s, int pid, double t)
{
	int unnamed = (int)s->n_cmds + 1;
	size_t lo = 0, hi = s->by_pid ? s->d.n_procs : 0;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (s->proc_pid[s->by_pid[mid]] < pid)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (!s->by_pid || lo == s->d.n_procs || s->proc_pid[s->by_pid[lo]] != pid)
		return unnamed;
	size_t pick = s->by_pid[lo];
	for (size_t i = lo + 1; i < s->d.n_procs && s->proc_pid[s->by_pid[i]] == pid &&
				s->procs[s->by_pid[i]].first_s <= t + 1e-5; i++)
		pick = s->by_pid[i];
	return s->proc_cmd[pick] ? s->proc_cmd[pick] : unnamed;
}

static void stack_put(struct plot_set *s, size_t i, const struct timeline_point *x,
		      const int *cmd)
{
	struct plot_stack *st = &s->stack[i];
	int *pid = &s->stack_pid[i * SVG_MAX_BANDS];
	int *key = &s->stack_cmd[i * SVG_MAX_BANDS];
	memset(st, 0, sizeof *st);
	st->t = x->t;
	st->rss = x->rss;
	for (size_t j = 0; j < SVG_MAX_BANDS; j++) {
		pid[j] = j < x->n_top ? x->pid[j] : 0;
		key[j] = j < x->n_top ? cmd[j] : 0;
		st->band[j] = j < x->n_top ? x->bytes[j] : 0;
	}
}

/* A sample with "top": its pids' and its commands' peaks noted, the sample
 * kept like push_point() keeps points (every stride-th; at PLOT_MAX_STACK
 * pairs halve, each keeping the sample with the larger tree RSS, whole). */
static int push_stack(struct plot_set *s, size_t *pending, const struct timeline_point *x)
{
	if (!(x->rss >= 0) || !isfinite(x->rss) || !isfinite(x->t))
		return 0;
	int cmd[SVG_MAX_BANDS] = { 0 };
	for (size_t j = 0; j < x->n_top; j++) {
		if (peak_note(&s->peaks, x->pid[j], x->bytes[j]) < 0)
			return -ENOMEM;
		cmd[j] = command_of(s, x->pid[j], x->t);
	}
	/* a command's bytes at this sample: its entries summed (noted once,
	 * at its first entry) */
	for (size_t j = 0; j < x->n_top; j++) {
		double sum = 0;
		size_t k = 0;
		while (k < j && cmd[k] != cmd[j])
			k++;
		if (k < j)
			continue;
		for (k = j; k < x->n_top; k++)
			if (cmd[k] == cmd[j])
				sum += x->bytes[k];
		if (peak_note(&s->cmd_peaks, cmd[j], sum) < 0)
			return -ENOMEM;
	}
	if (s->stride_stack == 0)
		s->stride_stack = 1;
	if (*pending) {
		if (x->rss > s->stack[s->d.n_stack - 1].rss)
			stack_put(s, s->d.n_stack - 1, x, cmd);
		if (++*pending == s->stride_stack)
			*pending = 0;
		return 0;
	}
	if (s->d.n_stack == PLOT_MAX_STACK) {
		for (size_t i = 0; i < s->d.n_stack / 2; i++) {
			size_t k = s->stack[2 * i + 1].rss > s->stack[2 * i].rss ? 2 * i + 1 : 2 * i;
			s->stack[i] = s->stack[k];
			memmove(&s->stack_pid[i * SVG_MAX_BANDS], &s->stack_pid[k * SVG_MAX_BANDS],
				SVG_MAX_BANDS * sizeof *s->stack_pid);
			memmove(&s->stack_cmd[i * SVG_MAX_BANDS], &s->stack_cmd[k * SVG_MAX_BANDS],
				SVG_MAX_BANDS * sizeof *s->stack_cmd);
		}
		s->d.n_stack /= 2;
		s->stride_stack *= 2;
	}
	if (s->d.n_stack == s->cap_stack) {
		size_t cap = s->cap_stack ? 2 * s->cap_stack : 1024;
		struct plot_stack *a = realloc(s->stack, cap * sizeof *a);
		if (a)
			s->stack = a;
		int *b = a ? realloc(s->stack_pid, cap * SVG_MAX_BANDS * sizeof *b) : NULL;
		if (b)
			s->stack_pid = b;
		int *c = b ? realloc(s->stack_cmd, cap * SVG_MAX_BANDS * sizeof *c) : NULL;
		if (!c)
			return -ENOMEM;
		s->stack_cmd = c;
		s->cap_stack = cap;
	}
	stack_put(s, s->d.n_stack++, x, cmd);
	if (s->stride_stack > 1)
		*pending = 1;
	return 0;
}

static int peak_cmp(const void *a, const void *b)
{
	const struct plot_pid_peak *x = a, *y = b;
	if (x->peak != y->peak)
		return x->peak > y->peak ? -1 : 1;
	return x->seen < y->seen ? -1 : x->seen > y->seen;
}

/* A band's name: "pid N program" for a pid (the image that held the most
 * under that pid names it: one that exec'd has several), or for a command
 * one image ran; "cc1 (412 processes)" for a command more did.  Lanes of
 * the band's processes get its colour (band: 1 + its index). */
static char *band_label(struct plot_set *s, int by_cmd, int key, unsigned band)
{
	char *label = malloc(160);
	if (!label)
		return NULL;
	if (by_cmd && key >= 1 && (size_t)key <= s->n_cmds) {
		size_t c = (size_t)key - 1, lane = s->cmd_lane[c];
		for (size_t i = 0; i < s->d.n_procs; i++)
			if (s->proc_cmd[i] == key)
				s->procs[i].band = band;
		if (s->cmd_images[c] == 1)
			snprintf(label, 160, "pid %d %s", s->proc_pid[lane], s->proc_argv0[lane]);
		else
			snprintf(label, 160, "%s (%zu processes)", s->proc_argv0[lane], s->cmd_images[c]);
		return label;
	}
	if (by_cmd) {
		snprintf(label, 160, "(unnamed)");
		return label;
	}
	const char *name = NULL;
	double best = -1;
	for (size_t i = 0; i < s->d.n_procs; i++) {
		if (s->proc_pid[i] != key)
			continue;
		s->procs[i].band = band;
		if (s->procs[i].peak_bytes > best) {
			best = s->procs[i].peak_bytes;
			name = s->proc_argv0[i];
		}
	}
	snprintf(label, 160, "pid %d%s%s", key, name && *name ? " " : "", name ? name : "");
	return label;
}

/* The bands (plot.h says the rule): the SVG_MAX_BANDS keys -- pids, or
 * commands when more pids than bands appear -- with the largest peaks, in
 * the order they were first seen (band 0 at the bottom); each sample's
 * "top" becomes the bytes of those keys (0 for a band not in it). */
static int choose_bands(struct plot_set *s)
{
	if (!s->d.n_stack || !s->peaks.used)
		return 0;
	int by_cmd = s->peaks.used > SVG_MAX_BANDS && s->n_cmds > 0;
	const struct pidmap *m = by_cmd ? &s->cmd_peaks : &s->peaks;
	const int *keys = by_cmd ? s->stack_cmd : s->stack_pid;
	size_t n = 0;
	struct plot_pid_peak *pk = malloc(m->used * sizeof *pk);
	if (!pk)
		return -ENOMEM;
	for (size_t i = 0; i < m->cap; i++) {
		const struct plot_pid_peak *e = pidmap_slot(m, i);
		if (e)
			pk[n++] = *e;
	}
	qsort(pk, n, sizeof *pk, peak_cmp);
	int band_key[SVG_MAX_BANDS];
	size_t nb = 0;
	while (nb < SVG_MAX_BANDS && nb < n && pk[nb].peak > 0)
		nb++;
	/* chosen by peak, stacked by first sight: a process that came
	 * later lands on top of the ones before it, and no band is lifted
	 * off the axis when a larger one starts under it */
	for (size_t i = 1; i < nb; i++)
		for (size_t j = i; j > 0 && pk[j].seen < pk[j - 1].seen; j--) {
			struct plot_pid_peak tmp = pk[j];
			pk[j] = pk[j - 1];
			pk[j - 1] = tmp;
		}
	for (size_t k = 0; k < nb; k++)
		band_key[k] = pk[k].pid;
	free(pk);
	for (size_t i = 0; i < s->d.n_stack; i++) {
		double v[SVG_MAX_BANDS] = { 0 };
		const int *key = &keys[i * SVG_MAX_BANDS];
		for (size_t j = 0; j < SVG_MAX_BANDS; j++)
			for (size_t k = 0; key[j] && k < nb; k++)
				if (key[j] == band_key[k])
					v[k] += s->stack[i].band[j];
		memcpy(s->stack[i].band, v, sizeof v);
	}
	for (size_t k = 0; k < nb; k++)
		s->d.band_labels[k] = keep_string(s, band_label(s, by_cmd, band_key[k], (unsigned)k + 1));
	s->d.n_bands = nb;
	s->d.bands_by_command = by_cmd;
	return 0;
}

static char *keep_string(struct plot_set *s, char *str)
{
	if (!str)
		return NULL;
	char **k = realloc(s->strings, (s->n_strings + 1) * sizeof *k);
	if (!k) {
		free(str);
		return NULL;
	}
	s->strings = k;
	s->strings[s->n_strings++] = str;
	return str;
}

/* ---- files ------------------------------------------------------------------- */

struct series_ctx {
	struct plot_set *s;
	size_t pending_rss, pending_heap, pending_stack, pending_cgroup, pending_kernel, pending_pss;
	int want_rss, want_heap;
	int cgroup_seen;           /* a sample had "cgroup": later ones without
				      it are gaps in its line */
	double limit_hits, oom_kills; /* the counters as last seen */
};

/* The total a sample of the split is judged by when thinning and when
 * drawing: the cgroup's usage, or its parts summed. */
static double kernel_total(const struct plot_kernel *k)
{
	if (k->total >= 0)
		return k->total;
	double sum = 0;
	for (size_t j = 0; j < SVG_KERNEL_PARTS; j++)
		if (k->part[j] > 0)
			sum += k->part[j];
	return sum;
}

/* A sample of the cgroup's memory.stat split, kept like push_stack() keeps
 * the breakdown (every stride-th; at PLOT_MAX_STACK pairs halve, each
 * keeping the sample with the larger usage). */
static int push_kernel(struct plot_set *s, size_t *pending, const struct timeline_point *x)
{
	struct plot_kernel k = { x->t, x->cgroup,
				 { x->cgroup_anon, x->cgroup_page_cache, x->cgroup_shmem,
				   x->cgroup_kernel } };
	if (s->stride_kernel == 0)
		s->stride_kernel = 1;
	if (*pending) {
		struct plot_kernel *last = &s->kernel[s->d.n_kernel - 1];
		if (kernel_total(&k) > kernel_total(last))
			*last = k;
		if (++*pending == s->stride_kernel)
			*pending = 0;
		return 0;
	}
	if (s->d.n_kernel == PLOT_MAX_STACK) {
		for (size_t i = 0; i < s->d.n_kernel / 2; i++) {
			const struct plot_kernel *a = &s->kernel[2 * i], *b = &s->kernel[2 * i + 1];
			s->kernel[i] = kernel_total(b) > kernel_total(a) ? *b : *a;
		}
		s->d.n_kernel /= 2;
		s->stride_kernel *= 2;
	}
	if (grow_array((void **)&s->kernel, &s->cap_kernel, s->d.n_kernel + 1, sizeof *s->kernel) < 0)
		return -ENOMEM;
	s->kernel[s->d.n_kernel++] = k;
	if (s->stride_kernel > 1)
		*pending = 1;
	return 0;
}

/* The limit's counters at this sample: where one rose since the last
 * sample that had it (from 0: they count since the run began), an event.
 * Past PLOT_MAX_STACK events, pairs merge: the first's time, the rises
 * summed (the picture draws one mark a pixel column anyway). */
static int note_events(struct plot_set *s, struct series_ctx *c, const struct timeline_point *x)
{
	double up_l = 0, up_o = 0;
	if (x->cgroup_limit_hits >= 0) {
		if (x->cgroup_limit_hits > c->limit_hits)
			up_l = x->cgroup_limit_hits - c->limit_hits;
		c->limit_hits = x->cgroup_limit_hits;
	}
	if (x->cgroup_oom_kills >= 0) {
		if (x->cgroup_oom_kills > c->oom_kills)
			up_o = x->cgroup_oom_kills - c->oom_kills;
		c->oom_kills = x->cgroup_oom_kills;
	}
	if (!(up_l > 0) && !(up_o > 0))
		return 0;
	if (s->d.n_events == PLOT_MAX_STACK) {
		for (size_t i = 0; i < s->d.n_events / 2; i++) {
			struct plot_event a = s->events[2 * i], b = s->events[2 * i + 1];
			a.limit_hits += b.limit_hits;
			a.oom_kills += b.oom_kills;
			s->events[i] = a;
		}
		s->d.n_events /= 2;
	}
	if (grow_array((void **)&s->events, &s->cap_events, s->d.n_events + 1, sizeof *s->events) < 0)
		return -ENOMEM;
	s->events[s->d.n_events++] = (struct plot_event){ x->t, up_l, up_o };
	return 0;
}

static int event_by_time(const void *a, const void *b)
{
	double x = ((const struct plot_event *)a)->t, y = ((const struct plot_event *)b)->t;
	return (x > y) - (x < y);
}

/* When the samples counted no OOM kill (no memory cgroup: the kernel's log
 * named it), a mark of its own for each kill the record lists, at its
 * time, so that the picture shows what the record says.  -ENOMEM. */
static int oom_events_from_record(struct plot_set *s)
{
	for (size_t i = 0; i < s->d.n_events; i++)
		if (s->events[i].oom_kills > 0)
			return 0;
	if (!s->d.n_ooms)
		return 0;
	for (size_t j = 0; j < s->d.n_ooms; j++) {
		/* a time off the run's is a forged one: no mark off the axis */
		if (s->ooms[j].t < 0 || (s->d.t_end > 0 && s->ooms[j].t > s->d.t_end))
			continue;
		if (grow_array((void **)&s->events, &s->cap_events, s->d.n_events + 1, sizeof *s->events) < 0)
			return -ENOMEM;
		s->events[s->d.n_events++] = (struct plot_event){ s->ooms[j].t, 0, 1 };
	}
	/* in time order again: the limit's events and these */
	qsort(s->events, s->d.n_events, sizeof *s->events, event_by_time);
	return 0;
}

/* rss.jsonl: one point of the RSS series per sample; a line that is not
 * a sample (torn, cut by a full disk) is skipped. */
static int rss_line(void *ctx, const char *line, size_t len, int whole)
{
	struct series_ctx *c = ctx;
	struct plot_set *s = c->s;
	double t, v;
	if (timeline_parse_rss(line, len, whole, &t, &v) < 0)
		return 0;
	return push_point(&s->rss, &s->d.n_rss, &s->cap_rss, &s->stride_rss, &c->pending_rss, t, v);
}

/* timeline.jsonl: the heap series, the RSS series when rss.jsonl had none,
 * the Pss points, the cgroup's usage, split and limit events, and the
 * breakdown of the bands. */
static int tl_line(void *ctx, const char *line, size_t len, int whole)
{
	struct series_ctx *c = ctx;
	struct plot_set *s = c->s;
	struct timeline_point x;
	if (timeline_parse_sample(line, len, whole, &x) < 0)
		return 0;
	int rc = 0;
	if (c->want_rss && x.rss >= 0)
		rc = push_point(&s->rss, &s->d.n_rss, &s->cap_rss, &s->stride_rss,
				&c->pending_rss, x.t, x.rss);
	if (rc == 0 && c->want_heap)
		rc = push_point(&s->heap, &s->d.n_heap, &s->cap_heap, &s->stride_heap,
				&c->pending_heap, x.t, x.heap);
	/* Pss only where it was read: points, not a line with gaps */
	if (rc == 0 && x.pss >= 0)
		rc = push_point(&s->pss, &s->d.n_pss, &s->cap_pss, &s->stride_pss, &c->pending_pss,
				x.t, x.pss);
	if (rc == 0 && (x.cgroup >= 0 || c->cgroup_seen)) {
		c->cgroup_seen = 1;
		rc = push_point(&s->cgroup, &s->d.n_cgroup, &s->cap_cgroup, &s->stride_cgroup,
				&c->pending_cgroup, x.t, x.cgroup);
	}
	if (rc == 0 && (x.cgroup_anon >= 0 || x.cgroup_page_cache >= 0 || x.cgroup_shmem >= 0 ||
			x.cgroup_kernel >= 0))
		rc = push_kernel(s, &c->pending_kernel, &x);
	if (rc == 0)
		rc = note_events(s, c, &x);
	/* only lines with "top" make the stack: older evidence keeps no
	 * breakdown in memory, and draws one area */
	if (rc == 0 && x.has_top)
		rc = push_stack(s, &c->pending_stack, &x);
	return rc;
}

/* "cmd arg arg" from a JSON array of strings. */
static char *join_strings(const struct jsonr_value *arr, size_t max)
{
	size_t len = 0;
	char *out = malloc(max + 1);
	if (!out)
		return NULL;
	for (size_t i = 0; arr && arr->type == JSONR_ARRAY && i < arr->n; i++) {
		const char *a = jsonr_str(&arr->items[i], NULL);
		if (!a)
			continue;
		if (i == 0) {
			/* the program's name, not its path */
			const char *slash = strrchr(a, '/');
			if (slash && slash[1])
				a = slash + 1;
		}
		size_t n = strlen(a);
		if (len && len < max)
			out[len++] = ' ';
		if (n > max - len)
			n = max - len;
		memcpy(out + len, a, n);
		len += n;
	}
	out[len] = '\0';
	return out;
}

/* "rss_budget_exceeded, exit 123, 3.21 s": how the run ended, or NULL.
 * Integer arithmetic for the seconds: no locale decides the decimal point. */
static char *ended(const struct evidence_run *r)
{
	char buf[256], exit_s[48] = "", wall_s[48] = "";
	const char *reason = r->reason;
	double code = r->exit_code, wall = isnan(r->wall_s) ? -1 : r->wall_s;
	if (r->signal)
		snprintf(exit_s, sizeof exit_s, "signal %d", r->signal);
	else if (isfinite(code) && code > -256 && code < 256)
		snprintf(exit_s, sizeof exit_s, "exit %d", (int)code);
	if (wall >= 0 && wall < 1e9) {
		long long cs = (long long)(wall * 100 + 0.5);
		snprintf(wall_s, sizeof wall_s, "%lld.%02lld s", cs / 100, cs % 100);
	}
	snprintf(buf, sizeof buf, "%s%s%s%s%s", reason ? reason : "", reason && *exit_s ? ", " : "",
		 exit_s, (reason || *exit_s) && *wall_s ? ", " : "", wall_s);
	return buf[0] ? strdup(buf) : NULL;
}

/* A figure in MB as bytes; 0 for none. */
static double mb_bytes(double mb)
{
	return mb > 0 ? mb * UNITS_MB : 0;
}

static void load_resources(struct plot_set *s, const struct evidence_run *r)
{
	char *cmd = join_strings(r->command, 400);
	if (cmd && *cmd) {
		size_t n = strlen(cmd) + 16;
		s->title = malloc(n);
		if (s->title)
			snprintf(s->title, n, "memsup: %s", cmd);
	}
	free(cmd);
	s->subtitle = ended(r);
	s->d.budget_bytes = mb_bytes(r->rss_budget_mb);
	s->d.cgroup_hwm_bytes = mb_bytes(r->cgroup_mb);
	s->d.pss_at_peak_bytes = mb_bytes(r->pss_mb);
	/* a record without a sample count (an older memsup's) had samples */
	if (r->rss_mb >= 0 && r->rss_at_s >= 0 && r->samples != 0) {
		s->d.have_peak = 1;
		s->d.peak_bytes = r->rss_mb * UNITS_MB;
		s->d.peak_t = r->rss_at_s;
	}
	s->d.t_end = isnan(r->wall_s) ? 0 : r->wall_s;

	/* the OOM kills' victims; a forged list names no one (report and
	 * diff say what is wrong with it: a picture draws what is there) */
	const struct oomkills *k = &r->oom;
	for (size_t i = 0; i < k->n && s->d.n_ooms < SVG_MAX_OOMS; i++) {
		char v[160];
		if (!isfinite(k->v[i].at_s))
			continue;
		oomkills_victim_text(&k->v[i], v, sizeof v);
		s->ooms[s->d.n_ooms++] = (struct plot_oom){ k->v[i].at_s, keep_string(s, strdup(v)) };
	}

	/* markers; else the starts of the phases */
	if (!r->n_marks || !(s->markers = calloc(r->n_marks, sizeof *s->markers)))
		return;
	for (size_t i = 0; i < r->n_marks; i++) {
		s->markers[s->d.n_markers].t = r->marks[i].t;
		s->markers[s->d.n_markers].label = keep_string(s, strdup(r->marks[i].label));
		s->d.n_markers++;
	}
}

/* Room for `need` lanes in the three arrays that describe them, which
 * share one capacity (cap_procs).  0, or -ENOMEM (the arrays as they were,
 * each at least as large as cap_procs says). */
static int grow_lanes(struct plot_set *s, size_t need)
{
	size_t cap_procs = s->cap_procs, cap_pid = s->cap_procs, cap_argv0 = s->cap_procs;
	if (grow_array((void **)&s->procs, &cap_procs, need, sizeof *s->procs) < 0 ||
	    grow_array((void **)&s->proc_pid, &cap_pid, need, sizeof *s->proc_pid) < 0 ||
	    grow_array((void **)&s->proc_argv0, &cap_argv0, need, sizeof *s->proc_argv0) < 0)
		return -ENOMEM;
	s->cap_procs = cap_procs;
	return 0;
}

/* One image of processes.json (evidence_read_processes hands them over
 * one at a time: the file of a run of 100,000 images is never a tree at
 * once).  0, or -ENOMEM. */
static int load_process(const struct evidence_process *p, void *ctx)
{
	struct plot_set *s = ctx;
	size_t n = s->d.n_procs;
	if (grow_array((void **)&s->starts, &s->cap_starts, s->d.n_starts + 1, sizeof *s->starts) < 0 ||
	    grow_array((void **)&s->exits, &s->cap_exits, s->d.n_exits + 1, sizeof *s->exits) < 0)
		return -ENOMEM;
	double first = p->first_seen_s, last = p->last_seen_s;
	if (isfinite(p->start_s))
		s->starts[s->d.n_starts++] = p->start_s;
	if (isfinite(p->end_s))
		s->exits[s->d.n_exits++] = p->end_s;
	if (!isfinite(first) || !isfinite(last))
		return 0; /* never sampled: no lane */
	if (grow_lanes(s, n + 1) < 0)
		return -ENOMEM;
	char *argv = join_strings(p->argv, 120);
	char *label = malloc(160);
	double pid = p->pid >= 0 ? (double)p->pid : 0;
	if (label)
		snprintf(label, 160, "pid %.0f %s", pid, argv ? argv : "");
	free(argv);
	/* the program's name alone, for a band's legend */
	const char *a0 = jsonr_str(jsonr_at(p->argv, 0), NULL);
	const char *slash = a0 ? strrchr(a0, '/') : NULL;
	if (slash && slash[1])
		a0 = slash + 1;
	s->proc_pid[n] = pid >= 1 && pid <= INT_MAX ? (int)pid : 0;
	s->proc_argv0[n] = a0 ? keep_string(s, strndup(a0, 80)) : NULL;
	struct plot_proc *pp = &s->procs[n];
	memset(pp, 0, sizeof *pp);
	pp->label = keep_string(s, label);
	pp->first_s = first;
	pp->last_s = last;
	pp->peak_bytes = p->polled_peak_bytes > 0 ? p->polled_peak_bytes : 0;
	pp->peak_at_s = p->polled_peak_at_s;
	s->d.n_procs = n + 1;
	return 0;
}

int plot_load(int dirfd, struct plot_set *s, char *err, size_t errlen)
{
	struct evidence_run run;
	char why[256] = "";
	int found = 0, readable = 0, f, rc;
	memset(s, 0, sizeof *s);
	pidmap_init(&s->peaks, sizeof(struct plot_pid_peak));
	pidmap_init(&s->cmd_peaks, sizeof(struct plot_pid_peak));

	if (evidence_read_run(dirfd, &run, why, sizeof why) == 0) {
		found = readable = 1;
		load_resources(s, &run);
	} else if (faccessat(dirfd, EVIDENCE_RESOURCES, F_OK, 0) == 0) {
		found = 1; /* there but unreadable (torn?): draw the rest */
	} else {
		why[0] = '\0';
	}
	evidence_run_free(&run);
	if (evidence_read_processes(dirfd, load_process, s, NULL, 0) == 0) {
		found = readable = 1;
	} else {
		/* torn or unreadable: no lanes from part of it (the strings
		 * already kept are freed with the set) */
		s->d.n_procs = s->d.n_starts = s->d.n_exits = 0;
	}
	if (index_commands(s) < 0) {
		set_err(err, errlen, "%s", strerror(ENOMEM));
		plot_set_free(s);
		return -ENOMEM;
	}

	struct series_ctx c = { .s = s, .want_rss = 1 };
	rc = timeline_read_file(dirfd, EVIDENCE_RSS, rss_line, &c, &f);
	found |= f;
	if (rc == 0) {
		/* the heap from timeline.jsonl; the RSS too if rss.jsonl had none */
		c.want_rss = s->d.n_rss == 0;
		c.want_heap = 1;
		rc = timeline_read_file(dirfd, EVIDENCE_TIMELINE, tl_line, &c, &f);
		found |= f;
	}
	if (rc < 0) {
		set_err(err, errlen, "%s", strerror(-rc));
		plot_set_free(s);
		return rc;
	}
	if (!found) {
		set_err(err, errlen, "no evidence here (" EVIDENCE_RESOURCES ", " EVIDENCE_RSS ", "
			EVIDENCE_TIMELINE ", " EVIDENCE_PROCESSES ")");
		plot_set_free(s);
		return -ENOENT;
	}
	/* A torn record beside samples is a run cut short: draw it.  Files
	 * with nothing readable in any of them are not evidence, as memsup
	 * report says too. */
	if (!readable && s->d.n_rss == 0 && s->d.n_heap == 0) {
		set_err(err, errlen, "nothing readable here: %s",
			why[0] ? why : "no whole sample line, no readable record");
		plot_set_free(s);
		return -EINVAL;
	}
	if (choose_bands(s) < 0 || oom_events_from_record(s) < 0) {
		set_err(err, errlen, "%s", strerror(ENOMEM));
		plot_set_free(s);
		return -ENOMEM;
	}
	/* the breakdown's pids and commands have served */
	free_loading(s);
	s->d.title = s->title;
	s->d.subtitle = s->subtitle;
	s->d.rss = s->rss;
	s->d.heap = s->heap;
	s->d.cgroup = s->cgroup;
	s->d.pss = s->pss;
	s->d.kernel = s->kernel;
	s->d.events = s->events;
	s->d.ooms = s->ooms;
	s->d.stack = s->stack;
	s->d.procs = s->procs;
	s->d.markers = s->markers;
	s->d.starts = s->starts;
	s->d.exits = s->exits;
	return 0;
}

/* ---- writing -------------------------------------------------------------------- */

int plot_render(int dirfd, unsigned width, unsigned height, struct svg_buf *b, char *err,
		size_t errlen)
{
	struct plot_set s;
	int rc = plot_load(dirfd, &s, err, errlen);
	if (rc < 0)
		return rc;
	s.d.width = width;
	s.d.height = height;
	rc = svg_render(&s.d, b);
	plot_set_free(&s);
	if (rc < 0)
		set_err(err, errlen, "%s", strerror(-rc));
	return rc;
}

int plot_write_dir(int dirfd, const char *dirpath, unsigned width, unsigned height,
		   char *err, size_t errlen)
{
	int own = -1, rc;
	if (dirfd < 0) {
		own = open(dirpath, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (own < 0) {
			rc = -errno;
			set_err(err, errlen, "%s: %s", dirpath, strerror(-rc));
			return rc;
		}
		dirfd = own;
	}
	struct svg_buf b = { 0 };
	char why[256] = "";
	rc = plot_render(dirfd, width, height, &b, why, sizeof why);
	if (rc == 0) {
		rc = svg_write_atomic(dirfd, EVIDENCE_TIMELINE_SVG, &b);
		if (rc < 0)
			snprintf(why, sizeof why, EVIDENCE_TIMELINE_SVG ": %s", strerror(-rc));
	}
	if (rc < 0)
		set_err(err, errlen, "%s: %s", dirpath ? dirpath : ".", why);
	svg_buf_free(&b);
	if (own >= 0)
		close(own);
	return rc;
}
