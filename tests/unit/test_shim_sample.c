/* test_shim_sample.c: the sampling decision's arithmetic (sample.h): e^-x
 * and ln x without libm, exponential draws, the estimator and its
 * variance, and the countdown's estimate over a known heap. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>

#include "sampling/sample.h"

Test(sample, exp_neg_matches_libm)
{
	for (double x = 0.0; x < 60.0; x += 0.0137) {
		double want = exp(-x), got = sample_exp_neg(x);
		cr_assert(fabs(got - want) <= 1e-12 * want + 1e-300, "x=%g got %.17g want %.17g", x,
			  got, want);
	}
	cr_expect_eq(sample_exp_neg(0.0), 1.0);
	cr_expect_eq(sample_exp_neg(-1.0), 1.0);
	cr_expect_eq(sample_exp_neg(1000.0), 0.0);
}

Test(sample, log_matches_libm)
{
	for (double x = 1.0; x > 1e-300; x *= 0.731) {
		double want = log(x), got = sample_log(x);
		cr_assert(fabs(got - want) <= 1e-12 * fabs(want) + 1e-15, "x=%g got %.17g want %.17g",
			  x, got, want);
	}
	cr_expect(sample_log(0.0) < -700.0);
}

Test(sample, draws_are_exponential)
{
	/* Mean and variance of an exponential of mean R are R and R^2; and
	 * P(X > R) = e^-1. */
	const uint64_t rate = 512 * 1024;
	const int n = 400000;
	uint64_t state = 12345;
	double sum = 0, sum2 = 0;
	int above = 0;
	for (int i = 0; i < n; i++) {
		double v = (double)sample_draw(&state, rate);
		sum += v;
		sum2 += v * v;
		above += v > (double)rate;
	}
	double mean = sum / n, var = sum2 / n - mean * mean;
	cr_expect(fabs(mean / rate - 1.0) < 0.01, "mean %g", mean);
	cr_expect(fabs(var / ((double)rate * rate) - 1.0) < 0.03, "var %g", var);
	cr_expect(fabs((double)above / n - exp(-1.0)) < 0.003, "P(X>R) %g", (double)above / n);
}

Test(sample, weight_is_the_unbiased_estimator)
{
	const uint64_t R = 512 * 1024;
	cr_expect_eq(sample_weight(100, 1), 100, "every block: its own size");
	cr_expect_eq(sample_weight(64u << 20, R), 64u << 20, "huge blocks are always sampled");
	cr_expect_eq(sample_weight(0, R), R);
	for (uint64_t s = 16; s < (32u << 20); s = s * 3 + 7) {
		double want = (double)s / (1.0 - exp(-(double)s / R));
		cr_expect(fabs((double)sample_weight(s, R) - want) <= 1.0, "size %llu",
			  (unsigned long long)s);
	}
	/* small blocks count for about R + S/2 */
	cr_expect(llabs((long long)sample_weight(1000, R) - (long long)(R + 500)) <= 2);
	cr_expect_eq(sample_var_kib2(100, 100), 0);
	cr_expect_eq(sample_var_kib2(2048, 1024), 2);
}

/* The countdown as sample.c runs it, on blocks of known sizes: the
 * estimate of the total is unbiased (checked at 3 standard errors with
 * the variance estimate the shim keeps). */
Test(sample, countdown_estimate_is_unbiased)
{
	const uint64_t R = 512 * 1024;
	uint64_t state = 777, truth = 0, est = 0, var = 0, blocks = 0;
	int64_t left = (int64_t)sample_draw(&state, R);
	uint64_t size_state = 99;
	while (truth < (UINT64_C(2) << 30)) {
		uint64_t s = 64 + sample_next(&size_state) % (2u << 20);
		truth += s;
		blocks++;
		left -= (int64_t)s;
		if (left <= 0) {
			uint64_t w = sample_weight(s, R);
			est += w;
			var += sample_var_kib2(w, s);
			left = (int64_t)sample_draw(&state, R);
		}
	}
	double se = sqrt((double)var) * 1024.0;
	cr_expect(fabs((double)est - (double)truth) < 3.0 * se, "est %llu truth %llu se %g",
		  (unsigned long long)est, (unsigned long long)truth, se);
	cr_expect(se < 0.02 * (double)truth, "se %g of %llu", se, (unsigned long long)truth);
}

