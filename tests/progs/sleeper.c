/* sleeper.c: sleep SECONDS (default 30), with NCHILD children (default 0)
 * that sleep too.  Usage: sleeper [SECONDS [NCHILD [PIDFILE]]].  PIDFILE
 * gets every pid of the tree (children first, then the main one), written
 * once all children exist, so a test can check that none survives memsup. */
#include "workload.h"
#include <sys/wait.h>

int main(int argc, char **argv)
{
	long s = wl_arg(argc, argv, 1, 30), n = wl_arg(argc, argv, 2, 0);
	char text[4096];
	size_t o = 0;
	for (long i = 0; i < n && i < 64; i++) {
		pid_t pid = fork();
		if (pid < 0)
			wl_die("fork");
		if (pid == 0) {
			wl_sleep_ms(s * 1000);
			_exit(0);
		}
		o += (size_t)snprintf(text + o, sizeof text - o, "%d ", (int)pid);
	}
	snprintf(text + o, sizeof text - o, "%d\n", (int)getpid());
	if (argc > 3)
		wl_write_file(argv[3], text);
	wl_sleep_ms(s * 1000);
	while (wait(NULL) > 0)
		;
	return 0;
}
