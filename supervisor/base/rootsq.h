/* rootsq.h: square roots without libm (memsup links libc and libdl alone).
 * Newton's iteration to a relative 1e-12: a standard error, or two of
 * them added in quadrature, needs no more. */
#ifndef MEMSUP_ROOTSQ_H
#define MEMSUP_ROOTSQ_H

static inline double rootsq(double x)
{
	double r = x > 1 ? x : 1;
	if (!(x > 0))
		return 0;
	for (int i = 0; i < 200; i++) {
		double next = 0.5 * (r + x / r);
		if (next >= r * (1 - 1e-12) && next <= r * (1 + 1e-12))
			return next;
		r = next;
	}
	return r;
}

/* sqrt(a^2 + b^2): two independent errors together */
static inline double rootsq_sum(double a, double b)
{
	return rootsq(a * a + b * b);
}

#endif /* MEMSUP_ROOTSQ_H */
