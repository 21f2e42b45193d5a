/* test_jitter.c: the interval histogram's quantiles. */
#include <criterion/criterion.h>
#include "collect/jitter.h"

Test(jitter, empty_is_zero)
{
	static struct jitter j;
	jitter_init(&j);
	cr_expect_eq(jitter_quantile(&j, 0.99), 0);
}

Test(jitter, p99_of_steady_intervals_with_outliers)
{
	static struct jitter j;
	jitter_init(&j);
	for (int i = 0; i < 990; i++)
		jitter_add(&j, 10000000); /* 10 ms */
	for (int i = 0; i < 10; i++)
		jitter_add(&j, 50000000); /* 50 ms */
	uint64_t p99 = jitter_quantile(&j, 0.99);
	cr_expect(p99 >= 10000000 && p99 <= 10000000 + 10000000 / 64, "p99 %llu",
		  (unsigned long long)p99);
	cr_expect_eq(jitter_quantile(&j, 1.0), 50000000);
	jitter_add(&j, 50000000);
	jitter_add(&j, 50000000);
	/* now 12 of 1002 are 50 ms: rank 992 is one of them */
	uint64_t hi = jitter_quantile(&j, 0.99);
	cr_expect(hi >= 50000000 - 50000000 / 64 && hi <= 50000000, "p99 %llu",
		  (unsigned long long)hi);
}

Test(jitter, small_values_are_exact)
{
	static struct jitter j;
	jitter_init(&j);
	for (uint64_t v = 1; v <= 50; v++)
		jitter_add(&j, v);
	cr_expect_eq(jitter_quantile(&j, 0.5), 25);
	cr_expect_eq(jitter_quantile(&j, 1.0), 50);
}

Test(jitter, relative_error_bound)
{
	static struct jitter j;
	for (uint64_t v = 100; v < UINT64_C(1) << 40; v = v * 3 + 7) {
		jitter_init(&j);
		jitter_add(&j, v);
		jitter_add(&j, v * 2); /* max above, so the cap does not hide the error */
		uint64_t q = jitter_quantile(&j, 0.5);
		cr_expect(q >= v && (double)q <= (double)v * (1 + 1.0 / 64), "%llu -> %llu",
			  (unsigned long long)v, (unsigned long long)q);
	}
}
