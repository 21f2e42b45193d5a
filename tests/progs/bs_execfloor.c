/* bs_execfloor.c: a fat parent (MB, default 200, held) posix_spawns a small
 * program (this one, argv "bs_execfloor small HOLD_MS") that holds nothing
 * and sleeps HOLD_MS (default 300).  The kernel keeps maxrss across exec,
 * so the small child's getrusage(RUSAGE_SELF) ru_maxrss is the parent's
 * size while its own VmHWM is a megabyte or two.
 * Usage: bs_execfloor [MB [HOLD_MS]]. */
#include "workload.h"
#include <spawn.h>
#include <sys/wait.h>

extern char **environ;

int main(int argc, char **argv)
{
	if (argc == 3 && strcmp(argv[1], "small") == 0) {
		wl_sleep_ms(strtol(argv[2], NULL, 10));
		return 0;
	}
	long mb = wl_arg(argc, argv, 1, 200), ms = wl_arg(argc, argv, 2, 300);
	wl_hold((size_t)mb * WL_MB);
	char self[4096], hold[24];
	ssize_t len = readlink("/proc/self/exe", self, sizeof self - 1);
	if (len < 0)
		wl_die("readlink");
	self[len] = '\0';
	snprintf(hold, sizeof hold, "%ld", ms);
	char *kid[] = { "bs_execfloor", "small", hold, NULL };
	pid_t pid;
	int err = posix_spawn(&pid, self, NULL, NULL, kid, environ);
	if (err) {
		errno = err;
		wl_die("posix_spawn");
	}
	int st;
	if (waitpid(pid, &st, 0) < 0 || !WIFEXITED(st) || WEXITSTATUS(st) != 0)
		wl_die("bs_execfloor: the child failed");
	printf("bs_execfloor: %ld MB parent, small child %d done\n", mb, (int)pid);
	return 0;
}
