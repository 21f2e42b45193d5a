/* sleep_tree.c: an idle process tree of a known size, for timing a poller.
 *
 * Usage: sleep_tree NPROCS SECONDS
 *
 * The tree holds NPROCS processes in all, this one included: the root forks
 * up to 9 children, each child forks up to 9 of its own, and so on breadth
 * first, so 100 processes make a tree three levels deep (a poller that only
 * looks at direct children would miss most of it).  Every process sleeps
 * SECONDS, then its children exit, then it does.  Nothing allocates after
 * start-up, so all a poller sees is idle processes.
 *
 * Exit status 0, 2 on a bad argument, 1 if fork fails.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

enum { TREE_FANOUT = 9 };

static void tree_sleep(double seconds)
{
	struct timespec ts;

	ts.tv_sec = (time_t)seconds;
	ts.tv_nsec = (long)((seconds - (double)ts.tv_sec) * 1e9);
	while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
		;
}

/* Node `index` (0 = root) of a breadth-first tree of `total` nodes has the
 * children index*FANOUT+1 .. index*FANOUT+FANOUT that are below `total`. */
static int tree_grow(long index, long total, double seconds)
{
	long nchildren = 0;

	for (long k = 1; k <= TREE_FANOUT; k++) {
		long child = index * TREE_FANOUT + k;
		pid_t pid;

		if (child >= total)
			break;
		pid = fork();
		if (pid < 0) {
			perror("sleep_tree: fork");
			return 1;
		}
		if (pid == 0)
			_exit(tree_grow(child, total, seconds));
		nchildren++;
	}
	tree_sleep(seconds);
	while (nchildren > 0) {
		if (wait(NULL) < 0 && errno != EINTR)
			break;
		nchildren--;
	}
	return 0;
}

int main(int argc, char **argv)
{
	char *end;
	long total;
	double seconds;

	if (argc != 3) {
		fprintf(stderr, "usage: sleep_tree NPROCS SECONDS\n");
		return 2;
	}
	total = strtol(argv[1], &end, 10);
	if (*end || total < 1 || total > 10000) {
		fprintf(stderr, "sleep_tree: bad NPROCS: %s\n", argv[1]);
		return 2;
	}
	seconds = strtod(argv[2], &end);
	if (*end || !(seconds >= 0 && seconds < 86400)) {
		fprintf(stderr, "sleep_tree: bad SECONDS: %s\n", argv[2]);
		return 2;
	}
	return tree_grow(0, total, seconds);
}
