/* jsonr.h: a small, strict JSON reader for evidence files (resources.json,
 * processes.json, ...), the reading twin of common/jsonw.h.
 *
 * Supervisor only: it allocates (malloc) and is not async-signal-safe.  The
 * whole document is parsed into a tree that the caller owns and frees with
 * jsonr_free().  Strict RFC 8259: no comments, no trailing commas, no NaN or
 * Infinity, no leading zeros, no raw control characters in strings, raw
 * bytes >= 0x80 only as well-formed UTF-8, no duplicate keys in an object
 * and no \u0000 in a key (keys are C strings, so jsonr_get is unambiguous),
 * only whitespace after the value.  Nesting deeper than JSONR_MAX_DEPTH
 * containers is refused, so the recursion is bounded.
 *
 * Strings decode to bytes.  A lone low surrogate \udc80..\udcff decodes to
 * the single raw byte 0x80..0xff: that is how jsonw writes a byte that is not
 * part of valid UTF-8 (Python's "surrogateescape"), so whatever jsonw wrote
 * comes back byte for byte.  Any other lone surrogate is a syntax error.
 * Numbers are doubles (strtod in the C locale); a number too large for a
 * double is a syntax error, one too small reads as (nearly) zero.
 */
#ifndef MEMTRACE_JSONR_H
#define MEMTRACE_JSONR_H

#include <stddef.h>

#define JSONR_MAX_DEPTH 64

enum jsonr_type { JSONR_NULL, JSONR_BOOL, JSONR_NUMBER, JSONR_STRING, JSONR_ARRAY, JSONR_OBJECT };

struct jsonr_value {
	enum jsonr_type type;
	int boolean;                 /* JSONR_BOOL */
	double number;               /* JSONR_NUMBER */
	char *string;                /* JSONR_STRING: NUL-terminated, UTF-8 (\udcXX lone surrogates as written by common/jsonw.c decode back to the raw byte XX) */
	size_t len;                  /* string length in bytes (may contain NUL from \u0000) */
	struct jsonr_value *items;   /* array elements or object values */
	char **keys;                 /* object keys, parallel to items; NULL for arrays */
	size_t n;                    /* number of items */
};

/* Parse text[0..len).  0, or -EINVAL (syntax: err says where, "line L col C: ...") or -ENOMEM. Depth limit 64. Trailing whitespace only.
 * Lines and columns count from 1; a column counts bytes.  On success *out
 * is a tree owned by the caller (jsonr_free); on failure *out is NULL and
 * nothing is left allocated.  err may be NULL (errlen 0). */
int jsonr_parse(const char *text, size_t len, struct jsonr_value **out, char *err, size_t errlen);

/* Free a tree from jsonr_parse/jsonr_read_file (NULL is fine). */
void jsonr_free(struct jsonr_value *v);

/* Member of an object (NULL if absent or v is not an object). */
const struct jsonr_value *jsonr_get(const struct jsonr_value *obj, const char *key);

double jsonr_num(const struct jsonr_value *v, double dflt);      /* dflt unless a number */
const char *jsonr_str(const struct jsonr_value *v, const char *dflt); /* dflt unless a string */

/* Item i of an array (NULL if v is not an array or i is out of range). */
const struct jsonr_value *jsonr_at(const struct jsonr_value *arr, size_t i);

/* A copy of v (deep) as obj's member `key`.  0, -EINVAL when obj is not an
 * object or already has the key (keys stay unique), or -ENOMEM. */
int jsonr_put(struct jsonr_value *obj, const char *key, const struct jsonr_value *v);
/* Every member of the object dflt that obj lacks, copied into obj; where
 * both have a member of that name and both are objects, the same inside it
 * (so a default object fills an absent member whole, and a present one key
 * by key).  A member obj has of another type is left as it is.  A file that
 * leaves out the keys whose value is their default (processes.json) reads
 * as if it had them all.  Nothing happens unless both are objects.  0, or
 * -ENOMEM (obj then holds some of the defaults, and is still whole). */
int jsonr_fill(struct jsonr_value *obj, const struct jsonr_value *dflt);

/* Read and parse a whole file relative to dirfd (openat); refuses files over max_bytes with -EFBIG. 0/-errno, err filled.
 * err starts with `name`: "resources.json: line 3 col 7: ..." or
 * "resources.json: No such file or directory".  A syntax error is -EINVAL,
 * as is a name that is not a regular file.  The size is checked while
 * reading, not from fstat, so a file that grows under us is still bounded. */
int jsonr_read_file(int dirfd, const char *name, size_t max_bytes, struct jsonr_value **out, char *err, size_t errlen);

/* A document that is one array, read an item at a time: fn gets each item's
 * tree, which is freed when fn returns, so that processes.json of 100,000
 * images needs the memory of one of them rather than of all.  The text is
 * held to the same grammar as jsonr_parse, the items' nesting counted from
 * the array.  The item is the walker's own until fn returns, so fn may
 * change it (jsonr_fill) though its type says const.  fn returns 0 to go on, or -errno to stop: that value is
 * returned, err left empty.  A syntax error stops the walk where it is
 * found, after fn has had the items before it: a caller that must not use
 * part of a torn file drops what it gathered when the result is < 0. */
typedef int jsonr_item_fn(const struct jsonr_value *item, void *ctx);
int jsonr_each_item(const char *text, size_t len, jsonr_item_fn *fn, void *ctx, char *err,
		    size_t errlen);
/* The same over a whole file, read as jsonr_read_file reads it. */
int jsonr_read_file_each(int dirfd, const char *name, size_t max_bytes, jsonr_item_fn *fn,
			 void *ctx, char *err, size_t errlen);

/* A document read whole as jsonr_parse reads it, but for one member of its
 * top-level object: when the member named `key` is an array, fn gets its
 * items one at a time as jsonr_each_item gives them, and the tree holds an
 * empty array in its place (stacks.json's images: one image's memory, not
 * 100,000's).  key NULL is jsonr_parse.  fn's -errno stops the parse and
 * is returned, with err left empty (the file form: "name: strerror"). */
int jsonr_parse_streaming(const char *text, size_t len, const char *key, jsonr_item_fn *fn,
			  void *ctx, struct jsonr_value **out, char *err, size_t errlen);
int jsonr_read_file_streaming(int dirfd, const char *name, size_t max_bytes, const char *key,
			      jsonr_item_fn *fn, void *ctx, struct jsonr_value **out, char *err,
			      size_t errlen);

#endif /* MEMTRACE_JSONR_H */
