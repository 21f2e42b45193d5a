/* callsites.c: the call-site view of a run (see callsites.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "analyze/callsites.h"
#include "base/rootsq.h"
#include "analyze/pyframes.h"
#include "pyline.h"
#include "collect/stackfile.h"
#include "collect/stackfold.h"
#include "base/grow.h"


static int callsites_add(struct callsite_set *s, const struct callsite *c)
{
	if (grow_array((void **)&s->v, &s->cap, s->n + 1, sizeof *s->v) < 0)
		return -ENOMEM;
	s->v[s->n++] = *c;
	if (c->inherited) {
		s->inherited_bytes += c->bytes;
		return 0;
	}
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
	if (pyline_of(f->h.py_version, c, mt_pyframe_instr(pc), &line) < 0)
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

/* `total`: the stack's total bytes at the same moment in a fork child
 * that inherited its parent's table (bytes above it were inherited,
 * callsites.h), UINT64_MAX otherwise. */
static int callsites_site(struct callsites_file *cf, struct callsite_set *s,
			  const struct image_view *iv, uint32_t stack, uint64_t bytes, uint64_t count,
			  uint64_t var, uint64_t total)
{
	const struct mt_stack *st = &cf->f->stacks[stack];
	const uint32_t *frames = callsites_frames(cf, stack);
	struct callsite c = { iv->pid, iv->gen, frames, st->nframes, st->flags, bytes, count, var,
			      stack, 0, bytes > total ? bytes - total : 0 };
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
		/* an image's own sets are all its own: nothing marked */
		if (pb)
			rc = callsites_site(&cf, &ci->at_peak, iv, i, pb, pc, pv, UINT64_MAX);
		if (!rc && st->live_bytes)
			rc = callsites_site(&cf, &ci->at_exit, iv, i, st->live_bytes, st->live_count,
					    st->live_var, UINT64_MAX);
	}
	/* a fork child whose table started as its parent's (callsites.h) */
	int inherits = iv->rec.relation == MT_REL_FORK && (f.h.flags & MT_STACKS_FLAG_INHERITED);
	/* its sets at the tree's peaks, by the stack ids of this file */
	const struct peaksites_image *pim = p ? callsites_peak_image(p, iv->pid, iv->gen) : NULL;
	for (int k = 0; !rc && pim && k < PEAKSITES_KINDS; k++) {
		if (!peaksites_at(p, pim, k))
			continue;
		if ((k == PEAKSITES_HEAP && iv->heap_peak_take == HEAP_PEAK_OWN) ||
		    (k == PEAKSITES_TOTAL && iv->total_peak_take == HEAP_PEAK_OWN)) {
			/* the tree counts it at its own exact peak (merge.h):
			 * its sites of that moment, not the sample's, against
			 * its final total columns */
			for (size_t j = 0; !rc && j < ci->at_peak.n; j++) {
				struct callsite c = ci->at_peak.v[j];
				uint64_t t = f.stacks[c.stack].total_bytes;
				c.inh = inherits && c.bytes > t ? c.bytes - t : 0;
				rc = callsites_add(&v->tree[k].set, &c);
			}
			continue;
		}
		for (size_t j = 0; !rc && j < pim->at[k].n; j++) {
			const struct stackfile_live *e = &pim->at[k].e[j];
			if (e->stack < f.h.stack_count)
				rc = callsites_site(&cf, &v->tree[k].set, iv, e->stack, e->bytes,
						    e->count, e->var,
						    inherits ? e->total_bytes : UINT64_MAX);
		}
	}
	free(cf.modules);
	free(cf.lists);
	free(cf.pcs);
	free(cf.pc_frame);
	stackfile_free(&f);
	return rc;
}

/* ---- blocks inherited across fork (callsites.h) ------------------------------ */

/* A site of a tree set by its image and stack id. */
struct callsites_key {
	pid_t pid;
	uint32_t gen, stack;
	uint64_t bytes, inh;
};

static int callsites_key_cmp(const void *a, const void *b)
{
	const struct callsites_key *x = a, *y = b;
	if (x->pid != y->pid)
		return x->pid < y->pid ? -1 : 1;
	if (x->gen != y->gen)
		return x->gen < y->gen ? -1 : 1;
	return x->stack < y->stack ? -1 : x->stack > y->stack;
}

/* The merged view's image (pid, gen), or NULL.  Asked only for the sites
 * of fork children that inherited: a linear look is cheap enough. */
static const struct image_view *callsites_image_of(const struct merged_run *m, pid_t pid,
						   uint32_t gen)
{
	for (size_t i = 0; i < m->n_images; i++)
		if (m->images[i].pid == pid && m->images[i].gen == gen)
			return &m->images[i];
	return NULL;
}

static uint64_t callsites_min(uint64_t a, uint64_t b)
{
	return a < b ? a : b;
}

/* What the nearest forking ancestor of image iv counted at moment k holds
 * at stack id `stack` (0: none counted, or nothing there). */
static uint64_t callsites_ancestor_holds(const struct merged_run *m, const struct peaksites *p,
					 int k, const struct callsites_key *keys, size_t n,
					 const struct image_view *iv, uint32_t stack)
{
	const struct image_view *a = iv;
	/* a fork chain is as deep as the tree; the bound only stops a cycle
	 * of forged records */
	for (unsigned depth = 0; a && a->rec.relation == MT_REL_FORK && depth < 1024; depth++) {
		const struct peaksites_image *pim =
			callsites_peak_image(p, a->rec.parent_pid, a->rec.parent_gen);
		if (pim && peaksites_at(p, pim, k)) {
			struct callsites_key key = { a->rec.parent_pid, a->rec.parent_gen, stack, 0, 0 };
			const struct callsites_key *h =
				bsearch(&key, keys, n, sizeof *keys, callsites_key_cmp);
			return h ? h->bytes : 0;
		}
		a = callsites_image_of(m, a->rec.parent_pid, a->rec.parent_gen);
	}
	return 0;
}

/* Of site c's inherited bytes, those another image counted at moment k
 * holds too: what its nearest forking ancestor counted then holds at the
 * same stack id; and of the rest (the ancestor freed them, or ended), what
 * the counted sibling of the lowest pid (same parent image) holds of the
 * same beyond that ancestor: the pages the siblings still share. */
static uint64_t callsites_shared(const struct merged_run *m, const struct peaksites *p, int k,
				 const struct callsites_key *keys, size_t n, const struct callsite *c)
{
	const struct image_view *iv = callsites_image_of(m, c->pid, c->gen);
	if (!iv || iv->rec.relation != MT_REL_FORK)
		return 0;
	uint64_t held = callsites_ancestor_holds(m, p, k, keys, n, iv, c->stack);
	uint64_t shared = callsites_min(c->inh, held);
	if (shared == c->inh)
		return shared;
	/* keys are in pid order: the first such sibling is the keeper */
	for (size_t i = 0; i < n && keys[i].pid < c->pid; i++) {
		const struct image_view *sv;
		if (keys[i].stack != c->stack || keys[i].inh <= held ||
		    !(sv = callsites_image_of(m, keys[i].pid, keys[i].gen)))
			continue;
		if (sv->rec.relation == MT_REL_FORK && sv->rec.parent_pid == iv->rec.parent_pid &&
		    sv->rec.parent_gen == iv->rec.parent_gen)
			return shared + callsites_min(c->inh - shared, keys[i].inh - held);
	}
	return shared;
}

/* Each site of tree set k that holds blocks another image counted then
 * holds too: that part split off as an inherited site, the sums made
 * again without it. */
static int callsites_unshare(struct callsite_set *s, const struct merged_run *m,
			     const struct peaksites *p, int k)
{
	size_t n = s->n, any = 0;
	for (size_t i = 0; i < n; i++)
		any += s->v[i].inh != 0;
	if (!any)
		return 0;
	struct callsites_key *keys = malloc(n * sizeof *keys);
	uint64_t *shared = calloc(n, sizeof *shared);
	if (!keys || !shared) {
		free(keys);
		free(shared);
		return -ENOMEM;
	}
	for (size_t i = 0; i < n; i++)
		keys[i] = (struct callsites_key){ s->v[i].pid, s->v[i].gen, s->v[i].stack,
						  s->v[i].bytes, s->v[i].inh };
	qsort(keys, n, sizeof *keys, callsites_key_cmp);
	/* every share from the sites as they were, then the splits */
	for (size_t i = 0; i < n; i++)
		if (s->v[i].inh)
			shared[i] = callsites_shared(m, p, k, keys, n, &s->v[i]);
	free(keys);
	int rc = 0;
	for (size_t i = 0; !rc && i < n; i++) {
		struct callsite *c = &s->v[i], part;
		if (!shared[i] || !c->bytes)
			continue;
		if (shared[i] >= c->bytes) {
			c->inherited = 1; /* all of it: one site, marked */
			c->inh = 0;
			continue;
		}
		double f = (double)shared[i] / (double)c->bytes;
		part = *c;
		part.inherited = 1;
		part.inh = 0;
		part.bytes = shared[i];
		part.count = callsites_min(c->count, (uint64_t)((double)c->count * f + 0.5));
		part.var = callsites_min(c->var, (uint64_t)((double)c->var * f + 0.5));
		c->bytes -= part.bytes;
		c->count -= part.count;
		c->var -= part.var;
		rc = callsites_add(s, &part); /* may move s->v: c is not used after */
	}
	free(shared);
	s->bytes = s->count = s->var = s->inherited_bytes = 0;
	for (size_t i = 0; i < s->n; i++) {
		const struct callsite *c = &s->v[i];
		if (c->inherited) {
			s->inherited_bytes += c->bytes;
			continue;
		}
		s->bytes += c->bytes;
		s->count += c->count;
		s->var += c->var;
	}
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
	/* the heap peak's figure with the images taken at their own peaks,
	 * and the peak of heap plus mappings' */
	if (p && m->heap_peak.have)
		v->tree[PEAKSITES_HEAP].heap = m->heap_peak.heap;
	if (p) {
		v->tree[PEAKSITES_TOTAL].polled = peaksites_total(p, PEAKSITES_TOTAL);
		v->tree[PEAKSITES_TOTAL].heap =
			m->total_peak.have ? m->total_peak.heap : v->tree[PEAKSITES_TOTAL].polled;
	}
	for (size_t i = 0; !rc && (records_dirfd >= 0 || packed) && i < m->n_images; i++)
		if (m->images[i].traced)
			rc = callsites_image(v, &m->images[i], p, records_dirfd, packed);
	for (int k = 0; !rc && p && k < PEAKSITES_KINDS; k++)
		rc = callsites_unshare(&v->tree[k].set, m, p, k);
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
