/* contain.h: the processes of one run, behind one interface -- starting
 * the command among them, listing them, measuring them, killing them all.
 *
 * A backend is one way the kernel offers to keep a process tree together;
 * each is a `struct contain_ops` in a file of its own, picked by
 * contain_open().  run.c calls only the contain_* functions and never asks
 * which backend it has.
 *
 *   procscan.c  the /proc scan (tree.h): memsup, a child subreaper, finds
 *               its descendants by ppid links or children files; needs no
 *               privilege.  The only backend today.
 *   cgroup v2, v1 and the hybrid layout come as files of their own: a new
 *   `struct contain_ops`, a line in contain_open(), nothing in run.c.
 *
 * Killing is written once, here, in terms of the backend's `members`: list,
 * signal every member, wait (the caller reaps), list again, until a listing
 * comes back empty -- a member may fork between a listing and its SIGKILL.
 * A backend that can kill all at once (cgroup.kill) gives its own `kill`.
 *
 * Return convention: 0 or -errno.  Not thread-safe; one per run.
 */
#ifndef MEMSUP_CONTAIN_H
#define MEMSUP_CONTAIN_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "contain/spawn.h"

/* --discovery: how the /proc scan finds the tree (tree.h). */
enum tree_method {
	TREE_AUTO = 0,
	TREE_CHILDREN,
	TREE_SCAN,
};

/* One member of the tree, as a sample read it. */
struct tree_member {
	pid_t pid;
	uint64_t rss;              /* bytes */
};

struct contain_config {
	const char *proc_root;     /* "/proc"; must outlive the containment */
	pid_t self;                /* memsup: the tree is its descendants */
	enum tree_method discovery;
};

/* How contain_kill() waits between rounds: wait(ctx, ms) sleeps up to ms,
 * waking early for a signal, and reaps what has ended (the members are
 * the caller's descendants: until it reaps them they linger as zombies).
 * found(ctx, pid), when not NULL, is told each member a SIGKILL round
 * finds, before it is killed: the leftovers of a run whose main process
 * has ended. */
struct contain_waiter {
	void (*wait)(void *ctx, int ms);
	void (*found)(void *ctx, pid_t pid);
	void *ctx;
};

#define CONTAIN_MAX_NOTES 4u

/* ---- the interface -------------------------------------------------------- */

struct contain;

/* Before anything is created: would contain_open() work with cfg?  0, or
 * -1 with one line in err naming the option ("--discovery: ..."). */
int contain_check(const struct contain_config *cfg, char *err, size_t errlen);

/* Pick the backend and open it.  *out is owned by the caller. */
int contain_open(struct contain **out, const struct contain_config *cfg);
void contain_close(struct contain *c);

/* How the tree is found, for the record's "discovery": "scan", ... */
const char *contain_name(const struct contain *c);

/* Sentences for the record's "notes": what the backend could not do (a
 * kernel feature missing, ...).  Valid until contain_close(). */
size_t contain_notes(const struct contain *c, const char *const **notes);

/* Start the command inside (spawn.h's contract: 0 with *res filled, or
 * -errno when nothing started). */
int contain_start(struct contain *c, const struct spawn_request *req, struct spawn_result *res);

/* List the members now.  *pids is valid until the next call. */
int contain_members(struct contain *c, const pid_t **pids, size_t *n);

/* One sample: the summed RSS of every member that could be read, and how
 * many there were (a member gone since the last listing is skipped, never
 * counted as zero); contain_sampled() gives the terms of the sum, valid
 * until the next sample. */
int contain_sample(struct contain *c, uint64_t *rss, unsigned *nprocs);
size_t contain_sampled(const struct contain *c, const struct tree_member **out);

/* Kill every member.  grace_s > 0: SIGTERM first, SIGKILL whatever is left
 * after grace_s; else SIGKILL at once.  0 once a listing is empty (a
 * listing that fails counts as empty); -ETIMEDOUT when members were still
 * there 10 s after SIGKILL (uninterruptible sleep?). */
int contain_kill(struct contain *c, double grace_s, const struct contain_waiter *w);

/* ---- for backends ---------------------------------------------------------- */

/* A backend's operations.  check and open are the backend's entry points
 * (open allocates the backend's struct, whose first member is the struct
 * contain below, and sets its ops); kill may be NULL: the generic one. */
struct contain_ops {
	int (*check)(const struct contain_config *cfg, char *err, size_t errlen);
	int (*open)(struct contain **out, const struct contain_config *cfg);
	void (*close)(struct contain *c);
	const char *(*name)(const struct contain *c);
	int (*start)(struct contain *c, const struct spawn_request *req, struct spawn_result *res);
	int (*members)(struct contain *c, const pid_t **pids, size_t *n);
	int (*sample)(struct contain *c, uint64_t *rss, unsigned *nprocs);
	size_t (*sampled)(const struct contain *c, const struct tree_member **out);
	int (*kill)(struct contain *c, double grace_s, const struct contain_waiter *w);
};

struct contain {
	const struct contain_ops *ops;
	const char *notes[CONTAIN_MAX_NOTES];
	size_t n_notes;
};

/* A note for the record (the string must outlive the containment). */
void contain_note(struct contain *c, const char *note);

extern const struct contain_ops contain_procscan_ops; /* procscan.c */

#endif /* MEMSUP_CONTAIN_H */
