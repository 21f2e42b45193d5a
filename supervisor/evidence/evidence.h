/* evidence.h: the evidence directory, its line files and its write failures.
 *
 *   DIR/stdout.log      the command's stdout and stderr (O_APPEND; relay.h
 *                       says who writes it); none with --output inherit
 *   DIR/rss.jsonl       one "[elapsed_s, tree_rss_bytes]" line per sample
 *   DIR/timeline.jsonl  one JSON object per sample: tree RSS, processes,
 *                       traced heap and mappings, the largest members
 *                       (both line formats: timeline.h)
 *   DIR/resources.json  the record (resources.h), replaced atomically:
 *                       written to a temporary file, renamed over; fsync'd
 *                       (file and directory) when `durable`, i.e. at the
 *                       start and at the end.
 *
 * Return convention: 0 or -errno.  All JSON goes through jsonw.
 */
#ifndef MEMSUP_EVIDENCE_H
#define MEMSUP_EVIDENCE_H

#include <limits.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "jsonw.h"

struct sup_record; /* runrecord.h */
struct timeline_sample; /* timeline.h */

struct evidence {
	int dirfd;
	int log_fd;                /* stdout.log (relay.h); -1: none */
	int rss_fd;                /* rss.jsonl */
	int tl_fd;                 /* timeline.jsonl */
	int fold_fd;               /* records.fold (fold.h): -1 until a traced
				      run asks for it */
	char path[PATH_MAX];       /* absolute path of the directory */
	struct jsonw rss_w;        /* rss.jsonl lines, buffered (see below) */
	struct jsonw tl_w;         /* timeline.jsonl lines, the same way */
	off_t rss_whole, tl_whole; /* bytes of whole lines in each file */
	/* The first write that failed (evidence_fail_describe() words it):
	 * the step and the file name inside the directory; NULL: none. */
	const char *fail_op, *fail_name;
	int fail_err;              /* its -errno */
	/* The failed write's temporary file, when it could not be removed
	 * either (the directory made read-only between the create and the
	 * rename): its -errno, 0: nothing left; left_whole: it was written
	 * and closed whole before the step that failed. */
	int left_err;
	int left_whole;
};

/* Create `path` (parents as needed; the last component must be new: -EEXIST
 * otherwise), its stdout.log when `with_log`, rss.jsonl and timeline.jsonl.
 * On failure nothing is left open; *failed_at names the step. */
int evidence_create(struct evidence *ev, const char *path, int with_log,
		    const char **failed_at);
void evidence_close(struct evidence *ev);

/* Buffered: whole lines reach the file when the buffer would overflow, at
 * evidence_flush_samples() (run.c calls it about once a second) and at
 * evidence_close().  One write(2) per sample would be most of memsup's
 * per-sample cost on machines where syscalls are dear.  A flush that fails
 * (ENOSPC, EFBIG, EIO) after writing part of the buffer truncates the file
 * back to its last whole line, so a full disk never leaves half a line; the
 * error is sticky (later lines are dropped) and returned by every later
 * call. */
int evidence_append_sample(struct evidence *ev, double elapsed_s, uint64_t bytes);
int evidence_flush_samples(struct evidence *ev);

/* One timeline.jsonl line (timeline.h), buffered like rss.jsonl. */
int evidence_append_timeline(struct evidence *ev, const struct timeline_sample *s);
int evidence_write_record(struct evidence *ev, const struct sup_record *r, int durable);

/* records.fold, created (empty, O_RDWR | O_APPEND) at the first call:
 * where the records of ended images are folded (collect/fold.h).  The fd,
 * or -errno (noted as the run's evidence failure). */
int evidence_fold_fd(struct evidence *ev);
/* A write into the directory that failed elsewhere (the relay's into
 * stdout.log, the fold's into records.fold): `op` ("write") of `name`
 * failed with -errno `err`.  Only the first failure is kept: it is the
 * cause. */
void evidence_note_failure(struct evidence *ev, const char *op, const char *name, int err);

/* The one way a file of the evidence (or a picture) is replaced whole or
 * not at all: `tmp` in dirfd created (or truncated), fill(fd, ctx) writes
 * it, fsync'd when `durable`, closed, then renamed over `name`, so a
 * reader sees the whole old file or the whole new one.  On failure `tmp`
 * is removed; *failed_op (when not NULL) names the step that failed
 * ("create", "write", "fsync", "close", "rename") and *tmp_left (when not
 * NULL) is -errno when `tmp` could not be removed, else 0.  The directory
 * itself is not fsync'd: the caller does that when it needs to.  0 or
 * -errno. */
int evidence_replace(int dirfd, const char *name, const char *tmp, int durable,
		     int (*fill)(int fd, const void *ctx), const void *ctx,
		     const char **failed_op, int *tmp_left);
/* The same with tmp = NAME.tmp, not durable; 0, -ENAMETOOLONG or -errno. */
int evidence_replace_simple(int dirfd, const char *name,
			    int (*fill)(int fd, const void *ctx), const void *ctx);

/* One JSON document written whole or not at all: NAME.tmp in dirfd, then
 * renamed to NAME.  put() writes the document into w, set up with
 * `indent` spaces per level (0: compact) and jsonw_lines(w, lines) when
 * lines > 0.  0, or -errno (NAME.tmp removed). */
int evidence_write_json(int dirfd, const char *name, unsigned indent, unsigned lines,
			void (*put)(struct jsonw *w, const void *ctx), const void *ctx);

/* memsup was killed mid-run: its sentinel rewrites dirfd's resources.json
 * (atomically, durably) with reason "supervisor_killed" and `error`
 * (resources_patch_killed()).  0; -ENOENT when the record is not a running
 * one (left as it is); -errno. */
int evidence_mark_killed(int dirfd, const char *error);

/* The first failed write as "OP DIR/NAME: strerror" into buf (cap bytes);
 * returns 0, or -1 (buf "") when nothing failed. */
int evidence_fail_describe(const struct evidence *ev, char *buf, size_t cap);

#endif /* MEMSUP_EVIDENCE_H */
