/* jsonr.c: strict recursive-descent JSON reader (see jsonr.h for the
 * contract).  Parsing is separate from I/O: jsonr_parse() works on a buffer,
 * jsonr_read_file() only reads the file into one and calls it.  Recursion is
 * bounded by JSONR_MAX_DEPTH, so hostile input cannot exhaust the stack. */
#include "evidence/jsonr.h"
#include "jsonw.h"

#include <errno.h>
#include <fcntl.h>
#include <locale.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

struct jsonr_parser {
	const unsigned char *s;
	size_t len;
	size_t pos;
	int depth;
	int rc;            /* first error: -EINVAL or -ENOMEM */
	char *err;
	size_t errlen;
	/* jsonr_parse_streaming: the top-level object's member named
	 * stream_key, when an array, goes to stream_fn an item at a time
	 * (jsonr_each_item: stream_fn alone, for the top-level array). */
	const char *stream_key;
	jsonr_item_fn *stream_fn;
	void *stream_ctx;
};

static void jsonr_fail_at(struct jsonr_parser *p, size_t at, int rc, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

/* Record the first error only: later failures are consequences of it. */
static void jsonr_fail_at(struct jsonr_parser *p, size_t at, int rc, const char *fmt, ...)
{
	if (p->rc)
		return;
	p->rc = rc;
	if (!p->err || !p->errlen)
		return;
	/* Error path only: count lines from the start, so any `at` works. */
	size_t line = 1, line_start = 0;
	for (size_t i = 0; i < at && i < p->len; i++)
		if (p->s[i] == '\n') {
			line++;
			line_start = i + 1;
		}
	int n = snprintf(p->err, p->errlen, "line %zu col %zu: ", line, at - line_start + 1);
	if (n < 0 || (size_t)n >= p->errlen)
		return;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(p->err + n, p->errlen - (size_t)n, fmt, ap);
	va_end(ap);
}

#define jsonr_fail(p, ...) jsonr_fail_at((p), (p)->pos, -EINVAL, __VA_ARGS__)

static void jsonr_nomem(struct jsonr_parser *p)
{
	jsonr_fail_at(p, p->pos, -ENOMEM, "out of memory");
}

/* What the byte at pos is, for error messages. */
static const char *jsonr_what(struct jsonr_parser *p, char buf[16])
{
	if (p->pos >= p->len)
		return "end of input";
	unsigned char c = p->s[p->pos];
	if (c > 0x20 && c < 0x7f)
		snprintf(buf, 16, "'%c'", c);
	else
		snprintf(buf, 16, "byte 0x%02x", c);
	return buf;
}

static void jsonr_skip_ws(struct jsonr_parser *p)
{
	while (p->pos < p->len) {
		unsigned char c = p->s[p->pos];
		if (c != ' ' && c != '\t' && c != '\r' && c != '\n')
			return;
		p->pos++;
	}
}

static void jsonr_value_clear(struct jsonr_value *v)
{
	if (v->type == JSONR_STRING) {
		free(v->string);
	} else if (v->type == JSONR_ARRAY || v->type == JSONR_OBJECT) {
		for (size_t i = 0; i < v->n; i++) {
			jsonr_value_clear(&v->items[i]);
			if (v->keys)
				free(v->keys[i]);
		}
		free(v->items);
		free(v->keys);
	}
	memset(v, 0, sizeof *v);
}

void jsonr_free(struct jsonr_value *v)
{
	if (!v)
		return;
	jsonr_value_clear(v);
	free(v);
}

/* A growable byte buffer for string contents. */
struct jsonr_buf {
	char *b;
	size_t len, cap;
};

static int jsonr_buf_put(struct jsonr_buf *b, const void *src, size_t n)
{
	if (b->cap - b->len < n + 1) {
		size_t cap = b->cap ? b->cap : 32;
		while (cap - b->len < n + 1) {
			if (cap > SIZE_MAX / 2)
				return -ENOMEM;
			cap *= 2;
		}
		char *nb = realloc(b->b, cap);
		if (!nb)
			return -ENOMEM;
		b->b = nb;
		b->cap = cap;
	}
	memcpy(b->b + b->len, src, n);
	b->len += n;
	b->b[b->len] = '\0';
	return 0;
}

static size_t jsonr_utf8_encode(uint32_t cp, unsigned char out[4])
{
	if (cp < 0x80) {
		out[0] = (unsigned char)cp;
		return 1;
	}
	if (cp < 0x800) {
		out[0] = (unsigned char)(0xc0 | cp >> 6);
		out[1] = (unsigned char)(0x80 | (cp & 0x3f));
		return 2;
	}
	if (cp < 0x10000) {
		out[0] = (unsigned char)(0xe0 | cp >> 12);
		out[1] = (unsigned char)(0x80 | (cp >> 6 & 0x3f));
		out[2] = (unsigned char)(0x80 | (cp & 0x3f));
		return 3;
	}
	out[0] = (unsigned char)(0xf0 | cp >> 18);
	out[1] = (unsigned char)(0x80 | (cp >> 12 & 0x3f));
	out[2] = (unsigned char)(0x80 | (cp >> 6 & 0x3f));
	out[3] = (unsigned char)(0x80 | (cp & 0x3f));
	return 4;
}

/* Four hex digits at pos (after "\u"); -1 when they are not. */
static long jsonr_hex4(struct jsonr_parser *p)
{
	long v = 0;

	if (p->len - p->pos < 4)
		return -1;
	for (size_t i = 0; i < 4; i++) {
		unsigned char c = p->s[p->pos + i];
		int d;
		if (c >= '0' && c <= '9')
			d = c - '0';
		else if (c >= 'a' && c <= 'f')
			d = c - 'a' + 10;
		else if (c >= 'A' && c <= 'F')
			d = c - 'A' + 10;
		else
			return -1;
		v = v << 4 | d;
	}
	return v;
}

/* A string starting at the opening quote; its bytes go to out (NUL-
 * terminated, also when empty).  0 or the parser's error. */
static int jsonr_string(struct jsonr_parser *p, struct jsonr_buf *out)
{
	size_t start = p->pos;

	p->pos++; /* the opening quote */
	if (jsonr_buf_put(out, "", 0) < 0)
		goto nomem;
	for (;;) {
		if (p->pos >= p->len) {
			jsonr_fail_at(p, start, -EINVAL, "unterminated string");
			return p->rc;
		}
		unsigned char c = p->s[p->pos];
		if (c == '"') {
			p->pos++;
			return 0;
		}
		if (c < 0x20) {
			jsonr_fail(p, "control character 0x%02x in a string (must be escaped)", c);
			return p->rc;
		}
		if (c != '\\') {
			/* Copy a run of plain bytes at once, checking UTF-8. */
			size_t run = p->pos;
			while (run < p->len) {
				unsigned char d = p->s[run];
				if (d == '"' || d == '\\' || d < 0x20)
					break;
				size_t ul = jsonw_utf8_len(p->s + run, p->len - run);
				if (!ul) {
					p->pos = run;
					jsonr_fail(p, "invalid UTF-8 byte 0x%02x in a string", d);
					return p->rc;
				}
				run += ul;
			}
			if (jsonr_buf_put(out, p->s + p->pos, run - p->pos) < 0)
				goto nomem;
			p->pos = run;
			continue;
		}
		/* An escape. */
		size_t esc = p->pos;
		if (p->pos + 1 >= p->len) {
			jsonr_fail_at(p, start, -EINVAL, "unterminated string");
			return p->rc;
		}
		char e = (char)p->s[p->pos + 1], ch;
		switch (e) {
		case '"': ch = '"'; break;
		case '\\': ch = '\\'; break;
		case '/': ch = '/'; break;
		case 'b': ch = '\b'; break;
		case 'f': ch = '\f'; break;
		case 'n': ch = '\n'; break;
		case 'r': ch = '\r'; break;
		case 't': ch = '\t'; break;
		case 'u': ch = 0; break;
		default:
			jsonr_fail(p, "bad escape '\\%c'", e > 0x20 && e < 0x7f ? e : '?');
			return p->rc;
		}
		p->pos += 2;
		if (e != 'u') {
			if (jsonr_buf_put(out, &ch, 1) < 0)
				goto nomem;
			continue;
		}
		long u = jsonr_hex4(p);
		if (u < 0) {
			p->pos = esc;
			jsonr_fail(p, "bad \\u escape (four hex digits expected)");
			return p->rc;
		}
		p->pos += 4;
		unsigned char utf[4];
		size_t n;
		if (u >= 0xd800 && u <= 0xdbff) {
			/* A high surrogate must be followed by a low one. */
			long lo = -1;
			if (p->len - p->pos >= 6 && p->s[p->pos] == '\\' && p->s[p->pos + 1] == 'u') {
				p->pos += 2;
				lo = jsonr_hex4(p);
				p->pos -= 2;
			}
			if (lo < 0xdc00 || lo > 0xdfff) {
				p->pos = esc;
				jsonr_fail(p, "high surrogate \\u%04lx without a low one", (unsigned long)u);
				return p->rc;
			}
			p->pos += 6;
			n = jsonr_utf8_encode((uint32_t)(0x10000 + ((u - 0xd800) << 10) + (lo - 0xdc00)), utf);
		} else if (u >= 0xdc00 && u <= 0xdfff) {
			/* jsonw's surrogateescape: \udcXX is the raw byte XX. */
			if (u < 0xdc80 || u > 0xdcff) {
				p->pos = esc;
				jsonr_fail(p, "lone surrogate \\u%04lx", (unsigned long)u);
				return p->rc;
			}
			utf[0] = (unsigned char)(u & 0xff);
			n = 1;
		} else {
			n = jsonr_utf8_encode((uint32_t)u, utf);
		}
		if (jsonr_buf_put(out, utf, n) < 0)
			goto nomem;
	}
nomem:
	jsonr_nomem(p);
	return p->rc;
}

/* C-locale strtod, so that a caller's setlocale() cannot change what "0.5"
 * means.  The locale object is made once and kept (never freed). */
static double jsonr_strtod(const char *s, char **end)
{
	static locale_t c_locale;

	if (!c_locale)
		c_locale = newlocale(LC_NUMERIC_MASK, "C", (locale_t)0);
	if (c_locale)
		return strtod_l(s, end, c_locale);
	return strtod(s, end);
}

static void jsonr_number(struct jsonr_parser *p, struct jsonr_value *v)
{
	size_t start = p->pos, i = p->pos;
	const unsigned char *s = p->s;

	if (i < p->len && s[i] == '-')
		i++;
	if (i >= p->len || s[i] < '0' || s[i] > '9') {
		p->pos = i;
		jsonr_fail(p, "digit expected in a number");
		return;
	}
	if (s[i] == '0') {
		i++;
		if (i < p->len && s[i] >= '0' && s[i] <= '9') {
			p->pos = start;
			jsonr_fail(p, "leading zero in a number");
			return;
		}
	} else {
		while (i < p->len && s[i] >= '0' && s[i] <= '9')
			i++;
	}
	if (i < p->len && s[i] == '.') {
		i++;
		if (i >= p->len || s[i] < '0' || s[i] > '9') {
			p->pos = i;
			jsonr_fail(p, "digit expected after '.'");
			return;
		}
		while (i < p->len && s[i] >= '0' && s[i] <= '9')
			i++;
	}
	if (i < p->len && (s[i] == 'e' || s[i] == 'E')) {
		i++;
		if (i < p->len && (s[i] == '+' || s[i] == '-'))
			i++;
		if (i >= p->len || s[i] < '0' || s[i] > '9') {
			p->pos = i;
			jsonr_fail(p, "digit expected in an exponent");
			return;
		}
		while (i < p->len && s[i] >= '0' && s[i] <= '9')
			i++;
	}
	/* The grammar is checked; strtod needs a NUL-terminated copy. */
	size_t n = i - start;
	char small[64], *copy = small;
	if (n >= sizeof small) {
		copy = malloc(n + 1);
		if (!copy) {
			jsonr_nomem(p);
			return;
		}
	}
	memcpy(copy, s + start, n);
	copy[n] = '\0';
	char *end;
	double d = jsonr_strtod(copy, &end);
	int whole = end == copy + n;
	if (copy != small)
		free(copy);
	if (!whole || isinf(d) || isnan(d)) {
		p->pos = start;
		jsonr_fail(p, "number out of range");
		return;
	}
	v->type = JSONR_NUMBER;
	v->number = d;
	p->pos = i;
}

static int jsonr_literal(struct jsonr_parser *p, const char *word)
{
	size_t n = strlen(word);

	if (p->len - p->pos < n || memcmp(p->s + p->pos, word, n) != 0)
		return 0;
	p->pos += n;
	return 1;
}

static void jsonr_value(struct jsonr_parser *p, struct jsonr_value *v);
static void jsonr_stream_items(struct jsonr_parser *p, struct jsonr_value *v);

/* Items collected while a container is parsed. */
struct jsonr_list {
	struct jsonr_value *items;
	char **keys;
	size_t *key_lens;
	size_t *key_pos; /* offsets of the keys, for the duplicate-key error */
	size_t n, cap;
};

static int jsonr_list_grow(struct jsonr_list *l, int with_keys)
{
	if (l->n < l->cap)
		return 0;
	size_t cap = l->cap ? l->cap * 2 : 4;
	if (cap > SIZE_MAX / sizeof *l->items)
		return -ENOMEM;
	struct jsonr_value *items = realloc(l->items, cap * sizeof *items);
	if (!items)
		return -ENOMEM;
	l->items = items;
	if (with_keys) {
		char **keys = realloc(l->keys, cap * sizeof *keys);
		if (!keys)
			return -ENOMEM;
		l->keys = keys;
		size_t *lens = realloc(l->key_lens, cap * sizeof *lens);
		if (!lens)
			return -ENOMEM;
		l->key_lens = lens;
		size_t *pos = realloc(l->key_pos, cap * sizeof *pos);
		if (!pos)
			return -ENOMEM;
		l->key_pos = pos;
	}
	l->cap = cap;
	return 0;
}

/* Sorting context for the duplicate-key check (qsort has no user pointer). */
struct jsonr_keyref {
	const char *key;
	size_t len;
	size_t index;
};

static int jsonr_keyref_cmp(const void *a, const void *b)
{
	const struct jsonr_keyref *x = a, *y = b;
	size_t n = x->len < y->len ? x->len : y->len;
	int c = memcmp(x->key, y->key, n);
	if (c)
		return c;
	return (x->len > y->len) - (x->len < y->len);
}

/* 0, or 1 + the index of the first key that repeats an earlier one.
 * Sorting keeps this O(n log n) for an object with very many keys. */
static size_t jsonr_find_duplicate(struct jsonr_parser *p, const struct jsonr_list *l)
{
	if (l->n < 2)
		return 0;
	if (l->n <= 8) {
		for (size_t i = 1; i < l->n; i++)
			for (size_t j = 0; j < i; j++)
				if (l->key_lens[i] == l->key_lens[j] &&
				    memcmp(l->keys[i], l->keys[j], l->key_lens[i]) == 0)
					return i + 1;
		return 0;
	}
	struct jsonr_keyref *refs = malloc(l->n * sizeof *refs);
	if (!refs) {
		jsonr_nomem(p);
		return 0;
	}
	for (size_t i = 0; i < l->n; i++)
		refs[i] = (struct jsonr_keyref){ l->keys[i], l->key_lens[i], i };
	qsort(refs, l->n, sizeof *refs, jsonr_keyref_cmp);
	size_t dup = 0;
	for (size_t i = 1; i < l->n; i++)
		if (jsonr_keyref_cmp(&refs[i - 1], &refs[i]) == 0) {
			size_t later = refs[i].index > refs[i - 1].index ? refs[i].index : refs[i - 1].index;
			if (!dup || later + 1 < dup)
				dup = later + 1;
		}
	free(refs);
	return dup;
}

/* After an item of a container that `close` ends: 1 when a ',' leads to
 * another item (consumed, and the whitespace after it), 0 when `close` ends
 * the container (consumed), -1 on an error (p->rc set). */
static int jsonr_after_item(struct jsonr_parser *p, char close)
{
	char what[16];
	jsonr_skip_ws(p);
	if (p->pos < p->len && p->s[p->pos] == ',') {
		p->pos++;
		jsonr_skip_ws(p);
		if (p->pos < p->len && p->s[p->pos] == close) {
			jsonr_fail(p, "trailing comma before '%c'", close);
			return -1;
		}
		return 1;
	}
	if (p->pos < p->len && p->s[p->pos] == close) {
		p->pos++;
		return 0;
	}
	jsonr_fail(p, "expected ',' or '%c', got %s", close, jsonr_what(p, what));
	return -1;
}

static void jsonr_container(struct jsonr_parser *p, struct jsonr_value *v, int is_object)
{
	struct jsonr_list l = { 0 };
	char close = is_object ? '}' : ']';
	char what[16];

	if (p->depth >= JSONR_MAX_DEPTH) {
		jsonr_fail(p, "nested deeper than %d", JSONR_MAX_DEPTH);
		return;
	}
	p->depth++;
	p->pos++; /* the opening bracket */
	jsonr_skip_ws(p);
	if (p->pos < p->len && p->s[p->pos] == close) {
		p->pos++;
		goto done;
	}
	for (;;) {
		if (jsonr_list_grow(&l, is_object) < 0) {
			jsonr_nomem(p);
			goto fail;
		}
		struct jsonr_value *item = &l.items[l.n];
		memset(item, 0, sizeof *item);
		if (is_object) {
			struct jsonr_buf key = { 0 };
			size_t key_at = p->pos;
			if (p->pos >= p->len || p->s[p->pos] != '"') {
				jsonr_fail(p, "expected a key string, got %s", jsonr_what(p, what));
				goto fail;
			}
			if (jsonr_string(p, &key) < 0) {
				free(key.b);
				goto fail;
			}
			if (memchr(key.b, '\0', key.len)) {
				/* keys are C strings (jsonr_get): a NUL would cut one
				 * short and could make two keys equal. */
				jsonr_fail_at(p, key_at, -EINVAL, "\\u0000 in a key");
				free(key.b);
				goto fail;
			}
			l.keys[l.n] = key.b;
			l.key_lens[l.n] = key.len;
			l.key_pos[l.n] = key_at;
			/* Count the key now so that fail: frees it. */
			l.n++;
			jsonr_skip_ws(p);
			if (p->pos >= p->len || p->s[p->pos] != ':') {
				jsonr_fail(p, "expected ':' after a key, got %s", jsonr_what(p, what));
				goto fail;
			}
			p->pos++;
			jsonr_skip_ws(p);
			if (p->stream_key && p->depth == 1 && strcmp(l.keys[l.n - 1], p->stream_key) == 0 &&
			    p->pos < p->len && p->s[p->pos] == '[')
				jsonr_stream_items(p, item);
			else
				jsonr_value(p, item);
		} else {
			jsonr_value(p, item);
			l.n++;
		}
		if (p->rc)
			goto fail;
		int more = jsonr_after_item(p, close);
		if (more < 0)
			goto fail;
		if (!more)
			break;
	}
	if (is_object) {
		/* Once per object, after its last key: sorting each time a key
		 * is added would be quadratic. */
		size_t dup = jsonr_find_duplicate(p, &l);
		if (p->rc)
			goto fail;
		if (dup) {
			jsonr_fail_at(p, l.key_pos[dup - 1], -EINVAL, "duplicate key \"%.40s\"",
				      l.keys[dup - 1]);
			goto fail;
		}
	}
done:
	p->depth--;
	free(l.key_lens);
	free(l.key_pos);
	v->type = is_object ? JSONR_OBJECT : JSONR_ARRAY;
	v->items = l.items;
	v->keys = is_object ? l.keys : NULL;
	if (!is_object)
		free(l.keys);
	v->n = l.n;
	return;
fail:
	p->depth--;
	for (size_t i = 0; i < l.n; i++) {
		jsonr_value_clear(&l.items[i]);
		if (l.keys)
			free(l.keys[i]);
	}
	free(l.items);
	free(l.keys);
	free(l.key_lens);
	free(l.key_pos);
}

/* The array at p (its '[') handed to p->stream_fn an item at a time, each
 * item's tree freed when the function returns; v becomes an empty array.
 * The items nest as deep as they would in the tree. */
static void jsonr_stream_items(struct jsonr_parser *p, struct jsonr_value *v)
{
	struct jsonr_value item;
	memset(v, 0, sizeof *v);
	v->type = JSONR_ARRAY;
	if (p->depth >= JSONR_MAX_DEPTH) {
		jsonr_fail(p, "nested deeper than %d", JSONR_MAX_DEPTH);
		return;
	}
	p->depth++;
	p->pos++; /* the '[' */
	jsonr_skip_ws(p);
	if (p->pos < p->len && p->s[p->pos] == ']') {
		p->pos++;
	} else {
		for (;;) {
			jsonr_value(p, &item);
			if (!p->rc) {
				int rc = p->stream_fn(&item, p->stream_ctx);
				if (rc < 0)
					p->rc = rc; /* the caller's reason: no message of ours */
			}
			jsonr_value_clear(&item);
			if (p->rc || jsonr_after_item(p, ']') <= 0)
				break;
		}
	}
	p->depth--;
}

static void jsonr_value(struct jsonr_parser *p, struct jsonr_value *v)
{
	char what[16];

	memset(v, 0, sizeof *v);
	if (p->pos >= p->len) {
		jsonr_fail(p, "expected a value, got end of input");
		return;
	}
	switch (p->s[p->pos]) {
	case '{':
		jsonr_container(p, v, 1);
		return;
	case '[':
		jsonr_container(p, v, 0);
		return;
	case '"': {
		struct jsonr_buf b = { 0 };
		if (jsonr_string(p, &b) < 0) {
			free(b.b);
			return;
		}
		v->type = JSONR_STRING;
		v->string = b.b;
		v->len = b.len;
		return;
	}
	case 't':
		if (jsonr_literal(p, "true")) {
			v->type = JSONR_BOOL;
			v->boolean = 1;
			return;
		}
		break;
	case 'f':
		if (jsonr_literal(p, "false")) {
			v->type = JSONR_BOOL;
			return;
		}
		break;
	case 'n':
		if (jsonr_literal(p, "null"))
			return;
		break;
	case '-': case '0': case '1': case '2': case '3': case '4':
	case '5': case '6': case '7': case '8': case '9':
		jsonr_number(p, v);
		return;
	}
	jsonr_fail(p, "expected a value, got %s", jsonr_what(p, what));
}

int jsonr_parse_streaming(const char *text, size_t len, const char *key, jsonr_item_fn *fn,
			  void *ctx, struct jsonr_value **out, char *err, size_t errlen)
{
	struct jsonr_parser p = {
		.s = (const unsigned char *)text, .len = len,
		.err = err, .errlen = errlen,
		.stream_key = key, .stream_fn = key ? fn : NULL, .stream_ctx = ctx,
	};
	char what[16];

	*out = NULL;
	if (err && errlen)
		err[0] = '\0';
	struct jsonr_value *root = calloc(1, sizeof *root);
	if (!root) {
		jsonr_nomem(&p);
		return p.rc;
	}
	jsonr_skip_ws(&p);
	jsonr_value(&p, root);
	if (!p.rc) {
		jsonr_skip_ws(&p);
		if (p.pos < p.len)
			jsonr_fail(&p, "trailing garbage after the value: %s", jsonr_what(&p, what));
	}
	if (p.rc) {
		jsonr_free(root);
		return p.rc;
	}
	*out = root;
	return 0;
}

int jsonr_parse(const char *text, size_t len, struct jsonr_value **out, char *err, size_t errlen)
{
	return jsonr_parse_streaming(text, len, NULL, NULL, NULL, out, err, errlen);
}

int jsonr_each_item(const char *text, size_t len, jsonr_item_fn *fn, void *ctx, char *err,
		    size_t errlen)
{
	struct jsonr_parser p = {
		.s = (const unsigned char *)text, .len = len,
		.err = err, .errlen = errlen,
		.stream_fn = fn, .stream_ctx = ctx,
	};
	struct jsonr_value empty;
	char what[16];

	if (err && errlen)
		err[0] = '\0';
	jsonr_skip_ws(&p);
	if (p.pos >= p.len || p.s[p.pos] != '[') {
		jsonr_fail(&p, "expected an array, got %s", jsonr_what(&p, what));
		return p.rc;
	}
	jsonr_stream_items(&p, &empty);
	if (p.rc)
		return p.rc;
	jsonr_skip_ws(&p);
	if (p.pos < p.len)
		jsonr_fail(&p, "trailing garbage after the value: %s", jsonr_what(&p, what));
	return p.rc;
}

const struct jsonr_value *jsonr_get(const struct jsonr_value *obj, const char *key)
{
	if (!obj || obj->type != JSONR_OBJECT || !key)
		return NULL;
	for (size_t i = 0; i < obj->n; i++)
		if (strcmp(obj->keys[i], key) == 0)
			return &obj->items[i];
	return NULL;
}

/* A deep copy of src into *dst (a value of no tree yet).  0, or -ENOMEM
 * with *dst left empty. */
static int jsonr_copy(struct jsonr_value *dst, const struct jsonr_value *src)
{
	memset(dst, 0, sizeof *dst);
	dst->type = src->type;
	dst->boolean = src->boolean;
	dst->number = src->number;
	if (src->type == JSONR_STRING) {
		if (!(dst->string = malloc(src->len + 1)))
			goto nomem;
		memcpy(dst->string, src->string, src->len + 1);
		dst->len = src->len;
		return 0;
	}
	if (src->type != JSONR_ARRAY && src->type != JSONR_OBJECT)
		return 0;
	if (src->n && !(dst->items = calloc(src->n, sizeof *dst->items)))
		goto nomem;
	if (src->keys && src->n && !(dst->keys = calloc(src->n, sizeof *dst->keys)))
		goto nomem;
	for (size_t i = 0; i < src->n; i++, dst->n++) {
		if (src->keys && !(dst->keys[i] = strdup(src->keys[i])))
			goto nomem;
		if (jsonr_copy(&dst->items[i], &src->items[i]) < 0) {
			free(dst->keys ? dst->keys[i] : NULL);
			goto nomem;
		}
	}
	return 0;
nomem:
	jsonr_value_clear(dst);
	return -ENOMEM;
}

int jsonr_put(struct jsonr_value *obj, const char *key, const struct jsonr_value *v)
{
	if (!obj || obj->type != JSONR_OBJECT || jsonr_get(obj, key))
		return -EINVAL;
	/* grown one at a time: an object is given a few dozen at most */
	struct jsonr_value *items = realloc(obj->items, (obj->n + 1) * sizeof *items);
	if (!items)
		return -ENOMEM;
	obj->items = items;
	char **keys = realloc(obj->keys, (obj->n + 1) * sizeof *keys);
	if (!keys)
		return -ENOMEM;
	obj->keys = keys;
	if (!(keys[obj->n] = strdup(key)))
		return -ENOMEM;
	if (jsonr_copy(&items[obj->n], v) < 0) {
		free(keys[obj->n]);
		return -ENOMEM;
	}
	obj->n++;
	return 0;
}

int jsonr_fill(struct jsonr_value *obj, const struct jsonr_value *dflt)
{
	if (!obj || !dflt || obj->type != JSONR_OBJECT || dflt->type != JSONR_OBJECT)
		return 0;
	for (size_t d = 0; d < dflt->n; d++) {
		struct jsonr_value *have = (struct jsonr_value *)jsonr_get(obj, dflt->keys[d]);
		int rc = have ? jsonr_fill(have, &dflt->items[d])
			      : jsonr_put(obj, dflt->keys[d], &dflt->items[d]);
		if (rc < 0)
			return rc;
	}
	return 0;
}

const struct jsonr_value *jsonr_at(const struct jsonr_value *arr, size_t i)
{
	if (!arr || arr->type != JSONR_ARRAY || i >= arr->n)
		return NULL;
	return &arr->items[i];
}

double jsonr_num(const struct jsonr_value *v, double dflt)
{
	return v && v->type == JSONR_NUMBER ? v->number : dflt;
}

const char *jsonr_str(const struct jsonr_value *v, const char *dflt)
{
	return v && v->type == JSONR_STRING ? v->string : dflt;
}

/* A buffer of at least n bytes for a file's text, to free().  From 2 MiB up,
 * 2 MiB-aligned and advised for huge pages: a multi-megabyte stacks.json
 * or processes.json read into fresh memory was a page fault every 4 KiB
 * (a thousand at the end of a traced build), and a first touch is slow on
 * a VM; in huge pages it is one fault per 2 MiB where the kernel allows. */
static char *slurp_buffer(size_t n)
{
	enum { HUGE = 2u << 20 };
	void *p;
	if (n < HUGE)
		return malloc(n);
	n = (n + HUGE - 1) & ~(size_t)(HUGE - 1); /* whole huge pages */
	if (posix_memalign(&p, HUGE, n) != 0)
		return NULL;
#ifdef MADV_HUGEPAGE
	(void)madvise(p, n, MADV_HUGEPAGE); /* a hint */
#endif
	return p;
}

/* The whole of file `name` in a buffer of its own (*buf, *len; the caller
 * frees it), bounded by max_bytes as it is read.  0, or -errno with err
 * filled ("name: why"). */
static int jsonr_slurp(int dirfd, const char *name, size_t max_bytes, char **bufp, size_t *lenp,
		       char *err, size_t errlen)
{
	char *buf = NULL;
	size_t len = 0, cap = 0;
	/* One byte past the limit tells "too big" from "exactly max". */
	size_t limit = max_bytes < SIZE_MAX ? max_bytes + 1 : SIZE_MAX;
	int rc = 0;

	*bufp = NULL;
	*lenp = 0;
	if (err && errlen)
		err[0] = '\0';
	int fd = openat(dirfd, name, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	if (fd < 0) {
		rc = -errno;
		goto report;
	}
	struct stat st;
	if (fstat(fd, &st) < 0) {
		rc = -errno;
		goto report;
	}
	if (!S_ISREG(st.st_mode)) {
		/* A FIFO or device could block or never end. */
		rc = -EINVAL;
		if (err && errlen)
			snprintf(err, errlen, "%s: not a regular file", name);
		goto out;
	}
	/* the file's size known: one buffer, read with no realloc */
	if (st.st_size > 0 && limit > 4097 && (uintmax_t)st.st_size < limit - 4097) {
		cap = (size_t)st.st_size + 4097;
		if (!(buf = slurp_buffer(cap))) {
			rc = -ENOMEM;
			goto report;
		}
	}
	for (;;) {
		if (cap - len < 4096) {
			size_t ncap = cap ? cap * 2 : 8192;
			if (ncap > limit || ncap < cap)
				ncap = limit;
			if (ncap <= len) {
				rc = -EFBIG;
				goto report;
			}
			char *nb = realloc(buf, ncap);
			if (!nb) {
				rc = -ENOMEM;
				goto report;
			}
			buf = nb;
			cap = ncap;
		}
		ssize_t n = read(fd, buf + len, cap - len);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			rc = -errno;
			goto report;
		}
		if (n == 0)
			break;
		len += (size_t)n;
		if (len > max_bytes) {
			rc = -EFBIG;
			goto report;
		}
	}
	close(fd);
	*bufp = buf;
	*lenp = len;
	return 0;
report:
	if (err && errlen) {
		if (rc == -EFBIG)
			snprintf(err, errlen, "%s: larger than %zu bytes", name, max_bytes);
		else
			snprintf(err, errlen, "%s: %s", name, strerror(-rc));
	}
out:
	if (fd >= 0)
		close(fd);
	free(buf);
	return rc;
}

int jsonr_read_file_streaming(int dirfd, const char *name, size_t max_bytes, const char *key,
			      jsonr_item_fn *fn, void *ctx, struct jsonr_value **out, char *err,
			      size_t errlen)
{
	char *buf, perr[200];
	size_t len;
	*out = NULL;
	int rc = jsonr_slurp(dirfd, name, max_bytes, &buf, &len, err, errlen);
	if (rc < 0)
		return rc;
	rc = jsonr_parse_streaming(buf ? buf : "", len, key, fn, ctx, out, perr, sizeof perr);
	if (rc < 0 && err && errlen)
		snprintf(err, errlen, "%s: %s", name, perr[0] ? perr : strerror(-rc));
	free(buf);
	return rc;
}

int jsonr_read_file(int dirfd, const char *name, size_t max_bytes, struct jsonr_value **out, char *err, size_t errlen)
{
	return jsonr_read_file_streaming(dirfd, name, max_bytes, NULL, NULL, NULL, out, err, errlen);
}

int jsonr_read_file_each(int dirfd, const char *name, size_t max_bytes, jsonr_item_fn *fn,
			 void *ctx, char *err, size_t errlen)
{
	char *buf, perr[200];
	size_t len;
	int rc = jsonr_slurp(dirfd, name, max_bytes, &buf, &len, err, errlen);
	if (rc < 0)
		return rc;
	rc = jsonr_each_item(buf ? buf : "", len, fn, ctx, perr, sizeof perr);
	if (rc < 0 && err && errlen)
		snprintf(err, errlen, "%s: %s", name, perr[0] ? perr : strerror(-rc));
	free(buf);
	return rc;
}
