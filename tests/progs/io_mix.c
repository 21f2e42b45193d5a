/* io_mix.c: output with known bytes, for the pass-through and stdout.log
 * tests (tests/e2e/test_memsup_output.c).
 *
 *   io_mix binary BYTES SEED    BYTES of the stream (every byte value) to
 *                               stdout in uneven writes; exits 0, or dies of
 *                               SIGPIPE like any program whose reader went
 *   io_mix mix ROUNDS SEED      records to stdout and stderr by turns, in
 *                               a pseudo-random order: each one write(2) of
 *                               "O<n>:" or "E<n>:", up to 3000 stream bytes
 *                               (never '\n'), then '\n'
 *   io_mix count BYTES FILE     SIGPIPE ignored: the stream to stdout in
 *                               4 KiB writes until one fails (EPIPE) or BYTES
 *                               are out, then the number of bytes written
 *                               successfully into FILE; exits 0
 *
 * The stream is io_mix_byte(SEED, i) (io_mix.h, shared with the test). */
#include "io_mix.h"
#include "workload.h"
#include <signal.h>

static void fill(uint64_t seed, uint64_t from, unsigned char *buf, size_t n)
{
	for (size_t k = 0; k < n; k++)
		buf[k] = io_mix_byte(seed, from + k);
}

/* 1 when written whole, 0 on EPIPE (count mode), dies otherwise. */
static int write_all(int fd, const unsigned char *p, size_t n, uint64_t *done)
{
	while (n > 0) {
		ssize_t w = write(fd, p, n);
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0 && errno == EPIPE)
			return 0;
		if (w <= 0)
			wl_die("io_mix: write");
		p += w;
		n -= (size_t)w;
		*done += (uint64_t)w;
	}
	return 1;
}

static int binary(uint64_t total, uint64_t seed)
{
	static unsigned char buf[65536];
	uint64_t done = 0;
	while (done < total) {
		size_t n = 1 + (size_t)((done * 7919 + 13) % sizeof buf); /* uneven */
		if (n > total - done)
			n = (size_t)(total - done);
		fill(seed, done, buf, n);
		write_all(STDOUT_FILENO, buf, n, &done);
	}
	return 0;
}

static int mix(long rounds, uint64_t seed)
{
	static unsigned char rec[3100];
	uint64_t at[2] = { 0, 0 }, done = 0, r = seed * 2654435761u + 7;
	for (long k = 0; k < 2 * rounds; k++) {
		r = r * 6364136223846793005ull + 1442695040888963407ull;
		int fd = (r >> 33) & 1 ? STDERR_FILENO : STDOUT_FILENO;
		size_t len = (size_t)((r >> 40) % 3000);
		int head = snprintf((char *)rec, 32, "%c%ld:", fd == STDOUT_FILENO ? 'O' : 'E', k);
		fill(seed + (uint64_t)fd, at[fd - 1], rec + head, len);
		for (size_t i = 0; i < len; i++)
			if (rec[head + i] == '\n')
				rec[head + i] = ' ';
		at[fd - 1] += len;
		rec[head + len] = '\n';
		write_all(fd, rec, (size_t)head + len + 1, &done);
	}
	return 0;
}

static int count(uint64_t total, const char *file)
{
	static unsigned char buf[4096];
	uint64_t done = 0;
	signal(SIGPIPE, SIG_IGN);
	while (done < total) {
		size_t n = total - done < sizeof buf ? (size_t)(total - done) : sizeof buf;
		fill(1, done, buf, n);
		if (!write_all(STDOUT_FILENO, buf, n, &done))
			break;
	}
	char text[32];
	snprintf(text, sizeof text, "%llu\n", (unsigned long long)done);
	wl_write_file(file, text);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc == 4 && strcmp(argv[1], "binary") == 0)
		return binary(strtoull(argv[2], NULL, 10), strtoull(argv[3], NULL, 10));
	if (argc == 4 && strcmp(argv[1], "mix") == 0)
		return mix(atol(argv[2]), strtoull(argv[3], NULL, 10));
	if (argc == 4 && strcmp(argv[1], "count") == 0)
		return count(strtoull(argv[2], NULL, 10), argv[3]);
	fprintf(stderr, "usage: io_mix binary BYTES SEED | mix ROUNDS SEED | count BYTES FILE\n");
	return 2;
}
