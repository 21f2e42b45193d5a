/* report.c: the report of `memsup report DIR...` (its front end is
 * cmd_report.c) -- one row per evidence directory:
 * meta, command, exit, reason, wall, peak tree RSS, peak heap, the largest
 * process, the number of blind-spot findings and the OOM kills (count,
 * first victim, whose limit), as an aligned table for people or as CSV
 * (RFC 4180) / JSON (preload/jsonw) for programs.
 *
 * Every directory becomes a row, whatever state it is in: a broken or
 * half-written one says why in its status column and the other rows go on.
 * Only the table shortens anything (long commands, with "..."); CSV and JSON
 * carry every byte. */
#include "view/report.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/cleanup.h"
#include "evidence/read.h"
#include "jsonw.h"
#include "evidence/jsonr.h"
#include "evidence/oomkills.h"
#include "units.h"

/* The table's COMMAND column is at most this wide (display characters). */
#define REPORT_COMMAND_WIDTH 40

/* REPORT_START_FAILED: a whole record of a command that never ran (its
 * reason start_failed): not broken, but no run either, so no peak.
 * REPORT_KILLED: memsup was killed and its sentinel closed the record
 * (reason supervisor_killed): its figures end where memsup did, a lower
 * bound of what the command would have used, and the command was killed
 * with it -- not a run that finished. */
enum report_state { REPORT_OK, REPORT_RUNNING, REPORT_BROKEN, REPORT_START_FAILED, REPORT_KILLED };

struct report_row {
	size_t index;                   /* position on the command line */
	const char *dir;
	enum report_state state;
	char why[320];                  /* REPORT_BROKEN: what is wrong;
					   REPORT_START_FAILED: why it could
					   not start (the record's error) */
	struct evidence_run run;        /* the run (owned) */
	const char *largest_name;       /* NULL: no largest process */
	size_t largest_name_len;
	char *largest_owned;            /* largest_name's bytes when not "?" (owned) */
	double largest_bytes;           /* -1 until one is found */
	long long largest_pid;
	double largest_mb;
	long long blind_spots;          /* -1: absent */
};

int report_parse_sort(struct report_opts *o, const char *key)
{
	static const struct {
		const char *name;
		enum report_key key;
	} keys[] = {
		{ "dir", REPORT_KEY_DIR },   { "peak", REPORT_KEY_PEAK }, { "heap", REPORT_KEY_HEAP },
		{ "wall", REPORT_KEY_WALL }, { "exit", REPORT_KEY_EXIT }, { "reason", REPORT_KEY_REASON },
	};

	for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++)
		if (strcmp(key, keys[i].name) == 0) {
			o->key = keys[i].key;
			return 0;
		}
	if (strncmp(key, "meta:", 5) == 0 && key[5]) {
		o->key = REPORT_KEY_META;
		o->meta_key = key + 5;
		return 0;
	}
	return -EINVAL;
}

/* ---- reading one directory ---- */

static void row_broken(struct report_row *r, const char *why)
{
	/* The first problem found is the one reported. */
	if (r->state == REPORT_BROKEN)
		return;
	r->state = REPORT_BROKEN;
	snprintf(r->why, sizeof r->why, "%s", why);
}

/* The process with the largest peak (evidence_process.peak_bytes: VmHWM,
 * else the polled peak).  On a tie the first listed wins.  One image at a
 * time (evidence_read_processes), so that a report over runs of 100,000
 * images holds none of them whole.  0, or -ENOMEM. */
static int row_process(const struct evidence_process *p, void *ctx)
{
	struct report_row *r = ctx;
	if (p->peak_bytes <= r->largest_bytes)
		return 0;
	const struct jsonr_value *name = jsonr_at(p->argv, 0);
	const char *s = NULL;
	size_t n = 0;
	if (name && name->type == JSONR_STRING && name->len) {
		s = name->string;
		n = name->len;
	} else if (p->exe) {
		s = p->exe;
		n = strlen(p->exe);
	}
	char *owned = NULL;
	const char *base = "?";
	size_t len = 1;
	if (s) {
		/* basename, by bytes: the name may hold any byte but '/'. */
		const char *slash = memrchr(s, '/', n);
		base = slash ? slash + 1 : s;
		len = n - (size_t)(base - s);
		if (!(owned = malloc(len + 1)))
			return -ENOMEM;
		memcpy(owned, base, len);
		owned[len] = '\0';
		base = owned;
	}
	free(r->largest_owned);
	r->largest_owned = owned;
	r->largest_name = base;
	r->largest_name_len = len;
	r->largest_bytes = p->peak_bytes;
	r->largest_pid = p->pid;
	r->largest_mb = p->peak_bytes / UNITS_MB;
	return 0;
}

static void row_read(struct report_row *r)
{
	char err[300];

	r->largest_mb = NAN;
	r->largest_bytes = -1;
	evidence_run_init(&r->run);
	int dirfd = open(r->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dirfd < 0) {
		if (errno == ENOENT)
			row_broken(r, "no such directory");
		else if (errno == ENOTDIR)
			row_broken(r, "not a directory");
		else
			row_broken(r, strerror(errno));
		return;
	}
	if (evidence_read_run(dirfd, &r->run, err, sizeof err) < 0) {
		row_broken(r, err);
		goto out;
	}
	if (r->run.broken[0])
		row_broken(r, r->run.broken);
	else if (r->run.state == EVIDENCE_RUNNING)
		r->state = REPORT_RUNNING;
	else if (r->run.state == EVIDENCE_KILLED)
		r->state = REPORT_KILLED;
	else if (r->run.state == EVIDENCE_START_FAILED) {
		r->state = REPORT_START_FAILED;
		snprintf(r->why, sizeof r->why, "%s",
			 r->run.error ? r->run.error : "no reason recorded");
	}
	if (!r->run.has_processes)
		goto out;
	if (evidence_read_processes(dirfd, row_process, r, err, sizeof err) < 0) {
		/* no largest process from part of a torn file */
		free(r->largest_owned);
		r->largest_owned = NULL;
		r->largest_name = NULL;
		r->largest_mb = NAN;
		row_broken(r, err);
		goto out;
	}
out:
	close(dirfd);
}

/* ---- text of the cells ---- */

/* The shortest text that reads back as exactly v ("131.145728", not
 * "131.14572799999999"), as Python's repr does. */
static void fmt_num(char *buf, size_t len, double v)
{
	for (int prec = 1; prec <= 17; prec++) {
		snprintf(buf, len, "%.*g", prec, v);
		if (strtod(buf, NULL) == v)
			return;
	}
}

/* A meta value as text: strings as they are, numbers and booleans as JSON
 * writes them, anything else empty.  *len is set. */
static const char *meta_text(const struct jsonr_value *v, char buf[40], size_t *len)
{
	const char *s = "";

	if (v && v->type == JSONR_STRING) {
		*len = v->len;
		return v->string;
	}
	if (v && v->type == JSONR_NUMBER) {
		fmt_num(buf, 40, v->number);
		s = buf;
	} else if (v && v->type == JSONR_BOOL) {
		s = v->boolean ? "true" : "false";
	}
	*len = strlen(s);
	return s;
}

/* A growable string for building cells. */
struct report_str {
	char *s;
	size_t len, cap;
	int oom;
};

static void str_put(struct report_str *b, const char *s, size_t n)
{
	if (b->oom)
		return;
	if (b->cap - b->len < n + 1) {
		size_t cap = b->cap ? b->cap : 64;
		while (cap - b->len < n + 1)
			cap *= 2;
		char *ns = realloc(b->s, cap);
		if (!ns) {
			b->oom = 1;
			return;
		}
		b->s = ns;
		b->cap = cap;
	}
	memcpy(b->s + b->len, s, n);
	b->len += n;
	b->s[b->len] = '\0';
}

static void str_puts(struct report_str *b, const char *s)
{
	str_put(b, s, strlen(s));
}

static char *str_take(struct report_str *b)
{
	if (b->oom) {
		free(b->s);
		return NULL;
	}
	if (!b->s)
		str_put(b, "", 0);
	return b->s;
}

/* One argument, quoted for a POSIX shell only when it needs it. */
static void shell_quote(struct report_str *b, const char *s, size_t n)
{
	int plain = n > 0;

	for (size_t i = 0; i < n && plain; i++) {
		unsigned char c = (unsigned char)s[i];
		plain = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
			strchr("@%+=:,./_-", c) != NULL;
		if (c == '\0')
			plain = 0;
	}
	if (plain) {
		str_put(b, s, n);
		return;
	}
	str_put(b, "'", 1);
	for (size_t i = 0; i < n; i++) {
		if (s[i] == '\'')
			str_put(b, "'\\''", 4);
		else
			str_put(b, s + i, 1);
	}
	str_put(b, "'", 1);
}

static char *row_command_text(const struct report_row *r)
{
	struct report_str b = { 0 };

	if (r->run.command)
		for (size_t i = 0; i < r->run.command->n; i++) {
			const struct jsonr_value *a = &r->run.command->items[i];
			if (i)
				str_put(&b, " ", 1);
			if (a->type == JSONR_STRING)
				shell_quote(&b, a->string, a->len);
		}
	return str_take(&b);
}

static char *row_status_text(const struct report_row *r)
{
	struct report_str b = { 0 };

	if (r->state == REPORT_OK) {
		str_puts(&b, "ok");
	} else if (r->state == REPORT_RUNNING) {
		str_puts(&b, "running");
	} else if (r->state == REPORT_KILLED) {
		str_puts(&b, "killed: memsup was killed before the run ended; figures until then");
	} else if (r->state == REPORT_START_FAILED) {
		str_puts(&b, "start failed: ");
		str_puts(&b, r->why);
	} else {
		str_puts(&b, "broken: ");
		str_puts(&b, r->why);
	}
	return str_take(&b);
}

/* The first OOM kill the record lists, or NULL. */
static const struct oomkills_kill *row_oom_first(const struct report_row *r)
{
	return r->run.oom.n ? &r->run.oom.v[0] : NULL;
}

/* ---- sorting ---- */

static int meta_number(const char *s, size_t len, double *out)
{
	char *end;

	if (!len || memchr(s, '\0', len))
		return 0;
	errno = 0;
	*out = strtod(s, &end);
	return end == s + len && !errno && isfinite(*out);
}

/* <0, 0, >0 in the key's natural direction, before --reverse; *missing gets
 * a bit per row that lacks the value (1: a, 2: b). */
static int row_compare_key(const struct report_row *a, const struct report_row *b,
			   const struct report_opts *o, int *missing)
{
	double x = NAN, y = NAN;

	*missing = 0;
	switch (o->key) {
	case REPORT_KEY_NONE:
		return 0;
	case REPORT_KEY_DIR:
		return strcmp(a->dir, b->dir);
	case REPORT_KEY_REASON:
		*missing = (a->run.reason ? 0 : 1) | (b->run.reason ? 0 : 2);
		return *missing ? 0 : strcmp(a->run.reason, b->run.reason);
	case REPORT_KEY_META: {
		const struct jsonr_value *va = jsonr_get(a->run.meta, o->meta_key);
		const struct jsonr_value *vb = jsonr_get(b->run.meta, o->meta_key);
		*missing = (va ? 0 : 1) | (vb ? 0 : 2);
		if (*missing)
			return 0;
		char ba[40], bb[40];
		size_t la, lb;
		const char *sa = meta_text(va, ba, &la), *sb = meta_text(vb, bb, &lb);
		double na, nb;
		/* Numbers as numbers ("2" before "10"), otherwise bytewise. */
		if (meta_number(sa, la, &na) && meta_number(sb, lb, &nb))
			return (na > nb) - (na < nb);
		int c = memcmp(sa, sb, la < lb ? la : lb);
		return c ? c : (la > lb) - (la < lb);
	}
	case REPORT_KEY_PEAK: x = a->run.answer_mb; y = b->run.answer_mb; break;
	case REPORT_KEY_HEAP: x = a->run.heap_mb; y = b->run.heap_mb; break;
	case REPORT_KEY_WALL: x = a->run.wall_s; y = b->run.wall_s; break;
	case REPORT_KEY_EXIT:
		x = a->run.has_exit ? (double)a->run.exit_status : NAN;
		y = b->run.has_exit ? (double)b->run.exit_status : NAN;
		break;
	}
	/* Measured numbers: largest first. */
	*missing = (isnan(x) ? 1 : 0) | (isnan(y) ? 2 : 0);
	return *missing ? 0 : (x < y) - (x > y);
}

static int row_compare(const void *pa, const void *pb, void *arg)
{
	const struct report_row *a = *(const struct report_row *const *)pa;
	const struct report_row *b = *(const struct report_row *const *)pb;
	const struct report_opts *o = arg;
	int missing, c = row_compare_key(a, b, o, &missing);

	if (missing == 1 || missing == 2)
		return missing == 1 ? 1 : -1; /* rows without the value last */
	if (o->reverse)
		c = -c;
	if (c)
		return c;
	return (a->index > b->index) - (a->index < b->index); /* stable */
}

/* ---- the meta keys of all rows ---- */

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* The union of the rows' meta keys, sorted, without repeats.  *n is set;
 * NULL with *n == 0 when there are none, NULL with *n == SIZE_MAX on ENOMEM. */
static const char **meta_union(struct report_row **rows, size_t n_rows, size_t *n)
{
	size_t total = 0;

	for (size_t i = 0; i < n_rows; i++)
		total += rows[i]->run.meta ? rows[i]->run.meta->n : 0;
	*n = 0;
	if (!total)
		return NULL;
	const char **keys = malloc(total * sizeof *keys);
	if (!keys) {
		*n = SIZE_MAX;
		return NULL;
	}
	for (size_t i = 0; i < n_rows; i++)
		for (size_t k = 0; rows[i]->run.meta && k < rows[i]->run.meta->n; k++)
			keys[(*n)++] = rows[i]->run.meta->keys[k];
	qsort(keys, *n, sizeof *keys, cmp_str);
	size_t u = 0;
	for (size_t i = 0; i < *n; i++)
		if (!u || strcmp(keys[u - 1], keys[i]) != 0)
			keys[u++] = keys[i];
	*n = u;
	return keys;
}

/* ---- CSV ---- */

static void csv_field(FILE *f, const char *s, size_t n, int first)
{
	if (!first)
		fputc(',', f);
	/* RFC 4180: quote a field holding a quote, comma, CR or LF; double the
	 * quotes inside.  Quote leading/trailing spaces too: some readers trim. */
	int quote = n && (s[0] == ' ' || s[n - 1] == ' ');
	for (size_t i = 0; i < n && !quote; i++)
		quote = s[i] == '"' || s[i] == ',' || s[i] == '\n' || s[i] == '\r';
	if (!quote) {
		fwrite(s, 1, n, f);
		return;
	}
	fputc('"', f);
	for (size_t i = 0; i < n; i++) {
		if (s[i] == '"')
			fputc('"', f);
		fputc(s[i], f);
	}
	fputc('"', f);
}

static void csv_cstr(FILE *f, const char *s)
{
	csv_field(f, s, strlen(s), 0);
}

static void csv_num(FILE *f, double v)
{
	char buf[40] = "";

	if (!isnan(v))
		fmt_num(buf, sizeof buf, v);
	csv_cstr(f, buf);
}

static void csv_int(FILE *f, int has, long long v)
{
	char buf[24] = "";

	if (has)
		snprintf(buf, sizeof buf, "%lld", v);
	csv_cstr(f, buf);
}

static int report_csv(FILE *f, struct report_row **rows, size_t n_rows, const char **keys, size_t n_keys)
{
	csv_field(f, "dir", 3, 1);
	csv_cstr(f, "status");
	for (size_t k = 0; k < n_keys; k++) {
		struct report_str h = { 0 };
		str_puts(&h, "meta:");
		str_puts(&h, keys[k]);
		char *s = str_take(&h);
		if (!s)
			return -ENOMEM;
		csv_cstr(f, s);
		free(s);
	}
	static const char *const tail[] = {
		"command", "exit", "reason", "wall_s", "peak_mb", "peak_source", "peak_tree_rss_mb",
		"peak_heap_mb",
		"largest_name", "largest_pid", "largest_mb", "blind_spots",
		"oom_kills", "oom_victim_pid", "oom_victim_comm", "oom_limit_by",
	};
	for (size_t i = 0; i < sizeof tail / sizeof tail[0]; i++)
		csv_cstr(f, tail[i]);
	fputs("\r\n", f);

	for (size_t i = 0; i < n_rows; i++) {
		const struct report_row *r = rows[i];
		char *status = row_status_text(r), *cmd = row_command_text(r);
		if (!status || !cmd) {
			free(status);
			free(cmd);
			return -ENOMEM;
		}
		csv_field(f, r->dir, strlen(r->dir), 1);
		csv_cstr(f, status);
		for (size_t k = 0; k < n_keys; k++) {
			char buf[40];
			size_t len;
			const char *t = meta_text(jsonr_get(r->run.meta, keys[k]), buf, &len);
			csv_field(f, t, len, 0);
		}
		csv_cstr(f, cmd);
		csv_int(f, r->run.has_exit, r->run.exit_status);
		csv_cstr(f, r->run.reason ? r->run.reason : "");
		csv_num(f, r->run.wall_s);
		csv_num(f, r->run.answer_mb);
		csv_cstr(f, r->run.source ? r->run.source : "");
		csv_num(f, r->run.rss_mb);
		csv_num(f, r->run.heap_mb);
		csv_field(f, r->largest_name ? r->largest_name : "", r->largest_name ? r->largest_name_len : 0, 0);
		csv_int(f, r->largest_name != NULL, r->largest_pid);
		csv_num(f, r->largest_name ? r->largest_mb : NAN);
		csv_int(f, r->run.blind_spots >= 0, r->run.blind_spots);
		const struct oomkills_kill *first = row_oom_first(r);
		csv_int(f, r->run.oom.known, (long long)r->run.oom.count);
		csv_int(f, first && first->pid >= 0, first ? first->pid : 0);
		csv_cstr(f, first && first->comm ? first->comm : "");
		csv_cstr(f, first ? oomlimit_by_name(first->by) : "");
		fputs("\r\n", f);
		free(status);
		free(cmd);
	}
	return 0;
}

/* ---- JSON ---- */

static void json_num(struct jsonw *w, double v)
{
	char buf[40];

	if (isnan(v)) {
		jsonw_null(w);
		return;
	}
	fmt_num(buf, sizeof buf, v);
	jsonw_raw(w, buf, strlen(buf));
}

static int report_json(int fd, struct report_row **rows, size_t n_rows, const char **keys, size_t n_keys)
{
	struct jsonw w;

	jsonw_init(&w, fd, 2);
	jsonw_array_begin(&w);
	for (size_t i = 0; i < n_rows; i++) {
		const struct report_row *r = rows[i];
		char *status = row_status_text(r);
		if (!status)
			return -ENOMEM;
		jsonw_object_begin(&w);
		jsonw_key(&w, "dir");
		jsonw_string(&w, r->dir);
		jsonw_key(&w, "status");
		jsonw_string(&w, status);
		free(status);
		/* Every row has every meta key of the report (null where it has
		 * none), so that the rows form one table. */
		jsonw_key(&w, "meta");
		jsonw_object_begin(&w);
		for (size_t k = 0; k < n_keys; k++) {
			const struct jsonr_value *v = jsonr_get(r->run.meta, keys[k]);
			jsonw_key(&w, keys[k]);
			if (v && v->type == JSONR_STRING)
				jsonw_string_n(&w, v->string, v->len);
			else if (v && v->type == JSONR_NUMBER)
				json_num(&w, v->number);
			else if (v && v->type == JSONR_BOOL)
				jsonw_bool(&w, v->boolean);
			else
				jsonw_null(&w);
		}
		jsonw_object_end(&w);
		jsonw_key(&w, "command");
		if (r->run.command) {
			jsonw_array_begin(&w);
			for (size_t a = 0; a < r->run.command->n; a++) {
				const struct jsonr_value *v = &r->run.command->items[a];
				if (v->type == JSONR_STRING)
					jsonw_string_n(&w, v->string, v->len);
				else
					jsonw_null(&w);
			}
			jsonw_array_end(&w);
		} else {
			jsonw_null(&w);
		}
		jsonw_key(&w, "exit");
		if (r->run.has_exit)
			jsonw_int(&w, r->run.exit_status);
		else
			jsonw_null(&w);
		jsonw_key(&w, "reason");
		jsonw_string(&w, r->run.reason);
		jsonw_key(&w, "wall_s");
		json_num(&w, r->run.wall_s);
		jsonw_key(&w, "peak_mb");
		json_num(&w, r->run.answer_mb);
		jsonw_key(&w, "peak_source");
		jsonw_string(&w, r->run.source);
		jsonw_key(&w, "peak_tree_rss_mb");
		json_num(&w, r->run.rss_mb);
		jsonw_key(&w, "peak_heap_mb");
		json_num(&w, r->run.heap_mb);
		jsonw_key(&w, "largest_name");
		if (r->largest_name)
			jsonw_string_n(&w, r->largest_name, r->largest_name_len);
		else
			jsonw_null(&w);
		jsonw_key(&w, "largest_pid");
		if (r->largest_name)
			jsonw_int(&w, r->largest_pid);
		else
			jsonw_null(&w);
		jsonw_key(&w, "largest_mb");
		json_num(&w, r->largest_name ? r->largest_mb : NAN);
		jsonw_key(&w, "blind_spots");
		if (r->run.blind_spots >= 0)
			jsonw_int(&w, r->run.blind_spots);
		else
			jsonw_null(&w);
		const struct oomkills_kill *first = row_oom_first(r);
		jsonw_key(&w, "oom_kills");
		if (r->run.oom.known)
			jsonw_uint(&w, r->run.oom.count);
		else
			jsonw_null(&w);
		jsonw_key(&w, "oom_victim_pid");
		if (first && first->pid >= 0)
			jsonw_int(&w, first->pid);
		else
			jsonw_null(&w);
		jsonw_key(&w, "oom_victim_comm");
		jsonw_string(&w, first ? first->comm : NULL);
		jsonw_key(&w, "oom_limit_by");
		jsonw_string(&w, first ? oomlimit_by_name(first->by) : NULL);
		jsonw_object_end(&w);
	}
	jsonw_array_end(&w);
	return jsonw_finish_line(&w);
}

/* ---- the table ---- */

/* For a terminal: control characters become '?', so that a newline in an
 * argument cannot break the table. */
static void table_clean(char *s)
{
	for (; *s; s++)
		if ((unsigned char)*s < 0x20 || *s == 0x7f)
			*s = '?';
}

/* Display width: UTF-8 continuation bytes take no column. */
static size_t table_width(const char *s)
{
	size_t w = 0;

	for (; *s; s++)
		w += ((unsigned char)*s & 0xc0) != 0x80;
	return w;
}

/* Cut s to at most max columns, ending in "..." when it was longer. */
static void table_shorten(char *s, size_t max)
{
	if (table_width(s) <= max)
		return;
	size_t w = 0, i = 0;
	for (; s[i]; i++) {
		if (((unsigned char)s[i] & 0xc0) != 0x80) {
			if (w == max - 3)
				break;
			w++;
		}
	}
	memcpy(s + i, "...", 4);
}

enum { COL_DIR, COL_META, COL_COMMAND, COL_EXIT, COL_REASON, COL_WALL, COL_PEAK, COL_FROM,
       COL_HEAP, COL_LARGEST, COL_BLIND, COL_OOM, COL_STATUS, N_COLS };

/* The table's OOM column is at most this wide: a kernel's comm is at most
 * 15 bytes, a forged one any length. */
#define REPORT_OOM_WIDTH 40

/* The META cell: the run's labels, "key=value" apart by spaces, or "-". */
static void cell_meta(struct report_str *b, const struct report_row *r, const char **keys,
		      size_t n_keys)
{
	char buf[40];

	for (size_t k = 0, shown = 0; k < n_keys; k++) {
		const struct jsonr_value *v = jsonr_get(r->run.meta, keys[k]);
		if (!v)
			continue;
		size_t len;
		const char *t = meta_text(v, buf, &len);
		if (shown++)
			str_put(b, " ", 1);
		str_puts(b, keys[k]);
		str_put(b, "=", 1);
		str_put(b, t, len);
	}
	if (!b->len)
		str_puts(b, "-");
}

/* The OOM cell: "-" unknown, "0", "2" (a record without the list), or
 * "2: 4242 python (run)": the count, then the first victim's pid and comm
 * ("?" when the kill was not traced to a process) and whose limit fired. */
static void cell_oom(struct report_str *b, const struct report_row *r)
{
	const struct oomkills_kill *first = row_oom_first(r);
	char buf[64];

	if (!r->run.oom.known) {
		str_puts(b, "-");
		return;
	}
	snprintf(buf, sizeof buf, "%llu", (unsigned long long)r->run.oom.count);
	str_puts(b, buf);
	if (!first)
		return;
	if (first->pid >= 0)
		snprintf(buf, sizeof buf, ": %lld", first->pid);
	else
		snprintf(buf, sizeof buf, ": ?");
	str_puts(b, buf);
	if (first->pid >= 0 && first->comm) {
		str_put(b, " ", 1);
		str_puts(b, first->comm);
	}
	str_puts(b, " (");
	str_puts(b, oomlimit_by_name(first->by));
	str_puts(b, ")");
}

static char *table_cell(const struct report_row *r, int col, const char **keys, size_t n_keys)
{
	struct report_str b = { 0 };
	char buf[64];

	switch (col) {
	case COL_DIR:
		str_puts(&b, r->dir);
		break;
	case COL_META:
		cell_meta(&b, r, keys, n_keys);
		break;
	case COL_COMMAND: {
		if (!r->run.command) {
			str_puts(&b, "-");
			break;
		}
		char *c = row_command_text(r);
		if (!c)
			return NULL;
		table_clean(c);
		table_shorten(c, REPORT_COMMAND_WIDTH);
		str_puts(&b, c);
		free(c);
		break;
	}
	case COL_EXIT:
		if (r->run.has_exit)
			snprintf(buf, sizeof buf, "%lld", r->run.exit_status);
		else
			snprintf(buf, sizeof buf, "-");
		str_puts(&b, buf);
		break;
	case COL_REASON:
		str_puts(&b, r->run.reason ? r->run.reason : "-");
		break;
	case COL_WALL:
	case COL_PEAK:
	case COL_HEAP: {
		double v = col == COL_WALL ? r->run.wall_s : col == COL_PEAK ? r->run.answer_mb : r->run.heap_mb;
		if (isnan(v))
			snprintf(buf, sizeof buf, "-");
		else
			snprintf(buf, sizeof buf, col == COL_WALL ? "%.2f" : "%.1f", v);
		str_puts(&b, buf);
		break;
	}
	case COL_FROM:
		/* "cgroup" (exact) or "polled_pss" / "polled_rss", as the record
		 * says; a name from a forged file is cleaned like any cell */
		str_puts(&b, r->run.source ? r->run.source : "-");
		break;
	case COL_LARGEST:
		if (!r->largest_name) {
			str_puts(&b, "-");
			break;
		}
		str_put(&b, r->largest_name, r->largest_name_len);
		snprintf(buf, sizeof buf, " %lld (%.1f MB)", r->largest_pid, r->largest_mb);
		str_puts(&b, buf);
		break;
	case COL_BLIND:
		if (r->run.blind_spots >= 0)
			snprintf(buf, sizeof buf, "%lld", r->run.blind_spots);
		else
			snprintf(buf, sizeof buf, "-");
		str_puts(&b, buf);
		break;
	case COL_OOM:
		cell_oom(&b, r);
		break;
	case COL_STATUS: {
		char *s = row_status_text(r);
		if (!s)
			return NULL;
		str_puts(&b, s);
		free(s);
		break;
	}
	}
	char *s = str_take(&b);
	if (s) {
		/* str_put may have copied a NUL from a name: cut there. */
		table_clean(s);
		if (col == COL_OOM)
			table_shorten(s, REPORT_OOM_WIDTH);
	}
	return s;
}

static int report_table(FILE *f, struct report_row **rows, size_t n_rows, const char **keys, size_t n_keys)
{
	static const char *const heads[N_COLS] = {
		"DIR", "META", "COMMAND", "EXIT", "REASON", "WALL_S", "PEAK_MB", "PEAK_FROM",
		"HEAP_MB", "LARGEST", "BLIND", "OOM", "STATUS",
	};
	static const int right[N_COLS] = {
		[COL_EXIT] = 1, [COL_WALL] = 1, [COL_PEAK] = 1, [COL_HEAP] = 1, [COL_BLIND] = 1,
	};
	size_t width[N_COLS];
	int rc = 0;

	char **cells = calloc(n_rows * N_COLS + 1, sizeof *cells);
	if (!cells)
		return -ENOMEM;
	for (int c = 0; c < N_COLS; c++)
		width[c] = strlen(heads[c]);
	for (size_t i = 0; i < n_rows; i++)
		for (int c = 0; c < N_COLS; c++) {
			char *s = table_cell(rows[i], c, keys, n_keys);
			if (!s) {
				rc = -ENOMEM;
				goto out;
			}
			cells[i * N_COLS + (size_t)c] = s;
			size_t w = table_width(s);
			if (w > width[c])
				width[c] = w;
		}
	for (size_t i = 0; i <= n_rows; i++) {
		int first = 1;
		for (int c = 0; c < N_COLS; c++) {
			if (c == COL_META && !n_keys)
				continue; /* no run has meta: no column */
			const char *s = i ? cells[(i - 1) * N_COLS + (size_t)c] : heads[c];
			size_t pad = width[c] - table_width(s);
			if (!first)
				fputs("  ", f);
			first = 0;
			if (right[c])
				fprintf(f, "%*s", (int)pad, "");
			fputs(s, f);
			/* The last column (STATUS) is not padded: no trailing blanks. */
			if (!right[c] && c != N_COLS - 1)
				fprintf(f, "%*s", (int)pad, "");
		}
		fputc('\n', f);
	}
out:
	for (size_t i = 0; i < n_rows * N_COLS; i++)
		free(cells[i]);
	free(cells);
	return rc;
}

/* ---- the report ---- */

int report_write(char *const *dirs, size_t n_dirs, const struct report_opts *o, char *err,
		 size_t errlen)
{
	int rc;

	struct report_row *rows CLEANUP_FREE = calloc(n_dirs, sizeof *rows);
	struct report_row **order CLEANUP_FREE = calloc(n_dirs, sizeof *order);
	if (!rows || !order) {
		snprintf(err, errlen, "out of memory");
		rc = -ENOMEM;
		goto out;
	}
	/* a run whose command could not start, or whose memsup was killed
	 * (and the command with it), fails the report as a broken one does:
	 * a sweep with a typo in one command, or one cut short, is not a
	 * success */
	int failed = 0;
	for (size_t i = 0; i < n_dirs; i++) {
		rows[i].index = (size_t)i;
		rows[i].dir = dirs[i];
		row_read(&rows[i]);
		failed |= rows[i].state == REPORT_BROKEN || rows[i].state == REPORT_START_FAILED ||
			  rows[i].state == REPORT_KILLED;
		order[i] = &rows[i];
	}
	if (o->key != REPORT_KEY_NONE)
		qsort_r(order, n_dirs, sizeof *order, row_compare, (void *)o);

	size_t n_keys;
	const char **keys = meta_union(order, n_dirs, &n_keys);
	int wrc;
	if (n_keys == SIZE_MAX)
		wrc = -ENOMEM;
	else if (o->format == REPORT_JSON)
		wrc = fflush(stdout) == 0 ? report_json(STDOUT_FILENO, order, n_dirs, keys, n_keys) : -errno;
	else if (o->format == REPORT_CSV)
		wrc = report_csv(stdout, order, n_dirs, keys, n_keys);
	else
		wrc = report_table(stdout, order, n_dirs, keys, n_keys);
	free(keys);
	if (wrc == 0 && (fflush(stdout) != 0 || ferror(stdout)))
		wrc = errno ? -errno : -EIO;
	if (wrc < 0) {
		snprintf(err, errlen, "writing the report: %s", strerror(-wrc));
		rc = wrc;
	} else {
		rc = failed ? 1 : 0;
	}
out:
	for (size_t i = 0; rows && i < n_dirs; i++) {
		evidence_run_free(&rows[i].run);
		free(rows[i].largest_owned);
	}
	return rc;
}

/* ---- a report as a baseline ---- */

/* The OOM kills of a row: its count (null: not known) and, when it names
 * one, the first victim.  0 or -ENOMEM. */
static int baseline_oom(const struct jsonr_value *row, struct oomkills *out)
{
	const struct jsonr_value *count = jsonr_get(row, "oom_kills");
	memset(out, 0, sizeof *out);
	if (!count || count->type != JSONR_NUMBER || !(count->number >= 0))
		return 0;
	out->known = 1;
	out->count = (uint64_t)count->number;
	const char *by = jsonr_str(jsonr_get(row, "oom_limit_by"), NULL);
	if (!out->count || !by)
		return 0;
	if (!(out->v = calloc(1, sizeof *out->v)))
		return -ENOMEM;
	struct oomkills_kill *k = &out->v[out->n++];
	k->at_s = k->rss_mb = k->limit_mb = NAN;
	k->pid = (long long)jsonr_num(jsonr_get(row, "oom_victim_pid"), -1);
	k->by = oomkills_by_parse(by);
	const char *comm = jsonr_str(jsonr_get(row, "oom_victim_comm"), NULL);
	if (comm && !(k->comm = strdup(comm)))
		return -ENOMEM;
	return 0;
}

int report_read_baseline(const char *path, double *peak_mb, struct oomkills *oom, char *err,
			 size_t errlen)
{
	struct jsonr_value *doc = NULL;
	int rc = jsonr_read_file(AT_FDCWD, path, EVIDENCE_MAX_FILE_BYTES, &doc, err, errlen);
	if (rc < 0)
		return rc;
	rc = -EINVAL;
	*peak_mb = NAN;
	if (doc->type != JSONR_ARRAY)
		snprintf(err, errlen, "%s: not an evidence directory nor a `memsup report --json` array",
			 path);
	else if (doc->n != 1)
		snprintf(err, errlen, "%s: holds %zu runs; a baseline is one run", path, doc->n);
	else if (strcmp(jsonr_str(jsonr_get(&doc->items[0], "status"), ""), "ok") != 0)
		snprintf(err, errlen, "%s: the run's status is not ok: %s", path,
			 jsonr_str(jsonr_get(&doc->items[0], "status"), "(none)"));
	else if (isnan(*peak_mb = jsonr_num(jsonr_get(&doc->items[0], "peak_mb"), NAN)))
		snprintf(err, errlen, "%s: no numeric \"peak_mb\"", path);
	else
		rc = baseline_oom(&doc->items[0], oom);
	jsonr_free(doc);
	return rc;
}
