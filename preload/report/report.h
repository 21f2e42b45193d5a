/* report.h: what the shim says about one image when it ends (exit/_exit;
 * nothing when it execs):
 *  - MEMTRACE_OUT with %p: that image's JSON, at the pattern with %p
 *    replaced by the pid;
 *  - MEMTRACE_SUMMARY=each (and no MEMTRACE_DIR of the user's): its short
 *    human block on the original stderr (errfd.h);
 *  - the root of a standalone tree: the tree's summary (summary.h).
 * Async-signal-safe: raw write(2), stack buffers, integers only.
 */
#ifndef MEMTRACE_REPORT_H
#define MEMTRACE_REPORT_H

#include <signal.h>

#include "record.h"

void report_end(const struct mt_record *r);
/* 1 if report_end(r) will write to stderr (so stderr must be kept). */
int report_will_speak(const struct mt_record *r);
/* MEMTRACE_OUT pattern with %p replaced by pid (%% -> %); 0 or -ENAMETOOLONG. */
int report_expand_path(const char *pattern, int pid, char *out, size_t cap);

/* Opens a MEMTRACE_OUT file for writing (created 0644, truncated, never
 * through a symbolic link) without ever waiting in open(2): a FIFO no
 * process reads is not waited for (ENXIO).  The fd, or -errno after
 * report_out_failed said so. */
int report_out_open(const char *path);
/* One line on the original stderr (errfd.h): "memtrace[PID]: MEMTRACE_OUT
 * path: not written: step: ENAME (errno N)", and what the path is where
 * that explains the error. */
void report_out_failed(const char *path, const char *step, int err);

/* Around a write to a MEMTRACE_OUT file: SIGPIPE blocked in this thread,
 * so that a FIFO whose reader went away is an EPIPE said (rc, -errno, as
 * the write returned it), not a signal that ends the program at its exit
 * with another status; the SIGPIPE the write raised is taken before the
 * mask is put back. */
struct report_pipe_guard {
	sigset_t old;
	int blocked, pending;
};
void report_pipe_guard_begin(struct report_pipe_guard *g);
void report_pipe_guard_end(struct report_pipe_guard *g, int rc);

#endif /* MEMTRACE_REPORT_H */
