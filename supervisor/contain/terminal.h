/* terminal.h: the command as a foreground job at memsup's terminal, the
 * way a shell runs one.
 *
 * When memsup's stdin or stdout is a terminal and --output is not given
 * (terminal_choose), the command gets memsup's stdin, stdout and stderr as
 * they are, and a process group of its own in memsup's session (spawn.h,
 * SPAWN_PGRP) instead of a session of its own.  Where that terminal is
 * memsup's controlling terminal and memsup's group is its foreground group,
 * the command's group becomes the foreground group: ^C, ^\ and ^Z go to the
 * command and not to memsup, the command reads the terminal, opens
 * /dev/tty, and gets SIGWINCH when the window changes size.  memsup stays in
 * its own group -- the job its shell knows -- and reads no signal the
 * terminal sends while the command has it.
 *
 * Job control through memsup, as a shell would do it:
 *   - the command's main process stops (^Z, SIGSTOP, or SIGTTIN/SIGTTOU
 *     from reading or writing the terminal in the background):
 *     terminal_stop() takes the terminal back (saving the command's
 *     terminal modes and foreground group) and stops memsup's own group
 *     with the same signal, so that the shell above sees its job stop;
 *   - memsup is continued (`fg`, `bg`; SIGCONT): terminal_resume() gives
 *     the terminal back to the command's group when memsup is the
 *     foreground again (with the modes the command had), then SIGCONTs
 *     the command's group if it was stopped; after `bg` the command runs
 *     in the background, as it would without memsup;
 *   - the run ends: terminal_take_back() makes memsup's group the
 *     foreground again, restoring the modes memsup started with when the
 *     command did not end on its own (a signal, a budget): a command killed
 *     in raw mode leaves no raw terminal behind.
 * memsup ignores SIGTTOU while the run goes on (it must set the
 * foreground group from the background) and restores it at
 * terminal_close().
 *
 * Where memsup does not lead its process group, it is one process among
 * others of a job -- a script's, make's, a pipeline's that it does not
 * start -- and taking the terminal from them would take their ^C and ^Z
 * away: then the command stays in memsup's group (terminal->shared), as
 * time(1) runs a command.  The terminal's signals reach the whole group;
 * memsup ignores SIGINT and SIGQUIT while the command runs, and stops with
 * the others on ^Z, with nothing to pass up.
 *
 * Where memsup's group is not the terminal's foreground group at the start
 * (`memsup -- cmd &`), the command starts in the background; the first time
 * it touches the terminal it stops (SIGTTIN), memsup stops with it, and
 * `fg` gives it the terminal.  Where memsup has no controlling terminal, the
 * command only inherits the descriptors.
 *
 * Return convention: 0 or -errno.  One per run; not thread-safe.
 */
#ifndef MEMSUP_TERMINAL_H
#define MEMSUP_TERMINAL_H

#include <signal.h>
#include <sys/types.h>
#include <termios.h>

/* What the command gets of memsup's terminal. */
enum terminal_mode {
	TERMINAL_NONE = 0,  /* a session of its own; its output per --output */
	TERMINAL_JOB,       /* memsup's stdin, stdout and stderr, as a foreground
			       job: the record's output mode "terminal" */
	TERMINAL_TRANSCRIPT, /* --output transcript: a pseudo-terminal of its
			       own (transcript.h); memsup keeps its terminal, in
			       raw mode while it is the foreground job there */
	TERMINAL_MODE_COUNT
};

/* "terminal" for TERMINAL_JOB, "transcript" for TERMINAL_TRANSCRIPT; NULL
 * for TERMINAL_NONE (the output mode is the relay's) and out of range. */
const char *terminal_mode_name(enum terminal_mode mode);

/* The mode of a run: TERMINAL_JOB when --output was not given and memsup's
 * stdin or stdout is a terminal (in_tty, out_tty: isatty of fd 0 and 1);
 * else TERMINAL_NONE.  Pure. */
enum terminal_mode terminal_choose(int output_given, int in_tty, int out_tty);

/* --output's values that are terminal modes: "transcript" gives
 * TERMINAL_TRANSCRIPT; -EINVAL (and *out untouched) for any other. */
int terminal_mode_parse(const char *name, enum terminal_mode *out);

struct terminal {
	enum terminal_mode mode;
	int shared;                /* TERMINAL_JOB: memsup does not lead its
				      group: the command stays in it (SPAWN_KEEP) */
	int raw;                   /* TERMINAL_TRANSCRIPT: memsup made its
				      terminal raw and has not put it back */
	int fd;                    /* memsup's controlling terminal (a private
				      dup of fd 0, 1 or 2); -1: none */
	pid_t own_pgrp;            /* memsup's process group */
	pid_t job_pgrp;            /* the command's group (its main pid); 0 */
	pid_t given;               /* the group memsup made the foreground and
				      has not taken back; 0: none */
	pid_t resume_to;           /* the foreground group memsup took the
				      terminal from at a stop (the command's,
				      or a job of a shell inside it); 0 */
	int stopped;               /* the command's main process is stopped */
	unsigned stops;            /* how many times it stopped */
	int have_start_modes, have_job_modes;
	struct termios start_modes; /* the terminal as the run began */
	struct termios job_modes;  /* the command's, when it last stopped */
	struct sigaction old_ttou; /* SIGTTOU's disposition before the run */
};

/* Find memsup's controlling terminal among fds 0, 1, 2 (for a transcript:
 * fd 0, the terminal typed at) -- t->fd -1 when none is --, save its
 * modes, and ignore SIGTTOU.  Never fails: a run without a controlling
 * terminal just has none to give. */
void terminal_open(struct terminal *t, enum terminal_mode mode);

/* The fd spawn.h's tty wants: the terminal when memsup's group is its
 * foreground group now (the command's group then takes it from inside the
 * child as well, before exec), else -1. */
int terminal_fg_fd(const struct terminal *t);

/* After the fork: `pgrp` (the command's pid) is the command's group; the
 * terminal's foreground when memsup's group had it.  For a transcript,
 * memsup's terminal goes raw instead, when memsup is its foreground job. */
void terminal_give(struct terminal *t, pid_t pgrp);

/* The command's main process stopped with `sig`: take the terminal back
 * and stop memsup's group the same way.  Returns when memsup runs again:
 * 1 when it had stopped (and was continued: call terminal_resume), 0 when
 * the kernel would not stop it (an orphaned process group: no shell could
 * continue it) -- then, for ^Z, the command is continued as the terminal
 * would have let it run; for SIGTTIN/SIGTTOU/SIGSTOP it stays stopped. */
int terminal_stop(struct terminal *t, int sig);

/* memsup was continued (SIGCONT; again is harmless): the terminal to the
 * command's group if memsup is the foreground now, then SIGCONT to the
 * command's group if it is stopped. */
void terminal_resume(struct terminal *t);

/* The run is over: memsup's group the foreground again, if memsup had
 * given it away; the modes of the start back when `restore_modes`. */
void terminal_take_back(struct terminal *t, int restore_modes);

/* Whether memsup has given its terminal to the command (and not taken it
 * back; for a transcript: made it raw): a SIGINT or SIGQUIT memsup gets
 * meanwhile did not come from the terminal, and a transcript reads what
 * is typed. */
int terminal_given(const struct terminal *t);

/* SIGTTOU as it was; the fd closed.  Again is harmless. */
void terminal_close(struct terminal *t);

#endif /* MEMSUP_TERMINAL_H */
