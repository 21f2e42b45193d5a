/* escaper.c: double-fork + setsid escapee.  Usage: escaper PIDFILE [MB [HOLD_MS]].
 * The grandchild leaves the session, holds MB (default 20), writes its pid to
 * PIDFILE and sleeps forever; the middle process exits at once, so the
 * grandchild is orphaned (and re-parents to the subreaper, memsup).  The main
 * process waits for PIDFILE, holds HOLD_MS (default 300), and exits 0 --
 * leaving the escapee behind for memsup to kill. */
#include "workload.h"
#include <sys/wait.h>

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: escaper PIDFILE [MB [HOLD_MS]]\n");
		return 2;
	}
	const char *pidfile = argv[1];
	long mb = wl_arg(argc, argv, 2, 20), ms = wl_arg(argc, argv, 3, 300);
	pid_t mid = fork();
	if (mid < 0)
		wl_die("fork");
	if (mid == 0) {
		setsid();
		pid_t g = fork();
		if (g < 0)
			wl_die("fork");
		if (g == 0) {
			char text[32];
			wl_hold((size_t)mb * WL_MB);
			snprintf(text, sizeof text, "%d\n", (int)getpid());
			wl_write_file(pidfile, text);
			for (;;)
				pause();
		}
		_exit(0);
	}
	waitpid(mid, NULL, 0);
	for (int i = 0; i < 2000 && access(pidfile, F_OK) != 0; i++)
		wl_sleep_ms(5);
	printf("escaper: escapee started, main exits after %ld ms\n", ms);
	fflush(stdout);
	wl_sleep_ms(ms);
	return 0;
}
