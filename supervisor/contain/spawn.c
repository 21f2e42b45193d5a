/* spawn.c: fork + exec of the command with an exec-status pipe.  Between
 * fork and exec the child only makes async-signal-safe calls. */
#include "contain/spawn.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
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
	int stage; /* 1 chdir, 2 execvp, 3 setup */
	int err;
};

static const char *stage_name(int stage)
{
	return stage == 1 ? "chdir" : stage == 2 ? "execvp" : "setup";
}

static _Noreturn void child_fail(int fd, int stage, int err)
{
	struct start_report r = { stage, err };
	ssize_t w;
	do
		w = write(fd, &r, sizeof r);
	while (w < 0 && errno == EINTR);
	_exit(spawn_status_for(err));
}

/* Runs in the forked child: async-signal-safe calls only. */
static _Noreturn void child_run(const struct spawn_request *req, pid_t parent, int report)
{
	if (setsid() < 0)
		child_fail(report, 3, errno);
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
	pid_t parent = getpid();
	pid_t pid = fork();
	if (pid < 0) {
		int e = errno;
		close(p[0]);
		close(p[1]);
		return -e;
	}
	if (pid == 0) {
		close(p[0]);
		child_run(req, parent, p[1]);
	}
	close(p[1]);
	res->pid = pid;
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
		res->exit_status = spawn_status_for(r.err);
	}
	/* n == 0: exec succeeded (the CLOEXEC write end closed).  A child that
	 * died before exec without a report (the PDEATHSIG race) reads as 0 too
	 * and is reaped by the main loop like any command. */
	return 0;
}
