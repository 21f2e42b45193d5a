/* evidence.c: the evidence directory, its line files and its write failures.
 *
 * What goes into the files comes formatted: the lines from timeline.h, the
 * record from resources.h.  Here they reach the disk whole, or the first
 * failure is kept to be told. */
#include "evidence/files.h"
#include "evidence/evidence.h"
#include "collect/fold.h"
#include "jsonw.h"
#include "evidence/resources.h"
#include "evidence/timeline.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* ---- directory --------------------------------------------------------------- */

static int mkdir_parents(char *path)
{
	/* Every component but the last; EEXIST is fine for them. */
	for (char *s = path + 1; *s; s++) {
		if (*s != '/')
			continue;
		*s = '\0';
		int rc = mkdir(path, 0777) < 0 && errno != EEXIST ? -errno : 0;
		*s = '/';
		if (rc < 0)
			return rc;
	}
	return 0;
}

int evidence_create(struct evidence *ev, const char *path, int with_log,
		    const char **failed_at)
{
	char tmp[PATH_MAX];
	int rc;
	ev->dirfd = ev->log_fd = ev->rss_fd = ev->tl_fd = ev->fold_fd = -1;
	ev->rss_whole = ev->tl_whole = 0;
	ev->fail_op = ev->fail_name = NULL;
	ev->fail_err = ev->left_err = ev->left_whole = 0;
	size_t n = strlen(path);
	if (n == 0 || n >= sizeof tmp) {
		*failed_at = "evidence directory name";
		return -ENAMETOOLONG;
	}
	memcpy(tmp, path, n + 1);
	while (n > 1 && tmp[n - 1] == '/')
		tmp[--n] = '\0';
	/* The directory first: its parents are nearly always there, and each
	 * mkdir of one that is costs a system call and a path walk; only
	 * ENOENT says one is missing. */
	*failed_at = "create evidence directory";
	if (mkdir(tmp, 0777) < 0) {
		if (errno != ENOENT)
			return -errno;
		*failed_at = "create parent directories";
		if ((rc = mkdir_parents(tmp)) < 0)
			return rc;
		*failed_at = "create evidence directory";
		if (mkdir(tmp, 0777) < 0)
			return -errno;
	}
	*failed_at = "open evidence directory";
	ev->dirfd = open(tmp, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (ev->dirfd < 0 || !realpath(tmp, ev->path))
		goto fail;
	*failed_at = "create " EVIDENCE_STDOUT_LOG;
	if (with_log && (ev->log_fd = openat(ev->dirfd, EVIDENCE_STDOUT_LOG,
					     O_WRONLY | O_CREAT | O_EXCL | O_APPEND | O_CLOEXEC,
					     0666)) < 0)
		goto fail;
	*failed_at = "create " EVIDENCE_RSS;
	ev->rss_fd = openat(ev->dirfd, EVIDENCE_RSS,
			    O_WRONLY | O_CREAT | O_EXCL | O_APPEND | O_CLOEXEC, 0666);
	if (ev->rss_fd < 0)
		goto fail;
	jsonw_init(&ev->rss_w, ev->rss_fd, 0);
	*failed_at = "create " EVIDENCE_TIMELINE;
	ev->tl_fd = openat(ev->dirfd, EVIDENCE_TIMELINE,
			   O_WRONLY | O_CREAT | O_EXCL | O_APPEND | O_CLOEXEC, 0666);
	if (ev->tl_fd < 0)
		goto fail;
	jsonw_init(&ev->tl_w, ev->tl_fd, 0);
	*failed_at = NULL;
	return 0;
fail:
	rc = -errno;
	evidence_close(ev);
	return rc;
}

void evidence_note_failure(struct evidence *ev, const char *op, const char *name, int err)
{
	if (ev->fail_op)
		return; /* the first failure is the cause; later ones follow from it */
	ev->fail_op = op;
	ev->fail_name = name;
	ev->fail_err = err;
}

int evidence_fold_fd(struct evidence *ev)
{
	if (ev->fold_fd >= 0)
		return ev->fold_fd;
	ev->fold_fd = openat(ev->dirfd, EVIDENCE_RECORDS_FOLD,
			     O_RDWR | O_APPEND | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
	if (ev->fold_fd < 0) {
		int err = -errno;
		evidence_note_failure(ev, "create", EVIDENCE_RECORDS_FOLD, err);
		return err;
	}
	return ev->fold_fd;
}

int evidence_fail_describe(const struct evidence *ev, char *buf, size_t cap)
{
	if (!ev->fail_op) {
		if (cap)
			buf[0] = '\0';
		return -1;
	}
	int n = snprintf(buf, cap, "%s %s/%s: %s", ev->fail_op, ev->path, ev->fail_name,
			 strerror(-ev->fail_err));
	if (ev->left_err && n >= 0 && (size_t)n < cap)
		snprintf(buf + n, cap - (size_t)n, "; %s is left behind (%s) and cannot be "
			 "removed: %s", ev->fail_name, ev->left_whole ? "whole" : "not whole",
			 strerror(-ev->left_err));
	return 0;
}

/* Write out a line file's buffer (whole lines only).  When the write fails
 * part way (ENOSPC, EFBIG), cut the file back to the lines written whole
 * before: readers of rss.jsonl must never meet half a line.  jsonw keeps
 * the error, so nothing is written to this file after. */
static int flush_lines(struct evidence *ev, struct jsonw *w, off_t *whole, const char *name)
{
	size_t n = w->len;
	int rc = jsonw_finish(w);
	if (rc == 0) {
		*whole += (off_t)n;
		return 0;
	}
	if (n > 0)
		(void)!ftruncate(w->fd, *whole); /* best effort: the error is already the news */
	evidence_note_failure(ev, "write", name, rc);
	return rc;
}

void evidence_close(struct evidence *ev)
{
	if (ev->rss_fd >= 0) {
		evidence_flush_samples(ev);
		close(ev->rss_fd);
	}
	if (ev->tl_fd >= 0) {
		flush_lines(ev, &ev->tl_w, &ev->tl_whole, EVIDENCE_TIMELINE);
		close(ev->tl_fd);
	}
	if (ev->log_fd >= 0)
		close(ev->log_fd);
	if (ev->fold_fd >= 0)
		close(ev->fold_fd);
	if (ev->dirfd >= 0)
		close(ev->dirfd);
	ev->dirfd = ev->log_fd = ev->rss_fd = ev->tl_fd = ev->fold_fd = -1;
}

/* One whole line into a line file's buffer.  Through jsonw (raw: the
 * line is formatted already, timeline.h).  Flushing before a line that
 * would not fit keeps the file made of whole lines whatever kills memsup.
 * Before one that would fill the buffer exactly, too: jsonw writes a full
 * buffer out by itself, and bytes written behind flush_lines' back are
 * bytes its cut-back after a failed write does not know of (a torn line at
 * a full disk). */
static int append_line(struct evidence *ev, struct jsonw *w, off_t *whole, const char *name,
		       const char *line, size_t n)
{
	if (w->len + n >= sizeof w->buf)
		flush_lines(ev, w, whole, name);
	jsonw_raw(w, line, n);
	return w->err;
}

int evidence_append_sample(struct evidence *ev, double elapsed_s, uint64_t bytes)
{
	char line[TIMELINE_RSS_LINE_MAX];
	size_t n = timeline_format_rss(elapsed_s, bytes, line, sizeof line);
	return append_line(ev, &ev->rss_w, &ev->rss_whole, EVIDENCE_RSS, line, n);
}

int evidence_flush_samples(struct evidence *ev)
{
	int rc = flush_lines(ev, &ev->rss_w, &ev->rss_whole, EVIDENCE_RSS);
	if (ev->tl_fd >= 0) {
		int r2 = flush_lines(ev, &ev->tl_w, &ev->tl_whole, EVIDENCE_TIMELINE);
		if (rc == 0)
			rc = r2;
	}
	return rc;
}

int evidence_append_timeline(struct evidence *ev, const struct timeline_sample *s)
{
	char line[TIMELINE_LINE_MAX];
	if (ev->tl_fd < 0)
		return 0;
	size_t n = timeline_format_sample(s, line, sizeof line);
	return append_line(ev, &ev->tl_w, &ev->tl_whole, EVIDENCE_TIMELINE, line, n);
}

static const char record_tmp[] = EVIDENCE_RESOURCES EVIDENCE_TMP_SUFFIX;

int evidence_replace(int dirfd, const char *name, const char *tmp, int durable,
		     int (*fill)(int fd, const void *ctx), const void *ctx,
		     const char **failed_op, int *tmp_left)
{
	const char *op = "create";
	int rc = 0, fd = openat(dirfd, tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
	if (tmp_left)
		*tmp_left = 0;
	if (fd < 0) {
		rc = -errno;
	} else {
		op = "write";
		rc = fill(fd, ctx);
		if (rc == 0 && durable && fsync(fd) < 0) {
			rc = -errno;
			op = "fsync";
		}
		if (close(fd) < 0 && rc == 0) {
			rc = -errno;
			op = "close";
		}
		if (rc == 0 && renameat(dirfd, tmp, dirfd, name) < 0) {
			rc = -errno;
			op = "rename";
		}
		/* a half-written temporary file is never left for a reader */
		if (rc < 0 && unlinkat(dirfd, tmp, 0) < 0 && errno != ENOENT && tmp_left)
			*tmp_left = -errno;
	}
	if (failed_op)
		*failed_op = rc < 0 ? op : NULL;
	return rc;
}

int evidence_replace_simple(int dirfd, const char *name,
			    int (*fill)(int fd, const void *ctx), const void *ctx)
{
	char tmp[PATH_MAX];
	if ((size_t)snprintf(tmp, sizeof tmp, "%s" EVIDENCE_TMP_SUFFIX, name) >= sizeof tmp)
		return -ENAMETOOLONG;
	return evidence_replace(dirfd, name, tmp, 0, fill, ctx, NULL, NULL);
}

static int fill_record(int fd, const void *ctx)
{
	return resources_write_json(fd, ctx);
}

int evidence_write_record(struct evidence *ev, const struct sup_record *r, int durable)
{
	const char *op;
	int left;
	/* fsync only when asked: the once-a-second rewrites while running must
	 * not stall sampling on the disk; rename alone already makes every
	 * reader see a whole old or a whole new file. */
	int rc = evidence_replace(ev->dirfd, EVIDENCE_RESOURCES, record_tmp, durable, fill_record, r,
				  &op, &left);
	if (rc < 0) {
		/* ENOENT at "create": the directory was removed under us */
		evidence_note_failure(ev, op, record_tmp, rc);
		/* the temporary file could not be removed either (the directory
		 * is read-only now): say so, for it stays where readers look; it
		 * is a whole record when only the rename failed */
		if (left && ev->fail_name == record_tmp) {
			ev->left_err = left;
			ev->left_whole = strcmp(op, "rename") == 0;
		}
	} else if (durable && fsync(ev->dirfd) < 0) {
		rc = -errno;
		evidence_note_failure(ev, "fsync", ".", rc);
	}
	return rc;
}

static int read_all(int dirfd, const char *name, char **out, size_t *len)
{
	int fd = openat(dirfd, name, O_RDONLY | O_CLOEXEC);
	struct stat st;
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) < 0 || st.st_size < 0 || st.st_size > (64 << 20)) {
		int rc = st.st_size > (64 << 20) ? -EFBIG : -errno;
		close(fd);
		return rc;
	}
	char *buf = malloc((size_t)st.st_size + 1);
	size_t got = 0;
	ssize_t n = 1;
	while (buf && got < (size_t)st.st_size &&
	       ((n = read(fd, buf + got, (size_t)st.st_size - got)) > 0 || (n < 0 && errno == EINTR)))
		got += n > 0 ? (size_t)n : 0;
	int rc = !buf ? -ENOMEM : n < 0 ? -errno : 0;
	close(fd);
	if (rc < 0) {
		free(buf);
		return rc;
	}
	*out = buf;
	*len = got;
	return 0;
}

struct chunk {
	const char *p;
	size_t len;
};

static int fill_chunk(int fd, const void *ctx)
{
	const struct chunk *c = ctx;
	for (size_t off = 0; off < c->len;) {
		ssize_t n = write(fd, c->p + off, c->len - off);
		if (n < 0 && errno != EINTR)
			return -errno;
		off += n > 0 ? (size_t)n : 0;
	}
	return 0;
}

int evidence_mark_killed(int dirfd, const char *error)
{
	char *text = NULL, *patched;
	size_t len = 0, plen;
	int rc = read_all(dirfd, EVIDENCE_RESOURCES, &text, &len);
	if (rc < 0)
		return rc;
	rc = resources_patch_killed(text, len, error, &patched, &plen);
	free(text);
	if (rc < 0)
		return rc;
	/* memsup may have died half way through its own temporary file:
	 * evidence_replace truncates it */
	struct chunk c = { patched, plen };
	rc = evidence_replace(dirfd, EVIDENCE_RESOURCES, record_tmp, 1, fill_chunk, &c, NULL, NULL);
	free(patched);
	if (rc == 0)
		fsync(dirfd);
	return rc;
}

struct json_doc {
	unsigned indent, lines;
	void (*put)(struct jsonw *w, const void *ctx);
	const void *ctx;
};

static int fill_json(int fd, const void *ctx)
{
	const struct json_doc *d = ctx;
	/* on the heap: a jsonw holds a 4 KiB buffer */
	struct jsonw *w = malloc(sizeof *w);
	if (!w)
		return -ENOMEM;
	jsonw_init(w, fd, d->indent);
	if (d->lines)
		jsonw_lines(w, d->lines);
	d->put(w, d->ctx);
	int rc = jsonw_finish_line(w);
	free(w);
	return rc;
}

int evidence_write_json(int dirfd, const char *name, unsigned indent, unsigned lines,
			void (*put)(struct jsonw *w, const void *ctx), const void *ctx)
{
	struct json_doc d = { indent, lines, put, ctx };
	return evidence_replace_simple(dirfd, name, fill_json, &d);
}
