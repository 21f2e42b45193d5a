/* bs_readers.c: the parent holds MB (default 300), then N readers (default
 * 3) fork and read every page of it without writing, and all hold together
 * for HOLD_MS (default 500).  Usage: bs_readers [MB [N [HOLD_MS]]].
 * Summed RSS counts the block N+1 times; Pss counts it once: the tree's
 * polled peak is about (N+1) x MB while the memory in use is about MB. */
#include "workload.h"
#include <sys/wait.h>

int main(int argc, char **argv)
{
	long mb = wl_arg(argc, argv, 1, 300), n = wl_arg(argc, argv, 2, 3);
	long ms = wl_arg(argc, argv, 3, 500);
	size_t len = (size_t)mb * WL_MB;
	char *p = wl_hold(len);
	int ready[2], release[2];
	if (pipe(ready) < 0 || pipe(release) < 0)
		wl_die("pipe");
	for (long i = 0; i < n; i++) {
		pid_t pid = fork();
		if (pid < 0)
			wl_die("fork");
		if (pid == 0) {
			close(ready[0]);
			close(release[1]);
			volatile unsigned long sum = 0;
			for (size_t off = 0; off < len; off += 4096)
				sum += (unsigned char)p[off];
			char c = (char)(sum & 1);
			if (write(ready[1], &c, 1) != 1)
				wl_die("write");
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
			wl_die("bs_readers: a reader died");
	}
	printf("bs_readers: %ld readers share %ld MB\n", n, mb);
	fflush(stdout);
	wl_sleep_ms(ms);
	close(release[1]);
	while (wait(NULL) > 0)
		;
	return 0;
}
