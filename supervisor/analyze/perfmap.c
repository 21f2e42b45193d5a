/* perfmap.c: reading /tmp/perf-PID.map (see perfmap.h). */
#include "analyze/perfmap.h"
#include "base/grow.h"

#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

int perfmap_path(int pid, char *buf, size_t len)
{
	int n = snprintf(buf, len, "/tmp/perf-%d.map", pid);
	return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}

/* A hexadecimal number (an optional 0x) at *p, and the blanks after it. */
static int hex_field(const char **p, uint64_t *out)
{
	const char *s = *p;
	uint64_t v = 0;
	int digits = 0;
	if (s[0] == '0' && (s[1] == 'x' || s[1] == 'X'))
		s += 2;
	for (; isxdigit((unsigned char)*s); s++, digits++) {
		if (digits == 16)
			return -1;
		v = v << 4 | (uint64_t)(isdigit((unsigned char)*s) ? *s - '0'
								 : (tolower((unsigned char)*s) - 'a' + 10));
	}
	if (!digits || (*s != ' ' && *s != '\t'))
		return -1;
	while (*s == ' ' || *s == '\t')
		s++;
	*p = s;
	*out = v;
	return 0;
}

static int add_line(struct perfmap *pm, const char *line, size_t len, uint32_t order)
{
	const char *p = line;
	uint64_t start, size;
	if (hex_field(&p, &start) < 0 || hex_field(&p, &size) < 0 || !size ||
	    start + size < start || !*p) {
		pm->bad_lines++;
		return 0;
	}
	size_t nl = len - (size_t)(p - line);
	if (pm->names_len + nl + 1 > UINT32_MAX) {
		pm->bad_lines++;
		return 0;
	}
	if (grow_array((void **)&pm->e, &pm->cap, pm->n + 1, sizeof *pm->e) < 0 ||
	    grow_array((void **)&pm->names, &pm->names_cap, pm->names_len + nl + 1, 1) < 0)
		return -ENOMEM;
	memcpy(pm->names + pm->names_len, p, nl);
	pm->names[pm->names_len + nl] = '\0';
	pm->e[pm->n++] = (struct perfmap_entry){ start, start + size, (uint32_t)pm->names_len, order };
	pm->names_len += nl + 1;
	return 0;
}

/* By start, then the later line first: perfmap_find takes the first
 * entry that holds the address among those starting at or below it. */
static int by_start(const void *a, const void *b)
{
	const struct perfmap_entry *x = a, *y = b;
	if (x->start != y->start)
		return x->start < y->start ? -1 : 1;
	return x->order > y->order ? -1 : x->order < y->order;
}

int perfmap_read(FILE *f, struct perfmap *pm)
{
	char *line = NULL;
	size_t cap = 0, total = 0;
	ssize_t n;
	uint32_t order = 0;
	int rc = 0;
	memset(pm, 0, sizeof *pm);
	while ((n = getline(&line, &cap, f)) > 0) {
		total += (size_t)n;
		if (total > PERFMAP_MAX_BYTES) {
			pm->truncated = 1;
			break;
		}
		while (n > 0 && (line[n - 1] == '\n' || line[n - 1] == '\r'))
			line[--n] = '\0';
		if ((rc = add_line(pm, line, (size_t)n, order++)) < 0)
			break;
	}
	if (rc == 0 && ferror(f))
		rc = -EIO;
	free(line);
	if (rc < 0) {
		perfmap_free(pm);
		return rc;
	}
	if (pm->n)
		qsort(pm->e, pm->n, sizeof *pm->e, by_start);
	return 0;
}

const char *perfmap_find(const struct perfmap *pm, uint64_t addr)
{
	/* the last entry starting at or below addr */
	size_t lo = 0, hi = pm->n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (pm->e[mid].start <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	/* entries that start lower may be longer and still hold it: look
	 * back over those, the latest line of the ones that do winning */
	const struct perfmap_entry *best = NULL;
	for (size_t i = lo; i-- > 0;) {
		const struct perfmap_entry *e = &pm->e[i];
		if (addr < e->end && (!best || e->order > best->order))
			best = e;
		/* far enough back: a piece of code is rarely over 1 MB */
		if (addr - e->start > (UINT64_C(1) << 24) || lo - i > 64)
			break;
	}
	return best ? pm->names + best->name : NULL;
}

void perfmap_free(struct perfmap *pm)
{
	free(pm->e);
	free(pm->names);
	memset(pm, 0, sizeof *pm);
}
