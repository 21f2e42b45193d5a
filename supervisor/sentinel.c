/* sentinel.c: the process that outlives a killed memsup (see sentinel.h). */
#include "sentinel.h"
#include "collect/staging.h"
#include "contain/contain.h"
#include "evidence/evidence.h"
#include "stdio/relay.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/wait.h>
#include <unistd.h>

#define SENTINEL_QUIT 'q'

/* memsup is gone: end the run for it. */
static _Noreturn void abandon(struct contain *c, int dirfd, const struct staging *staging,
				     pid_t memsup)
{
	int rc = contain_abandon(c);
	/* nothing writes them now: the records not folded yet come whole */
	if (staging)
		staging_drain(staging, dirfd, NULL);
	int cgroups = contain_info(c)->n_paths > 0;
	/* the cgroups' last undo (cgroup2.c moves the caller back) happens
	 * at close */
	contain_close(c);
	char err[320];
	snprintf(err, sizeof err, "memsup (pid %d) was killed before the run ended; its sentinel "
		 "(pid %d) killed what was left of the tree%s%s", (int)memsup, (int)getpid(),
		 rc == -EBUSY ? ", but for processes stuck in uninterruptible sleep" :
		 rc < 0 ? ", as far as it could find it" : "",
		 cgroups ? " and removed the run's cgroups" : " (no cgroup: found through /proc)");
	int mk = evidence_mark_killed(dirfd, err);
	dprintf(STDERR_FILENO, "memsup: sentinel: memsup (pid %d) was killed; its tree is "
		"killed%s\n", (int)memsup,
		mk == 0 ? ", the record says supervisor_killed" : "");
	_exit(0);
}

static _Noreturn void sentinel_run(struct contain *c, int rfd, int dirfd,
					  const struct staging *staging, pid_t memsup)
{
	/* out of memsup's session and process group */
	setsid();
	/* a reader waiting for memsup's stdout to close must not wait for us */
	int null = open("/dev/null", O_RDWR | O_CLOEXEC);
	if (null >= 0) {
		dup2(null, STDIN_FILENO);
		dup2(null, STDOUT_FILENO);
		close(null);
	}
	sigset_t set;
	sigemptyset(&set);
	sigaddset(&set, SIGUSR1);
	sigprocmask(SIG_BLOCK, &set, NULL);
	int sfd = signalfd(-1, &set, SFD_CLOEXEC);
	prctl(PR_SET_PDEATHSIG, SIGUSR1);
	/* memsup may be gone already (before prctl ran) */
	if (getppid() != memsup)
		abandon(c, dirfd, staging, memsup);
	for (;;) {
		struct pollfd p[2] = { { rfd, POLLIN, 0 }, { sfd, POLLIN, 0 } };
		if (poll(p, sfd >= 0 ? 2 : 1, -1) < 0) {
			if (errno == EINTR)
				continue;
			abandon(c, dirfd, staging, memsup);
		}
		if (p[0].revents) {
			char b;
			ssize_t n = read(rfd, &b, 1);
			if (n < 0 && errno == EINTR)
				continue;
			if (n == 1 && b == SENTINEL_QUIT)
				_exit(0);
			abandon(c, dirfd, staging, memsup); /* EOF: memsup died */
		}
		if (sfd >= 0 && p[1].revents)
			abandon(c, dirfd, staging, memsup);
	}
}

int sentinel_start(struct sentinel *s, struct contain *c, int dirfd,
		   const struct staging *staging, struct relay *relay)
{
	int p[2];
	s->pid = 0;
	s->fd = -1;
	if (pipe2(p, O_CLOEXEC) < 0)
		return -errno;
	pid_t memsup = getpid();
	pid_t pid = fork();
	if (pid < 0) {
		int e = errno;
		close(p[0]);
		close(p[1]);
		return -e;
	}
	if (pid == 0) {
		close(p[1]);
		/* The relay's pipes are memsup's alone: a read end held here
		 * would keep a command writing to a reader that is gone from
		 * getting EPIPE, and the command's write ends held here would
		 * keep the pipes from ever reading EOF. */
		relay_close(relay);
		sentinel_run(c, p[0], dirfd, staging, memsup);
	}
	close(p[0]);
	s->pid = pid;
	s->fd = p[1];
	contain_exclude(c, pid);
	return 0;
}

void sentinel_stop(struct sentinel *s)
{
	if (s->fd >= 0) {
		char b = SENTINEL_QUIT;
		/* EPIPE when it died already: SIGPIPE is ignored in memsup */
		ssize_t w = write(s->fd, &b, 1);
		(void)w;
		close(s->fd);
		s->fd = -1;
	}
	if (s->pid > 0)
		while (waitpid(s->pid, NULL, 0) < 0 && errno == EINTR)
			;
	s->pid = 0;
}
