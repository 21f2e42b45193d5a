/* number.c: strict command-line numbers (see number.h). */
#include "base/number.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *number_digits(const char *p)
{
	while (*p >= '0' && *p <= '9')
		p++;
	return p;
}

int number_real(const char *s, double lo, int lo_open, double hi, double *out)
{
	const char *p, *q;
	double v;
	if (!s)
		return -EINVAL;
	/* digits [. digits] | . digits, then [e [sign] digits], then the end */
	p = number_digits(s);
	if (*p == '.') {
		q = number_digits(p + 1);
		if (p == s && q == p + 1)
			return -EINVAL; /* "." alone */
		p = q;
	} else if (p == s) {
		return -EINVAL;
	}
	if (*p == 'e' || *p == 'E') {
		q = p + 1;
		if (*q == '+' || *q == '-')
			q++;
		p = number_digits(q);
		if (p == q)
			return -EINVAL;
	}
	if (*p != '\0')
		return -EINVAL;
	v = strtod(s, NULL); /* the grammar is strtod's: it reads it all */
	if (!isfinite(v) || v < lo || (lo_open && v == lo) || v > hi)
		return -ERANGE;
	*out = v;
	return 0;
}

int number_count(const char *s, uint64_t lo, uint64_t hi, uint64_t *out)
{
	unsigned long long v;
	char *end;
	if (!s || *s < '0' || *s > '9' || *number_digits(s) != '\0')
		return -EINVAL;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || v < lo || v > hi)
		return -ERANGE;
	*out = v;
	return 0;
}

int number_size(const char *s, uint64_t hi, uint64_t *out)
{
	static const char units[] = "KMGT";
	const char *end, *u;
	unsigned shift = 0;
	unsigned long long v;
	if (!s || *s < '0' || *s > '9')
		return -EINVAL;
	end = number_digits(s);
	if (*end) {
		u = strchr(units, *end);
		if (!u || (end[1] && strcmp(end + 1, "iB") != 0))
			return -EINVAL;
		shift = 10 * (unsigned)(u - units + 1);
	}
	errno = 0;
	v = strtoull(s, NULL, 10);
	if (errno || v > (hi >> shift))
		return -ERANGE;
	*out = (uint64_t)v << shift;
	return 0;
}

char *number_message(char *buf, size_t cap, const char *name, const char *s, int rc,
		     const char *range)
{
	if (rc == -ERANGE)
		snprintf(buf, cap, "%s: '%s' is out of range (%s)", name, s, range);
	else
		snprintf(buf, cap, "%s: '%s' is not a number (%s)", name, s ? s : "", range);
	return buf;
}
