/* bomb.c: a fork bomb, unbounded: a child runs
 * `for (;;) fork();` (every descendant too), the main process waits to be
 * killed.  Usage: bomb.  ONLY ever run inside a pids-limited cgroup
 * (memsup --max-procs, scripts/pids-guard.sh): nothing in it stops. */
#include <unistd.h>

int main(void)
{
	if (fork() == 0)
		for (;;)
			fork();
	for (;;)
		pause();
}
