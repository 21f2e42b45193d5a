/* jitter.c: log-linear histogram of intervals (see jitter.h). */
#include "collect/jitter.h"

#include <math.h>
#include <string.h>

void jitter_init(struct jitter *j)
{
	memset(j, 0, sizeof *j);
}

static unsigned bucket_of(uint64_t v)
{
	if (v < JITTER_SUB)
		return (unsigned)v;
	unsigned e = 63u - (unsigned)__builtin_clzll(v); /* >= 6 */
	unsigned sub = (unsigned)(v >> (e - 6)) - JITTER_SUB;
	unsigned b = JITTER_SUB + (e - 6) * JITTER_SUB + sub;
	return b < JITTER_BUCKETS ? b : JITTER_BUCKETS - 1;
}

/* Largest value that falls in bucket b. */
static uint64_t bucket_top(unsigned b)
{
	if (b < JITTER_SUB)
		return b;
	unsigned e = (b - JITTER_SUB) / JITTER_SUB + 6;
	uint64_t sub = (b - JITTER_SUB) % JITTER_SUB + JITTER_SUB;
	return ((sub + 1) << (e - 6)) - 1;
}

void jitter_add(struct jitter *j, uint64_t ns)
{
	j->bucket[bucket_of(ns)]++;
	j->count++;
	if (ns > j->max_ns)
		j->max_ns = ns;
}

uint64_t jitter_quantile(const struct jitter *j, double q)
{
	if (!j->count)
		return 0;
	uint64_t rank = (uint64_t)ceil(q * (double)j->count);
	if (rank < 1)
		rank = 1;
	uint64_t seen = 0;
	for (unsigned b = 0; b < JITTER_BUCKETS; b++) {
		seen += j->bucket[b];
		if (seen >= rank) {
			uint64_t top = bucket_top(b);
			return top < j->max_ns ? top : j->max_ns;
		}
	}
	return j->max_ns;
}
