/* decimal.c: decimal text of numbers (see decimal.h). */
#include "decimal.h"

#include <string.h>

size_t decimal_format_u64(char *buf, uint64_t v)
{
	char tmp[DECIMAL_U64_BYTES - 1];
	size_t n = 0;
	do
		tmp[n++] = (char)('0' + v % 10);
	while ((v /= 10) != 0);
	for (size_t i = 0; i < n; i++)
		buf[i] = tmp[n - 1 - i];
	buf[n] = '\0';
	return n;
}

size_t decimal_format_u64_width(char *buf, uint64_t v, size_t width)
{
	char digits[DECIMAL_U64_BYTES];
	size_t n = decimal_format_u64(digits, v);
	size_t pad = width > n ? width - n : 0;
	memset(buf, '0', pad);
	memcpy(buf + pad, digits, n + 1);
	return pad + n;
}
