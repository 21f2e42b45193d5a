/* selfmaps.h: the image's own /proc/self/maps, read the shim's way: raw
 * system calls, a small stack buffer, no allocation, no stdio, no lock.
 * The sampler uses it for the module table of its call stacks (sites.c)
 * and for the bounds of a thread's stack (callstack.c).
 *
 * Parsing is separate from reading: selfmaps_parse_line() is pure.
 */
#ifndef MEMTRACE_SELFMAPS_H
#define MEMTRACE_SELFMAPS_H

#include <stddef.h>
#include <stdint.h>

#define SELFMAPS_R 1u
#define SELFMAPS_W 2u
#define SELFMAPS_X 4u
#define SELFMAPS_SHARED 8u

/* Longest line kept whole; a longer line's path is cut (`truncated`). */
#define SELFMAPS_LINE_BYTES 1024u

struct selfmaps_entry {
	uintptr_t start, end;
	uint64_t offset, inode;
	unsigned dev_major, dev_minor;
	unsigned perms;      /* SELFMAPS_* */
	const char *path;    /* into the caller's line; "" for anonymous */
	size_t path_len;
	int truncated;       /* the line was longer than SELFMAPS_LINE_BYTES */
};

/* One line "start-end perms offset major:minor inode [path]" (without its
 * newline) into *e; `path` points into `line`.  0, or -EINVAL for anything
 * else. */
int selfmaps_parse_line(const char *line, size_t len, struct selfmaps_entry *e);

/* Calls fn(entry, ctx) for every line of /proc/self/maps, in order, until
 * fn returns non-zero (that value is returned).  0 at the end, -errno if
 * the file cannot be read. */
int selfmaps_scan(int (*fn)(const struct selfmaps_entry *, void *), void *ctx);

/* [start, end) of the readable mapping that holds addr; 0, or -ENOENT. */
int selfmaps_find(uintptr_t addr, uintptr_t *start, uintptr_t *end);

#endif /* MEMTRACE_SELFMAPS_H */
