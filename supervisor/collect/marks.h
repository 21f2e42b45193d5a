/* marks.h: the marks file, the channel any program of the tree marks a
 * phase through (the format's one reader).
 *
 * memsup creates DIR/marks and exports its absolute path to the command as
 * MEMSUP_MARK.  A writer appends one line per marker: the label, then
 * optionally TAB-separated key=value fields the writer knows and memsup
 * cannot read from /proc: pid=N, maxrss_kb=N, maxrss_children_kb=N and
 * mono_ns=N (its CLOCK_MONOTONIC time).  They are the writer's word;
 * analyze/phases decides what to believe.  A regular file, not a FIFO: a
 * writer never blocks, even after memsup is gone.  An inotify watch
 * (IN_MODIFY) wakes memsup at the write, so a marker is stamped when it
 * was written rather than at the next sample; without inotify the file is
 * read at every sample.
 *
 * Not thread-safe.  Return convention: 0 or -errno.
 */
#ifndef MEMSUP_MARKS_H
#define MEMSUP_MARKS_H

#include <stddef.h>
#include <stdint.h>

#define MARKS_LINE_BYTES 4096u   /* a longer line is cut at this many bytes */
#define MARKS_READ_BUDGET 65536u /* bytes read per marks_read() but the last */

struct marks_file;

/* One line, parsed.  label is not NUL-terminated; fields absent or not a
 * plain decimal are 0 (pid) or -1 (the others). */
struct marks_line {
	const char *label;
	size_t label_len;
	int label_cut;             /* the line was longer than MARKS_LINE_BYTES
				      and had no field: its label was cut */
	int32_t pid;               /* pid=, 1..INT32_MAX, else 0 */
	int64_t maxrss_kb, maxrss_children_kb, mono_ns;
};

/* Create DIR/marks (dirfd; it must not exist) and keep `dirpath` for the
 * environment entry.  No inotify is not an error (marks_fd is then -1). */
int marks_open(struct marks_file **out, int dirfd, const char *dirpath);
void marks_close(struct marks_file *mf);

/* "MEMSUP_MARK=<absolute path of DIR/marks>". */
const char *marks_env_entry(const struct marks_file *mf);

/* The inotify descriptor to poll for POLLIN, or -1: read at every sample. */
int marks_fd(const struct marks_file *mf);

/* Hand every new whole line to take(ctx, line), in file order, reading at
 * most MARKS_READ_BUDGET bytes; `final` (the end of the run) reads all
 * that is there, and a last line without its newline counts too. */
typedef void (*marks_take_fn)(void *ctx, const struct marks_line *line);
void marks_read(struct marks_file *mf, int final, marks_take_fn take, void *ctx);

/* The fields of one line (pure: the parser marks_read uses). */
void marks_parse(const char *s, size_t len, struct marks_line *out);

#endif /* MEMSUP_MARKS_H */
