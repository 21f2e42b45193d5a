/* render.h: an image's record as people and programs read it: the short
 * block the shim prints on stderr, the JSON document of MEMTRACE_OUT, and
 * byte figures for people.  Pure formatting into a caller's buffer or onto
 * one descriptor; whether and where to speak is report.h's decision.
 * Async-signal-safe: stack buffers, integers only, raw write(2).
 */
#ifndef MEMTRACE_RENDER_H
#define MEMTRACE_RENDER_H

#include <stddef.h>
#include <stdint.h>

#include "record.h"

struct textbuf;

/* Summary text into buf (NUL-terminated); returns its length. */
size_t render_summary(const struct mt_record *r, char *buf, size_t cap);
/* The record as one JSON document on fd (common/recordjson.h's layout);
 * 0 or -errno. */
int render_json(const struct mt_record *r, int fd);
/* Bytes for people, by the one unit rule of common/units.h: "12345 B"
 * below 10 kB, else one decimal (truncated) in kB/MB/GB/TB. */
void render_bytes(struct textbuf *s, uint64_t v);

#endif /* MEMTRACE_RENDER_H */
