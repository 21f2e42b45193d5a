/* test_pyfloat.c: doubles written as Python's repr() writes them. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "evidence/pyfloat.h"

/* repr(float) from CPython for each value */
static const struct {
	double v;
	const char *py;
} floats[] = {
	{ 0.0, "0.0" },
	{ 0.01, "0.01" },
	{ 0.1, "0.1" },
	{ 1.0, "1.0" },
	{ 100.0, "100.0" },
	{ 1e-05, "1e-05" },
	{ 1.5e-05, "1.5e-05" },
	{ 0.0001, "0.0001" },
	{ 0.002801637, "0.002801637" },
	{ 0.30817894700000004, "0.30817894700000004" },
	{ 12345.678, "12345.678" },
	{ 1e+16, "1e+16" },
	{ 1.5e+16, "1.5e+16" },
	{ 123456789012345.6, "123456789012345.6" },
	{ 3.514368, "3.514368" },
	{ 2.0 / 3, "0.6666666666666666" },
	{ 1e-300, "1e-300" },
	{ 5e-324, "5e-324" },
	{ 1.7976931348623157e+308, "1.7976931348623157e+308" },
	{ -0.5, "-0.5" },
	{ -1e-07, "-1e-07" },
	{ 0.1 + 0.2, "0.30000000000000004" },
	{ 999999999999999.9, "999999999999999.9" },
	{ 9999999999999998.0, "9999999999999998.0" },
};

Test(pyfloat, like_python_repr)
{
	for (size_t i = 0; i < sizeof floats / sizeof floats[0]; i++) {
		char buf[40];
		size_t n = pyfloat_format(floats[i].v, buf, sizeof buf);
		cr_expect_str_eq(buf, floats[i].py, "%.17g", floats[i].v);
		cr_expect_eq(n, strlen(floats[i].py));
	}
}

Test(pyfloat, not_finite_is_null_and_small_buffers_get_nothing)
{
	char buf[PYFLOAT_BYTES];
	cr_expect_eq(pyfloat_format(NAN, buf, sizeof buf), 4);
	cr_expect_str_eq(buf, "null");
	pyfloat_format(-INFINITY, buf, sizeof buf);
	cr_expect_str_eq(buf, "null");
	cr_expect_eq(pyfloat_format(1.5, buf, PYFLOAT_BYTES - 1), 0);
	cr_expect_str_eq(buf, "");
}

/* What repr() is, checked apart from how pyfloat gets it: the text reads
 * back as v, it has as many significant digits as the shortest %e that
 * reads back as v, and they are that %e's digits; fixed notation for
 * 1e-4 <= |v| < 1e16. */
static void expect_repr(double v)
{
	char buf[PYFLOAT_BYTES], e[40], digits[24], want[24];
	pyfloat_format(v, buf, sizeof buf);
	cr_assert_eq(strtod(buf, NULL), v, "%s reads back as %.17g", buf, v);
	if (v == 0) {
		cr_expect_str_eq(buf, signbit(v) ? "-0.0" : "0.0");
		return;
	}
	int p = 0;
	for (;; p++) {
		snprintf(e, sizeof e, "%.*e", p, v);
		if (strtod(e, NULL) == v)
			break;
	}
	size_t nw = 0, nd = 0;
	for (const char *q = e; *q && *q != 'e'; q++)
		if (*q >= '0' && *q <= '9')
			want[nw++] = *q;
	want[nw] = '\0';
	const char *q = buf;
	while (*q == '0' || *q == '.' || *q == '-')
		q++;
	for (; *q && *q != 'e'; q++)
		if (*q >= '0' && *q <= '9')
			digits[nd++] = *q;
	while (nd > 1 && digits[nd - 1] == '0' && strchr(buf, 'e') == NULL && nd > nw)
		nd--; /* "100.0": the zeros that place the point */
	digits[nd] = '\0';
	cr_expect_str_eq(digits, want, "%.17g written %s", v, buf);
	size_t n = strlen(buf);
	cr_expect(strchr(buf, 'e') || buf[n - 1] != '0' || buf[n - 2] == '.',
		  "%s: no zeros after the last nonzero decimal", buf);
	double a = fabs(v);
	cr_expect_eq(strchr(buf, 'e') == NULL, a == 0 || (a >= 1e-4 && a < 1e16), "%s", buf);
}

/* Times (whole nanoseconds over 1e9, the common case a shortcut takes)
 * and arbitrary doubles near them: the same text as the search. */
Test(pyfloat, times_and_arbitrary_doubles_alike)
{
	static const double edges[] = { 0.0001, 0.000100001, 0.00009999, 999999.999999999,
					1e6, 1e6 - 1e-9, 0.5, 1.000472309, 86400.000000001,
					0.30000000000000004, 0.1 + 0.2, 100.0, 1.0e-9, 0.0 };
	for (size_t i = 0; i < sizeof edges / sizeof edges[0]; i++)
		expect_repr(edges[i]);
	uint64_t x = 88172645463325252ull; /* xorshift64: the same values each run */
	for (int i = 0; i < 50000; i++) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		double t = (double)(x % 2000000000000000ull) / 1e9; /* 0 to 2e6 s */
		expect_repr(t);
		double y = t * (1 + (double)(x >> 40) / 1e12);
		expect_repr(y);
		expect_repr((double)(x % 100000) / 100);
	}
}
