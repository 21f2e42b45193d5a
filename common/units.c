/* units.c: byte figures for people (see units.h). */
#include "units.h"

/* Appends the decimal digits of v at buf[*at], within cap - 1. */
static void units_put_u64(char *buf, size_t cap, size_t *at, uint64_t v)
{
	char tmp[20];
	size_t n = 0;
	do
		tmp[n++] = (char)('0' + v % 10);
	while ((v /= 10) != 0);
	while (n && *at + 1 < cap)
		buf[(*at)++] = tmp[--n];
}

static void units_put(char *buf, size_t cap, size_t *at, const char *s)
{
	while (*s && *at + 1 < cap)
		buf[(*at)++] = *s++;
}

size_t units_format_bytes(char *buf, size_t cap, uint64_t bytes)
{
	static const char *const names[] = { " kB", " MB", " GB", " TB" };
	uint64_t div = 1000;
	unsigned u = 0;
	size_t at = 0;
	if (cap == 0)
		return 0;
	if (bytes < 10000) {
		units_put_u64(buf, cap, &at, bytes);
		units_put(buf, cap, &at, " B");
	} else {
		while (u < 3 && bytes / div >= 1000) {
			div *= 1000;
			u++;
		}
		units_put_u64(buf, cap, &at, bytes / div);
		units_put(buf, cap, &at, ".");
		units_put_u64(buf, cap, &at, (bytes % div) * 10 / div);
		units_put(buf, cap, &at, names[u]);
	}
	buf[at] = '\0';
	return at;
}
