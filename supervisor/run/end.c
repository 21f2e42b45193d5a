/* run/end.c: the end of a run (state.h).  The tree is killed -- at once
 * when the main process ended on its own, what is left of it listed in
 * the record as leftovers; after --grace-s's SIGTERM on a budget or an
 * interrupt -- then whatever left the run's cgroups is stopped, listed and
 * killed by pidfd (escapees), every child reaped within a bound, the
 * cgroups removed; then the rest of the command's output, the records and
 * markers, the staging directory drained, and the record's last figures. */
#include "run/state.h"

#include "analyze/phases.h"
#include "collect/fold.h"
#include "collect/live.h"
#include "collect/oomwatch.h"
#include "base/procfs.h"
#include "collect/pview.h"
#include "collect/staging.h"
#include "contain/track.h"
#include "evidence/files.h"
#include "base/clock.h"
#include "units.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

/* How long the end waits for the killed tree's last exits to reach memsup.
 * Bounded because a process in uninterruptible sleep may not die at all
 * (kill_tree has already said so). */
#define REAP_REST_MS 3000

/* Texts the record points at: one run per process, so file scope is fine. */
static char end_error[PATH_MAX + 256];
static char end_stuck[1024];
static char end_note_undead[160];
static char end_note_finish[PATH_MAX + 128];
static char end_note_stops[256];
static struct contain_info end_containment;

/* contain_kill()'s wait between rounds: signals handled, children reaped. */
static void kill_wait(void *ctx, int ms)
{
	run_wait_a_little(ctx, ms);
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
	char stuck[sizeof end_stuck - 160];
	struct contain_waiter w = { kill_wait, leftovers ? add_leftover : NULL, r, stuck,
				    sizeof stuck, kill_hurry };
	run_drain_signals(r);
	r->grace_from = r->signals;
	if (contain_kill(r->contain, leftovers ? 0 : r->cfg->opt->grace_s, &w) == -EBUSY) {
		snprintf(end_stuck, sizeof end_stuck, "still alive after SIGKILL, in "
			 "uninterruptible sleep (D state) for %d s, where no signal reaches: "
			 "%s; they die when they wake", KILL_STUCK_S, stuck);
		runrecord_note(r->rec, end_stuck);
	}
}

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
		run_reap(r);
		int rc = run_own_children(kids, RUN_PRIOR_MAX, &n);
		if (rc < 0)
			return; /* no children file: reap() above is all we can do */
		others = (size_t)rc; /* more than listed: not only ours */
		for (size_t i = 0; i < n; i++)
			others += kids[i] != r->sentinel.pid && !run_is_prior(r, kids[i]);
		if (others == 0 || waited >= REAP_REST_MS)
			break;
		run_wait_a_little(r, 10);
	}
	if (others) {
		snprintf(note, sizeof note, "%zu process%s of the tree still not reaped %d ms "
			 "after the kill; init inherits them", others, others == 1 ? "" : "es",
			 REAP_REST_MS);
		runrecord_note(r->rec, note);
	}
}

/* relay_finish()'s question when the signalfd turns readable: stop
 * waiting for a slow reader only for INT/TERM/HUP/QUIT, not for SIGCHLD. */
static int finish_stop(void *ctx)
{
	struct run *r = ctx;
	run_drain_signals(r);
	return r->interrupt != 0;
}

static void finish_times(struct run *r)
{
	struct sup_record *rec = r->rec;
	struct rusage ru;
	uint64_t end = clock_mono_ns() - r->cleanup_ns;
	rec->wall_s = run_since_start_s(r, end);
	/* the stretch from the last sample to the moment memsup saw the end:
	 * long only if memsup could not look (stopped) while the tree ended;
	 * sparse, it counts from one poll period before the next was due */
	uint64_t from = r->last_sample_ns;
	if (from && r->pace.sparse && r->next_due > from + r->pace.period_ns)
		from = (end < r->next_due ? end : r->next_due) - r->pace.period_ns;
	run_note_gap(r, from, end);
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

int run_fold_ended(struct run *r)
{
	if (!r->live)
		return 0;
	phases_scan_shim(r->cfg->phases, r->live, r->start_ns, r->cfg->proc_root);
	int rc = live_fold_ended(r->live);
	if (rc < 0)
		evidence_note_failure(r->ev, "write", EVIDENCE_RECORDS_FOLD, rc);
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

/* The run ended for `reason`: the whole tree killed and reaped, the main
 * process's status and memsup's own in the record.  Returns the latter. */
int run_end(struct run *r, enum sup_reason reason, struct run_views *views)
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
		oomwatch_end(r->oom, &after, r->pv, r->live, run_since_start_s(r, clock_mono_ns()));
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
		snprintf(end_note_finish, sizeof end_note_finish, "the run's cgroups could not all "
			 "be removed: %s", strerror(-rf));
		runrecord_note(rec, end_note_finish);
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
	run_reap(r);

	rec->reason = reason;
	rec->have_exit = r->main_done;
	if (!r->main_done) {
		snprintf(end_note_undead, sizeof end_note_undead, "the command (pid %d) was not dead "
			 "%d ms after SIGKILL (frozen, or in D state): its exit status is unknown, "
			 "and init reaps it when it dies", (int)r->main_pid, REAP_REST_MS);
		runrecord_note(rec, end_note_undead);
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
void run_record_exit(struct run *r)
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
		snprintf(end_note_stops, sizeof end_note_stops, "the command stopped %u time%s "
			 "(^Z or a stop signal); memsup stopped with it for %.3f s in all and "
			 "took no sample meanwhile", r->term.stops, r->term.stops == 1 ? "" : "s",
			 (double)r->stopped_ns / 1e9);
		runrecord_note(r->rec, end_note_stops);
	}
}

/* Whatever way the run ended (`status` so far): the last lines written,
 * the last record files and markers taken, the views handed over, the
 * times in the record.  Returns memsup's exit status. */
int run_close(struct run *r, int status, struct run_views *views)
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
		run_drain_signals(r);
	int rc = relay_finish(cfg->relay, &stop, r->interrupt ? clock_mono_ns() : wall_end);
	if (rc == 0)
		rc = transcript_finish(cfg->transcript, &stop,
				       r->interrupt ? clock_mono_ns() : wall_end);
	if (rc < 0)
		evidence_note_failure(r->ev, "write", EVIDENCE_STDOUT_LOG, rc);
	run_report_output(r);
	/* The last lines; a write that fails now (the tree is already dead)
	 * still makes the run a memsup error, as one during the run does. */
	if ((rc < 0 || evidence_flush_samples(r->ev) < 0) &&
	    rec->reason != SUP_REASON_START_FAILED)
		rec->reason = SUP_REASON_EVIDENCE_FAILED;
	if (rec->reason == SUP_REASON_EVIDENCE_FAILED &&
	    evidence_fail_describe(r->ev, end_error, sizeof end_error) == 0) {
		rec->error = end_error;
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
	phases_read_file(cfg->phases, run_since_start_s(r, clock_mono_ns()), 1, cfg->proc_root, r->live);
	phases_scan_shim(cfg->phases, r->live, r->start_ns, cfg->proc_root);
	phases_finish(cfg->phases);
	/* every process is gone: the records dir keeps only empty names */
	if (rec->reason != SUP_REASON_START_FAILED && run_fold_ended(r) < 0 &&
	    rec->reason != SUP_REASON_EVIDENCE_FAILED) {
		rec->reason = SUP_REASON_EVIDENCE_FAILED;
		if (evidence_fail_describe(r->ev, end_error, sizeof end_error) == 0)
			rec->error = end_error;
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
		 * wrote every page of it, a page fault each) */
		contain_info_copy(&end_containment, contain_info(r->contain));
		rec->containment = &end_containment;
	}
	contain_close(r->contain);
	return status;
}
