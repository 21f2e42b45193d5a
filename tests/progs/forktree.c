/* forktree.c: N children (default 4) each hold MB (default 30) at the same
 * time for HOLD_MS (default 400); the parent holds nothing big.
 * Usage: forktree [N [MB [HOLD_MS]]].
 * Every child touches its block and reports on a pipe; only when all N have
 * done so does the parent start the hold, then it releases them together,
 * so the tree's peak is about N x MB -- the SUM -- while the largest single
 * process (and getrusage(RUSAGE_CHILDREN)) is about MB. */
#include "workload.h"
#include <sys/wait.h>

int main(int argc, char **argv)
{
	long n = wl_arg(argc, argv, 1, 4), mb = wl_arg(argc, argv, 2, 30);
	long ms = wl_arg(argc, argv, 3, 400);
	int ready[2], release[2];
	if (pipe(ready) < 0 || pipe(release) < 0)
		wl_die("pipe");
	for (long i = 0; i < n; i++) {
		pid_t pid = fork();
		if (pid < 0)
			wl_die("fork");
		if (pid == 0) {
			char c = 'r';
			close(ready[0]);
			close(release[1]);
			wl_hold((size_t)mb * WL_MB);
			if (write(ready[1], &c, 1) != 1)
				wl_die("write");
			/* blocks until the parent closes the write end */
			while (read(release[0], &c, 1) < 0 && errno == EINTR)
				;
			_exit(0);
		}
	}
	close(ready[1]);
	close(release[0]);
	char c;
	for (long got = 0; got < n;) {
		ssize_t r = read(ready[0], &c, 1);
		if (r == 1)
			got++;
		else if (r == 0 || errno != EINTR)
			wl_die("forktree: a child died");
	}
	printf("forktree: %ld children hold %ld MB each\n", n, mb);
	fflush(stdout);
	wl_sleep_ms(ms);
	close(release[1]);
	while (wait(NULL) > 0)
		;
	return 0;
}
