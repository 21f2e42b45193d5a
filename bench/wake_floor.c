/* wake_floor.c: the CPU cost of merely waking up every POLL_MS milliseconds,
 * which is the floor under any poller's CPU figure on a given machine.
 *
 * Usage: wake_floor POLL_MS SECONDS [FILE...]
 *
 * Sleeps in ppoll() with a POLL_MS timeout, on an absolute steady-clock
 * schedule like a sampler, and does nothing else, for SECONDS.  bench/
 * memsup_cpu.py measures its CPU time the way it measures memsup's, so the
 * two can be compared: what memsup spends above this is its own work.
 * With FILEs, each wake-up also reads each one from its start through an
 * fd kept open (pread), as a sampler must: memsup_cpu.py's read floor
 * gives it the files a dense sample of memsup reads, so that what memsup
 * spends above that is what it adds to the reads no sampler can skip.
 * Exit status 0, 2 on a bad argument or a FILE that cannot be opened.
 */
#define _GNU_SOURCE /* ppoll */
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#define FLOOR_MAX_FILES 4096

static double floor_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
	double period, seconds, start, next;
	char *end1, *end2;

	static int fds[FLOOR_MAX_FILES];
	static char buf[1 << 16];
	int nfds = argc - 3;
	if (argc < 3 || nfds > FLOOR_MAX_FILES) {
		fprintf(stderr, "usage: wake_floor POLL_MS SECONDS [FILE...] (at most %d)\n",
			FLOOR_MAX_FILES);
		return 2;
	}
	for (int i = 0; i < nfds; i++) {
		fds[i] = open(argv[3 + i], O_RDONLY | O_CLOEXEC);
		if (fds[i] < 0) {
			perror(argv[3 + i]);
			return 2;
		}
	}
	period = strtod(argv[1], &end1) / 1000.0;
	seconds = strtod(argv[2], &end2);
	if (*end1 || *end2 || !(period > 0 && period < 60) || !(seconds >= 0 && seconds < 86400)) {
		fprintf(stderr, "wake_floor: bad argument\n");
		return 2;
	}
	start = floor_now();
	next = start + period;
	for (;;) {
		double now = floor_now(), wait;
		struct timespec ts;

		if (now - start >= seconds)
			break;
		wait = next - now;
		if (wait < 0)
			wait = 0;
		ts.tv_sec = (time_t)wait;
		ts.tv_nsec = (long)((wait - (double)ts.tv_sec) * 1e9);
		ppoll(NULL, 0, &ts, NULL);
		/* what is read is not looked at; a process gone reads ESRCH,
		 * and the loop reads on, as a sampler would */
		for (int i = 0; i < nfds; i++) {
			ssize_t got = pread(fds[i], buf, sizeof buf, 0);
			(void)got;
		}
		next += period;
	}
	return 0;
}
