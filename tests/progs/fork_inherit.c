/* fork_inherit.c: fork children holding their parent's heap blocks, for the
 * tree's call sites (test_memsup_answersites.c): a child's stacks table
 * starts as its parent's live set (preload/sampling/sites.c), so the same
 * blocks are in both images' sites while both live.
 *
 * Usage: fork_inherit [PARENT_MB [CHILD_MB [CHILDREN [HOLD_MS [FREE]]]]]
 *                                          (defaults 100 20 2 400 0)
 *
 * The parent mallocs PARENT_MB decimal megabytes in blocks of 1 MB from
 * parent_hold, every page written, then forks CHILDREN children.  Each
 * child mallocs CHILD_MB in blocks of 1 MB from child_hold, writes them,
 * says so on a pipe, and once all have (the pipe `go` closes) holds for
 * HOLD_MS milliseconds and exits 0 without freeing.  So the tree holds
 * PARENT_MB + CHILDREN x CHILD_MB of distinct heap at once, though the
 * images' heaps sum to CHILDREN x PARENT_MB more (each child still holds
 * the parent's blocks, unwritten, shared).  With FREE 1 the parent frees
 * its blocks once every child has forked, and only then do the children
 * malloc theirs: the parent's blocks are the children's alone (shared
 * between them until written), so the tree holds PARENT_MB + CHILDREN x
 * CHILD_MB at once, the parent none of it.  When all children hold theirs
 * the parent prints
 *   pid=N parent=B child=B children=K freed=F
 * (B the usable bytes of each one's blocks), then waits for them, frees
 * its blocks (FREE 0) and exits 0 (1 on a failed call, 2 on a bad
 * argument).
 */
#include <errno.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define BLOCK 1000000UL
#define BLOCKS_MAX 10000

static char *blocks[BLOCKS_MAX];
static size_t nblocks;

static void fail(const char *what)
{
	perror(what);
	exit(1);
}

/* Two functions of their own, so that each is a call site; the counters
 * keep -O2 from folding them into one. */
static volatile unsigned parent_calls, child_calls;

__attribute__((noinline)) static size_t parent_hold(size_t mb)
{
	size_t got = 0;
	parent_calls++;
	for (size_t i = 0; i < mb && nblocks < BLOCKS_MAX; i++) {
		char *p = malloc(BLOCK);
		if (!p)
			fail("parent_hold");
		memset(p, 1, BLOCK);
		blocks[nblocks++] = p;
		got += malloc_usable_size(p);
	}
	__asm__ volatile("" ::: "memory");
	return got;
}

__attribute__((noinline)) static size_t child_hold(size_t mb)
{
	size_t got = 0;
	child_calls++;
	for (size_t i = 0; i < mb && nblocks < BLOCKS_MAX; i++) {
		char *p = malloc(BLOCK);
		if (!p)
			fail("child_hold");
		memset(p, 2, BLOCK);
		blocks[nblocks++] = p;
		got += malloc_usable_size(p);
	}
	__asm__ volatile("" ::: "memory");
	return got;
}

static void nap_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };
	while (nanosleep(&ts, &ts) != 0)
		;
}

int main(int argc, char **argv)
{
	long parent_mb = argc > 1 ? strtol(argv[1], NULL, 10) : 100;
	long child_mb = argc > 2 ? strtol(argv[2], NULL, 10) : 20;
	long children = argc > 3 ? strtol(argv[3], NULL, 10) : 2;
	long hold_ms = argc > 4 ? strtol(argv[4], NULL, 10) : 400;
	int free_first = argc > 5 && atoi(argv[5]) == 1;
	int forked[2], freed[2], held[2], go[2];
	size_t pbytes, cbytes = 0;
	char line[160], c = 1;

	if (parent_mb < 0 || child_mb < 0 || parent_mb + child_mb > BLOCKS_MAX || children < 1 ||
	    children > 64 || hold_ms < 0)
		return 2;
	pbytes = parent_hold((size_t)parent_mb);
	if (pipe(forked) < 0 || pipe(freed) < 0 || pipe(held) < 0 || pipe(go) < 0)
		fail("pipe");
	for (long i = 0; i < children; i++) {
		pid_t pid = fork();
		if (pid < 0)
			fail("fork");
		if (pid == 0) {
			close(go[1]);
			close(freed[1]);
			close(forked[0]);
			close(forked[1]); /* the parent's read sees EOF once all are here */
			while (read(freed[0], &c, 1) < 0 && errno == EINTR)
				; /* EOF: the parent freed its blocks (FREE 1), or will not */
			cbytes = child_hold((size_t)child_mb);
			if (write(held[1], &cbytes, sizeof cbytes) != sizeof cbytes)
				_exit(1);
			while (read(go[0], &c, 1) < 0 && errno == EINTR)
				; /* EOF: every child holds its blocks */
			nap_ms(hold_ms);
			_exit(0);
		}
	}
	close(held[1]);
	close(go[0]);
	close(forked[1]);
	close(freed[0]);
	while (read(forked[0], &c, 1) < 0 && errno == EINTR)
		; /* EOF: every child has closed its copy, so every one is forked */
	if (free_first)
		while (nblocks)
			free(blocks[--nblocks]);
	close(freed[1]);
	for (long i = 0; i < children; i++) {
		ssize_t n;
		while ((n = read(held[0], &cbytes, sizeof cbytes)) < 0 && errno == EINTR)
			;
		if (n != sizeof cbytes)
			fail("a child did not hold its blocks");
	}
	int n = snprintf(line, sizeof line, "pid=%d parent=%zu child=%zu children=%ld freed=%d\n",
			 (int)getpid(), pbytes, cbytes, children, free_first);
	if (write(1, line, (size_t)n) != n)
		return 1;
	close(go[1]);
	int status, bad = 0;
	while (wait(&status) > 0)
		bad |= !WIFEXITED(status) || WEXITSTATUS(status) != 0;
	while (nblocks)
		free(blocks[--nblocks]);
	return bad;
}
