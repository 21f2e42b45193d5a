/* jsonw.h: a streaming JSON writer into a fixed buffer, flushed to an fd.
 *
 * Shared by the shim (MEMTRACE_OUT summaries) and memsup (the evidence
 * files), so it follows the shim's rules: it never allocates, never uses
 * stdio and never exits.  The caller owns the struct (stack or static) and the
 * fd.  Errors are sticky: the first failed write(2) is kept in `err` and every
 * later call does nothing, so a writer can emit a whole document and check
 * once at the end with jsonw_finish().
 *
 * Strings are arbitrary bytes.  Valid UTF-8 is written as is; control
 * characters, '"' and '\\' are escaped; every byte that is not part of a valid
 * UTF-8 sequence is written as a lone surrogate \udcXX (XX = the byte), the
 * convention of Python's "surrogateescape", so that
 *     os.fsencode(json.loads(text))
 * gives back the original bytes exactly, and any JSON parser still accepts it.
 *
 * jsonw_double() uses snprintf(3): fine for memsup, not for the shim's
 * signal or fork-child paths (the shim writes integers only).
 */
#ifndef MEMTRACE_JSONW_H
#define MEMTRACE_JSONW_H

#include <stddef.h>
#include <stdint.h>

#define JSONW_BUF_BYTES 4096u
#define JSONW_MAX_DEPTH 32u

struct jsonw {
	int fd;             /* destination; flushed when buf fills and at finish */
	int err;            /* 0, or the first -errno (sticky) */
	unsigned indent;    /* 0: one line; N: pretty, N spaces per level */
	unsigned lines;     /* with indent 0: each item of a container at most
			       this deep on a line of its own (jsonw_lines) */
	unsigned depth;
	uint32_t has_items; /* bit d: the container at depth d has an item */
	int after_key;      /* the next value follows a key: no comma, no newline */
	size_t len;
	char buf[JSONW_BUF_BYTES];
};

/* Start a document on `fd` with `indent` spaces per level (0 = compact). */
void jsonw_init(struct jsonw *w, int fd, unsigned indent);
/* Compact, but every item of a container at most `depth` deep starts a line
 * of its own (1: an array of objects, one object per line: greppable and
 * still one JSON document).  Call after jsonw_init(w, fd, 0). */
void jsonw_lines(struct jsonw *w, unsigned depth);

void jsonw_object_begin(struct jsonw *w);
void jsonw_object_end(struct jsonw *w);
void jsonw_array_begin(struct jsonw *w);
void jsonw_array_end(struct jsonw *w);

/* A key inside an object; the next call writes its value. */
void jsonw_key(struct jsonw *w, const char *key);

void jsonw_string(struct jsonw *w, const char *s);          /* NULL -> null */
void jsonw_string_n(struct jsonw *w, const char *s, size_t n);
void jsonw_int(struct jsonw *w, int64_t v);
void jsonw_uint(struct jsonw *w, uint64_t v);
/* `v` with at most `decimals` places, trailing zeros trimmed but one kept
 * ("0.5", "2.0"); NaN and infinities are written as null. */
void jsonw_double(struct jsonw *w, double v, unsigned decimals);
void jsonw_bool(struct jsonw *w, int v);
void jsonw_null(struct jsonw *w);

/* Length of the valid UTF-8 sequence starting at s (n >= 1 bytes left), or
 * 0 when the byte at s does not start one.  Rejects overlong forms,
 * surrogates (U+D800..DFFF) and code points above U+10FFFF (RFC 3629).  The
 * project's one UTF-8 check: the writer, memsup's JSON reader and the SVG
 * text all agree on what is valid. */
size_t jsonw_utf8_len(const unsigned char *s, size_t n);

/* Raw, already valid JSON text (no escaping). */
void jsonw_raw(struct jsonw *w, const char *text, size_t n);

/* Flush what is buffered.  Returns 0 or -errno (also when an earlier call
 * failed), and -EINVAL when containers are still open. */
int jsonw_finish(struct jsonw *w);

/* Writes a trailing newline then flushes; for one-document-per-line files. */
int jsonw_finish_line(struct jsonw *w);

#endif /* MEMTRACE_JSONW_H */
