/* shm_readers.c: one block of POSIX shared memory, read by four processes.
 *
 * Usage: shm_readers [MB [HOLD_MS]] (defaults 64 and 500).
 * The parent makes a shm_open(3) object of MB decimal MB (tmpfs pages),
 * writes every page, then forks three readers that map it and read every
 * page; all four hold it for HOLD_MS at the same time, once all have read.  The tree holds MB
 * of distinct memory (plus a few MB of program per process), all of it
 * shared memory: summed RSS counts it four times (RssShmem of each), the
 * processes' Pss divides it among the four, and the kernel charges it once
 * to the cgroup of the process that first wrote it (memory.stat shmem).
 * The name is unlinked at once, so nothing outlives the run.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define MB 1000000UL

static void nap_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };
	while (nanosleep(&ts, &ts) != 0)
		;
}

/* Map the object and read every page: 0, or 1 if a page was not as written. */
static int read_all(int fd, size_t bytes)
{
	const volatile char *q = mmap(NULL, bytes, PROT_READ, MAP_SHARED, fd, 0);
	if (q == MAP_FAILED) {
		perror("shm_readers: mmap");
		return 1;
	}
	unsigned long sum = 0;
	for (size_t off = 0; off < bytes; off += 4096)
		sum += (unsigned char)q[off];
	return sum != (bytes + 4095) / 4096 * 0x5a;
}

int main(int argc, char **argv)
{
	size_t bytes = (argc > 1 ? strtoul(argv[1], NULL, 10) : 64) * MB;
	long hold_ms = argc > 2 ? strtol(argv[2], NULL, 10) : 500;
	char name[64];
	snprintf(name, sizeof name, "/memtrace-shm-readers-%d", (int)getpid());
	int fd = shm_open(name, O_RDWR | O_CREAT | O_EXCL, 0600);
	if (fd < 0) {
		perror("shm_readers: shm_open");
		return 1;
	}
	shm_unlink(name);
	if (ftruncate(fd, (off_t)bytes) < 0) {
		perror("shm_readers: ftruncate");
		return 1;
	}
	char *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (p == MAP_FAILED) {
		perror("shm_readers: mmap");
		return 1;
	}
	memset(p, 0x5a, bytes);
	munmap(p, bytes);
	printf("shm_readers: %zu bytes of shared memory, 4 readers\n", bytes);
	fflush(stdout);
	/* The parent is reader 0; each child maps its own view after fork.
	 * All four hold it at once: a reader that has read every page says so
	 * on `done`, and holds only once `go` closes, after the last one has
	 * (on a loaded machine one reader's 16,000 page faults can take longer
	 * than another's whole hold, and the tree would never hold four). */
	int done[2], go[2];
	if (pipe(done) < 0 || pipe(go) < 0) {
		perror("shm_readers: pipe");
		return 1;
	}
	for (int i = 1; i < 4; i++) {
		pid_t pid = fork();
		if (pid < 0) {
			perror("shm_readers: fork");
			return 1;
		}
		if (pid == 0) {
			close(go[1]);
			int bad = read_all(fd, bytes);
			char c = (char)bad;
			ssize_t w = write(done[1], &c, 1);
			while (read(go[0], &c, 1) < 0 && errno == EINTR)
				; /* EOF: every reader has read */
			if (!bad && w == 1)
				nap_ms(hold_ms);
			_exit(bad || w != 1 ? 2 : 0);
		}
	}
	close(done[1]);
	close(go[0]);
	if (read_all(fd, bytes))
		return 2;
	for (int i = 1; i < 4; i++) {
		char c;
		ssize_t n;
		while ((n = read(done[0], &c, 1)) < 0 && errno == EINTR)
			;
		if (n != 1)
			break; /* a reader died: wait() below says so */
	}
	close(go[1]);
	nap_ms(hold_ms);
	int status, bad = 0;
	while (wait(&status) > 0)
		bad |= !WIFEXITED(status) || WEXITSTATUS(status) != 0;
	return bad;
}
