/* h_flood.c: floods stdout with a known byte stream.  Usage: h_flood MB [SEED].
 * Writes MB decimal megabytes (MB * 1000000 bytes) of an xorshift64 stream
 * seeded with SEED (default 1) to stdout with write(2), retrying short
 * writes, then exits 0 (2 when a write fails).  The stream is a pure
 * function of SEED (h_flood_fill below; the test has the same code), so a
 * test can check stdout.log byte for byte without storing a copy. */
#include "workload.h"

#define FLOOD_CHUNK 65536u

/* The stream: 8-byte little-endian words of xorshift64 from `state`. */
static void h_flood_fill(uint64_t *state, unsigned char *buf, size_t n)
{
	for (size_t i = 0; i < n; i += 8) {
		uint64_t x = *state;
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		*state = x;
		for (size_t b = 0; b < 8 && i + b < n; b++)
			buf[i + b] = (unsigned char)(x >> (8 * b));
	}
}

int main(int argc, char **argv)
{
	long mb = wl_arg(argc, argv, 1, 300), seed = wl_arg(argc, argv, 2, 1);
	uint64_t state = (uint64_t)seed * 0x9e3779b97f4a7c15ull | 1;
	static unsigned char buf[FLOOD_CHUNK];
	size_t total = (size_t)mb * WL_MB;
	while (total > 0) {
		size_t n = total < FLOOD_CHUNK ? total : FLOOD_CHUNK;
		h_flood_fill(&state, buf, FLOOD_CHUNK);
		for (size_t off = 0; off < n;) {
			ssize_t w = write(STDOUT_FILENO, buf + off, n - off);
			if (w < 0 && errno == EINTR)
				continue;
			if (w <= 0)
				wl_die("h_flood: write");
			off += (size_t)w;
		}
		total -= n;
	}
	return 0;
}
