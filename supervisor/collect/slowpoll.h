/* slowpoll.h: what a poller that reads the tree's summed RSS once every
 * PERIOD seconds would have seen of this run, from memsup's own denser
 * samples: the largest reading it could have taken, as a range over when
 * its polls fell.
 *
 * Slurm's MaxRSS (sstat, sacct, seff) is such a figure: the largest sum of
 * the step's RSS that jobacct_gather read, once every
 * JobAcctGatherFrequency seconds.  Where those polls fall relative to the
 * run is unknown, so SLOWPOLL_PHASES polls schedules are followed at once,
 * their first polls spread evenly over the first period; each takes, at
 * each of its polls, the last of memsup's samples at or before it (the
 * first sample, for a poll before it).  The memory held between two
 * samples is what the earlier one read: while samples are sparse the
 * kernel wakes memsup as soon as the usage leaves the marks around it
 * (run.c, the pace), so a poll in a long gap reads that level, not the
 * spike that ended the gap; while they are dense the two differ by one
 * --poll-ms.  The least of their maxima is what the unluckiest schedule
 * read (0 when the run ended before any of its polls); the most any
 * schedule could read is memsup's own largest sample (a schedule with a
 * poll on it).
 *
 * A sample costs SLOWPOLL_PHASES compares; no allocation.  Not
 * thread-safe. */
#ifndef MEMSUP_SLOWPOLL_H
#define MEMSUP_SLOWPOLL_H

#include <stdint.h>

#define SLOWPOLL_PHASES 16u

struct slowpoll {
	double period_s;                   /* 0: off */
	double next_s[SLOWPOLL_PHASES];    /* each schedule's next poll */
	uint64_t max[SLOWPOLL_PHASES];     /* the largest it read */
	uint64_t seen_max;                 /* the largest sample */
	uint64_t last;                     /* the previous sample's bytes */
	uint64_t samples;
};

/* period_s > 0: follow polls every period_s seconds from time 0; else off
 * (slowpoll_sample does nothing). */
void slowpoll_init(struct slowpoll *p, double period_s);
/* One of memsup's samples, t seconds into the run (non-decreasing). */
void slowpoll_sample(struct slowpoll *p, double t, uint64_t bytes);
/* The range: *low the least any schedule read, *high the most.  0 when no
 * sample was taken. */
void slowpoll_range(const struct slowpoll *p, uint64_t *low, uint64_t *high);

#endif /* MEMSUP_SLOWPOLL_H */
