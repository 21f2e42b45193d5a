/* spawn.c: vfork + exec of the command with an exec-status pipe.  Between
 * vfork and exec the child only makes async-signal-safe calls, on memsup's
 * memory: it writes no variable of memsup's but `environ`, which the parent
 * restores. */
#include "contain/spawn.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

extern char **environ;

int spawn_become_subreaper(void)
{
#ifdef PR_SET_CHILD_SUBREAPER
	if (prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) < 0)
		return -errno;
	return 0;
#else
	return -ENOSYS;
#endif
}

int spawn_status_for(int err)
{
	return err == ENOENT ? 127 : 126;
}

static size_t key_len(const char *kv)
{
	const char *eq = strchr(kv, '=');
	return eq ? (size_t)(eq - kv) : strlen(kv);
}

const char *spawn_env_get(char *const *envp, const char *key)
{
	size_t kl = strlen(key);
	for (char *const *e = envp; e && *e; e++)
		if (strncmp(*e, key, kl) == 0 && (*e)[kl] == '=')
			return *e + kl + 1;
	return NULL;
}

char **spawn_build_env(char *const *base, char *const *overrides, size_t n)
{
	size_t nb = 0;
	while (base && base[nb])
		nb++;
	char **env = calloc(nb + n + 1, sizeof *env);
	if (!env)
		return NULL;
	size_t k = 0;
	for (size_t i = 0; i < nb; i++)
		env[k++] = base[i];
	for (size_t j = 0; j < n; j++) {
		size_t kl = key_len(overrides[j]);
		size_t i;
		for (i = 0; i < k; i++) {
			if (key_len(env[i]) == kl && memcmp(env[i], overrides[j], kl) == 0)
				break;
		}
		env[i] = overrides[j];
		if (i == k)
			k++;
	}
	env[k] = NULL;
	return env;
}

struct start_report {
	int stage; /* 1 chdir, 2 execvp, 3 setup, 4 cgroup */
	int err;
};

static const char *stage_name(int stage)
{
	static const char *const names[] = { "setup", "chdir", "execvp", "setup", "cgroup" };
	return stage >= 1 && stage <= 4 ? names[stage] : "setup";
}

static _Noreturn void child_fail(int fd, int stage, int err)
{
	struct start_report r = { stage, err };
	ssize_t w;
	do
		w = write(fd, &r, sizeof r);
	while (w < 0 && errno == EINTR);
	_exit(stage == 4 ? 125 : spawn_status_for(err));
}

/* procs.h's, in the child, last before exec.  Scheduling first: the
 * command must not start at memsup's raised priority even if the rlimit
 * fails.  Both are plain system calls. */
static void apply_limits(const struct spawn_limits *l, int report)
{
	if (l->reset_sched) {
		if (sched_setscheduler(0, l->policy, &l->param) < 0)
			child_fail(report, 3, errno);
		/* nice is per thread; 0 is this one */
		if (setpriority(PRIO_PROCESS, 0, l->nice) < 0)
			child_fail(report, 3, errno);
	}
	if (l->set_nproc && setrlimit(RLIMIT_NPROC, &l->nproc) < 0)
		child_fail(report, 3, errno);
	/* raising it back needs no privilege: a failure is a real one */
	if (l->oom_score_adj[0]) {
		int fd = open("/proc/self/oom_score_adj", O_WRONLY | O_CLOEXEC);
		size_t n = strlen(l->oom_score_adj);
		if (fd < 0 || write(fd, l->oom_score_adj, n) != (ssize_t)n)
			child_fail(report, 3, errno);
		close(fd);
	}
}

/* Runs in the vfork child, on memsup's memory and below its stack frames:
 * async-signal-safe calls only, and no write to any variable of memsup's
 * but `environ` (spawn_start restores it). */
static _Noreturn void child_run(const struct spawn_request *req, pid_t parent, int report,
				int v2_procs)
{
	/* into the run's cgroups before anything else: "0" is the writer */
	const struct spawn_cgroup *cg = req->cgroup;
	if (v2_procs >= 0 && write(v2_procs, "0", 1) != 1)
		child_fail(report, 4, errno);
	for (size_t i = 0; cg && i < cg->n_join; i++)
		if (write(cg->join_fds[i], "0", 1) != 1)
			child_fail(report, 4, errno);
	if (req->group == SPAWN_PGRP) {
		if (setpgid(0, 0) < 0)
			child_fail(report, 3, errno);
		/* The foreground before exec, as a shell's child takes it: the
		 * command's first read of the terminal must not come before
		 * memsup's own tcsetpgrp.  SIGTTOU is still ignored here
		 * (memsup's disposition, reset below). */
		if (req->tty >= 0)
			(void)tcsetpgrp(req->tty, getpid());
	} else if (req->group == SPAWN_KEEP) {
		/* memsup's group and session, as time(1)'s child */
	} else if (setsid() < 0) {
		child_fail(report, 3, errno);
	} else if (req->group == SPAWN_PTY) {
		/* the new session's controlling terminal, and stdio; the
		 * redirections below do not apply (-1) */
		if (ioctl(req->tty, TIOCSCTTY, 0) < 0 || dup2(req->tty, STDIN_FILENO) < 0 ||
		    dup2(req->tty, STDOUT_FILENO) < 0 || dup2(req->tty, STDERR_FILENO) < 0)
			child_fail(report, 3, errno);
	}
#ifdef PR_SET_PDEATHSIG
	/* If memsup dies (even SIGKILL), the command gets SIGKILL.  The parent
	 * may already be gone before prctl ran: then getppid() changed. */
	if (prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) < 0)
		child_fail(report, 3, errno);
	if (getppid() != parent)
		_exit(125);
#endif
	struct sigaction dfl;
	memset(&dfl, 0, sizeof dfl);
	dfl.sa_handler = SIG_DFL;
	for (int sig = 1; sig < NSIG; sig++) {
		if (sig != SIGKILL && sig != SIGSTOP)
			sigaction(sig, &dfl, NULL); /* EINVAL for glibc's 32/33 is fine */
	}
	if (sigprocmask(SIG_SETMASK, req->mask, NULL) < 0)
		child_fail(report, 3, errno);
	if (req->cwd && req->cwd[0] && chdir(req->cwd) < 0)
		child_fail(report, 1, errno);
	if ((req->out_fd >= 0 && dup2(req->out_fd, STDOUT_FILENO) < 0) ||
	    (req->err_fd >= 0 && dup2(req->err_fd, STDERR_FILENO) < 0))
		child_fail(report, 3, errno);
	if (req->limits)
		apply_limits(req->limits, report);
	/* execvp searches the PATH of `environ`: point it at the child's
	 * environment first so that -e PATH=... is honoured. */
	environ = req->envp;
	execvp(req->argv[0], req->argv);
	child_fail(report, 2, errno);
}

int spawn_start(const struct spawn_request *req, struct spawn_result *res)
{
	int p[2];
	memset(res, 0, sizeof *res);
	if (pipe2(p, O_CLOEXEC) < 0)
		return -errno;
	const pid_t parent = getpid();
	const int v2 = req->cgroup ? req->cgroup->v2_fd : -1;
	/* the child writes itself into the v2 cgroup first thing, as into
	 * the v1 ones: it runs nothing of the command's before exec */
	const int v2_procs = v2 >= 0 ? openat(v2, "cgroup.procs", O_WRONLY | O_CLOEXEC) : -1;
	if (v2 >= 0 && v2_procs < 0) {
		int e = errno;
		close(p[0]);
		close(p[1]);
		return -e;
	}
	/* vfork, not fork or clone3: memsup stays stopped until the
	 * child has exec'd, so no copy of its page tables is made and no page
	 * of it is write-protected and faulted in again afterwards (17 of the
	 * run's faults at the start).  Every signal is blocked across it: no
	 * handler of memsup's may run in the child on memsup's memory; the
	 * child sets its dispositions to the default, then its mask to the
	 * command's. */
	sigset_t all, mask;
	sigfillset(&all);
	sigprocmask(SIG_SETMASK, &all, &mask);
	char **const env = environ;
	const pid_t pid = vfork();
	if (pid == 0) {
		close(p[0]);
		child_run(req, parent, p[1], v2_procs);
	}
	int e = errno;
	environ = env;
	sigprocmask(SIG_SETMASK, &mask, NULL);
	if (v2_procs >= 0)
		close(v2_procs);
	if (pid < 0) {
		close(p[0]);
		close(p[1]);
		return -e;
	}
	close(p[1]);
	/* The child's group, made here too so that it exists when memsup
	 * names it (tcsetpgrp, killpg) whichever process runs first; EACCES
	 * once the child has exec'd means it made it itself. */
	if (req->group == SPAWN_PGRP)
		(void)setpgid(pid, pid);
	res->pid = pid;
	res->sid = req->group == SPAWN_PGRP || req->group == SPAWN_KEEP ? getsid(0) : pid;
	struct start_report r;
	ssize_t n;
	do
		n = read(p[0], &r, sizeof r);
	while (n < 0 && errno == EINTR);
	close(p[0]);
	if (n == (ssize_t)sizeof r) {
		/* The child is about to _exit: reap it now so its status is not
		 * taken for the command's. */
		int st;
		while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
			;
		res->start_errno = r.err;
		res->stage = stage_name(r.stage);
		/* not joining the run's cgroup is memsup's failure, not the
		 * command's: 125 */
		res->exit_status = r.stage == 4 ? 125 : spawn_status_for(r.err);
	}
	/* n == 0: exec succeeded (the CLOEXEC write end closed).  A child that
	 * died before exec without a report (the PDEATHSIG race) reads as 0 too
	 * and is reaped by the main loop like any command. */
	return 0;
}
