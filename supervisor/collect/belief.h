/* belief.h: whether a record file is the tree's -- the pure half of the
 * rule live_believe() (live.h) applies with the facts of a run.
 *
 * A record file is the traced command's word: anything the tree runs can
 * write one into MEMTRACE_DIR, naming any pid.  A record counts only for an
 * image memsup can place in the tree at a time that fits the record:
 *  - its pid is never above the kernel's pid_max (no such process exists);
 *  - its pid was a member at a sample while the image ran (seen_fits), or
 *    is the command's;
 *  - or, first seen while its pid was alive, that process descends from
 *    the tree (live.c walks /proc/PID/stat up; a live pid outside is final);
 *  - or its parent record (parent_pid.parent_gen: fork, exec, spawn ...)
 *    is believed and was alive when it started (parent_fits): the images
 *    that live between two polls, which the shim is for, are believed
 *    through this chain back to an image a sample saw or the command's;
 *  - or the image it exec'd into is believed (the same process).
 * Everything here is arithmetic on times and pids: no I/O but
 * belief_read_pid_max(), so tests feed it made-up runs.
 *
 * Times are CLOCK_MONOTONIC nanoseconds, the clock of common/record.h.
 */
#ifndef MEMSUP_BELIEF_H
#define MEMSUP_BELIEF_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* Why a record is not believed, once that is final (0: not decided; a
 * record still undecided at the end of the run is not believed, and
 * belief_describe says why from the lineage). */
enum belief_doubt {
	BELIEF_OPEN = 0,        /* not decided (yet) */
	BELIEF_PID_MAX,         /* pid above pid_max, or not a pid at all */
	BELIEF_OUTSIDE,         /* its pid was alive outside the tree */
	BELIEF_OTHER_NS,        /* its pid is a member's in that member's own PID
				   namespace, not memsup's: a pid memsup cannot
				   join to the process (live.c) */
};

/* How long a child may start after its parent's end, and an image before a
 * sighting, and still fit.  A fork child's start is stamped by its own
 * fork handler, which may run after a parent that exits at once has
 * stamped its end; an exec'd image's start comes after the loader mapped
 * every library.  Both are scheduling delays: 2 s covers a loaded machine
 * and is far less than the gap a stale or borrowed time would show. */
#define BELIEF_SLACK_NS UINT64_C(2000000000)

/* An image's life by its record: end 0 while it runs (or it was killed
 * where no hook ran). */
struct belief_span {
	uint64_t start_ns;
	uint64_t end_ns;
};

/* 1 when `pid` can be a process on this machine: 0 < pid <= pid_max
 * (pid_max <= 0: unknown, only the sign is checked). */
int belief_pid_possible(int64_t pid, long pid_max);

/* 1 when an image that lived `img` can be the one a sample saw as a member
 * between seen_from and seen_to (its pid's first and last sighting): it
 * started before the last sighting and had not ended before the first. */
int belief_seen_fits(const struct belief_span *img, uint64_t seen_from, uint64_t seen_to);

/* 1 when a parent that lived `parent` was alive as `child` started: it
 * started first and had not ended more than BELIEF_SLACK_NS before. */
int belief_parent_fits(const struct belief_span *parent, const struct belief_span *child);

/* How far a record's VmHWM may pass the kernel's own bound of any process
 * of the tree before it cannot be true: twice the bound and 64 MiB more.
 * The bound (belief_hwm_fits) is the larger of getrusage(RUSAGE_CHILDREN)
 * ru_maxrss, read after the tree was reaped (every reaped descendant's
 * high-water mark, each image's VmHWM included, since the shim reads it
 * before the process ends), and the run's cgroup peak (every page charged
 * to the run).  Neither is a strict bound of every genuine image -- a child
 * auto-reaped under SIGCHLD ignored adds nothing to ru_maxrss, and file
 * pages charged before the run are in no cgroup peak -- so only a claim far
 * above both is refused. */
#define BELIEF_HWM_SLACK_KB (UINT64_C(64) * 1024)

/* 1 when an image whose record says vm_hwm_kb can have lived in a tree the
 * kernel says held at most bound_kb in any one process (bound_kb 0:
 * unknown, anything fits): vm_hwm_kb <= 2 * bound_kb + BELIEF_HWM_SLACK_KB. */
int belief_hwm_fits(uint64_t vm_hwm_kb, uint64_t bound_kb);

/* /proc/sys/kernel/pid_max as read from `path` (a fixture in tests): the
 * value, or -errno (-EINVAL when the file holds no positive number). */
long belief_read_pid_max(const char *path);

/* Where a pid alive now stands, by its ancestors (live.c walks them). */
enum belief_side {
	BELIEF_SIDE_UNKNOWN = 0, /* gone, or the walk could not tell */
	BELIEF_SIDE_TREE,
	BELIEF_SIDE_OUTSIDE,
};

#endif /* MEMSUP_BELIEF_H */
