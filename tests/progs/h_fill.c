/* h_fill.c: fills the disk through stdout, then waits.
 * Usage: h_fill PIDFILE.
 * Starts one child that waits forever, appends both pids to PIDFILE (the
 * child's first), then writes 64 KiB blocks to stdout until a write fails
 * (ENOSPC on a full file system) and waits forever: only memsup can end it. */
#include "workload.h"
#include <signal.h>

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: h_fill PIDFILE\n");
		return 2;
	}
	pid_t kid = fork();
	if (kid < 0)
		wl_die("fork");
	if (kid == 0) {
		for (;;)
			pause();
	}
	char text[64];
	snprintf(text, sizeof text, "%d\n%d\n", (int)kid, (int)getpid());
	wl_write_file(argv[1], text);
	static char block[65536];
	memset(block, 'f', sizeof block);
	while (write(STDOUT_FILENO, block, sizeof block) > 0)
		;
	for (;;)
		pause();
}
