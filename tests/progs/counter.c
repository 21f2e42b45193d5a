/* counter.c: a known byte stream on stdout, fast.  Usage:
 *   counter BYTES [WRITE]
 * writes BYTES bytes of the stream of counter.h (8-byte words counting
 * from 0) with write(2) calls of WRITE bytes (default 65536, at most
 * 1048576), then exits 0; dies of SIGPIPE when its reader goes, as any
 * program does; exits 2 when a write fails otherwise. */
#include "counter.h"
#include "workload.h"

#define COUNTER_MAX_WRITE (1u << 20)

int main(int argc, char **argv)
{
	if (argc < 2 || argc > 3) {
		fprintf(stderr, "usage: counter BYTES [WRITE]\n");
		return 2;
	}
	uint64_t total = strtoull(argv[1], NULL, 10);
	size_t chunk = argc == 3 ? (size_t)strtoull(argv[2], NULL, 10) : 65536;
	if (chunk == 0 || chunk > COUNTER_MAX_WRITE) {
		fprintf(stderr, "counter: WRITE from 1 to %u\n", COUNTER_MAX_WRITE);
		return 2;
	}
	static unsigned char buf[COUNTER_MAX_WRITE];
	for (uint64_t done = 0; done < total;) {
		size_t n = total - done < chunk ? (size_t)(total - done) : chunk;
		counter_fill(buf, done, n);
		for (size_t off = 0; off < n;) {
			ssize_t w = write(STDOUT_FILENO, buf + off, n - off);
			if (w < 0 && errno == EINTR)
				continue;
			if (w <= 0)
				wl_die("counter: write");
			off += (size_t)w;
		}
		done += n;
	}
	return 0;
}
