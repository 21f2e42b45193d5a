/* procs.h: what holds --max-procs N where no pids cgroup does: --cgroup
 * off, the fallback of users without rights, or a cgroup layout without a
 * writable pids controller.
 *
 * Without pids.max nothing refuses the (N+1)-th fork, and a fork bomb of
 * thousands of runnable processes can starve memsup, a CFS task like
 * them, of the CPU it needs to sample and kill (20 s without a sample
 * was seen).  What an unprivileged process has instead:
 *  - RLIMIT_NPROC, set for the command only (spawn.h): the kernel refuses
 *    a fork once the real uid has that many tasks.  It counts every task
 *    of the uid, threads included, as pids.max counts the cgroup's, so
 *    the limit is the uid's count now plus N.  It does not bind root (uid
 *    0) nor a holder of CAP_SYS_RESOURCE or CAP_SYS_ADMIN, and only counts
 *    right where the command runs under memsup's uid.
 *  - Where it does not bind: memsup keeps the CPU it needs -- a real-time
 *    priority (SCHED_FIFO 1: above every normal task, below every other
 *    real-time one; the kernel's RT throttling still leaves the machine
 *    5%), else the lowest nice it may take -- and the command gets back
 *    memsup's own scheduling before exec, unchanged.  The /proc scan then
 *    sees the (N+1)-th process and the run ends.
 * With pids.max memsup takes the same priority: the kernel holds the
 * count, but memsup must still see the refusal and end the run.
 * The record's "max_procs_by" says which held: "pids.max",
 * "rlimit_nproc" or "scan".
 *
 * Return convention: 0 or -errno.
 */
#ifndef MEMSUP_PROCS_H
#define MEMSUP_PROCS_H

#include <sched.h>
#include <stddef.h>
#include <sys/resource.h>

#include "contain/spawn.h"

enum procs_by {
	PROCS_BY_NONE = 0,         /* no --max-procs */
	PROCS_BY_PIDS_MAX,         /* the run's pids cgroup */
	PROCS_BY_RLIMIT,           /* RLIMIT_NPROC of the command */
	PROCS_BY_SCAN,             /* the sampler, memsup at a raised priority */
};

/* "pids.max", "rlimit_nproc", "scan"; NULL for none. */
const char *procs_by_name(enum procs_by by);

struct procs_plan {
	enum procs_by by;
	unsigned long uid_tasks;   /* RLIMIT: the uid's tasks before the start */
	struct spawn_limits limits; /* for the command (spawn.h) */
	const char *priority;      /* what memsup took: "SCHED_FIFO 1", "nice
				      -N", or NULL (none could be had) */
	char note[512];            /* a sentence for the record's notes, or "" */
};

/* Pure: the tasks of uid `uid` in /proc/PID/status text ("Uid:" first
 * field, the real one, and "Threads:"); 0 for another uid's or an
 * unreadable one. */
unsigned long procs_parse_status_tasks(const char *buf, size_t len, unsigned long uid);

/* The tasks real uid `uid` has now under proc root `root` (NULL: /proc). */
unsigned long procs_count_uid_tasks(const char *root, unsigned long uid);

/* PROCS_BY_RLIMIT: whether the uid has as many tasks as the command's
 * limit now -- the kernel refuses the tree's next fork, as pids.events
 * counts a refusal under pids.max.  The tree may have fewer than N then:
 * other processes of the uid share the limit. */
int procs_uid_at_limit(const struct procs_plan *p, const char *root);

/* Whether RLIMIT_NPROC binds memsup's processes (not root, neither
 * CAP_SYS_RESOURCE nor CAP_SYS_ADMIN effective), from /proc/self/status. */
int procs_rlimit_binds(const char *root);

/* Decide for --max-procs `max_procs` (0: nothing to do) with a pids
 * cgroup or not, and act on memsup's side: with PROCS_BY_SCAN, memsup's
 * priority is raised here (p->limits then restores it for the command).
 * Always succeeds; p->note says what could not be had. */
void procs_plan_make(struct procs_plan *p, unsigned max_procs, int have_pids, const char *root);

#endif /* MEMSUP_PROCS_H */
