/* demo_tree.c: the bundled demo workload (scripts/demo.sh).
 *
 * The parent holds 20 MB and forks 3 children that each hold 40 MB at the
 * same time for about 0.4 s (from the moment all three have touched theirs),
 * so the tree holds about 20 + 3 x 40 = 140 MB of
 * distinct pages at once (plus a few MB of code and stack per process).
 * Each child also still maps the parent's 20 MB copy-on-write, so RSS summed
 * over the tree counts those shared pages four times (about 200 MB), and
 * getrusage(RUSAGE_CHILDREN) -- and so `time -v` -- reports only the largest
 * single child (about 60 MB, its 40 MB plus the shared 20 MB).
 * Sizes are decimal MB, as memsup reports them.
 *
 * Under memsup it marks two phases, "children" (forking) and "cleanup"
 * (after the last wait), by appending a line to $MEMSUP_MARK: the way any
 * program, in any language, marks phases without linking anything.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define MB 1000000UL

static char *hold(size_t bytes)
{
	char *p = malloc(bytes);
	if (!p) {
		perror("demo_tree: malloc");
		exit(1);
	}
	memset(p, 0x5a, bytes); /* touch every page: RSS, not just address space */
	return p;
}

static void nap_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };
	while (nanosleep(&ts, &ts) != 0)
		;
}

/* One line per marker, one write(2): lines of concurrent writers never mix. */
static void mark(const char *label)
{
	const char *path = getenv("MEMSUP_MARK");
	char line[128];
	if (!path)
		return;
	int n = snprintf(line, sizeof line, "%s\tpid=%d\n", label, (int)getpid());
	int fd = open(path, O_WRONLY | O_APPEND | O_CLOEXEC);
	if (fd >= 0) {
		if (write(fd, line, (size_t)n) != n)
			perror("demo_tree: marker");
		close(fd);
	}
}

int main(void)
{
	enum { CHILDREN = 3, CHILD_MB = 40, PARENT_MB = 20 };
	char *mine = hold(PARENT_MB * MB);

	printf("demo_tree: parent %d holds %d MB, forking %d children of %d MB each\n",
	       (int)getpid(), PARENT_MB, CHILDREN, CHILD_MB);
	fflush(stdout);
	mark("children");
	/* Each child says on `held` that it has touched its block, and holds
	 * it from the moment `go` closes, when all three have: on a loaded
	 * machine one child's 10,000 page faults can outlast another's whole
	 * hold, and the tree would never hold 140 MB at once. */
	int held[2], go[2];
	if (pipe(held) < 0 || pipe(go) < 0) {
		perror("demo_tree: pipe");
		return 1;
	}
	for (int i = 0; i < CHILDREN; i++) {
		pid_t pid = fork();
		if (pid < 0) {
			perror("demo_tree: fork");
			return 1;
		}
		if (pid == 0) {
			close(go[1]);
			char *p = hold(CHILD_MB * MB), c = 1;
			if (write(held[1], &c, 1) != 1)
				perror("demo_tree: held");
			while (read(go[0], &c, 1) < 0 && errno == EINTR)
				; /* EOF: all three hold theirs */
			nap_ms(600 - 100 * i); /* all three overlap for ~400 ms */
			printf("demo_tree: child %d done (%d MB)\n", (int)getpid(), CHILD_MB);
			fflush(stdout);
			free(p);
			_exit(0);
		}
		nap_ms(100);
	}
	close(held[1]);
	close(go[0]);
	for (int i = 0; i < CHILDREN; i++) {
		char c;
		ssize_t n;
		while ((n = read(held[0], &c, 1)) < 0 && errno == EINTR)
			;
		if (n != 1)
			break; /* a child died: wait() reaps it */
	}
	close(go[1]);
	close(held[0]);
	while (wait(NULL) > 0)
		;
	mark("cleanup");
	struct rusage ru;
	getrusage(RUSAGE_CHILDREN, &ru);
	printf("demo_tree: getrusage(RUSAGE_CHILDREN).ru_maxrss = %.1f MB "
	       "(the largest single child, not the tree)\n", ru.ru_maxrss * 1024.0 / MB);
	free(mine);
	return 0;
}
