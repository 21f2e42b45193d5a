/* callsites.c: the call-site view of a run (see callsites.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "analyze/callsites.h"
#include "rootsq.h"
#include "analyze/pyframes.h"
#include "collect/stackfile.h"
#include "collect/stackfold.h"
#include "grow.h"


static int callsites_add(struct callsite_set *s, const struct callsite *c)
{
	if (grow_array((void **)&s->v, &s->cap, s->n + 1, sizeof *s->v) < 0)
		return -ENOMEM;
	s->v[s->n++] = *c;
	s->bytes += c->bytes;
	s->count += c->count;
	s->var += c->var;
	return 0;
}

static int callsites_larger(const void *a, const void *b)
{
	const struct callsite *x = a, *y = b;
	if (x->bytes != y->bytes)
		return x->bytes > y->bytes ? -1 : 1;
	if (x->pid != y->pid)
		return x->pid < y->pid ? -1 : 1;
	return 0;
}

/* qsort, largest first; an empty set (its array may be NULL) is left as
 * it is: qsort's base must not be NULL even for no element. */
static void sort_largest_first(struct callsite *v, size_t n)
{
	if (n > 1)
		qsort(v, n, sizeof *v, callsites_larger);
}

double callsites_se(const struct callsite_set *s)
{
	return rootsq((double)s->var) * 1024.0;
}

double callsite_se(const struct callsite *c)
{
	return rootsq((double)c->var) * 1024.0;
}

/* ---- one stacks file -------------------------------------------------------- */

/* What one image's file needs while its stacks become sites. */
struct callsites_file {
	struct callsite_view *v;
	const struct stackfile *f;
	int64_t *modules;          /* the file's module i -> symbols module */
	uint32_t **lists;          /* stack i -> its frame list (made once) */
	/* pc -> frame, for this file (return addresses repeat across stacks) */
	uint64_t *pcs;
	uint32_t *pc_frame;
	size_t pc_cap, pc_n;
	int64_t perfmap;           /* the JIT map's module; -ENOENT: none;
				      CALLSITES_PERFMAP_UNSEEN: not looked for */
};

#define CALLSITES_PERFMAP_UNSEEN INT64_MIN

/* The module of this image's /tmp/perf-PID.map (symbols_perfmap), looked
 * for at its first frame in no file.  Only a map written since the image
 * started (a second of slack for file times) is this image's. */
static int64_t callsites_perfmap(struct callsites_file *cf)
{
	if (cf->perfmap == CALLSITES_PERFMAP_UNSEEN) {
		struct timespec mono, real;
		clock_gettime(CLOCK_MONOTONIC, &mono);
		clock_gettime(CLOCK_REALTIME, &real);
		uint64_t now = (uint64_t)mono.tv_sec * 1000000000u + (uint64_t)mono.tv_nsec;
		uint64_t ago = now > cf->f->h.start_mono_ns ? now - cf->f->h.start_mono_ns : 0;
		int64_t born = (int64_t)real.tv_sec - (int64_t)(ago / 1000000000u) - 1;
		cf->perfmap = symbols_perfmap(&cf->v->sym, cf->f->h.pid, born);
	}
	return cf->perfmap;
}

/* The symbols frame of a Python frame of this file (stacks.h): its code
 * entry's names and the line of its instruction. */
static int64_t callsites_pyframe(struct callsites_file *cf, uint64_t pc)
{
	const struct stackfile *f = cf->f;
	uint32_t code = mt_pyframe_code(pc), line = 0;
	if (mt_pyframe_is_elided(pc))
		return symbols_pyelided(&cf->v->sym, mt_pyframe_elided_frames(pc),
					mt_pyframe_elided_entries(pc));
	if (code >= f->h.code_count)
		return symbols_pyframe(&cf->v->sym, "<unknown code>", NULL, 0);
	const struct mt_stacks_code *c = &f->codes[code];
	if (pyframes_line(f->h.py_version, c, mt_pyframe_instr(pc), &line) < 0)
		line = 0;
	return symbols_pyframe(&cf->v->sym, c->name, c->file[0] ? c->file : NULL, line);
}

/* The symbols frame of pc in this file's address space. */
static int64_t callsites_pc(struct callsites_file *cf, uint32_t seen, uint64_t pc)
{
	const struct stackfile *f = cf->f;
	size_t k;
	if (cf->pc_n * 2 >= cf->pc_cap) {
		size_t cap = cf->pc_cap ? 2 * cf->pc_cap : 1024;
		uint64_t *pcs = calloc(cap, sizeof *pcs);
		uint32_t *fr = calloc(cap, sizeof *fr);
		if (!pcs || !fr) {
			free(pcs);
			free(fr);
			return -ENOMEM;
		}
		for (size_t i = 0; i < cf->pc_cap; i++) {
			if (!cf->pcs[i])
				continue;
			for (k = (cf->pcs[i] * UINT64_C(0x9E3779B97F4A7C15) >> 20) & (cap - 1); pcs[k];
			     k = (k + 1) & (cap - 1)) {
			}
			pcs[k] = cf->pcs[i];
			fr[k] = cf->pc_frame[i];
		}
		free(cf->pcs);
		free(cf->pc_frame);
		cf->pcs = pcs;
		cf->pc_frame = fr;
		cf->pc_cap = cap;
	}
	for (k = (pc * UINT64_C(0x9E3779B97F4A7C15) >> 20) & (cf->pc_cap - 1); cf->pcs[k];
	     k = (k + 1) & (cf->pc_cap - 1))
		if (cf->pcs[k] == pc)
			return cf->pc_frame[k];
	/* the newest module holding the return address (the byte before it
	 * is the call), among those the stack was taken with */
	uint32_t mi = SYMBOLS_NO_MODULE;
	uint64_t start = 0, off = 0;
	for (uint32_t j = seen; j-- > 0;) {
		const struct mt_stacks_module *m = &f->modules[j];
		if (pc > m->start && pc <= m->end && cf->modules[j] >= 0) {
			mi = (uint32_t)cf->modules[j];
			start = m->start;
			off = m->file_offset;
			break;
		}
	}
	/* in no file: JIT code, named by the runtime's map if it wrote one */
	if (mi == SYMBOLS_NO_MODULE && pc && !mt_pyframe_is(pc)) {
		int64_t pm = callsites_perfmap(cf);
		if (pm == -ENOMEM)
			return pm;
		if (pm >= 0)
			mi = (uint32_t)pm; /* start and off 0: file_offset is pc */
	}
	int64_t fi = mt_pyframe_is(pc) ? callsites_pyframe(cf, pc)
				       : symbols_frame(&cf->v->sym, mi, start, off, pc);
	if (fi < 0)
		return fi;
	if (pc) { /* 0 marks an empty slot */
		cf->pcs[k] = pc;
		cf->pc_frame[k] = (uint32_t)fi;
		cf->pc_n++;
	}
	return fi;
}

/* The frame list of the file's stack i, made at its first use. */
static const uint32_t *callsites_frames(struct callsites_file *cf, uint32_t i)
{
	const struct mt_stack *st = &cf->f->stacks[i];
	struct callsite_view *v = cf->v;
	uint32_t *base, *list;
	if (cf->lists[i])
		return cf->lists[i];
	/* the list's count in front of it: pyframes_interleave may shorten
	 * it once every frame is named (callsites_place_python) */
	base = malloc((st->nframes + 1u) * sizeof *base);
	if (!base || grow_array((void **)&v->frame_lists, &v->cap_lists, v->n_lists + 1,
				    sizeof *v->frame_lists) < 0) {
		free(base);
		return NULL;
	}
	v->frame_lists[v->n_lists++] = base;
	base[0] = st->nframes;
	list = base + 1;
	for (uint32_t j = 0; j < st->nframes; j++) {
		int64_t fi = callsites_pc(cf, st->modules_seen, st->pc[j]);
		if (fi < 0)
			return NULL;
		list[j] = (uint32_t)fi;
		if (mt_pyframe_is(st->pc[j]) && (st->pc[j] & MT_PYFRAME_ENTRY))
			list[j] |= PYFRAMES_ENTRY_BIT;
		if (mt_pyframe_is(st->pc[j]))
			v->python = 1;
	}
	cf->lists[i] = list;
	return list;
}

static int callsites_site(struct callsites_file *cf, struct callsite_set *s,
			  const struct image_view *iv, uint32_t stack, uint64_t bytes, uint64_t count,
			  uint64_t var)
{
	const struct mt_stack *st = &cf->f->stacks[stack];
	const uint32_t *frames = callsites_frames(cf, stack);
	struct callsite c = { iv->pid, iv->gen, frames, st->nframes, st->flags, bytes, count, var };
	if (!frames)
		return -ENOMEM;
	return callsites_add(s, &c);
}

/* The peaksites entry of (pid, gen), or NULL. */
static const struct peaksites_image *callsites_peak_image(const struct peaksites *p, pid_t pid,
							  uint32_t gen)
{
	for (size_t i = 0, n = peaksites_count(p); i < n; i++) {
		const struct peaksites_image *im = peaksites_get(p, i);
		if (im->pid == pid && im->gen == gen)
			return im;
	}
	return NULL;
}

static int callsites_image(struct callsite_view *v, const struct image_view *iv,
			   const struct peaksites *p, int dirfd, const struct stackfold_index *packed)
{
	struct callsites_file cf;
	struct stackfile f;
	struct callsite_image *ci;
	int rc = dirfd >= 0 ? stackfile_read_at(dirfd, iv->pid, iv->gen, &f) : -ENOENT;
	if (rc == -ENOENT && packed) /* packed when its image ended */
		rc = stackfold_index_read(packed, iv->pid, iv->gen, &f);
	if (rc == -ENOENT)
		return 0; /* it never took a sample */
	/* doubling, not a realloc per image (a build traces thousands) */
	if (grow_array((void **)&v->images, &v->cap_images, v->n_images + 1, sizeof *v->images) < 0) {
		stackfile_free(&f);
		return -ENOMEM;
	}
	ci = &v->images[v->n_images++];
	memset(ci, 0, sizeof *ci);
	ci->iv = iv;
	ci->error = rc;
	if (rc < 0)
		return 0;
	ci->h = f.h;
	ci->peak_consistent = f.peak_consistent;
	/* stacks.h: the set at the image's total peak (heap_peak in a table
	 * written before mappings were sampled: seen_total_peak 0) */
	ci->peak_from_live = iv->traced && (f.h.seen_total_peak
						    ? iv->rec.total_peak > f.h.seen_total_peak
						    : iv->rec.heap_peak > f.h.seen_heap_peak);
	if (v->n_images == 1)
		v->sample_bytes = f.h.sample_bytes;
	else if (v->sample_bytes != f.h.sample_bytes)
		v->sample_bytes = 0;

	memset(&cf, 0, sizeof cf);
	cf.v = v;
	cf.f = &f;
	cf.perfmap = CALLSITES_PERFMAP_UNSEEN;
	cf.modules = calloc(f.h.module_count ? f.h.module_count : 1, sizeof *cf.modules);
	cf.lists = calloc(f.h.stack_count ? f.h.stack_count : 1, sizeof *cf.lists);
	rc = cf.modules && cf.lists ? 0 : -ENOMEM;
	for (uint32_t j = 0; !rc && j < f.h.module_count; j++)
		if ((cf.modules[j] = symbols_module(&v->sym, &f.modules[j])) < 0)
			rc = -ENOMEM;
	for (uint32_t i = 0; !rc && i < f.h.stack_count; i++) {
		const struct mt_stack *st = &f.stacks[i];
		uint64_t pb = ci->peak_from_live ? st->live_bytes : st->peak_bytes;
		uint64_t pc = ci->peak_from_live ? st->live_count : st->peak_count;
		uint64_t pv = ci->peak_from_live ? st->live_var : st->peak_var;
		if (pb)
			rc = callsites_site(&cf, &ci->at_peak, iv, i, pb, pc, pv);
		if (!rc && st->live_bytes)
			rc = callsites_site(&cf, &ci->at_exit, iv, i, st->live_bytes, st->live_count,
					    st->live_var);
	}
	/* its sets at the tree's peaks, by the stack ids of this file */
	const struct peaksites_image *pim = p ? callsites_peak_image(p, iv->pid, iv->gen) : NULL;
	for (int k = 0; !rc && pim && k < PEAKSITES_KINDS; k++) {
		if (!peaksites_at(p, pim, k))
			continue;
		if (k == PEAKSITES_HEAP && iv->heap_peak_take == HEAP_PEAK_OWN) {
			/* the tree's heap counts it at its own exact peak
			 * (merge.h): its sites of that moment, not the sample's */
			for (size_t j = 0; !rc && j < ci->at_peak.n; j++)
				rc = callsites_add(&v->tree[k].set, &ci->at_peak.v[j]);
			continue;
		}
		for (size_t j = 0; !rc && j < pim->at[k].n; j++) {
			const struct stackfile_live *e = &pim->at[k].e[j];
			if (e->stack < f.h.stack_count)
				rc = callsites_site(&cf, &v->tree[k].set, iv, e->stack, e->bytes,
						    e->count, e->var);
		}
	}
	free(cf.modules);
	free(cf.lists);
	free(cf.pcs);
	free(cf.pc_frame);
	stackfile_free(&f);
	return rc;
}

/* Each site's count as its list now says (callsites_frames). */
static void callsites_recount(struct callsite_set *set)
{
	for (size_t i = 0; i < set->n; i++)
		if (set->v[i].frames)
			set->v[i].nframes = set->v[i].frames[-1];
}

/* Python frames where the interpreter ran them (pyframes.h), once every
 * native frame is named: each list once, then every site's count. */
static void callsites_place_python(struct callsite_view *v)
{
	if (!v->python)
		return;
	for (size_t i = 0; i < v->n_lists; i++) {
		uint32_t *base = v->frame_lists[i];
		base[0] = pyframes_interleave(base + 1, base[0], &v->sym);
	}
	for (size_t i = 0; i < v->n_images; i++) {
		callsites_recount(&v->images[i].at_peak);
		callsites_recount(&v->images[i].at_exit);
	}
	for (int k = 0; k < PEAKSITES_KINDS; k++)
		callsites_recount(&v->tree[k].set);
}

int callsites_build(struct callsite_view *v, const struct merged_run *m, const struct peaksites *p,
		    int records_dirfd, const struct stackfold_index *packed)
{
	int rc = 0;
	memset(v, 0, sizeof *v);
	symbols_init(&v->sym);
	for (int k = 0; k < PEAKSITES_KINDS; k++) {
		v->tree[k].at_s = p ? peaksites_when(p, k, &v->tree[k].polled, &v->tree[k].rss) : -1;
		v->tree[k].heap = v->tree[k].polled;
	}
	/* the heap peak's figure with the images taken at their own peaks */
	if (p && m->heap_peak.have)
		v->tree[PEAKSITES_HEAP].heap = m->heap_peak.heap;
	for (size_t i = 0; !rc && (records_dirfd >= 0 || packed) && i < m->n_images; i++)
		if (m->images[i].traced)
			rc = callsites_image(v, &m->images[i], p, records_dirfd, packed);
	if (!rc)
		rc = symbols_resolve(&v->sym);
	if (!rc)
		callsites_place_python(v);
	if (rc) {
		callsites_free(v);
		return rc;
	}
	for (size_t i = 0; i < v->n_images; i++) {
		sort_largest_first(v->images[i].at_peak.v, v->images[i].at_peak.n);
		sort_largest_first(v->images[i].at_exit.v, v->images[i].at_exit.n);
	}
	for (int k = 0; k < PEAKSITES_KINDS; k++)
		sort_largest_first(v->tree[k].set.v, v->tree[k].set.n);
	return 0;
}

void callsites_free(struct callsite_view *v)
{
	for (size_t i = 0; i < v->n_images; i++) {
		free(v->images[i].at_peak.v);
		free(v->images[i].at_exit.v);
	}
	for (int k = 0; k < PEAKSITES_KINDS; k++)
		free(v->tree[k].set.v);
	for (size_t i = 0; i < v->n_lists; i++)
		free(v->frame_lists[i]);
	free(v->frame_lists);
	free(v->images);
	symbols_free(&v->sym);
	memset(v, 0, sizeof *v);
	for (int k = 0; k < PEAKSITES_KINDS; k++)
		v->tree[k].at_s = -1;
}
