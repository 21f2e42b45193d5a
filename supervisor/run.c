/* run.c: the supervision loop (see run.h).
 *
 * One ppoll()-like wait (pollset.h) for signals, the main process's pidfd,
 * new record files, the marks file, the cgroup's events and the command's
 * output, with the next sample's deadline as its timeout; a sample when it
 * is due (run/sample.c's steps), and once a second the fold, the flush and
 * the record.  What happens before the loop is run/start.c's, after it
 * run/end.c's; how often it samples, run/pace.c's.
 *
 * Ordering matters in a few places, each explained where it happens: signals
 * are blocked before fork so none is lost; the main process is not reaped
 * before pidfd_open() has run.  Which processes are the tree, and killing
 * every one of them, is the containment's (contain.h). */
#include "run.h"
#include "run/state.h"

#include "analyze/phases.h"
#include "collect/live.h"
#include "collect/oomwatch.h"
#include "collect/peaksites.h"
#include "collect/pview.h"
#include "collect/slurmjob.h"
#include "evidence/files.h"
#include "base/clock.h"

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define NS_PER_S 1000000000ull

/* Reap every child that has ended, until 0 (none ready) or ECHILD.  Several
 * SIGCHLDs can arrive as one, so one signal never means one child.  The
 * main process's status is kept; others (re-parented orphans) only need
 * reaping. */
void run_reap(struct run *r)
{
	for (;;) {
		int st;
		pid_t p = waitpid(-1, &st, WNOHANG | (r->job && !r->term.shared ? WUNTRACED : 0));
		if (p > 0 && WIFSTOPPED(st)) {
			/* a job's stop (WUNTRACED): the main process's is for
			 * the loop to pass on; another's is not a shell's concern */
			if (p == r->main_pid && !r->main_done)
				r->stop_sig = WSTOPSIG(st);
			continue;
		}
		if (p > 0) {
			if (p == r->sentinel.pid) {
				/* it should live until sentinel_stop(): say so */
				r->sentinel.pid = 0;
				runrecord_note(r->rec, "memsup's sentinel ended early: a memsup "
					       "killed now would leave the tree to itself");
			} else if (p == r->main_pid && !r->main_done) {
				r->main_done = 1;
				r->main_status = st;
			} else {
				/* a re-parented orphan: its status is evidence too */
				struct sup_record *rec = r->rec;
				if (rec->n_reaped < RUNRECORD_MAX_REAPED) {
					struct sup_reaped *x = &rec->reaped[rec->n_reaped];
					x->pid = p;
					x->exit_code = WIFEXITED(st) ? WEXITSTATUS(st) : -WTERMSIG(st);
				}
				rec->n_reaped++;
			}
			continue;
		}
		if (p < 0 && errno == EINTR)
			continue;
		return;
	}
}

/* memsup continued (`fg`, `bg`): the terminal to the command again,
 * and a transcript's window sized as memsup's is now. */
static void job_resume(struct run *r)
{
	terminal_resume(&r->term);
	transcript_resize(r->cfg->transcript, r->term.fd);
	transcript_redraw(r->cfg->transcript);
}

void run_drain_signals(struct run *r)
{
	struct signalfd_siginfo si[8];
	ssize_t n;
	while ((n = read(r->sfd, si, sizeof si)) > 0) {
		for (size_t i = 0; i < (size_t)n / sizeof si[0]; i++) {
			int sig = (int)si[i].ssi_signo;
			/* a job's: memsup continued (`fg`, `bg`); while the
			 * command has the terminal, ^C and ^\ are its to take, as
			 * time(1) leaves them to its child: memsup ignores them */
			if (r->job && sig == SIGCONT)
				job_resume(r);
			else if (sig == SIGWINCH)
				transcript_resize(r->cfg->transcript, r->term.fd);
			else if (r->job && (sig == SIGINT || sig == SIGQUIT) &&
				 terminal_given(&r->term))
				continue;
			else if (sig != SIGCHLD) {
				r->signals++;
				if (!r->interrupt)
					r->interrupt = sig;
			}
		}
	}
	run_reap(r);
}

/* A write to stdout.log failed (the relay's): the evidence failure that
 * ends the run. */
static void relay_failed(struct run *r, int rc)
{
	evidence_note_failure(r->ev, "write", EVIDENCE_STDOUT_LOG, rc);
}

static void output_poll_set(struct run *r, struct pollfd pfd[OUTPUT_POLL_SLOTS])
{
	relay_poll_set(r->cfg->relay, pfd);
	transcript_poll_set(r->cfg->transcript, pfd + RELAY_POLL_SLOTS, terminal_given(&r->term));
}

/* 0, or -errno of a write to stdout.log that failed. */
static int output_pump(struct run *r, const struct pollfd pfd[OUTPUT_POLL_SLOTS])
{
	int rc = relay_pump(r->cfg->relay, pfd);
	int rt = transcript_pump(r->cfg->transcript, pfd + RELAY_POLL_SLOTS);
	return rc < 0 ? rc : rt;
}

void run_report_output(struct run *r)
{
	if (r->cfg->transcript)
		transcript_report(r->cfg->transcript, &r->rec->output);
	else
		relay_report(r->cfg->relay, &r->rec->output);
}

/* Sleep up to ms, waking early for a signal; then handle signals.  The
 * command's output keeps moving meanwhile: a process given --grace-s to
 * end must not block on a full pipe. */
void run_wait_a_little(struct run *r, int ms)
{
	struct pollfd pfd[1 + OUTPUT_POLL_SLOTS] = { { r->sfd, POLLIN, 0 } };
	struct timespec ts = { 0, (long)ms * 1000000L };
	output_poll_set(r, pfd + 1);
	if (ppoll(pfd, 1 + OUTPUT_POLL_SLOTS, &ts, NULL) > 0) {
		int rc = output_pump(r, pfd + 1);
		if (rc < 0)
			evidence_note_failure(r->ev, "write", EVIDENCE_STDOUT_LOG, rc);
	}
	run_drain_signals(r);
}

/* Whether the main process still runs, reaping first: one that ended
 * before memsup looked (memsup stopped, a late wake-up) ended on its own,
 * and a budget that passed meanwhile is sampling_gap's to tell, not a
 * kill's. */
int run_still_running(struct run *r)
{
	run_reap(r);
	return !r->main_done;
}

/* The command's main process stopped (^Z, a stop signal): memsup stops
 * with it, and once continued gives it the terminal back and continues it
 * (terminal.h).  memsup samples nothing while it is stopped; the stopped
 * time is not a gap in sampling (the command was stopped too): the next
 * sample counts from the last one as though the stop had not been. */
static void job_stopped(struct run *r)
{
	int sig = r->stop_sig;
	r->stop_sig = 0;
	/* a transcript's ^Z, made SIGSTOP by memsup: a ^Z to pass up */
	if (transcript_suspended(r->cfg->transcript))
		sig = SIGTSTP;
	uint64_t from = clock_mono_ns();
	if (terminal_stop(&r->term, sig))
		job_resume(r);
	uint64_t away = clock_mono_ns() - from;
	r->stopped_ns += away;
	if (r->last_sample_ns)
		r->last_sample_ns += away;
}

/* The loop's clock: when the next sample is due, when the next second's
 * work is, and the record's last rewrite and what it held. */
struct schedule {
	uint64_t wall_end;         /* --wall-s's end; 0: none */
	uint64_t next;             /* the next sample's deadline */
	uint64_t next_record;      /* the next second's work */
	uint64_t record_at;        /* the last rewrite of the record */
	struct pace_marks written; /* and what it held */
};

static void record_marks_take(const struct run *r, struct pace_marks *m)
{
	pace_marks_take(&r->pace, r->rec, phases_count(r->cfg->phases), r->gap_ns, m);
}

/* The kernel or a new record woke a sparse memsup (pace_wake). */
static void wake_sparse(struct run *r, struct schedule *sc, uint64_t *counter)
{
	pace_wake(&r->pace, clock_mono_ns(), r->last_sample_ns, &sc->next, counter);
}

/* A sample, due now, and the next one's deadline: the steady schedule
 * (pace_next), or closer while an OOM kill is being chased. */
static enum sup_reason loop_sample(struct run *r, struct schedule *sc, uint64_t now)
{
	enum sup_reason reason = SUP_REASON_NONE;
	run_take_sample(r, now, sc->next, &reason);
	if (reason != SUP_REASON_NONE)
		return reason;
	sc->next = pace_next(&r->pace, sc->next, now, sc->next_record);
	if (r->oom_chase_ns && sc->next > now + OOM_CHASE_STEP_NS)
		sc->next = now + OOM_CHASE_STEP_NS;
	return SUP_REASON_NONE;
}

/* Once a second: the record's running figures, the ended images folded,
 * the samples' lines flushed, and the record rewritten when due
 * (pace_record_due).  Evidence that cannot be written ends the run: a
 * supervisor that goes on measuring into a full disk or a removed
 * directory would report nothing. */
static enum sup_reason loop_second(struct run *r, struct schedule *sc, uint64_t now)
{
	r->rec->poll_interval_p99_s = r->jit.count
		? (double)jitter_quantile(&r->jit, 0.99) / 1e9 : -1;
	r->rec->wall_s = run_since_start_s(r, now);
	run_report_output(r);
	/* the records of ended images into the fold file, their markers read
	 * first: the directory and each sample's work stay the size of what
	 * still runs */
	if (run_fold_ended(r) < 0)
		return SUP_REASON_EVIDENCE_FAILED;
	if (evidence_flush_samples(r->ev) < 0)
		return SUP_REASON_EVIDENCE_FAILED;
	struct pace_marks cur;
	record_marks_take(r, &cur);
	if (pace_record_due(&r->pace, now, sc->record_at, &cur, &sc->written)) {
		if (evidence_write_record(r->ev, r->rec, 0) < 0)
			return SUP_REASON_EVIDENCE_FAILED;
		sc->record_at = now;
		sc->written = cur;
	}
	sc->next_record += NS_PER_S;
	if (sc->next_record <= now)
		sc->next_record = now + NS_PER_S;
	return SUP_REASON_NONE;
}

/* What the wait heard on the steady slots (np > 0: something did). */
static void loop_heard(struct run *r, struct schedule *sc, const struct pollfd *pfd, int np)
{
	if (np > 0 && pfd[SLOT_SIGNALS].revents)
		run_drain_signals(r);
	/* The pidfd turns readable the moment the main process exits
	 * (before, or without, SIGCHLD being read). */
	if (np > 0 && r->pidfd >= 0 && pfd[SLOT_MAIN].revents)
		run_reap(r);
	if (r->stop_sig && !r->main_done)
		job_stopped(r);
	if (np > 0 && pfd[SLOT_RECORDS].fd >= 0 && pfd[SLOT_RECORDS].revents) {
		size_t had = live_count(r->live);
		live_update(r->live, 0);
		/* a new image: churn is movement (short processes seen).
		 * Another file is not: a stacks file is an image sampling a
		 * call site, made before the memory it maps is touched -- a
		 * sample then reads nothing yet and holds the next one
		 * --poll-ms away from the rise, which the kernel's marks tell
		 * as it comes */
		if (live_count(r->live) > had)
			wake_sparse(r, sc, &r->rec->sampling.churn_wakeups);
	}
	/* a line in the marks file, stamped now */
	if (np > 0 && pfd[SLOT_MARKS].fd >= 0 && pfd[SLOT_MARKS].revents)
		phases_read_file(r->cfg->phases, run_since_start_s(r, clock_mono_ns()), 0,
				 r->cfg->proc_root, r->live);
	/* the kernel has news (an OOM kill): sample now */
	if (np > 0 && pfd[SLOT_KERNEL].fd >= 0 && pfd[SLOT_KERNEL].revents) {
		sc->next = clock_mono_ns();
		if (!r->kernel_woke_ns)
			r->kernel_woke_ns = sc->next;
	}
	/* the usage crossed a mark: dense again */
	if (np > 0 && pfd[SLOT_WATCH].fd >= 0 && pfd[SLOT_WATCH].revents)
		wake_sparse(r, sc, &r->rec->sampling.threshold_wakeups);
	/* a cgroup below the run's: from now on every listing looks below,
	 * and a sample at once (the one before may have missed a process
	 * moved there since this poll began) */
	if (np > 0 && pfd[SLOT_BELOW].fd >= 0 && pfd[SLOT_BELOW].revents) {
		/* let epoll go of it while the fd is open: the sentinel's copy
		 * keeps the file alive after the close, and epoll with it --
		 * readable for good, which spun the loop at every wake-up */
		pollset_forget(&r->ps, SLOT_BELOW);
		contain_below_told(r->contain);
		sc->next = clock_mono_ns();
	}
}

/* Wait for the next deadline (the sample's, the wall budget's, the
 * relay's) or for something on the slots, and handle what came.  The
 * reason when the command's output could not be written, else none. */
static enum sup_reason loop_wait(struct run *r, struct schedule *sc)
{
	r->next_due = sc->next;
	uint64_t wake = sc->next;
	if (sc->wall_end && sc->wall_end < wake)
		wake = sc->wall_end;
	uint64_t relay_wake = relay_wake_ns(r->cfg->relay);
	if (relay_wake && relay_wake < wake)
		wake = relay_wake;
	uint64_t now = clock_mono_ns();
	uint64_t wait = wake > now ? wake - now : 0;
	struct timespec ts = { (time_t)(wait / NS_PER_S), (long)(wait % NS_PER_S) };
	/* the records' inotify fd: new files are mapped at once, so that a
	 * sample never waits on a burst of them */
	int lfd = r->live ? live_fd(r->live) : -1;
	int mfd = phases_fd(r->cfg->phases);
	/* the cgroup's event file (an OOM kill), -1 without one; after the
	 * steady slots, the command's output, moved as it comes */
	short kev;
	int kfd = contain_event_fd(r->contain, &kev);
	/* sparse, the usage's marks (contain_watch); once it woke memsup it
	 * is not looked at again before the sample */
	int wfd = r->pace.sparse && !r->pace.woke ? contain_watch_fd(r->contain) : -1;
	/* a cgroup made below the run's (contain_below_fd): until one is, a
	 * sample lists the run's own cgroup alone */
	int bfd = contain_below_fd(r->contain);
	struct pollfd pfd[RUN_STEADY_SLOTS + OUTPUT_POLL_SLOTS] = {
		[SLOT_SIGNALS] = { r->sfd, POLLIN, 0 }, [SLOT_MAIN] = { r->pidfd, POLLIN, 0 },
		[SLOT_RECORDS] = { lfd, POLLIN, 0 }, [SLOT_MARKS] = { mfd, POLLIN, 0 },
		[SLOT_KERNEL] = { kfd, kev, 0 }, [SLOT_WATCH] = { wfd, POLLIN, 0 },
		[SLOT_BELOW] = { bfd, POLLIN, 0 } };
	output_poll_set(r, pfd + RUN_STEADY_SLOTS);
	int np = pollset_wait(&r->ps, pfd, OUTPUT_POLL_SLOTS, &ts);
	loop_heard(r, sc, pfd, np);
	int rc = np > 0 ? output_pump(r, pfd + RUN_STEADY_SLOTS) : 0;
	if (rc < 0) {
		relay_failed(r, rc);
		return SUP_REASON_EVIDENCE_FAILED;
	}
	return SUP_REASON_NONE;
}

/* The supervision loop proper; returns the reason (SUP_REASON_NONE: the
 * main process ended on its own). */
static enum sup_reason supervise(struct run *r)
{
	const struct sup_options *o = r->cfg->opt;
	struct schedule sc = {
		.wall_end = o->wall_s > 0 ? r->start_ns + (uint64_t)(o->wall_s * 1e9) : 0,
		.next = r->start_ns, .next_record = r->start_ns + NS_PER_S,
		.record_at = r->start_ns,
	};
	record_marks_take(r, &sc.written);
	enum sup_reason reason = SUP_REASON_NONE;
	pollset_open(&r->ps, RUN_STEADY_SLOTS);
	while (!r->main_done && !r->interrupt && reason == SUP_REASON_NONE) {
		uint64_t now = clock_mono_ns();
		if (sc.wall_end && now >= sc.wall_end) {
			if (run_still_running(r))
				reason = SUP_REASON_WALL_BUDGET;
			break;
		}
		if (now >= sc.next && (reason = loop_sample(r, &sc, now)) != SUP_REASON_NONE)
			break;
		if (now >= sc.next_record && (reason = loop_second(r, &sc, now)) != SUP_REASON_NONE)
			break;
		reason = loop_wait(r, &sc);
	}
	pollset_close(&r->ps);
	return reason;
}

void run_views_free(struct run_views *v)
{
	live_close(v->live);
	pview_close(v->pview);
	peaksites_close(v->sites);
	oomwatch_close(v->oom);
	v->sites = NULL;
	v->oom = NULL;
	v->live = NULL;
	v->pview = NULL;
}

int run_supervise(const struct run_config *cfg, struct evidence *ev,
		  struct sup_record *rec, struct run_views *views)
{
	struct run r;
	sigset_t orig;

	memset(&r, 0, sizeof r);
	memset(views, 0, sizeof *views);
	r.cfg = cfg;
	r.ev = ev;
	r.rec = rec;
	r.sfd = r.pidfd = -1;
	r.ps.epfd = -1;
	r.term.fd = -1;
	r.sentinel.fd = -1;
	jitter_init(&r.jit);
	/* jobacct_gather/none polls nothing: no figure to follow */
	slowpoll_init(&r.slurm_poll, rec->slurm && rec->slurm->job_id[0] && strcmp(rec->slurm->gather, "none") != 0
				     ? rec->slurm->poll_s : 0);
	run_stamp_start(rec);
	r.start_ns = clock_mono_ns();

	int status = run_open(&r, &orig);
	if (status == 0)
		status = run_launch(&r, &orig);
	if (status == 0) {
		const char *why = pace_why_not(cfg->opt);
		pace_open(&r.pace, &rec->sampling, cfg->opt, why ? why : contain_unwatchable(r.contain),
			  r.start_ns);
		enum sup_reason reason = evidence_write_record(ev, rec, 0) == 0
			? supervise(&r) : SUP_REASON_EVIDENCE_FAILED;
		status = run_end(&r, reason, views);
		run_record_exit(&r);
	}
	return run_close(&r, status, views);
}
