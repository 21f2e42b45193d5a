/* bs_seqkids.c: N (default 40) children, one after the other, each holding
 * MB (default 50) for HOLD_MS (default 3) and exiting; the parent holds
 * nothing big.  Usage: bs_seqkids [N [MB [HOLD_MS]]].
 * Children are posix_spawn'ed copies of this program with argv
 * "bs_seqkids child I MB HOLD_MS", so each one is its own image with its own
 * argv, and most live between two 10 ms polls. */
#include "workload.h"
#include <spawn.h>
#include <sys/wait.h>

extern char **environ;

int main(int argc, char **argv)
{
	if (argc == 5 && strcmp(argv[1], "child") == 0) {
		wl_hold((size_t)strtol(argv[3], NULL, 10) * WL_MB);
		wl_sleep_ms(strtol(argv[4], NULL, 10));
		return 0;
	}
	long n = wl_arg(argc, argv, 1, 40), mb = wl_arg(argc, argv, 2, 50);
	long ms = wl_arg(argc, argv, 3, 3);
	char self[4096];
	ssize_t len = readlink("/proc/self/exe", self, sizeof self - 1);
	if (len < 0)
		wl_die("readlink");
	self[len] = '\0';
	for (long i = 0; i < n; i++) {
		char idx[24], size[24], hold[24];
		snprintf(idx, sizeof idx, "%ld", i);
		snprintf(size, sizeof size, "%ld", mb);
		snprintf(hold, sizeof hold, "%ld", ms);
		char *kid[] = { "bs_seqkids", "child", idx, size, hold, NULL };
		pid_t pid;
		int err = posix_spawn(&pid, self, NULL, NULL, kid, environ);
		if (err) {
			errno = err;
			wl_die("posix_spawn");
		}
		int st;
		if (waitpid(pid, &st, 0) < 0 || !WIFEXITED(st) || WEXITSTATUS(st) != 0)
			wl_die("bs_seqkids: a child failed");
	}
	printf("bs_seqkids: %ld children of %ld MB done\n", n, mb);
	return 0;
}
