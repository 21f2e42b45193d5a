/* run/start.c: everything a run needs before the command starts, and its
 * launch (state.h).  Signals are blocked before anything forks, so none is
 * lost; the containment, the OOM autopsy, the sentinel and the pidfd
 * registry exist before the command does; the run's clock starts at the
 * launch. */
#include "run/state.h"

#include "analyze/phases.h"
#include "collect/fold.h"
#include "collect/live.h"
#include "collect/oomwatch.h"
#include "collect/peaksites.h"
#include "base/procfs.h"
#include "collect/pview.h"
#include "contain/spawn.h"
#include "contain/track.h"
#include "evidence/files.h"
#include "base/clock.h"
#include "units.h"
#include "base/wakeslice.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

/* Texts the record points at: one run per process, so file scope is fine. */
static char start_error[PATH_MAX + 256];
static char start_at[40];

void run_stamp_start(struct sup_record *rec)
{
	struct timespec ts;
	struct tm tm;
	clock_gettime(CLOCK_REALTIME, &ts);
	gmtime_r(&ts.tv_sec, &tm);
	size_t n = strftime(start_at, sizeof start_at,
			    "%Y-%m-%dT%H:%M:%S", &tm);
	snprintf(start_at + n, sizeof start_at - n, ".%03dZ",
		 (int)(ts.tv_nsec / 1000000L) % 1000);
	rec->started_at = start_at;
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

int run_is_prior(const struct run *r, pid_t pid)
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
int run_own_children(pid_t *out, size_t cap, size_t *n)
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
	int rc = run_own_children(r->prior, RUN_PRIOR_MAX, &r->nprior);
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

static int start_failed(struct run *r, int status, const char *what, int err)
{
	snprintf(start_error, sizeof start_error, "%s: %s", what, strerror(err));
	r->rec->reason = SUP_REASON_START_FAILED;
	r->rec->error = start_error;
	r->rec->exit_status = runrecord_exit_status(SUP_REASON_START_FAILED, status);
	return r->rec->exit_status;
}

/* Everything the run needs before the command starts: the signalfd, the
 * subreaper, the containment, the live records and the per-process view.
 * 0, or memsup's exit status when the run cannot start. */
int run_open(struct run *r, sigset_t *orig)
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
	/* the containment's own, while it lasts: run_close() copies it */
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
			return start_failed(r, 125, "create " EVIDENCE_RECORDS_FOLD, -rc);
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
int run_launch(struct run *r, const sigset_t *orig)
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
	r->start_ns = clock_mono_ns(); /* wall time counts from the launch */
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
