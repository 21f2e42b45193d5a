/* textbuf.h: a bounded text builder on a caller's buffer, for the code
 * both halves compile: the shim's messages and reports, memsup's
 * timeline lines.  Appends past the end are cut, and say so in
 * `truncated`; `len` never exceeds cap - 1 (cut: it is cap - 1) and buf
 * stays NUL-terminated (cap 0: nothing is ever written).  Pure,
 * allocation-free and async-signal-safe: the shim builds its fork-child
 * and exit messages with it. */
#ifndef MEMTRACE_TEXTBUF_H
#define MEMTRACE_TEXTBUF_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

struct textbuf {
	char *buf;
	size_t cap, len;
	int truncated;
};

void textbuf_init(struct textbuf *s, char *buf, size_t cap);
void textbuf_add(struct textbuf *s, const char *text);
void textbuf_add_n(struct textbuf *s, const char *text, size_t n);
void textbuf_add_u64(struct textbuf *s, uint64_t v);

/* A string literal (only: its length is sizeof's), the copy inlined where
 * it fits: a timeline line appends a dozen, and a call and a memcpy of
 * unknown length each were a tenth of the line's cost. */
#define textbuf_add_lit(s, lit) textbuf_add_fixed((s), "" lit, sizeof(lit) - 1)
static inline void textbuf_add_fixed(struct textbuf *s, const char *text, size_t n)
{
	if (s->cap - s->len > n) { /* cap 0: 0 - 0 > n is false */
		memcpy(s->buf + s->len, text, n);
		s->len += n;
		s->buf[s->len] = '\0';
	} else {
		textbuf_add_n(s, text, n);
	}
}

#endif /* MEMTRACE_TEXTBUF_H */
