/* slowpoll.c: a slow poller's view of the run, followed over
 * SLOWPOLL_PHASES schedules at once (slowpoll.h). */
#include "collect/slowpoll.h"

#include <math.h>
#include <string.h>

#include "invariant.h"

void slowpoll_init(struct slowpoll *p, double period_s)
{
	memset(p, 0, sizeof *p);
	if (!(period_s > 0) || !isfinite(period_s))
		return;
	p->period_s = period_s;
	for (unsigned k = 0; k < SLOWPOLL_PHASES; k++)
		p->next_s[k] = period_s * k / SLOWPOLL_PHASES;
}

void slowpoll_sample(struct slowpoll *p, double t, uint64_t bytes)
{
	if (!p->period_s)
		return;
	for (unsigned k = 0; k < SLOWPOLL_PHASES; k++) {
		if (t < p->next_s[k])
			continue;
		/* the polls this sample passed read what held until it: the
		 * previous sample's level (this one's for a poll on it, or
		 * before the first sample); the next poll is the first after
		 * it */
		uint64_t read = p->samples && p->next_s[k] < t ? p->last : bytes;
		if (read > p->max[k])
			p->max[k] = read;
		p->next_s[k] += p->period_s * (floor((t - p->next_s[k]) / p->period_s) + 1);
		MT_ASSERT(p->next_s[k] > t);
	}
	p->samples++;
	p->last = bytes;
	if (bytes > p->seen_max)
		p->seen_max = bytes;
}

void slowpoll_range(const struct slowpoll *p, uint64_t *low, uint64_t *high)
{
	uint64_t lo = p->samples ? UINT64_MAX : 0;
	for (unsigned k = 0; p->samples && k < SLOWPOLL_PHASES; k++)
		if (p->max[k] < lo)
			lo = p->max[k];
	*low = lo;
	*high = p->seen_max;
}
