/* svg.c: the memory timeline as SVG (see svg.h).
 *
 * Pure and deterministic: every number goes through fmt_fixed() (integer
 * arithmetic, so no locale can turn "0.5" into "0,5"), sorting breaks ties
 * by index, and nothing reads the clock or the environment.
 */
#include "view/svg.h"
#include "evidence/evidence.h"
#include "jsonw.h"
#include "decimal.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* ---- arithmetic without libm (memsup links libc and libdl only) ---------------- */

static double floor_d(double x)
{
	double t = (double)(long long)x;
	return t > x ? t - 1 : t;
}

static double ceil_d(double x)
{
	double t = (double)(long long)x;
	return t < x ? t + 1 : t;
}

static long long round_ll(double x)
{
	return (long long)(x >= 0 ? x + 0.5 : x - 0.5);
}

static double abs_d(double x)
{
	return x < 0 ? -x : x;
}

/* ---- the buffer ------------------------------------------------------------ */

void svg_buf_free(struct svg_buf *b)
{
	free(b->p);
	b->p = NULL;
	b->len = b->cap = 0;
}

static void put_n(struct svg_buf *b, const char *s, size_t n)
{
	if (b->err)
		return;
	if (b->len + n + 1 > b->cap) {
		size_t cap = b->cap ? b->cap : 4096;
		while (cap < b->len + n + 1)
			cap *= 2;
		char *p = realloc(b->p, cap);
		if (!p) {
			b->err = -ENOMEM;
			return;
		}
		b->p = p;
		b->cap = cap;
	}
	memcpy(b->p + b->len, s, n);
	b->len += n;
	b->p[b->len] = '\0';
}

static void put(struct svg_buf *b, const char *s)
{
	put_n(b, s, strlen(s));
}

/* Only integers and pre-formatted strings go through here (%d, %u, %s):
 * never %f, whose decimal point belongs to the locale. */
__attribute__((format(printf, 2, 3)))
static void putf(struct svg_buf *b, const char *fmt, ...)
{
	char tmp[512];
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(tmp, sizeof tmp, fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	put_n(b, tmp, (size_t)n < sizeof tmp ? (size_t)n : sizeof tmp - 1);
}

int svg_write_fd(int fd, const struct svg_buf *b)
{
	size_t off = 0;
	while (off < b->len) {
		ssize_t n = write(fd, b->p + off, b->len - off);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		off += (size_t)n;
	}
	return 0;
}

static int svg_fill(int fd, const void *b)
{
	return svg_write_fd(fd, b);
}

int svg_write_atomic(int dirfd, const char *name, const struct svg_buf *b)
{
	return evidence_replace_simple(dirfd, name, svg_fill, b);
}

int svg_write_path(const char *out, const struct svg_buf *b)
{
	struct stat st;
	if (strcmp(out, "-") == 0)
		return svg_write_fd(STDOUT_FILENO, b);
	if (lstat(out, &st) == 0 && !S_ISREG(st.st_mode)) {
		int fd = open(out, O_WRONLY | O_TRUNC | O_CLOEXEC);
		if (fd < 0)
			return -errno;
		int rc = svg_write_fd(fd, b);
		if (close(fd) < 0 && rc == 0)
			rc = -errno;
		return rc;
	}
	return svg_write_atomic(AT_FDCWD, out, b);
}

/* v with `dec` decimals (0..6), trailing zeros kept; "-0" never. */
static void fmt_fixed(double v, int dec, char *buf, size_t cap)
{
	static const long long pow10[] = { 1, 10, 100, 1000, 10000, 100000, 1000000 };
	if (dec < 0)
		dec = 0;
	if (dec > 6)
		dec = 6;
	if (!isfinite(v))
		v = 0;
	if (v > 1e15)
		v = 1e15;
	if (v < -1e15)
		v = -1e15;
	long long m = round_ll(v * (double)pow10[dec]);
	unsigned long long a = m < 0 ? (unsigned long long)-m : (unsigned long long)m;
	/* The digit writer, where snprintf("%llu.%0*llu") was: the same
	 * text, at a tenth of the instructions -- a picture writes hundreds
	 * of numbers, and memsup draws one at the end of every run. */
	char t[2 * DECIMAL_U64_BYTES + 2];
	char *p = t + sizeof t;
	if (dec > 0) {
		p = decimal_u64_back(p, a % (unsigned long long)pow10[dec], (size_t)dec);
		*--p = '.';
	}
	p = decimal_u64_back(p, a / (unsigned long long)pow10[dec], 1);
	if (m < 0)
		*--p = '-';
	size_t n = (size_t)(t + sizeof t - p);
	if (cap == 0)
		return;
	if (n > cap - 1)
		n = cap - 1; /* cut as snprintf cuts */
	memcpy(buf, p, n);
	buf[n] = '\0';
}

/* A coordinate: one decimal, ".0" dropped (most are whole pixels). */
static void put_coord(struct svg_buf *b, double v)
{
	char s[40];
	fmt_fixed(v, 1, s, sizeof s);
	size_t n = strlen(s);
	if (n > 2 && s[n - 2] == '.' && s[n - 1] == '0')
		n -= 2;
	put_n(b, s, n);
}

void svg_put(struct svg_buf *b, const char *s)
{
	put(b, s);
}

void svg_put_coord(struct svg_buf *b, double v)
{
	put_coord(b, v);
}

/* ---- text ------------------------------------------------------------------- */

/* Length of the well-formed UTF-8 sequence at s (n bytes left) that XML 1.0
 * accepts as one character, or 0 if it is not one. */
static size_t utf8_char_len(const unsigned char *s, size_t n)
{
	unsigned c = s[0];
	if (c < 0x80)
		return (c >= 0x20 && c != 0x7f) || c == '\t' || c == '\n' || c == '\r' ? 1 : 0;
	size_t len = jsonw_utf8_len(s, n);
	/* U+FFFE and U+FFFF are well-formed UTF-8 but not XML characters */
	if (len == 3 && c == 0xef && s[1] == 0xbf && s[2] >= 0xbe)
		return 0;
	return len;
}

void svg_put_text(struct svg_buf *b, const char *s, size_t n, size_t max_chars)
{
	const unsigned char *u = (const unsigned char *)s;
	size_t chars = 0;
	for (size_t i = 0; i < n;) {
		if (max_chars && chars + 1 >= max_chars && i + 1 < n) {
			/* one place left and more than one character to go */
			put(b, "\xe2\x80\xa6");
			return;
		}
		chars++;
		size_t len = utf8_char_len(u + i, n - i);
		if (len == 0) {
			put(b, "\xef\xbf\xbd"); /* U+FFFD for each bad byte */
			i++;
			continue;
		}
		switch (u[i]) {
		case '&': put(b, "&amp;"); break;
		case '<': put(b, "&lt;"); break;
		case '>': put(b, "&gt;"); break;
		case '"': put(b, "&quot;"); break;
		case '\'': put(b, "&apos;"); break;
		case '\t': case '\n': case '\r': put(b, " "); break;
		default: put_n(b, s + i, len); break;
		}
		i += len;
	}
}

static void put_str(struct svg_buf *b, const char *s, size_t max_chars)
{
	if (s)
		svg_put_text(b, s, strlen(s), max_chars);
}

/* ---- axes ------------------------------------------------------------------- */

/* The smallest 1, 2 or 5 x 10^k that is >= x (x > 0). */
static double nice_step(double x)
{
	double p = 1;
	while (p * 10 <= x)
		p *= 10;
	while (p > x)
		p /= 10;
	double f = x / p;
	/* a hair of tolerance: 0.2/0.1 must read as 2, not 2.0000000001 -> 5 */
	if (f <= 1.000001)
		return p;
	if (f <= 2.000001)
		return 2 * p;
	if (f <= 5.000001)
		return 5 * p;
	return 10 * p;
}

static int decimals_for(double step_display)
{
	int d = 0;
	for (double m = step_display; d < 6 && m < 0.999999; m *= 10)
		d++;
	/* 2.5-like steps never happen (1-2-5), so one pass suffices */
	return d;
}

void svg_axis_bytes(double max_bytes, unsigned ticks, struct svg_axis *a)
{
	if (!(max_bytes >= 1) || !isfinite(max_bytes))
		max_bytes = 1e6;
	if (ticks < 2)
		ticks = 2;
	a->step = nice_step(max_bytes / ticks);
	a->max = ceil_d(max_bytes / a->step - 1e-9) * a->step;
	static const struct { double scale; const char *unit; } units[] = {
		{ 1, "B" }, { 1e3, "kB" }, { 1e6, "MB" }, { 1e9, "GB" }, { 1e12, "TB" },
	};
	size_t u = 0;
	while (u + 1 < sizeof units / sizeof units[0] && a->max >= units[u + 1].scale * 0.999999)
		u++;
	a->scale = units[u].scale;
	a->unit = units[u].unit;
	a->decimals = decimals_for(a->step / a->scale);
}

void svg_axis_time(double duration_s, unsigned ticks, struct svg_axis *a)
{
	if (!(duration_s > 0) || !isfinite(duration_s))
		duration_s = 0.01;
	if (duration_s < 1e-3)
		duration_s = 1e-3;
	if (ticks < 2)
		ticks = 2;
	a->max = duration_s;
	if (duration_s < 1) {
		a->scale = 1e-3;
		a->unit = "ms";
	} else if (duration_s < 180) {
		a->scale = 1;
		a->unit = "s";
	} else if (duration_s < 3 * 3600) {
		a->scale = 60;
		a->unit = "min";
	} else {
		a->scale = 3600;
		a->unit = "h";
	}
	a->step = nice_step(duration_s / a->scale / ticks) * a->scale;
	a->decimals = decimals_for(a->step / a->scale);
}

void svg_format_value(const struct svg_axis *a, double v, char *buf, size_t cap)
{
	double d = v / a->scale;
	double m = abs_d(d);
	int dec = m >= 100 ? 0 : m >= 10 ? 1 : m >= 1 ? 2 : 3;
	char num[48];
	fmt_fixed(d, dec, num, sizeof num);
	snprintf(buf, cap, "%s %s", num, a->unit);
}

/* Bytes in the unit that suits the value itself (a budget far above the
 * axis, a small process under a large tree). */
static void fmt_bytes(double v, char *buf, size_t cap)
{
	struct svg_axis a = { .scale = 1, .unit = "B" };
	static const struct { double scale; const char *unit; } units[] = {
		{ 1e3, "kB" }, { 1e6, "MB" }, { 1e9, "GB" }, { 1e12, "TB" },
	};
	for (size_t u = 0; u < sizeof units / sizeof units[0]; u++)
		if (v >= units[u].scale * 0.9995) {
			a.scale = units[u].scale;
			a.unit = units[u].unit;
		}
	svg_format_value(&a, v, buf, cap);
}

/* Bytes as memsup's summary writes them: MB with one decimal, thousands
 * grouped ("1,461.9 MB"); below 1 MB as fmt_bytes() does. */
static void fmt_mb(double v, char *buf, size_t cap)
{
	if (!(v >= 1e6) || !isfinite(v)) {
		fmt_bytes(v > 0 && isfinite(v) ? v : 0, buf, cap);
		return;
	}
	char num[32], grouped[48];
	fmt_fixed(v / 1e6, 1, num, sizeof num);
	/* num is "digits.d"; a comma every three digits left of the point */
	size_t dot = strlen(num) - 2, o = 0;
	for (size_t i = 0; i < dot; i++) {
		if (i && (dot - i) % 3 == 0)
			grouped[o++] = ',';
		grouped[o++] = num[i];
	}
	snprintf(grouped + o, sizeof grouped - o, "%s", num + dot);
	snprintf(buf, cap, "%s MB", grouped);
}

static void put_tick_label(struct svg_buf *b, const struct svg_axis *a, double v)
{
	char s[48];
	fmt_fixed(v / a->scale, a->decimals, s, sizeof s);
	put(b, s);
}

/* ---- layout ----------------------------------------------------------------- */

struct frame {
	double x0, x1;             /* plot area, pixels */
	double y0, y1;             /* main plot top and bottom */
	double lane_y0, lane_h;    /* the process lanes */
	unsigned n_lanes;
	double bottom;             /* bottom of everything the grid spans */
	struct svg_axis ax, ay;
	unsigned cols;             /* pixel columns of the plot area */
	int panel;                 /* the process bands have a panel of their own */
	double py0, py1;           /* its top and bottom */
	double pleg_y;             /* its legend's first row */
	struct svg_axis pay;       /* its y axis */
	int heap_off;              /* the heap goes above ay.max: clipped, noted */
};

/* The panel as a frame of its own (same x, its y), so that everything that
 * draws in the main plot can draw there too. */
static struct frame panel_frame(const struct frame *f)
{
	struct frame p = *f;
	p.y0 = f->py0;
	p.y1 = f->py1;
	p.ay = f->pay;
	return p;
}

static double fx(const struct frame *f, double t)
{
	if (t < 0)
		t = 0;
	if (t > f->ax.max)
		t = f->ax.max;
	return f->x0 + t / f->ax.max * (f->x1 - f->x0);
}

static double fy(const struct frame *f, double v)
{
	if (v < 0)
		v = 0;
	if (v > f->ay.max)
		v = f->ay.max;
	return f->y1 - v / f->ay.max * (f->y1 - f->y0);
}

static unsigned fcol(const struct frame *f, double t)
{
	double c = (fx(f, t) - f->x0);
	if (c < 0)
		c = 0;
	unsigned u = (unsigned)c;
	return u >= f->cols ? f->cols - 1 : u;
}

static void put_xy(struct svg_buf *b, double x, double y)
{
	put_coord(b, x);
	put(b, ",");
	put_coord(b, y);
}

/* ---- series ----------------------------------------------------------------- */

/* The points of a series reduced to at most two per pixel column (the min
 * and the max, in the order they happened), segments split at unknown
 * values: "M x,y L x,y x,y ... M ...".  Returns the number of points. */
static size_t put_series(struct svg_buf *b, const struct frame *f, const struct plot_point *p,
			 size_t n, double *first_x, double *last_x)
{
	size_t out = 0;
	int open = 0;              /* inside a segment */
	int have = 0;              /* a column is pending */
	unsigned col = 0;
	double vmin = 0, vmax = 0;
	size_t imin = 0, imax = 0;
#define FLUSH_COL()                                                                 \
	do {                                                                        \
		double x = f->x0 + col + 0.5;                                       \
		double a = imin <= imax ? vmin : vmax, z = imin <= imax ? vmax : vmin; \
		put(b, open ? " " : (out ? " M" : "M"));                            \
		if (!open && first_x && !out)                                       \
			*first_x = x;                                               \
		open = 1;                                                           \
		put_xy(b, x, fy(f, a));                                             \
		out++;                                                              \
		if (fy(f, z) != fy(f, a)) {                                         \
			put(b, " ");                                                \
			put_xy(b, x, fy(f, z));                                     \
			out++;                                                      \
		}                                                                   \
		if (last_x)                                                         \
			*last_x = x;                                                \
		have = 0;                                                           \
	} while (0)
	for (size_t i = 0; i < n; i++) {
		if (!(p[i].v >= 0) || !isfinite(p[i].t)) {
			if (have)
				FLUSH_COL();
			open = 0;
			continue;
		}
		unsigned c = fcol(f, p[i].t);
		if (have && c != col)
			FLUSH_COL();
		if (!have) {
			have = 1;
			col = c;
			vmin = vmax = p[i].v;
			imin = imax = i;
		} else {
			if (p[i].v < vmin) {
				vmin = p[i].v;
				imin = i;
			}
			if (p[i].v > vmax) {
				vmax = p[i].v;
				imax = i;
			}
		}
	}
	if (have)
		FLUSH_COL();
#undef FLUSH_COL
	return out;
}

/* ---- the picture ------------------------------------------------------------ */

static const char *const lane_colors[] = {
	"#2ca02c", "#9467bd", "#8c564b", "#e377c2", "#17becf", "#bcbd22",
};
#define COLOR_RSS "#1f77b4"
#define COLOR_HEAP "#ff7f0e"
#define COLOR_BUDGET "#d62728"
#define COLOR_PEAK "#d62728"
#define COLOR_MARK "#555555"
#define COLOR_START "#2ca02c"
#define COLOR_EXIT "#7f7f7f"
#define COLOR_OTHER "#aaaaaa"
/* The bands are opaque (drawn one over the other, see put_stack), so their
 * fills are light; band k's lane takes the dark colour of the same hue. */
static const char *const band_fill[SVG_MAX_BANDS] = {
	"#98df8a", "#c5b0d5", "#c49c94", "#f7b6d2", "#9edae5",
};
static const char *const band_dark[SVG_MAX_BANDS] = {
	"#2ca02c", "#9467bd", "#8c564b", "#e377c2", "#17becf",
};
#define COLOR_OTHER_FILL "#dddddd"
#define COLOR_NOBAND "#7f7f7f"
/* The answer is the darkest thing in the plot; the kernel's parts under it
 * are light (opaque, drawn like the bands), each with a dark edge colour
 * for its legend swatch. */
#define COLOR_ANSWER "#111111"
static const char *const kernel_fill[SVG_KERNEL_PARTS] = {
	"#a6cee3", "#fdbf6f", "#b2df8a", "#cab2d6",
};
static const char *const kernel_dark[SVG_KERNEL_PARTS] = {
	"#1f78b4", "#ff7f00", "#33a02c", "#6a3d9a",
};
static const char *const kernel_name[SVG_KERNEL_PARTS] = {
	"anon", "page-cache", "shmem", "kernel",
};
static const char *const kernel_label[SVG_KERNEL_PARTS] = {
	"anon", "page cache", "shmem", "kernel memory",
};
#define COLOR_LIMIT "#756bb1"
#define COLOR_OOM "#a50f15"

struct proc_rank {
	const struct plot_proc *p;
	size_t idx;
};

static int rank_cmp(const void *a, const void *b)
{
	const struct proc_rank *x = a, *y = b;
	if (x->p->peak_bytes != y->p->peak_bytes)
		return x->p->peak_bytes > y->p->peak_bytes ? -1 : 1;
	if (x->p->first_s != y->p->first_s)
		return x->p->first_s < y->p->first_s ? -1 : 1;
	return x->idx < y->idx ? -1 : x->idx > y->idx;
}

/* The largest known value of a series, its index in *at (SIZE_MAX: none;
 * ties: the first). */
static double series_max(const struct plot_point *p, size_t n, size_t *at)
{
	double m = -1;
	size_t k = SIZE_MAX;
	for (size_t i = 0; i < n; i++)
		if (p[i].v > m && isfinite(p[i].v) && isfinite(p[i].t)) {
			m = p[i].v;
			k = i;
		}
	if (at)
		*at = k;
	return m;
}

/* The top of the kernel's stack at a sample: its parts summed. */
static double kernel_sum(const struct plot_kernel *k, size_t upto)
{
	double sum = 0;
	for (size_t j = 0; j <= upto && j < SVG_KERNEL_PARTS; j++)
		if (k->part[j] > 0 && isfinite(k->part[j]))
			sum += k->part[j];
	return sum;
}

/* The largest resident figure: what the main plot's y axis is for (summed
 * RSS, the cgroup's usage and its split, Pss, the summed RSS peak).  The
 * heap is not one: a heap far above them (requested, never touched) would
 * squeeze them to the bottom of the plot, so it is clipped instead. */
static double resident_max(const struct plot_data *d)
{
	double m = 0, v;
	if ((v = series_max(d->rss, d->n_rss, NULL)) > m)
		m = v;
	if ((v = series_max(d->cgroup, d->n_cgroup, NULL)) > m)
		m = v;
	if ((v = series_max(d->pss, d->n_pss, NULL)) > m)
		m = v;
	for (size_t i = 0; i < d->n_stack; i++)
		if (d->stack[i].rss > m)
			m = d->stack[i].rss;
	for (size_t i = 0; i < d->n_kernel; i++)
		if ((v = kernel_sum(&d->kernel[i], SVG_KERNEL_PARTS - 1)) > m)
			m = v;
	if (d->have_peak && d->peak_bytes > m)
		m = d->peak_bytes;
	return m;
}

/* What the picture gives as the memory of the tree, its answer: the
 * cgroup's usage (exact: the kernel counts the whole tree at once, a shared
 * page once), else the polled Pss (shared pages split between their
 * processes, read near the summed RSS peaks), else only the summed RSS. */
enum answer { ANSWER_RSS, ANSWER_CGROUP, ANSWER_PSS };

static enum answer answer_of(const struct plot_data *d)
{
	if (series_max(d->cgroup, d->n_cgroup, NULL) >= 0)
		return ANSWER_CGROUP;
	if (series_max(d->pss, d->n_pss, NULL) >= 0)
		return ANSWER_PSS;
	return ANSWER_RSS;
}

/* Whether the kernel's split is there to stack: a sample with a part. */
static int have_kernel(const struct plot_data *d)
{
	for (size_t i = 0; i < d->n_kernel; i++)
		for (size_t j = 0; j < SVG_KERNEL_PARTS; j++)
			if (d->kernel[i].part[j] >= 0 && isfinite(d->kernel[i].t))
				return 1;
	return 0;
}

/* The answer's peak: the line's (or the points') largest sample. */
static int answer_peak(const struct plot_data *d, double *t, double *v)
{
	size_t at;
	switch (answer_of(d)) {
	case ANSWER_CGROUP:
		*v = series_max(d->cgroup, d->n_cgroup, &at);
		*t = d->cgroup[at].t;
		return 1;
	case ANSWER_PSS:
		*v = series_max(d->pss, d->n_pss, &at);
		*t = d->pss[at].t;
		return 1;
	default:
		*t = d->peak_t;
		*v = d->peak_bytes;
		return d->have_peak;
	}
}

static double time_end(const struct plot_data *d)
{
	double t = d->t_end > 0 ? d->t_end : 0;
#define UPD(x) do { if (isfinite(x) && (x) > t) t = (x); } while (0)
	if (d->n_rss)
		UPD(d->rss[d->n_rss - 1].t);
	if (d->n_heap)
		UPD(d->heap[d->n_heap - 1].t);
	if (d->n_stack)
		UPD(d->stack[d->n_stack - 1].t);
	if (d->n_cgroup)
		UPD(d->cgroup[d->n_cgroup - 1].t);
	if (d->n_pss)
		UPD(d->pss[d->n_pss - 1].t);
	if (d->n_kernel)
		UPD(d->kernel[d->n_kernel - 1].t);
	if (d->n_events)
		UPD(d->events[d->n_events - 1].t);
	for (size_t i = 0; i < d->n_procs; i++)
		UPD(d->procs[i].last_s);
	for (size_t i = 0; i < d->n_markers; i++)
		UPD(d->markers[i].t);
	if (d->have_peak)
		UPD(d->peak_t);
#undef UPD
	return t;
}

static int any_known(const struct plot_point *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (p[i].v >= 0)
			return 1;
	return 0;
}

/* The bands the caller gave, at most SVG_MAX_BANDS. */
static size_t bands_of(const struct plot_data *d)
{
	return d->n_bands < SVG_MAX_BANDS ? d->n_bands : SVG_MAX_BANDS;
}

/* Whether the picture stacks bands: a breakdown and at least one band. */
static int have_stack(const struct plot_data *d)
{
	return d->n_stack > 0 && bands_of(d) > 0;
}

/* The top of level k of sample s: bands 0..k summed (k = bands_of(d): the
 * tree RSS, the top of "other").  Clamped to the tree RSS, so a breakdown
 * that claims more than the total (hand-made input) cannot poke above the
 * RSS line. */
static double stack_level(const struct plot_data *d, const struct plot_stack *s, size_t k)
{
	if (k >= bands_of(d))
		return s->rss;
	double sum = 0;
	for (size_t j = 0; j <= k; j++)
		if (s->band[j] > 0)
			sum += s->band[j];
	return sum < s->rss ? sum : s->rss;
}

/* The legend: items left to right, wrapping to a new row at the plot's
 * right edge.  Text width is estimated (no font metrics here): ~6.2 px per
 * character at 11 px. */
struct legend {
	struct svg_buf buf;
	double x, y, x0, x1;
};

static void legend_item_max(struct legend *L, const char *swatch, const char *label,
			    size_t max_chars)
{
	/* an item without a swatch is a heading for the items after it */
	double sw = *swatch ? 22 : 0;
	size_t len = strlen(label);
	double w = sw + 6.2 * (double)(len < max_chars ? len : max_chars);
	if (L->x > L->x0 && L->x + w > L->x1) {
		L->x = L->x0;
		L->y += 16;
	}
	putf(&L->buf, "<g transform=\"translate(");
	put_coord(&L->buf, L->x);
	put(&L->buf, ",");
	put_coord(&L->buf, L->y);
	putf(&L->buf, ")\">%s<text x=\"%d\" y=\"4\">", swatch, (int)sw);
	put_str(&L->buf, label, max_chars);
	put(&L->buf, "</text></g>\n");
	L->x += w + (*swatch ? 16 : 8);
}

static void legend_item(struct legend *L, const char *swatch, const char *label)
{
	legend_item_max(L, swatch, label, 60);
}

/* Columns covered by any of the intervals [a, b], as runs: a bar each. */
static void put_runs(struct svg_buf *b, const struct frame *f, const unsigned char *cover,
		     double y, double h, const char *color)
{
	for (unsigned c = 0; c < f->cols;) {
		if (!cover[c]) {
			c++;
			continue;
		}
		unsigned e = c;
		while (e < f->cols && cover[e])
			e++;
		put(b, "<rect x=\"");
		put_coord(b, f->x0 + c);
		put(b, "\" y=\"");
		put_coord(b, y);
		putf(b, "\" width=\"%u\" height=\"", e - c);
		put_coord(b, h);
		putf(b, "\" fill=\"%s\" fill-opacity=\"0.45\"/>\n", color);
		c = e;
	}
}

static void cover_span(const struct frame *f, unsigned char *cover, double a, double z)
{
	if (!isfinite(a) || !isfinite(z))
		return;
	if (z < a)
		z = a;
	for (unsigned c = fcol(f, a), e = fcol(f, z); c <= e; c++)
		cover[c] = 1;
}

static void put_lanes(struct svg_buf *b, const struct plot_data *d, const struct frame *f,
		      const struct proc_rank *rank, size_t n_top)
{
	double h = f->lane_h;
	double bar = h > 6 ? h - 3 : h;
	int fs = h >= 14 ? 10 : (int)h - 3;
	unsigned char *cover = calloc(f->cols, 1);
	if (!cover) {
		b->err = -ENOMEM;
		return;
	}
	char v[64], t[96];
	put(b, "<g class=\"lanes\">\n");
	putf(b, "<text x=\"");
	put_coord(b, f->x0);
	put(b, "\" y=\"");
	put_coord(b, f->lane_y0 - 4);
	/* as much of the explanation as the width holds (~5.6 px a character) */
	static const char *const heads[] = {
		"Processes by polled peak RSS: bar = seen alive, dot = at its peak. Not stacked: "
		"this evidence has no per-process RSS over time.",
		"Processes by polled peak RSS: bar = alive, dot = at its peak (not stacked)",
		"Processes: bar = alive, dot = peak",
	};
	static const char *const heads_stacked[] = {
		"Processes, largest polled peak RSS first: bar = seen alive (first to last "
		"sample), dot = at its peak, colour = its band above (grey: not a band)",
		"Processes by polled peak RSS: bar = alive, dot = at its peak, colour = band",
		"Processes: bar = alive, dot = peak",
	};
	const char *const *hs = have_stack(d) ? heads_stacked : heads;
	size_t hi = 0;
	while (hi + 1 < sizeof heads / sizeof heads[0] &&
	       5.6 * (double)strlen(hs[hi]) > f->x1 - f->x0)
		hi++;
	putf(b, "\" font-size=\"10\" fill=\"#333\">%s</text>\n", hs[hi]);
	for (size_t k = 0; k < f->n_lanes; k++) {
		double y = f->lane_y0 + (double)k * h;
		int other = k == n_top;
		const char *color = other ? COLOR_OTHER : lane_colors[k % 6];
		if (!other && have_stack(d)) {
			/* the colour of its band, so lane and band read as one */
			unsigned bd = rank[k].p->band;
			color = bd && bd <= bands_of(d) ? band_dark[bd - 1] : COLOR_NOBAND;
		}
		memset(cover, 0, f->cols);
		double peak = -1, peak_at = -1;
		size_t n_other = 0;
		for (size_t i = other ? n_top : k; i < (other ? d->n_procs : k + 1); i++) {
			const struct plot_proc *p = rank[i].p;
			cover_span(f, cover, p->first_s, p->last_s);
			if (p->peak_bytes > peak) {
				peak = p->peak_bytes;
				peak_at = p->peak_at_s;
			}
			n_other++;
		}
		put_runs(b, f, cover, y + (h - bar) / 2, bar, color);
		if (peak_at >= 0 && !other) {
			put(b, "<circle cx=\"");
			put_coord(b, fx(f, peak_at));
			put(b, "\" cy=\"");
			put_coord(b, y + h / 2);
			putf(b, "\" r=\"%s\" fill=\"%s\"/>\n", h >= 10 ? "3" : "2", color);
		}
		if (fs < 6)
			continue;
		fmt_bytes(peak > 0 ? peak : 0, v, sizeof v);
		put(b, "<text x=\"");
		put_coord(b, f->x0 + 4);
		put(b, "\" y=\"");
		put_coord(b, y + h / 2 + fs * 0.35);
		/* a white halo keeps the label readable over bars and dots */
		putf(b, "\" font-size=\"%d\" fill=\"#222\" stroke=\"#fff\" stroke-width=\"2.5\" "
			"stroke-opacity=\"0.8\" paint-order=\"stroke\">", fs);
		if (other) {
			snprintf(t, sizeof t, "%zu other process%s, largest ", n_other,
				 n_other == 1 ? "" : "es");
			put(b, t);
			put(b, v);
		} else {
			put_str(b, rank[k].p->label ? rank[k].p->label : "?", 60);
			put(b, " \xc2\xb7 peak ");
			put(b, v);
		}
		put(b, "</text>\n");
	}
	put(b, "</g>\n");
	free(cover);
}

/* A stack of levels over samples, for put_levels(): sample i's time, the
 * total that picks a column's sample, and the top of level k. */
struct stack_src {
	size_t n, levels;
	double (*t)(const struct plot_data *d, size_t i);
	double (*total)(const struct plot_data *d, size_t i);
	double (*level)(const struct plot_data *d, size_t i, size_t k);
	/* level k's path opens with this (class and fill) */
	void (*open)(struct svg_buf *b, const struct plot_data *d, size_t k);
};

/* Stacked levels.  One sample per pixel column -- the one with the largest
 * total, with its own breakdown -- so every column is a real sample and the
 * column of the peak shows the peak.  Painter's algorithm: each level is an
 * opaque area from the x axis up to its top, drawn from the top level down
 * to level 0, so each polygon has one data edge (half the bytes of closed
 * band outlines).  Points in the middle of a level run are dropped (a band
 * at 0 for an hour costs two points). */
static void put_levels(struct svg_buf *b, const struct plot_data *d, const struct frame *f,
		       const struct stack_src *src)
{
	size_t *pick = malloc(f->cols * sizeof *pick);
	if (!pick) {
		b->err = -ENOMEM;
		return;
	}
	for (unsigned c = 0; c < f->cols; c++)
		pick[c] = SIZE_MAX;
	for (size_t i = 0; i < src->n; i++) {
		double t = src->t(d, i), tot = src->total(d, i);
		if (!isfinite(t) || !(tot >= 0))
			continue;
		unsigned c = fcol(f, t);
		if (pick[c] == SIZE_MAX || tot > src->total(d, pick[c]))
			pick[c] = i;
	}
	unsigned c0 = 0, c1 = f->cols;
	while (c0 < f->cols && pick[c0] == SIZE_MAX)
		c0++;
	while (c1 > c0 && pick[c1 - 1] == SIZE_MAX)
		c1--;
	for (size_t k = src->levels; c0 < c1 && k-- > 0;) {
		src->open(b, d, k);
		put(b, " d=\"M");
		put_xy(b, f->x0 + c0 + 0.5, f->y1);
		long long prev = LLONG_MIN;
		for (unsigned c = c0; c < c1; c++) {
			if (pick[c] == SIZE_MAX)
				continue;
			double y = fy(f, src->level(d, pick[c], k));
			long long q = round_ll(y * 10);
			/* the next column's y: a point between two equal ones goes */
			unsigned n = c + 1;
			while (n < c1 && pick[n] == SIZE_MAX)
				n++;
			long long qn = n < c1 ? round_ll(fy(f, src->level(d, pick[n], k)) * 10)
					      : LLONG_MIN;
			if (q == prev && q == qn)
				continue;
			prev = q;
			put(b, " L");
			put_xy(b, f->x0 + c + 0.5, y);
		}
		put(b, " L");
		put_xy(b, f->x0 + c1 - 1 + 0.5, f->y1);
		put(b, "Z\"/>\n");
	}
	free(pick);
}

/* The process bands: bands_of(d) levels and "other" (the summed RSS) on
 * top. */
static double pstack_t(const struct plot_data *d, size_t i)
{
	return d->stack[i].t;
}

static double pstack_total(const struct plot_data *d, size_t i)
{
	return d->stack[i].rss;
}

static double pstack_level(const struct plot_data *d, size_t i, size_t k)
{
	return stack_level(d, &d->stack[i], k);
}

static void pstack_open(struct svg_buf *b, const struct plot_data *d, size_t k)
{
	if (k == bands_of(d))
		put(b, "<path class=\"band band-other\" fill=\"" COLOR_OTHER_FILL "\"");
	else
		putf(b, "<path class=\"band band-%zu\" fill=\"%s\"", k, band_fill[k]);
}

static void put_stack(struct svg_buf *b, const struct plot_data *d, const struct frame *f)
{
	const struct stack_src src = { d->n_stack, bands_of(d) + 1, pstack_t, pstack_total,
				       pstack_level, pstack_open };
	put(b, "<g class=\"stack\" stroke=\"none\">\n");
	put_levels(b, d, f, &src);
	put(b, "</g>\n");
}

/* The kernel's split of the cgroup's memory: anon at the bottom, then page
 * cache, shmem and kernel memory, each as high as memory.stat said (the
 * stack is not scaled to the cgroup's usage: where the two differ, the
 * picture shows it). */
static double kstack_t(const struct plot_data *d, size_t i)
{
	return d->kernel[i].t;
}

static double kstack_total(const struct plot_data *d, size_t i)
{
	const struct plot_kernel *k = &d->kernel[i];
	return k->total >= 0 ? k->total : kernel_sum(k, SVG_KERNEL_PARTS - 1);
}

static double kstack_level(const struct plot_data *d, size_t i, size_t k)
{
	return kernel_sum(&d->kernel[i], k);
}

static void kstack_open(struct svg_buf *b, const struct plot_data *d, size_t k)
{
	(void)d;
	putf(b, "<path class=\"kband kband-%s\" fill=\"%s\"", kernel_name[k], kernel_fill[k]);
}

static void put_kernel_stack(struct svg_buf *b, const struct plot_data *d, const struct frame *f)
{
	const struct stack_src src = { d->n_kernel, SVG_KERNEL_PARTS, kstack_t, kstack_total,
				       kstack_level, kstack_open };
	put(b, "<g class=\"kernel-split\" stroke=\"none\">\n");
	put_levels(b, d, f, &src);
	put(b, "</g>\n");
}

static void put_ticks(struct svg_buf *b, const struct frame *f, const double *ts, size_t n,
		      double y, double len, const char *color, const char *cls)
{
	if (!n)
		return;
	unsigned char *seen = calloc(f->cols, 1);
	if (!seen) {
		b->err = -ENOMEM;
		return;
	}
	putf(b, "<path class=\"%s\" stroke=\"%s\" stroke-width=\"1.5\" d=\"", cls, color);
	for (size_t i = 0; i < n; i++) {
		if (!isfinite(ts[i]))
			continue;
		unsigned c = fcol(f, ts[i]);
		if (seen[c])
			continue;
		seen[c] = 1;
		put(b, "M");
		put_xy(b, f->x0 + c + 0.5, y);
		put(b, "v");
		put_coord(b, len);
	}
	put(b, "\"/>\n");
	free(seen);
}

/* The processes by polled peak RSS, largest first: rank[0..n_top) get a
 * lane each, the rest share the "other" lane.  -ENOMEM. */
static int rank_procs(const struct plot_data *d, struct proc_rank **out, size_t *n_top)
{
	*out = NULL;
	*n_top = 0;
	if (!d->n_procs)
		return 0;
	struct proc_rank *rank = malloc(d->n_procs * sizeof *rank);
	if (!rank)
		return -ENOMEM;
	for (size_t i = 0; i < d->n_procs; i++)
		rank[i] = (struct proc_rank){ &d->procs[i], i };
	qsort(rank, d->n_procs, sizeof *rank, rank_cmp);
	/* a single "other" would be a lane of its own anyway */
	*n_top = d->n_procs <= SVG_TOP_PROCS + 1 ? d->n_procs : SVG_TOP_PROCS;
	*out = rank;
	return 0;
}

/* Legend swatches. */
#define SW_LINE(color, width) "<path d=\"M0,0h16\" stroke=\"" color "\" stroke-width=\"" width "\"/>"
#define SW_TRIANGLE(color) "<path d=\"M3.5,5L8,-3L12.5,5Z\" fill=\"" color "\"/>"

static void legend_rect(struct legend *L, const char *fill, const char *stroke, const char *label,
			size_t max_chars)
{
	char sw[160];
	snprintf(sw, sizeof sw, "<rect x=\"0\" y=\"-5\" width=\"16\" height=\"10\" "
		 "fill=\"%s\" stroke=\"%s\"/>", fill, stroke);
	legend_item_max(L, sw, label, max_chars);
}

/* Whether "other processes" ever holds something (a tree of up to five
 * processes has none). */
static int other_band_used(const struct plot_data *d)
{
	for (size_t i = 0; i < d->n_stack; i++)
		if (d->stack[i].rss > stack_level(d, &d->stack[i], bands_of(d) - 1))
			return 1;
	return 0;
}

/* The process bands' items: each band, then "other processes". */
static void legend_bands(struct legend *L, const struct plot_data *d, int terse)
{
	for (size_t k = 0; k < bands_of(d); k++) {
		char lab[32];
		snprintf(lab, sizeof lab, "band %zu", k + 1);
		legend_rect(L, band_fill[k], band_dark[k], d->band_labels[k] ? d->band_labels[k] : lab,
			    terse ? 18 : 32);
	}
	if (other_band_used(d))
		legend_rect(L, COLOR_OTHER_FILL, COLOR_OTHER, terse ? "other" : "other processes", 60);
}

/* Whether the process bands are drawn in the main plot: when the kernel's
 * split is not there to fill it. */
static int bands_in_main(const struct plot_data *d)
{
	return have_stack(d) && !have_kernel(d);
}

/* The main legend's items, left to right: the answer and its split first,
 * then the summed RSS (and its bands when they share the plot), the heap,
 * and the marks.  `terse`: short labels, so a small picture keeps its
 * plot. */
static void put_legend(struct legend *L, const struct plot_data *d, int terse)
{
	char v[64], t[96];
	enum answer a = answer_of(d);
	int kern = have_kernel(d);
	if (a == ANSWER_CGROUP)
		legend_item(L, SW_LINE(COLOR_ANSWER, "2.5"),
			    terse ? "tree (cgroup)"
			    : kern ? "memory of the tree (cgroup, kernel), split:"
				   : "memory of the tree (cgroup, kernel)");
	else if (kern)
		legend_item(L, "", "the cgroup's split:");
	for (size_t k = 0; kern && k < SVG_KERNEL_PARTS; k++)
		legend_rect(L, kernel_fill[k], kernel_dark[k], kernel_label[k], 60);
	if (a == ANSWER_PSS)
		legend_item(L, "<circle cx=\"8\" cy=\"0\" r=\"2.5\" fill=\"" COLOR_ANSWER "\"/>",
			    terse ? "polled Pss" : "memory of the tree (polled Pss)");
	const char *rss = terse ? "summed RSS" : "summed RSS (counts shared pages per process)";
	if (d->n_rss || d->n_stack) {
		if (bands_in_main(d) || kern)
			legend_item(L, SW_LINE(COLOR_RSS, "2"), rss);
		else
			legend_item(L, "<rect x=\"0\" y=\"-5\" width=\"16\" height=\"10\" fill=\""
					COLOR_RSS "\" fill-opacity=\"0.25\" stroke=\"" COLOR_RSS "\"/>", rss);
	}
	if (bands_in_main(d))
		legend_bands(L, d, terse);
	if (any_known(d->heap, d->n_heap))
		legend_item(L, SW_LINE(COLOR_HEAP, "2"), terse ? "heap" : "traced heap (shim)");
	if (d->budget_bytes > 0) {
		fmt_bytes(d->budget_bytes, v, sizeof v);
		snprintf(t, sizeof t, "%s%s", terse ? "budget " : "RSS budget ", v);
		legend_item(L, "<path d=\"M0,0h16\" stroke=\"" COLOR_BUDGET
				"\" stroke-width=\"1.5\" stroke-dasharray=\"5,3\"/>", t);
	}
	double pt, pv;
	if (answer_peak(d, &pt, &pv))
		legend_item(L, "<circle cx=\"8\" cy=\"0\" r=\"3.5\" fill=\"" COLOR_PEAK "\"/>",
			    a == ANSWER_CGROUP ? "peak (cgroup)" : a == ANSWER_PSS ? "peak (Pss)" : "peak");
	if (a != ANSWER_RSS && d->have_peak)
		legend_item(L, "<circle cx=\"8\" cy=\"0\" r=\"3\" fill=\"#fff\" stroke=\"" COLOR_RSS
				"\" stroke-width=\"1.5\"/>", "summed RSS peak");
	int limit = 0, oom = 0;
	for (size_t i = 0; i < d->n_events; i++) {
		limit |= d->events[i].limit_hits > 0;
		oom |= d->events[i].oom_kills > 0;
	}
	if (limit)
		legend_item(L, SW_TRIANGLE(COLOR_LIMIT), terse ? "limit hit" : "cgroup limit hit");
	if (oom)
		legend_item(L, SW_TRIANGLE(COLOR_OOM), "OOM kill");
	if (d->n_markers)
		legend_item(L, "<path d=\"M8,-6v12\" stroke=\"" COLOR_MARK
				"\" stroke-dasharray=\"3,2\"/>", terse ? "phase" : "phase marker");
	if (d->n_starts || d->n_exits)
		legend_item(L, "<path d=\"M4,-5v5M7,-5v5\" stroke=\"" COLOR_START
				"\" stroke-width=\"1.5\"/><path d=\"M10,0v5M13,0v5\" stroke=\"" COLOR_EXIT
				"\" stroke-width=\"1.5\"/>",
			    terse ? "start/exit" : "process starts / exits");
}

/* The panel's legend: what the panel is, then its bands. */
static void put_panel_legend(struct legend *L, const struct plot_data *d, int terse)
{
	legend_item(L, "", terse ? "summed RSS:"
			   : d->bands_by_command ? "summed RSS by command:" : "summed RSS by process:");
	legend_bands(L, d, terse);
}

/* A byte axis for a plot `height` px high whose data reach `top`: about a
 * tick every 45 px (30 in a short panel), the count among three nearby
 * whose axis ends lowest, so the data fill as much of the height as 1-2-5
 * steps allow (217 MB on 4 ticks would end at 300 MB, on 5 at 250). */
static void axis_fit(double top, double height, double per_tick, struct svg_axis *a)
{
	unsigned n = (unsigned)(height / per_tick < 2 ? 2 : height / per_tick);
	svg_axis_bytes(top > 0 ? top * 1.06 : 1e6, n, a);
	for (unsigned k = n + 1; k <= n + 2; k++) {
		struct svg_axis b;
		svg_axis_bytes(top > 0 ? top * 1.06 : 1e6, k, &b);
		if (b.max < a->max)
			*a = b;
	}
}

/* Everything below the legend (whose last row is at legend_y): the main
 * plot, the ticks under it, the process panel (panel_rows > 0: its legend
 * has that many rows; left out when the picture is too short for it), the
 * lanes, and the axes.  Returns whether the budget is drawn to scale. */
static int lay_out(const struct plot_data *d, struct frame *f, unsigned H, double legend_y,
		   size_t n_top, unsigned panel_rows)
{
	f->y0 = legend_y + 18;
	f->n_lanes = (unsigned)(n_top + (d->n_procs > n_top));
	f->panel = panel_rows > 0;
	double below = 36;                         /* time labels and title */
	double ticks_h = (d->n_starts || d->n_exits) ? 12 : 4;
	double lanes_total = 0;
	f->lane_h = 0;
	if (f->n_lanes) {
		/* lanes take at most a third of the picture; a quarter under
		 * bands, which say most of it already; a fifth beside a panel */
		double share = f->panel ? 5 : have_stack(d) ? 4 : 3;
		f->lane_h = floor_d(((H - f->y0 - below) / share - 16) / f->n_lanes);
		if (f->lane_h > 16)
			f->lane_h = 16;
		if (f->lane_h < 4) {
			f->lane_h = 0;
			f->n_lanes = 0;
		} else
			lanes_total = 16 + f->lane_h * f->n_lanes;
	}
	f->bottom = H - below;
	f->lane_y0 = f->bottom - f->lane_h * f->n_lanes;
	svg_axis_time(time_end(d), (unsigned)(f->cols / 110 < 3 ? 3 : f->cols / 110), &f->ax);

	/* the y axis is for resident memory; the heap sets it only when
	 * there is nothing resident to show */
	double top = resident_max(d);
	double heap = series_max(d->heap, d->n_heap, NULL);
	if (top <= 0 && heap > 0)
		top = heap;
	int budget_on_scale = 0;
	if (d->budget_bytes > 0 && isfinite(d->budget_bytes)) {
		/* A budget far above the data (a default of 8 GB for a 50 MB run)
		 * would squash the plot into a line: note it instead. */
		budget_on_scale = top <= 0 || d->budget_bytes <= 4 * top;
		if (budget_on_scale && d->budget_bytes > top)
			top = d->budget_bytes;
	}
	f->heap_off = 0;
	for (int pass = 0; pass < 2; pass++) {
		double avail = f->bottom - lanes_total - ticks_h - f->y0;
		double ph = 0, plegend_h = 16.0 * panel_rows + 6;
		if (f->panel) {
			ph = floor_d((avail - plegend_h) * 0.36);
			if (ph < 48)
				f->panel = 0; /* too short: the lanes still name them */
		}
		if (f->panel) {
			f->y1 = f->y0 + (avail - plegend_h - ph);
			f->pleg_y = f->y1 + ticks_h + 10;
			f->py0 = f->pleg_y + 16.0 * (panel_rows - 1) + 12;
			f->py1 = f->py0 + ph;
		} else {
			f->y1 = f->y0 + avail;
		}
		axis_fit(top, f->y1 - f->y0, 45, &f->ay);
		f->heap_off = heap > f->ay.max;
		if (!f->heap_off || pass)
			break;
		/* room above the plot for the heap's note */
		f->y0 += 8;
	}
	if (f->panel) {
		double pm = 0;
		for (size_t i = 0; i < d->n_stack; i++)
			if (d->stack[i].rss > pm)
				pm = d->stack[i].rss;
		axis_fit(pm, f->py1 - f->py0, 30, &f->pay);
	}
	return budget_on_scale;
}

/* The document's head: the svg element, its title, the background, and the
 * title row. */
static void put_head(struct svg_buf *b, const struct plot_data *d, const struct frame *f,
		     unsigned W, unsigned H)
{
	put(b, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
	putf(b, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%u\" height=\"%u\" "
		"viewBox=\"0 0 %u %u\" font-family=\"DejaVu Sans, Helvetica, Arial, sans-serif\" "
		"font-size=\"11\">\n", W, H, W, H);
	put(b, "<title>");
	put_str(b, d->title ? d->title : "memsup timeline", 300);
	put(b, "</title>\n");
	putf(b, "<rect width=\"%u\" height=\"%u\" fill=\"#ffffff\"/>\n", W, H);
	/* the subtitle (how the run ended) right-aligned; the title gets the
	 * rest of the row (~8.5 px a bold 14 px character, ~6.2 px at 11 px) */
	double sub_w = 0;
	if (d->subtitle && *d->subtitle) {
		size_t sub_max = (size_t)((f->x1 - f->x0) / 2 / 6.2);
		size_t sl = strlen(d->subtitle);
		sub_w = 6.2 * (double)(sl < sub_max ? sl : sub_max) + 12;
		put(b, "<text class=\"subtitle\" text-anchor=\"end\" fill=\"#444\" x=\"");
		put_coord(b, f->x1);
		put(b, "\" y=\"20\">");
		put_str(b, d->subtitle, sub_max);
		put(b, "</text>\n");
	}
	put(b, "<text x=\"");
	put_coord(b, f->x0);
	put(b, "\" y=\"20\" font-size=\"14\" font-weight=\"bold\">");
	double title_room = (f->x1 - f->x0 - sub_w) / 8.5;
	put_str(b, d->title ? d->title : "memsup timeline", title_room < 8 ? 8 : (size_t)title_room);
	put(b, "</text>\n");
}

/* The horizontal grid (translucent, so it reads on white and on the bands
 * alike), the y tick labels and the y axis title of one plot. */
static void put_yaxis(struct svg_buf *b, const struct frame *f, const char *title)
{
	put(b, "<g class=\"grid\" stroke=\"#000\" stroke-opacity=\"0.1\" stroke-width=\"1\">\n");
	for (unsigned i = 1; i * f->ay.step <= f->ay.max * (1 + 1e-9); i++) {
		double yv = i * f->ay.step;
		put(b, "<path d=\"M");
		put_xy(b, f->x0, fy(f, yv));
		put(b, "H");
		put_coord(b, f->x1);
		put(b, "\"/>\n");
	}
	put(b, "</g>\n<g class=\"yaxis\" text-anchor=\"end\" fill=\"#333\">\n");
	for (unsigned i = 0; i * f->ay.step <= f->ay.max * (1 + 1e-9); i++) {
		double yv = i * f->ay.step;
		put(b, "<text x=\"");
		put_coord(b, f->x0 - 5);
		put(b, "\" y=\"");
		put_coord(b, fy(f, yv) + 4);
		put(b, "\">");
		put_tick_label(b, &f->ay, yv);
		put(b, "</text>\n");
	}
	put(b, "</g>\n<text class=\"ytitle\" text-anchor=\"middle\" transform=\"translate(14,");
	put_coord(b, (f->y0 + f->y1) / 2);
	putf(b, ") rotate(-90)\">%s (%s)</text>\n", title, f->ay.unit);
}

/* The vertical grid (through every plot and the lanes), the time labels and
 * the time axis title. */
static void put_xaxis(struct svg_buf *b, const struct frame *f)
{
	put(b, "<g class=\"grid\" stroke=\"#000\" stroke-opacity=\"0.1\" stroke-width=\"1\">\n");
	for (unsigned i = 1; i * f->ax.step <= f->ax.max * (1 + 1e-9); i++) {
		double tv = i * f->ax.step;
		put(b, "<path d=\"M");
		put_xy(b, fx(f, tv), f->y0);
		put(b, "V");
		put_coord(b, f->bottom);
		put(b, "\"/>\n");
	}
	put(b, "</g>\n<g class=\"xaxis\" text-anchor=\"middle\" fill=\"#333\">\n");
	for (unsigned i = 0; i * f->ax.step <= f->ax.max * (1 + 1e-9); i++) {
		double tv = i * f->ax.step;
		put(b, "<text x=\"");
		put_coord(b, fx(f, tv));
		put(b, "\" y=\"");
		put_coord(b, f->bottom + 14);
		put(b, "\">");
		put_tick_label(b, &f->ax, tv);
		put(b, "</text>\n");
	}
	put(b, "</g>\n<text class=\"xtitle\" text-anchor=\"middle\" x=\"");
	put_coord(b, (f->x0 + f->x1) / 2);
	put(b, "\" y=\"");
	put_coord(b, f->bottom + 30);
	putf(b, "\">time since start (%s)</text>\n", f->ax.unit);
}

/* The summed RSS line (over a filled area when nothing else fills the
 * plot: the same points twice) and the traced heap line, clipped at the top
 * of the axis (put_heap_note says by how much). */
static void put_lines(struct svg_buf *b, const struct plot_data *d, const struct frame *f)
{
	if (d->n_rss) {
		struct svg_buf pts = { 0 };
		double xa = f->x0, xz = f->x0;
		put_series(&pts, f, d->rss, d->n_rss, &xa, &xz);
		if (pts.err)
			b->err = pts.err;
		if (pts.len && !have_stack(d) && !have_kernel(d)) {
			put(b, "<path class=\"rss-area\" fill=\"" COLOR_RSS "\" fill-opacity=\"0.18\" "
			       "stroke=\"none\" d=\"M");
			put_xy(b, xa, f->y1);
			put(b, " L");
			put_n(b, pts.p + 1, pts.len - 1); /* without its "M" */
			put(b, " L");
			put_xy(b, xz, f->y1);
			put(b, "Z\"/>\n");
		}
		if (pts.len) {
			put(b, "<path class=\"rss\" fill=\"none\" stroke=\"" COLOR_RSS
			       "\" stroke-width=\"1.5\" stroke-linejoin=\"round\" d=\"");
			put_n(b, pts.p, pts.len);
			put(b, "\"/>\n");
		}
		svg_buf_free(&pts);
	}
	if (any_known(d->heap, d->n_heap)) {
		put(b, "<path class=\"heap\" fill=\"none\" stroke=\"" COLOR_HEAP
		       "\" stroke-width=\"1.5\" stroke-linejoin=\"round\" d=\"");
		put_series(b, f, d->heap, d->n_heap, NULL, NULL);
		put(b, "\"/>\n");
	}
}

/* The answer, over everything else in the plot: the cgroup's usage as a
 * bold line, or the polled Pss as points (one per pixel column, the
 * column's largest: Pss is read only near the summed RSS peaks, so a line
 * between the reads would draw values nobody measured). */
static void put_answer(struct svg_buf *b, const struct plot_data *d, const struct frame *f)
{
	enum answer a = answer_of(d);
	if (a == ANSWER_CGROUP) {
		put(b, "<path class=\"answer\" fill=\"none\" stroke=\"" COLOR_ANSWER
		       "\" stroke-width=\"2.2\" stroke-linejoin=\"round\" d=\"");
		put_series(b, f, d->cgroup, d->n_cgroup, NULL, NULL);
		put(b, "\"/>\n");
	} else if (a == ANSWER_PSS) {
		put(b, "<g class=\"answer pss\" fill=\"" COLOR_ANSWER "\">\n");
		for (size_t i = 0; i < d->n_pss;) {
			if (!(d->pss[i].v >= 0) || !isfinite(d->pss[i].t)) {
				i++;
				continue;
			}
			unsigned c = fcol(f, d->pss[i].t);
			size_t best = i;
			for (i++; i < d->n_pss && isfinite(d->pss[i].t) && fcol(f, d->pss[i].t) == c; i++)
				if (d->pss[i].v > d->pss[best].v)
					best = i;
			put(b, "<circle r=\"2.5\" cx=\"");
			put_coord(b, fx(f, d->pss[best].t));
			put(b, "\" cy=\"");
			put_coord(b, fy(f, d->pss[best].v));
			put(b, "\"/>\n");
		}
		put(b, "</g>\n");
	}
}

/* The heap above the axis: its line runs along the top edge there; a
 * triangle over the edge at its largest sample says so, with its true
 * figure ("heap 1,461.9 MB ↑ off the scale") in the room lay_out() left
 * above the plot. */
static void put_heap_note(struct svg_buf *b, const struct plot_data *d, const struct frame *f)
{
	size_t at;
	double v = series_max(d->heap, d->n_heap, &at);
	if (!f->heap_off || at == SIZE_MAX)
		return;
	char mb[80], lab[128];
	fmt_mb(v, mb, sizeof mb);
	snprintf(lab, sizeof lab, "heap %s \xe2\x86\x91 off the scale", mb);
	double x = fx(f, d->heap[at].t);
	/* ~5.6 px a character at 10 px: right of the mark unless it would run
	 * past the plot */
	double w = 5.6 * (double)(strlen(lab) - 2);
	int left = x + 8 + w > f->x1 && x - 8 - w >= f->x0 - 60;
	put(b, "<g class=\"heap-clip\"><path fill=\"" COLOR_HEAP "\" d=\"M");
	put_xy(b, x - 5, f->y0);
	put(b, " L");
	put_xy(b, x, f->y0 - 7);
	put(b, " L");
	put_xy(b, x + 5, f->y0);
	putf(b, "Z\"/><text font-size=\"10\" fill=\"#b35806\" text-anchor=\"%s\" x=\"",
	     left ? "end" : "start");
	put_coord(b, left ? x - 8 : x + 8);
	put(b, "\" y=\"");
	put_coord(b, f->y0 - 2);
	put(b, "\">");
	put(b, lab);
	put(b, "</text></g>\n");
}

/* For each victim the record names, the OOM kill event nearest its time
 * (an index of d->events; n_events: none to name it on).  The kill and the
 * counter's rise are one sample's, so the nearest is the one; each victim
 * is on one mark only. */
static void oom_marks(const struct plot_data *d, size_t near[SVG_MAX_OOMS])
{
	for (size_t j = 0; j < d->n_ooms && j < SVG_MAX_OOMS; j++) {
		near[j] = d->n_events;
		double best = INFINITY;
		for (size_t i = 0; isfinite(d->ooms[j].t) && i < d->n_events; i++) {
			double gap = fabs(d->events[i].t - d->ooms[j].t);
			if (d->events[i].oom_kills > 0 && gap < best) {
				best = gap;
				near[j] = i;
			}
		}
	}
}

/* The cgroup's limit events: a triangle on the time axis at each sample
 * where a counter rose (one per pixel column and kind, at the first such
 * sample's time), labelled where the label has room, each with a tooltip
 * giving the time and the count; an OOM kill's names its victims, and its
 * label the victim when it is one kill of one named victim. */
static void put_events(struct svg_buf *b, const struct plot_data *d, const struct frame *f)
{
	if (!d->n_events)
		return;
	size_t near[SVG_MAX_OOMS];
	size_t n_ooms = d->n_ooms < SVG_MAX_OOMS ? d->n_ooms : SVG_MAX_OOMS;
	oom_marks(d, near);
	put(b, "<g class=\"events\">\n");
	double label_end[2] = { -1e9, -1e9 };
	for (int kind = 0; kind < 2; kind++) {
		const char *color = kind ? COLOR_OOM : COLOR_LIMIT;
		const char *name = kind ? "OOM kill" : "limit hit";
		for (size_t i = 0; i < d->n_events;) {
			double n = kind ? d->events[i].oom_kills : d->events[i].limit_hits;
			if (!(n > 0) || !isfinite(d->events[i].t)) {
				i++;
				continue;
			}
			size_t first = i;
			unsigned c = fcol(f, d->events[i].t);
			for (i++; i < d->n_events && isfinite(d->events[i].t) &&
				   fcol(f, d->events[i].t) == c; i++) {
				double m = kind ? d->events[i].oom_kills : d->events[i].limit_hits;
				if (m > 0)
					n += m;
			}
			double x = fx(f, d->events[first].t);
			char t[64], cnt[48];
			svg_format_value(&f->ax, d->events[first].t, t, sizeof t);
			fmt_fixed(n, 0, cnt, sizeof cnt);
			/* the victims of this mark's kills: "OOM kill: pid 4242
			 * 'python', pid 4250 'sh' at 4.50 s (2)" */
			const char *victim = NULL;
			size_t n_victims = 0;
			putf(b, "<g class=\"event %s\"><title>%s", kind ? "oom" : "limit", name);
			for (size_t j = 0; kind && j < n_ooms; j++) {
				if (near[j] < first || near[j] >= i)
					continue;
				put(b, n_victims++ ? ", " : ": ");
				put_str(b, d->ooms[j].victim ? d->ooms[j].victim : "?", 80);
				victim = d->ooms[j].victim;
			}
			putf(b, " at %s (%s)</title><path fill=\"%s\" "
				"stroke=\"#fff\" stroke-width=\"0.8\" d=\"M", t, cnt, color);
			put_xy(b, x - 4.5, f->y1);
			put(b, " L");
			put_xy(b, x, f->y1 - 8);
			put(b, " L");
			put_xy(b, x + 4.5, f->y1);
			put(b, "Z\"/>");
			/* OOM kills' labels one row above the limit's; a label only
			 * where the one before it has ended (~5 px a character at 9 px) */
			char lab[120];
			if (n == 1 && n_victims == 1 && victim)
				snprintf(lab, sizeof lab, "%s: %s", name, victim);
			else
				snprintf(lab, sizeof lab, "%s%s%s", name, n > 1 ? " \xc3\x97" : "", n > 1 ? cnt : "");
			double w = 5.0 * (double)strlen(lab);
			if (x - w / 2 > label_end[kind] + 4) {
				label_end[kind] = x + w / 2;
				putf(b, "<text font-size=\"9\" fill=\"%s\" stroke=\"#fff\" stroke-width=\"2.5\" "
					"paint-order=\"stroke\" text-anchor=\"middle\" x=\"", color);
				put_coord(b, x);
				put(b, "\" y=\"");
				put_coord(b, f->y1 - 11 - 10 * kind);
				put(b, "\">");
				put_str(b, lab, 0); /* a victim's comm may be any bytes */
				put(b, "</text>");
			}
			put(b, "</g>\n");
		}
	}
	put(b, "</g>\n");
}

/* A plot's frame, over the fill. */
static void put_plot_frame(struct svg_buf *b, const struct frame *f, const char *cls)
{
	putf(b, "<rect class=\"%s\" fill=\"none\" stroke=\"#888\" x=\"", cls);
	put_coord(b, f->x0);
	put(b, "\" y=\"");
	put_coord(b, f->y0);
	put(b, "\" width=\"");
	put_coord(b, f->x1 - f->x0);
	put(b, "\" height=\"");
	put_coord(b, f->y1 - f->y0);
	put(b, "\"/>\n");
}

/* The process bands' panel: its grid and axis, the bands, the summed RSS
 * as the stack's outline, its frame and legend (built by the caller). */
static void put_panel(struct svg_buf *b, const struct plot_data *d, const struct frame *f,
		      const struct svg_buf *legend)
{
	struct frame p = panel_frame(f);
	put(b, "<g class=\"panel\">\n<g transform=\"translate(0,");
	put_coord(b, f->pleg_y);
	put(b, ")\">\n");
	put_n(b, legend->p ? legend->p : "", legend->len);
	put(b, "</g>\n");
	put_stack(b, d, &p);
	put_yaxis(b, &p, "RSS");
	if (d->n_rss) {
		put(b, "<path class=\"panel-rss\" fill=\"none\" stroke=\"" COLOR_RSS
		       "\" stroke-width=\"1.2\" stroke-linejoin=\"round\" d=\"");
		put_series(b, &p, d->rss, d->n_rss, NULL, NULL);
		put(b, "\"/>\n");
	}
	put_plot_frame(b, &p, "panel-frame");
	put(b, "</g>\n");
}

/* Phase markers: a dashed vertical each, labelled upwards beside it. */
static void put_markers(struct svg_buf *b, const struct plot_data *d, const struct frame *f)
{
	for (size_t i = 0; i < d->n_markers; i++) {
		double x = fx(f, d->markers[i].t);
		put(b, "<g class=\"marker\"><title>");
		put_str(b, d->markers[i].label, 200);
		put(b, "</title><path stroke=\"" COLOR_MARK "\" stroke-dasharray=\"3,2\" d=\"M");
		put_xy(b, x, f->y0);
		put(b, "V");
		put_coord(b, f->y1);
		/* the label reads upwards beside the line: on its right (clear of
		 * the y axis labels) unless the line is at the right edge */
		put(b, "\"/><text font-size=\"10\" fill=\"#333\" text-anchor=\"end\" "
		       "transform=\"translate(");
		put_xy(b, x > f->x1 - 14 ? x - 3 : x + 11, f->y0 + 4);
		put(b, ") rotate(-90)\">");
		/* no longer than the plot is high (~6 px a character) */
		double room = (f->y1 - f->y0 - 8) / 6;
		put_str(b, d->markers[i].label, room < 4 ? 4 : room > 32 ? 32 : (size_t)room);
		put(b, "</text></g>\n");
	}
}

/* The RSS budget: a dashed line, or a note when it is far above the data. */
static void put_budget(struct svg_buf *b, const struct plot_data *d, const struct frame *f,
		       int on_scale)
{
	char v[64];
	if (d->budget_bytes <= 0)
		return;
	fmt_bytes(d->budget_bytes, v, sizeof v);
	if (on_scale) {
		double y = fy(f, d->budget_bytes);
		put(b, "<g class=\"budget\"><path stroke=\"" COLOR_BUDGET "\" stroke-width=\"1.5\" "
		       "stroke-dasharray=\"6,4\" d=\"M");
		put_xy(b, f->x0, y);
		put(b, "H");
		put_coord(b, f->x1);
		/* right-aligned, but left of any marker label near the edge */
		double bx = f->x1 - 4;
		for (size_t i = 0; i < d->n_markers; i++) {
			double mx = fx(f, d->markers[i].t) - 16;
			if (mx < bx && mx > f->x1 - 110)
				bx = mx;
		}
		put(b, "\"/><text fill=\"" COLOR_BUDGET "\" text-anchor=\"end\" x=\"");
		put_coord(b, bx);
		put(b, "\" y=\"");
		put_coord(b, y - 4 < f->y0 + 11 ? y + 13 : y - 4);
		putf(b, "\">budget %s</text></g>\n", v);
	} else {
		put(b, "<g class=\"budget\"><text fill=\"" COLOR_BUDGET "\" text-anchor=\"end\" x=\"");
		put_coord(b, f->x1 - 4);
		put(b, "\" y=\"");
		put_coord(b, f->y0 + 13);
		putf(b, "\">budget %s (far above: not to scale)</text></g>\n", v);
	}
}

/* The answer's peak: a dot labelled with its value and time (and, for the
 * cgroup, the kernel's high-water mark when it is above every sample: a
 * peak between two samples; for Pss, the record's Pss at the summed RSS
 * peak when it is above every point).  When the answer is not the summed
 * RSS, the summed RSS peak is a ring on its line, labelled with its value
 * where the label clears the answer's. */
static void put_peak(struct svg_buf *b, const struct plot_data *d, const struct frame *f)
{
	char v[64], t[96], hwm[64], lab[192];
	double pt, pv;
	if (!answer_peak(d, &pt, &pv))
		return;
	enum answer a = answer_of(d);
	double x = fx(f, pt), y = fy(f, pv);
	fmt_bytes(pv, v, sizeof v);
	svg_format_value(&f->ax, pt, t, sizeof t);
	snprintf(lab, sizeof lab, "peak %s at %s", v, t);
	if (a == ANSWER_CGROUP && d->cgroup_hwm_bytes > pv * 1.005) {
		fmt_bytes(d->cgroup_hwm_bytes, hwm, sizeof hwm);
		snprintf(lab + strlen(lab), sizeof lab - strlen(lab), " (kernel's high-water mark %s)",
			 hwm);
	}
	/* the Pss read at the summed RSS peak may be missing from the
	 * points (the record has it): say it when it is larger */
	if (a == ANSWER_PSS && d->pss_at_peak_bytes > pv * 1.005) {
		fmt_bytes(d->pss_at_peak_bytes, hwm, sizeof hwm);
		snprintf(lab + strlen(lab), sizeof lab - strlen(lab), " (%s at the summed RSS peak)",
			 hwm);
	}
	/* right of the dot unless it would run past the plot (~7 px a
	 * character in bold 11 px) */
	double w = 7.0 * (double)strlen(lab);
	int left = x + 7 + w > f->x1 && x - 7 - w >= f->x0 - 60;
	double ty = y - 7 < f->y0 + 12 ? y + 16 : y - 7;
	put(b, "<g class=\"peak\"><circle fill=\"" COLOR_PEAK "\" stroke=\"#fff\" r=\"4\" cx=\"");
	put_coord(b, x);
	put(b, "\" cy=\"");
	put_coord(b, y);
	putf(b, "\"/><text font-weight=\"bold\" fill=\"" COLOR_PEAK "\" "
		"stroke=\"#fff\" stroke-width=\"3\" paint-order=\"stroke\" text-anchor=\"%s\" x=\"",
	     left ? "end" : "start");
	put_coord(b, left ? x - 7 : x + 7);
	put(b, "\" y=\"");
	put_coord(b, ty);
	put(b, "\">");
	put_str(b, lab, 0);
	put(b, "</text></g>\n");

	if (a == ANSWER_RSS || !d->have_peak)
		return;
	double rx = fx(f, d->peak_t), ry = fy(f, d->peak_bytes);
	char rl[96];
	fmt_bytes(d->peak_bytes, v, sizeof v);
	snprintf(rl, sizeof rl, "summed RSS %s", v);
	double rw = 6.8 * (double)strlen(rl); /* ~6.8 px a character at 11 px, digits wide */
	int rleft = rx + 7 + rw > f->x1;
	double rty = ry - 7 < f->y0 + 12 ? ry + 15 : ry - 7;
	/* the label goes when it would cross the answer's */
	double ax0 = left ? x - 7 - w : x + 7, ax1 = left ? x - 7 : x + 7 + w;
	double rx0 = rleft ? rx - 7 - rw : rx + 7, rx1 = rleft ? rx - 7 : rx + 7 + rw;
	int clash = rty > ty - 13 && rty < ty + 13 && rx0 < ax1 && ax0 < rx1;
	put(b, "<g class=\"rss-peak\"><circle fill=\"#fff\" stroke=\"" COLOR_RSS
	       "\" stroke-width=\"1.5\" r=\"3.5\" cx=\"");
	put_coord(b, rx);
	put(b, "\" cy=\"");
	put_coord(b, ry);
	put(b, "\"/>");
	if (!clash) {
		putf(b, "<text fill=\"" COLOR_RSS "\" stroke=\"#fff\" stroke-width=\"3\" "
			"paint-order=\"stroke\" text-anchor=\"%s\" x=\"", rleft ? "end" : "start");
		put_coord(b, rleft ? rx - 7 : rx + 7);
		put(b, "\" y=\"");
		put_coord(b, rty);
		put(b, "\">");
		put(b, rl);
		put(b, "</text>");
	}
	put(b, "</g>\n");
}

int svg_render(const struct plot_data *d, struct svg_buf *b)
{
	unsigned W = d->width ? d->width : SVG_DEFAULT_WIDTH;
	unsigned H = d->height ? d->height : SVG_DEFAULT_HEIGHT;
	W = W < SVG_MIN_WIDTH ? SVG_MIN_WIDTH : W > SVG_MAX_WIDTH ? SVG_MAX_WIDTH : W;
	H = H < SVG_MIN_HEIGHT ? SVG_MIN_HEIGHT : H > SVG_MAX_HEIGHT ? SVG_MAX_HEIGHT : H;
	struct proc_rank *rank;
	size_t n_top;
	if (rank_procs(d, &rank, &n_top) < 0)
		return b->err = -ENOMEM;

	struct frame f;
	f.x0 = 64;
	f.x1 = W - 16;
	f.cols = (unsigned)(f.x1 - f.x0);
	/* the legends first: their rows decide where the plots start (the
	 * panel's is laid out from 0 and moved under the main plot) */
	struct legend L = { .x = f.x0, .y = 40, .x0 = f.x0, .x1 = f.x1 };
	struct legend P = { .x = f.x0, .y = 0, .x0 = f.x0, .x1 = f.x1 };
	put_legend(&L, d, W < 600);
	unsigned panel_rows = 0;
	if (have_stack(d) && !bands_in_main(d)) {
		put_panel_legend(&P, d, W < 600);
		panel_rows = (unsigned)(P.y / 16) + 1;
	}
	int budget_on_scale = lay_out(d, &f, H, L.y, n_top, panel_rows);

	put_head(b, d, &f, W, H);
	put_n(b, L.buf.p ? L.buf.p : "", L.buf.len);
	if (L.buf.err || P.buf.err)
		b->err = L.buf.err ? L.buf.err : P.buf.err;
	svg_buf_free(&L.buf);
	/* the fills under everything else in the plot; the grid goes over
	 * them */
	if (have_kernel(d))
		put_kernel_stack(b, d, &f);
	else if (have_stack(d))
		put_stack(b, d, &f);
	put_yaxis(b, &f, "memory");
	put_xaxis(b, &f);
	put_lines(b, d, &f);
	put_answer(b, d, &f);
	put_plot_frame(b, &f, "plot-frame");
	put_heap_note(b, d, &f);
	put_markers(b, d, &f);
	put_budget(b, d, &f, budget_on_scale);
	put_events(b, d, &f);
	put_peak(b, d, &f);
	if (f.panel)
		put_panel(b, d, &f, &P.buf);
	svg_buf_free(&P.buf);
	/* process starts and exits under the time axis: starts on the upper
	 * row, exits on the lower */
	if (d->n_starts || d->n_exits) {
		put_ticks(b, &f, d->starts, d->n_starts, f.y1 + 1, 5, COLOR_START, "starts");
		put_ticks(b, &f, d->exits, d->n_exits, f.y1 + 6, 5, COLOR_EXIT, "exits");
	}
	if (f.n_lanes)
		put_lanes(b, d, &f, rank, n_top);
	free(rank);
	put(b, "</svg>\n");
	return b->err;
}
