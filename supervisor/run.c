/* run.c: the supervision loop (see run.h).
 *
 * Ordering matters in a few places, each explained where it happens: signals
 * are blocked before fork so none is lost; the main process is not reaped
 * before pidfd_open() has run.  Which processes are the tree, and killing
 * every one of them, is the containment's (contain.h). */
#include "run.h"
#include "analyze/answer.h"
#include "analyze/phases.h"
#include "collect/fold.h"
#include "collect/jitter.h"
#include "collect/slowpoll.h"
#include "collect/slurmjob.h"
#include "collect/live.h"
#include "collect/oomwatch.h"
#include "collect/peaksites.h"
#include "collect/procfs.h"
#include "collect/pview.h"
#include "collect/staging.h"
#include "contain/contain.h"
#include "contain/oomadj.h"
#include "contain/procs.h"
#include "contain/spawn.h"
#include "contain/track.h"
#include "contain/terminal.h"
#include "output/relay.h"
#include "output/transcript.h"
#include "output/timeline.h"
#include "pollset.h"
#include "run/pace.h"
#include "sentinel.h"
#include "wakeslice.h"
#include "units.h"
#include "clock.h"
#include "invariant.h"

#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/signalfd.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define NS_PER_S 1000000000ull
/* How long end_run waits for the killed tree's last exits to reach memsup.
 * Bounded because a process in uninterruptible sleep may not die at all
 * (kill_tree has already said so). */
#define REAP_REST_MS 3000

/* memsup's own children from before the run that it keeps apart */
#define RUN_PRIOR_MAX 64

/* After the kernel's OOM event, samples every OOM_CHASE_STEP_NS until the
 * kill shows in the cgroup's counter, for at most OOM_CHASE_NS: the OOM
 * killer chooses and kills some milliseconds after the event (its report
 * to the kernel's log is printed first), and the sample that describes the
 * kill is the first after it (issue 42; bench/RESULTS.md, run oomlatency). */
#define OOM_CHASE_STEP_NS 1000000ull
#define OOM_CHASE_NS (200 * 1000000ull)

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

/* Texts the record points at: one run per process, so file scope is fine. */
static char run_error[PATH_MAX + 256];
static char run_started_at[40];
static char run_stuck[1024];
static char run_note_undead[160];
static char run_note_finish[PATH_MAX + 128];
static char run_note_stops[256];
static char run_pace_why[160];
static struct contain_info run_containment;

static double since_start_s(const struct run *r, uint64_t now)
{
	return (double)(now - r->start_ns) / 1e9;
}

static void format_started_at(void)
{
	struct timespec ts;
	struct tm tm;
	clock_gettime(CLOCK_REALTIME, &ts);
	gmtime_r(&ts.tv_sec, &tm);
	size_t n = strftime(run_started_at, sizeof run_started_at,
			    "%Y-%m-%dT%H:%M:%S", &tm);
	snprintf(run_started_at + n, sizeof run_started_at - n, ".%03dZ",
		 (int)(ts.tv_nsec / 1000000L) % 1000);
}

/* Reap every child that has ended, until 0 (none ready) or ECHILD.  Several
 * SIGCHLDs can arrive as one, so one signal never means one child.  The
 * main process's status is kept; others (re-parented orphans) only need
 * reaping. */
static void reap(struct run *r)
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

static void drain_signals(struct run *r)
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
	reap(r);
}

/* A write to stdout.log failed (the relay's): the evidence failure that
 * ends the run. */
static void relay_failed(struct run *r, int rc, enum sup_reason *reason)
{
	evidence_note_failure(r->ev, "write", "stdout.log", rc);
	*reason = SUP_REASON_EVIDENCE_FAILED;
}

/* relay_finish()'s question when the signalfd turns readable: stop
 * waiting for a slow reader only for INT/TERM/HUP/QUIT, not for SIGCHLD. */
static int finish_stop(void *ctx)
{
	struct run *r = ctx;
	drain_signals(r);
	return r->interrupt != 0;
}

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

/* The record's "output": the relay's, or the transcript's. */
static void report_output(struct run *r)
{
	if (r->cfg->transcript)
		transcript_report(r->cfg->transcript, &r->rec->output);
	else
		relay_report(r->cfg->relay, &r->rec->output);
}

/* Sleep up to ms, waking early for a signal; then handle signals.  The
 * command's output keeps moving meanwhile: a process given --grace-s to
 * end must not block on a full pipe. */
static void wait_a_little(struct run *r, int ms)
{
	struct pollfd pfd[1 + OUTPUT_POLL_SLOTS] = { { r->sfd, POLLIN, 0 } };
	struct timespec ts = { 0, (long)ms * 1000000L };
	output_poll_set(r, pfd + 1);
	if (ppoll(pfd, 1 + OUTPUT_POLL_SLOTS, &ts, NULL) > 0) {
		int rc = output_pump(r, pfd + 1);
		if (rc < 0)
			evidence_note_failure(r->ev, "write", "stdout.log", rc);
	}
	drain_signals(r);
}

/* contain_kill()'s wait between rounds: signals handled, children reaped. */
static void kill_wait(void *ctx, int ms)
{
	wait_a_little(ctx, ms);
}

/* contain_kill()'s question during --grace-s: a signal since the grace
 * began ends it (the one that began an interrupt's grace does not). */
static int kill_hurry(void *ctx)
{
	const struct run *r = ctx;
	return r->signals != r->grace_from;
}

/* A process of the tree still there after the main one ended: kept in the
 * record with its argv, then killed. */
static void add_leftover(void *ctx, pid_t pid)
{
	struct run *r = ctx;
	struct sup_record *rec = r->rec;
	pid_t l_session;
	if (pid == r->main_pid)
		return;
	for (size_t i = 0; i < rec->n_leftovers; i++)
		if (rec->leftovers[i].pid == pid)
			return;
	struct procfs_stat st;
	/* A zombie waiting for its (dying) parent is not a survivor. */
	if (procfs_read_stat(r->cfg->proc_root, pid, &st) < 0 || st.state == 'Z')
		return;
	l_session = st.session;
	struct sup_leftover *nl = realloc(rec->leftovers,
					  (rec->n_leftovers + 1) * sizeof *nl);
	if (!nl)
		return;
	rec->leftovers = nl;
	struct sup_leftover *l = &nl[rec->n_leftovers];
	l->pid = pid;
	l->session = l_session;
	l->left_cgroups[0] = '\0';
	/* one that left some of the run's cgroups was still found in another
	 * (hybrid: v2 holds it after it left v1's): the record says so */
	if (r->track)
		track_left(r->track, pid, l->left_cgroups, sizeof l->left_cgroups);
	/* the same argv as processes.json's: an empty last argument kept */
	char buf[PROCFS_ARGV_BYTES];
	size_t len = 0;
	if (procfs_read_argv(r->cfg->proc_root, pid, buf, &len) < 0)
		len = 0;
	l->argv = len ? malloc(len) : NULL;
	l->argv_len = l->argv ? len : 0;
	if (l->argv)
		memcpy(l->argv, buf, len);
	rec->n_leftovers++;
}

/* Every process of the tree: on a budget breach or an interrupt with
 * --grace-s's SIGTERM first; when the main process has ended, at once,
 * listing each leftover in the record. */
static void kill_tree(struct run *r, int leftovers)
{
	char stuck[sizeof run_stuck - 160];
	struct contain_waiter w = { kill_wait, leftovers ? add_leftover : NULL, r, stuck,
				    sizeof stuck, kill_hurry };
	drain_signals(r);
	r->grace_from = r->signals;
	if (contain_kill(r->contain, leftovers ? 0 : r->cfg->opt->grace_s, &w) == -EBUSY) {
		snprintf(run_stuck, sizeof run_stuck, "still alive after SIGKILL, in "
			 "uninterruptible sleep (D state) for %d s, where no signal reaches: "
			 "%s; they die when they wake", KILL_STUCK_S, stuck);
		runrecord_note(r->rec, run_stuck);
	}
}

/* ---- issue 29: what left the cgroups, and --max-procs without pids ---------- */

/* track_sweep's report: a process outside the run's cgroups, stopped.
 * It is a leftover (its argv kept) with the hierarchies it left, whatever
 * the reason the run ended: it outlived the containment's kill. */
static void add_escapee(void *ctx, pid_t pid, const char *left)
{
	struct run *r = ctx;
	struct sup_record *rec = r->rec;
	add_leftover(ctx, pid);
	/* add_leftover() read it too; `left` was read while it was stopped */
	for (size_t i = 0; i < rec->n_leftovers; i++)
		if (rec->leftovers[i].pid == pid)
			snprintf(rec->leftovers[i].left_cgroups,
				 sizeof rec->leftovers[i].left_cgroups, "%s", left);
}

/* The registry, once memsup's own children (the sentinel, those from
 * before the run) are known: never the run's. */
static void track_start(struct run *r)
{
	if (track_open(&r->track, r->cfg->proc_root, getpid()) < 0) {
		runrecord_note(r->rec, "no memory for the process registry: a process that "
			       "leaves the run's cgroups may outlive the run");
		return;
	}
	for (size_t i = 0; i < r->nprior; i++)
		track_exclude(r->track, r->prior[i]);
	if (r->sentinel.pid > 0)
		track_exclude(r->track, r->sentinel.pid);
}

/* After the containment's kill: whatever it missed -- a process that
 * wrote itself into another cgroup, and what it started -- is stopped,
 * listed and killed by pidfd, before memsup waits for the output's end
 * (such a process may hold the command's stdout open). */
static void sweep_escapees(struct run *r)
{
	static char note[256];
	struct track_waiter w = { kill_wait, add_escapee, r };
	if (!r->track)
		return;
	int n = track_sweep(r->track, &w, REAP_REST_MS);
	size_t escaped = 0;
	for (size_t i = 0; i < r->rec->n_leftovers; i++)
		escaped += r->rec->leftovers[i].left_cgroups[0] != '\0';
	if (n < 0) {
		snprintf(note, sizeof note, "memsup's descendants could not be listed at the "
			 "end (%s): a process that left the run's cgroups unseen may outlive it",
			 strerror(-n));
		runrecord_note(r->rec, note);
	} else if (escaped) {
		snprintf(note, sizeof note, "%zu process%s had left some of the run's cgroups "
			 "(leftover_processes_killed names them and which): killed all the same",
			 escaped, escaped == 1 ? "" : "es");
		runrecord_note(r->rec, note);
	}
}

/* --max-procs where no pids cgroup holds it: RLIMIT_NPROC for the command,
 * or memsup's priority raised for the scan; the record says which. */
static void plan_procs(struct run *r, struct spawn_request *req)
{
	const struct sup_options *o = r->cfg->opt;
	procs_plan_make(&r->procs, o->max_procs, contain_info(r->contain)->pids,
			r->cfg->proc_root);
	r->rec->max_procs_by = procs_by_name(r->procs.by);
	if (r->oomadj.protected)
		memcpy(r->procs.limits.oom_score_adj, r->oomadj.before,
		       sizeof r->procs.limits.oom_score_adj);
	if (r->procs.limits.set_nproc || r->procs.limits.reset_sched || r->oomadj.protected)
		req->limits = &r->procs.limits;
	/* the record outlives `r` */
	static char note[sizeof r->procs.note];
	if (r->procs.note[0]) {
		memcpy(note, r->procs.note, sizeof note);
		runrecord_note(r->rec, note);
	}
}

static int is_prior(const struct run *r, pid_t pid)
{
	for (size_t i = 0; i < r->nprior; i++)
		if (r->prior[i] == pid)
			return 1;
	return 0;
}

/* memsup's own children (memsup is one thread): up to cap into out, their
 * number into *n.  0; 1 when there were more than cap (or than one page
 * of text), *n then counting at least those listed; -errno without a
 * children file. */
static int own_children(pid_t *out, size_t cap, size_t *n)
{
	pid_t self = getpid();
	*n = 0;
	int rc = procfs_read_children(NULL, self, self, out, cap, n);
	if (rc == -ENOSPC || rc == -EFBIG) {
		if (*n > cap)
			*n = cap;
		return 1;
	}
	return rc;
}

/* The children memsup has before it starts anything: not the run's. */
static void note_prior_children(struct run *r)
{
	static char note[256];
	int rc = own_children(r->prior, RUN_PRIOR_MAX, &r->nprior);
	if (rc < 0)
		return; /* no children file: the scan cannot tell them apart either */
	for (size_t i = 0; i < r->nprior; i++)
		contain_exclude(r->contain, r->prior[i]);
	if (r->nprior) {
		snprintf(note, sizeof note, "memsup started with %zu%s child process%s of its own "
			 "(left to it by an exec): not part of the run%s", r->nprior,
			 rc ? " or more" : "", r->nprior == 1 && !rc ? "" : "es",
			 rc ? "; past the first 64, /proc discovery may count them" : "");
		runrecord_note(r->rec, note);
	}
}

/* The tree is killed; reap every child of memsup but the sentinel before
 * memsup exits.  The cgroup (or the /proc scan) stops listing a process
 * as it starts exiting, before it is a zombie ready for wait(), and its own
 * children come to memsup, the subreaper, only then.  One left unreaped is
 * not dead to anyone else: it passes to init, which on some machines
 * (containers, microVMs) never reaps, and stays a zombie for good.
 * memsup's children file lists them all, zombies included. */
static void reap_rest(struct run *r)
{
	static char note[160];
	pid_t kids[RUN_PRIOR_MAX];
	size_t n, others = 0;
	for (int waited = 0;; waited += 10) {
		reap(r);
		int rc = own_children(kids, RUN_PRIOR_MAX, &n);
		if (rc < 0)
			return; /* no children file: reap() above is all we can do */
		others = (size_t)rc; /* more than listed: not only ours */
		for (size_t i = 0; i < n; i++)
			others += kids[i] != r->sentinel.pid && !is_prior(r, kids[i]);
		if (others == 0 || waited >= REAP_REST_MS)
			break;
		wait_a_little(r, 10);
	}
	if (others) {
		snprintf(note, sizeof note, "%zu process%s of the tree still not reaped %d ms "
			 "after the kill; init inherits them", others, others == 1 ? "" : "es",
			 REAP_REST_MS);
		runrecord_note(r->rec, note);
	}
}

static int block_signals(sigset_t *orig, sigset_t *set, enum terminal_mode terminal)
{
	sigemptyset(set);
	/* a job's SIGCONT still continues memsup; blocked, it is also read;
	 * a transcript's memsup is the one told of a new window size */
	if (terminal != TERMINAL_NONE)
		sigaddset(set, SIGCONT);
	if (terminal == TERMINAL_TRANSCRIPT)
		sigaddset(set, SIGWINCH);
	sigaddset(set, SIGINT);
	sigaddset(set, SIGTERM);
	sigaddset(set, SIGHUP);
	sigaddset(set, SIGQUIT);
	sigaddset(set, SIGCHLD);
	/* An inherited SIG_IGN for SIGCHLD would make the kernel reap our
	 * children itself and take their statuses with it. */
	signal(SIGCHLD, SIG_DFL);
	return sigprocmask(SIG_BLOCK, set, orig) < 0 ? -errno : 0;
}

static int open_pidfd(pid_t pid)
{
#ifdef SYS_pidfd_open
	return (int)syscall(SYS_pidfd_open, pid, 0);
#else
	errno = ENOSYS;
	return -1;
#endif
}

/* The (up to TIMELINE_TOP) members with the largest RSS, largest first,
 * ties to the lower pid: an insertion into a fixed array, O(members), no
 * allocation and no full sort per sample. */
static void top_members(struct timeline_sample *tl, const struct tree_member *m, size_t n)
{
	tl->n_top = 0;
	for (size_t i = 0; i < n; i++) {
		size_t k = tl->n_top;
		while (k > 0 && (m[i].rss > tl->top[k - 1].rss ||
				 (m[i].rss == tl->top[k - 1].rss && m[i].pid < tl->top[k - 1].pid)))
			k--;
		if (k >= TIMELINE_TOP)
			continue;
		size_t last = tl->n_top < TIMELINE_TOP ? tl->n_top : TIMELINE_TOP - 1;
		memmove(&tl->top[k + 1], &tl->top[k], (last - k) * sizeof tl->top[0]);
		tl->top[k] = (struct timeline_top){ m[i].pid, m[i].rss };
		if (tl->n_top < TIMELINE_TOP)
			tl->n_top++;
	}
}

/* Slurm's poll, followed (slowpoll.h) on the figure its plugin reads:
 * jobacct_gather/cgroup the task cgroup's anonymous memory (memory.stat's
 * rss, of which the run's cgroup is part), where memsup reads memory.stat,
 * else the summed RSS, as jobacct_gather/linux reads /proc.  Chosen at the
 * first sample and kept, so that one run's range is of one figure; a
 * sample without memory.stat is then no reading of it. */
static void slurm_poll_sample(struct run *r, double elapsed, uint64_t rss)
{
	struct sup_record *rec = r->rec;
	if (!r->slurm_poll.period_s)
		return;
	if (!rec->slurm_poll_reads) {
		r->slurm_poll_anon = strcmp(rec->slurm->gather, "cgroup") == 0 && r->kernel.have_split;
		rec->slurm_poll_reads = r->slurm_poll_anon ? "cgroup_anon" : "summed_rss";
	}
	if (!r->slurm_poll_anon)
		slowpoll_sample(&r->slurm_poll, elapsed, rss);
	else if (r->kernel.have_split)
		slowpoll_sample(&r->slurm_poll, elapsed, r->kernel.anon);
}

/* The command changed the run's --mem-max limit, or (v1) turned its OOM
 * killer off; the containment put memsup's back (contain_state).  Said
 * once each in the notes, the first time and the count; a limit that
 * could not go back (the tree holds more) ends the run as the limit's. */
static void limit_undone(struct run *r, double at_s)
{
	static char raised[256], disabled[200];
	const struct contain_state *k = &r->kernel;
	if (k->limit_found && !r->limit_undone_n++) {
		if (k->limit_restored > 0)
			snprintf(raised, sizeof raised, "the command changed the run's memory limit "
				 "(--mem-max) to %llu bytes at %.3f s; memsup set its own back",
				 (unsigned long long)k->limit_found, at_s);
		else
			snprintf(raised, sizeof raised, "the command changed the run's memory limit "
				 "(--mem-max) to %llu bytes at %.3f s, and memsup could not set its own "
				 "back (%s: the tree held more): the run ended as the limit's",
				 (unsigned long long)k->limit_found, at_s, strerror(-k->limit_restored));
		runrecord_note(r->rec, raised);
	}
	if (k->limit_found && k->limit_restored <= 0)
		r->limit_lost = 1;
	if (k->oom_reenabled && !r->oom_disabled_n++) {
		snprintf(disabled, sizeof disabled, "the command set the run's oom_kill_disable at "
			 "%.3f s, which leaves the tree waiting at the limit for good; memsup turned "
			 "the OOM killer back on", at_s);
		runrecord_note(r->rec, disabled);
	}
}

/* A stretch without a sample, from `from` to `to`: the longest is evidence
 * (memsup stopped, the machine stalled: findings' sampling_gap). */
static void note_gap(struct run *r, uint64_t from, uint64_t to)
{
	if (!from) /* no sample yet: the gap runs from the start */
		from = r->start_ns;
	if (to > from && to - from > r->gap_ns) {
		r->gap_ns = to - from;
		r->gap_from_ns = from;
		r->rec->longest_gap_s = (double)r->gap_ns / 1e9;
		r->rec->longest_gap_at_s = since_start_s(r, from);
	}
}

/* Whether the main process still runs, reaping first: one that ended
 * before memsup looked (memsup stopped, a late wake-up) ended on its own,
 * and a budget that passed meanwhile is sampling_gap's to tell, not a
 * kill's. */
static int still_running(struct run *r)
{
	reap(r);
	return !r->main_done;
}

/* Under RLIMIT_NPROC, the uid at its limit (procs.h): the tree's next
 * fork is refused though it may have fewer than N, the uid's other
 * processes sharing the limit.  A scan of /proc, so at most every
 * RLIMIT_CHECK_NS. */
#define RLIMIT_CHECK_NS (200 * 1000000ull)
static int rlimit_refuses(struct run *r)
{
	static uint64_t next;
	if (r->procs.by != PROCS_BY_RLIMIT)
		return 0;
	uint64_t now = clock_mono_ns();
	if (now < next)
		return 0;
	next = now + RLIMIT_CHECK_NS;
	return procs_uid_at_limit(&r->procs, r->cfg->proc_root);
}

/* The budget this sample breaks, or SUP_REASON_NONE. */
static enum sup_reason breach(struct run *r, double elapsed, uint64_t rss, unsigned n)
{
	const struct sup_options *o = r->cfg->opt;
	/* with pids.max the kernel refuses the fork past N: a refusal, or N
	 * reached, is the breach; without it, more than N seen */
	int pids_limit = o->max_procs > 0 && (contain_info(r->contain)->pids ||
					      r->procs.by == PROCS_BY_RLIMIT);
	if (o->mem_max_mb > 0 && (r->kernel.oom_kills > 0 || r->limit_lost))
		return SUP_REASON_MEM_LIMIT;
	if (o->wall_s > 0 && elapsed >= o->wall_s && still_running(r))
		return SUP_REASON_WALL_BUDGET;
	if (o->rss_mb > 0 && (double)rss >= o->rss_mb * UNITS_MB)
		return SUP_REASON_RSS_BUDGET;
	if (o->max_procs > 0 &&
	    (n > o->max_procs || (pids_limit && (n >= o->max_procs || r->kernel.forks_refused))))
		return SUP_REASON_PROCS_BUDGET;
	if (rlimit_refuses(r))
		return SUP_REASON_PROCS_BUDGET;
	return SUP_REASON_NONE;
}

/* --max-procs N reached: N processes where something refuses the next
 * fork (pids.max, RLIMIT_NPROC), else more than N. */
static int procs_reached(const struct run *r, unsigned n)
{
	unsigned max = r->cfg->opt->max_procs;
	int held = r->procs.by == PROCS_BY_PIDS_MAX || r->procs.by == PROCS_BY_RLIMIT;
	return max > 0 && (n > max || (held && n >= max));
}

/* Whether the samples go without the per-process view because
 * --max-procs comes first, where no pids cgroup holds it (issue 29).  The
 * view reads each member's smaps_rollup, which waits for the member's
 * memory-map lock; a forking member holds it, and among hundreds of
 * runnable processes the holder gets the CPU back only after seconds --
 * memsup, real-time or not, sleeps meanwhile and the bomb grows unseen
 * (2 s without a sample, measured).  A tree that grows in bursts looks
 * steady between two of them, so no sample can tell it is safe: none
 * takes the view.  procs.c's note says so in the record. */
static int procs_view_skipped(const struct run *r)
{
	return r->procs.by == PROCS_BY_SCAN || r->procs.by == PROCS_BY_RLIMIT;
}

/* The rate after a sample (pace.h), and what it asks of the kernel: to
 * stop watching the marks, or to watch new ones. */
static void pace_sample(struct run *r, uint64_t now, uint64_t rss, unsigned n)
{
	const struct contain_state *k = &r->kernel;
	const struct pview_peak *pk = r->pv ? pview_peak(r->pv) : NULL;
	struct pace_reading rd = {
		.now = now, .rss = rss, .n = n, .have_usage = k->have_usage, .usage = k->usage,
		.peak_incomplete = pk && pk->n && (!pk->have_smaps || pk->carried),
		.peak_rss = pk ? pk->rss : 0,
	};
	uint64_t lo = 0, hi = 0;
	switch (pace_after_sample(&r->pace, &r->rec->sampling, &rd, &lo, &hi)) {
	case PACE_KEEP:
		break;
	case PACE_TO_DENSE:
		contain_unwatch(r->contain); /* its eventfd closed: unregistered */
		pollset_forget(&r->ps, SLOT_WATCH);
		break;
	case PACE_WATCH: {
		int rc = contain_watch(r->contain, lo, hi);
		pollset_forget(&r->ps, SLOT_WATCH); /* a new eventfd, maybe the old one's number */
		if (rc < 0) {
			snprintf(run_pace_why, sizeof run_pace_why, "the kernel refused a usage "
				 "threshold (cgroup.event_control: %s)", strerror(-rc));
			pace_refused(&r->pace, &r->rec->sampling, run_pace_why);
		} else {
			pace_watching(&r->pace, &r->rec->sampling, now, k->usage, rss);
		}
		break;
	}
	}
}

/* The kernel or a new record woke a sparse memsup (pace_wake). */
static void wake_sparse(struct run *r, uint64_t *next, uint64_t *counter)
{
	pace_wake(&r->pace, clock_mono_ns(), r->last_sample_ns, next, counter);
}

/* `due`: when the schedule wanted this sample. */
static void take_sample(struct run *r, uint64_t now, uint64_t due, enum sup_reason *reason)
{
	struct sup_record *rec = r->rec;
	uint64_t rss;
	unsigned n;
	if (contain_sample(r->contain, &rss, &n) < 0)
		return; /* a failed listing is a missed sample, not a zero */
	uint64_t oom_was = r->kernel.oom_kills;
	contain_poll(r->contain, &r->kernel);
	int oom_rose = r->kernel.have_events && r->kernel.oom_kills > oom_was;
	if (r->kernel.limit_found || r->kernel.oom_reenabled)
		limit_undone(r, since_start_s(r, clock_mono_ns()));
	/* New record files after the RSS reading, not before: an image that
	 * finished its start between the two (descheduled memsup, a child
	 * that faults in 20 MB of huge pages in a millisecond) would have
	 * its memory in the sample and its record not, and its whole RSS
	 * would read as memory that is not heap.  Files still being created
	 * are retried every sample. */
	if (r->live)
		live_update(r->live, 0);
	uint64_t read_ns = clock_mono_ns();
	/* a sparse interval is no gap while on time: what counts is from one
	 * poll period before the sample was due; poll_interval_p99_s is of
	 * the dense intervals */
	uint64_t from = r->last_sample_ns;
	if (from && due > from + r->pace.period_ns)
		from = due - r->pace.period_ns;
	else if (from)
		jitter_add(&r->jit, now - r->last_sample_ns);
	note_gap(r, from, now);
	r->last_sample_ns = now;
	if (r->pace.sparse)
		rec->sampling.samples_sparse++;
	/* elapsed is taken after reading, as the seed does */
	double elapsed = since_start_s(r, clock_mono_ns());
	rec->samples++;
	/* the answer's candidates: the polled peak, the cgroup's counters
	 * where its usage was largest */
	int new_peak = answer_note_sample(rec, elapsed, rss, &r->kernel);
	if (n > rec->max_processes)
		rec->max_processes = n;
	/* evidence_failed ends the run whatever the budgets say */
	enum sup_reason b = breach(r, elapsed, rss, n);
	if (evidence_append_sample(r->ev, elapsed, rss) < 0)
		*reason = SUP_REASON_EVIDENCE_FAILED;
	slurm_poll_sample(r, elapsed, rss);
	if (r->pv) {
		/* the per-process view and the live records of the same moment:
		 * each member's image is the one current at `now`, when the
		 * reading began, or, for a pid that had none then, one started
		 * by read_ns, the reading's end (memsup descheduled for
		 * milliseconds on a loaded machine: a command that started and
		 * filled 20 MB meanwhile read as 20 MB no record explained).
		 * Not when the process budget breaks: the members' cmdline and
		 * smaps wait for their memory map's lock, which a fork bomb
		 * holds nearly all the time -- seconds, for the kill to wait. */
		const struct tree_member *m;
		size_t nm = contain_sampled(r->contain, &m);
		struct pview_sums s;
		/* Nor at all where no pids cgroup holds --max-procs
		 * (procs_view_skipped says why). */
		int viewed = b != SUP_REASON_PROCS_BUDGET && !procs_view_skipped(r);
		/* an OOM kill since the last sample: that sample's members,
		 * the victim among them, before this one replaces them */
		int oom_look = 0;
		if (r->oom) {
			const struct pview_peak_member *prev;
			size_t nprev = pview_current(r->pv, &prev);
			oom_look = oomwatch_before(r->oom, &r->kernel, prev, nprev, r->last_elapsed);
		}
		if (viewed) {
			if (r->live)
				live_believe(r->live, m, nm, r->main_pid, now, read_ns);
			pview_sample(r->pv, r->live, now, read_ns, m, nm, new_peak, rss, &s);
		} else {
			memset(&s, 0, sizeof s);
		}
		if (oom_look) {
			const struct pview_peak_member *cur;
			size_t ncur = viewed ? pview_current(r->pv, &cur) : 0;
			oomwatch_after(r->oom, &r->kernel, ncur ? cur : NULL, ncur, r->pv, r->live,
				       elapsed, r->kernel_woke_ns ? r->kernel_woke_ns : r->oom_chase_ns,
				       now);
		}
		struct timeline_sample tl = {
			.t = elapsed, .rss = rss, .processes = n,
			.traced = r->live != NULL && viewed,
			.heap = s.heap, .mapped_anon = s.map_anon, .mapped_file = s.map_file,
			.have_pss = s.have_pss, .pss = s.pss,
			.have_cgroup = r->kernel.have_usage, .cgroup = r->kernel.usage,
			.have_split = r->kernel.have_split, .cgroup_anon = r->kernel.anon,
			.cgroup_page_cache = r->kernel.page_cache, .cgroup_shmem = r->kernel.shmem,
			.cgroup_kernel = r->kernel.kernel,
			.have_events = r->kernel.have_events,
			.cgroup_limit_hits = r->kernel.limit_hits,
			.cgroup_oom_kills = r->kernel.oom_kills,
		};
		top_members(&tl, m, nm);
		/* the images' sampled call sites at a new peak of the traced
		 * heap, of the traced heap plus mappings or of the RSS, with the
		 * figures of this very sample: the images pview counted in
		 * s.heap (none when the records were not read: a fork bomb at
		 * --max-procs) */
		if (r->sites && viewed) {
			const struct pview_peak_member *pm;
			size_t npm = pview_current(r->pv, &pm);
			peaksites_sample(r->sites, r->live, pm, npm, elapsed, s.heap,
					 s.map_anon + s.map_file, rss);
		}
		if (evidence_append_timeline(r->ev, &tl) < 0)
			*reason = SUP_REASON_EVIDENCE_FAILED;
		struct phases_sample ps = {
			.t = elapsed, .rss = rss, .processes = n, .traced = tl.traced,
			.heap = s.heap, .members = m, .n_members = nm,
		};
		phases_on_sample(r->cfg->phases, &ps, r->live, r->start_ns, r->cfg->proc_root);
	}
	if ((procs_reached(r, n) || b == SUP_REASON_PROCS_BUDGET) &&
	    rec->max_procs_reached_at_s < 0)
		rec->max_procs_reached_at_s = elapsed;
	/* each member held by pidfd (track.h); not in a fork bomb's breaking
	 * sample: the end's scan of descendants finds those anyway */
	if (r->track && b != SUP_REASON_PROCS_BUDGET) {
		const struct tree_member *m;
		size_t nm = contain_sampled(r->contain, &m);
		track_note_members(r->track, m, nm);
	}
	if (*reason == SUP_REASON_NONE)
		*reason = b;
	/* the kernel's OOM event comes as the OOM begins (v1 notifies before
	 * the killer chooses; v2 at the "oom" event, then again at the
	 * kill): until the kill shows in the counter, the samples follow it
	 * closely (supervise), up to OOM_CHASE_NS */
	if (oom_rose)
		r->oom_chase_ns = 0;
	else if (r->kernel_woke_ns)
		r->oom_chase_ns = r->kernel_woke_ns;
	else if (r->oom_chase_ns && now - r->oom_chase_ns > OOM_CHASE_NS)
		r->oom_chase_ns = 0;
	r->kernel_woke_ns = 0;
	r->last_elapsed = elapsed;
	pace_sample(r, now, rss, n);
}

static void finish_times(struct run *r)
{
	struct sup_record *rec = r->rec;
	struct rusage ru;
	uint64_t end = clock_mono_ns() - r->cleanup_ns;
	rec->wall_s = since_start_s(r, end);
	/* the stretch from the last sample to the moment memsup saw the end:
	 * long only if memsup could not look (stopped) while the tree ended;
	 * sparse, it counts from one poll period before the next was due */
	uint64_t from = r->last_sample_ns;
	if (from && r->pace.sparse && r->next_due > from + r->pace.period_ns)
		from = (end < r->next_due ? end : r->next_due) - r->pace.period_ns;
	note_gap(r, from, end);
	if (getrusage(RUSAGE_CHILDREN, &ru) == 0)
		rec->rusage_children_maxrss_mb = (double)ru.ru_maxrss * UNITS_KIB / UNITS_MB;
	if (getrusage(RUSAGE_SELF, &ru) == 0)
		rec->memsup_cpu_s = (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
				    (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
	if (r->jit.count > 0)
		rec->poll_interval_p99_s = (double)jitter_quantile(&r->jit, 0.99) / 1e9;
	pace_end(&r->pace, &rec->sampling, end);
	if (r->slurm_poll.samples) {
		slowpoll_range(&r->slurm_poll, &rec->slurm_poll_low, &rec->slurm_poll_high);
		rec->have_slurm_poll = 1;
		/* Slurm's cgroup plugin reads the task's cgroup, where memsup
		 * itself runs beside the run's: its own anonymous memory, as
		 * the run ends (it grows, if at all, as the run goes on), is
		 * in every poll's figure */
		struct procfs_status self;
		if (r->slurm_poll_anon &&
		    procfs_read_status(r->cfg->proc_root, getpid(), &self) == 0 &&
		    (self.have & PROCFS_HAVE_RSS_PARTS)) {
			rec->slurm_memsup_anon = self.rss_anon_kb * 1024;
			rec->slurm_poll_low += rec->slurm_memsup_anon;
			rec->slurm_poll_high += rec->slurm_memsup_anon;
		}
	}
}

/* Folds the ended images' records (live_fold_ended), after one last look
 * at their markers.  0, or -errno noted as the evidence failure. */
static int fold_ended(struct run *r)
{
	if (!r->live)
		return 0;
	phases_scan_shim(r->cfg->phases, r->live, r->start_ns, r->cfg->proc_root);
	int rc = live_fold_ended(r->live);
	if (rc < 0)
		evidence_note_failure(r->ev, "write", FOLD_NAME, rc);
	return rc;
}

/* The staging directory (staging.h) into DIR/records.  A failure loses
 * nothing (what could not be moved stays where the note says) and is
 * noted, not fatal: the records that matter are folded already. */
static void drain_staging(struct run *r)
{
	static char note[2 * PATH_MAX + 128];
	size_t moved;
	int rc = staging_drain(r->cfg->staging, r->ev->dirfd, &moved);
	if (rc == 0)
		return;
	snprintf(note, sizeof note, "the records left in %s could not all be moved into "
		 "%s/records (%s): what was not moved stays there", r->cfg->staging->dir,
		 r->ev->path, strerror(-rc));
	runrecord_note(r->rec, note);
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

static void record_marks_take(const struct run *r, struct pace_marks *m)
{
	pace_marks_take(&r->pace, r->rec, phases_count(r->cfg->phases), r->gap_ns, m);
}

/* The supervision loop proper; returns the reason (SUP_REASON_NONE: the
 * main process ended on its own). */
static enum sup_reason supervise(struct run *r)
{
	const struct sup_options *o = r->cfg->opt;
	uint64_t wall_end = o->wall_s > 0 ? r->start_ns + (uint64_t)(o->wall_s * 1e9) : 0;
	uint64_t next = r->start_ns, next_record = r->start_ns + NS_PER_S;
	uint64_t record_at = r->start_ns; /* the last rewrite of the record */
	struct pace_marks written;        /* and what it held */
	record_marks_take(r, &written);
	enum sup_reason reason = SUP_REASON_NONE;
	pollset_open(&r->ps, RUN_STEADY_SLOTS);

	while (!r->main_done && !r->interrupt) {
		uint64_t now = clock_mono_ns();
		if (wall_end && now >= wall_end) {
			if (still_running(r))
				reason = SUP_REASON_WALL_BUDGET;
			break;
		}
		if (now >= next) {
			take_sample(r, now, next, &reason);
			if (reason != SUP_REASON_NONE)
				break;
			/* the steady schedule (pace_next); an OOM being
			 * chased is followed closely */
			next = pace_next(&r->pace, next, now, next_record);
			if (r->oom_chase_ns && next > now + OOM_CHASE_STEP_NS)
				next = now + OOM_CHASE_STEP_NS;
		}
		if (now >= next_record) {
			r->rec->poll_interval_p99_s = r->jit.count
				? (double)jitter_quantile(&r->jit, 0.99) / 1e9 : -1;
			r->rec->wall_s = since_start_s(r, now);
			report_output(r);
			/* the records of ended images into the fold file, their
			 * markers read first: the directory and each sample's
			 * work stay the size of what still runs */
			if (fold_ended(r) < 0) {
				reason = SUP_REASON_EVIDENCE_FAILED;
				break;
			}
			/* Evidence that cannot be written ends the run: a
			 * supervisor that goes on measuring into a full disk
			 * or a removed directory would report nothing. */
			if (evidence_flush_samples(r->ev) < 0) {
				reason = SUP_REASON_EVIDENCE_FAILED;
				break;
			}
			struct pace_marks cur;
			record_marks_take(r, &cur);
			if (pace_record_due(&r->pace, now, record_at, &cur, &written)) {
				if (evidence_write_record(r->ev, r->rec, 0) < 0) {
					reason = SUP_REASON_EVIDENCE_FAILED;
					break;
				}
				record_at = now;
				written = cur;
			}
			next_record += NS_PER_S;
			if (next_record <= now)
				next_record = now + NS_PER_S;
		}
		r->next_due = next;
		uint64_t wake = next;
		if (wall_end && wall_end < wake)
			wake = wall_end;
		uint64_t relay_wake = relay_wake_ns(r->cfg->relay);
		if (relay_wake && relay_wake < wake)
			wake = relay_wake;
		now = clock_mono_ns();
		uint64_t wait = wake > now ? wake - now : 0;
		struct timespec ts = { (time_t)(wait / NS_PER_S), (long)(wait % NS_PER_S) };
		/* the records' inotify fd: new files are mapped at
		 * once, so that a sample never waits on a burst of them */
		int lfd = r->live ? live_fd(r->live) : -1;
		int mfd = phases_fd(r->cfg->phases);
		/* the cgroup's event file (an OOM kill), -1 without one; after
		 * the steady slots, the command's output, moved as it comes */
		short kev;
		int kfd = contain_event_fd(r->contain, &kev);
		/* sparse, the usage's marks (contain_watch); once it
		 * woke memsup it is not looked at again before the sample */
		int wfd = r->pace.sparse && !r->pace.woke ? contain_watch_fd(r->contain) : -1;
		/* a cgroup made below the run's (contain_below_fd):
		 * until one is, a sample lists the run's own cgroup alone */
		int bfd = contain_below_fd(r->contain);
		struct pollfd pfd[RUN_STEADY_SLOTS + OUTPUT_POLL_SLOTS] = {
			[SLOT_SIGNALS] = { r->sfd, POLLIN, 0 }, [SLOT_MAIN] = { r->pidfd, POLLIN, 0 },
			[SLOT_RECORDS] = { lfd, POLLIN, 0 }, [SLOT_MARKS] = { mfd, POLLIN, 0 },
			[SLOT_KERNEL] = { kfd, kev, 0 }, [SLOT_WATCH] = { wfd, POLLIN, 0 },
			[SLOT_BELOW] = { bfd, POLLIN, 0 } };
		output_poll_set(r, pfd + RUN_STEADY_SLOTS);
		int np = pollset_wait(&r->ps, pfd, OUTPUT_POLL_SLOTS, &ts);
		if (np > 0 && pfd[SLOT_SIGNALS].revents)
			drain_signals(r);
		/* The pidfd turns readable the moment the main process exits
		 * (before, or without, SIGCHLD being read). */
		if (np > 0 && r->pidfd >= 0 && pfd[SLOT_MAIN].revents)
			reap(r);
		if (r->stop_sig && !r->main_done)
			job_stopped(r);
		if (np > 0 && lfd >= 0 && pfd[SLOT_RECORDS].revents) {
			size_t had = live_count(r->live);
			live_update(r->live, 0);
			/* a new image: churn is movement (short processes
			 * seen).  Another file is not: a stacks file is an
			 * image sampling a call site, made before the memory
			 * it maps is touched -- a sample then reads nothing
			 * yet and holds the next one --poll-ms away from the
			 * rise, which the kernel's marks tell as it comes */
			if (live_count(r->live) > had)
				wake_sparse(r, &next, &r->rec->sampling.churn_wakeups);
		}
		/* a line in the marks file, stamped now */
		if (np > 0 && mfd >= 0 && pfd[SLOT_MARKS].revents)
			phases_read_file(r->cfg->phases, since_start_s(r, clock_mono_ns()), 0,
					 r->cfg->proc_root, r->live);
		/* the kernel has news (an OOM kill): sample now */
		if (np > 0 && kfd >= 0 && pfd[SLOT_KERNEL].revents) {
			next = clock_mono_ns();
			if (!r->kernel_woke_ns)
				r->kernel_woke_ns = next;
		}
		/* the usage crossed a mark: dense again */
		if (np > 0 && wfd >= 0 && pfd[SLOT_WATCH].revents)
			wake_sparse(r, &next, &r->rec->sampling.threshold_wakeups);
		/* a cgroup below the run's: from now on every listing
		 * looks below, and a sample at once (the one before may have
		 * missed a process moved there since this poll began) */
		if (np > 0 && bfd >= 0 && pfd[SLOT_BELOW].revents) {
			/* let epoll go of it while the fd is open: the
			 * sentinel's copy keeps the file alive after the
			 * close, and epoll with it -- readable for good,
			 * which spun the loop at every wake-up */
			pollset_forget(&r->ps, SLOT_BELOW);
			contain_below_told(r->contain);
			next = clock_mono_ns();
		}
		int rc = np > 0 ? output_pump(r, pfd + RUN_STEADY_SLOTS) : 0;
		if (rc < 0) {
			relay_failed(r, rc, &reason);
			break;
		}
	}
	pollset_close(&r->ps);
	return reason;
}

static int start_failed(struct run *r, int status, const char *what, int err)
{
	snprintf(run_error, sizeof run_error, "%s: %s", what, strerror(err));
	r->rec->reason = SUP_REASON_START_FAILED;
	r->rec->error = run_error;
	r->rec->exit_status = runrecord_exit_status(SUP_REASON_START_FAILED, status);
	return r->rec->exit_status;
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

/* Everything the run needs before the command starts: the signalfd, the
 * subreaper, the containment, the live records and the per-process view.
 * 0, or memsup's exit status when the run cannot start. */
static int open_run(struct run *r, sigset_t *orig)
{
	const struct run_config *cfg = r->cfg;
	struct sup_record *rec = r->rec;
	sigset_t set;
	int rc;
	r->job = cfg->opt->terminal != TERMINAL_NONE;
	if (r->job)
		terminal_open(&r->term, cfg->opt->terminal);
	if ((rc = block_signals(orig, &set, cfg->opt->terminal)) < 0)
		return start_failed(r, 125, "sigprocmask", -rc);
	if (cfg->start_mask)
		*orig = *cfg->start_mask; /* main blocked some already */
	r->sfd = signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC);
	if (r->sfd < 0)
		return start_failed(r, 125, "signalfd", errno);
	if (spawn_become_subreaper() < 0)
		runrecord_note(rec, "PR_SET_CHILD_SUBREAPER failed: orphaned descendants "
			       "re-parent to init, leave the measured tree and are not killed");
	const struct sup_options *o = cfg->opt;
	struct contain_config cc = {
		.proc_root = cfg->proc_root, .self = getpid(), .discovery = o->discovery,
		.cgroup = o->cgroup, .cgroup_root = cfg->cgroup_root, .scope = cfg->scope,
		.max_procs = o->max_procs,
		.mem_max = (uint64_t)(o->mem_max_mb * UNITS_MB),
	};
	if ((rc = contain_open(&r->contain, &cc)) < 0)
		return start_failed(r, 125, o->mem_max_mb > 0 && rc == -ENOTSUP
				    ? "--mem-max: no memory cgroup could be made for the run"
				    : "containment", -rc);
	rec->discovery = contain_name(r->contain);
	/* the containment's own, while it lasts: close_run() copies it */
	rec->containment = contain_info(r->contain);
	/* before the command: the kernel's log is read from here on */
	struct oomwatch_config oc = { .containment = contain_info(r->contain),
				      .kmsg_path = cfg->kmsg_path };
	if (oomwatch_open(&r->oom, &oc) == 0)
		rec->oom = oomwatch_log(r->oom);
	else
		runrecord_note(rec, "out of memory for the OOM autopsy: the record names no "
			       "OOM victim");
	note_prior_children(r);
	/* before the sentinel, which inherits it: neither is ever the OOM
	 * killer's choice (the command gets memsup's value back) */
	oomadj_protect(&r->oomadj, NULL);
	if (r->oom)
		oomwatch_protected(r->oom, r->oomadj.protected);
	/* before the command: the sentinel stays outside the run's cgroup */
	if ((rc = sentinel_start(&r->sentinel, r->contain, r->ev->dirfd, cfg->staging,
				   cfg->relay)) < 0)
		runrecord_note(rec, "no sentinel could be started: a memsup killed by SIGKILL "
			       "would leave the tree to itself");
	track_start(r);
	if (cfg->records_dir && (rc = live_open(&r->live, cfg->records_dir)) < 0)
		return start_failed(r, 125, "open the records directory", -rc);
	if (r->live) {
		/* where the records of ended images go (collect/fold.h) */
		if ((rc = evidence_fold_fd(r->ev)) < 0)
			return start_failed(r, 125, "create " FOLD_NAME, -rc);
		live_set_fold(r->live, rc, r->ev->dirfd);
	}
	if ((rc = pview_open(&r->pv, cfg->proc_root, cfg->records_dir != NULL)) < 0)
		return start_failed(r, 125, "per-process view", -rc);
	struct stat rst;
	if (cfg->records_dir && stat(cfg->records_dir, &rst) == 0)
		pview_set_records_owner(r->pv, rst.st_uid, rst.st_gid, rst.st_mode);
	if (cfg->records_dir && (rc = peaksites_open(&r->sites, cfg->records_dir)) < 0)
		return start_failed(r, 125, "open the records directory", -rc);
	const char *const *notes;
	for (size_t i = 0, n = contain_notes(r->contain, &notes); i < n; i++)
		runrecord_note(rec, notes[i]);
	return 0;
}

/* Start the command inside the containment, with the signal mask memsup
 * had (`orig`); the clock of the run starts here.  0, or memsup's exit
 * status when it could not start. */
static int launch(struct run *r, const sigset_t *orig)
{
	const struct sup_options *o = r->cfg->opt;
	struct sup_record *rec = r->rec;
	struct spawn_request req = {
		.argv = o->command,
		.envp = r->cfg->envp,
		.cwd = o->cwd,
		.mask = orig,
		.group = !r->job ? SPAWN_SESSION : r->term.shared ? SPAWN_KEEP : SPAWN_PGRP,
		.tty = r->job ? terminal_fg_fd(&r->term) : -1,
	};
	struct spawn_result res;
	int rc;
	relay_child_fds(r->cfg->relay, &req.out_fd, &req.err_fd);
	/* a transcript: the command's own session on a pty made now */
	if (r->cfg->transcript) {
		req.group = SPAWN_PTY;
		if ((rc = transcript_start(r->cfg->transcript, r->term.fd, &req.tty)) < 0)
			return start_failed(r, 125, "pseudo-terminal", -rc);
	}
	plan_procs(r, &req);
	r->start_ns = clock_mono_ns(); /* wall time counts from the launch, as the seed's */
	phases_start(r->cfg->phases, r->start_ns, o->poll_ms / 1000.0);
	rc = contain_start(r->contain, &req, &res);
	/* memsup's copies of the command's ends go, so that its pipes end
	 * with it */
	relay_started(r->cfg->relay);
	if (r->cfg->transcript)
		transcript_started(r->cfg->transcript, rc < 0 || res.start_errno ? 0 : res.pid);
	if (rc < 0)
		return start_failed(r, 125, "fork", -rc);
	/* even a child that could not exec may have taken the terminal: the
	 * end takes it back */
	if (r->job)
		terminal_give(&r->term, res.pid);
	if (res.start_errno) {
		rec->pid = res.pid;
		return start_failed(r, res.exit_status, res.stage, res.start_errno);
	}
	r->main_pid = rec->pid = res.pid;
	r->command_sid = res.sid;
	if (r->oom)
		oomwatch_launched(r->oom, r->start_ns, r->main_pid);
	/* the command is on its own now: a short slice for memsup's wake-ups
	 * alone (wakeslice.h) */
	if (wakeslice_take(WAKESLICE_NS) == 0)
		rec->sampling.slice_s = WAKESLICE_NS / 1e9;
	/* the run's cgroups are where the command is now (it starts inside) */
	if (r->track) {
		track_set_home(r->track, r->main_pid);
		track_note(r->track, &r->main_pid, 1);
	}
	/* Not reaped yet (SIGCHLD is blocked and unread), so even a command that
	 * already exited still has a pid to open. */
	r->pidfd = open_pidfd(r->main_pid);
	if (r->pidfd < 0)
		runrecord_note(rec, "pidfd_open unavailable: the end of the main process "
			       "is seen through SIGCHLD");
	return 0;
}

/* The run ended for `reason`: the whole tree killed and reaped, the main
 * process's status and memsup's own in the record.  Returns the latter. */
static int end_run(struct run *r, enum sup_reason reason, struct run_views *views)
{
	struct sup_record *rec = r->rec;
	int status;
	/* the signal that ended the run; one that comes while the tree is
	 * being killed changes nothing */
	int interrupt = r->interrupt;
	if (interrupt)
		reason = SUP_REASON_INTERRUPTED;
	/* what the cgroup held as the run ended, before the kill frees it */
	struct contain_figures before, after;
	contain_figures(r->contain, &before);
	/* pids.max refused a fork and the command ended of it (a bomb whose
	 * root gives up at the first refusal) before a sample saw the
	 * refusal: the budget was crossed all the same, and what is left of
	 * the tree is the budget's to kill, not leftovers */
	if (reason == SUP_REASON_NONE && r->cfg->opt->max_procs > 0 &&
	    contain_info(r->contain)->pids && before.forks_refused > 0)
		reason = SUP_REASON_PROCS_BUDGET;
	/* When the main process is gone on its own, whatever of its tree
	 * remains is a leftover: killed, and the record says who it was. */
	kill_tree(r, reason == SUP_REASON_NONE);
	sweep_escapees(r);
	reap_rest(r);
	/* the high-water marks and counters, final once the tree is dead */
	contain_figures(r->contain, &after);
	if (r->oom)
		oomwatch_end(r->oom, &after, r->pv, r->live, since_start_s(r, clock_mono_ns()));
	rec->cgroup = after;
	rec->cgroup.have_stat = before.have_stat;
	rec->cgroup.anon = before.anon;
	rec->cgroup.file = before.file;
	rec->cgroup.kernel = before.kernel;
	/* the OOM killer under --mem-max ended the command on its own */
	if (reason == SUP_REASON_NONE && r->cfg->opt->mem_max_mb > 0 && after.oom_kills > 0)
		reason = SUP_REASON_MEM_LIMIT;
	/* The tree is dead: removing its cgroups (a bounded wait, contain.h)
	 * is memsup's cleanup, neither the run's wall time nor a gap in its
	 * sampling; the record names what could not be removed. */
	uint64_t t0 = clock_mono_ns();
	int rf = contain_finish(r->contain);
	r->cleanup_ns = clock_mono_ns() - t0;
	if (rf < 0) {
		snprintf(run_note_finish, sizeof run_note_finish, "the run's cgroups could not all "
			 "be removed: %s", strerror(-rf));
		runrecord_note(rec, run_note_finish);
	}
	if (!r->main_done) {
		/* Not listed by discovery, or it would not die: frozen in a
		 * cgroup outside the run, or asleep in D state.  One SIGKILL
		 * more, and reaped if that ended it -- never waited on:
		 * reap_rest() gave the tree its bounded wait already, and a
		 * blocking waitpid() here hung memsup for as long as the
		 * process stayed frozen, --wall-s or not. */
		kill(r->main_pid, SIGKILL);
		pid_t p;
		while ((p = waitpid(r->main_pid, &r->main_status, WNOHANG)) < 0 && errno == EINTR)
			;
		r->main_done = p == r->main_pid;
	}
	reap(r);

	rec->reason = reason;
	rec->have_exit = r->main_done;
	if (!r->main_done) {
		snprintf(run_note_undead, sizeof run_note_undead, "the command (pid %d) was not dead "
			 "%d ms after SIGKILL (frozen, or in D state): its exit status is unknown, "
			 "and init reaps it when it dies", (int)r->main_pid, REAP_REST_MS);
		runrecord_note(rec, run_note_undead);
		status = 128 + SIGKILL;
	} else if (WIFEXITED(r->main_status)) {
		rec->exit_code = WEXITSTATUS(r->main_status);
		status = rec->exit_code;
	} else {
		rec->signal = WTERMSIG(r->main_status);
		rec->exit_code = -rec->signal;
		status = 128 + rec->signal;
	}
	views->have_main = r->main_done;
	views->main_status = r->main_status;
	if (interrupt)
		status = 128 + interrupt;
	return rec->exit_status = runrecord_exit_status(reason, status);
}

/* The command's exit, in the record as soon as it is known: the end's
 * work after it (the output drained to a slow reader until the wall
 * budget, the records folded, the call sites named, the picture) can take
 * seconds, and a memsup killed meanwhile would leave the last running
 * record, without it.  The reason stays "running" and memsup's own status
 * unset: this record is not the end's, and the sentinel's patch
 * (resources.h) still turns it into supervisor_killed, now with the
 * command's exit code in it.  A failure here is the final write's to say. */
static void record_the_exit(struct run *r)
{
	struct sup_record interim = *r->rec;
	interim.reason = SUP_REASON_RUNNING;
	interim.exit_status = -1;
	(void)evidence_write_record(r->ev, &interim, 0);
}

/* A job's end: the terminal back to memsup's group -- with the modes it
 * had at the start unless the command ended on its own: one killed in raw
 * mode must not leave the terminal raw -- and the stops in the record. */
static void end_job(struct run *r)
{
	const struct sup_record *rec = r->rec;
	int clean = rec->reason == SUP_REASON_NONE && rec->have_exit && !rec->signal;
	terminal_take_back(&r->term, !clean);
	terminal_close(&r->term);
	if (r->term.stops) {
		snprintf(run_note_stops, sizeof run_note_stops, "the command stopped %u time%s "
			 "(^Z or a stop signal); memsup stopped with it for %.3f s in all and "
			 "took no sample meanwhile", r->term.stops, r->term.stops == 1 ? "" : "s",
			 (double)r->stopped_ns / 1e9);
		runrecord_note(r->rec, run_note_stops);
	}
}

/* Whatever way the run ended (`status` so far): the last lines written,
 * the last record files and markers taken, the views handed over, the
 * times in the record.  Returns memsup's exit status. */
static int close_run(struct run *r, int status, struct run_views *views)
{
	const struct run_config *cfg = r->cfg;
	struct sup_record *rec = r->rec;
	if (r->job)
		end_job(r);
	/* The rest of the command's output, now that nothing writes it any
	 * more: into stdout.log, and on to a slow reader until the wall
	 * budget's end or a signal (a run already interrupted does not wait). */
	double wall_s = cfg->opt->wall_s;
	uint64_t wall_end = wall_s > 0 ? r->start_ns + (uint64_t)(wall_s * 1e9) : 0;
	struct relay_stop stop = { r->sfd, finish_stop, r };
	if (r->sfd >= 0)
		drain_signals(r);
	int rc = relay_finish(cfg->relay, &stop, r->interrupt ? clock_mono_ns() : wall_end);
	if (rc == 0)
		rc = transcript_finish(cfg->transcript, &stop,
				       r->interrupt ? clock_mono_ns() : wall_end);
	if (rc < 0)
		evidence_note_failure(r->ev, "write", "stdout.log", rc);
	report_output(r);
	/* The last lines; a write that fails now (the tree is already dead)
	 * still makes the run a memsup error, as one during the run does. */
	if ((rc < 0 || evidence_flush_samples(r->ev) < 0) &&
	    rec->reason != SUP_REASON_START_FAILED)
		rec->reason = SUP_REASON_EVIDENCE_FAILED;
	if (rec->reason == SUP_REASON_EVIDENCE_FAILED &&
	    evidence_fail_describe(r->ev, run_error, sizeof run_error) == 0) {
		rec->error = run_error;
		status = rec->exit_status = runrecord_exit_status(rec->reason, status);
	}
	/* every record that will ever exist is there now: list them all (a
	 * process killed while creating its file leaves one without magic) */
	if (r->live) {
		live_update(r->live, 1);
		/* records made after the last sample, believed through lineage */
		live_believe(r->live, NULL, 0, r->main_pid, 0, 0);
	}
	/* the last markers: lines written just before the end (a last one
	 * without its newline too) and shim slots filled since the last sample */
	phases_read_file(cfg->phases, since_start_s(r, clock_mono_ns()), 1, cfg->proc_root, r->live);
	phases_scan_shim(cfg->phases, r->live, r->start_ns, cfg->proc_root);
	phases_finish(cfg->phases);
	/* every process is gone: the records dir keeps only empty names */
	if (rec->reason != SUP_REASON_START_FAILED && fold_ended(r) < 0 &&
	    rec->reason != SUP_REASON_EVIDENCE_FAILED) {
		rec->reason = SUP_REASON_EVIDENCE_FAILED;
		if (evidence_fail_describe(r->ev, run_error, sizeof run_error) == 0)
			rec->error = run_error;
		status = rec->exit_status = runrecord_exit_status(rec->reason, status);
	}
	/* the images are gone and folded: what is left of the staging
	 * directory comes into the evidence before the sentinel stands down */
	if (cfg->staging)
		drain_staging(r);
	views->live = r->live;
	views->pview = r->pv;
	views->sites = r->sites;
	views->oom = r->oom;
	views->start_ns = r->start_ns;
	views->command_sid = r->command_sid;
	finish_times(r);
	if (r->pidfd >= 0)
		close(r->pidfd);
	if (r->sfd >= 0)
		close(r->sfd);
	/* the run's cgroups are gone: the sentinel has nothing left to do */
	sentinel_stop(&r->sentinel);
	track_close(r->track);
	if (r->contain) {
		/* The record outlives the containment: what it says, copied
		 * as far as its counts go (a whole copy of the 35 KB read and
		 * wrote every page of it, a page fault each; issue 32) */
		contain_info_copy(&run_containment, contain_info(r->contain));
		rec->containment = &run_containment;
	}
	contain_close(r->contain);
	return status;
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
	format_started_at();
	rec->started_at = run_started_at;
	r.start_ns = clock_mono_ns();

	int status = open_run(&r, &orig);
	if (status == 0)
		status = launch(&r, &orig);
	if (status == 0) {
		const char *why = pace_why_not(cfg->opt);
		pace_open(&r.pace, &rec->sampling, cfg->opt, why ? why : contain_unwatchable(r.contain),
			  r.start_ns);
		enum sup_reason reason = evidence_write_record(ev, rec, 0) == 0
			? supervise(&r) : SUP_REASON_EVIDENCE_FAILED;
		status = end_run(&r, reason, views);
		record_the_exit(&r);
	}
	return close_run(&r, status, views);
}
