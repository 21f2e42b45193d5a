/* outfile.h: the MEMTRACE_OUT file, the channel the ending image's JSON
 * (report.c) and the standalone tree's (summary.c) are written to: how it
 * is opened, how a write to it is guarded, how a failure is said.  The
 * dispatch (what is said, and where) is report.h's.  Async-signal-safe:
 * raw system calls, stack buffers.
 */
#ifndef MEMTRACE_OUTFILE_H
#define MEMTRACE_OUTFILE_H

#include <signal.h>

/* Opens a MEMTRACE_OUT file for writing (created 0644, truncated, never
 * through a symbolic link) without ever waiting in open(2): a FIFO no
 * process reads is not waited for (ENXIO).  The fd, or -errno after
 * outfile_failed said so. */
int outfile_open(const char *path);
/* One line on the original stderr (errfd.h): "memtrace[PID]: MEMTRACE_OUT
 * path: not written: step: ENAME (errno N)", and what the path is where
 * that explains the error. */
void outfile_failed(const char *path, const char *step, int err);

/* Around a write to a MEMTRACE_OUT file: SIGPIPE blocked in this thread,
 * so that a FIFO whose reader went away is an EPIPE said (rc, -errno, as
 * the write returned it), not a signal that ends the program at its exit
 * with another status; the SIGPIPE the write raised is taken before the
 * mask is put back. */
struct outfile_guard {
	sigset_t old;
	int blocked, pending;
};
void outfile_guard_begin(struct outfile_guard *g);
void outfile_guard_end(struct outfile_guard *g, int rc);

#endif /* MEMTRACE_OUTFILE_H */
