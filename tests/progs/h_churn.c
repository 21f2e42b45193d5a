/* h_churn.c: many short-lived processes, half of them memsup's to reap.
 * Usage: h_churn N PIDFILE [MB [PACE_US]].
 * The main process holds MB (default 20), then N times: starts a child with
 * vfork() that exits at once (the main process reaps it), and a child with
 * clone(CLONE_PARENT) -- a child of the main process's parent, memsup, which
 * must reap it -- that appends its pid to PIDFILE, lives a millisecond and
 * exits 0; then sleeps PACE_US (default 2000: about 500 processes a second here).
 * So exactly N processes are memsup's to reap.  The main process prints
 * "h_churn: N reaped by the parent" and exits 0.
 *
 * Why not fork(): on hosts where page faults are slow, fork() costs ~10 ms
 * (every page the child touches is a copy-on-write fault), which caps a
 * fork loop near 100 processes a second.  vfork-style children (CLONE_VM)
 * share the memory and fault nothing. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* clone, CLONE_* */
#endif
#include "workload.h"
#include <sched.h>
#include <signal.h>
#include <sys/syscall.h>
#include <sys/wait.h>

struct churn {
	int fd;
};

/* Runs on its own stack in the shared memory, the parent suspended
 * (CLONE_VFORK): system calls only. */
static int churn_child(void *arg)
{
	const struct churn *c = arg;
	char line[32];
	unsigned pid = (unsigned)syscall(SYS_getpid), len = 0;
	char digits[16];
	do
		digits[len++] = (char)('0' + pid % 10);
	while ((pid /= 10) > 0);
	for (unsigned i = 0; i < len; i++)
		line[i] = digits[len - 1 - i];
	line[len++] = '\n';
	if (syscall(SYS_write, c->fd, line, len) != (long)len)
		syscall(SYS_exit, 3);
	struct timespec ts = { 0, 1000000L };
	syscall(SYS_nanosleep, &ts, NULL);
	syscall(SYS_exit, 0);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc < 3) {
		fprintf(stderr, "usage: h_churn N PIDFILE [MB [PACE_US]]\n");
		return 2;
	}
	long n = wl_arg(argc, argv, 1, 500), mb = wl_arg(argc, argv, 3, 20);
	long pace = wl_arg(argc, argv, 4, 2000);
	struct churn c;
	c.fd = open(argv[2], O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
	if (c.fd < 0)
		wl_die("open pidfile");
	static char stack[64 * 1024] __attribute__((aligned(16)));
	wl_hold((size_t)mb * WL_MB);
	for (long i = 0; i < n; i++) {
		pid_t kid = vfork();
		if (kid < 0)
			wl_die("vfork");
		if (kid == 0)
			_exit(0);
		int st;
		while (waitpid(kid, &st, 0) < 0)
			if (errno != EINTR)
				wl_die("waitpid");
		/* returns once the child has exited (CLONE_VFORK) */
		if (clone(churn_child, stack + sizeof stack,
			  CLONE_VM | CLONE_VFORK | CLONE_PARENT | SIGCHLD, &c) < 0)
			wl_die("clone(CLONE_PARENT)");
		if (pace > 0) {
			struct timespec ts = { pace / 1000000, (pace % 1000000) * 1000L };
			nanosleep(&ts, NULL);
		}
	}
	printf("h_churn: %ld reaped by the parent\n", n);
	return 0;
}
