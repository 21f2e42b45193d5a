/* flame.h: the tree's heap at its peak by call site, drawn from an
 * evidence directory's stacks.json (stacksjson.h), for the run's end and
 * for `memsup flame` (whose front end is commands.h).
 *
 *   DIR/flame.svg     an icicle graph: the tree at the top, its processes
 *                     in the row below ("pid 123 make -j2"), then each
 *                     process's call stacks from the outermost frame down
 *                     to the code that called the allocator.  A box is as
 *                     wide as the estimated bytes under it; its hover title
 *                     gives its name, bytes and share.  The subtitle states
 *                     the estimate, its standard error and the traced heap
 *                     it estimates.
 *   DIR/flame.folded  one line per distinct path with the bytes held by
 *                     its last frame itself, "pid 123 make;main;f;g 4096":
 *                     the folded form flamegraph.pl, inferno and speedscope
 *                     read.
 *
 * The moment is the tree's peak of heap plus mappings (stacks.json's
 * tree.total_peak: the sample where the traced heap and mappings summed
 * largest, the memory the answer counts as far as the shim sees it; a
 * stacks.json written before it had one: the heap peak), or with --at heap
 * its heap peak, with --at rss its RSS peak.  Sites marked inherited (blocks
 * a fork child holds that another image counted then holds too) are left
 * out: the picture adds up to the tree's own.  flame_render() is pure: the same
 * stacks.json gives the same bytes (children largest first, ties by name;
 * numbers locale-free).  A frame with a source line is "function
 * (file.c:12)" (the file's last component), one without is its function;
 * a frame without a function name is "module+0xOFF" (its ELF address) or,
 * in no module, its address.  Frames at one call address that were inlined
 * into each other are one box each, as stacks.json lists them.
 *
 * Return convention: 0 or -errno, with a message in err (errlen may be 0).
 */
#ifndef MEMSUP_FLAME_H
#define MEMSUP_FLAME_H

#include <stddef.h>
#include <stdint.h>

#include "view/svg.h"

#define FLAME_DEFAULT_WIDTH 1200u
#define FLAME_NONE UINT32_MAX

enum flame_kind { FLAME_ROOT, FLAME_PROCESS, FLAME_FRAME };

/* Which moment (--at): the default is 0. */
enum flame_at { FLAME_AT_TOTAL = 0, FLAME_AT_HEAP, FLAME_AT_RSS };

struct flame_node {
	const char *name;          /* owned by the flame */
	uint64_t bytes;            /* estimated, under this node */
	uint32_t first, next;      /* first child, next sibling (FLAME_NONE) */
	uint32_t depth;
	enum flame_kind kind;
};

struct flame {
	struct flame_node *nodes;  /* nodes[0] is the tree */
	size_t n, cap;
	char **strings;
	size_t n_strings, cap_strings;
	enum flame_at at;          /* the moment asked for */
	int at_heap_instead;       /* total asked, stacks.json had none: heap */
	int have;                  /* stacks.json had that moment */
	double at_s;
	uint64_t traced_heap, rss, se, sample_bytes; /* sample_bytes 0: mixed */
	uint64_t inherited;        /* the inherited sites left out, summed */
	uint32_t max_depth;
};

/* DIR/stacks.json into *f (owned: flame_free). */
int flame_load(int dirfd, enum flame_at at, struct flame *f, char *err, size_t errlen);
void flame_free(struct flame *f);

/* The picture (width 0: the default) and the folded lines, appended. */
int flame_render(const struct flame *f, unsigned width, struct svg_buf *b);
int flame_folded(const struct flame *f, struct svg_buf *b);

/* DIR/flame.svg and DIR/flame.folded at the default moment, each
 * written whole or not at all (a .tmp renamed over). */
int flame_write_dir(int dirfd, const char *dirpath, char *err, size_t errlen);

/* Both at once from the directory at dirfd, appended to *svg and *folded
 * (at and width as for flame_load and flame_render): memsup flame
 * writes them where it is told. */
int flame_render_both(int dirfd, enum flame_at at, unsigned width, struct svg_buf *svg,
		      struct svg_buf *folded, char *err, size_t errlen);

#endif /* MEMSUP_FLAME_H */
