/* timeline.c: rss.jsonl and timeline.jsonl lines, written and read (see
 * timeline.h).
 *
 * The scanners accept exactly what the formatters write: every number
 * checked against the JSON grammar (strtod must end where the grammar
 * does), the separators and key order as written, keys [a-z_]+ with
 * numbers or null as values except "top".  Anything else goes to jsonr. */
#include "evidence/timeline.h"
#include "evidence/jsonr.h"
#include "evidence/pyfloat.h"
#include "textbuf.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define TIMELINE_MAX_READ_LINE (64u << 20) /* a line longer is -E2BIG */

/* ---- writing ------------------------------------------------------------------- */

/* A line is built with textbuf (a line that would not fit is cut; the
 * _LINE_MAX sizes leave room for the longest).  No printf: a dense sample
 * writes two lines, and vsnprintf's parsing of its format was most of
 * what the writing cost. */

/* `key` is the literal text before the number: ", \"rss\": " */
#define add_field(l, key, v) (textbuf_add_lit((l), key), textbuf_add_u64((l), (v)))

static void add_float(struct textbuf *l, double v)
{
	char f[PYFLOAT_BYTES];
	textbuf_add_n(l, f, pyfloat_format(v, f, sizeof f));
}

size_t timeline_format_rss(double t, uint64_t bytes, char *buf, size_t cap)
{
	struct textbuf l;
	textbuf_init(&l, buf, cap);
	textbuf_add_lit(&l, "[");
	add_float(&l, t);
	add_field(&l, ", ", bytes);
	textbuf_add_lit(&l, "]\n");
	return l.len;
}

size_t timeline_format_sample(const struct timeline_sample *s, char *buf, size_t cap)
{
	struct textbuf l;
	textbuf_init(&l, buf, cap);
	textbuf_add_lit(&l, "{\"t\": ");
	add_float(&l, s->t);
	add_field(&l, ", \"rss\": ", s->rss);
	add_field(&l, ", \"processes\": ", s->processes);
	if (s->traced) {
		add_field(&l, ", \"heap\": ", s->heap);
		add_field(&l, ", \"mapped_anon\": ", s->mapped_anon);
		add_field(&l, ", \"mapped_file\": ", s->mapped_file);
	} else {
		textbuf_add_lit(&l, ", \"heap\": null, \"mapped_anon\": null, \"mapped_file\": null");
	}
	if (s->have_pss)
		add_field(&l, ", \"pss\": ", s->pss);
	if (s->have_cgroup)
		add_field(&l, ", \"cgroup\": ", s->cgroup);
	if (s->have_split) {
		add_field(&l, ", \"cgroup_anon\": ", s->cgroup_anon);
		add_field(&l, ", \"cgroup_page_cache\": ", s->cgroup_page_cache);
		add_field(&l, ", \"cgroup_shmem\": ", s->cgroup_shmem);
		add_field(&l, ", \"cgroup_kernel\": ", s->cgroup_kernel);
	}
	if (s->have_events) {
		add_field(&l, ", \"cgroup_limit_hits\": ", s->cgroup_limit_hits);
		add_field(&l, ", \"cgroup_oom_kills\": ", s->cgroup_oom_kills);
	}
	textbuf_add_lit(&l, ", \"top\": [");
	for (size_t i = 0; i < s->n_top && i < TIMELINE_TOP; i++) {
		if (i)
			textbuf_add_lit(&l, ", ");
		textbuf_add_lit(&l, "[");
		/* a pid is positive; a forged negative one is written as such */
		if (s->top[i].pid < 0)
			textbuf_add_lit(&l, "-");
		textbuf_add_u64(&l, s->top[i].pid < 0 ? -(uint64_t)s->top[i].pid
						      : (uint64_t)s->top[i].pid);
		add_field(&l, ", ", s->top[i].rss);
		textbuf_add_lit(&l, "]");
	}
	textbuf_add_lit(&l, "]}\n");
	return l.len;
}

/* ---- the written forms, scanned ----------------------------------------------- */

/* The end of the JSON number at p, or NULL if p does not start with one. */
static const char *num_end(const char *p, const char *end)
{
	const char *q = p;
	if (q < end && *q == '-')
		q++;
	if (q < end && *q == '0')
		q++;
	else if (q < end && *q >= '1' && *q <= '9')
		while (q < end && *q >= '0' && *q <= '9')
			q++;
	else
		return NULL;
	if (q < end && *q == '.') {
		const char *d = ++q;
		while (q < end && *q >= '0' && *q <= '9')
			q++;
		if (q == d)
			return NULL;
	}
	if (q < end && (*q == 'e' || *q == 'E')) {
		q++;
		if (q < end && (*q == '+' || *q == '-'))
			q++;
		const char *d = q;
		while (q < end && *q >= '0' && *q <= '9')
			q++;
		if (q == d)
			return NULL;
	}
	return q;
}

/* A number at *p; strtod must read exactly what the grammar allows (in a
 * locale with a decimal comma it does not, and the line goes to jsonr). */
static int scan_num(const char **p, const char *end, double *v)
{
	const char *e = num_end(*p, end);
	char *se;
	if (!e || e == end) /* a number must be followed by something here */
		return -1;
	/* Most are whole numbers (bytes, pids): up to 15 digits they are
	 * exact in a double, and summing digits is several times cheaper
	 * than strtod (which was a third of loading an hour of "top"). */
	const char *q = *p;
	if (q < e && *q == '-')
		q++;
	if (e - q <= 15) {
		double n = 0;
		const char *d = q;
		while (d < e && *d >= '0' && *d <= '9')
			n = n * 10 + (*d++ - '0');
		if (d == e) {
			*v = q > *p ? -n : n;
			*p = e;
			return 0;
		}
	}
	*v = strtod(*p, &se);
	if (se != e)
		return -1;
	*p = e;
	return 0;
}

static int scan_lit(const char **p, const char *end, const char *lit)
{
	size_t n = strlen(lit);
	if ((size_t)(end - *p) < n || memcmp(*p, lit, n) != 0)
		return -1;
	*p += n;
	return 0;
}

/* "[t, bytes]" */
int timeline_scan_rss(const char *p, size_t len, double *t, double *bytes)
{
	const char *end = p + len;
	return scan_lit(&p, end, "[") || scan_num(&p, end, t) || scan_lit(&p, end, ", ") ||
	       scan_num(&p, end, bytes) || scan_lit(&p, end, "]") || p != end ? -EINVAL : 0;
}

/* A "top" entry as a reader takes it: a positive int pid and a byte count
 * >= 0; the first TIMELINE_TOP such entries (the writer writes at most that
 * many, largest first). */
static void top_add(struct timeline_point *x, double pid, double bytes)
{
	if (x->n_top < TIMELINE_TOP && pid >= 1 && pid <= INT_MAX && pid == (double)(int)pid &&
	    bytes >= 0 && isfinite(bytes)) {
		x->pid[x->n_top] = (int)pid;
		x->bytes[x->n_top++] = bytes;
	}
}

/* [[pid, n], [pid, n], ...] */
static int scan_top(const char **pp, const char *end, struct timeline_point *x)
{
	const char *p = *pp;
	if (scan_lit(&p, end, "["))
		return -1;
	if (scan_lit(&p, end, "]") == 0) {
		*pp = p;
		return 0;
	}
	for (;;) {
		double pid, bytes;
		if (scan_lit(&p, end, "[") || scan_num(&p, end, &pid) || scan_lit(&p, end, ", ") ||
		    scan_num(&p, end, &bytes) || scan_lit(&p, end, "]"))
			return -1;
		top_add(x, pid, bytes);
		if (scan_lit(&p, end, "]") == 0)
			break;
		if (scan_lit(&p, end, ", "))
			return -1;
	}
	*pp = p;
	return 0;
}

/* Every figure absent. */
static void point_init(struct timeline_point *x)
{
	memset(x, 0, sizeof *x);
	x->rss = x->heap = x->cgroup = x->pss = -1;
	x->cgroup_anon = x->cgroup_page_cache = x->cgroup_shmem = x->cgroup_kernel = -1;
	x->cgroup_limit_hits = x->cgroup_oom_kills = -1;
}

/* The field a reader keeps of the optional numeric key k[0..kl), or NULL
 * for a key it does not keep. */
static double *point_slot(struct timeline_point *x, const char *k, size_t kl)
{
	static const struct {
		const char *key;
		size_t off;
	} kept[] = {
		{ "pss", offsetof(struct timeline_point, pss) },
		{ "cgroup", offsetof(struct timeline_point, cgroup) },
		{ "cgroup_anon", offsetof(struct timeline_point, cgroup_anon) },
		{ "cgroup_page_cache", offsetof(struct timeline_point, cgroup_page_cache) },
		{ "cgroup_shmem", offsetof(struct timeline_point, cgroup_shmem) },
		{ "cgroup_kernel", offsetof(struct timeline_point, cgroup_kernel) },
		{ "cgroup_limit_hits", offsetof(struct timeline_point, cgroup_limit_hits) },
		{ "cgroup_oom_kills", offsetof(struct timeline_point, cgroup_oom_kills) },
	};
	for (size_t i = 0; i < sizeof kept / sizeof kept[0]; i++)
		if (strlen(kept[i].key) == kl && memcmp(kept[i].key, k, kl) == 0)
			return (double *)((char *)x + kept[i].off);
	return NULL;
}

/* {"t": t, "rss": n, "processes": n, "heap": n|null, "key": n|null, ...,
 * "top": [...]}: keys are [a-z_]+ and values numbers or null but "top" */
static int scan_sample(const char *p, const char *end, struct timeline_point *x)
{
	double procs;
	if (end - p < 2 || end[-1] != '}')
		return -1;
	point_init(x);
	if (scan_lit(&p, end, "{\"t\": ") || scan_num(&p, end, &x->t) ||
	    scan_lit(&p, end, ", \"rss\": ") || scan_num(&p, end, &x->rss) ||
	    scan_lit(&p, end, ", \"processes\": ") || scan_num(&p, end, &procs) ||
	    scan_lit(&p, end, ", \"heap\": "))
		return -1;
	if (scan_lit(&p, end, "null") == 0)
		x->heap = -1;
	else if (scan_num(&p, end, &x->heap) < 0)
		return -1;
	/* the rest: , "key": number|null ... and "top" (once) */
	while (p < end - 1) {
		double v;
		if (scan_lit(&p, end, ", \""))
			return -1;
		const char *k = p;
		while (p < end && ((*p >= 'a' && *p <= 'z') || *p == '_'))
			p++;
		size_t kl = (size_t)(p - k);
		if (kl == 0 || scan_lit(&p, end, "\": "))
			return -1;
		if (kl == 3 && memcmp(k, "top", 3) == 0) {
			if (x->has_top || scan_top(&p, end, x) < 0)
				return -1;
			x->has_top = 1;
		} else if (scan_lit(&p, end, "null") == 0) {
			continue;
		} else if (scan_num(&p, end, &v)) {
			return -1;
		} else {
			double *slot = point_slot(x, k, kl);
			if (slot)
				*slot = v;
		}
	}
	return p == end - 1 ? 0 : -1;
}

int timeline_scan_sample(const char *p, size_t len, struct timeline_point *out)
{
	return scan_sample(p, p + len, out) < 0 ? -EINVAL : 0;
}

/* ---- any other JSON ------------------------------------------------------------ */

/* [t, bytes]: an array of exactly two numbers */
static int rss_from_json(const struct jsonr_value *v, double *t, double *bytes)
{
	const struct jsonr_value *a = jsonr_at(v, 0), *b = jsonr_at(v, 1);
	if (!a || !b || a->type != JSONR_NUMBER || b->type != JSONR_NUMBER || v->n != 2)
		return -EINVAL;
	*t = a->number;
	*bytes = b->number;
	return 0;
}

/* an object with a finite "t"; the rest as far as it is there */
static int sample_from_json(const struct jsonr_value *v, struct timeline_point *x)
{
	point_init(x);
	x->t = jsonr_num(jsonr_get(v, "t"), NAN);
	if (!isfinite(x->t))
		return -EINVAL;
	x->rss = jsonr_num(jsonr_get(v, "rss"), -1);
	x->heap = jsonr_num(jsonr_get(v, "heap"), -1);
	for (size_t i = 0; i < v->n; i++) {
		/* the optional figures, through the scanner's one table */
		const char *k = v->keys ? v->keys[i] : NULL;
		double *slot = k ? point_slot(x, k, strlen(k)) : NULL;
		if (slot)
			*slot = jsonr_num(&v->items[i], -1);
	}
	const struct jsonr_value *top = jsonr_get(v, "top");
	if (top && top->type == JSONR_ARRAY) {
		x->has_top = 1;
		for (size_t i = 0; i < top->n; i++) {
			const struct jsonr_value *e = &top->items[i];
			if (e->type == JSONR_ARRAY && e->n == 2)
				top_add(x, jsonr_num(jsonr_at(e, 0), -1), jsonr_num(jsonr_at(e, 1), -1));
		}
	}
	return 0;
}

int timeline_parse_rss(const char *p, size_t len, int whole, double *t, double *bytes)
{
	struct jsonr_value *v;
	if (whole && timeline_scan_rss(p, len, t, bytes) == 0)
		return 0;
	if (len == 0 || jsonr_parse(p, len, &v, NULL, 0) < 0)
		return -EINVAL;
	int rc = rss_from_json(v, t, bytes);
	jsonr_free(v);
	return rc;
}

int timeline_parse_sample(const char *p, size_t len, int whole, struct timeline_point *out)
{
	struct jsonr_value *v;
	if (whole && timeline_scan_sample(p, len, out) == 0)
		return 0;
	if (len == 0 || jsonr_parse(p, len, &v, NULL, 0) < 0)
		return -EINVAL;
	int rc = sample_from_json(v, out);
	jsonr_free(v);
	return rc;
}

/* ---- files --------------------------------------------------------------------- */

int timeline_read_file(int dirfd, const char *name, timeline_line_fn fn, void *ctx, int *found)
{
	/* Streamed through a small buffer: first-touch page faults are dear,
	 * and a 40 MB timeline.jsonl read whole cost more than parsing it. */
	int fd = openat(dirfd, name, O_RDONLY | O_CLOEXEC);
	*found = fd >= 0;
	if (fd < 0)
		return errno == ENOENT ? 0 : -errno;
	size_t cap = 1 << 18, len = 0;
	char *buf = malloc(cap);
	int rc = buf ? 0 : -ENOMEM;
	while (rc == 0) {
		if (len == cap) {
			/* one line longer than the buffer: grow (bounded) */
			char *b2 = cap < TIMELINE_MAX_READ_LINE ? realloc(buf, cap * 2) : NULL;
			if (!b2) {
				rc = cap < TIMELINE_MAX_READ_LINE ? -ENOMEM : -E2BIG;
				break;
			}
			buf = b2;
			cap *= 2;
		}
		ssize_t r = read(fd, buf + len, cap - len);
		if (r < 0) {
			if (errno == EINTR)
				continue;
			rc = -errno;
			break;
		}
		if (r == 0) {
			/* the last line without its newline: torn, unless whole JSON */
			rc = fn(ctx, buf, len, 0);
			break;
		}
		len += (size_t)r;
		size_t off = 0;
		for (char *nl; rc == 0 && (nl = memchr(buf + off, '\n', len - off)); ) {
			rc = fn(ctx, buf + off, (size_t)(nl - (buf + off)), 1);
			off = (size_t)(nl - buf) + 1;
		}
		memmove(buf, buf + off, len - off);
		len -= off;
	}
	free(buf);
	close(fd);
	return rc;
}
