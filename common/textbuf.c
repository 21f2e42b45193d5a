/* textbuf.c: a bounded text builder (see textbuf.h). */
#include "textbuf.h"
#include "decimal.h"
#include "invariant.h"

#include <string.h>

void textbuf_init(struct textbuf *s, char *buf, size_t cap)
{
	s->buf = buf;
	s->cap = cap;
	s->len = 0;
	s->truncated = 0;
	if (cap)
		buf[0] = '\0';
}

void textbuf_add_n(struct textbuf *s, const char *text, size_t n)
{
	if (s->cap == 0) { /* no room even for the NUL: all of it is cut */
		s->truncated |= n > 0;
		return;
	}
	if (n > s->cap - 1 - s->len) {
		n = s->cap - 1 - s->len;
		s->truncated = 1;
	}
	memcpy(s->buf + s->len, text, n);
	s->len += n;
	s->buf[s->len] = '\0';
	/* the callers that end a line over the NUL rely on both */
	MT_ASSERT(s->len < s->cap);
	MT_ASSERT(!s->truncated || s->len == s->cap - 1);
}

void textbuf_add(struct textbuf *s, const char *text)
{
	textbuf_add_n(s, text, strlen(text));
}

void textbuf_add_u64(struct textbuf *s, uint64_t v)
{
	/* room for the longest: the digits go in place, not through num */
	if (s->cap - s->len >= DECIMAL_U64_BYTES) {
		s->len += decimal_format_u64(s->buf + s->len, v);
		return;
	}
	char num[DECIMAL_U64_BYTES];
	size_t n = decimal_format_u64(num, v);
	textbuf_add_n(s, num, n);
}
