/* fork_alloc.c: forks again and again while other threads allocate.
 *
 *   fork_alloc [THREADS [FORKS]]      (defaults 4 and 40)
 *
 * THREADS threads malloc, realloc and free blocks from 16 bytes to 4 MB
 * without pause (the large ones make an allocator map and unmap memory
 * while it holds its own locks); the main thread forks FORKS times, each
 * child allocating a little and leaving with _exit(0) (a child of a
 * multi-threaded parent may call only what its allocator's fork handlers
 * made safe: malloc and free), the parent waiting for each.  An allocator
 * that takes its locks in a pthread_atfork handler (jemalloc, tcmalloc)
 * and a tracer that takes its own there must not wait for each other:
 * a hang is the failure (tests/shim_fork_allocators.sh).
 *
 * Prints one line, "fork_alloc threads=T forks=F children_ok=F", the same
 * bare and under any preload, and exits 0 when every child exited 0.
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define SLOTS 32

static volatile int stop;

static size_t pick_size(unsigned r)
{
	switch (r % 16) {
	case 0:
		return (size_t)1 << 22; /* 4 MB: a mapping of its own */
	case 1:
	case 2:
		return 65536 + (r >> 4) % (1u << 20);
	default:
		return 16 + (r >> 4) % 4096;
	}
}

static void *churn(void *arg)
{
	unsigned seed = (unsigned)(uintptr_t)arg * 2654435761u + 7;
	void *slot[SLOTS] = { 0 };
	while (!__atomic_load_n(&stop, __ATOMIC_RELAXED)) {
		unsigned r = (unsigned)rand_r(&seed), k = r % SLOTS;
		if (!slot[k]) {
			slot[k] = malloc(pick_size(r >> 5));
			if (slot[k])
				memset(slot[k], 1, 16);
		} else if (r & 32) {
			void *p = realloc(slot[k], pick_size(r >> 6));
			if (p)
				slot[k] = p;
		} else {
			free(slot[k]);
			slot[k] = NULL;
		}
	}
	for (int k = 0; k < SLOTS; k++)
		free(slot[k]);
	return NULL;
}

int main(int argc, char **argv)
{
	int threads = argc > 1 ? atoi(argv[1]) : 4, forks = argc > 2 ? atoi(argv[2]) : 40;
	int ok = 0;
	pthread_t *t;
	if (threads < 1 || threads > 64 || forks < 1) {
		fprintf(stderr, "usage: fork_alloc [THREADS(1-64) [FORKS]]\n");
		return 2;
	}
	t = calloc((size_t)threads, sizeof *t);
	if (!t)
		return 1;
	for (int i = 0; i < threads; i++)
		if (pthread_create(&t[i], NULL, churn, (void *)(uintptr_t)(i + 1)) != 0)
			return 1;
	for (int i = 0; i < forks; i++) {
		int st;
		pid_t pid = fork();
		if (pid < 0) {
			perror("fork_alloc: fork");
			break;
		}
		if (pid == 0) {
			char *p = malloc(100 + (size_t)i);
			if (p)
				memset(p, 2, 100);
			free(p);
			p = malloc((size_t)1 << 21);
			free(p);
			_exit(0);
		}
		if (waitpid(pid, &st, 0) == pid && WIFEXITED(st) && WEXITSTATUS(st) == 0)
			ok++;
	}
	__atomic_store_n(&stop, 1, __ATOMIC_RELAXED);
	for (int i = 0; i < threads; i++)
		pthread_join(t[i], NULL);
	free(t);
	printf("fork_alloc threads=%d forks=%d children_ok=%d\n", threads, forks, ok);
	return ok == forks ? 0 : 1;
}
