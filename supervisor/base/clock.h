/* clock.h: memsup's one clock, CLOCK_MONOTONIC in nanoseconds: the clock
 * of every sample, deadline and record time (the shim stamps its records
 * with the same clock, record.h). */
#ifndef MEMSUP_CLOCK_H
#define MEMSUP_CLOCK_H

#include <stdint.h>
#include <time.h>

static inline uint64_t clock_mono_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

#endif /* MEMSUP_CLOCK_H */
