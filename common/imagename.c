/* imagename.c: the per-image file name rule (see imagename.h). */
#include <string.h>

#include "decimal.h"
#include "imagename.h"

/* Digits of a number without a leading zero, at most max: how many, or 0. */
static size_t imagename_digits(const char *s, uint64_t max, uint64_t *v)
{
	size_t n = 0;
	*v = 0;
	while (s[n] >= '0' && s[n] <= '9') {
		if (n == 1 && s[0] == '0')
			return 0;
		*v = *v * 10 + (uint64_t)(s[n] - '0');
		if (*v > max)
			return 0;
		n++;
	}
	return n;
}

int imagename_parse(const char *name, const char *suffix, int32_t *pid, uint32_t *gen)
{
	uint64_t p, g;
	size_t n = imagename_digits(name, INT32_MAX, &p);
	if (n == 0 || p == 0 || name[n] != '.')
		return -1;
	name += n + 1;
	n = imagename_digits(name, UINT32_MAX, &g);
	if (n == 0 || strcmp(name + n, suffix) != 0)
		return -1;
	*pid = (int32_t)p;
	*gen = (uint32_t)g;
	return 0;
}

/* v in decimal at buf[at..]; the new length, or cap when it does not fit. */
static size_t imagename_put_u64(char *buf, size_t cap, size_t at, uint64_t v)
{
	char num[DECIMAL_U64_BYTES];
	size_t n = decimal_format_u64(num, v);
	if (at + n >= cap)
		return cap;
	memcpy(buf + at, num, n);
	return at + n;
}

int imagename_format(char *buf, size_t cap, int32_t pid, uint32_t gen, const char *suffix)
{
	size_t at, slen = strlen(suffix);
	if (cap == 0)
		return -1;
	buf[0] = '\0';
	if (pid <= 0)
		return -1;
	at = imagename_put_u64(buf, cap, 0, (uint64_t)pid);
	if (at + 1 >= cap)
		goto too_long;
	buf[at++] = '.';
	at = imagename_put_u64(buf, cap, at, gen);
	if (at + slen >= cap)
		goto too_long;
	memcpy(buf + at, suffix, slen + 1);
	return (int)(at + slen);
too_long:
	buf[0] = '\0';
	return -1;
}

int imagename_path(char *buf, size_t cap, const char *dir, int32_t pid, uint32_t gen,
		   const char *suffix)
{
	size_t dlen = strlen(dir);
	int n;
	if (dlen + 1 >= cap) {
		if (cap)
			buf[0] = '\0';
		return -1;
	}
	memcpy(buf, dir, dlen);
	buf[dlen] = '/';
	n = imagename_format(buf + dlen + 1, cap - dlen - 1, pid, gen, suffix);
	if (n < 0) {
		buf[0] = '\0';
		return -1;
	}
	return (int)dlen + 1 + n;
}
