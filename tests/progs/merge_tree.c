/* merge_tree.c: workloads with known shapes and known heap sizes for the
 * merged view (tests/e2e/test_memsup_merge.c).  Sizes are decimal MB,
 * allocated with malloc (glibc serves them with mmap: usable size is the
 * request rounded up to a page) and touched page by page.
 *
 *   merge_tree tree P C L HOLD_MS
 *       forks child A (malloc C MB, hold, exit 0) and child B, which execs
 *       "merge_tree leaf L HOLD_MS 3" (malloc L MB, hold, exit 3); only
 *       then mallocs P MB itself, so the three blocks are live at once
 *       (tree heap P+C+L) and no fork inherits one; waits for both, exit 0.
 *       Images: parent gen 0 (root), A gen 0 (fork), B gen 0 (fork, exec'd)
 *       and B gen 1 (exec).
 *   merge_tree leaf L HOLD_MS CODE   malloc L MB, hold, free, exit CODE
 *   merge_tree hold L HOLD_MS        malloc L MB, hold, exit 0
 *   merge_tree killed L              malloc L MB, then SIGKILL itself (no
 *                                    exit handler runs: the record stays
 *                                    "running" with the heap it had)
 *   merge_tree quick                 sleep 150 ms, fork a child that
 *                                    mallocs 1 MB and exits at once, wait,
 *                                    sleep 150 ms, exit 0
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define MB 1000000UL

static void sleep_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };
	while (nanosleep(&ts, &ts) != 0)
		;
}

static char *block(long mb)
{
	size_t n = (size_t)mb * MB;
	char *p = malloc(n);
	if (!p) {
		perror("malloc");
		_exit(2);
	}
	for (size_t i = 0; i < n; i += 4096)
		p[i] = (char)(i >> 12 | 1);
	return p;
}

static int wait_all(void)
{
	int st, bad = 0;
	while (wait(&st) > 0)
		bad |= !WIFEXITED(st);
	return bad;
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "";
	if (strcmp(mode, "leaf") == 0 && argc == 5) {
		char *p = block(atol(argv[2]));
		sleep_ms(atol(argv[3]));
		free(p);
		return atoi(argv[4]);
	}
	if (strcmp(mode, "hold") == 0 && argc == 4) {
		(void)block(atol(argv[2]));
		sleep_ms(atol(argv[3]));
		return 0;
	}
	if (strcmp(mode, "killed") == 0 && argc == 3) {
		(void)block(atol(argv[2]));
		raise(SIGKILL);
		return 1;
	}
	if (strcmp(mode, "quick") == 0) {
		sleep_ms(150);
		pid_t c = fork();
		if (c == 0) {
			char *volatile p = block(1);
			(void)p;
			exit(0);
		}
		wait_all();
		sleep_ms(150);
		return 0;
	}
	if (strcmp(mode, "tree") == 0 && argc == 6) {
		long hold = atol(argv[5]);
		pid_t a = fork();
		if (a == 0) {
			(void)block(atol(argv[3]));
			sleep_ms(hold);
			exit(0);
		}
		pid_t b = fork();
		if (b == 0) {
			char h[32];
			snprintf(h, sizeof h, "%ld", hold);
			execl("/proc/self/exe", argv[0], "leaf", argv[4], h, "3", (char *)NULL);
			_exit(127);
		}
		/* Let both children's fork handlers run before the parent's
		 * heap grows: the shim's child copies its inherited figures
		 * from the parent's shared record mapping after fork(), so a
		 * parent malloc in between is inherited too (a known flaw of
		 * the shim; this workload's ground truth is "nothing
		 * inherited"). */
		sleep_ms(100);
		char *p = block(atol(argv[2]));
		sleep_ms(hold);
		int st, bad = 0;
		if (waitpid(a, &st, 0) != a || !WIFEXITED(st) || WEXITSTATUS(st) != 0)
			bad = 1;
		if (waitpid(b, &st, 0) != b || !WIFEXITED(st) || WEXITSTATUS(st) != 3)
			bad = 1;
		free(p);
		return bad;
	}
	fprintf(stderr, "usage: see merge_tree.c\n");
	return 2;
}
