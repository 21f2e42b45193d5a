/* workload.h: shared helpers for the workload programs (header only: each
 * program stays one file that builds alone).  Sizes are decimal MB, as
 * memsup reports them.  Memory is mmap'd on 2 MiB boundaries with
 * MADV_HUGEPAGE and touched page by page, so a block is resident at once
 * and faults fast (first-touch 4 KiB faults are slow on the test hosts). */
#ifndef MT_WORKLOAD_H
#define MT_WORKLOAD_H

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define WL_MB 1000000UL
#define WL_HUGE (2UL << 20)

static inline void wl_die(const char *what)
{
	perror(what);
	_exit(2);
}

/* Map and touch `bytes` (rounded up to 2 MiB).  Never freed by callers that
 * hold until they exit. */
static inline char *wl_hold(size_t bytes)
{
	size_t len = (bytes + WL_HUGE - 1) & ~(WL_HUGE - 1);
	char *raw = mmap(NULL, len + WL_HUGE, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (raw == MAP_FAILED)
		wl_die("mmap");
	char *p = (char *)(((uintptr_t)raw + WL_HUGE - 1) & ~(uintptr_t)(WL_HUGE - 1));
	madvise(p, len, MADV_HUGEPAGE); /* best effort */
	for (size_t i = 0; i < len; i += 4096)
		p[i] = (char)(i >> 12 | 1);
	return p;
}

static inline void wl_sleep_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };
	while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
		;
}

static inline long wl_arg(int argc, char **argv, int i, long dflt)
{
	return i < argc ? strtol(argv[i], NULL, 10) : dflt;
}

/* Write text to path atomically (tmp + rename), so a reader never sees half. */
static inline void wl_write_file(const char *path, const char *text)
{
	char tmp[4096];
	snprintf(tmp, sizeof tmp, "%s.tmp", path);
	int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (fd < 0)
		wl_die("open pidfile");
	size_t n = strlen(text);
	if (write(fd, text, n) != (ssize_t)n)
		wl_die("write pidfile");
	close(fd);
	if (rename(tmp, path) < 0)
		wl_die("rename pidfile");
}

/* A start line for forked children, so that they hold together: each child
 * runs work(i, arg), says it is ready and blocks; wl_fork_gated() returns
 * once all n are ready (a child that died first is fatal), and
 * wl_gate_release() lets them all exit at once and reaps them. */
struct wl_gate {
	int ready[2], release[2];
};

static inline void wl_fork_gated(struct wl_gate *g, long n, void (*work)(long i, void *arg),
				 void *arg)
{
	if (pipe(g->ready) < 0 || pipe(g->release) < 0)
		wl_die("pipe");
	for (long i = 0; i < n; i++) {
		pid_t pid = fork();
		if (pid < 0)
			wl_die("fork");
		if (pid == 0) {
			char c = 'r';
			close(g->ready[0]);
			close(g->release[1]);
			work(i, arg);
			if (write(g->ready[1], &c, 1) != 1)
				wl_die("write");
			/* blocks until the parent closes the write end */
			while (read(g->release[0], &c, 1) < 0 && errno == EINTR)
				;
			_exit(0);
		}
	}
	close(g->ready[1]);
	close(g->release[0]);
	char c;
	for (long got = 0; got < n;) {
		ssize_t r = read(g->ready[0], &c, 1);
		if (r == 1)
			got++;
		else if (r == 0 || errno != EINTR)
			wl_die("a gated child died before it was ready");
	}
}

static inline void wl_gate_release(struct wl_gate *g)
{
	close(g->release[1]);
	close(g->ready[0]);
	while (wait(NULL) > 0)
		;
}

#endif
