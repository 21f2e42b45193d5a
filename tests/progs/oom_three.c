/* oom_three.c: three children of known sizes, then a parent that grows until
 * the run's memory limit makes the kernel kill one.
 * Usage: oom_three PIDFILE A B C GROW  (sizes in MB).
 * Children 1, 2 and 3 malloc and touch A, B and C MB -- the largest in
 * load_table(), the others in load_index() -- and hold them; once all
 * three hold, the parent grows by 2 MB every 10 ms up to GROW MB.  The
 * OOM killer picks the largest process: with C above GROW and above A and
 * B that is child 3, whatever the order the pages came in.  PIDFILE gets
 * "a=PID b=PID c=PID\n" before the growth begins.  The parent then waits
 * 500 ms, ends the children that are left and exits 0. */
#include "workload.h"

#include <signal.h>

/* where the blocks live: a store the compiler cannot drop as dead */
static char *volatile blocks;

/* noinline: each is its own call site in the shim's stacks */
__attribute__((noinline)) static char *load_table(size_t bytes)
{
	char *p = malloc(bytes);
	if (!p)
		wl_die("malloc");
	memset(p, 1, bytes);
	return p;
}

__attribute__((noinline)) static char *load_index(size_t bytes)
{
	char *p = malloc(bytes);
	if (!p)
		wl_die("malloc");
	memset(p, 2, bytes);
	return p;
}

int main(int argc, char **argv)
{
	if (argc != 6) {
		fprintf(stderr, "usage: oom_three PIDFILE A B C GROW\n");
		return 2;
	}
	long mb[3] = { atol(argv[2]), atol(argv[3]), atol(argv[4]) };
	long grow = atol(argv[5]);
	int ready[2];
	if (pipe(ready) < 0)
		wl_die("pipe");
	pid_t kid[3];
	for (int i = 0; i < 3; i++) {
		kid[i] = fork();
		if (kid[i] < 0)
			wl_die("fork");
		if (kid[i] == 0) {
			close(ready[0]);
			blocks = i == 2 ? load_table((size_t)mb[i] * WL_MB)
				      : load_index((size_t)mb[i] * WL_MB);
			if (write(ready[1], "r", 1) != 1)
				_exit(2);
			/* closed once said: a sibling killed before its word
			 * leaves the parent an end of file, not a wait forever */
			close(ready[1]);
			for (;;)
				pause();
		}
	}
	close(ready[1]);
	char c;
	for (int i = 0; i < 3; i++) {
		if (read(ready[0], &c, 1) != 1) {
			for (int j = 0; j < 3; j++)
				kill(kid[j], SIGKILL);
			wl_die("a child died before it held its memory");
		}
	}
	char line[128];
	snprintf(line, sizeof line, "a=%d b=%d c=%d\n", (int)kid[0], (int)kid[1], (int)kid[2]);
	wl_write_file(argv[1], line);
	for (long held = 0; held + 2 <= grow; held += 2) {
		wl_hold(2 * WL_MB);
		wl_sleep_ms(10);
	}
	/* the tree as it stood after the kill, for memsup to see whole
	 * however late a loaded machine lets it sample */
	wl_sleep_ms(500);
	for (int i = 0; i < 3; i++)
		kill(kid[i], SIGTERM);
	for (int i = 0; i < 3; i++)
		waitpid(kid[i], NULL, 0);
	return 0;
}
