/* spawn.h: starting the command.
 *
 * The child gets a new session (setsid), PR_SET_PDEATHSIG(SIGKILL) (so it
 * dies if memsup is killed outright), the signal mask memsup started with,
 * default dispositions, --cwd, stdout on `out_fd` and stderr on `err_fd`
 * (-1: memsup's own, inherited), and the environment `envp`, then execvp() -- which searches the PATH of `envp`,
 * as Python's subprocess does.  A failure in the child before or at exec is
 * written (stage and errno) to an O_CLOEXEC pipe and the child _exit()s with
 * 127 (ENOENT) or 126 (anything else); the parent reads the pipe, so "could
 * not start" is never confused with "ran and exited 127".
 */
#ifndef MEMSUP_SPAWN_H
#define MEMSUP_SPAWN_H

#include <signal.h>
#include <stddef.h>
#include <sys/types.h>

struct spawn_request {
	char *const *argv;      /* NULL-terminated; argv[0] non-empty */
	char **envp;            /* full environment for the child */
	const char *cwd;        /* NULL or "": inherit */
	int out_fd;             /* stdout of the child; -1: memsup's own */
	int err_fd;             /* stderr of the child; -1: memsup's own */
	const sigset_t *mask;   /* mask to restore in the child */
};

struct spawn_result {
	pid_t pid;              /* > 0 when fork succeeded */
	int start_errno;        /* 0: exec succeeded; else why it did not */
	const char *stage;      /* "chdir", "execvp", "setup" when start_errno */
	int exit_status;        /* 126 or 127 when start_errno (reaped already) */
};

/* Become a child subreaper.  0 or -errno. */
int spawn_become_subreaper(void);

/* Build envp: `base` (NULL-terminated) with each "KEY=VALUE" of `overrides`
 * replacing a same-KEY entry or appended.  Returns a malloc'd array of
 * pointers (to the strings of base/overrides, not copies), or NULL. */
char **spawn_build_env(char *const *base, char *const *overrides, size_t n);

/* Fork and exec.  0 with *res filled (check res->start_errno), or -errno
 * when fork/pipe failed (nothing started). */
int spawn_start(const struct spawn_request *req, struct spawn_result *res);

/* 127 for ENOENT, 126 otherwise: the shell's convention. */
int spawn_status_for(int err);

#endif /* MEMSUP_SPAWN_H */
