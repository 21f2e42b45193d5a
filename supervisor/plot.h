/* plot.h: an evidence directory drawn as DIR/timeline.svg, and the
 * `memsup plot` subcommand.
 *
 * plot_load() reads what the directory has -- resources.json (title,
 * budget, peak, wall time, "markers" or else the starts of "phases"),
 * rss.jsonl (tree RSS), timeline.jsonl (traced heap), processes.json
 * (lanes, start/exit ticks) -- and degrades when files are missing or
 * partial: a run killed mid-way still gets a picture of what is there, and
 * a torn last line of a .jsonl file is skipped.  Only a directory with none
 * of the four files is an error.  The drawing itself is svg.h.
 *
 * Return convention: 0 or -errno, with a message in err (errlen may be 0).
 */
#ifndef MEMSUP_PLOT_H
#define MEMSUP_PLOT_H

#include <stddef.h>

#include "svg.h"

/* Longer series are thinned (pairs kept by their max, so peaks survive)
 * while loading: a day at 100 samples/s stays within memory bounds. */
#define PLOT_MAX_POINTS (1u << 22)

/* What plot_load() read; d points into the owned arrays. */
struct plot_set {
	struct plot_data d;
	struct plot_point *rss, *heap;
	size_t cap_rss, cap_heap, stride_rss, stride_heap;
	struct plot_proc *procs;
	struct plot_marker *markers;
	double *starts, *exits;
	char *title, *subtitle;
	char **strings;            /* labels to free */
	size_t n_strings;
};

int plot_load(int dirfd, struct plot_set *s, char *err, size_t errlen);
void plot_set_free(struct plot_set *s);

/* Load the evidence directory (dirfd if >= 0, else opened from dirpath;
 * dirpath names it in messages either way) and write DIR/timeline.svg
 * atomically (timeline.svg.tmp, renamed over).  width/height 0: the
 * defaults (960x540); others are clamped to svg.h's bounds. */
int plot_write_dir(int dirfd, const char *dirpath, unsigned width, unsigned height,
		   char *err, size_t errlen);

/* `memsup plot DIR [--width N] [--height N] [-o FILE|-] [-h]`; argv[0] is
 * "plot".  Returns memsup's exit status: 0, or 125 with a message on
 * stderr (bad usage included; nothing is written then). */
int plot_main(int argc, char **argv);

#endif /* MEMSUP_PLOT_H */
