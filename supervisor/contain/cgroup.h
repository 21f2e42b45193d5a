/* cgroup.h: what the three cgroup backends (cgroup2.c, hybrid.c,
 * cgroup1.c) share -- where memsup sits in each hierarchy, the run's
 * cgroups made below those places, and the run listed, sampled, limited,
 * measured and killed through their files.
 *
 * The hierarchies are looked for where systemd (and every container
 * runtime) mounts them, under one root (/sys/fs/cgroup; a fixture tree in
 * tests): cgroup v2 at the root itself (pure v2) or at root/unified (the
 * hybrid layout), the v1 controllers at root/memory, root/pids,
 * root/freezer.  memsup's own place in each comes from
 * PROC/SELF/cgroup.  The run's cgroup is ONLY ever made directly below
 * that place, named memsup-PID-run (PID: memsup's), so that it is found,
 * recognised and removed; cgroups of that name whose memsup is dead and
 * that hold no process are removed when a new run starts (the leftovers of
 * a memsup killed together with its sentinel).
 *
 * Membership is cgroup.procs (a read costs what the tree holds, not what
 * the machine runs); each member's RSS is its /proc/PID/statm read through
 * an fd held open, as tree.c does.
 *
 * The command may make cgroups of its own below the run's (a memsup inside
 * memsup, a test runner, systemd-run, a container): cgroup.procs lists
 * only a cgroup's own processes, so membership is the run's cgroup.procs
 * and every descendant's; the kill reaches them (cgroup.kill and
 * cgroup.freeze are recursive; v1's freezer is hierarchical, and each
 * descendant that froze itself is thawed so that its killed tasks can
 * die); and the end removes them bottom-up before the run's own, waiting
 * CG_REMOVE_WAIT_MS at most for the last tasks to leave.  What is left
 * then is named in the record, never waited on.
 *
 * Return convention: 0 or -errno.
 */
#ifndef MEMSUP_CGROUP_H
#define MEMSUP_CGROUP_H

#include <limits.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "contain/contain.h"
#include "base/pidmap.h"

#define CGROUP_ROOT "/sys/fs/cgroup"

/* The hierarchies memsup uses: v2 (pure or the hybrid's unified one) and
 * three v1 controllers. */
enum cg_hier { CG_V2 = 0, CG_MEMORY, CG_PIDS, CG_FREEZER, CG_NHIER };

enum cg_layout_kind {
	CG_LAYOUT_NONE = 0,        /* no hierarchy memsup can use */
	CG_LAYOUT_V2,              /* pure cgroup v2 */
	CG_LAYOUT_HYBRID,          /* v2 at root/unified beside v1 controllers */
	CG_LAYOUT_V1,              /* v1 controllers alone */
};

struct cg_layout {
	enum cg_layout_kind kind;
	char own[CG_NHIER][PATH_MAX]; /* memsup's own cgroup directory in each
					 hierarchy; "" where there is none */
	int own_is_root[CG_NHIER];    /* it is the hierarchy's root cgroup */
	char why[CONTAIN_MISSING_BYTES]; /* CG_LAYOUT_NONE: why */
};

/* Where memsup (`self`) sits, from proc_root/self/cgroup, and which
 * hierarchies root holds.  0 (kind may be CG_LAYOUT_NONE, with why), or
 * -errno when proc_root/self/cgroup cannot be read. */
int cgroup_layout(const char *root, const char *proc_root, pid_t self, struct cg_layout *out);

/* The layout's name for the record: "cgroup2", "hybrid", "cgroup1". */
const char *cgroup_layout_name(enum cg_layout_kind kind);

/* ---- files ------------------------------------------------------------------ */

/* Write `text` to dirfd/name (one write, as cgroupfs wants).  0 or -errno. */
int cgroup_write(int dirfd, const char *name, const char *text);
/* Read dirfd/name whole (cap-1 bytes at most), NUL-terminated. */
int cgroup_read(int dirfd, const char *name, char *buf, size_t cap, size_t *len);
/* Is there a file `name` in dirfd? */
int cgroup_has(int dirfd, const char *name);

/* Pure parsers. */
/* One number, or "max" (UINT64_MAX). */
int cgroup_parse_u64(const char *buf, size_t len, uint64_t *out);
/* The value of `key` in a flat keyed file ("key value" lines: memory.stat,
 * memory.events, pids.events, memory.oom_control); -ENOENT when absent. */
int cgroup_parse_key(const char *buf, size_t len, const char *key, uint64_t *out);
/* Is `word` one of the space-separated words of buf (cgroup.controllers,
 * cgroup.subtree_control)? */
int cgroup_has_word(const char *buf, size_t len, const char *word);
/* The pids of a cgroup.procs text, one a line, into out (at most cap);
 * returns how many lines there were (-EINVAL for garbage). */
long cgroup_parse_procs(const char *buf, size_t len, pid_t *out, size_t cap);

/* memory.stat's split, bytes, as either version names it. */
struct cg_memstat {
	uint64_t anon;             /* v2 "anon"; v1 "total_rss", which holds
				      "total_rss_huge" (cgroup-v1 memory.rst:
				      "includes transparent hugepages") */
	uint64_t file;             /* v2 "file"; v1 "total_cache": page cache,
				      tmpfs and shared memory */
	uint64_t shmem;            /* of file: v2 "shmem", v1 "total_shmem"
				      (0 where the kernel has no such key) */
	uint64_t kernel;           /* v2: "kernel" + "sock" (sock is charged to
				      memory.current but is not in "kernel");
				      before Linux 6.0, which has no "kernel",
				      the sum of its parts.  v1: 0, the kernel
				      memory is another file's
				      (memory.kmem.usage_in_bytes) */
};

/* How far memory.stat's parts may stand from the usage read just before
 * them: the counters' per-CPU lag (cgroup.c, read_memstat) is a few
 * hundred KB a CPU. */
#define CG_SPLIT_SLACK_BYTES (2u << 20)

/* 1 when the parts of `ms` (anon + file + kernel) add up to `usage`
 * within CG_SPLIT_SLACK_BYTES and 1/16 of it; 0 when the tree moved
 * between the two reads (cgroup_run_poll reads both again, and says
 * split_agrees 0 when they still disagree: an exiting member's pages are
 * out of anon before they are out of the usage).  Pure. */
int cgroup_split_agrees(uint64_t usage, const struct cg_memstat *ms);
/* A memory.stat text of cgroup v2 (v2 != 0) or v1, in one pass.  0, or
 * -EINVAL when anon or file is missing or a value it uses is no number.
 * Pure: the per-sample poll and the end-of-run figures both call it. */
int cgroup_parse_memstat(const char *buf, size_t len, int v2, struct cg_memstat *out);

/* ---- the run's cgroups ------------------------------------------------------- */

/* One cgroup of the run, in one hierarchy. */
struct cg_dir {
	int fd;                    /* O_DIRECTORY; -1: none in this hierarchy */
	int made;                  /* memsup made it: removed at the end */
	char path[PATH_MAX];
};

enum cg_kill {
	CG_KILL_NONE = 0,          /* no atomic way: the SIGSTOP sweeps */
	CG_KILL_FILE,              /* v2 cgroup.kill */
	CG_KILL_FREEZE,            /* v2 cgroup.freeze, SIGKILL, thaw */
	CG_KILL_FREEZER,           /* v1 freezer.state, SIGKILL, thaw */
};

/* A backend's state: every cgroup backend's struct is this one. */
struct cgrun {
	struct contain base;       /* first: a struct contain * is one of these */
	const char *proc_root;
	const char *root;          /* where the hierarchies are mounted */
	pid_t self;
	int premade;
	struct cg_layout layout;
	struct cg_dir dir[CG_NHIER];
	int v2_files;              /* memory and pids files are v2's (pure v2) */
	int memdir, pidsdir;       /* fds of the dirs holding the memory and
				      pids files (borrowed from dir[]); -1 */
	enum cg_kill kill;
	int procs_fd;              /* cgroup.procs the members are listed from */
	int procs_fresh;           /* v1: opened anew for each listing (its
				      held fd serves a cached list) */
	int list_dir;              /* the dir of procs_fd (borrowed from dir[]):
				      its descendants are listed too */
	int cgstat_fd;             /* v2 cgroup.stat of list_dir: a walk only
				      when nr_descendants is not 0; -1 on v1
				      (walked at every listing) */
	int below_fd;              /* inotify on list_dir (IN_CREATE): told
				      when a cgroup is made below it; -1 */
	int below;                 /* a cgroup below list_dir may exist: the
				      listing looks (cgroup.stat, or the walk);
				      0 while below_fd has told of none */
	int finish_tried;          /* a finish gave up on some cgroup: the next
				      tries once, without waiting */
	int join_fd[CG_NHIER];     /* cgroup.procs the command joins before exec
				      (v1; the v2 one: spawn.h) */
	int usage_fd;              /* memory.current / memory.usage_in_bytes */
	int stat_fd;               /* memory.stat */
	int kmem_fd;               /* v1 memory.kmem.usage_in_bytes */
	int failcnt_fd;            /* v1 memory.failcnt: read only under a
				      limit of the run's own (own_limit) */
	int own_limit;             /* v1: memsup set memory.limit_in_bytes */
	int limit_fd;              /* --mem-max: memory.max / memory.limit_in_bytes,
				      read back at samples (the command may
				      change it); -1 */
	uint64_t limit_set;        /* what it said once memsup set it (v1 rounds
				      down to pages) */
	char limit_text[32];       /* what memsup wrote, to write again */
	int memsw_failcnt_fd;      /* v1 memory.memsw.failcnt, with --mem-max */
	int pids_events_fd;        /* pids.events, with --max-procs */
	int oom_fd;                /* memory.events / memory.oom_control */
	int left;                  /* a member left since the last listing:
				      an OOM kill may have counted */
	int have_events;           /* the counters below, as last read */
	uint64_t oom_kills, limit_hits;
	int event_fd;              /* v1: an eventfd on memory.oom_control; v2:
				      oom_fd itself (POLLPRI) */
	short event_events;
	int watch_fd;              /* v1: the eventfd of the usage thresholds
				      (contain_watch); -1 none armed */
	int proc_fd;               /* the proc root, for statm */
	/* memory.stat's split as last read, and the usage it was read at:
	 * kept while the usage stays the same, for up to
	 * CG_SPLIT_KEEP_SAMPLES samples (cgroup_run_poll) */
	int have_split;
	struct cg_memstat split;
	uint64_t split_usage;
	unsigned split_kept;
	/* membership */
	char *buf;                 /* cgroup.procs text */
	size_t buf_cap;
	pid_t *pids;
	size_t npids, pids_cap;
	struct pidmap members;     /* struct cg_member: the statm fd per pid */
	/* the walk below list_dir, paced by its own cost (list_procs): the
	 * pids it found, listed again by the samples until the next walk */
	pid_t *below_pids;
	size_t below_n, below_cap;
	int below_cached;          /* below_pids holds a walk's pids */
	size_t cached_from;        /* r->pids[cached_from..] came from
				      below_pids this listing; npids: none */
	uint64_t next_walk_ns;     /* no walk for a sample before this */
	int walk_paced;            /* a sample has reused a walk */
	uint64_t walk_pace_max_ns; /* the longest pace after such a sample */
	int walk_noted;            /* the record says so (cgroup_run_finish) */
	unsigned round;            /* listing number, marks who was seen */
	struct tree_member *smp;
	size_t nsmp, smp_cap;
	/* pure v2's arrangement (cgroup2.c): what memsup changed to have the
	 * memory and pids controllers, undone at the end */
	char enabled[64];          /* "+memory +pids" it wrote, or "" */
	struct cg_dir sup;         /* memsup-PID-sup, where memsup moved itself */
};

/* The start of every backend's open: the layout detected, which must be
 * one of `kinds` (a mask of 1u << enum cg_layout_kind; else -ENOTSUP),
 * and a new struct with every fd -1 in *out. */
int cgroup_run_begin(struct cgrun **out, const struct contain_ops *ops,
		     const struct contain_config *cfg, unsigned kinds);

/* Its end, once the backend made its dirs: cgroup_setup(), then *out.  On
 * failure what was made is removed and r freed (by its ops' close). */
int cgroup_run_end(struct cgrun *r, const struct contain_config *cfg,
		   struct contain_info *info, struct contain **out);

/* Remove own/memsup-PID-{run,sup} of memsups that are gone, with the
 * cgroups below them (bottom-up), when none of them holds a process. */
void cgroup_sweep_stale(const char *own, pid_t self);

/* How long the end of a run waits, in all, for cgroups that are still busy
 * (their last tasks leaving) before it names them in the record. */
#define CG_REMOVE_WAIT_MS 3000
/* The walk holds two fds a level this deep; below it goes on by path, with
 * none held (cgroup.c, walk_deep), as deep as PATH_MAX allows. */
#define CG_WALK_DEPTH 32

/* fn(parentfd, name, fd, path, ctx) for every cgroup below the one open at
 * dirfd, whose path is `path` (PATH_MAX bytes, restored on return),
 * children before their parent.  A negative return from fn stops the walk
 * and is returned; else 0.  A cgroup that goes while walked is skipped. */
typedef int (*cgroup_visit_fn)(int parentfd, const char *name, int fd, const char *path,
			       void *ctx);
int cgroup_walk_below(int dirfd, char *path, cgroup_visit_fn fn, void *ctx);

/* Make (or, premade, open) own/memsup-PID-<suffix> in hierarchy h into
 * *d.  0 or -errno. */
int cgroup_make(struct cgrun *r, const char *own, const char *suffix, struct cg_dir *d);

/* Make the run's cgroups in the v1 memory, pids and freezer hierarchies
 * that exist, saying in info what could not be made.  Returns how many;
 * when none could be made, the first -errno (0: no such hierarchy). */
int cgroup_make_v1(struct cgrun *r, struct contain_info *info);

/* After the dirs are made: pick the membership file, the kill, the files a
 * sample reads, set --max-procs and --mem-max, fill info (paths, kill,
 * memory, pids, missing).  0, or -errno (-ENOTSUP: --mem-max without a
 * memory cgroup) with the reason in info. */
int cgroup_setup(struct cgrun *r, const struct contain_config *cfg, struct contain_info *info);

/* The ops every cgroup backend shares. */
void cgroup_run_close(struct contain *c);
const char *cgroup_run_name(const struct contain *c);
int cgroup_run_start(struct contain *c, const struct spawn_request *req, struct spawn_result *res);
int cgroup_run_members(struct contain *c, const pid_t **pids, size_t *n);
int cgroup_run_sample(struct contain *c, uint64_t *rss, unsigned *nprocs);
size_t cgroup_run_sampled(const struct contain *c, const struct tree_member **out);
int cgroup_run_poll(struct contain *c, struct contain_state *st);
int cgroup_run_event_fd(const struct contain *c, short *events);
int cgroup_run_figures(struct contain *c, struct contain_figures *f);
int cgroup_run_watch(struct contain *c, uint64_t low, uint64_t high);
int cgroup_run_watch_fd(const struct contain *c);
void cgroup_run_unwatch(struct contain *c);
const char *cgroup_run_unwatchable(const struct contain *c);
int cgroup_run_below_fd(const struct contain *c);
void cgroup_run_below_told(struct contain *c);
int cgroup_run_kill_all(struct contain *c, const pid_t *members, size_t n);
/* rmdir every dir made and the cgroups below it, bottom-up, waiting
 * CG_REMOVE_WAIT_MS in all for the last tasks to leave (none on a second
 * call); those left are named in info->left. */
int cgroup_run_finish(struct contain *c);

/* A backend's ops table: its own open and close, the rest shared. */
#define CGROUP_RUN_OPS(open_fn, close_fn)                                        \
	{                                                                        \
		.open = (open_fn), .close = (close_fn), .name = cgroup_run_name,  \
		.start = cgroup_run_start, .members = cgroup_run_members,         \
		.sample = cgroup_run_sample, .sampled = cgroup_run_sampled,       \
		.poll = cgroup_run_poll, .event_fd = cgroup_run_event_fd,         \
		.watch = cgroup_run_watch, .watch_fd = cgroup_run_watch_fd,       \
		.unwatch = cgroup_run_unwatch,                                    \
		.unwatchable = cgroup_run_unwatchable,                            \
		.below_fd = cgroup_run_below_fd,                                  \
		.below_told = cgroup_run_below_told,                              \
		.figures = cgroup_run_figures, .kill_all = cgroup_run_kill_all,   \
		.finish = cgroup_run_finish,                                      \
	}

#endif /* MEMSUP_CGROUP_H */
