/* sentinel.h: the small process that makes sure nothing of a run outlives
 * memsup, even a memsup killed by SIGKILL.
 *
 * sentinel_start() forks it after the containment is open and before the
 * command starts, so it sits outside the run's cgroup, in memsup's own.  It
 * leaves memsup's session (a signal to memsup's process group -- a
 * terminal's ^C, `timeout -s KILL` -- does not reach it) and waits on a
 * pipe from memsup, and on the parent-death signal.  When memsup ends
 * normally it says so (sentinel_stop()) and the sentinel exits, touching
 * nothing.  When memsup dies first, the pipe reads EOF (or the signal
 * comes): the sentinel kills whatever is left of the run (contain_abandon:
 * the cgroup, or, without one, the tree it can still find through /proc),
 * removes the cgroups, moves the records still staged on a tmpfs into the
 * evidence (staging.h), and marks the record's reason "supervisor_killed"
 * (evidence_mark_killed()), then exits.
 *
 * Return convention: 0 or -errno.
 */
#ifndef MEMSUP_SENTINEL_H
#define MEMSUP_SENTINEL_H

#include <sys/types.h>

struct contain;
struct relay;

struct sentinel {
	pid_t pid;                 /* 0: none */
	int fd;                    /* memsup's end of the pipe; -1 */
};

/* Fork the sentinel over containment c and the evidence directory dirfd
 * (both stay memsup's to use and close; the sentinel has copies).  When
 * memsup dies it also drains `staging` (NULL: none) into the evidence
 * (staging.h), so that no record stays in /dev/shm.  The sentinel closes
 * its copies of `relay`'s fds (NULL: none), so that the command's output
 * pipes end and break with memsup's ends alone. */
struct staging;
int sentinel_start(struct sentinel *s, struct contain *c, int dirfd,
		   const struct staging *staging, struct relay *relay);

/* memsup's own end: tell the sentinel, and reap it. */
void sentinel_stop(struct sentinel *s);

#endif /* MEMSUP_SENTINEL_H */
