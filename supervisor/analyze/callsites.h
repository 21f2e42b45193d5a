/* callsites.h: who held the heap, by call site: each traced image's
 * sampled sets (at its own heap peak, at its end) and the tree's, at its
 * heap peak and at the sample of its RSS peak (peaksites.h), every frame
 * named (symbols.h).  What stacks.json and flame.svg show.
 *
 * The tree's heap peak is the merged view's (merge.h, heap_peak_view):
 * the polled sum at the sample of the largest traced heap, with each image
 * that peaked within that sample's interval (or was the only one counted)
 * taken at its exact peak.  Its sites are taken at the same moments: such
 * an image's set at its own peak, every other image's set as peaksites
 * copied it at the sample.  The RSS peak's set is the sample's alone.
 *
 * Built at the end of the run from the stacks files (stackfile.h) and what
 * peaksites kept; the images are the merged run's (merge.h).  An image
 * whose record says its total peaked after its last sampled event has its
 * live set as the set at its peak (stacks.h).
 *
 * A site is of kind heap or mmap (its flags' MT_STACK_MMAP: anonymous
 * mappings the program made itself, stacks.h "Mapped memory"); both kinds
 * are in every set.  An image's own peak is its total peak (heap and its
 * own mappings), which is its heap peak when it mapped nothing itself.
 * The tree's moments are three: its peak of heap plus mappings (merge.h,
 * total_peak: what the answer counts, as far as the shim sees it; the
 * summary's and flame.svg's moment), its heap peak and its RSS peak, each
 * with the mappings live then.  The peak of heap plus mappings takes an
 * image at its own total peak by the heap peak's rule.
 *
 * Blocks inherited across fork.  A fork child's stacks table starts as its
 * parent's live set (stacks.h, MT_STACKS_FLAG_INHERITED) with its total
 * columns at 0, so at a stack the child's live bytes above its total bytes
 * are blocks it inherited (a lower bound: a child that freed inherited
 * blocks and allocated again there counts more as its own).  While the
 * parent image is counted at the same moment it holds those blocks too (the
 * same addresses, the same pages until written), and the tree would count
 * them twice: at each tree moment the least of the child's inherited bytes
 * at a stack and what the holder has at that stack (the same stack id: a
 * child's table is a copy of its parent's) is split off as a site of its
 * own marked `inherited`, kept in the set but not in its sums.  The holder
 * is the nearest forking ancestor counted then.  What it no longer holds
 * (it freed them, or ended) the child's siblings may still share (the
 * same pages, unwritten): of that rest, the child of the lowest pid among
 * its counted siblings keeps the blocks as its own and the others' are
 * marked against its; a lone child's counts as its own.  An image taken at its own peak has its peak columns against its
 * final total columns: a lower bound again.
 *
 * Return convention: 0 or -ENOMEM.
 */
#ifndef MEMSUP_CALLSITES_H
#define MEMSUP_CALLSITES_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "analyze/merge.h"
#include "analyze/symbols.h"
#include "collect/peaksites.h"
#include "stacks.h"

/* One stack of one image with its estimated bytes, sampled blocks and
 * variance (bytes^2 / 2^20), its frames innermost first. */
struct callsite {
	pid_t pid;
	uint32_t gen;
	const uint32_t *frames;   /* symbols.h frame indices */
	uint32_t nframes;
	uint32_t flags;           /* MT_STACK_*: MT_STACK_MMAP is the kind */
	uint64_t bytes, count, var;
	uint32_t stack;           /* its id in the image's stacks file */
	int inherited;            /* blocks a holder counted then has too
				     (above): not in the set's sums */
	uint64_t inh;             /* while building: of `bytes`, inherited */
};

struct callsite_set {
	struct callsite *v;       /* largest first */
	size_t n, cap;
	uint64_t bytes, count, var; /* sums, inherited sites left out */
	uint64_t inherited_bytes; /* the inherited sites' sum */
};

struct callsite_image {
	const struct image_view *iv;
	struct mt_stacks_header h; /* the file's header at the end */
	int error;                 /* the file could not be read (stackfile.h) */
	int peak_from_live;        /* its total peaked after its last event */
	int peak_consistent;
	struct callsite_set at_peak, at_exit;
};

struct callsite_tree {
	double at_s;               /* < 0: no such sample */
	uint64_t heap;             /* the traced heap at that peak (above);
				      at the total peak, heap plus mappings */
	uint64_t polled;           /* what the sample summed of the same */
	uint64_t rss;              /* the RSS at that sample */
	struct callsite_set set;   /* every image's sites then */
};

struct callsite_view {
	struct symbols sym;
	struct callsite_image *images; /* traced images that sampled */
	size_t n_images, cap_images;
	struct callsite_tree tree[PEAKSITES_KINDS];
	uint64_t sample_bytes;     /* the images' interval; 0 if they differ */
	uint32_t **frame_lists;    /* owned arrays the sites point into (each
				      site's frames[-1] is its list's count) */
	size_t n_lists, cap_lists;
	int python;                /* some stack holds Python frames */
};

/* An image's stacks are its stacks file in `records_dirfd` (-1: none), else
 * its entry in `packed` (stacks.fold, packed as the image ended; may be
 * NULL).  p may be NULL (no tree sets then).  On failure *v is empty but
 * valid. */
struct stackfold_index;
int callsites_build(struct callsite_view *v, const struct merged_run *m, const struct peaksites *p,
		    int records_dirfd, const struct stackfold_index *packed);
void callsites_free(struct callsite_view *v);

/* The standard error of a set's estimated bytes, in bytes. */
double callsites_se(const struct callsite_set *s);
/* ... and of one site's. */
double callsite_se(const struct callsite *c);

#endif /* MEMSUP_CALLSITES_H */
