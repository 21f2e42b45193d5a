/* track.h: every process of the run, held by pidfd, so that the end of the
 * run kills it wherever it went.
 *
 * A cgroup keeps a tree together only while its members stay: a process
 * of the command may write its pid into another cgroup of any hierarchy
 * (it needs only write access to that cgroup.procs, which root has
 * everywhere) and is then no member any more -- neither listed, nor
 * reached by cgroup.kill or the freezer.  But memsup is the run's child
 * subreaper, so such a process stays its descendant, and every sample has
 * seen most of them as members already.  The registry keeps:
 *  - every pid a listing gave (track_note, per sample), with a pidfd
 *    opened at first sight: the pidfd names that process and no later one
 *    with its number (pid_max can be 32768; a fork bomb cycles it in
 *    seconds), so the end never signals a stranger;
 *  - at the end (track_sweep), memsup's descendants too, found by a /proc
 *    scan (tree.h): what was born and left between two samples.
 * track_sweep stops every one still alive until a search finds no one new
 * (a stopped process forks no more), tells the caller who left the run's
 * cgroups and which of them, then kills them all.
 *
 * Where the kernel has no pidfd_open (before 5.3), or memsup's fds run
 * out, an entry keeps the start time instead, checked against /proc right
 * before each signal.
 *
 * Return convention: 0 or -errno.  Not thread-safe; one per run.
 */
#ifndef MEMSUP_TRACK_H
#define MEMSUP_TRACK_H

#include <stddef.h>
#include <sys/types.h>

#include "contain/contain.h" /* struct tree_member */

struct track;

/* The cgroup hierarchies a process left, comma-separated as
 * /proc/PID/cgroup names them ("v2" for the unified one, else the v1
 * controllers, e.g. "v2,memory,pids,freezer"). */
#define TRACK_LEFT_BYTES 96

/* How track_sweep() waits and reports; see contain_waiter (contain.h).
 * found(ctx, pid, left) is told each process that left the run's cgroups
 * (left: which of them), while it is stopped and before it is killed. */
struct track_waiter {
	void (*wait)(void *ctx, int ms);
	void (*found)(void *ctx, pid_t pid, const char *left);
	void *ctx;
};

/* A registry for the run memsup (`self`) supervises under proc root
 * `proc_root` (NULL: "/proc"; the string must outlive the registry). */
int track_open(struct track **out, const char *proc_root, pid_t self);
/* Closes every pidfd. */
void track_close(struct track *t);

/* memsup's own processes (its sentinel, children from before the run):
 * never the run's, nor their descendants (up to TREE_EXCLUDE_MAX). */
void track_exclude(struct track *t, pid_t pid);

/* The run's cgroups: those the command's main process `pid` is in now
 * (it starts in them), where they differ from memsup's own.  Call once,
 * right after the start; without it (or without cgroups) no process is
 * said to have left anything. */
void track_set_home(struct track *t, pid_t pid);

/* A listing of the members: pids not held yet are held; held ones missing
 * from the listing are checked, and forgotten once dead.  Out of memory,
 * a pid is simply not held (the end's scan of descendants still finds
 * it). */
void track_note(struct track *t, const pid_t *pids, size_t n);
/* The same for a sample's members (contain_sampled()). */
void track_note_members(struct track *t, const struct tree_member *m, size_t n);

/* Which of the run's hierarchies `pid` has left, into out (cap bytes,
 * TRACK_LEFT_BYTES is enough): "" when none, or when it is gone. */
void track_left(const struct track *t, pid_t pid, char *out, size_t cap);

/* How many processes are held (alive or not yet found dead). */
size_t track_count(const struct track *t);

/* The end: every held process and every descendant of memsup still alive
 * is stopped, those outside the run's cgroups reported to w->found, then
 * all SIGKILLed; waits (w->wait, which reaps) up to `wait_ms` for them to
 * die.  Returns how many it killed (0: the containment's kill had missed
 * no one), or -errno when memsup's descendants could not be listed. */
int track_sweep(struct track *t, const struct track_waiter *w, int wait_ms);

#endif /* MEMSUP_TRACK_H */
