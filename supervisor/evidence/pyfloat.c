/* pyfloat.c: doubles as Python's repr() writes them (see pyfloat.h). */
#include "evidence/pyfloat.h"
#include "decimal.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The last double formatted and its text: a sample writes the same time
 * to rss.jsonl and timeline.jsonl, and the search below is a few
 * snprintf+strtod pairs.  Compared bit for bit (0.0 and -0.0 differ). */
static double memo_v;
static char memo[PYFLOAT_BYTES];
static size_t memo_n;

static size_t format(double v, char *buf, size_t cap);
static size_t format_nanos(double v, char *buf);

size_t pyfloat_format(double v, char *buf, size_t cap)
{
	if (cap < PYFLOAT_BYTES) {
		if (cap)
			buf[0] = '\0';
		return 0;
	}
	if (memo_n && memcmp(&v, &memo_v, sizeof v) == 0) {
		memcpy(buf, memo, memo_n + 1);
		return memo_n;
	}
	size_t n = format_nanos(v, buf);
	if (n == 0)
		n = format(v, buf, cap);
	memo_v = v;
	memcpy(memo, buf, n + 1);
	memo_n = n;
	return n;
}

/* The common case without the search: nearly every double memsup writes
 * is a time, a whole count of nanoseconds over 1e9 (since_start_s), or a
 * size or share with few decimals.  When v is k / 1e9 for a whole k (the
 * division correctly rounded, so that strtod of k's 9-decimal text gives v
 * back), and 1e-4 <= v < 1e6 (repr's fixed notation; and below 1e6 two
 * doubles are more than 2e-10 apart nowhere, so no text with 9 decimals or
 * fewer but that one reads back as v: it is the shortest, and repr's), v
 * is k's digits with the point 9 from the end and the zeros after the last
 * nonzero decimal dropped ("1.5", "100.0").  0 when v is not such a
 * double: the search below decides.  tests/unit/test_pyfloat.c checks the
 * two agree. */
static size_t format_nanos(double v, char *buf)
{
	if (!(v >= 1e-4 && v < 1e6) && !(v == 0 && !signbit(v)))
		return 0;
	uint64_t k = (uint64_t)(v * 1e9 + 0.5);
	if ((double)k / 1e9 != v)
		return 0;
	uint64_t frac = k % 1000000000u;
	size_t o = decimal_format_u64(buf, k / 1000000000u);
	buf[o++] = '.';
	/* the zeros after the last nonzero decimal dropped, one decimal kept
	 * ("100.0": frac 0 is one place of 0) */
	size_t places = 9;
	for (; places > 1 && frac % 10 == 0; frac /= 10)
		places--;
	o += places;
	decimal_u64_back(buf + o, frac, places);
	buf[o] = '\0';
	return o;
}

static size_t format(double v, char *buf, size_t cap)
{
	char e[40];
	if (!isfinite(v))
		return (size_t)snprintf(buf, cap, "null");
	/* Shortest %e precision that round-trips, as repr() picks.  Round-trip
	 * is monotonic in the precision (more correctly rounded digits are
	 * never farther away), so a binary search finds it; 16 always works. */
	int lo = 0, hi = 16;
	while (lo < hi) {
		int mid = (lo + hi) / 2;
		snprintf(e, sizeof e, "%.*e", mid, v);
		if (strtod(e, NULL) == v)
			hi = mid;
		else
			lo = mid + 1;
	}
	snprintf(e, sizeof e, "%.*e", lo, v);
	/* e is "[-]d[.ddd]e[+-]XX": split digits and exponent. */
	const char *p = e;
	size_t o = 0;
	if (*p == '-')
		buf[o++] = *p++;
	char digits[24] = { 0 };
	size_t nd = 0;
	for (; *p && *p != 'e'; p++)
		if (*p != '.')
			digits[nd++] = *p;
	int exp10 = atoi(p + 1);
	/* repr: scientific when exp < -4 or exp >= 16, fixed otherwise. */
	if (exp10 < -4 || exp10 >= 16) {
		buf[o++] = digits[0];
		if (nd > 1) {
			buf[o++] = '.';
			memcpy(buf + o, digits + 1, nd - 1);
			o += nd - 1;
		}
		o += (size_t)snprintf(buf + o, cap - o, "e%c%02d", exp10 < 0 ? '-' : '+',
				      exp10 < 0 ? -exp10 : exp10);
		return o;
	}
	if (exp10 < 0) {
		buf[o++] = '0';
		buf[o++] = '.';
		for (int i = 0; i < -exp10 - 1; i++)
			buf[o++] = '0';
		memcpy(buf + o, digits, nd);
		o += nd;
	} else {
		size_t ip = (size_t)exp10 + 1; /* digits before the point */
		for (size_t i = 0; i < ip; i++)
			buf[o++] = i < nd ? digits[i] : '0';
		buf[o++] = '.';
		if (nd > ip) {
			memcpy(buf + o, digits + ip, nd - ip);
			o += nd - ip;
		} else {
			buf[o++] = '0';
		}
	}
	buf[o] = '\0';
	return o;
}
