/* pace.h: how often memsup samples the tree, and when the record is
 * rewritten (the record's "sampling").
 *
 * Sampling follows the memory, on by default (--sparse-ms 100; --sparse-ms 0
 * keeps every sample dense).  While the tree's memory moves memsup samples
 * every --poll-ms (dense); once nothing has moved for --sparse-ms it samples
 * every --sparse-ms (sparse), with the kernel watching two marks around the
 * usage (contain_watch): a crossing, or a new record file (a process
 * started), wakes it at once, and the samples are dense again.  "Moved": the
 * cgroup's usage or the summed RSS more than pace_delta() (1/64 of it,
 * between 1 and 8 MiB: well under transient_peak's 10 MB) from the mark of
 * the last movement, or another number of processes.  Only where the kernel
 * can tell the usage crossing a mark (cgroup v1), and not under a polled
 * budget: --rss-mb and --max-procs are checked at samples, and their promise
 * is one --poll-ms.
 *
 * While it stays flat the sparse interval doubles after each sample that
 * found nothing moved, up to PACE_SPARSE_MAX_NS (never below --sparse-ms):
 * every crossing of a mark, a new record file, the main process's exit
 * (pidfd), a cgroup made below the run's and the wall budget wake memsup
 * whatever the interval, so what a longer one can miss is only what none of
 * those tell: in a run without tracing, a process that starts and ends
 * within one interval without moving the usage past a mark.  An idle tree
 * then costs one wake-up a second, at the second's lines of rss.jsonl and
 * timeline.jsonl (the sparse schedule meets the record's second).  Each
 * lengthening is a change in the record's "sampling", with the interval from
 * then.
 *
 * While sparse, a second at which nothing in the record moved but the clock,
 * the sample counts and, by less than a --poll-ms, the longest gap
 * (struct pace_marks) leaves the record on disk as it is, up to
 * PACE_RECORD_SPARSE_NS: formatting it costs several sparse samples (about
 * 480,000 instructions, most of them its numbers).  A new peak, note, phase,
 * reaped process, byte of output or change of pace is written at the next
 * second as before, so a killed memsup's record (the sentinel marks the one
 * on disk) is whole and true but for its clock and counts, which are at most
 * that old.
 *
 * Pure: the caller passes the time (CLOCK_MONOTONIC nanoseconds) and what
 * the sample read; nothing here reads a clock, a file or the kernel.  Where
 * a decision needs the kernel (watch two marks, or stop watching them) the
 * verdict says so and the caller does it.  Every decision is written into
 * the record's sampling fields as it is made, so the tests pin those too.
 */
#ifndef MEMSUP_RUN_PACE_H
#define MEMSUP_RUN_PACE_H

#include <stddef.h>
#include <stdint.h>

#include "cli.h"
#include "analyze/runrecord.h"

#define PACE_NS_PER_S 1000000000ull
#define PACE_DELTA_MIN (1ull << 20)
#define PACE_DELTA_MAX (8ull << 20)
#define PACE_SPARSE_MAX_NS PACE_NS_PER_S
#define PACE_RECORD_SPARSE_NS (5 * PACE_NS_PER_S)

struct pace {
	int adaptive;              /* the rate may follow the memory */
	int sparse;                /* on the sparse schedule now */
	int woke;                  /* the kernel or a new record woke a
				      sparse memsup: the next sample is
				      movement */
	uint64_t start_ns;         /* the launch: the record's times count
				      from it */
	uint64_t period_ns;        /* --poll-ms: the dense interval, >= 1 */
	uint64_t sparse_ns;        /* --sparse-ms: the first sparse interval */
	uint64_t sparse_max_ns;    /* the longest it lengthens to */
	uint64_t step_ns;          /* the sparse interval now */
	int have_mark;
	uint64_t mark_usage, mark_rss; /* at the last movement */
	unsigned mark_n;
	uint64_t quiet_since;      /* the last movement */
	uint64_t sparse_since;     /* the switch to sparse */
};

/* The smallest change of a figure of v bytes that counts as movement:
 * v/64, between PACE_DELTA_MIN and PACE_DELTA_MAX. */
uint64_t pace_delta(uint64_t v);

/* Why the options alone keep every sample dense (a static text), or NULL
 * when they let the rate follow the memory; the containment may still say
 * no (contain_unwatchable), which the caller asks only then. */
const char *pace_why_not(const struct sup_options *o);

/* The pace of a run launched at start_ns: dense, adaptive unless `why_not`
 * (pace_why_not's, or the containment's) says why not.  Fills the record's
 * dense_s, sparse_s, sparse_max_s, adaptive and why_not. */
void pace_open(struct pace *p, struct sup_sampling *s, const struct sup_options *o,
	       const char *why_not, uint64_t start_ns);

/* What a sample read, for pace_after_sample(). */
struct pace_reading {
	uint64_t now;              /* when the sample began */
	uint64_t rss;              /* the tree's summed RSS */
	unsigned n;                /* its processes */
	int have_usage;            /* the cgroup's usage was read */
	uint64_t usage;
	/* the per-process view's peak still lacks smaps figures, or holds
	 * carried ones (pview.c, complete_peak), and had this RSS */
	int peak_incomplete;
	uint64_t peak_rss;
};

enum pace_verdict {
	PACE_KEEP,      /* the rate stays (a sparse interval may have
			   lengthened) */
	PACE_TO_DENSE,  /* sparse no more: the caller stops the kernel
			   watching the marks (contain_unwatch) */
	PACE_WATCH,     /* flat for a sparse interval: the caller asks the
			   kernel to watch the marks *lo and *hi, then says
			   how that went with pace_watching() or
			   pace_refused() */
};

/* The rate after a sample.  Movement (see above) makes the marks the
 * sample's figures and the samples dense; a flat sparse sample doubles the
 * interval; a dense tree flat for --sparse-ms asks to go sparse, unless
 * the view's incomplete peak is about this sample's size (within 10%:
 * dense gives it every chance to be completed). */
enum pace_verdict pace_after_sample(struct pace *p, struct sup_sampling *s,
				    const struct pace_reading *rd, uint64_t *lo, uint64_t *hi);

/* The kernel watches the marks PACE_WATCH asked for: sparse from `now`,
 * the marks the sample's usage and rss. */
void pace_watching(struct pace *p, struct sup_sampling *s, uint64_t now, uint64_t usage,
		   uint64_t rss);

/* The kernel refused the marks: what it refused once it refuses again, so
 * dense for good, and the record says `why` (kept, not copied). */
void pace_refused(struct pace *p, struct sup_sampling *s, const char *why);

/* The kernel or a new record woke memsup at `now`.  Sparse and not woken
 * yet: the next sample is movement, *counter counts the wake-up, and *next
 * comes forward to now, but never sooner than --poll-ms after the last
 * sample.  Returns whether it counted. */
int pace_wake(struct pace *p, uint64_t now, uint64_t last_sample_ns, uint64_t *next,
	      uint64_t *counter);

/* When the sample after the one due at `due`, taken at `now`, is due: a
 * steady schedule (deadline k = start + k * --poll-ms, or sparse's longer
 * step), deadlines already past skipped, never run late in a burst; sparse,
 * the record's second at `next_record` ends a longer interval rather than
 * be passed (its rewrite waits for a wake-up; one more a second would cost
 * what the sparse schedule saves). */
uint64_t pace_next(const struct pace *p, uint64_t due, uint64_t now, uint64_t next_record);

/* The run ended at `end`: the last sparse stretch into sparse_time_s, and
 * the pace dense. */
void pace_end(struct pace *p, struct sup_sampling *s, uint64_t end);

/* What of the record can move while the tree is flat, beyond the clock and
 * the sample counts: a rewrite is due when any of it did. */
struct pace_marks {
	uint64_t peak, kernel_peak, log_bytes, out_bytes, wakeups;
	size_t notes, reaped, leftovers, changes, phases;
	unsigned procs;
	uint64_t gap_periods;      /* the longest gap, in whole --poll-ms: a
				      sparse sample's wake-up late by less
				      than one is no news */
};

/* The marks of `rec` now, with the run's number of phases and its longest
 * gap without a sample (in ns). */
void pace_marks_take(const struct pace *p, const struct sup_record *rec, size_t phases,
		     uint64_t gap_ns, struct pace_marks *m);

/* Whether the once-a-second rewrite of the record is due at `now`: always
 * while dense; sparse, when `cur` differs from `last` (the marks of the
 * rewrite at record_at), or PACE_RECORD_SPARSE_NS after it. */
int pace_record_due(const struct pace *p, uint64_t now, uint64_t record_at,
		    const struct pace_marks *cur, const struct pace_marks *last);

#endif /* MEMSUP_RUN_PACE_H */
