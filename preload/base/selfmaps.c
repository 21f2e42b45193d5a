/* selfmaps.c: /proc/self/maps without allocating (see selfmaps.h). */
#include <errno.h>
#include <fcntl.h>
#include <string.h>

#include "base/selfmaps.h"
#include "base/sys.h"

/* Hex digits at *p into *out; returns how many (0: none, or overflow). */
static size_t selfmaps_hex(const char *p, const char *end, uint64_t *out)
{
	uint64_t v = 0;
	size_t n = 0;
	for (; p + n < end; n++) {
		char c = p[n];
		unsigned d;
		if (c >= '0' && c <= '9')
			d = (unsigned)(c - '0');
		else if (c >= 'a' && c <= 'f')
			d = (unsigned)(c - 'a' + 10);
		else if (c >= 'A' && c <= 'F')
			d = (unsigned)(c - 'A' + 10);
		else
			break;
		if (v >> 60)
			return 0;
		v = v << 4 | d;
	}
	*out = v;
	return n;
}

int selfmaps_parse_line(const char *line, size_t len, struct selfmaps_entry *e)
{
	const char *p = line, *end = line + len;
	uint64_t v, w;
	size_t n;

	memset(e, 0, sizeof *e);
	if (!(n = selfmaps_hex(p, end, &v)) || p + n >= end || p[n] != '-')
		return -EINVAL;
	p += n + 1;
	if (!(n = selfmaps_hex(p, end, &w)) || p + n >= end || p[n] != ' ' || w < v)
		return -EINVAL;
	e->start = (uintptr_t)v;
	e->end = (uintptr_t)w;
	p += n + 1;
	if (end - p < 5)
		return -EINVAL;
	e->perms = (p[0] == 'r' ? SELFMAPS_R : 0) | (p[1] == 'w' ? SELFMAPS_W : 0) |
		   (p[2] == 'x' ? SELFMAPS_X : 0) | (p[3] == 's' ? SELFMAPS_SHARED : 0);
	if (p[4] != ' ')
		return -EINVAL;
	p += 5;
	if (!(n = selfmaps_hex(p, end, &e->offset)) || p + n >= end || p[n] != ' ')
		return -EINVAL;
	p += n + 1;
	if (!(n = selfmaps_hex(p, end, &v)) || p + n >= end || p[n] != ':')
		return -EINVAL;
	e->dev_major = (unsigned)v;
	p += n + 1;
	if (!(n = selfmaps_hex(p, end, &v)) || p + n > end || (p + n < end && p[n] != ' '))
		return -EINVAL;
	e->dev_minor = (unsigned)v;
	p += n;
	while (p < end && *p == ' ')
		p++;
	/* The inode, in decimal, bounded by the line (no NUL after it). */
	for (n = 0; p + n < end && p[n] >= '0' && p[n] <= '9'; n++) {
		if (e->inode > (UINT64_MAX - 9) / 10)
			return -EINVAL;
		e->inode = e->inode * 10 + (uint64_t)(p[n] - '0');
	}
	if (!n)
		return -EINVAL;
	p += n;
	while (p < end && *p == ' ')
		p++;
	e->path = p;
	e->path_len = (size_t)(end - p);
	return 0;
}

/* One line to fn; 0 unless fn says stop. */
static int selfmaps_one(const char *line, size_t len, int truncated,
			int (*fn)(const struct selfmaps_entry *, void *), void *ctx)
{
	struct selfmaps_entry e;
	if (selfmaps_parse_line(line, len, &e) != 0)
		return 0;
	e.truncated = truncated;
	return fn(&e, ctx);
}

int selfmaps_scan(int (*fn)(const struct selfmaps_entry *, void *), void *ctx)
{
	/* Small: this runs on whatever stack the allocating thread has. */
	char buf[SELFMAPS_LINE_BYTES];
	size_t have = 0;
	int fd = sys_open("/proc/self/maps", O_RDONLY | O_CLOEXEC, 0);
	int skipping = 0, rc = 0;

	if (fd < 0)
		return fd;
	while (!rc) {
		ssize_t r = sys_read(fd, buf + have, sizeof buf - have);
		size_t at = 0;
		char *nl;
		if (r < 0) {
			rc = (int)r;
			break;
		}
		have += (size_t)r;
		while (!rc && (nl = memchr(buf + at, '\n', have - at)) != NULL) {
			size_t len = (size_t)(nl - (buf + at));
			if (!skipping)
				rc = selfmaps_one(buf + at, len, 0, fn, ctx);
			skipping = 0;
			at += len + 1;
		}
		memmove(buf, buf + at, have - at);
		have -= at;
		if (!rc && have == sizeof buf) {
			/* A line longer than the buffer: use its head, skip the rest. */
			if (!skipping)
				rc = selfmaps_one(buf, have, 1, fn, ctx);
			skipping = 1;
			have = 0;
		}
		if (r == 0) {
			if (!rc && have && !skipping)
				rc = selfmaps_one(buf, have, 0, fn, ctx);
			break;
		}
	}
	sys_close(fd);
	return rc;
}

struct selfmaps_where {
	uintptr_t addr, start, end;
	int found;
};

static int selfmaps_find_one(const struct selfmaps_entry *e, void *ctx)
{
	struct selfmaps_where *w = ctx;
	if (w->addr < e->start || w->addr >= e->end)
		return 0;
	if (e->perms & SELFMAPS_R) {
		w->start = e->start;
		w->end = e->end;
		w->found = 1;
	}
	return 1;
}

int selfmaps_find(uintptr_t addr, uintptr_t *start, uintptr_t *end)
{
	struct selfmaps_where w = { addr, 0, 0, 0 };
	int rc = selfmaps_scan(selfmaps_find_one, &w);
	if (rc < 0)
		return rc;
	if (!w.found)
		return -ENOENT;
	*start = w.start;
	*end = w.end;
	return 0;
}
