/* jitter.h: a fixed-size log-linear histogram of sampling intervals, for
 * their quantiles (poll_interval_p99_s) without keeping every interval.
 * 64 sub-buckets per power of two: a quantile is exact below 64 ns and within
 * 1/64 (1.6%) above.  No allocation; O(1) add. */
#ifndef MEMSUP_JITTER_H
#define MEMSUP_JITTER_H

#include <stdint.h>

#define JITTER_SUB 64u
#define JITTER_BUCKETS (JITTER_SUB * 59u)

struct jitter {
	uint64_t count;
	uint64_t max_ns;
	uint32_t bucket[JITTER_BUCKETS];
};

void jitter_init(struct jitter *j);
void jitter_add(struct jitter *j, uint64_t ns);
/* The q-quantile (0 < q <= 1) in ns: the upper edge of the bucket holding
 * it, capped at the largest interval seen.  0 when empty. */
uint64_t jitter_quantile(const struct jitter *j, double q);

#endif /* MEMSUP_JITTER_H */
