/* oomlimit.h: which memory limit an OOM kill in the run came from, told by
 * the cgroups' own counters.
 *
 * The kernel's log names the cgroup whose limit fired (kmsg.h); where it
 * cannot be read (kernel.dmesg_restrict without CAP_SYSLOG) the counters
 * still can.  Each level from the run's memory cgroup up to the root of
 * its hierarchy keeps, from the run's start, the counter that moves when
 * that level's own limit refuses a charge:
 *   v2  memory.events.local "oom" (Linux 5.2; before it memory.events,
 *       which counts the levels below too -- the lowest level that moved
 *       is still the one that fired)
 *   v1  memory.failcnt, plus memory.memsw.failcnt where there is one
 * and the kills the whole machine counts (/proc/vmstat oom_kill, Linux
 * 4.13).  After a kill, the lowest level whose counter moved and that has
 * a limit is the one that fired; the run's own level moving means the
 * run's limit (--mem-max), and nothing moving but vmstat, the machine.
 * A failcnt rises at every refused charge, reclaim often satisfying the
 * next one, so v1 can name a level that was merely pressed: such an
 * answer is marked inferred by the caller, with these counts as its
 * evidence.
 *
 * Files are opened by path when asked, not held: this runs once a kill,
 * never at a sample.  Return convention: 0 or -errno. */
#ifndef MEMSUP_OOMLIMIT_H
#define MEMSUP_OOMLIMIT_H

#include <limits.h>
#include <stddef.h>
#include <stdint.h>

/* Levels kept above the run's own (a deeper tree's upper levels are not
 * looked at: they are named "unknown" if they fired). */
#define OOMLIMIT_LEVELS 12

enum oom_by {
	OOM_BY_UNKNOWN = 0,
	OOM_BY_RUN,      /* the run's own cgroup: --mem-max */
	OOM_BY_INSIDE,   /* a cgroup the command made below the run's */
	OOM_BY_ABOVE,    /* a cgroup above the run's: a job, container, unit */
	OOM_BY_MACHINE,  /* the global OOM killer */
	OOM_BY_COUNT
};

/* "run", "inside", "above", "machine", "unknown". */
const char *oomlimit_by_name(enum oom_by by);

struct oomlimit_level {
	char path[PATH_MAX];       /* the directory */
	int have;                  /* its counter could be read at the start */
	uint64_t base;             /* the counter then */
};

struct oomlimit {
	int v2;
	char mount[PATH_MAX];      /* the hierarchy's root directory (where
				      its file system is mounted) */
	struct oomlimit_level lvl[OOMLIMIT_LEVELS + 1]; /* [0]: the run's */
	size_t n;
	int have_vmstat;
	uint64_t vmstat_base;
	const char *vmstat_path;   /* "/proc/vmstat" unless a test says */
};

/* What a kill's limit was, as the counters tell it. */
struct oomlimit_answer {
	enum oom_by by;
	char cgroup[PATH_MAX];     /* the level, as a path below the mount
				      ("/a/b"); "" for the machine/unknown */
	int have_limit;
	uint64_t limit;            /* its limit, bytes */
	char evidence[320];        /* the counts that say so, in words */
};

/* Keep the counters of `run_dir` (the run's memory cgroup directory) and
 * of each level above it, up to the hierarchy's root (the highest
 * directory on the same file system).  v2: the files are v2's.
 * vmstat_path NULL: /proc/vmstat. */
int oomlimit_open(struct oomlimit *o, const char *run_dir, int v2, const char *vmstat_path);

/* Which limit the counters say fired since oomlimit_open(), or since the
 * last call that found one (its counts become the new base). */
void oomlimit_which(struct oomlimit *o, struct oomlimit_answer *a);

/* How a cgroup the kernel's log names (`kernel_path`, from the root of
 * the hierarchy) stands to the run's.  Inside a cgroup namespace memsup
 * sees paths below the namespace's root and the log gives them whole; the
 * victim's cgroup in the same line (`task_memcg`), which is the run's or
 * below it, tells the part memsup does not see.  OOMREL_ABOVE's
 * view_path is memsup's path for the cgroup below the mount, "" when it
 * lies above memsup's namespace (it cannot be read); for the run and
 * inside it, memsup's path for it too. */
enum oomrel { OOMREL_UNRELATED = 0, OOMREL_RUN, OOMREL_INSIDE, OOMREL_ABOVE };
enum oomrel oomlimit_relation(const struct oomlimit *o, const char *kernel_path,
			      const char *task_memcg, char *view_path, size_t cap);

/* The memory limit of the cgroup at `view_path` (below the mount): 0 with
 * *limit (UINT64_MAX: none), or -errno. */
int oomlimit_read_limit(const struct oomlimit *o, const char *view_path, uint64_t *limit);

#endif /* MEMSUP_OOMLIMIT_H */
