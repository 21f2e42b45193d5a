/* plot.h: an evidence directory drawn as DIR/timeline.svg, and the
 * `memsup plot` subcommand.
 *
 * plot_load() reads what the directory has -- resources.json (title,
 * budget, peak, wall time, "markers" or else the starts of "phases"),
 * rss.jsonl (tree RSS), timeline.jsonl (traced heap; "top", each sample's
 * largest members, for the stacked bands), processes.json (lanes, band
 * labels, start/exit ticks) -- and degrades when files are missing or
 * partial: a run killed mid-way still gets a picture of what is there, and
 * a torn last line of a .jsonl file is skipped.  Only a directory with none
 * of the four files is an error.  The drawing itself is svg.h.
 *
 * Return convention: 0 or -errno, with a message in err (errlen may be 0).
 */
#ifndef MEMSUP_PLOT_H
#define MEMSUP_PLOT_H

#include <stddef.h>

#include "output/svg.h"
#include "pidmap.h"

/* Longer series are thinned (pairs kept by their max, so peaks survive)
 * while loading: a day at 100 samples/s stays within memory bounds.  The
 * per-sample breakdown is bigger per sample and thinned sooner, each pair
 * keeping the sample with the larger tree RSS (its whole breakdown), which
 * still leaves dozens of samples per pixel column of the widest picture.
 * The bands are the SVG_MAX_BANDS pids with the largest RSS seen in any
 * sample's "top" (ties: the one seen first); a pid reused by another
 * process during the run is one band. */
#define PLOT_MAX_POINTS (1u << 22)
#define PLOT_MAX_STACK (1u << 16)

/* What plot_load() read; d points into the owned arrays. */
struct plot_set {
	struct plot_data d;
	struct plot_point *rss, *heap;
	size_t cap_rss, cap_heap, stride_rss, stride_heap;
	struct plot_proc *procs;
	int *proc_pid;             /* procs[i]'s pid */
	const char **proc_argv0;   /* procs[i]'s program name (in strings) */
	size_t cap_procs;          /* of procs, proc_pid and proc_argv0 alike */
	size_t cap_starts, cap_exits;
	struct plot_stack *stack;
	int *stack_pid;            /* SVG_MAX_BANDS per sample while loading */
	size_t cap_stack, stride_stack;
	struct pidmap peaks;       /* pid -> largest RSS in a "top" (plot.c) */
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
