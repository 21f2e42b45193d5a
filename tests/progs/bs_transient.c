/* bs_transient.c: a spike of MB (default 300) that no poll of memsup's can
 * see whole, in a child that the poller does see before and after it.
 * Usage: bs_transient [MB [HIDDEN_MB [ATTEMPTS]]].
 *
 * 300 MB cannot become resident between two 10 ms polls here: even with
 * 2 MiB pages and MADV_POPULATE_WRITE it takes 40-90 ms when the host has
 * the memory at hand and ~2 s when it does not.  So each attempt (a fresh
 * child) populates MB - HIDDEN_MB where polls may see it, then waits until
 * the observer (memsup, our parent's parent) has just finished a sample and
 * gone back to sleep, populates the last HIDDEN_MB (default 30) and unmaps
 * the whole region at once.  Whether the observer ran at all during that
 * window is read afterwards from /proc/OBSERVER/schedstat (the count of
 * times it was scheduled in): unchanged means no poll can have read our RSS
 * with more than MB - HIDDEN_MB in it, while the kernel's VmHWM holds all of
 * MB.  If the observer did run (late host, slow window), the attempt is
 * retried in a new child, up to ATTEMPTS (default 25).
 *
 * stdout: one line per attempt, and finally
 *   "bs_transient: clean pid=PID hwm_mb=X visible_mb=Y hidden_mb=Z window_us=W"
 * Exit 0 once a clean attempt happened, 3 if none did. */
#include "workload.h"
#include <sys/wait.h>

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23
#endif

static pid_t observer;
static int status_fd = -1, sched_fd = -1;

static double now_us(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

/* The observer's state letter and voluntary context switches. */
static int observer_status(char *state, unsigned long *vol)
{
	char buf[4096];
	ssize_t n = pread(status_fd, buf, sizeof buf - 1, 0);
	if (n <= 0)
		return -1;
	buf[n] = '\0';
	const char *s = strstr(buf, "\nState:\t");
	const char *v = strstr(buf, "\nvoluntary_ctxt_switches:\t");
	if (!s || !v)
		return -1;
	*state = s[8];
	*vol = strtoul(v + 26, NULL, 10);
	return 0;
}

/* How many times the observer has been scheduled in (schedstat field 3). */
static unsigned long observer_runs(void)
{
	char buf[256];
	ssize_t n = pread(sched_fd, buf, sizeof buf - 1, 0);
	if (n <= 0)
		wl_die("read schedstat");
	buf[n] = '\0';
	unsigned long long run, wait;
	unsigned long slices;
	if (sscanf(buf, "%llu %llu %lu", &run, &wait, &slices) != 3)
		wl_die("parse schedstat");
	return slices;
}

static void populate(char *p, size_t len)
{
	if (madvise(p, len, MADV_POPULATE_WRITE) == 0)
		return;
	for (size_t i = 0; i < len; i += 4096)
		p[i] = 1;
}

/* Returns once the observer has just gone to sleep (a sample is over), with
 * its scheduled-in count at that moment; -1 if it never did in 2 s. */
static long observer_sync(void)
{
	char st;
	unsigned long v0, v;
	if (observer_status(&st, &v0) < 0)
		return -1;
	double give_up = now_us() + 2e6;
	while (now_us() < give_up) {
		if (observer_status(&st, &v) < 0)
			return -1;
		if (v == v0 || st != 'S') {
			if (st != 'S')
				v0 = v; /* running: wait for the sleep that ends it */
			continue;
		}
		/* asleep after a fresh switch; make sure it stayed so while we
		 * read its run count */
		unsigned long runs = observer_runs();
		unsigned long v2;
		if (observer_status(&st, &v2) < 0)
			return -1;
		if (st == 'S' && v2 == v)
			return (long)runs;
		v0 = v2;
	}
	return -1;
}

static int attempt(size_t total, size_t hidden)
{
	/* be seen small first: the poller knows this process before the spike */
	wl_sleep_ms(60);
	char *raw = mmap(NULL, total + WL_HUGE, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (raw == MAP_FAILED)
		wl_die("mmap");
	char *p = (char *)(((uintptr_t)raw + WL_HUGE - 1) & ~(uintptr_t)(WL_HUGE - 1));
	madvise(p, total, MADV_HUGEPAGE);
	populate(p, total - hidden);
	long runs = observer_sync();
	double t0 = now_us();
	populate(p + total - hidden, hidden);
	munmap(raw, total + WL_HUGE);
	double t1 = now_us();
	int clean = runs >= 0 && observer_runs() == (unsigned long)runs;
	printf("bs_transient: %s pid=%d visible_mb=%.1f hidden_mb=%.1f window_us=%.0f\n",
	       clean ? "clean" : "caught", (int)getpid(), (double)(total - hidden) / WL_MB,
	       (double)hidden / WL_MB, t1 - t0);
	fflush(stdout);
	return clean ? 0 : 1;
}

int main(int argc, char **argv)
{
	long mb = wl_arg(argc, argv, 1, 300), hid = wl_arg(argc, argv, 2, 30);
	long tries = wl_arg(argc, argv, 3, 25);
	size_t total = ((size_t)mb * WL_MB + WL_HUGE - 1) & ~(WL_HUGE - 1);
	size_t hidden = ((size_t)hid * WL_MB + WL_HUGE - 1) & ~(WL_HUGE - 1);
	if (hidden >= total) {
		fprintf(stderr, "bs_transient: HIDDEN_MB must be below MB\n");
		return 2;
	}
	observer = getppid();
	char path[64];
	snprintf(path, sizeof path, "/proc/%d/status", (int)observer);
	status_fd = open(path, O_RDONLY | O_CLOEXEC);
	snprintf(path, sizeof path, "/proc/%d/schedstat", (int)observer);
	sched_fd = open(path, O_RDONLY | O_CLOEXEC);
	if (status_fd < 0 || sched_fd < 0)
		wl_die("open observer's /proc files");
	for (long i = 1; i <= tries; i++) {
		pid_t pid = fork();
		if (pid < 0)
			wl_die("fork");
		if (pid == 0)
			_exit(attempt(total, hidden));
		int st;
		if (waitpid(pid, &st, 0) < 0)
			wl_die("waitpid");
		if (WIFEXITED(st) && WEXITSTATUS(st) == 0) {
			printf("bs_transient: clean spike of %.1f MB in pid %d after %ld attempts\n",
			       (double)total / WL_MB, (int)pid, i);
			return 0;
		}
	}
	printf("bs_transient: no clean attempt in %ld\n", tries);
	return 3;
}
