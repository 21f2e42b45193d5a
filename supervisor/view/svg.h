/* svg.h: a memory timeline drawn as a standalone SVG (timeline.svg).
 *
 * svg_render() is a pure function of a struct plot_data: no I/O, no clock,
 * no locale, so the same input gives the same bytes (the tests compare
 * them).  It draws, on one time axis:
 *   - the main plot, whose y axis is resident memory: the answer -- the
 *     memory of the whole tree at once -- as a bold line, the run's memory
 *     cgroup usage (d->cgroup), or without one the polled Pss as points
 *     (d->pss, only at the samples that read smaps); under the cgroup line
 *     the kernel's split of it (d->kernel: anon, page cache, shmem, kernel
 *     memory) as stacked bands; the summed RSS (d->rss, which counts a page
 *     shared by n processes n times) as a line, over stacked per-process
 *     bands when the kernel's split is not there to fill the plot; the
 *     traced heap as a line broken where it is unknown; the RSS budget as a
 *     dashed line (or an "off scale" note when it is far above the data);
 *     the answer's peak as a dot with its value and time (and the summed
 *     RSS peak as a ring when the answer is another series); the cgroup's
 *     limit events (d->events) as triangles on the time axis, an OOM kill's
 *     naming its victims (d->ooms) in its label and tooltip; phase markers
 *     as labelled verticals, and process starts/exits as ticks under the
 *     time axis.  The y axis is scaled to the resident figures (summed RSS,
 *     cgroup, Pss, the budget when near): a heap above it (memory requested
 *     and never touched) is clipped at the top and its true maximum written
 *     there, so it never squeezes the resident series;
 *   - with the kernel's split in the main plot, the per-process bands in a
 *     panel of their own under it (its own y axis, the summed RSS as the
 *     stack's top): d->bands, at most SVG_MAX_BANDS, from the x axis up, and
 *     "other processes" (summed RSS minus the bands) on top; without a
 *     breakdown (d->n_stack == 0: older evidence) the summed RSS is one
 *     filled area;
 *   - under it, a lane chart of the processes: the SVG_TOP_PROCS largest by
 *     polled peak RSS, one lane each, a bar from first to last sample and a
 *     dot when each was at its peak; the rest share one "other" lane.  It
 *     says what the bands cannot: when each process lived, including the
 *     short or small ones that never made a band.  A lane of a process that
 *     is (or whose command is) a band has the band's colour.
 * Axes use decimal units (B, kB, MB, GB, TB: memsup's MB is 10^6 bytes) and
 * ms/s/min/h chosen by range, with 1-2-5 tick steps.  Long series are
 * reduced to min and max per pixel column, so spikes survive and an hour at
 * 100 samples/s stays a few tens of kB.  Each stack (the processes', the
 * kernel's) is reduced to one sample per column, the one with the largest
 * total, drawn with its own breakdown: every column's stack is a real
 * sample, and the peak's column is exactly the peak.  All text is escaped
 * for XML and made valid UTF-8 (any byte may come in: argv, marker labels).
 *
 * Return convention: 0 or -errno.
 */
#ifndef MEMSUP_SVG_H
#define MEMSUP_SVG_H

#include <stddef.h>

#define SVG_DEFAULT_WIDTH 960u
#define SVG_DEFAULT_HEIGHT 540u
#define SVG_MIN_WIDTH 320u
#define SVG_MAX_WIDTH 8192u
#define SVG_MIN_HEIGHT 240u
#define SVG_MAX_HEIGHT 8192u
#define SVG_TOP_PROCS 5u
#define SVG_MAX_BANDS 5u
#define SVG_KERNEL_PARTS 4u        /* anon, page cache, shmem, kernel */
#define SVG_MAX_OOMS 16u           /* victims named (the record lists at most 16) */

struct plot_point {
	double t;                  /* seconds since the start */
	double v;                  /* bytes; < 0: unknown (a gap in the line) */
};

struct plot_proc {
	const char *label;         /* "pid 123 make -j2", any bytes; may be NULL */
	double first_s, last_s;    /* first and last sample that saw it */
	double peak_bytes;         /* polled peak RSS */
	double peak_at_s;          /* < 0: unknown */
	unsigned band;             /* 1 + the index of its band; 0: not a band */
};

/* One sample's breakdown for the stacked bands. */
struct plot_stack {
	double t;
	double rss;                /* tree RSS, bytes: the top of the stack */
	double band[SVG_MAX_BANDS]; /* bytes of band k at this sample (0: not
				       among the sample's largest); the "other"
				       band is rss minus their sum */
};

/* One sample of the kernel's split of the cgroup's memory (memory.stat),
 * stacked from the x axis up in this order; the parts add up to about
 * `total` (the kernel counts a few pages in none of them), and they are
 * drawn as they are, never scaled to it. */
struct plot_kernel {
	double t;
	double total;              /* the cgroup's usage at this sample, bytes
				      (< 0: unknown); a column shows the sample
				      with the largest */
	double part[SVG_KERNEL_PARTS]; /* anon, page cache, shmem, kernel; bytes */
};

/* A sample at which the cgroup's limit counters rose: how many new events
 * since the sample before (0: that counter did not rise). */
struct plot_event {
	double t;
	double limit_hits;         /* memory.events "max" / memory.failcnt */
	double oom_kills;
};

/* An OOM kill the record names (resources.json's "oom"): its victim is
 * named on the OOM kill mark (an event with oom_kills) nearest in time. */
struct plot_oom {
	double t;                  /* the sample that saw the kill */
	const char *victim;        /* "pid 4242 'python'", any bytes */
};

struct plot_marker {
	double t;
	const char *label;         /* any bytes; may be NULL */
};

struct plot_data {
	const char *title;         /* any bytes; may be NULL */
	const char *subtitle;      /* how the run ended, right of the title; may be NULL */
	const struct plot_point *rss;   /* tree RSS, in time order */
	size_t n_rss;
	const struct plot_point *heap;  /* traced heap, in time order; may be empty */
	size_t n_heap;
	const struct plot_point *cgroup; /* the run's memory cgroup usage, in time
					    order (v < 0: a gap); empty: none */
	size_t n_cgroup;
	double cgroup_hwm_bytes;   /* the kernel's high-water mark of it (memory.peak);
				      <= 0: unknown */
	const struct plot_point *pss;   /* polled Pss, at the samples that read it
					   (drawn as points, the answer only
					   when there is no cgroup line) */
	size_t n_pss;
	double pss_at_peak_bytes;  /* Pss at the summed RSS peak (the record's);
				      <= 0: unknown */
	const struct plot_kernel *kernel; /* the cgroup's split, in time order;
					     empty: none */
	size_t n_kernel;
	const struct plot_event *events; /* limit events, in time order */
	size_t n_events;
	const struct plot_oom *ooms;     /* the kills' victims, in any order */
	size_t n_ooms;                   /* <= SVG_MAX_OOMS */
	const struct plot_stack *stack; /* per-sample breakdown, in time order;
					   empty: one RSS area, no bands */
	size_t n_stack;
	const char *band_labels[SVG_MAX_BANDS]; /* "pid 123 make", "cc1 (412
						   processes)"; may be NULL */
	size_t n_bands;            /* <= SVG_MAX_BANDS */
	int bands_by_command;      /* the bands are commands, not pids (plot.h) */
	const struct plot_proc *procs;  /* every process, any order */
	size_t n_procs;
	const struct plot_marker *markers;
	size_t n_markers;
	const double *starts;      /* process start times (ticks) */
	size_t n_starts;
	const double *exits;       /* process exit times (ticks) */
	size_t n_exits;
	double budget_bytes;       /* <= 0: no budget */
	int have_peak;
	double peak_t, peak_bytes; /* the summed RSS peak (resources.json) */
	double t_end;              /* the run's wall time; <= 0: from the data */
	unsigned width, height;    /* 0: the default; clamped to the bounds */
};

/* A growing output buffer.  err is set (-ENOMEM) once an append fails and
 * every later append is then a no-op. */
struct svg_buf {
	char *p;
	size_t len, cap;
	int err;
};

void svg_buf_free(struct svg_buf *b);

/* Render d into b (appended).  0 or -ENOMEM. */
int svg_render(const struct plot_data *d, struct svg_buf *b);

/* Write the whole of b to fd (retrying short writes).  0 or -errno. */
int svg_write_fd(int fd, const struct svg_buf *b);
/* b as dirfd/name, whole or not at all (evidence_replace_simple). */
int svg_write_atomic(int dirfd, const char *name, const struct svg_buf *b);
/* b to an -o argument: "-" is stdout; a path that is not a regular file
 * (/dev/stdout, a FIFO, a symlink to one) is written through, never
 * renamed over (a rename would put a file in place of a device); anything
 * else is replaced atomically. */
int svg_write_path(const char *out, const struct svg_buf *b);

/* An axis: ticks at 0, step, 2*step, ... <= max, labels in `unit`
 * (value / scale).  Exposed for the tests. */
struct svg_axis {
	double max;                /* the axis end (>= the data) */
	double step;               /* 1, 2 or 5 x 10^k, in base units */
	double scale;              /* base units per display unit */
	const char *unit;          /* "MB", "s", ... */
	int decimals;              /* for tick labels */
};

/* Byte axis from 0 to at least max_bytes, about `ticks` ticks. */
void svg_axis_bytes(double max_bytes, unsigned ticks, struct svg_axis *a);
/* Time axis from 0 to exactly duration_s, about `ticks` ticks. */
void svg_axis_time(double duration_s, unsigned ticks, struct svg_axis *a);
/* "12.5 MB" / "250 ms": v with a's unit and 3 significant digits. */
void svg_format_value(const struct svg_axis *a, double v, char *buf, size_t cap);

/* For other pictures (flame.c): s appended as it is (markup); a coordinate
 * with one decimal at most, locale-free. */
void svg_put(struct svg_buf *b, const char *s);
void svg_put_coord(struct svg_buf *b, double v);

/* Append s (n bytes) as XML text: & < > " ' as entities, control bytes and
 * ill-formed UTF-8 as U+FFFD, at most max_chars characters ("..." after a
 * cut; 0: no limit). */
void svg_put_text(struct svg_buf *b, const char *s, size_t n, size_t max_chars);

#endif /* MEMSUP_SVG_H */
