/* bs_forkexec.c: a parent holding MB (default 60) forks a child that stays
 * in the parent's image for HOLD_MS (default 400) -- sharing every page of
 * the block -- and then execs `sleep 0.2`; the parent waits for it.  The
 * tree's peak is the child's pre-exec stretch, where summed RSS counts the
 * block twice (test_memsup_findings.c: fork_before_exec).
 * Usage: bs_forkexec [MB [HOLD_MS]]. */
#include "workload.h"

int main(int argc, char **argv)
{
	long mb = wl_arg(argc, argv, 1, 60), ms = wl_arg(argc, argv, 2, 400);
	wl_hold((size_t)mb * WL_MB);
	pid_t pid = fork();
	if (pid < 0)
		wl_die("fork");
	if (pid == 0) {
		wl_sleep_ms(ms);
		execl("/bin/sleep", "sleep", "0.2", (char *)NULL);
		wl_die("execl");
	}
	int st;
	if (waitpid(pid, &st, 0) != pid)
		wl_die("waitpid");
	return WIFEXITED(st) ? WEXITSTATUS(st) : 1;
}
