/* clock.h: memsup's one clock, CLOCK_MONOTONIC in nanoseconds: the clock
 * of every sample, deadline and record time (the shim stamps its records
 * with the same clock, record.h); and the thread's CPU clock, which
 * measures what memsup itself spends. */
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

/* CPU time this thread has used: what a costly read is charged with. */
static inline uint64_t clock_thread_cpu_ns(void)
{
	struct timespec ts;
	if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts) != 0)
		return 0;
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

#endif /* MEMSUP_CLOCK_H */
