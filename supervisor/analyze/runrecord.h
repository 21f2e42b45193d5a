/* runrecord.h: the run record -- what was asked, what happened, what the
 * merged view found.  Every stage shares it: run.c fills what was asked
 * and what happened, analyze/ adds what the merged view found
 * (findings_apply), evidence/resources.c writes it as resources.json, and
 * memsup report reads one back.  It keeps every key of measure_command's
 * record (the Python function memsup stays compatible with) with the same
 * meaning and units.
 *
 * Return convention: 0 or -errno.
 */
#ifndef MEMSUP_RUNRECORD_H
#define MEMSUP_RUNRECORD_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "contain/contain.h" /* struct contain_info, contain_figures */
#include "contain/terminal.h" /* enum terminal_mode */
#include "stdio/relay.h"    /* struct relay_report */

/* How the run ended: the record's "reason".  One table in runrecord.c gives
 * each outcome its name in resources.json and memsup's exit status; only
 * the record's JSON writer and runrecord_reason_parse() see the names, so
 * the rest of memsup compares values.  A new outcome is a value here and a
 * line in that table. */
enum sup_reason {
	SUP_REASON_NONE = 0,        /* null: the command ended on its own */
	SUP_REASON_RUNNING,         /* the run is not over (or memsup was killed) */
	SUP_REASON_WALL_BUDGET,     /* --wall-s reached: the tree was killed */
	SUP_REASON_RSS_BUDGET,      /* --rss-mb reached */
	SUP_REASON_PROCS_BUDGET,    /* --max-procs exceeded */
	SUP_REASON_INTERRUPTED,     /* memsup got SIGINT/TERM/HUP/QUIT */
	SUP_REASON_START_FAILED,    /* the command never ran (error says why) */
	SUP_REASON_EVIDENCE_FAILED, /* a write to the evidence directory failed */
	SUP_REASON_MEM_LIMIT,       /* --mem-max: the kernel's OOM killer acted */
	SUP_REASON_SUPERVISOR_KILLED, /* memsup itself was killed; its sentinel
				       ended the tree (written by the sentinel) */
	SUP_REASON_COUNT            /* (how many there are) */
};

/* memsup's exit status for its own errors (memsup(1)). */
#define SUP_EXIT_ERROR 125

/* The record's name of an outcome: "rss_budget_exceeded", ...; NULL (JSON
 * null) for SUP_REASON_NONE and for a value out of range. */
const char *runrecord_reason_name(enum sup_reason reason);

/* What the record's answer, peak_mb, is (analyze/answer.h says how each is
 * measured and what it leaves out). */
enum sup_peak_source {
	SUP_PEAK_NONE,              /* no sample yet: null */
	SUP_PEAK_CGROUP,            /* the run's memory cgroup peak, exact */
	SUP_PEAK_POLLED_PSS,        /* the largest polled sum of Pss */
	SUP_PEAK_POLLED_RSS,        /* the largest polled sum of RSS */
	SUP_PEAK_COUNT
};
/* "cgroup", "polled_pss", "polled_rss"; NULL for none. */
const char *runrecord_peak_source_name(enum sup_peak_source source);

/* The outcome a record's "reason" names; a NULL name (null, or no reason)
 * is SUP_REASON_NONE.  0, or -EINVAL for a name the table does not know
 * (an evidence directory of another memsup). */
int runrecord_reason_parse(const char *name, enum sup_reason *out);

/* memsup's exit status for a run that ended for `reason`: the table's own
 * (122 process, 123 RSS budget or memory limit, 124 wall budget, 125
 * evidence failed, 137 supervisor killed: what a shell reports for a
 * SIGKILLed memsup, which cannot say anything itself), or, for
 * the outcomes whose status the run decides, `run_status`: the command's
 * status or 128+N for its signal N (none), 128+N for memsup's own signal N
 * (interrupted), 125 or exec's 126/127 (start failed).  -1 for running
 * (null in the record). */
int runrecord_exit_status(enum sup_reason reason, int run_status);

#define RUNRECORD_MAX_NOTES 8u

struct finding; /* analyze/findings.h */
struct merged_run; /* analyze/merge.h */
struct merge_aside; /* analyze/merge.h */
struct phase_log; /* analyze/phases.h */
struct oom_log; /* collect/oomwatch.h */

struct sup_leftover {
	pid_t pid;
	pid_t session;   /* when it was killed; 0: unknown */
	char *argv;      /* NUL-separated, malloc'd; argv_len bytes */
	size_t argv_len;
	/* the run's cgroup hierarchies it had left, comma-separated
	 * (track.h's names: "v2", "memory", ...); "": none */
	char left_cgroups[96];
};

/* A re-parented orphan memsup reaped: its status, Python convention. */
struct sup_reaped {
	pid_t pid;
	int exit_code;             /* status, or -signal */
};

#define RUNRECORD_MAX_REAPED 256u

/* Which rate the samples came at, and when (sampling that follows
 * the memory; run.c's pace): dense every --poll-ms while the
 * tree's memory moves, sparse while it is flat and the kernel can tell
 * memsup that it moved.  The record's "sampling". */
#define RUNRECORD_MAX_PACE_CHANGES 64u
struct sup_sampling {
	double dense_s;            /* --poll-ms */
	double sparse_s;           /* the flat tree's first interval; 0: none (null) */
	double sparse_max_s;       /* the longest it lengthens to; 0: none */
	int adaptive;              /* the rate followed the memory */
	const char *why_not;       /* !adaptive: why (NULL before the run) */
	double sparse_time_s;      /* seconds spent sparse */
	uint64_t switches;         /* changes of rate, either way */
	uint64_t threshold_wakeups; /* the kernel said the memory crossed a mark */
	uint64_t churn_wakeups;    /* a new record file woke a sparse memsup */
	uint64_t samples_sparse;   /* samples taken on the sparse schedule */
	uint64_t lengthened;       /* sparse intervals doubled while flat */
	double slice_s;            /* the slice memsup asked the kernel for its
				      wake-ups (wakeslice.h); 0: none (null) */
	/* the first changes: at t (seconds since the launch), to sparse or
	 * to dense, and the interval that applied from then (a lengthened
	 * sparse interval is a change too) */
	struct sup_pace_change {
		double t;
		int sparse;
		double interval_s;
	} changes[RUNRECORD_MAX_PACE_CHANGES];
	size_t n_changes;          /* may pass the array: the rest unlisted */
};

struct slurm_job;

struct sup_record {
	/* what was asked */
	char *const *command;
	int command_argc;
	double poll_s;
	double rss_budget_mb;      /* 0: none (null) */
	double wall_budget_s;      /* 0: none (null) */
	unsigned max_procs_budget; /* --max-procs; 0: none (null) */
	double grace_s;            /* 0: SIGKILL at once (null) */
	const char *cwd;           /* where the command runs */
	char *const *env;          /* the -e overrides, "KEY=VALUE" */
	size_t n_env;
	char *const *meta;         /* --meta labels, "KEY=VALUE", keys unique */
	size_t n_meta;
	const struct phase_log *phases; /* markers and phases (phases.h); NULL: none */
	const char *discovery;     /* "cgroup", "children" or "scan"; NULL before known */
	double mem_max_mb;         /* --mem-max; 0: none (null) */
	const struct contain_info *containment; /* NULL before known */
	const char *started_at;    /* ISO 8601 UTC */
	struct relay_report output; /* --output and what the relay did ("output") */
	enum terminal_mode terminal; /* TERMINAL_JOB: output's mode is "terminal" */
	/* what happened */
	enum sup_reason reason;
	const char *error;         /* why it could not start, or which evidence
				      write failed; NULL */
	pid_t pid;                 /* the command's pid; 0 when never forked */
	int have_exit;             /* exit_code / signal known */
	int exit_code;             /* status, or -signal (Python convention) */
	int signal;                /* signal that ended the command, 0: none */
	int exit_status;           /* memsup's own; -1 while running */
	double wall_s;
	uint64_t peak_bytes;
	double peak_at_s;          /* < 0: no sample yet */
	uint64_t samples;
	unsigned max_processes;
	struct sup_leftover *leftovers;
	size_t n_leftovers;
	struct sup_reaped reaped[RUNRECORD_MAX_REAPED]; /* first ones only */
	size_t n_reaped;           /* how many there were (may exceed the array) */
	double rusage_children_maxrss_mb; /* < 0: not known yet */
	double memsup_cpu_s;              /* memsup's own user+system CPU; < 0: unknown */
	double poll_interval_p99_s;       /* of the intervals on the dense
					     schedule; < 0: fewer than 2 */
	double longest_gap_s;             /* longest stretch without a sample, up
					     to the end memsup saw; a sparse
					     interval counts from one poll
					     period before its sample was due
					     (it is no gap when on time);
					     < 0: none */
	double longest_gap_at_s;          /* when it began */
	struct sup_sampling sampling;     /* which rate applied when */
	const char *notes[RUNRECORD_MAX_NOTES];
	size_t n_notes;
	/* the kernel's figures of the run's cgroup: the peak, oom kills and
	 * refused forks after the tree was killed; memory.stat's split as the
	 * run ended, before the kill */
	struct contain_figures cgroup;
	/* every OOM kill of the tree: who, by which limit, the tree then
	 * ("oom", oomwatch.h); NULL: none watched (null) */
	const struct oom_log *oom;
	/* the cgroup's counters at the sample where its usage was largest:
	 * what the answer (its peak) was made of ("peak_breakdown") */
	struct contain_state kernel_at_peak;
	double kernel_peak_at_s;          /* < 0: no such sample */
	/* the merged view (shim + poller) */
	int traced;                       /* the shim was injected */
	const char *shim_searched;        /* not traced because no libmemtrace.so
					     was found: where memsup looked, in
					     words; NULL otherwise (--no-trace) */
	unsigned processes_traced;        /* images with a valid record */
	unsigned processes_sampled;       /* images the poller saw */
	double peak_heap_mb;              /* the tree's heap at its peak (merge.h
					     heap_peak_view); < 0: null */
	double peak_mapped_mb;
	double peak_pss_mb;               /* < 0: not measured */
	/* the answer: the most the tree held at once, by the best witness
	 * (analyze/answer.h) */
	enum sup_peak_source peak_source;
	double peak_mb;                   /* < 0: none */
	double peak_source_at_s;          /* the sample nearest it; < 0: unknown */
	const struct finding *findings;   /* blind_spots (findings.h) */
	size_t n_findings;
	/* record files memsup did not believe (merge.h, the merged run's
	 * aside): "records_not_believed", the first
	 * RUNRECORD_MAX_NOT_BELIEVED of them, and how many in all */
	const struct merge_aside *not_believed;
	size_t n_not_believed;
	/* what held --max-procs ("pids.max", "rlimit_nproc",
	 * "scan"; NULL: none asked), and the first sample that saw N reached
	 * (< 0: none) */
	const char *max_procs_by;
	double max_procs_reached_at_s;
	/* the Slurm job memsup ran in (slurmjob.h); NULL: none.  What
	 * Slurm's poll, every slurm->poll_s, could read of this run
	 * (slowpoll.h), in bytes: the least and the most over when its polls
	 * fell; have_slurm_poll 0 when it polls only as tasks end, keeps no
	 * figure, or no sample was taken */
	const struct slurm_job *slurm;
	int have_slurm_poll;
	uint64_t slurm_poll_low, slurm_poll_high;
	const char *slurm_poll_reads;     /* "summed_rss" or "cgroup_anon": the
					     figure followed (run.c) */
	uint64_t slurm_memsup_anon;       /* cgroup_anon: memsup's own anonymous
					     memory, in the low and high (the
					     task's cgroup holds memsup too) */
};

#define RUNRECORD_MAX_NOT_BELIEVED 100u

/* A new record: SUP_REASON_RUNNING, every figure unknown (null). */
void runrecord_init(struct sup_record *r);
/* Add one of the record's "notes" (the string must outlive the record);
 * past RUNRECORD_MAX_NOTES they are dropped. */
void runrecord_note(struct sup_record *r, const char *note);
/* Free what the record owns: the leftovers' argv. */
void runrecord_free(struct sup_record *r);

#endif /* MEMSUP_RUNRECORD_H */
