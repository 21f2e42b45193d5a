/* jsonw.c: streaming JSON writer into a fixed buffer, flushed to an fd.
 * Allocation-free and stdio-free except jsonw_double() (snprintf); see
 * jsonw.h for the escaping contract (invalid UTF-8 -> \udcXX). */
#include "jsonw.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static void jsonw_flush(struct jsonw *w)
{
	size_t off = 0;

	while (!w->err && off < w->len) {
		ssize_t n = write(w->fd, w->buf + off, w->len - off);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			w->err = -errno;
		} else if (n == 0) {
			w->err = -EIO;
		} else {
			off += (size_t)n;
		}
	}
	w->len = 0;
}

static void jsonw_put(struct jsonw *w, const char *s, size_t n)
{
	while (n && !w->err) {
		size_t room = sizeof w->buf - w->len;
		size_t take = n < room ? n : room;
		memcpy(w->buf + w->len, s, take);
		w->len += take;
		s += take;
		n -= take;
		if (w->len == sizeof w->buf)
			jsonw_flush(w);
	}
}

static void jsonw_putc(struct jsonw *w, char c)
{
	jsonw_put(w, &c, 1);
}

/* The layout before an item (or a closing bracket) of a container that
 * is `depth` deep. */
static void jsonw_newline_indent(struct jsonw *w, unsigned depth)
{
	static const char spaces[] = "                                ";

	if (!w->indent) {
		if (depth && depth <= w->lines)
			jsonw_putc(w, '\n');
		return;
	}
	jsonw_putc(w, '\n');
	for (size_t todo = (size_t)w->indent * w->depth; todo;) {
		size_t n = todo < sizeof spaces - 1 ? todo : sizeof spaces - 1;
		jsonw_put(w, spaces, n);
		todo -= n;
	}
}

/* Called before every value and key: the comma and layout that separate it
 * from what came before at this depth. */
static void jsonw_separate(struct jsonw *w)
{
	if (w->after_key) {
		w->after_key = 0;
		return;
	}
	if (w->depth == 0)
		return;
	uint32_t bit = 1u << (w->depth - 1);
	if (w->has_items & bit)
		jsonw_putc(w, ',');
	w->has_items |= bit;
	jsonw_newline_indent(w, w->depth);
}

void jsonw_init(struct jsonw *w, int fd, unsigned indent)
{
	w->fd = fd;
	w->err = 0;
	w->indent = indent;
	w->lines = 0;
	w->depth = 0;
	w->has_items = 0;
	w->after_key = 0;
	w->len = 0;
}

void jsonw_lines(struct jsonw *w, unsigned depth)
{
	w->lines = depth;
}

static void jsonw_open(struct jsonw *w, char c)
{
	jsonw_separate(w);
	jsonw_putc(w, c);
	if (w->depth >= JSONW_MAX_DEPTH) {
		w->err = w->err ? w->err : -E2BIG;
		return;
	}
	w->depth++;
	w->has_items &= ~(1u << (w->depth - 1));
}

static void jsonw_close(struct jsonw *w, char c)
{
	if (w->depth == 0) {
		w->err = w->err ? w->err : -EINVAL;
		return;
	}
	int had_items = !!(w->has_items & (1u << (w->depth - 1)));
	unsigned closed = w->depth--;
	if (had_items)
		jsonw_newline_indent(w, w->indent ? w->depth : closed);
	jsonw_putc(w, c);
}

void jsonw_object_begin(struct jsonw *w) { jsonw_open(w, '{'); }
void jsonw_object_end(struct jsonw *w) { jsonw_close(w, '}'); }
void jsonw_array_begin(struct jsonw *w) { jsonw_open(w, '['); }
void jsonw_array_end(struct jsonw *w) { jsonw_close(w, ']'); }

size_t jsonw_utf8_len(const unsigned char *s, size_t n)
{
	unsigned char c = s[0];
	size_t len;
	unsigned lo = 0x80, hi = 0xbf; /* allowed range of the second byte */

	if (c < 0x80)
		return 1;
	if (c >= 0xc2 && c <= 0xdf)
		len = 2;
	else if (c >= 0xe0 && c <= 0xef) {
		len = 3;
		if (c == 0xe0)
			lo = 0xa0;
		else if (c == 0xed)
			hi = 0x9f;
	} else if (c >= 0xf0 && c <= 0xf4) {
		len = 4;
		if (c == 0xf0)
			lo = 0x90;
		else if (c == 0xf4)
			hi = 0x8f;
	} else
		return 0;
	if (n < len || s[1] < lo || s[1] > hi)
		return 0;
	for (size_t i = 2; i < len; i++)
		if (s[i] < 0x80 || s[i] > 0xbf)
			return 0;
	return len;
}

static void jsonw_escape_byte(struct jsonw *w, const char *prefix, unsigned char b)
{
	static const char hex[] = "0123456789abcdef";
	char esc[6];

	memcpy(esc, prefix, 4);
	esc[4] = hex[b >> 4];
	esc[5] = hex[b & 15];
	jsonw_put(w, esc, sizeof esc);
}

static void jsonw_quoted(struct jsonw *w, const char *str, size_t n)
{
	const unsigned char *s = (const unsigned char *)str;
	size_t i = 0;

	jsonw_putc(w, '"');
	while (i < n) {
		unsigned char c = s[i];
		size_t run;

		if (c == '"' || c == '\\') {
			char esc[2] = { '\\', (char)c };
			jsonw_put(w, esc, 2);
			i++;
		} else if (c < 0x20 || c == 0x7f) {
			const char *short_esc = NULL;
			switch (c) {
			case '\n': short_esc = "\\n"; break;
			case '\t': short_esc = "\\t"; break;
			case '\r': short_esc = "\\r"; break;
			case '\b': short_esc = "\\b"; break;
			case '\f': short_esc = "\\f"; break;
			}
			if (short_esc)
				jsonw_put(w, short_esc, 2);
			else
				jsonw_escape_byte(w, "\\u00", c);
			i++;
		} else if ((run = jsonw_utf8_len(s + i, n - i)) > 0) {
			jsonw_put(w, (const char *)s + i, run);
			i += run;
		} else {
			/* Not UTF-8: keep the byte recoverable (surrogateescape). */
			jsonw_escape_byte(w, "\\udc", c);
			i++;
		}
	}
	jsonw_putc(w, '"');
}

void jsonw_key(struct jsonw *w, const char *key)
{
	jsonw_separate(w);
	jsonw_quoted(w, key, strlen(key));
	jsonw_put(w, w->indent ? ": " : ":", w->indent ? 2 : 1);
	w->after_key = 1;
}

void jsonw_string_n(struct jsonw *w, const char *s, size_t n)
{
	jsonw_separate(w);
	jsonw_quoted(w, s, n);
}

void jsonw_string(struct jsonw *w, const char *s)
{
	if (!s) {
		jsonw_null(w);
		return;
	}
	jsonw_string_n(w, s, strlen(s));
}

/* Digits of v, most significant first, into the end of buf[24]. */
static size_t format_u64(char buf[24], uint64_t v)
{
	size_t i = 24;

	do {
		buf[--i] = (char)('0' + v % 10);
		v /= 10;
	} while (v);
	return i;
}

void jsonw_uint(struct jsonw *w, uint64_t v)
{
	char buf[24];
	size_t start = format_u64(buf, v);

	jsonw_separate(w);
	jsonw_put(w, buf + start, sizeof buf - start);
}

void jsonw_int(struct jsonw *w, int64_t v)
{
	char buf[24];
	/* Negate in unsigned arithmetic: INT64_MIN has no positive twin. */
	uint64_t mag = v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v;
	size_t start = format_u64(buf, mag);

	if (v < 0)
		buf[--start] = '-';
	jsonw_separate(w);
	jsonw_put(w, buf + start, sizeof buf - start);
}

void jsonw_double(struct jsonw *w, double v, unsigned decimals)
{
	char buf[64];
	int n;

	if (v != v || v > 1.7976931348623157e308 || v < -1.7976931348623157e308) {
		jsonw_null(w);
		return;
	}
	if (decimals > 17)
		decimals = 17;
	n = snprintf(buf, sizeof buf, "%.*f", (int)decimals, v);
	if (n < 0 || (size_t)n >= sizeof buf - 2) { /* room for ".0" below */
		/* Beyond 1e45 or so: exponent form, still valid JSON. */
		n = snprintf(buf, sizeof buf, "%.17g", v);
		if (n < 0 || (size_t)n >= sizeof buf) {
			jsonw_null(w);
			return;
		}
	} else if (decimals == 0) {
		buf[n++] = '.';
		buf[n++] = '0';
	} else {
		/* Trim trailing zeros but keep one digit after the point. */
		while (n > 2 && buf[n - 1] == '0' && buf[n - 2] != '.')
			n--;
	}
	if (n == 4 && memcmp(buf, "-0.0", 4) == 0) { /* -0.0 reads oddly */
		memcpy(buf, "0.0", 3);
		n = 3;
	}
	jsonw_separate(w);
	jsonw_put(w, buf, (size_t)n);
}

void jsonw_bool(struct jsonw *w, int v)
{
	jsonw_separate(w);
	if (v)
		jsonw_put(w, "true", 4);
	else
		jsonw_put(w, "false", 5);
}

void jsonw_null(struct jsonw *w)
{
	jsonw_separate(w);
	jsonw_put(w, "null", 4);
}

void jsonw_raw(struct jsonw *w, const char *text, size_t n)
{
	jsonw_separate(w);
	jsonw_put(w, text, n);
}

int jsonw_finish(struct jsonw *w)
{
	jsonw_flush(w);
	if (w->err)
		return w->err;
	return w->depth ? -EINVAL : 0;
}

int jsonw_finish_line(struct jsonw *w)
{
	jsonw_putc(w, '\n');
	return jsonw_finish(w);
}
