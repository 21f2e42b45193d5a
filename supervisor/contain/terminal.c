/* terminal.c: the command as a foreground job at memsup's terminal (see
 * terminal.h).  What a shell does for a job, for one job: setpgid in both
 * processes, tcsetpgrp with SIGTTOU ignored, and on a stop, the terminal
 * back and the stop passed up to memsup's own group.  For a transcript,
 * the same stops and continues with raw and cooked modes in place of the
 * foreground group. */
#include "contain/terminal.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static const char *const mode_names[TERMINAL_MODE_COUNT] = { NULL, "terminal", "transcript" };

const char *terminal_mode_name(enum terminal_mode mode)
{
	return (unsigned)mode < TERMINAL_MODE_COUNT ? mode_names[mode] : NULL;
}

int terminal_mode_parse(const char *name, enum terminal_mode *out)
{
	if (strcmp(name, mode_names[TERMINAL_TRANSCRIPT]) != 0)
		return -EINVAL;
	*out = TERMINAL_TRANSCRIPT;
	return 0;
}

enum terminal_mode terminal_choose(int output_given, int in_tty, int out_tty)
{
	return !output_given && (in_tty || out_tty) ? TERMINAL_JOB : TERMINAL_NONE;
}

void terminal_open(struct terminal *t, enum terminal_mode mode)
{
	memset(t, 0, sizeof *t);
	t->mode = mode;
	t->fd = -1;
	t->own_pgrp = getpgrp();
	t->shared = mode == TERMINAL_JOB && t->own_pgrp != getpid();
	/* memsup sets the foreground group from the background (taking the
	 * terminal back from the command): without this, the kernel would
	 * stop it with SIGTTOU for trying */
	struct sigaction ign;
	memset(&ign, 0, sizeof ign);
	ign.sa_handler = SIG_IGN;
	sigaction(SIGTTOU, &ign, &t->old_ttou);
	pid_t sid = getsid(0);
	for (int fd = 0; fd < 3; fd++) {
		/* tcgetsid answers only for the caller's controlling terminal;
		 * a transcript's is the one typed at, whoever's it is */
		if (mode == TERMINAL_TRANSCRIPT ? fd != 0 || !isatty(fd)
						: !isatty(fd) || tcgetsid(fd) != sid)
			continue;
		t->fd = fcntl(fd, F_DUPFD_CLOEXEC, 3);
		break;
	}
	if (t->fd >= 0 && tcgetattr(t->fd, &t->start_modes) == 0)
		t->have_start_modes = 1;
}

int terminal_fg_fd(const struct terminal *t)
{
	return t->fd >= 0 && tcgetpgrp(t->fd) == t->own_pgrp ? t->fd : -1;
}

/* A transcript's terminal may be set: memsup is its foreground job, or it
 * is not memsup's controlling terminal (no job control to respect). */
static int may_set(const struct terminal *t)
{
	return t->fd >= 0 && (tcgetpgrp(t->fd) == t->own_pgrp || tcgetsid(t->fd) != getsid(0));
}

/* A transcript: memsup's terminal raw (every key a byte for the pty, ^C
 * and ^Z too), or back as it was. */
static void set_raw(struct terminal *t)
{
	struct termios raw = t->start_modes;
	if (!t->have_start_modes || !may_set(t))
		return;
	cfmakeraw(&raw);
	if (tcsetattr(t->fd, TCSADRAIN, &raw) == 0)
		t->raw = 1;
}

static void set_cooked(struct terminal *t)
{
	if (t->raw && may_set(t))
		tcsetattr(t->fd, TCSADRAIN, &t->start_modes);
	t->raw = 0;
}

/* Whether process group g has no process left. */
static int group_gone(pid_t g)
{
	return kill(-g, 0) < 0 && errno == ESRCH;
}

void terminal_give(struct terminal *t, pid_t pgrp)
{
	t->job_pgrp = pgrp;
	if (t->mode == TERMINAL_TRANSCRIPT)
		set_raw(t);
	if (t->fd < 0 || t->mode != TERMINAL_JOB || t->shared)
		return;
	/* the child may have made itself the foreground already (and even
	 * ended: then its group is gone and this fails, but it was given) */
	pid_t fg = tcgetpgrp(t->fd);
	if (fg == t->own_pgrp && tcsetpgrp(t->fd, pgrp) == 0)
		fg = pgrp;
	if (fg == pgrp)
		t->given = pgrp;
}

/* The terminal to memsup's group, saving the command's modes and putting
 * back memsup's own, when the command's group (the last one given) has
 * it. */
static void take_from_job(struct terminal *t)
{
	if (t->mode == TERMINAL_TRANSCRIPT)
		set_cooked(t); /* the command's modes stay in its pty */
	if (t->fd < 0 || !t->given || tcgetpgrp(t->fd) != t->given)
		return;
	t->have_job_modes = tcgetattr(t->fd, &t->job_modes) == 0;
	if (tcsetpgrp(t->fd, t->own_pgrp) < 0)
		return;
	t->resume_to = t->given;
	t->given = 0;
	if (t->have_start_modes)
		tcsetattr(t->fd, TCSADRAIN, &t->start_modes);
}

/* Take a pending SIGCONT off memsup (blocked by the caller): 1 if there
 * was one. */
static int take_sigcont(void)
{
	sigset_t pend, cont;
	struct timespec zero = { 0, 0 };
	sigemptyset(&cont);
	sigaddset(&cont, SIGCONT);
	if (sigpending(&pend) < 0 || !sigismember(&pend, SIGCONT))
		return 0;
	return sigtimedwait(&cont, NULL, &zero) == SIGCONT;
}

int terminal_stop(struct terminal *t, int sig)
{
	t->stopped = 1;
	t->stops++;
	take_from_job(t);
	/* Stop memsup's group as the terminal would have stopped it had memsup
	 * been in the command's group: the shell above sees its job stop and
	 * takes the terminal.  The stop signal gets its default action for the
	 * moment, and SIGCONT stays blocked, so that its arrival -- memsup was
	 * continued -- can be seen: the kernel discards SIGTSTP, SIGTTIN and
	 * SIGTTOU sent to an orphaned group, which no shell could continue. */
	sigset_t mask, old;
	struct sigaction dfl, old_act;
	memset(&dfl, 0, sizeof dfl);
	dfl.sa_handler = SIG_DFL;
	sigprocmask(SIG_SETMASK, NULL, &old);
	mask = old;
	sigaddset(&mask, SIGCONT);
	sigdelset(&mask, sig);
	sigprocmask(SIG_SETMASK, &mask, NULL);
	take_sigcont(); /* one from before says nothing of this stop */
	if (sig != SIGSTOP)
		sigaction(sig, &dfl, &old_act);
	/* the stop happens on the way out of kill(): by its return memsup has
	 * been stopped and continued, or the signal was discarded */
	kill(0, sig);
	if (sig != SIGSTOP)
		sigaction(sig, &old_act, NULL);
	int stopped = take_sigcont();
	sigprocmask(SIG_SETMASK, &old, NULL);
	if (stopped)
		return 1;
	/* Not stopped: a ^Z the terminal would have ignored; let the command
	 * run on.  A read or write of the terminal from the background, or a
	 * SIGSTOP, would only stop it again: it stays stopped. */
	if (sig == SIGTSTP)
		terminal_resume(t);
	return 0;
}

void terminal_resume(struct terminal *t)
{
	if (t->mode == TERMINAL_TRANSCRIPT && !t->raw)
		set_raw(t); /* `fg`: raw again; `bg`: not memsup's to set */
	if (t->mode == TERMINAL_JOB && !t->shared && t->fd >= 0 && t->job_pgrp > 0 &&
	    tcgetpgrp(t->fd) == t->own_pgrp) {
		/* `fg`: the terminal to the group that had it, as it had it */
		pid_t to = t->resume_to && !group_gone(t->resume_to) ? t->resume_to : t->job_pgrp;
		if (t->have_job_modes)
			tcsetattr(t->fd, TCSADRAIN, &t->job_modes);
		t->have_job_modes = 0;
		if (tcsetpgrp(t->fd, to) == 0)
			t->given = to;
	}
	if (t->stopped && t->job_pgrp > 0) {
		killpg(t->job_pgrp, SIGCONT);
		if (t->resume_to && t->resume_to != t->job_pgrp)
			killpg(t->resume_to, SIGCONT);
	}
	t->stopped = 0;
}

void terminal_take_back(struct terminal *t, int restore_modes)
{
	if (t->mode == TERMINAL_TRANSCRIPT)
		set_cooked(t);
	if (t->fd < 0 || t->mode != TERMINAL_JOB)
		return;
	/* Memsup's group gets the terminal when the command's group has it,
	 * or when the group that has it is gone (a group the tree made, killed
	 * with it); not when the shell above took it (memsup was stopped and
	 * put in the background). */
	pid_t fg = tcgetpgrp(t->fd);
	if (t->given && fg > 0 && fg != t->own_pgrp &&
	    (fg == t->given || fg == t->job_pgrp || group_gone(fg)))
		tcsetpgrp(t->fd, t->own_pgrp);
	if (restore_modes && t->have_start_modes && tcgetpgrp(t->fd) == t->own_pgrp)
		tcsetattr(t->fd, TCSADRAIN, &t->start_modes);
	t->given = 0;
}

int terminal_given(const struct terminal *t)
{
	if (t->mode == TERMINAL_TRANSCRIPT)
		return t->raw;
	/* a shared group's terminal is the command's as much as memsup's */
	return t->shared || t->given != 0;
}

void terminal_close(struct terminal *t)
{
	if (t->fd >= 0)
		close(t->fd);
	t->fd = -1;
	if (t->own_pgrp) {
		sigaction(SIGTTOU, &t->old_ttou, NULL);
		t->own_pgrp = 0;
	}
}
