/* test_keep.c: stdio/keep.c without the relay around it.  The test writes
 * known bytes (tests/progs/counter.h: each byte says its place) of two
 * streams into a pipe, piece by piece, has keep_from() take each piece (or
 * hands each piece to keep_from_buf(), as the transcript does), and
 * checks the log file against a model: the whole output while it fits in
 * the bound (and as it comes), else the first half, the marker line and the
 * last half; every stream's logged and left-out bytes; and the log's size
 * while the run goes on (never past the bound). */
#include "stdio/keep.h"
#include "../progs/counter.h"

#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#define PIECE_MAX (1 << 20)

struct rig {
	struct keep k;
	int pipe[2];
	int log_fd;
	char path[64];
	uint64_t at;            /* bytes written so far (the stream's offset) */
	unsigned char *streams; /* which stream wrote each byte (for the model) */
	size_t cap;
	int from_memory;        /* pieces go to keep_from_buf, not through the pipe */
};

/* How run_case feeds the keep. */
enum feed { FEED_PIPE, FEED_PIPE_NO_NULL, FEED_MEMORY };

static void rig_open(struct rig *g, uint64_t max, size_t total)
{
	memset(g, 0, sizeof *g);
	cr_assert_eq(keep_init(&g->k, max), 0);
	cr_assert_eq(pipe2(g->pipe, O_CLOEXEC), 0);
	cr_assert_geq(fcntl(g->pipe[1], F_SETPIPE_SZ, PIECE_MAX), PIECE_MAX,
		      "a pipe of 1 MiB (pipe-max-size)");
	snprintf(g->path, sizeof g->path, "/tmp/keep-test-XXXXXX");
	g->log_fd = mkstemp(g->path);
	cr_assert_geq(g->log_fd, 0);
	keep_set_log(&g->k, g->log_fd);
	g->cap = total;
	g->streams = malloc(total ? total : 1);
	cr_assert_not_null(g->streams);
}

static void rig_close(struct rig *g)
{
	keep_free(&g->k);
	close(g->pipe[0]);
	close(g->pipe[1]);
	close(g->log_fd);
	unlink(g->path);
	free(g->streams);
}

static long long log_size(const struct rig *g)
{
	struct stat st;
	cr_assert_eq(fstat(g->log_fd, &st), 0);
	return (long long)st.st_size;
}

/* The log's bytes [0, n) are the stream's bytes [from, from + n). */
static void expect_log_range(const struct rig *g, off_t at, uint64_t from, size_t n,
			     const char *what)
{
	unsigned char *buf = malloc(n ? n : 1);
	cr_assert_not_null(buf);
	cr_assert_eq(pread(g->log_fd, buf, n, at), (ssize_t)n, "%s: short", what);
	size_t bad = counter_check(buf, from, n);
	cr_expect_eq(bad, n, "%s: byte %zu of %zu is not the stream's byte %llu", what, bad, n,
		     (unsigned long long)(from + bad));
	free(buf);
}

/* n bytes of `stream` through the pipe into keep_from. */
static void piece(struct rig *g, int stream, size_t n)
{
	static unsigned char buf[PIECE_MAX];
	cr_assert_leq(n, PIECE_MAX);
	cr_assert_leq(g->at + n, g->cap);
	counter_fill(buf, g->at, n);
	memset(g->streams + g->at, stream, n);
	g->at += n;
	if (g->from_memory) {
		cr_assert_eq(keep_from_buf(&g->k, stream, (const char *)buf, n), 0);
		return;
	}
	cr_assert_eq(write(g->pipe[1], buf, n), (ssize_t)n);
	cr_assert_eq(keep_from(&g->k, stream, g->pipe[0], n), 0);
	int left = -1;
	cr_assert_eq(ioctl(g->pipe[0], FIONREAD, &left), 0);
	cr_expect_eq(left, 0, "keep_from left %d bytes in the pipe", left);
}

/* While the run goes on: the whole output so far while it fits, then the
 * start of it, never more than the bound. */
static void expect_live(const struct rig *g, uint64_t max)
{
	long long size = log_size(g);
	if (max == KEEP_UNLIMITED || g->at <= max) {
		cr_expect_eq(size, (long long)g->at, "the log is not whole as it comes");
	} else {
		cr_expect_leq(size, (long long)max, "the log grew past its bound");
		cr_expect_geq(size, (long long)(max - max / 2), "the head is not all there");
	}
	expect_log_range(g, 0, 0, (size_t)size, "the log as it comes");
}

/* After keep_finish: the log and the counts against the model. */
static void expect_final(struct rig *g, uint64_t max)
{
	uint64_t total = g->at, head, tail;
	uint64_t logged[KEEP_STREAMS] = { 0 }, out[KEEP_STREAMS] = { 0 };
	if (max == KEEP_UNLIMITED || total <= max) {
		head = total;
		tail = 0;
	} else {
		tail = max / 2;
		head = max - tail;
	}
	for (uint64_t i = 0; i < total; i++) {
		int in = i < head || i >= total - tail;
		(in ? logged : out)[g->streams[i]]++;
	}
	if (head + tail == total) {
		cr_expect_eq(log_size(g), (long long)total);
		expect_log_range(g, 0, 0, (size_t)total, "the whole log");
	} else {
		char marker[KEEP_MARKER_MAX], got[KEEP_MARKER_MAX];
		size_t m = keep_marker(marker, sizeof marker, total - head - tail);
		cr_expect_eq(log_size(g), (long long)(head + m + tail));
		expect_log_range(g, 0, 0, (size_t)head, "the head");
		cr_assert_eq(pread(g->log_fd, got, m, (off_t)head), (ssize_t)m);
		cr_expect_eq(memcmp(got, marker, m), 0, "no marker after the head: '%.*s'", (int)m,
			     got);
		expect_log_range(g, (off_t)(head + m), total - tail, (size_t)tail, "the tail");
	}
	for (int s = 0; s < KEEP_STREAMS; s++) {
		cr_expect_eq(keep_logged(&g->k, s), logged[s], "stream %d logged %llu, not %llu", s,
			     (unsigned long long)keep_logged(&g->k, s),
			     (unsigned long long)logged[s]);
		cr_expect_eq(keep_left_out(&g->k, s), out[s], "stream %d left out %llu, not %llu", s,
			     (unsigned long long)keep_left_out(&g->k, s),
			     (unsigned long long)out[s]);
	}
}

/* A pseudo-random sequence of pieces (sizes up to `big`, the stream
 * switching now and then) adding up to `total`, through a keep of `max`. */
static void run_case(uint64_t max, size_t total, size_t big, unsigned seed, enum feed feed)
{
	struct rig g;
	rig_open(&g, max, total);
	g.from_memory = feed == FEED_MEMORY;
	if (feed == FEED_PIPE_NO_NULL) {
		close(g.k.null_fd); /* dropping without /dev/null: read and forget */
		g.k.null_fd = -1;
	}
	uint64_t x = seed * 2654435761u + 1;
	int stream = 0;
	while (g.at < total) {
		x = x * 6364136223846793005ull + 1442695040888963407ull;
		size_t n = 1 + (size_t)((x >> 33) % big);
		if (n > total - g.at)
			n = total - (size_t)g.at;
		if ((x >> 20) % 3 == 0)
			stream ^= 1;
		piece(&g, stream, n);
		expect_live(&g, max);
	}
	cr_assert_eq(keep_finish(&g.k), 0);
	expect_final(&g, max);
	cr_expect_eq(keep_finish(&g.k), 0, "a second finish");
	expect_final(&g, max); /* ... changes nothing */
	rig_close(&g);
}

Test(keep, small_output_is_whole)
{
	run_case(2 << 20, 100000, 5000, 1, FEED_PIPE);
	run_case(1000, 1000, 77, 2, FEED_PIPE); /* exactly the bound: whole, no marker */
}

Test(keep, one_byte_past_the_bound)
{
	struct rig g;
	rig_open(&g, 1000, 1001);
	piece(&g, 0, 1001);
	cr_assert_eq(keep_finish(&g.k), 0);
	expect_final(&g, 1000);
	char line[KEEP_MARKER_MAX];
	keep_marker(line, sizeof line, 1);
	cr_expect_str_eq(line, "\n[memsup: 1 bytes left out]\n");
	rig_close(&g);
}

Test(keep, small_pieces_both_streams)
{
	run_case(4096, 200000, 300, 3, FEED_PIPE);
	run_case(3, 5000, 7, 4, FEED_PIPE);   /* an odd bound: the head gets the odd byte */
	run_case(1, 5000, 7, 5, FEED_PIPE);   /* no tail at all */
	run_case(2, 5000, 3, 6, FEED_PIPE);
}

Test(keep, pieces_larger_than_the_tail)
{
	/* pieces of up to 1 MiB through a tail of 64 KiB: most of each is
	 * dropped without a copy */
	run_case(128 << 10, 12 << 20, PIECE_MAX, 7, FEED_PIPE);
	run_case(128 << 10, 12 << 20, PIECE_MAX, 8, FEED_PIPE_NO_NULL);
}

/* Bytes already in memory (the transcript's pty) take the same ways: the
 * same log, the same counts. */
Test(keep, from_memory_as_from_a_pipe)
{
	run_case(2 << 20, 100000, 5000, 11, FEED_MEMORY);
	run_case(4096, 200000, 300, 12, FEED_MEMORY);
	run_case(1, 5000, 7, 13, FEED_MEMORY);
	run_case(128 << 10, 12 << 20, PIECE_MAX, 14, FEED_MEMORY);
	run_case(0, 300000, 40000, 15, FEED_MEMORY);
	run_case(KEEP_UNLIMITED, 5 << 20, 200000, 16, FEED_MEMORY);
}

Test(keep, zero_keeps_nothing_but_the_marker)
{
	run_case(0, 300000, 40000, 9, FEED_PIPE);
	struct rig g;
	rig_open(&g, 0, 10);
	cr_assert_eq(keep_finish(&g.k), 0);
	cr_expect_eq(log_size(&g), 0, "nothing written, nothing left out: an empty log");
	rig_close(&g);
}

Test(keep, unlimited_keeps_everything)
{
	run_case(KEEP_UNLIMITED, 5 << 20, 200000, 10, FEED_PIPE);
}

Test(keep, marker_is_one_line)
{
	char line[KEEP_MARKER_MAX];
	size_t n = keep_marker(line, sizeof line, UINT64_MAX);
	cr_expect_eq(n, strlen(line));
	cr_expect_str_eq(line, "\n[memsup: 18446744073709551615 bytes left out]\n");
}
