/* decimal.c: decimal text of numbers (see decimal.h). */
#include "decimal.h"

char *decimal_u64_back(char *end, uint64_t v, size_t width)
{
	char *p = end;
	do
		*--p = (char)('0' + v % 10);
	while ((v /= 10) != 0);
	while ((size_t)(end - p) < width)
		*--p = '0';
	return p;
}

size_t decimal_format_u64(char *buf, uint64_t v)
{
	char tmp[DECIMAL_U64_BYTES - 1];
	const char *p = decimal_u64_back(tmp + sizeof tmp, v, 0);
	size_t n = 0;
	while (p < tmp + sizeof tmp)
		buf[n++] = *p++;
	buf[n] = '\0';
	return n;
}
