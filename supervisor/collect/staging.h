/* staging.h: where the shim writes its files while the run goes on.
 *
 * Every traced image creates a record file ("<pid>.<gen>.mtr") and, when
 * it samples, a stacks file ("<pid>.<gen>.mts") in the records directory.
 * On a disk file system that creation is the dearest part of tracing a
 * process-heavy run: on this project's ext4 (no journal) a traced
 * `make -j2` spent 11% of its CPU samples in the inode allocator, 1.33x
 * bare against 1.15x with the same files on a tmpfs (bench/RESULTS.md,
 * section 8).  So while the run goes on, the records directory is a
 * directory of memsup's own on a tmpfs (/dev/shm), and the evidence
 * directory receives only what the run leaves: records.fold and
 * stacks.fold (folded as images end, fold.h and stackfold.h), and in
 * records/ whatever could not be folded.  The empty files that kept a
 * folded image's name (for the shim's generation numbering) stay behind:
 * records.fold has their pid and generation.
 *
 * The staging directory is used when the evidence directory is not on a
 * tmpfs already and /dev/shm is one (or MEMSUP_STAGING_DIR names a
 * directory to use instead; MEMSUP_STAGING_DIR=off writes straight into
 * DIR/records).  Otherwise the shim writes into DIR/records, as it always
 * could.  A memsup killed outright leaves the draining to its sentinel
 * (sentinel.h), so no record is lost and nothing stays in /dev/shm.
 *
 * A memsup killed together with its sentinel leaves its staging directory
 * behind; the next run that stages under the same root removes it
 * (staging_sweep).  The name, memsup-PID-START-XXXXXX, carries memsup's
 * pid and start time (/proc/PID/stat field 22), so that a live memsup's
 * directory is known whatever pid reuse did since; the sentinel is forked
 * after the name is in the command's environment, so it is known another
 * way: memsup holds a flock(2) on the directory, and the sentinel shares
 * it by fork.  A directory whose memsup is gone and whose lock can be
 * taken has nobody left to drain it.  Only names of that form, directories
 * of the caller's uid, are looked at.
 *
 * The files there are tmpfs pages: memory charged to the run's cgroup
 * like the page cache of the same files on a disk, but not reclaimable.
 * That is why an ended image's files leave it within a second (live.c),
 * and why only the live images' 8 KiB records and their stacks files stay.
 *
 * Return convention: 0 or -errno.
 */
#ifndef MEMSUP_STAGING_H
#define MEMSUP_STAGING_H

#include <limits.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define STAGING_ENV "MEMSUP_STAGING_DIR"
#define STAGING_DEFAULT_ROOT "/dev/shm"
#define STAGING_PREFIX "memsup-"
#define STAGING_SWEEP_MAX 16 /* stale directories removed per run */

struct staging {
	char dir[PATH_MAX];        /* the shim's MEMTRACE_DIR */
	int staged;                /* 1: dir is memsup's own, drained at the end */
	int refused;               /* a root asked for (the argument or
				      MEMSUP_STAGING_DIR) could not hold it:
				      -errno, for the caller to say; else 0 */
	char root[PATH_MAX];       /* that root */
	int lock_fd;               /* the directory, flock'ed (staging_sweep);
				      -1.  Left open to the process's end. */
};

/* Chooses the records directory for the evidence directory at evpath
 * (open at evdirfd), whose records/ exists already: a fresh directory
 * under `root` (NULL: $MEMSUP_STAGING_DIR, else /dev/shm when it is a
 * tmpfs and evpath is not), else evpath/records.  Fails only when evpath
 * is too long for a path; a root asked for that cannot be used falls back
 * too, and says why in st->refused. */
int staging_open(struct staging *st, const char *evpath, const char *root);

/* The run is over: every file still in the staging directory moves into
 * evidence's records/ (open at evdirfd) but the empty ones (names kept
 * for folded images), and the staging directory is removed.  Nothing is
 * removed before it is copied whole.  *moved (may be NULL) counts the
 * files moved.  0, or the first -errno (what was not moved stays where it
 * was).  Nothing to do when !st->staged. */
int staging_drain(const struct staging *st, int evdirfd, size_t *moved);

/* Removes, under root, the staging directories of runs whose memsup and
 * sentinel are both gone (at most STAGING_SWEEP_MAX), with the regular
 * files in them; *removed (may be NULL) counts them.  0, or -errno when
 * root cannot be read.  staging_open calls it before it makes its own. */
int staging_sweep(const char *root, size_t *removed);

/* "memsup-PID-START-XXXXXX" -> pid, start; 0, or -EINVAL for any other
 * name (an older memsup's "memsup-PID-XXXXXX" too: nothing says whether
 * its sentinel lives). */
int staging_parse_name(const char *name, pid_t *pid, uint64_t *start);

#endif /* MEMSUP_STAGING_H */
