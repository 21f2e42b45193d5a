/* h_reparent.c: processes that move themselves in the process tree.
 * Usage: h_reparent MODE PIDFILE [MB [HOLD_MS]].
 *   cloneparent  the main process starts a child with clone(CLONE_PARENT):
 *                the child's parent is the main process's parent (memsup),
 *                not the main process.
 *   subreaper    the main process makes itself a child subreaper and starts
 *                a middle process that leaves the session and double-forks:
 *                the grandchild re-parents to the main process, and to memsup
 *                when the main process exits.
 * The moved process holds MB (default 20), appends its pid to PIDFILE and
 * waits forever; the main process holds MB too, waits for that pid, holds
 * HOLD_MS (default 300) and exits 0, leaving the moved process behind. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* CLONE_PARENT */
#endif
#include "workload.h"
#include <sched.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>

static _Noreturn void moved_process(const char *pidfile, long mb)
{
	char text[32];
	wl_hold((size_t)mb * WL_MB);
	snprintf(text, sizeof text, "%d\n", (int)getpid());
	wl_write_file(pidfile, text);
	for (;;)
		pause();
}

int main(int argc, char **argv)
{
	if (argc < 3) {
		fprintf(stderr, "usage: h_reparent MODE PIDFILE [MB [HOLD_MS]]\n");
		return 2;
	}
	const char *mode = argv[1], *pidfile = argv[2];
	long mb = wl_arg(argc, argv, 3, 20), ms = wl_arg(argc, argv, 4, 300);
	if (strcmp(mode, "cloneparent") == 0) {
		/* the raw system call with no new stack behaves as fork() */
		long pid = syscall(SYS_clone, (long)(CLONE_PARENT | SIGCHLD), 0L, 0L, 0L, 0L);
		if (pid < 0)
			wl_die("clone(CLONE_PARENT)");
		if (pid == 0)
			moved_process(pidfile, mb);
	} else if (strcmp(mode, "subreaper") == 0) {
		if (prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) < 0)
			wl_die("PR_SET_CHILD_SUBREAPER");
		pid_t mid = fork();
		if (mid < 0)
			wl_die("fork");
		if (mid == 0) {
			setsid();
			pid_t g = fork();
			if (g == 0)
				moved_process(pidfile, mb);
			_exit(g < 0 ? 3 : 0);
		}
		waitpid(mid, NULL, 0);
	} else {
		fprintf(stderr, "h_reparent: unknown mode %s\n", mode);
		return 2;
	}
	wl_hold((size_t)mb * WL_MB);
	for (int i = 0; i < 2000 && access(pidfile, F_OK) != 0; i++)
		wl_sleep_ms(5);
	printf("h_reparent: %s: moved process started, main exits after %ld ms\n", mode, ms);
	fflush(stdout);
	wl_sleep_ms(ms);
	return 0;
}
