/* relay.h: the command's stdout and stderr on their way to memsup's own
 * and into DIR/stdout.log (--output MODE, --log-max SIZE).
 *
 *   tee      (the default) each stream through a pipe of its own; memsup
 *            moves the bytes on to its own fd 1 or fd 2, unchanged and
 *            unmerged, and keeps them in stdout.log: both streams, each
 *            in its own order, interleaved as memsup receives them.  The
 *            bytes move with tee(2) and splice(2) (no copy through memsup)
 *            wherever the kernel takes them.  The log keeps the first and
 *            the last part of them, log_max bytes in all (keep.h).
 *   log      without a bound (the default for log), the command's stdout
 *            and stderr are stdout.log itself (O_APPEND, one file
 *            description): the exact interleaving, nothing passes through.
 *            measure_command's behaviour.  With a bound, they are one pipe that
 *            memsup reads into the log as tee does (in the order written),
 *            passing nothing on.
 *   inherit  the command gets memsup's own fd 1 and fd 2 (a terminal stays
 *            a terminal); nothing is logged, there is no stdout.log.
 * stdin passes through in every mode: the command inherits memsup's fd 0.
 *
 * Back-pressure: memsup never blocks on its own stdout or stderr while the
 * run goes on.  A pipe is written with SPLICE_F_NONBLOCK, a socket with
 * MSG_DONTWAIT, a terminal or other device through a private non-blocking
 * file description (opened again through /proc/self/fd, so the shell's
 * stays as it was; where that open fails, memsup's own, which may block);
 * a regular file is written as the disk allows.  When
 * the reader is slow, memsup stops reading the command's pipe, which fills,
 * and the command waits in write(2) as it would writing to that reader
 * itself.  When the reader is gone (EPIPE) or the write fails otherwise,
 * memsup puts in stdout.log what it has read, and closes its read end of
 * that stream's pipe: the command's next write there gets EPIPE/SIGPIPE, as
 * without memsup.  What the command wrote between memsup's last read and
 * that close stays in the pipe (a write end opened again through
 * /proc/self/fd keeps it) and goes into stdout.log at the end.
 *
 * Return convention: 0 or -errno.  Only the relay touches the names of
 * modes and ends (relay_mode_name, relay_end_name).
 */
#ifndef MEMSUP_RELAY_H
#define MEMSUP_RELAY_H

#include <poll.h>
#include <stddef.h>
#include <stdint.h>

enum relay_mode {
	RELAY_TEE = 0,
	RELAY_LOG,
	RELAY_INHERIT,
	RELAY_MODE_COUNT
};

/* How a stream's pass-through ended (tee only). */
enum relay_end {
	RELAY_END_COMPLETE = 0, /* every byte reached memsup's own fd */
	RELAY_END_NOT_OPEN,     /* memsup's fd was closed when it started: logged only */
	RELAY_END_READER_GONE,  /* EPIPE (or ECONNRESET): the command got EPIPE after */
	RELAY_END_WRITE_FAILED, /* another error (err): the command got EPIPE after */
	RELAY_END_CUT,          /* memsup stopped waiting for a slow reader at the end
				   (a signal, the wall budget): the rest is logged only */
	RELAY_END_COUNT
};

#define RELAY_STREAMS 2 /* 0: stdout, 1: stderr */

/* --log-max: no bound; and the bound tee gets when none is given (log gets
 * none): the first and the last MiB of the output. */
#define RELAY_LOG_UNLIMITED UINT64_MAX
#define RELAY_LOG_MAX_DEFAULT (2ull << 20)

struct relay_stream_report {
	uint64_t bytes;       /* what the command wrote: logged + left_out */
	uint64_t passed;      /* what reached memsup's own fd */
	uint64_t logged;      /* of bytes, in stdout.log (so far: the head and the
				 tail as it would be written now) */
	uint64_t left_out;    /* of bytes, not in stdout.log (--log-max) */
	enum relay_end end;
	int err;              /* errno of RELAY_END_WRITE_FAILED, else 0 */
};

/* The record's "output" (resources.h). */
struct relay_report {
	enum relay_mode mode;
	int logged;           /* stdout.log holds the command's output (not inherit) */
	int have_log_bytes;   /* log_bytes is known (stdout.log exists) */
	uint64_t log_bytes;   /* stdout.log's size when reported (at the end: all) */
	int bounded;          /* logged, and --log-max bounds the log */
	uint64_t log_max;     /* the bound, in bytes, when bounded */
	int have_bytes;       /* memsup read the output (tee, or log bounded): bytes */
	uint64_t bytes;       /* what the command wrote, both streams */
	uint64_t left_out;    /* of it, not in stdout.log (0 in log mode unbounded) */
	int have_streams;     /* tee: stream[] below */
	struct relay_stream_report stream[RELAY_STREAMS];
};

/* "tee", "log", "inherit"; NULL out of range. */
const char *relay_mode_name(enum relay_mode mode);
/* The mode a name gives: 0, or -EINVAL for a name that is none of them. */
int relay_mode_parse(const char *name, enum relay_mode *out);
/* "complete", "not_open", "reader_gone", "write_failed", "cut". */
const char *relay_end_name(enum relay_end end);

struct relay;

/* Before anything else opens a file: fds 0, 1 and 2 that are closed get
 * /dev/null with FD_CLOEXEC (so that no later file takes their number,
 * and the command still finds them closed), and, for tee, the two pipes
 * and what memsup's own fd 1 and fd 2 are; for log with a bound, the one
 * pipe.  log_max: the most stdout.log keeps of the output, in bytes
 * (RELAY_LOG_UNLIMITED: all; ignored for inherit); its tail's ring is
 * allocated here.  *out is NULL on failure. */
int relay_open(struct relay **out, enum relay_mode mode, uint64_t log_max);
/* stdout.log (evidence.h), -1 in inherit mode.  When memsup writes it (tee,
 * log with a bound) its O_APPEND is cleared: splice(2) refuses such a
 * target, and only memsup writes it. */
int relay_set_log(struct relay *r, int log_fd);
/* The command's fd 1 and fd 2 (spawn.h): -1 for "keep memsup's own". */
void relay_child_fds(const struct relay *r, int *out_fd, int *err_fd);
/* After the fork (whether exec worked or not): memsup's copies of the
 * command's write ends are closed, so that the pipes end when it does. */
void relay_started(struct relay *r);

#define RELAY_POLL_SLOTS 4

/* What to wait for now, in pfd[0..RELAY_POLL_SLOTS) (fd -1: nothing). */
void relay_poll_set(struct relay *r, struct pollfd pfd[RELAY_POLL_SLOTS]);
/* After a poll over those slots: move what can move without blocking.
 * 0, or -errno when a write to stdout.log failed: the evidence failed, and
 * the relay stops. */
int relay_pump(struct relay *r, const struct pollfd pfd[RELAY_POLL_SLOTS]);

/* When relay_poll_set() wants to be asked again (CLOCK_MONOTONIC ns): a
 * stream that found little at its last look is looked at again only a
 * millisecond later, so that a command writing small pieces does not
 * wake memsup for each; 0: no such time. */
uint64_t relay_wake_ns(const struct relay *r);

/* What may end relay_finish()'s wait: when `fd` turns readable, `stop`
 * (NULL: always yes) says whether to stop. */
struct relay_stop {
	int fd;                   /* -1: none */
	int (*stop)(void *ctx);
	void *ctx;
};

/* The run is over (every process of the tree gone): the rest into
 * stdout.log, and on to memsup's fds, waiting for a slow reader until it
 * has taken everything, `stop` says so, or CLOCK_MONOTONIC reaches
 * `deadline_ns` (0: none); after a stop the rest is only logged.  Then,
 * when bytes were left out, the marker and the tail (keep.h).  0, or
 * -errno when a write to stdout.log failed. */
int relay_finish(struct relay *r, const struct relay_stop *stop, uint64_t deadline_ns);

/* What the relay did, for the record. */
void relay_report(const struct relay *r, struct relay_report *out);

void relay_close(struct relay *r);

#endif /* MEMSUP_RELAY_H */
