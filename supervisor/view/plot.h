/* plot.h: an evidence directory drawn as DIR/timeline.svg (for the run's
 * end and for `memsup plot`, whose front end is commands.h).
 *
 * plot_load() reads what the directory has -- resources.json (title,
 * budget, peak, the cgroup's high-water mark, wall time, "markers" or else
 * the starts of "phases", the OOM kills' victims of "oom"), rss.jsonl
 * (summed RSS), timeline.jsonl (traced
 * heap; Pss; the cgroup's usage, its memory.stat split and its limit events;
 * "top", each sample's largest members, for the stacked bands),
 * processes.json (lanes, band labels and commands, start/exit ticks) --
 * and degrades when files are missing or
 * partial: a run killed mid-way still gets a picture of what is there, and
 * a torn last line of a .jsonl file is skipped.  Only a directory with none
 * of the four files is an error.  The drawing itself is svg.h.
 *
 * Return convention: 0 or -errno, with a message in err (errlen may be 0).
 */
#ifndef MEMSUP_PLOT_H
#define MEMSUP_PLOT_H

#include <stddef.h>

#include "view/svg.h"
#include "base/pidmap.h"

/* Longer series are thinned (pairs kept by their max, so peaks survive)
 * while loading: a day at 100 samples/s stays within memory bounds.  The
 * per-sample breakdown is bigger per sample and thinned sooner, each pair
 * keeping the sample with the larger tree RSS (its whole breakdown), which
 * still leaves dozens of samples per pixel column of the widest picture;
 * so is the cgroup's split (pairs keep the larger usage).  Limit events
 * are samples where "cgroup_limit_hits" or "cgroup_oom_kills" rose (from 0
 * at the start: they count since the run began); past PLOT_MAX_STACK of
 * them pairs merge (the first's time, the counts summed).  The record's
 * OOM kills (its first SVG_MAX_OOMS, read by oomkills.h) name their
 * victims on the OOM kill marks nearest them; when the samples counted no
 * OOM kill at all (no memory cgroup, but the kernel's log named one), each
 * kill the record lists is a mark of its own, at its time.  A forged "oom"
 * names no one.
 *
 * The bands: when at most SVG_MAX_BANDS pids appear in the samples' "top",
 * one band per pid (a pid reused by another process during the run is one
 * band), named "pid N program".  When more do (a build: a thousand images
 * of cc1, as and ld, each alive for a moment), one band per pid would show
 * five arbitrary compilers and lump the rest into "other", so the bands are
 * commands instead: each "top" entry counts for its image's program name
 * (the basename of argv[0] of the image processes.json lists under that
 * pid at that time), a command's bytes at a sample are its entries summed,
 * and the band is named "cc1 (412 processes)" ("pid N program" when only
 * one image ran it).  Pids processes.json does not name (no file, an empty
 * argv) are one command, "(unnamed)"; with no processes.json at all the
 * bands stay pids.  Either way the bands are the SVG_MAX_BANDS keys with
 * the largest bytes in any one sample (ties: the one seen first), stacked
 * in the order they were first seen. */
#define PLOT_MAX_POINTS (1u << 22)
#define PLOT_MAX_STACK (1u << 16)

/* What plot_load() read; d points into the owned arrays. */
struct plot_set {
	struct plot_data d;
	struct plot_point *rss, *heap, *cgroup, *pss;
	size_t cap_rss, cap_heap, cap_cgroup, cap_pss;
	size_t stride_rss, stride_heap, stride_cgroup, stride_pss;
	struct plot_kernel *kernel;
	size_t cap_kernel, stride_kernel;
	struct plot_event *events;
	size_t cap_events;
	struct plot_oom ooms[SVG_MAX_OOMS]; /* victims in strings */
	struct plot_proc *procs;
	int *proc_pid;             /* procs[i]'s pid */
	const char **proc_argv0;   /* procs[i]'s program name (in strings) */
	size_t cap_procs;          /* of procs, proc_pid and proc_argv0 alike */
	size_t cap_starts, cap_exits;
	/* commands, while loading: procs[i]'s command is proc_cmd[i] (1 +
	 * an index of cmd_lane, the lane of its first image; 0: unnamed);
	 * by_pid orders the lanes by pid, then first sample */
	int *proc_cmd;
	size_t *cmd_lane, *cmd_images, *by_pid;
	size_t n_cmds;
	struct plot_stack *stack;
	int *stack_pid;            /* SVG_MAX_BANDS per sample while loading */
	int *stack_cmd;            /* the same entries' command keys */
	size_t cap_stack, stride_stack;
	struct pidmap peaks;       /* pid -> largest RSS in a "top" (plot.c) */
	struct pidmap cmd_peaks;   /* command key -> largest bytes in a sample */
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

/* The picture of the directory at dirfd, appended to *b (width/height as
 * for plot_write_dir): memsup plot -o writes it where it is told. */
int plot_render(int dirfd, unsigned width, unsigned height, struct svg_buf *b, char *err,
		size_t errlen);

#endif /* MEMSUP_PLOT_H */
