/* staging.c: the shim's files on a tmpfs while the run goes on (see
 * staging.h). */
#include "collect/staging.h"
#include "collect/recordfile.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/magic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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

static int fall_back(struct staging *st, const char *evpath)
{
	st->staged = 0;
	st->root[0] = '\0';
	int n = snprintf(st->dir, sizeof st->dir, "%s/records", evpath);
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
	int n = snprintf(st->dir, sizeof st->dir, "%s/memsup-%d-XXXXXX", root, (int)getpid());
	if (n < 0 || (size_t)n >= sizeof st->dir || !mkdtemp(st->dir)) {
		int err = n < 0 || (size_t)n >= sizeof st->dir ? ENAMETOOLONG : errno;
		int rc = fall_back(st, evpath);
		if (asked) {
			st->refused = -err;
			snprintf(st->root, sizeof st->root, "%s", root);
		}
		return rc;
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
	    (*rfd = openat(evdirfd, "records", O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0)
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
