/* live.h: the shim's record files, picked up while the run goes on.
 *
 * The records directory (MEMTRACE_DIR of the command: staging.h) is
 * watched with inotify (IN_CREATE, IN_MOVED_TO; a queue overflow or a
 * missing inotify falls back to a readdir whenever the directory's mtime
 * moved).  Each "<pid>.<gen>.mtr" file is mapped read-only (MAP_SHARED)
 * once it is a valid record: the right size, magic stored (acquire), the
 * version and size this build reads, pid and gen matching its name.  A file
 * without magic yet is retried at every live_update(); one that is wrong in
 * any other way is kept with its error and never trusted.  Mapped records
 * are only read: each counter with a single atomic 64-bit load, as
 * common/record.h allows.
 *
 * Mappings are kept while an image can still change its record; then the
 * record is folded into the evidence's fold file (fold.h, live_fold_ended)
 * and unmapped, so that a run of 100,000 images maps and reads only the
 * ones still running.
 *
 * Not thread-safe.  Return convention: 0 or -errno.
 */
#ifndef MEMSUP_LIVE_H
#define MEMSUP_LIVE_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "record.h"

struct live_rec {
	int32_t pid;
	uint32_t gen;
	const struct mt_record *map; /* valid and mapped; NULL otherwise */
	int error;                   /* 0, or why the file is not a record
					(-RECORDFILE_E* or -errno), final */
	unsigned tries;              /* looks while it had no magic yet */
	int fd;                      /* kept open while pending, else -1 */
	long next_same_pid;          /* index of this pid's previous record, -1 */
	int believed;                /* the image is part of the tree: see
					live_believe() */
	int doubt;                   /* enum belief_doubt: why it never will
					be, once that is final; 0 open */
	int looked;                  /* its live pid was looked at (once) */
	pid_t ns_member;             /* BELIEF_OTHER_NS: the member (memsup's
					pid) whose own namespace's pid it is */
	uint64_t start_ns, end_ns;   /* its life, kept when folded */
	int64_t fold_off;            /* folded (fold.h): its entry's offset in
					the fold file, the file emptied, map
					NULL; < 0: not folded */
	char name[48];
};

struct live;

/* Watch `dir` (must exist).  inotify failing is not an error. */
int live_open(struct live **out, const char *dir);
void live_close(struct live *l);

/* The inotify fd to poll for POLLIN, or -1 (then call live_update() each
 * sample anyway: it rescans when the directory changed). */
int live_fd(const struct live *l);

/* Pick up new files (drain inotify or rescan) and retry the ones without
 * magic.  `force_scan`: list the directory whatever the events said (the
 * end of the run).  Cheap when nothing happened: one non-blocking read,
 * or one fstat without inotify. */
int live_update(struct live *l, int force_scan);

/* A record file is the command's word, not a fact: anything it runs can
 * write one into the records directory, naming any pid.  A record is
 * believed by collect/belief.h's rule: never for a pid at or above
 * pid_max; for the command's pid; for a pid that was a member at a sample
 * (`members`, this sample's, listed from seen_from_ns to seen_to_ns) while
 * the image ran; for a pid alive at the record's first sight whose
 * ancestors lead into the tree (one look, at /proc/PID/stat; alive outside
 * is final); or when the record it names as its parent is believed and
 * was alive as it started (a short-lived child no sample saw), or the
 * image it exec'd into is believed.  Call once per sample, after
 * live_update(), and once at the end (no members).  Cheap: the member pids
 * noted, then only the records not decided yet.  Readers of live figures
 * (markers, heaps at a marker) use believed records only; the end of the
 * run (merge.c) puts the others aside, each with live_why(). */
struct tree_member;
void live_believe(struct live *l, const struct tree_member *members, size_t n, pid_t command,
		  uint64_t seen_from_ns, uint64_t seen_to_ns);

/* Tests: where the look at a live pid reads (NULL or "": no look) and the
 * pid_max to hold pids to (<= 0: none).  live_open() takes "/proc" and
 * /proc/sys/kernel/pid_max, read once. */
void live_set_checks(struct live *l, const char *proc_root, long pid_max);
/* 0 when `pid` cannot be a process here (at or above pid_max, or <= 0). */
int live_pid_possible(const struct live *l, pid_t pid);
/* Why record i (not believed) is not: one sentence into buf, times in
 * seconds after run_start_ns.  snprintf's return, or -EINVAL when it is
 * believed. */
int live_why(const struct live *l, size_t i, uint64_t run_start_ns, char *buf, size_t cap);

/* Folding (fold.h): `fd` is the fold file, open for reading and appending
 * (O_RDWR | O_APPEND); live_close() does not close it.  The stacks file of
 * each folded image is packed into stacks.fold (stackfold.h) of the
 * directory open at evdirfd (made at the first one; -1: not packed). */
void live_set_fold(struct live *l, int fd, int evdirfd);
/* Fold every mapped, believed record whose image can no longer change it:
 * its process is gone (kill(pid, 0) says ESRCH), or it exec'd and the next
 * generation's record is there.  Called about once a second, after the
 * markers were read.  0, or -errno when the fold file could not be
 * written (an evidence failure: the record files stay as they were). */
int live_fold_ended(struct live *l);
/* How many records are folded. */
size_t live_folded(const struct live *l);

/* The mapped records (not folded, not pending, not in error): what a
 * sample reads.  live_active_index(l, k) for k < live_active_count(l) is
 * an index for live_get(). */
size_t live_active_count(const struct live *l);
size_t live_active_index(const struct live *l, size_t k);

/* Files still waiting for their magic. */
size_t live_pending(const struct live *l);

size_t live_count(const struct live *l);
const struct live_rec *live_get(const struct live *l, size_t i);

/* The image of `pid` that was running at CLOCK_MONOTONIC time `t_ns`, by
 * its generation in *gen: the highest valid record that started at or
 * before t_ns -- or, when that image had already exec'd by t_ns, gen+1.
 * Returns that generation's valid record, or NULL when it has none (yet):
 * gen 0 with no record is a process whose shim has not started (a fork
 * child before its handler ran) or never will (untraced); gen g+1 is an
 * image whose constructor has not run yet, or that runs without the shim
 * (a static binary exec'd by a traced one). */
const struct live_rec *live_image_at(const struct live *l, pid_t pid, uint64_t t_ns,
				     uint32_t *gen);

/* The file for (pid, gen), in whatever state, or NULL when none was seen. */
const struct live_rec *live_find(const struct live *l, pid_t pid, uint32_t gen);

/* The final contents of record i: copied from its mapping with
 * recordfile.h's consistency rules, or for a file that never became valid,
 * one last recordfile_read_at().  0, or an error to keep as the image's
 * record_error. */
int live_read_final(struct live *l, size_t i, struct mt_record *out);

/* Relaxed atomic loads of a live counter. */
static inline uint64_t live_load(const uint64_t *p)
{
	return __atomic_load_n(p, __ATOMIC_RELAXED);
}
/* heap_current as a figure: in a multithreaded image it may read below
 * zero (as an int64_t) for a moment, while one thread freed blocks another
 * has not added yet (common/record.h); such a reading is 0. */
static inline uint64_t live_heap_current(const struct mt_record *r)
{
	int64_t v = (int64_t)__atomic_load_n(&r->heap_current, __ATOMIC_RELAXED);
	return v > 0 ? (uint64_t)v : 0;
}
static inline uint32_t live_load32(const void *p)
{
	return __atomic_load_n((const uint32_t *)p, __ATOMIC_RELAXED);
}
static inline uint32_t live_state(const struct mt_record *r)
{
	return __atomic_load_n(&r->state, __ATOMIC_ACQUIRE);
}

#endif /* MEMSUP_LIVE_H */
