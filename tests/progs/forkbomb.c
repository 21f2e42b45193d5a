/* forkbomb.c: a bounded fork bomb.  Usage: forkbomb DEPTH PIDFILE.
 * Every process appends its pid to PIDFILE, forks two children of depth
 * DEPTH-1 (none at depth 0), then waits to be killed: 2^(DEPTH+1)-1
 * processes at most (DEPTH is capped at 10, 2047 processes), so a test can
 * breach --max-procs without endangering the machine. */
#include "workload.h"
#include <signal.h>

static void note_pid(const char *path)
{
	char line[32];
	int fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
	if (fd < 0)
		wl_die("open pidfile");
	int n = snprintf(line, sizeof line, "%d\n", (int)getpid());
	if (write(fd, line, (size_t)n) != n) /* O_APPEND: one line per write */
		wl_die("write pidfile");
	close(fd);
}

int main(int argc, char **argv)
{
	if (argc != 3) {
		fprintf(stderr, "usage: forkbomb DEPTH PIDFILE\n");
		return 2;
	}
	long depth = strtol(argv[1], NULL, 10);
	if (depth > 10)
		depth = 10;
	for (;;) {
		note_pid(argv[2]);
		if (depth <= 0)
			break;
		pid_t a = fork();
		if (a < 0)
			wl_die("fork");
		if (a == 0) {
			depth--;
			continue; /* the child carries on one level down */
		}
		pid_t b = fork();
		if (b < 0)
			wl_die("fork");
		if (b == 0) {
			depth--;
			continue;
		}
		break;
	}
	for (;;)
		pause();
}
