/* run/state.h: one supervised run's state, private to the files that run
 * it (run.h is the interface):
 *
 *   run.c         the loop: signals, reaping, the schedule, the wake-ups,
 *                 the once-a-second work
 *   run/start.c   everything before the command runs, and its launch
 *   run/sample.c  one sample, as an ordered table of steps
 *   run/pace.c    how often to sample (pure)
 *   run/end.c     the end: the kill, leftovers, escapees, the reaping of
 *                 the rest, the drains, the record's last figures
 *
 * One run per process: memsup is one thread and runs one command. */
#ifndef MEMSUP_RUN_STATE_H
#define MEMSUP_RUN_STATE_H

#include <signal.h>
#include <stdint.h>
#include <sys/types.h>

#include "collect/jitter.h"
#include "collect/slowpoll.h"
#include "contain/contain.h"
#include "contain/oomadj.h"
#include "contain/procs.h"
#include "contain/terminal.h"
#include "stdio/relay.h"
#include "stdio/transcript.h"
#include "base/pollset.h"
#include "run.h"
#include "run/pace.h"
#include "sentinel.h"

/* memsup's own children from before the run that it keeps apart */
#define RUN_PRIOR_MAX 64

/* After the kernel's OOM event, samples every OOM_CHASE_STEP_NS until the
 * kill shows in the cgroup's counter, for at most OOM_CHASE_NS: the OOM
 * killer chooses and kills some milliseconds after the event (its report
 * to the kernel's log is printed first), and the sample that describes the
 * kill is the first after it (bench/RESULTS.md, run oomlatency). */
#define OOM_CHASE_STEP_NS 1000000ull
#define OOM_CHASE_NS (200 * 1000000ull)

/* The command's output's poll slots: the relay's, then a transcript's
 * (which reads what is typed only while memsup's terminal is raw). */
#define OUTPUT_POLL_SLOTS (RELAY_POLL_SLOTS + TRANSCRIPT_POLL_SLOTS)

/* The supervision loop's steady slots, each an fd that stays for long
 * stretches (pollset.h keeps them registered); the output's slots, which
 * the relay turns on and off as it naps, follow them. */
enum run_slot {
	SLOT_SIGNALS,   /* the signalfd */
	SLOT_MAIN,      /* the main process's pidfd */
	SLOT_RECORDS,   /* the records' inotify fd */
	SLOT_MARKS,     /* the marks file's */
	SLOT_KERNEL,    /* the cgroup's event file (an OOM kill) */
	SLOT_WATCH,     /* sparse: the usage's marks (contain_watch) */
	SLOT_BELOW,     /* a cgroup made below the run's */
	RUN_STEADY_SLOTS
};

struct run {
	const struct run_config *cfg;
	struct evidence *ev;
	struct sup_record *rec;
	struct contain *contain;
	int sfd;
	int pidfd;
	pid_t main_pid;
	int main_done;
	int main_status;
	int interrupt;          /* first INT/TERM/HUP/QUIT received, or 0 */
	unsigned signals;       /* INT/TERM/HUP/QUIT received so far */
	unsigned limit_undone_n; /* samples that found --mem-max changed */
	unsigned oom_disabled_n; /* ... and v1's OOM killer turned off */
	int limit_lost;         /* a changed limit could not be set back */
	unsigned grace_from;    /* `signals` as the kill's grace began */
	uint64_t start_ns;
	struct jitter jit;
	uint64_t last_sample_ns;   /* 0: none yet */
	uint64_t gap_ns, gap_from_ns; /* the longest stretch without a sample */
	struct live *live;      /* NULL: not tracing */
	struct pview *pv;
	struct sentinel sentinel;
	struct contain_state kernel; /* the cgroup's counters at the last sample */
	struct peaksites *sites; /* NULL: not tracing */
	struct oomwatch *oom;   /* the OOM autopsy; NULL: out of memory */
	struct oomadj oomadj;   /* memsup's own oom_score_adj */
	uint64_t kernel_woke_ns; /* the cgroup's event woke memsup (0: not
				    since the last sample) */
	uint64_t oom_chase_ns;  /* an OOM event not yet followed by its kill
				   in the counter: when it came (0: none) */
	double last_elapsed;    /* the last sample's time into the run */
	/* memsup's children from before the run (a shell's `cmd & exec
	 * memsup ...` leaves them to it): neither members nor waited for */
	pid_t prior[RUN_PRIOR_MAX];
	size_t nprior;
	/* at a terminal (terminal.h): a job there, or a transcript; unless
	 * the command shares memsup's group, the main process's stops are
	 * seen, and memsup stops with it */
	int job;
	struct terminal term;
	int stop_sig;           /* the main process stopped so, not yet handled */
	uint64_t stopped_ns;    /* how long memsup was stopped with it, in all */
	pid_t command_sid;      /* the command's session as it started */
	uint64_t cleanup_ns;    /* spent removing the dead run's cgroups */
	/* every process of the tree seen so far, by pidfd (track.h): the
	 * end kills those that left the run's cgroups; NULL: none */
	struct track *track;
	/* what holds --max-procs (procs.h) */
	struct procs_plan procs;
	uint64_t next_due;         /* when the next sample is due */
	struct pace pace;          /* how often it samples (pace.h) */
	/* the loop's steady slots (0..RUN_STEADY_SLOTS) behind one epoll fd */
	struct pollset ps;
	/* Slurm's poll of the summed RSS, followed from these samples */
	struct slowpoll slurm_poll;
	int slurm_poll_anon;       /* it follows the cgroup's anon, not RSS */
};

static inline double run_since_start_s(const struct run *r, uint64_t now)
{
	return (double)(now - r->start_ns) / 1e9;
}

/* ---- run.c: signals, children, the command's output ---- */

/* Reap every child that has ended, until none is ready or ECHILD; the main
 * process's status is kept, a re-parented orphan's goes into the record. */
void run_reap(struct run *r);
/* Read the signalfd (INT/TERM/HUP/QUIT counted, a job's SIGCONT handled),
 * then reap. */
void run_drain_signals(struct run *r);
/* Whether the main process still runs, reaping first. */
int run_still_running(struct run *r);
/* Sleep up to ms, the command's output moving meanwhile, waking early for
 * a signal; then handle signals. */
void run_wait_a_little(struct run *r, int ms);
/* The record's "output": the relay's, or the transcript's. */
void run_report_output(struct run *r);

/* ---- run/start.c ---- */

/* The record's started_at: now, in UTC. */
void run_stamp_start(struct sup_record *rec);
/* Everything the run needs before the command starts (the signalfd, the
 * subreaper, the containment, the live records, the per-process view);
 * `orig` gets the mask the command starts with.  0, or memsup's exit
 * status when the run cannot start. */
int run_open(struct run *r, sigset_t *orig);
/* Start the command inside the containment with the mask `orig`; the
 * run's clock starts here.  0, or memsup's exit status. */
int run_launch(struct run *r, const sigset_t *orig);
/* memsup's own children, up to cap into out and their number into *n: 0;
 * 1 when there were more than cap (*n then counting those listed);
 * -errno without a children file. */
int run_own_children(pid_t *out, size_t cap, size_t *n);
/* Whether pid was memsup's child before the run. */
int run_is_prior(const struct run *r, pid_t pid);

/* ---- run/sample.c ---- */

/* One sample, begun at `now`, which the schedule wanted at `due`: every
 * step of the table in order.  *reason gets the budget it breaks or the
 * evidence failure; it is left as it is otherwise. */
void run_take_sample(struct run *r, uint64_t now, uint64_t due, enum sup_reason *reason);
/* A stretch without a sample, from `from` (0: the start) to `to`: the
 * longest goes into the record. */
void run_note_gap(struct run *r, uint64_t from, uint64_t to);

/* ---- run/end.c ---- */

/* The ended images' records folded (live_fold_ended), their markers read
 * first.  0, or -errno, noted as the evidence failure. */
int run_fold_ended(struct run *r);
/* The run ended for `reason`: the whole tree killed and reaped, the main
 * process's status and memsup's in the record.  Returns the latter. */
int run_end(struct run *r, enum sup_reason reason, struct run_views *views);
/* The command's exit in the record on disk at once, the run still
 * "running" there until the end's work is done. */
void run_record_exit(struct run *r);
/* Whatever way the run ended (`status` so far): the rest of the output,
 * the last records and markers, the views handed over, the times in the
 * record, everything closed.  Returns memsup's exit status. */
int run_close(struct run *r, int status, struct run_views *views);

#endif /* MEMSUP_RUN_STATE_H */
