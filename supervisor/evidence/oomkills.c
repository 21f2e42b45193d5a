/* oomkills.c: the record's "oom" key read back (oomkills.h).
 *
 * The contract's keys are one table below, nested as the record nests
 * them; the check walks it and the reader then takes what the readers
 * show.  scripts/memsup.py's _OOM_FIELDS is the same table: a key added
 * here is added there, with the same words in its messages.
 */
#include "evidence/oomkills.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "evidence/jsonr.h"

/* ---- whose limit ---- */

enum oom_by oomkills_by_parse(const char *name)
{
	/* the writer's table, read backwards: one list of names */
	for (unsigned i = 0; name && i < OOM_BY_COUNT; i++)
		if (strcmp(name, oomlimit_by_name((enum oom_by)i)) == 0)
			return (enum oom_by)i;
	return OOM_BY_UNKNOWN;
}

/* ---- the contract's keys and their types ---- */

/* What a key may hold.  Absent is always allowed (it reads as null); null
 * only where the contract says so. */
enum oom_kind {
	K_NUM,       /* number */
	K_NUM_NULL,  /* number or null */
	K_INT,       /* a whole number */
	K_INT_NULL,  /* a whole number or null */
	K_STR,       /* string */
	K_STR_NULL,  /* string or null */
	K_INTS,      /* array of whole numbers */
	K_STRS_NULL, /* array of strings, or null */
	K_BOOL,      /* true or false */
	K_OBJ,       /* object, its keys in sub */
	K_OBJ_NULL,  /* object or null, its keys in sub */
	K_OBJS,      /* array of objects, their keys in sub */
};

/* What the message says a key is not. */
static const char *const kind_words[] = {
	[K_NUM] = "a number",
	[K_NUM_NULL] = "a number or null",
	[K_INT] = "an integer",
	[K_INT_NULL] = "an integer or null",
	[K_STR] = "a string",
	[K_STR_NULL] = "a string or null",
	[K_INTS] = "an array of integers",
	[K_STRS_NULL] = "an array of strings or null",
	[K_BOOL] = "true or false",
	[K_OBJ] = "an object",
	[K_OBJ_NULL] = "an object or null",
	[K_OBJS] = "an array of objects",
};

struct oom_field {
	const char *key;
	enum oom_kind kind;
	const struct oom_field *sub; /* K_OBJ, K_OBJS */
};

static const struct oom_field site_fields[] = {
	{ "site", K_STR, NULL },
	{ "mb", K_NUM, NULL },
	{ NULL, K_NUM, NULL },
};

static const struct oom_field victim_fields[] = {
	{ "pid", K_INT_NULL, NULL },
	{ "gen", K_INT_NULL, NULL },
	{ "comm", K_STR_NULL, NULL },
	{ "exe", K_STR_NULL, NULL },
	{ "argv", K_STRS_NULL, NULL },
	{ "lineage", K_INTS, NULL },
	{ "rss_mb", K_NUM_NULL, NULL },
	{ "anon_rss_mb", K_NUM_NULL, NULL },
	{ "file_rss_mb", K_NUM_NULL, NULL },
	{ "shmem_rss_mb", K_NUM_NULL, NULL },
	{ "heap_mb", K_NUM_NULL, NULL },
	{ "top_sites", K_OBJS, site_fields },
	{ NULL, K_NUM, NULL },
};

static const struct oom_field limit_fields[] = {
	{ "by", K_STR, NULL },
	{ "cgroup", K_STR_NULL, NULL },
	{ "limit_mb", K_NUM_NULL, NULL },
	{ "constraint", K_STR_NULL, NULL },
	{ NULL, K_NUM, NULL },
};

static const struct oom_field process_fields[] = {
	{ "pid", K_INT, NULL },
	{ "comm", K_STR_NULL, NULL },
	{ "rss_mb", K_NUM, NULL },
	{ "heap_mb", K_NUM_NULL, NULL },
	{ "victim", K_BOOL, NULL },
	{ NULL, K_NUM, NULL },
};

static const struct oom_field tree_fields[] = {
	{ "at_s", K_NUM, NULL },
	{ "cgroup_mb", K_NUM_NULL, NULL },
	{ "anon_mb", K_NUM_NULL, NULL },
	{ "page_cache_mb", K_NUM_NULL, NULL },
	{ "shmem_mb", K_NUM_NULL, NULL },
	{ "kernel_mb", K_NUM_NULL, NULL },
	{ "processes", K_OBJS, process_fields },
	{ "processes_total", K_INT, NULL },
	{ NULL, K_NUM, NULL },
};

/* One object of "oom". */
static const struct oom_field kill_fields[] = {
	{ "at_s", K_NUM, NULL },
	{ "woken_by", K_STR, NULL },
	{ "after_event_ms", K_NUM_NULL, NULL },
	{ "kernel_at_s", K_NUM_NULL, NULL },
	{ "source", K_STR, NULL },
	{ "evidence", K_STR, NULL },
	{ "victim", K_OBJ, victim_fields },
	{ "limit", K_OBJ, limit_fields },
	/* null: no sample came before the kill */
	{ "tree", K_OBJ_NULL, tree_fields },
	{ NULL, K_NUM, NULL },
};

/* A whole number a double holds exactly (JSON has no integers; Python's
 * reader takes 5.0 for 5 as well). */
static int is_int(const struct jsonr_value *v)
{
	/* the range first: the cast is defined only for what fits */
	return v->type == JSONR_NUMBER && fabs(v->number) <= 9007199254740992.0 &&
	       v->number == (double)(int64_t)v->number;
}

static int holds(const struct jsonr_value *v, enum oom_kind kind)
{
	int null = v->type == JSONR_NULL;

	switch (kind) {
	case K_NUM: return v->type == JSONR_NUMBER;
	case K_NUM_NULL: return null || v->type == JSONR_NUMBER;
	case K_INT: return is_int(v);
	case K_INT_NULL: return null || is_int(v);
	case K_STR: return v->type == JSONR_STRING;
	case K_STR_NULL: return null || v->type == JSONR_STRING;
	case K_BOOL: return v->type == JSONR_BOOL;
	case K_OBJ: return v->type == JSONR_OBJECT;
	case K_OBJ_NULL: return null || v->type == JSONR_OBJECT;
	case K_STRS_NULL:
		if (null)
			return 1;
		/* fall through */
	case K_INTS:
	case K_OBJS:
		if (v->type != JSONR_ARRAY)
			return 0;
		for (size_t i = 0; i < v->n; i++) {
			const struct jsonr_value *x = &v->items[i];
			if (kind == K_INTS ? !is_int(x) : kind == K_OBJS ? x->type != JSONR_OBJECT
									 : x->type != JSONR_STRING)
				return kind == K_OBJS ? -(int)i - 1 : 0;
		}
		return 1;
	}
	return 0;
}

__attribute__((format(printf, 3, 4)))
static int set_err(char *err, size_t errlen, const char *fmt, ...)
{
	if (err && errlen) {
		va_list ap;
		va_start(ap, fmt);
		vsnprintf(err, errlen, fmt, ap);
		va_end(ap);
	}
	return -EINVAL;
}

/* obj's keys against fields, nested ones too; path names obj in a
 * message ("\"oom\"[0].victim").  0 or -EINVAL. */
static int check_object(const struct jsonr_value *obj, const struct oom_field *fields, const char *path,
			char *err, size_t errlen)
{
	char sub[256];

	for (const struct oom_field *f = fields; f->key; f++) {
		const struct jsonr_value *v = jsonr_get(obj, f->key);
		if (!v)
			continue;
		int ok = holds(v, f->kind);
		if (ok < 0) /* an item of an array of objects */
			return set_err(err, errlen, "%s.%s[%d]: not an object", path, f->key, -ok - 1);
		if (!ok)
			return set_err(err, errlen, "%s.%s: not %s", path, f->key, kind_words[f->kind]);
		if (v->type == JSONR_NULL)
			continue;
		for (size_t i = 0; f->sub && i < (f->kind == K_OBJS ? v->n : 1); i++) {
			if (f->kind == K_OBJS)
				snprintf(sub, sizeof sub, "%s.%s[%zu]", path, f->key, i);
			else
				snprintf(sub, sizeof sub, "%s.%s", path, f->key);
			int rc = check_object(f->kind == K_OBJS ? &v->items[i] : v, f->sub, sub, err, errlen);
			if (rc < 0)
				return rc;
		}
	}
	return 0;
}

/* ---- reading ---- */

static double num_or_nan(const struct jsonr_value *obj, const char *key)
{
	return jsonr_num(jsonr_get(obj, key), NAN);
}

/* A copy of a string key, NULL for null or absent; -ENOMEM. */
static int dup_str(const struct jsonr_value *obj, const char *key, char **out)
{
	const struct jsonr_value *v = jsonr_get(obj, key);

	*out = NULL;
	if (!v || v->type != JSONR_STRING)
		return 0;
	/* a NUL inside (\u0000) would end it early anyway: cut there */
	*out = strndup(v->string, v->len);
	return *out ? 0 : -ENOMEM;
}

void oomkills_free(struct oomkills *k)
{
	for (size_t i = 0; k->v && i < k->n; i++) {
		free(k->v[i].comm);
		free(k->v[i].cgroup);
	}
	free(k->v);
	memset(k, 0, sizeof *k);
}

int oomkills_read(const struct jsonr_value *record, struct oomkills *out, char *err, size_t errlen)
{
	memset(out, 0, sizeof *out);
	if (err && errlen)
		err[0] = '\0';
	/* the kernel's count: a number, whole and not negative, else none;
	 * and the kills memsup saw past the list's room */
	const struct jsonr_value *kc = jsonr_get(record, "oom_kills");
	const struct jsonr_value *ul = jsonr_get(record, "oom_unlisted");
	int have_count = kc && is_int(kc) && kc->number >= 0;
	uint64_t count = have_count ? (uint64_t)kc->number : 0;
	uint64_t unlisted = ul && is_int(ul) && ul->number >= 0 ? (uint64_t)ul->number : 0;

	const struct jsonr_value *list = jsonr_get(record, "oom");
	if (!list || list->type == JSONR_NULL) {
		/* null: memsup saw no way to see a kill, so no count of 0 is
		 * believed; a kill the kernel counted all the same still is.
		 * Absent: a memsup before the list, whose count is all there is. */
		out->known = list ? have_count && count > 0 : have_count;
		out->count = out->known ? count : 0;
		return 0;
	}
	if (list->type != JSONR_ARRAY)
		return set_err(err, errlen, "\"oom\": not an array or null");
	char path[32];
	for (size_t i = 0; i < list->n; i++) {
		snprintf(path, sizeof path, "\"oom\"[%zu]", i);
		if (list->items[i].type != JSONR_OBJECT)
			return set_err(err, errlen, "%s: not an object", path);
		int rc = check_object(&list->items[i], kill_fields, path, err, errlen);
		if (rc < 0)
			return rc;
	}
	if (list->n && !(out->v = calloc(list->n, sizeof *out->v))) {
		set_err(err, errlen, "%s", strerror(ENOMEM));
		return -ENOMEM;
	}
	for (size_t i = 0; i < list->n; i++) {
		const struct jsonr_value *e = &list->items[i];
		const struct jsonr_value *victim = jsonr_get(e, "victim"), *limit = jsonr_get(e, "limit");
		const struct jsonr_value *pid = jsonr_get(victim, "pid");
		struct oomkills_kill *k = &out->v[out->n++];
		k->at_s = num_or_nan(e, "at_s");
		k->pid = pid && pid->type == JSONR_NUMBER ? (long long)pid->number : -1;
		k->rss_mb = num_or_nan(victim, "rss_mb");
		k->by = oomkills_by_parse(jsonr_str(jsonr_get(limit, "by"), NULL));
		k->limit_mb = num_or_nan(limit, "limit_mb");
		if (dup_str(victim, "comm", &k->comm) < 0 || dup_str(limit, "cgroup", &k->cgroup) < 0) {
			oomkills_free(out);
			set_err(err, errlen, "%s", strerror(ENOMEM));
			return -ENOMEM;
		}
	}
	out->known = 1;
	out->count = have_count && count > out->n + unlisted ? count : out->n + unlisted;
	return 0;
}

/* ---- for people ---- */

void oomkills_victim_text(const struct oomkills_kill *k, char *buf, size_t len)
{
	if (!len)
		return;
	if (k->pid < 0) {
		snprintf(buf, len, "an unidentified process");
		return;
	}
	if (!k->comm) {
		snprintf(buf, len, "pid %lld", k->pid);
		return;
	}
	int lead = snprintf(buf, len, "pid %lld '", k->pid);
	size_t o = lead < 0 ? 0 : (size_t)lead;
	/* the comm's bytes as they are (the kernel's name may be any bytes),
	 * but a control byte would break a line, a table or a label */
	for (const char *c = k->comm; *c && o + 1 < len; c++)
		buf[o++] = (unsigned char)*c < 0x20 || *c == 0x7f ? '?' : *c;
	if (o + 1 < len)
		buf[o++] = '\'';
	buf[o < len ? o : len - 1] = '\0';
}

void oomkills_limit_text(const struct oomkills_kill *k, char *buf, size_t len)
{
	static const char *const words[OOM_BY_COUNT] = {
		[OOM_BY_UNKNOWN] = "unknown",
		[OOM_BY_RUN] = "run's cgroup",
		[OOM_BY_INSIDE] = "a cgroup inside the run's",
		[OOM_BY_ABOVE] = "a cgroup above the run's",
		[OOM_BY_MACHINE] = "the whole machine",
	};
	char where[200] = "", mb[48] = "";

	/* the run's own cgroup needs no path; the others are found by it */
	if (k->cgroup && (k->by == OOM_BY_INSIDE || k->by == OOM_BY_ABOVE)) {
		snprintf(where, sizeof where, " (%s)", k->cgroup);
		for (char *c = where; *c; c++)
			if ((unsigned char)*c < 0x20 || *c == 0x7f)
				*c = '?';
	}
	if (isfinite(k->limit_mb)) {
		/* "150 MB", "1.5 MB": a whole figure without its ".0" */
		int n = snprintf(mb, sizeof mb, ", %.1f", k->limit_mb);
		if (n > 2 && (size_t)n < sizeof mb && strcmp(mb + n - 2, ".0") == 0)
			mb[n - 2] = '\0';
		strncat(mb, " MB", sizeof mb - strlen(mb) - 1);
	}
	snprintf(buf, len, "%s%s%s", words[(unsigned)k->by < OOM_BY_COUNT ? k->by : OOM_BY_UNKNOWN],
		 where, mb);
}
