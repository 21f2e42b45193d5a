/* svg.h: a memory timeline drawn as a standalone SVG (timeline.svg).
 *
 * svg_render() is a pure function of a struct plot_data: no I/O, no clock,
 * no locale, so the same input gives the same bytes (the tests compare
 * them).  It draws, on one time axis:
 *   - the main plot: tree RSS over time as the outline of stacked bands --
 *     the processes that mattered (d->bands, at most SVG_MAX_BANDS, from
 *     the x axis up) and "other processes" (tree RSS minus the bands) on
 *     top, so the stack's top is the tree RSS line -- or, without a
 *     breakdown (d->n_stack == 0: older evidence), one filled area; over it
 *     the traced heap (a second line, broken where the heap is unknown),
 *     the RSS budget as a dashed line (or an "off scale" note when it is
 *     far above the data), the peak as a dot with its value and time, phase
 *     markers as labelled verticals, and process starts/exits as ticks
 *     under the time axis;
 *   - under it, a lane chart of the processes: the SVG_TOP_PROCS largest by
 *     polled peak RSS, one lane each, a bar from first to last sample and a
 *     dot when each was at its peak; the rest share one "other" lane.  It
 *     says what the bands cannot: when each process lived, including the
 *     short or small ones that never made a band.  A lane of a process that
 *     is a band has the band's colour.
 * Axes use decimal units (B, kB, MB, GB, TB: memsup's MB is 10^6 bytes) and
 * ms/s/min/h chosen by range, with 1-2-5 tick steps.  Long series are
 * reduced to min and max per pixel column, so spikes survive and an hour at
 * 100 samples/s stays a few tens of kB.  The stack is reduced to one
 * sample per column, the one with the largest tree RSS, drawn with its own
 * breakdown: every column's stack is a real sample, and the peak's column
 * is exactly the peak.  All text is escaped for XML and made valid UTF-8
 * (any byte may come in: argv, marker labels).
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
	const struct plot_stack *stack; /* per-sample breakdown, in time order;
					   empty: one RSS area, no bands */
	size_t n_stack;
	const char *band_labels[SVG_MAX_BANDS]; /* "pid 123 make"; may be NULL */
	size_t n_bands;            /* <= SVG_MAX_BANDS */
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
	double peak_t, peak_bytes;
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
