/* bs_untraced.c: starts two processes the shim cannot see from inside, at
 * the same time, and waits for both:
 *   STATIC 20 HOLD_MS         a statically linked program (environment kept)
 *   env -i HOLD 25 HOLD_MS    a dynamic one whose environment env(1) empties
 * Usage: bs_untraced STATIC HOLD [HOLD_MS] (HOLD_MS default 500).  HOLD is
 * a program taking "MB HOLD_MS" (tests/progs/steady). */
#include "workload.h"
#include <spawn.h>
#include <sys/wait.h>

extern char **environ;

static pid_t start(char *const argv[])
{
	pid_t pid;
	int err = posix_spawnp(&pid, argv[0], NULL, NULL, argv, environ);
	if (err) {
		errno = err;
		wl_die(argv[0]);
	}
	return pid;
}

int main(int argc, char **argv)
{
	if (argc < 3) {
		fprintf(stderr, "usage: bs_untraced STATIC HOLD [HOLD_MS]\n");
		return 2;
	}
	char *ms = argc > 3 ? argv[3] : "500";
	char *st[] = { argv[1], "20", ms, NULL };
	char *ei[] = { "env", "-i", argv[2], "25", ms, NULL };
	start(st);
	start(ei);
	int status, bad = 0;
	while (wait(&status) > 0)
		bad |= !WIFEXITED(status) || WEXITSTATUS(status) != 0;
	printf("bs_untraced: static and env -i children done\n");
	return bad;
}
