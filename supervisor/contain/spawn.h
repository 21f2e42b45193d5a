/* spawn.h: starting the command.
 *
 * With a `cgroup` (the cgroup backends), the command starts inside the
 * run's cgroups: the vfork child writes itself into the v2 one's
 * cgroup.procs and each v1 one's before anything else runs.  Only this
 * file's code runs in between, and it never forks: no process of the
 * command can begin outside.
 *
 * The child gets a new session (setsid) -- or, with SPAWN_PGRP, a process
 * group of its own in memsup's session, made the foreground group of
 * `tty` before exec (terminal.h); with SPAWN_KEEP, memsup's own group, as
 * time(1) runs a command; with SPAWN_PTY, a new session whose
 * controlling terminal, stdin, stdout and stderr are `tty`, a pseudo-
 * terminal's slave (transcript.h) --, PR_SET_PDEATHSIG(SIGKILL) (so it
 * dies if memsup is killed outright), the signal mask memsup started with,
 * default dispositions, --cwd, stdout on `out_fd` and stderr on `err_fd`
 * (-1: memsup's own, inherited), `limits` last (an RLIMIT_NPROC, the
 * scheduling memsup had before it raised its own: procs.h), and the
 * environment `envp`, then execvp() -- which searches the PATH of `envp`,
 * as Python's subprocess does.  A failure in the child before or at exec is
 * written (stage and errno) to an O_CLOEXEC pipe and the child _exit()s with
 * 127 (ENOENT) or 126 (anything else); the parent reads the pipe, so "could
 * not start" is never confused with "ran and exited 127".
 */
#ifndef MEMSUP_SPAWN_H
#define MEMSUP_SPAWN_H

#include <sched.h>
#include <signal.h>
#include <stddef.h>
#include <sys/resource.h>
#include <sys/types.h>

/* The cgroups the command starts in. */
struct spawn_cgroup {
	int v2_fd;              /* a cgroup v2 directory, or -1 */
	const int *join_fds;    /* cgroup.procs files (O_WRONLY) to join first */
	size_t n_join;
};

/* Where the command starts, besides its cgroups. */
enum spawn_group {
	SPAWN_SESSION = 0,      /* a session of its own (setsid): no terminal */
	SPAWN_PGRP,             /* a process group of its own in memsup's
				   session: a job at memsup's terminal */
	SPAWN_KEEP,             /* memsup's process group and session */
	SPAWN_PTY,              /* a session of its own on the terminal `tty` */
};

/* What the command gets that memsup itself does not have, or must not
 * pass on (procs.h): applied in the child right before exec, after
 * everything else, so that none of memsup's own code runs under them. */
struct spawn_limits {
	int set_nproc;          /* RLIMIT_NPROC, soft and hard, to nproc */
	struct rlimit nproc;
	int reset_sched;        /* memsup raised its own priority: the
				   command gets `policy`/`param` and `nice`
				   back, as memsup had them before */
	int policy;
	struct sched_param param;
	int nice;
	/* memsup set its own oom_score_adj out of the OOM killer's reach
	 * (oomadj.h): the command gets this value back, "" none */
	char oom_score_adj[12];
};

struct spawn_request {
	char *const *argv;      /* NULL-terminated; argv[0] non-empty */
	char **envp;            /* full environment for the child */
	const char *cwd;        /* NULL or "": inherit */
	int out_fd;             /* stdout of the child; -1: memsup's own */
	int err_fd;             /* stderr of the child; -1: memsup's own */
	const sigset_t *mask;   /* mask to restore in the child */
	const struct spawn_cgroup *cgroup; /* NULL: memsup's own cgroups */
	enum spawn_group group;
	const struct spawn_limits *limits; /* NULL: none */
	int tty;                /* SPAWN_PGRP: the terminal whose foreground
				   group the command's becomes, -1: none;
				   SPAWN_PTY: its terminal; else unused */
};

struct spawn_result {
	pid_t pid;              /* > 0 when fork succeeded */
	int start_errno;        /* 0: exec succeeded; else why it did not */
	const char *stage;      /* "chdir", "execvp", "setup", "cgroup" when
				   start_errno */
	int exit_status;        /* 126 or 127 when start_errno (reaped
				   already); 125 when it could not join */
	pid_t sid;              /* the command's session: its pid, or
				   memsup's (SPAWN_PGRP, SPAWN_KEEP) */
};

/* Become a child subreaper.  0 or -errno. */
int spawn_become_subreaper(void);

/* Build envp: `base` (NULL-terminated) with each "KEY=VALUE" of `overrides`
 * replacing a same-KEY entry or appended.  Returns a malloc'd array of
 * pointers (to the strings of base/overrides, not copies), or NULL. */
char **spawn_build_env(char *const *base, char *const *overrides, size_t n);

/* The value of KEY in envp (NULL-terminated "KEY=VALUE"), or NULL. */
const char *spawn_env_get(char *const *envp, const char *key);

/* Fork and exec.  0 with *res filled (check res->start_errno), or -errno
 * when fork/pipe failed (nothing started). */
int spawn_start(const struct spawn_request *req, struct spawn_result *res);

/* 127 for ENOENT, 126 otherwise: the shell's convention. */
int spawn_status_for(int err);

#endif /* MEMSUP_SPAWN_H */
