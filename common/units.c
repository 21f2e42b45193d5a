/* units.c: byte figures for people (see units.h). */
#include "decimal.h"
#include "units.h"

/* Appends s at buf[*at], within cap - 1. */
static void units_put(char *buf, size_t cap, size_t *at, const char *s)
{
	while (*s && *at + 1 < cap)
		buf[(*at)++] = *s++;
}

static void units_put_u64(char *buf, size_t cap, size_t *at, uint64_t v)
{
	char num[DECIMAL_U64_BYTES];
	decimal_format_u64(num, v);
	units_put(buf, cap, at, num);
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
