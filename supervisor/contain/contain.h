/* contain.h: the processes of one run, behind one interface -- starting
 * the command among them, listing them, measuring them, limiting them,
 * killing them all, and cleaning up after them.
 *
 * A backend is one way the kernel offers to keep a process tree together;
 * each is a `struct contain_ops` in a file of its own, picked by
 * contain_open().  run.c calls only the contain_* functions and never asks
 * which backend it has.
 *
 *   cgroup2.c   a cgroup of the run's own in a pure cgroup v2 hierarchy
 *               (memsup's own cgroup writable: root, or a delegated one)
 *   hybrid.c    the v2 unified hierarchy for membership and killing, plus
 *               the v1 memory, pids and freezer hierarchies beside it
 *   cgroup1.c   the v1 memory, pids and freezer hierarchies alone
 *   procscan.c  the /proc scan (tree.h): memsup, a child subreaper, finds
 *               its descendants by ppid links or children files; needs no
 *               privilege.  The fallback, and what --cgroup off asks for.
 * The three cgroup backends share their machinery (cgroup.h).
 *
 * Killing is written once, here: list the members, tell the caller who
 * they are, then kill them all at once (a backend's kill_all: cgroup.kill,
 * or freeze, SIGKILL, thaw) or, without an atomic way, SIGSTOP every
 * member until a listing finds no new one, then SIGKILL each and each
 * process group seen; list again, until a listing comes back empty.  It
 * never gives up while a member can still die: only when every member left
 * has been in uninterruptible sleep (D) for KILL_STUCK_S seconds.
 *
 * Return convention: 0 or -errno.  Not thread-safe; one per run.
 */
#ifndef MEMSUP_CONTAIN_H
#define MEMSUP_CONTAIN_H

#include <limits.h>
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

/* --cgroup: whether memsup tries a cgroup of the run's own. */
enum contain_request {
	CONTAIN_AUTO = 0,          /* a cgroup where memsup can make one */
	CONTAIN_OFF,               /* the /proc scan */
};

struct scope_outcome;          /* scope.h */

/* One member of the tree, as a sample read it. */
struct tree_member {
	pid_t pid;
	uint64_t rss;              /* bytes */
	uint64_t text_pages;       /* statm's text, of the memory the rss is
				      of: which image it was (pview.c) */
};

struct contain_config {
	const char *proc_root;     /* "/proc"; must outlive the containment */
	pid_t self;                /* memsup: the tree is its descendants */
	enum tree_method discovery;
	enum contain_request cgroup;
	const char *cgroup_root;   /* where the hierarchies are mounted; NULL:
				      "/sys/fs/cgroup" (a fixture tree in tests) */
	unsigned max_procs;        /* --max-procs: pids.max where there is a
				      pids controller; 0 none */
	uint64_t mem_max;          /* --mem-max, bytes: the kernel's memory
				      limit; 0 none (needs a memory cgroup) */
	/* what asking systemd for a scope of memsup's own did (scope.h); NULL:
	 * not asked */
	const struct scope_outcome *scope;
	int premade;               /* tests only: the run's cgroups exist
				      already in the fixture tree (a plain
				      directory has no kernel to make a
				      cgroup's files appear) and are not
				      removed */
};

/* How contain_kill() waits between rounds: wait(ctx, ms) sleeps up to ms,
 * waking early for a signal, and reaps what has ended (the members are
 * the caller's descendants: until it reaps them they linger as zombies).
 * found(ctx, pid), when not NULL, is told each member a SIGKILL round
 * finds, before it is killed: the leftovers of a run whose main process
 * has ended.  stuck, when not NULL, gets (cap bytes) "pid N (comm), ..."
 * of the members left in D state when contain_kill() gives up. */
struct contain_waiter {
	void (*wait)(void *ctx, int ms);
	void (*found)(void *ctx, pid_t pid);
	void *ctx;
	char *stuck;
	size_t stuck_cap;
	/* when not NULL: 1 ends the grace at once (a signal to memsup while
	 * it waited: whoever sent it wants the end now, not in grace_s) */
	int (*hurry)(void *ctx);
};

#define CONTAIN_MAX_NOTES 4u
#define CONTAIN_MAX_PATHS 4u
#define CONTAIN_MAX_MISSING 6u
#define CONTAIN_MISSING_BYTES 320u
/* Cgroups the end of a run could not remove, named in the record (the
 * first few; n_left counts them all). */
#define CONTAIN_MAX_LEFT 4u
#define CONTAIN_LEFT_WHY_BYTES 160u
/* MEMSUP_DEBUG=1 (debug.h): contain_open says its choice on stderr
 * (contain.c). */
/* Give up killing when only processes in D state were left this long. */
#define KILL_STUCK_S 5

/* What the record says of the containment ("containment"). */
struct contain_info {
	const char *mode;          /* "cgroup2", "hybrid", "cgroup1", "procscan" */
	const char *requested;     /* "auto" or "off" */
	const char *kill;          /* "cgroup.kill", "cgroup.freeze", "freezer"
				      or "stop-and-kill" (SIGSTOP sweeps, then
				      SIGKILL to every process and group) */
	int memory;                /* a memory cgroup: kernel figures, --mem-max */
	int pids;                  /* a pids cgroup: --max-procs is pids.max */
	char paths[CONTAIN_MAX_PATHS][PATH_MAX]; /* the run's cgroups */
	size_t n_paths;
	int memory_path;           /* which of paths is the memory cgroup's
				      directory; -1 none */
	int memory_v2;             /* it has v2's files (memory.events, ...) */
	char missing[CONTAIN_MAX_MISSING][CONTAIN_MISSING_BYTES]; /* what was
				      missing, or could not be done, and why */
	size_t n_missing;
	const char *hint;          /* a fallback: what would give the user a
				      cgroup without root; NULL */
	char scope[64];            /* the systemd scope memsup moved itself
				      into for the run (scope.h); "" none */
	const char *scope_manager; /* "system" or "user"; NULL with no scope */
	/* filled by contain_finish(): the run's cgroups, or cgroups the
	 * command made below them, that were still there when memsup stopped
	 * trying ("containment.cgroups_left") */
	struct contain_left {
		char path[PATH_MAX];
		char why[CONTAIN_LEFT_WHY_BYTES];
	} left[CONTAIN_MAX_LEFT];
	size_t n_left;             /* may pass CONTAIN_MAX_LEFT: the rest unnamed */
};

/* The kernel's view of the run now, per sample; a figure the backend does
 * not have (the /proc scan, a cgroup without the memory controller) stays
 * 0 and its have_ flag unset. */
struct contain_state {
	int have_usage;
	uint64_t usage;            /* memory.current / memory.usage_in_bytes */
	/* memory.stat's split, bytes: four parts that stack to about usage
	 * (cgroup.c says how close, and why not exactly) */
	int have_split;
	int split_agrees;          /* the parts add up to the usage (cgroup.h,
				      cgroup_split_agrees); not when a member
				      was exiting as they were read */
	uint64_t anon;             /* anonymous memory, huge pages included */
	uint64_t page_cache;       /* file pages but shared memory: file - shmem */
	uint64_t shmem;            /* tmpfs, shm_open, shared anonymous */
	uint64_t kernel;           /* kernel memory charged to the cgroup (v2
				      kernel + sock; v1 memory.kmem.usage_in_bytes) */
	/* the limit's event counters since the run began (the cgroup's own
	 * limit, or an outer one whose OOM killer took a member) */
	int have_events;
	uint64_t limit_hits;       /* v2 memory.events "max", v1 memory.failcnt
				      (+ memory.memsw.failcnt under --mem-max) */
	uint64_t oom_kills;        /* processes the OOM killer took */
	uint64_t forks_refused;    /* pids.events "max": forks pids.max refused */
	/* --mem-max undone by the command (a root command may write the
	 * run's cgroup files): the limit it found at this sample instead of
	 * memsup's (0: it was memsup's), and whether memsup's went back in
	 * (1) or could not (-errno: the tree holds more than it) */
	uint64_t limit_found;
	int limit_restored;
	int oom_reenabled;         /* v1: the command had set oom_kill_disable,
				      which hangs the tree at the limit for
				      good; memsup turned the OOM killer back on */
};

/* The memory figures of the run's cgroup, exact from the kernel. */
struct contain_figures {
	int have_peak;
	uint64_t peak;             /* memory.peak / memory.max_usage_in_bytes */
	int have_stat;
	uint64_t anon, file, kernel; /* memory.stat, now, as contain_state's
				      (file: page_cache + shmem) */
	int have_oom;
	uint64_t oom_kills;
	int have_pids;
	uint64_t forks_refused;
};

/* ---- the interface -------------------------------------------------------- */

struct contain;

/* Before anything is created: would contain_open() work with cfg?  0, or
 * -1 with one line in err naming the option ("--discovery: ...",
 * "--mem-max: ..."). */
int contain_check(const struct contain_config *cfg, char *err, size_t errlen);

/* Pick the backend and open it: the run's cgroups made (limits set)
 * under memsup's own, or the /proc scan when --cgroup off or when no
 * cgroup can be made (contain_info() says why).  *out is owned by the
 * caller. */
int contain_open(struct contain **out, const struct contain_config *cfg);
/* Frees it; removes the run's cgroups first when contain_finish() was not
 * called. */
void contain_close(struct contain *c);

/* How the tree is found, for the record's "discovery": "cgroup", "scan",
 * "children". */
const char *contain_name(const struct contain *c);

/* Sentences for the record's "notes": what the backend could not do (a
 * kernel feature missing, ...).  Valid until contain_close(). */
size_t contain_notes(const struct contain *c, const char *const **notes);

/* What the record says of it; valid until contain_close(). */
const struct contain_info *contain_info(const struct contain *c);
/* from into to, as far as its counts say something is there (every reader
 * goes by them): the rest of a contain_info's 35 KB, room for paths and
 * reasons, is neither read nor written, and its pages are never touched
 * (each first touch a page fault). */
void contain_info_copy(struct contain_info *to, const struct contain_info *from);

/* Start the command inside (spawn.h's contract: 0 with *res filled, or
 * -errno when nothing started).  The command is a member from before its
 * first instruction. */
int contain_start(struct contain *c, const struct spawn_request *req, struct spawn_result *res);

/* List the members now.  *pids is valid until the next call. */
int contain_members(struct contain *c, const pid_t **pids, size_t *n);

/* One sample: the summed RSS of every member that could be read, and how
 * many there were (a member gone since the last listing is skipped, never
 * counted as zero); contain_sampled() gives the terms of the sum, valid
 * until the next sample. */
int contain_sample(struct contain *c, uint64_t *rss, unsigned *nprocs);
size_t contain_sampled(const struct contain *c, const struct tree_member **out);

/* The kernel's counters now (one read of each file that is there; none
 * for the /proc scan). */
int contain_poll(struct contain *c, struct contain_state *st);

/* An fd that becomes ready (for *events) when the kernel has news worth a
 * sample at once (an OOM kill); -1 when there is none. */
int contain_event_fd(const struct contain *c, short *events);

/* The run's memory moving, told by the kernel (so that sampling
 * follows the memory).  contain_watch() arms it: the fd contain_watch_fd()
 * gives turns readable (POLLIN) once the run's memory usage has crossed
 * `low` or `high`, either way, after the call (cgroup v1: two thresholds
 * on memory.usage_in_bytes through cgroup.event_control, one eventfd for
 * both; the kernel checks them every 128 page events a CPU, so a crossing
 * is told within about half a megabyte of charges).  A new call replaces
 * what was armed (the old eventfd closed: that is what unregisters it);
 * contain_unwatch() drops it; contain_close() releases it.  low 0: no low
 * mark.  0, or -errno with nothing armed (-ENOTSUP: the backend cannot). */
int contain_watch(struct contain *c, uint64_t low, uint64_t high);
int contain_watch_fd(const struct contain *c);
void contain_unwatch(struct contain *c);
/* NULL when contain_watch() can work here, else why not: a sentence for
 * the record (no memory cgroup, cgroup v2's core files have no usage
 * threshold, ...), valid until contain_close(). */
const char *contain_unwatchable(const struct contain *c);

/* The listing's own news: an fd that turns readable (POLLIN) when a
 * cgroup is made below the run's (a process moved there leaves the run's
 * own cgroup.procs).  Until it has, a sample lists the run's cgroup.procs
 * alone, without looking below (no cgroup.stat read, no walk); then
 * contain_below_told() drains it, and from then on every listing looks
 * below, as before the fd existed.  The fd is checked by the caller's
 * poll, before a sample; a cgroup made, and a process moved into it,
 * between that poll and the sample's listing leaves that process out of
 * that one sample, and the fd tells the next poll at once: the caller
 * samples again then.  contain_members() (the kill's listing) always looks
 * below.  -1: none (every listing looks below, or there is nothing below
 * to look at). */
int contain_below_fd(const struct contain *c);
void contain_below_told(struct contain *c);

/* The memory figures now (all unset for the /proc scan). */
int contain_figures(struct contain *c, struct contain_figures *f);

/* Kill every member.  grace_s > 0: SIGTERM first, SIGKILL whatever is left
 * after grace_s; else SIGKILL at once.  0 once a listing is empty (a
 * listing that fails counts as empty); -EBUSY when every member left had
 * been in D state for KILL_STUCK_S s (named in w->stuck). */
int contain_kill(struct contain *c, double grace_s, const struct contain_waiter *w);

/* Remove the run's cgroups (and undo what memsup changed to make them),
 * with every cgroup the command made below them, bottom-up.  Waits a
 * bounded, short time for the last tasks to leave; what is still there
 * then is named in contain_info()->left, never waited on again (a second
 * call tries once more, without waiting).  Call after contain_kill();
 * again after a success is a no-op.  0, or the first error. */
int contain_finish(struct contain *c);

/* `pid` is memsup's own (its sentinel, or a child it had before the run),
 * not the run's, whatever its parent: never a member, nor its descendants
 * (up to 64 such pids). */
void contain_exclude(struct contain *c, pid_t pid);

/* From another process than memsup (the sentinel), once memsup is gone:
 * kill whatever of the run is left (the cgroup, or what the /proc can
 * still tell of the tree) and remove the cgroups.  0 or -errno. */
int contain_abandon(struct contain *c);

/* ---- for backends ---------------------------------------------------------- */

/* A backend's operations.  check and open are the backend's entry points:
 * open allocates the backend's struct, whose first member is the struct
 * contain below, and sets its ops; it fills `info` (the caller copies it
 * into the struct) -- mode, kill, paths, and a line in missing for each
 * thing it could not have -- and fails (-errno, nothing left made) when it
 * cannot be used here, with the reason in missing.  NULL members get the
 * generic behaviour:
 * poll, event_fd, figures: nothing to say; watch: -ENOTSUP (unwatchable
 * says why; NULL unwatchable: no memory cgroup); kill_all: no atomic kill (the
 * SIGSTOP sweeps); finish: nothing to remove; abandon: contain_kill() with
 * a sleeping waiter, then finish; exclude: nothing to do (a cgroup holds
 * only what was started in it). */
struct contain_ops {
	int (*check)(const struct contain_config *cfg, char *err, size_t errlen);
	int (*open)(struct contain **out, const struct contain_config *cfg,
		    struct contain_info *info);
	void (*close)(struct contain *c);
	const char *(*name)(const struct contain *c);
	int (*start)(struct contain *c, const struct spawn_request *req, struct spawn_result *res);
	int (*members)(struct contain *c, const pid_t **pids, size_t *n);
	int (*sample)(struct contain *c, uint64_t *rss, unsigned *nprocs);
	size_t (*sampled)(const struct contain *c, const struct tree_member **out);
	int (*poll)(struct contain *c, struct contain_state *st);
	int (*event_fd)(const struct contain *c, short *events);
	int (*watch)(struct contain *c, uint64_t low, uint64_t high);
	int (*watch_fd)(const struct contain *c);
	void (*unwatch)(struct contain *c);
	const char *(*unwatchable)(const struct contain *c);
	int (*below_fd)(const struct contain *c);
	void (*below_told)(struct contain *c);
	int (*figures)(struct contain *c, struct contain_figures *f);
	/* every member at once; members[0..n) is the listing just made */
	int (*kill_all)(struct contain *c, const pid_t *members, size_t n);
	int (*finish)(struct contain *c);
	int (*abandon)(struct contain *c);
	void (*exclude)(struct contain *c, pid_t pid);
};

struct contain {
	const struct contain_ops *ops;
	const char *proc_root;     /* the config's, for the kill loop */
	const char *notes[CONTAIN_MAX_NOTES];
	size_t n_notes;
	struct contain_info info;
	int finished;              /* contain_finish() ran */
};

/* A note for the record (the string must outlive the containment). */
void contain_note(struct contain *c, const char *note);
/* One line of info->missing, printf-style (dropped past the last). */
void contain_missing(struct contain_info *info, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

extern const struct contain_ops contain_procscan_ops; /* procscan.c */
extern const struct contain_ops contain_cgroup2_ops;  /* cgroup2.c */
extern const struct contain_ops contain_hybrid_ops;   /* hybrid.c */
extern const struct contain_ops contain_cgroup1_ops;  /* cgroup1.c */

#endif /* MEMSUP_CONTAIN_H */
