/* test_pyfloat.c: doubles written as Python's repr() writes them. */
#include <criterion/criterion.h>
#include <math.h>
#include <string.h>

#include "output/pyfloat.h"

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
