/* transcript.h: --output transcript: the command on a pseudo-terminal of
 * its own, relayed to memsup's terminal and copied into DIR/stdout.log, as
 * script(1) does.
 *
 * The command's session has the pty's slave as its controlling terminal
 * and as stdin, stdout and stderr (spawn.h, SPAWN_PTY): it sees a
 * terminal, with memsup's terminal modes and window size to begin with.
 * memsup puts its own terminal in raw mode while it is the foreground job
 * there (terminal.h), passes what is typed to the pty -- ^C, ^\ and ^Z too,
 * as bytes: the pty's line discipline turns them into the command's
 * signals -- and what the pty shows to its own stdout and into the log:
 * the command's stdout and stderr as the terminal showed them, with the
 * echo of what was typed.  A window size change (memsup's SIGWINCH) is
 * passed on to the pty, which signals the command.
 *
 * ^Z: the command leads the pty's session, as under script(1), so its own
 * process group is orphaned and the kernel would discard the SIGTSTP the
 * pty sends it.  When the pty would send it there, memsup stops that group
 * with SIGSTOP instead (the key itself is not passed on), and the stop goes
 * up to memsup's shell as for a job (terminal.h).  After `fg` the command
 * is sent SIGWINCH too, so that a full-screen program draws its screen
 * again.  A job of a shell inside the transcript gets ^Z from the pty as
 * usual.
 *
 * memsup never blocks on its terminal: its stdout is written through a
 * private non-blocking description (as relay.h does), and while that is
 * full memsup stops reading the pty, whose buffer then fills and makes the
 * command wait, as a slow terminal would.  stdout.log is written as the
 * disk allows: the first and last parts of what the pty showed when
 * --log-max bounds it (keep.h; the tee default), all of it when unlimited.
 *
 * Return convention: 0 or -errno.
 */
#ifndef MEMSUP_TRANSCRIPT_H
#define MEMSUP_TRANSCRIPT_H

#include <poll.h>
#include <stdint.h>
#include <sys/types.h>

#include "stdio/relay.h" /* struct relay_report, struct relay_stop */

struct transcript;

/* The relay, writing the log into `log_fd` (stdout.log), at most
 * `log_max` bytes of it (KEEP_UNLIMITED: all); the pty (and
 * memsup's own description of its stdout) is made at transcript_start().
 * *out is NULL on failure. */
int transcript_open(struct transcript **out, int log_fd, uint64_t log_max);

/* Make the pseudo-terminal, with the modes and size of memsup's terminal
 * (fd `term`, -1: the defaults): *slave is the command's terminal, open
 * until transcript_started().  Made only now, after memsup's sentinel has
 * forked, so that no other process holds the slave: the pty ends (EIO)
 * when the command's tree is gone. */
int transcript_start(struct transcript *t, int term, int *slave);
/* After the fork: memsup's copy of the slave closed; `leader` is the
 * command (the pty's session leader), 0 when it did not start. */
void transcript_started(struct transcript *t, pid_t leader);

/* Whether the command's last stop was memsup's SIGSTOP for a ^Z (a
 * SIGTSTP to pass up); asking clears it. */
int transcript_suspended(struct transcript *t);

/* The command continued: SIGWINCH to the pty's foreground group, for a
 * full-screen program to draw again. */
void transcript_redraw(struct transcript *t);

/* SIGWINCH: the size of memsup's terminal `term` onto the pty. */
void transcript_resize(struct transcript *t, int term);

#define TRANSCRIPT_POLL_SLOTS 3

/* What to wait for now (fd -1: nothing); memsup's stdin is read only when
 * `input` (memsup is the foreground job at its terminal: reading it in the
 * background would stop memsup). */
void transcript_poll_set(struct transcript *t, struct pollfd pfd[TRANSCRIPT_POLL_SLOTS],
			 int input);
/* Move what can move without blocking.  0, or -errno when a write to
 * stdout.log failed: the evidence failed. */
int transcript_pump(struct transcript *t, const struct pollfd pfd[TRANSCRIPT_POLL_SLOTS]);

/* The tree is gone: the rest of what the pty holds into the log, and to
 * memsup's stdout until it has taken it all, `stop` says so, or
 * CLOCK_MONOTONIC reaches deadline_ns (0: none).  0 or -errno of the log. */
int transcript_finish(struct transcript *t, const struct relay_stop *stop, uint64_t deadline_ns);

/* For the record: stdout.log holds the transcript. */
void transcript_report(const struct transcript *t, struct relay_report *out);

void transcript_close(struct transcript *t);

#endif /* MEMSUP_TRANSCRIPT_H */
