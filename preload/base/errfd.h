/* errfd.h: where the shim's own words go: the program's original stderr,
 * whatever the program did to its descriptor 2 before it ended.
 *
 * Many programs close stdout and stderr in an atexit handler (gnulib's
 * close_stdout: ls, cat, sort, grep, tar), which runs before the shim's
 * exit report; others dup2 /dev/null over fd 2 or make it non-blocking.
 * The shim must neither lose its report nor keep the program's stderr open
 * longer than the program would (a daemon that closes it to detach must
 * let a reader see end of file), nor write into whatever fd 2 became.
 *
 *  - At start (errfd_note_start) the shim remembers what fd 2 is: its
 *    device and inode, and for a terminal or a regular file its path.
 *  - When the program closes fd 2 (close, or fclose of stderr) while it is
 *    the last descriptor of the process on the original stderr, and the
 *    image will speak at its end, the shim keeps a close-on-exec duplicate
 *    (errfd_before_close): the process is ending (gnulib's close_stdout
 *    runs in an atexit handler, GNU tar closes at the end of main), and the
 *    duplicate goes with it.  A fork child drops the duplicate it inherited
 *    (errfd_in_child): a daemon that forks and detaches holds nothing.  A
 *    dup2 over fd 2 takes nothing: that is how daemons and servers
 *    redirect, and the old reader must see end of file.
 *  - errfd_write writes to that duplicate; without one, to a descriptor
 *    that is the original stderr now (fd 2, or any other open descriptor on
 *    the same file: 2>&1 puts stdout there too); else, for a terminal or a
 *    regular file, to the same file opened again by path (append), if it
 *    still is the same file; else nowhere: a pipe or socket that the program
 *    took away with dup2, or closed some other way (close_range), has no way
 *    back.  A non-blocking descriptor is waited on with poll, at most a
 *    second in all.
 * Async-signal-safe: raw system calls, no allocation.
 */
#ifndef MEMTRACE_ERRFD_H
#define MEMTRACE_ERRFD_H

#include <stddef.h>

void errfd_note_start(void);
/* fd (2) is about to be closed: keep a duplicate if it is the last
 * descriptor on the original stderr. */
void errfd_before_close(int fd);
/* In a fork child: the parent's duplicate is not the child's to keep. */
void errfd_in_child(void);
/* Writes all of buf to the original stderr; 0, or -errno (-ENOENT when
 * there is no way to it). */
int errfd_write(const char *buf, size_t n);
/* With MEMTRACE_DEBUG=1, one line on the original stderr:
 * "memtrace[PID]: debug: " and the strings given, up to a NULL; nothing
 * otherwise.  For the decisions a run does not show (which lineage was
 * taken or guessed, where the record went, the standalone tree). */
void errfd_debug(const char *first, ...) __attribute__((sentinel));

/* Appends "ENXIO (errno 6)" for err 6 (the name where the C library has
 * one), for the shim's error lines. */
struct textbuf;
void errfd_add_errno(struct textbuf *s, int err);

#endif /* MEMTRACE_ERRFD_H */
