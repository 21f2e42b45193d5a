/* merge.c: building the merged view of a run from the record files (their
 * final contents), the poller's per-process table and the tree's peaks
 * (see merge.h).
 *
 * One image per record file, valid or not, then one per image the poller
 * sampled that has no file.  Samples were attributed to a generation while
 * the run went on (live_image_at), so joining is by (pid, gen). */
#include "analyze/merge.h"
#include "collect/belief.h"
#include "collect/live.h"
#include "collect/peaksites.h"
#include "collect/pview.h"
#include "collect/recordfile.h"
#include "base/grow.h"
#include "invariant.h"
#include "recordjson.h"
#include "units.h"

#include <errno.h>
#include <inttypes.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

const char *merge_untraced_name(enum untraced_why why)
{
	switch (why) {
	case UNTRACED_STATIC:
		return "static";
	case UNTRACED_SECURE:
		return "secure";
	case UNTRACED_NO_PRELOAD:
		return "no_preload";
	case UNTRACED_NOT_REQUESTED:
		return "not_requested";
	case UNTRACED_NO_SHIM:
		return "no_shim";
	case UNTRACED_OTHER_USER:
		return "other_user";
	case UNTRACED_PID_NAMESPACE:
		return "pid_namespace";
	case UNTRACED_UNKNOWN:
		break;
	}
	return "unknown";
}

/* Why nothing of an untraced run is traced: --no-trace, or no shim found. */
static enum untraced_why untraced_all(const struct merge_input *in)
{
	return in->rec && in->rec->shim_searched ? UNTRACED_NO_SHIM : UNTRACED_NOT_REQUESTED;
}

uint64_t merge_image_hwm_kb(const struct image_view *iv, const char **src)
{
	/* The shim reads the mark of this very image at its end; a polled
	 * reading can come from the pid's image before an exec (the mark
	 * resets there) and is only the fallback, for images that never got
	 * to write theirs (killed, untraced). */
	const char *from = NULL;
	uint64_t kb = 0;
	if (iv->traced && iv->rec.state != MT_STATE_RUNNING && iv->rec.vm_hwm_kb) {
		kb = iv->rec.vm_hwm_kb;
		from = "shim";
	} else if (iv->polled_hwm_kb) {
		kb = iv->polled_hwm_kb;
		from = "poller";
	}
	if (src)
		*src = from;
	return kb;
}

double merge_mono_s(const struct merged_run *m, uint64_t mono_ns)
{
	if (!mono_ns)
		return -1;
	return ((double)mono_ns - (double)m->start_mono_ns) / 1e9;
}

static double rel_s(const struct merge_input *in, uint64_t ns)
{
	return ((double)ns - (double)in->start_mono_ns) / 1e9;
}

/* The command's session: a process in another one left it (escaped). */
static pid_t command_sid(const struct merge_input *in)
{
	return in->command_sid > 0 ? in->command_sid : in->command_pid;
}

static int cmp_image(const void *a, const void *b)
{
	const struct image_view *x = a, *y = b;
	if (x->pid != y->pid)
		return x->pid < y->pid ? -1 : 1;
	return x->gen < y->gen ? -1 : x->gen > y->gen;
}

/* images[0, sorted) are in (pid, gen) order: binary search there, then a
 * linear look at the ones appended since (untraced images: few). */
static struct image_view *find_image(struct merged_run *m, size_t sorted, pid_t pid,
				     uint32_t gen)
{
	struct image_view key = { .pid = pid, .gen = gen };
	struct image_view *hit = sorted ? bsearch(&key, m->images, sorted, sizeof key, cmp_image)
					: NULL;
	for (size_t i = sorted; !hit && i < m->n_images; i++)
		if (m->images[i].pid == pid && m->images[i].gen == gen)
			hit = &m->images[i];
	return hit;
}

static struct image_view *add_image(struct merged_run *m, size_t *cap, pid_t pid, uint32_t gen)
{
	if (grow_array((void **)&m->images, cap, m->n_images + 1, sizeof *m->images) < 0)
		return NULL;
	struct image_view *iv = &m->images[m->n_images++];
	memset(iv, 0, sizeof *iv);
	iv->pid = pid;
	iv->gen = gen;
	return iv;
}

static int wait_status_of(int exit_code)
{
	/* the record's Python convention back to a wait status */
	return exit_code >= 0 ? (exit_code & 0xff) << 8 : (-exit_code) & 0x7f;
}

static struct merge_aside *add_aside(struct merged_run *m, size_t *cap, pid_t pid,
				      uint32_t gen, int in_tree)
{
	if (grow_array((void **)&m->aside, cap, m->n_aside + 1, sizeof *m->aside) < 0)
		return NULL;
	struct merge_aside *a = &m->aside[m->n_aside++];
	memset(a, 0, sizeof *a);
	a->pid = pid;
	a->gen = gen;
	a->in_tree = in_tree;
	return a;
}

/* The record's figures memsup's view keeps under the same name, copied
 * as they are both ways (merge_keep_record, merge_record_of); each is the
 * same size in both (checked here at compile time).  Not in the list:
 * heap_current and total_current, which keeping adjusts, and what is kept
 * beside the figures (argv, exe, the markers, the histogram). */
#define KEPT_FIELDS(X)                                                                   \
	X(version) X(pid) X(ppid) X(parent_pid) X(gen) X(relation) X(parent_gen) X(flags) \
	X(argc) X(state) X(marker_count) X(start_mono_ns) X(start_real_ns) X(end_mono_ns) \
	X(heap_peak) X(heap_peak_mono_ns) X(heap_at_fork) X(map_anon_at_fork)            \
	X(heap_requested_total) X(heap_largest_request) X(calls) X(map_anon_current)     \
	X(map_anon_peak) X(map_file_current) X(map_file_peak) X(map_largest)             \
	X(map_untracked_calls) X(map_untracked_bytes) X(total_peak)                      \
	X(total_peak_mono_ns) X(exit_code) X(exit_signal) X(vm_hwm_kb) X(vm_rss_kb)      \
	X(vm_peak_kb) X(ru_maxrss_self_kb) X(ru_maxrss_children_kb)

#define FIELD_SIZE(type, f) sizeof(((const struct type *)0)->f)
#define KEPT_FIELD(f)                                                               \
	{ offsetof(struct mt_record, f), offsetof(struct image_rec, f),               \
	  FIELD_SIZE(image_rec, f) +                                                  \
		  0 * sizeof(char[FIELD_SIZE(mt_record, f) == FIELD_SIZE(image_rec, f) ? 1 : -1]) },

static const struct kept_field {
	size_t in_record, in_view, size;
} kept_fields[] = { KEPT_FIELDS(KEPT_FIELD) };

int merge_keep_record(struct image_view *iv, const struct mt_record *r)
{
	struct image_rec *k = &iv->rec;
	size_t alen = r->argv_bytes <= MT_ARGV_BYTES ? r->argv_bytes : MT_ARGV_BYTES;
	size_t elen = strnlen(r->exe, MT_EXE_BYTES - 1);
	uint32_t nm = r->marker_count < MT_MARKERS ? r->marker_count : MT_MARKERS;
	unsigned hl = recordjson_hist_len(r->hist);
	for (size_t i = 0; i < sizeof kept_fields / sizeof kept_fields[0]; i++)
		memcpy((char *)k + kept_fields[i].in_view,
		       (const char *)r + kept_fields[i].in_record, kept_fields[i].size);
	/* a record read live may say below zero for a moment (record.h) */
	k->heap_current = (int64_t)r->heap_current > 0 ? r->heap_current : 0;
	/* not r->total_current: the shim stores that one at peaks, mapping
	 * calls and the end only, and an image cut off while running has none */
	k->total_current = r->heap_current + r->map_anon_current + r->map_file_current;
	/* argv (argv_bytes, its last NUL kept: like /proc/PID/cmdline, every
	 * argument is NUL-terminated, so an empty last one is not lost) and
	 * exe, at their length in one block */
	iv->owned = malloc(alen + elen + 1);
	if (!iv->owned)
		return -ENOMEM;
	memcpy(iv->owned, r->argv, alen);
	memcpy(iv->owned + alen, r->exe, elen);
	iv->owned[alen + elen] = '\0';
	iv->argv = alen ? iv->owned : NULL;
	iv->argv_len = alen;
	iv->exe = elen ? iv->owned + alen : NULL;
	if (nm) {
		iv->markers = malloc(nm * sizeof *iv->markers);
		iv->marker_rusage = malloc(nm * sizeof *iv->marker_rusage);
		if (!iv->markers || !iv->marker_rusage)
			return -ENOMEM;
		memcpy(iv->markers, r->markers, nm * sizeof *iv->markers);
		memcpy(iv->marker_rusage, r->marker_rusage, nm * sizeof *iv->marker_rusage);
	}
	if (hl) {
		if (!(iv->hist = malloc(hl * sizeof *iv->hist)))
			return -ENOMEM;
		memcpy(iv->hist, r->hist, hl * sizeof *iv->hist);
		k->hist_len = hl;
	}
	return 0;
}

void merge_record_of(const struct image_view *iv, struct mt_record *out)
{
	const struct image_rec *k = &iv->rec;
	uint32_t nm = k->marker_count < MT_MARKERS ? k->marker_count : MT_MARKERS;
	MT_ASSERT(iv->traced);
	MT_ASSERT(k->hist_len <= MT_HIST_BUCKETS);
	memset(out, 0, sizeof *out);
	out->magic = MT_RECORD_MAGIC;
	out->record_size = MT_RECORD_SIZE;
	for (size_t i = 0; i < sizeof kept_fields / sizeof kept_fields[0]; i++)
		memcpy((char *)out + kept_fields[i].in_record,
		       (const char *)k + kept_fields[i].in_view, kept_fields[i].size);
	out->heap_current = k->heap_current;
	out->total_current = k->total_current;
	if (k->hist_len)
		memcpy(out->hist, iv->hist, k->hist_len * sizeof *iv->hist);
	if (nm && iv->markers)
		memcpy(out->markers, iv->markers, nm * sizeof *out->markers);
	if (nm && iv->marker_rusage)
		memcpy(out->marker_rusage, iv->marker_rusage, nm * sizeof *out->marker_rusage);
	/* argv and exe as the record held them (merge_keep_record kept them
	 * whole, at most MT_ARGV_BYTES and MT_EXE_BYTES - 1) */
	if (iv->argv) {
		size_t alen = iv->argv_len < MT_ARGV_BYTES ? iv->argv_len : MT_ARGV_BYTES;
		memcpy(out->argv, iv->argv, alen);
		out->argv_bytes = (uint32_t)alen;
	}
	if (iv->exe)
		strncpy(out->exe, iv->exe, MT_EXE_BYTES - 1);
}

/* 1 when rec's VmHWM can be true of a tree the kernel counted (belief.h,
 * belief_hwm_fits): the bound is the larger of the tree's getrusage
 * children maxrss and the run's cgroup peak, both read after the tree
 * ended.  Else 0 and, in why, what the kernel said instead. */
static int merge_hwm_fits(const struct merge_input *in, const struct mt_record *rec, char *why,
			  size_t cap)
{
	const struct sup_record *r = in->rec;
	uint64_t ru_kb = 0, cg_kb = 0;
	if (!r || rec->state == MT_STATE_RUNNING) /* no VmHWM of its end */
		return 1;
	if (r->rusage_children_maxrss_mb >= 0)
		ru_kb = (uint64_t)(r->rusage_children_maxrss_mb * UNITS_MB / UNITS_KIB + 0.5);
	if (r->cgroup.have_peak)
		cg_kb = r->cgroup.peak / 1024;
	if (belief_hwm_fits(rec->vm_hwm_kb, ru_kb > cg_kb ? ru_kb : cg_kb))
		return 1;
	if (cg_kb)
		snprintf(why, cap, "its VmHWM, %" PRIu64 " kB, is far more than the kernel says "
			 "any process of the tree held (largest maxrss %" PRIu64 " kB, the run's "
			 "cgroup peak %" PRIu64 " kB)", rec->vm_hwm_kb, ru_kb, cg_kb);
	else
		snprintf(why, cap, "its VmHWM, %" PRIu64 " kB, is far more than the kernel says "
			 "any process of the tree held (largest maxrss %" PRIu64 " kB)",
			 rec->vm_hwm_kb, ru_kb);
	return 0;
}

/* 1. the shim's view: one image per record file, with its final contents.
 * A record is believed only for an image of the tree (live_believe) whose
 * figures can be true (recordfile_plausible) of this tree (merge_hwm_fits:
 * a VmHWM the kernel's own figures allow); the rest is put aside. */
static int add_records(struct merged_run *m, size_t *cap, const struct merge_input *in)
{
	size_t aside_cap = 0;
	struct recordfile_bounds b = { in->start_mono_ns, in->end_mono_ns, in->memory_kb };
	struct mt_record *rec = malloc(sizeof *rec); /* one at a time */
	int err = rec ? 0 : -ENOMEM;
	for (size_t i = 0; !err && in->live && i < live_count(in->live); i++) {
		const struct live_rec *lr = live_get(in->live, i);
		struct image_view *iv = add_image(m, cap, lr->pid, lr->gen);
		struct merge_aside *a;
		char why[sizeof a->why];
		if (!iv) {
			err = -ENOMEM;
			break;
		}
		int rc = live_read_final(in->live, i, rec);
		/* A file of a pid that cannot exist is no image whether it
		 * reads as a record or not: a corrupt one would still list a
		 * process 3000000 of the tree. */
		int impossible = !live_pid_possible(in->live, lr->pid);
		if ((rc == 0 && !lr->believed) || impossible) {
			/* not an image of the tree: no image at all */
			m->n_images--;
			if (!(a = add_aside(m, &aside_cap, lr->pid, lr->gen, 0))) {
				err = -ENOMEM;
				break;
			}
			if (live_why(in->live, i, in->start_mono_ns, a->why, sizeof a->why) < 0)
				snprintf(a->why, sizeof a->why, "pid %d cannot exist here",
					 (int)lr->pid);
			continue;
		}
		if (rc == 0 && (recordfile_plausible(rec, &b, why, sizeof why) < 0 ||
				!merge_hwm_fits(in, rec, why, sizeof why))) {
			if (!(a = add_aside(m, &aside_cap, lr->pid, lr->gen, 1))) {
				err = -ENOMEM;
				break;
			}
			memcpy(a->why, why, sizeof a->why);
			rc = -RECORDFILE_EIMPLAUSIBLE;
		}
		if (rc == 0) {
			iv->traced = 1;
			if (merge_keep_record(iv, rec) < 0)
				err = -ENOMEM;
			iv->ppid = iv->rec.ppid;
		} else {
			iv->record_error = rc;
		}
	}
	free(rec);
	return err;
}

/* 2. the poller's view, joined by (pid, gen): images[0, sorted) are the
 * record files' (sorted); an image the poller saw without one is added */
static int add_samples(struct merged_run *m, size_t *cap, size_t sorted,
		       const struct merge_input *in)
{
	const struct pview *pv = in->pview;
	for (size_t i = 0; pv && i < pview_count(pv); i++) {
		const struct pview_proc *p = pview_get(pv, i);
		for (size_t j = 0; j < p->nimgs; j++) {
			const struct pview_img *img = &p->imgs[j];
			struct image_view *iv = find_image(m, sorted, p->pid, img->gen);
			if (!iv && !(iv = add_image(m, cap, p->pid, img->gen)))
				return -ENOMEM;
			iv->sampled = 1;
			iv->first_seen_s = rel_s(in, img->first_ns);
			iv->last_seen_s = rel_s(in, img->last_ns);
			iv->samples_seen = img->samples;
			iv->polled_peak_rss = img->peak_rss;
			iv->polled_peak_at_s = rel_s(in, img->peak_ns);
			iv->sid = p->sid;
			iv->escaped = p->sid > 0 && command_sid(in) > 0 && p->sid != command_sid(in);
			if (p->hwm_kb && p->hwm_gen == img->gen)
				iv->polled_hwm_kb = p->hwm_kb;
			if (!iv->traced) {
				iv->untraced_why = in->tracing ? img->why : untraced_all(in);
				iv->untraced_uid = img->uid;
				if (!iv->ppid)
					iv->ppid = p->ppid;
			}
		}
	}
	return 0;
}

/* The argv and exe of an image without a valid record: the image's own
 * when it was inspected, else the pid's at first sight. */
static void name_untraced(struct image_view *iv, const struct pview_proc *p)
{
	const struct pview_img *img = NULL;
	for (size_t j = 0; j < p->nimgs; j++)
		if (p->imgs[j].gen == iv->gen)
			img = &p->imgs[j];
	if (img && img->argv) {
		iv->argv = img->argv;
		iv->argv_len = img->argv_len;
	} else {
		iv->argv = p->argv;
		iv->argv_len = p->argv_len;
	}
	iv->exe = img && img->exe ? img->exe : p->exe;
}

/* A pid's final image: the wait status memsup reaped, and whether it was
 * killed as a leftover. */
static void end_of_pid(struct image_view *iv, const struct merge_input *in)
{
	const struct sup_record *rec = in->rec;
	if (in->have_main && iv->pid == in->command_pid) {
		iv->have_status = 1;
		iv->wait_status = in->main_status;
	}
	for (size_t k = 0; k < rec->n_reaped && k < RUNRECORD_MAX_REAPED; k++) {
		if (rec->reaped[k].pid == iv->pid) {
			iv->have_status = 1;
			iv->wait_status = wait_status_of(rec->reaped[k].exit_code);
		}
	}
	for (size_t k = 0; k < rec->n_leftovers; k++) {
		const struct sup_leftover *l = &rec->leftovers[k];
		if (l->pid != iv->pid)
			continue;
		iv->leftover_killed = 1;
		/* its session as it was killed: one that left the command's
		 * after the poller last looked (or before it ever did) */
		if (l->session > 0 && command_sid(in) > 0 && l->session != command_sid(in)) {
			iv->escaped = 1;
			iv->sid = l->session;
		}
	}
}

/* 2b. a leftover neither view knew (it lived only between the last sample
 * and the kill, untraced): an image of its own, named by the record */
static int add_leftovers(struct merged_run *m, size_t *cap, const struct merge_input *in)
{
	const struct sup_record *rec = in->rec;
	for (size_t k = 0; k < rec->n_leftovers; k++) {
		const struct sup_leftover *l = &rec->leftovers[k];
		int known = 0;
		for (size_t i = 0; i < m->n_images && !known; i++)
			known = m->images[i].pid == l->pid;
		if (known)
			continue;
		struct image_view *iv = add_image(m, cap, l->pid, 0);
		if (!iv)
			return -ENOMEM;
		iv->argv = l->argv;
		iv->argv_len = l->argv_len;
		iv->untraced_why = in->tracing ? UNTRACED_UNKNOWN : untraced_all(in);
	}
	return 0;
}

/* 3. names (pointers into the final array), statuses, leftovers */
static void name_images(struct merged_run *m, const struct merge_input *in)
{
	for (size_t i = 0; i < m->n_images; i++) {
		struct image_view *iv = &m->images[i];
		const struct pview_proc *p = in->pview ? pview_find(in->pview, iv->pid) : NULL;
		if (iv->traced) {
			/* argv and exe: merge_keep_record() */
		} else if (p) {
			name_untraced(iv, p);
		}
		/* the pid's final image is the one a wait status belongs to */
		if (i + 1 == m->n_images || m->images[i + 1].pid != iv->pid)
			end_of_pid(iv, in);
	}
}

/* 4. the peak sample, broken down per image */
static void add_peak(struct merged_run *m, const struct merge_input *in)
{
	const struct pview_peak *pk = in->pview ? pview_peak(in->pview) : NULL;
	if (!pk || !pk->t_ns)
		return;
	struct peak_view *v = &m->peak;
	v->at_s = rel_s(in, pk->t_ns);
	v->rss = pk->rss;
	v->nprocs = (unsigned)pk->n;
	v->heap = pk->heap;
	v->map_anon = pk->map_anon;
	v->map_file = pk->map_file;
	v->have_smaps = pk->have_smaps && pk->n > 0;
	if (v->have_smaps)
		v->smaps_age_s = ((double)pk->smaps_ns - (double)pk->t_ns) / 1e9;
	for (size_t i = 0; i < pk->n; i++) {
		const struct pview_peak_member *pm = &pk->m[i];
		struct image_view *iv = find_image(m, m->n_images, pm->pid, pm->gen);
		if (v->have_smaps) {
			v->pss += pm->pss;
			v->anon += pm->anon;
			v->file += pm->file;
			v->shmem += pm->shmem;
			v->swap += pm->swap;
		}
		if (!iv)
			continue;
		iv->at_peak = 1;
		iv->peak_rss = pm->rss;
		iv->peak_heap = pm->heap;
		iv->peak_map = pm->map;
		if (pm->have_smaps) {
			iv->have_smaps = 1;
			iv->peak_pss = pm->pss;
			iv->peak_anon = pm->anon;
			iv->peak_file = pm->file;
			iv->peak_shmem = pm->shmem;
			iv->peak_swap = pm->swap;
		}
	}
}

/* Its own heap peak lies within the heap peak sample's interval (an end
 * without a sample is the start or the end of the run). */
static int peaked_within(const struct merged_run *m, const struct heap_peak_view *v,
			 uint64_t peak_mono_ns)
{
	if (!peak_mono_ns)
		return 0; /* it never held a byte */
	double t = merge_mono_s(m, peak_mono_ns);
	return (v->before_s < 0 || t >= v->before_s) && (v->after_s < 0 || t <= v->after_s);
}

/* 5. the tree's heap at its peak (merge.h, heap_peak_view).
 *
 * The poll sums each image's heap at one moment a sample and sees nothing
 * in between, so its largest sum can be most of a poll interval short of
 * the peak it stands for: a program that frees as soon as it holds
 * everything is still growing at the last sample before the frees.  The
 * shim knows each image's peak exactly.  Putting an image's exact peak in
 * the sum in place of its polled figure mixes moments (the others are
 * taken at the sample), which is sound where the others' figures stand
 * for what they held at that image's peak:
 *  - when no other image was counted at the sample.  The sum is then the
 *    image's heap_peak: what the tree held at that moment at least, so
 *    never above the tree's true peak, and never below the polled sum.
 *    A one-process tree is exact wherever its peak was (a spike between
 *    two earlier samples too).
 *  - when the image's peak lies between the sample before and the sample
 *    after: within that interval the poll cannot tell moments apart, and
 *    the sample is the largest sum it saw there.
 * The interval rule alone meets the one-process case of a program that
 * grows then frees (it peaks next to the largest sample), but leaves a
 * one-process tree whose peak was an earlier spike at the poll's figure;
 * the lone-image rule costs nothing more and cannot overstate.  Every image
 * at its own peak, wherever, would sum peaks of different moments (the
 * compilers of a build) and overstate the tree by far.  An image that
 * peaked elsewhere, while others were counted, keeps the sample's figure.
 * What the rule can still overstate is bounded: by what the images taken
 * at their peaks let go of within the interval (two that peaked at
 * different moments of it).
 *
 * The tree's peak of heap plus mappings (merge.h, total_peak) is the same
 * rule on each record's total and total_peak: `kind` says which. */
static void add_heap_peak(struct merged_run *m, const struct merge_input *in, int kind)
{
	int total = kind == PEAKSITES_TOTAL;
	struct heap_peak_view *v = total ? &m->total_peak : &m->heap_peak;
	const struct peaksites *p = in->sites;
	uint64_t rss, heap;
	if (!p || (v->at_s = peaksites_when(p, kind, &heap, &rss)) < 0)
		return;
	size_t n = peaksites_count(p);
	v->have = 1;
	v->polled = total ? peaksites_total(p, kind) : heap;
	v->heap = v->polled;
	peaksites_window(p, kind, &v->before_s, &v->after_s);
	for (size_t i = 0; i < n; i++)
		v->counted += peaksites_at(p, peaksites_get(p, i), kind) != 0;
	for (size_t i = 0; i < n; i++) {
		const struct peaksites_image *im = peaksites_get(p, i);
		struct image_view *iv;
		if (!peaksites_at(p, im, kind) || !(iv = find_image(m, m->n_images, im->pid, im->gen)))
			continue;
		enum heap_peak_take *take = total ? &iv->total_peak_take : &iv->heap_peak_take;
		uint64_t *bytes = total ? &iv->total_peak_bytes : &iv->heap_peak_bytes;
		uint64_t own = total ? iv->rec.total_peak : iv->rec.heap_peak;
		*take = HEAP_PEAK_POLLED;
		*bytes = im->heap[kind];
		/* a record not believed has no figure of its own to give */
		if (!iv->traced ||
		    (v->counted > 1 &&
		     !peaked_within(m, v, total ? iv->rec.total_peak_mono_ns
						: iv->rec.heap_peak_mono_ns)))
			continue;
		/* its polled figure is one of the sum's terms: no wrap */
		MT_ASSERT(v->heap >= im->heap[kind]);
		v->heap = v->heap - im->heap[kind] + own;
		*take = HEAP_PEAK_OWN;
		*bytes = own;
		v->own++;
	}
}

int merge_build(struct merged_run *m, const struct merge_input *in)
{
	size_t cap = 0;
	memset(m, 0, sizeof *m);
	m->rec = in->rec;
	m->tracing = in->tracing;
	m->command_sid = command_sid(in);
	m->start_mono_ns = in->start_mono_ns;
	m->peak.at_s = -1;
	m->heap_peak.at_s = m->heap_peak.before_s = m->heap_peak.after_s = -1;
	m->total_peak.at_s = m->total_peak.before_s = m->total_peak.after_s = -1;

	if (add_records(m, &cap, in) < 0)
		goto nomem;
	if (m->n_images > 1)
		qsort(m->images, m->n_images, sizeof *m->images, cmp_image);
	if (add_samples(m, &cap, m->n_images, in) < 0 ||
	    add_leftovers(m, &cap, in) < 0)
		goto nomem;
	if (m->n_images > 1)
		qsort(m->images, m->n_images, sizeof *m->images, cmp_image);
	name_images(m, in);
	add_peak(m, in);
	add_heap_peak(m, in, PEAKSITES_HEAP);
	add_heap_peak(m, in, PEAKSITES_TOTAL);
	return 0;
nomem:
	merge_free(m);
	m->peak.at_s = -1;
	m->heap_peak.at_s = m->heap_peak.before_s = m->heap_peak.after_s = -1;
	m->total_peak.at_s = m->total_peak.before_s = m->total_peak.after_s = -1;
	return -ENOMEM;
}

void merge_free(struct merged_run *m)
{
	for (size_t i = 0; i < m->n_images; i++) {
		free(m->images[i].owned);
		free(m->images[i].markers);
		free(m->images[i].marker_rusage);
		free(m->images[i].hist);
	}
	free(m->images);
	free(m->aside);
	m->images = NULL;
	m->aside = NULL;
	m->n_images = 0;
	m->n_aside = 0;
}
