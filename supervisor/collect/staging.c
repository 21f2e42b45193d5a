/* staging.c: the shim's files on a tmpfs while the run goes on (see
 * staging.h). */
#include "collect/staging.h"
#include "base/procfs.h"
#include "collect/recordfile.h"
#include "evidence/files.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <linux/magic.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/types.h>
#include <unistd.h>

/* A block of a copied file that is all zeros is left a hole: the shim's
 * files are sparse by design (stacks.h). */
#define STAGING_BLOCK 4096u
#define STAGING_CHUNK (16u * STAGING_BLOCK)

static int on_tmpfs(const char *path)
{
	struct statfs sf;
	return statfs(path, &sf) == 0 && sf.f_type == TMPFS_MAGIC;
}

/* ---- the name, and the stale ones ------------------------------------ */

int staging_parse_name(const char *name, pid_t *pid, uint64_t *start)
{
	const char *p = name;
	char *end;
	if (strncmp(p, STAGING_PREFIX, sizeof STAGING_PREFIX - 1) != 0)
		return -EINVAL;
	p += sizeof STAGING_PREFIX - 1;
	if (*p < '1' || *p > '9')
		return -EINVAL;
	errno = 0;
	unsigned long long v = strtoull(p, &end, 10);
	if (errno || *end != '-' || v > INT32_MAX)
		return -EINVAL;
	*pid = (pid_t)v;
	p = end + 1;
	if (*p < '0' || *p > '9')
		return -EINVAL;
	v = strtoull(p, &end, 10);
	if (errno || *end != '-' || strlen(end + 1) != 6) /* mkdtemp's XXXXXX */
		return -EINVAL;
	*start = v;
	return 0;
}

/* This process's start time (/proc/self/stat field 22); 0 when /proc
 * cannot say (a name with 0 is then judged by its pid alone). */
static uint64_t own_start(void)
{
	struct procfs_stat ps;
	return procfs_read_stat(NULL, getpid(), &ps) == 0 ? ps.starttime : 0;
}

/* 1 while the memsup that made a directory of this name lives: its pid
 * runs, not as a zombie, and started when the name says (a pid reused by
 * another process started later). */
static int maker_alive(pid_t pid, uint64_t start)
{
	struct procfs_stat ps;
	int rc = procfs_read_stat(NULL, pid, &ps);
	if (rc == PROCFS_GONE || rc == -ENOENT)
		return 0;
	if (rc < 0)
		return kill(pid, 0) == 0 || errno != ESRCH; /* no /proc: the pid alone */
	if (ps.state == 'Z' || ps.state == 'X')
		return 0;
	return start == 0 || ps.starttime == start;
}

/* The regular files of the directory open at fd, then the directory;
 * anything else in it (not the shim's) keeps it. */
static void remove_stale(int parent, const char *name, int fd)
{
	int dup_fd = dup(fd);
	DIR *d = dup_fd >= 0 ? fdopendir(dup_fd) : NULL;
	if (!d) {
		if (dup_fd >= 0)
			close(dup_fd);
		return;
	}
	for (struct dirent *e; (e = readdir(d)) != NULL;) {
		struct stat sb;
		if (fstatat(fd, e->d_name, &sb, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(sb.st_mode))
			unlinkat(fd, e->d_name, 0);
	}
	closedir(d);
	unlinkat(parent, name, AT_REMOVEDIR);
}

int staging_sweep(const char *root, size_t *removed)
{
	size_t n = 0;
	int rfd = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	DIR *d = rfd >= 0 ? fdopendir(rfd) : NULL;
	if (removed)
		*removed = 0;
	if (!d) {
		int rc = -errno;
		if (rfd >= 0)
			close(rfd);
		return rc;
	}
	uid_t uid = getuid();
	for (struct dirent *e; (e = readdir(d)) != NULL && n < STAGING_SWEEP_MAX;) {
		struct stat sb;
		pid_t pid;
		uint64_t start;
		if (staging_parse_name(e->d_name, &pid, &start) != 0 || maker_alive(pid, start))
			continue;
		/* mkdtemp's: a directory of ours; never through a link */
		int fd = openat(rfd, e->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (fd < 0)
			continue;
		/* The sentinel: memsup's lock is its lock too (forked with it);
		 * a sentinel still draining a killed memsup's run holds it. */
		if (fstat(fd, &sb) == 0 && sb.st_uid == uid && flock(fd, LOCK_EX | LOCK_NB) == 0) {
			remove_stale(rfd, e->d_name, fd);
			n++;
		}
		close(fd); /* and the lock with it */
	}
	closedir(d);
	if (removed)
		*removed = n;
	return 0;
}

/* ---- choosing the directory ------------------------------------------ */

static int fall_back(struct staging *st, const char *evpath)
{
	st->staged = 0;
	st->lock_fd = -1;
	st->root[0] = '\0';
	int n = snprintf(st->dir, sizeof st->dir, "%s/" EVIDENCE_RECORDS_DIR, evpath);
	return n < 0 || (size_t)n >= sizeof st->dir ? -ENAMETOOLONG : 0;
}

int staging_open(struct staging *st, const char *evpath, const char *root)
{
	int asked = 1; /* a root asked for, not the default: a refusal is said */
	st->refused = 0;
	if (!root) {
		root = getenv(STAGING_ENV);
		if (root && (!*root || strcmp(root, "off") == 0))
			return fall_back(st, evpath);
		/* the default only where it wins: a tmpfs, and the evidence
		 * not on one already */
		if (!root && (!on_tmpfs(STAGING_DEFAULT_ROOT) || on_tmpfs(evpath)))
			return fall_back(st, evpath);
		if (!root) {
			root = STAGING_DEFAULT_ROOT;
			asked = 0;
		}
	}
	/* the leftovers of runs killed with their sentinels, before ours */
	staging_sweep(root, NULL);
	int n = snprintf(st->dir, sizeof st->dir, "%s/" STAGING_PREFIX "%d-%" PRIu64 "-XXXXXX",
			 root, (int)getpid(), own_start());
	if (n < 0 || (size_t)n >= sizeof st->dir || !mkdtemp(st->dir)) {
		int err = n < 0 || (size_t)n >= sizeof st->dir ? ENAMETOOLONG : errno;
		int rc = fall_back(st, evpath);
		if (asked) {
			st->refused = -err;
			snprintf(st->root, sizeof st->root, "%s", root);
		}
		return rc;
	}
	/* Held until this process and its forks (the sentinel) have all
	 * ended: close-on-exec, so that the command does not hold it.  Until
	 * it is taken the name's pid and start time keep the directory. */
	st->lock_fd = open(st->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (st->lock_fd >= 0 && flock(st->lock_fd, LOCK_EX | LOCK_NB) < 0) {
		close(st->lock_fd);
		st->lock_fd = -1;
	}
	st->staged = 1;
	snprintf(st->root, sizeof st->root, "%s", root);
	return 0;
}

/* Whole blocks of zeros are skipped (holes); the size is set at the end. */
static int copy_sparse(int from, int to)
{
	static unsigned char buf[STAGING_CHUNK];
	static const unsigned char zeros[STAGING_BLOCK];
	off_t off = 0;
	for (;;) {
		ssize_t got = recordfile_pread_full(from, buf, sizeof buf, off);
		if (got < 0)
			return (int)got;
		for (ssize_t at = 0; at < got; at += STAGING_BLOCK) {
			size_t n = (size_t)(got - at) < STAGING_BLOCK ? (size_t)(got - at) : STAGING_BLOCK;
			if (memcmp(buf + at, zeros, n) == 0)
				continue;
			for (size_t done = 0; done < n;) {
				ssize_t w = pwrite(to, buf + at + done, n - done, off + at + (off_t)done);
				if (w < 0 && errno != EINTR)
					return -errno;
				if (w == 0)
					return -EIO; /* never for a regular file; no spinning */
				done += w > 0 ? (size_t)w : 0;
			}
		}
		off += got;
		if ((size_t)got < sizeof buf)
			break;
	}
	return ftruncate(to, off) < 0 ? -errno : 0;
}

/* One file of the staging directory into records/ (opened at the first
 * file worth moving, into *rfd: a records/ that is gone must not keep the
 * empty names from going), then away.  1 when moved, 0 when there was
 * nothing to keep, or -errno. */
static int move_one(int sfd, int evdirfd, int *rfd, const char *name)
{
	struct stat st;
	if (fstatat(sfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return errno == ENOENT ? 0 : -errno;
	if (S_ISDIR(st.st_mode))
		return -EISDIR; /* not the shim's: left, and said */
	if (!S_ISREG(st.st_mode) || st.st_size == 0)
		return unlinkat(sfd, name, 0) < 0 && errno != ENOENT ? -errno : 0;
	if (*rfd < 0 &&
	    (*rfd = openat(evdirfd, EVIDENCE_RECORDS_DIR, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0)
		return -errno;
	int from = openat(sfd, name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (from < 0)
		return -errno;
	int to = openat(*rfd, name, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW,
			st.st_mode & 0777);
	int rc = to < 0 ? -errno : copy_sparse(from, to);
	close(from);
	if (to >= 0 && close(to) < 0 && rc == 0)
		rc = -errno;
	if (rc < 0) {
		if (to >= 0)
			unlinkat(*rfd, name, 0); /* the staged copy is the whole one */
		return rc;
	}
	return unlinkat(sfd, name, 0) < 0 ? -errno : 1;
}

int staging_drain(const struct staging *st, int evdirfd, size_t *moved)
{
	size_t n_moved = 0;
	int rc = 0;
	if (moved)
		*moved = 0;
	if (!st->staged)
		return 0;
	int rfd = -1, sfd = open(st->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	DIR *d = sfd >= 0 ? fdopendir(sfd) : NULL;
	if (!d) {
		rc = -errno;
		if (sfd >= 0)
			close(sfd);
		return rc == -ENOENT ? 0 : rc; /* drained before (the sentinel) */
	}
	struct dirent *e;
	while ((e = readdir(d))) {
		if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
			continue;
		int r = move_one(sfd, evdirfd, &rfd, e->d_name);
		if (r > 0)
			n_moved++;
		else if (r < 0 && rc == 0)
			rc = r; /* go on: move all that can be */
	}
	closedir(d);
	if (rfd >= 0)
		close(rfd);
	if (rmdir(st->dir) < 0 && rc == 0)
		rc = -errno;
	if (moved)
		*moved = n_moved;
	return rc;
}
