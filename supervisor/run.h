/* run.h: one supervised run, from fork to the last reaped descendant.
 *
 * run_supervise() blocks INT/TERM/HUP/QUIT/CHLD and reads them through a
 * signalfd, becomes a child subreaper, opens the containment (contain.h: a
 * cgroup of the run's own where it can), forks the sentinel (sentinel.h),
 * starts the command inside the containment, then samples its tree on a
 * steady CLOCK_MONOTONIC schedule -- deadline k = start + k*period, missed
 * deadlines skipped, no drift -- in one ppoll() loop that also watches a
 * pidfd of the main process for the exact moment it ends.  At a terminal
 * (opt->terminal, terminal.h) the command is a foreground job there: it
 * starts in a group of its own in memsup's session, made the terminal's
 * foreground; its stops stop memsup too (SIGCONT is read as well), and
 * SIGINT and SIGQUIT are ignored while it has the terminal.  It enforces the
 * budgets by killing the whole tree (the kernel's counters -- forks
 * pids.max refused, OOM kills under --mem-max -- are breaches too), kills
 * and lists what is left when the main process has exited, reaps every
 * child until ECHILD, reads the cgroup's figures, removes the cgroups, and
 * fills the record.  Each sample also feeds the per-process view (pview.h) and, when
 * tracing, reads the live shim records (live.h) for timeline.jsonl and, at
 * new peaks of the tree's traced heap or RSS, the images' sampled call
 * sites (peaksites.h), and the phase markers (phases.h), read as soon as
 * the marks file changes.  The same loop moves the command's output
 * (relay.h) as it comes, and at the end, with the tree gone, the rest of
 * it.  The evidence directory must exist; the record is rewritten about
 * once a second while running.
 *
 * The loop is run.c; what comes before it, one sample's steps, the pace
 * and the end are in run/ (run/state.h lists them).
 *
 * Returns memsup's exit status (see memsup(1); the outcomes' table is in
 * runrecord.c): the command's status, 128+N for signal N, 122/123/124
 * budgets (123 also the memory limit), 125 memsup error, 126/127 cannot
 * start, 128+N when memsup got signal N.  Never exits.
 */
#ifndef MEMSUP_RUN_H
#define MEMSUP_RUN_H

#include <signal.h>

#include "cli.h"
#include "evidence/evidence.h"
#include "analyze/runrecord.h"

struct scope_outcome;
struct staging;
struct transcript;

struct run_config {
	const struct sup_options *opt;
	char **envp;              /* the command's whole environment */
	const char *proc_root;    /* "/proc" */
	const char *cgroup_root;  /* NULL: "/sys/fs/cgroup" */
	const char *kmsg_path;    /* the kernel's log for the OOM autopsy
				     (oomwatch.h); NULL: /dev/kmsg, "": none */
	const sigset_t *start_mask; /* the signal mask memsup started with, when
				     it blocked INT/TERM/HUP/QUIT before making
				     anything: the command gets it back; NULL:
				     the mask run_open finds */
	const struct scope_outcome *scope; /* memsup's systemd scope, asked for
				     before the run (scope.h); NULL: not asked */
	const char *records_dir;  /* the shim's MEMTRACE_DIR; NULL: not tracing */
	const struct staging *staging; /* records_dir's, drained into the
				     evidence at the end (staging.h); may be NULL */
	struct phase_log *phases; /* the marker channels (phases.h); may be NULL */
	struct relay *relay;      /* the command's stdout and stderr (relay.h) */
	struct transcript *transcript; /* --output transcript (transcript.h); NULL */
};

struct live;
struct pview;
struct peaksites;
struct phase_log;
struct oomwatch;

/* What the run saw, for the merged view (merge.h), owned by the caller
 * after run_supervise(): release with run_views_free(). */
struct run_views {
	struct live *live;        /* NULL when not tracing (or unavailable) */
	struct pview *pview;      /* NULL only when out of memory */
	struct peaksites *sites;  /* sampled call sites at the tree's peaks;
				     NULL when not tracing */
	uint64_t start_ns;        /* CLOCK_MONOTONIC of the launch */
	pid_t command_sid;        /* the command's session as it started (its
				     pid, or memsup's at a terminal); 0 */
	int have_main;
	int main_status;          /* wait status of the command */
	struct oomwatch *oom;     /* the OOM kills (the record's "oom" points
				     into it); NULL when it could not be had */
};

int run_supervise(const struct run_config *cfg, struct evidence *ev,
		  struct sup_record *rec, struct run_views *views);
void run_views_free(struct run_views *v);

#endif /* MEMSUP_RUN_H */
