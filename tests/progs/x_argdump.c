/* x_argdump.c: a command that tells exactly what it received, for the
 * hostile-environment tests (tests/e2e/test_memsup_hostile.c).
 *
 *   X_ARGDUMP=FILE x_argdump ARG...
 *
 * Writes argv[0..argc-1], each followed by a NUL, to FILE (when X_ARGDUMP is
 * set), then prints "argc=N ruid=R euid=E sum=S" on stdout, where S is a
 * checksum of 1 MiB it allocated and touched (so that /proc sees it), and
 * stays alive X_SLEEP_MS milliseconds (default 0) so that memsup's poller
 * samples it.  Exit status 0, or 1 when it could not write FILE.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static int dump_argv(const char *path, int argc, char **argv)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0)
		return -1;
	for (int i = 0; i < argc; i++) {
		const char *p = argv[i];
		size_t left = strlen(p) + 1; /* with its NUL */
		while (left) {
			ssize_t n = write(fd, p, left);
			if (n <= 0) {
				close(fd);
				return -1;
			}
			p += n;
			left -= (size_t)n;
		}
	}
	return close(fd);
}

int main(int argc, char **argv)
{
	const char *dump = getenv("X_ARGDUMP");
	const char *ms = getenv("X_SLEEP_MS");
	if (dump && dump_argv(dump, argc, argv) < 0) {
		perror("x_argdump: write dump");
		return 1;
	}
	size_t n = 1u << 20;
	unsigned char *block = malloc(n);
	if (!block)
		return 1;
	unsigned long sum = 0;
	for (size_t i = 0; i < n; i++)
		block[i] = (unsigned char)(i * 7u);
	for (size_t i = 0; i < n; i += 4096)
		sum += block[i];
	if (ms) {
		long v = atol(ms);
		struct timespec ts = { v / 1000, (v % 1000) * 1000000L };
		nanosleep(&ts, NULL);
	}
	printf("argc=%d ruid=%d euid=%d sum=%lu\n", argc, (int)getuid(), (int)geteuid(), sum);
	free(block);
	return 0;
}
