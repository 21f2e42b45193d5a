/* test_relay.c: stdio/relay.c without memsup around it.  The test plays
 * the command (it writes into the write end relay_child_fds() hands out)
 * and memsup's stdout (fd 1 made a pipe or a file it holds), and drives
 * relay_poll_set()/relay_pump()/relay_finish() itself: the names table,
 * back-pressure, a reader that goes away, a slow reader cut at the end. */
#include "stdio/relay.h"

#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

Test(relay, names_and_parse_agree)
{
	for (unsigned i = 0; i < RELAY_MODE_COUNT; i++) {
		enum relay_mode m;
		const char *name = relay_mode_name((enum relay_mode)i);
		cr_assert_not_null(name);
		cr_expect_eq(relay_mode_parse(name, &m), 0);
		cr_expect_eq(m, (enum relay_mode)i, "%s reads back as another mode", name);
	}
	enum relay_mode m = RELAY_LOG;
	cr_expect_eq(relay_mode_parse("tea", &m), -EINVAL);
	cr_expect_eq(relay_mode_parse("", &m), -EINVAL);
	cr_expect_eq(m, RELAY_LOG, "a bad name changed the mode");
	cr_expect_null(relay_mode_name(RELAY_MODE_COUNT));
	for (unsigned i = 0; i < RELAY_END_COUNT; i++)
		cr_expect_not_null(relay_end_name((enum relay_end)i));
	cr_expect_null(relay_end_name(RELAY_END_COUNT));
	cr_expect_str_eq(relay_end_name(RELAY_END_READER_GONE), "reader_gone");
}

/* The rig: fd 1 is `stdout_fd` (a pipe's write end or a file), the log a
 * fresh file; returns the relay and the command's stdout write end. */
struct rig {
	struct relay *relay;
	int cmd_out;   /* the "command's" stdout */
	int log_fd;
	char dir[64];
};

static void rig_open(struct rig *g, int stdout_fd)
{
	signal(SIGPIPE, SIG_IGN); /* as memsup's main does */
	cr_assert_eq(dup2(stdout_fd, 1), 1);
	snprintf(g->dir, sizeof g->dir, "/tmp/relay-test-XXXXXX");
	cr_assert_not_null(mkdtemp(g->dir));
	char path[128];
	snprintf(path, sizeof path, "%s/stdout.log", g->dir);
	g->log_fd = open(path, O_RDWR | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
	cr_assert_geq(g->log_fd, 0);
	cr_assert_eq(relay_open(&g->relay, RELAY_TEE, RELAY_LOG_UNLIMITED), 0);
	cr_assert_eq(relay_set_log(g->relay, g->log_fd), 0);
	int out, err;
	relay_child_fds(g->relay, &out, &err);
	cr_assert_geq(out, 0);
	cr_assert_geq(err, 0);
	g->cmd_out = dup(out); /* the command keeps its end; the relay drops its own */
	relay_started(g->relay);
}

static void rig_close(struct rig *g)
{
	relay_close(g->relay);
	close(g->log_fd);
	char cmd[128];
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", g->dir);
	cr_expect_eq(system(cmd), 0);
}

/* One turn of memsup's loop: poll (up to `ms`), pump. */
static int rig_turn(struct rig *g, int ms)
{
	struct pollfd pfd[RELAY_POLL_SLOTS];
	relay_poll_set(g->relay, pfd);
	poll(pfd, RELAY_POLL_SLOTS, ms);
	return relay_pump(g->relay, pfd);
}

static long long log_size(const struct rig *g)
{
	struct stat st;
	cr_assert_eq(fstat(g->log_fd, &st), 0);
	return (long long)st.st_size;
}

static void fill_pattern(char *buf, size_t n, size_t from)
{
	for (size_t i = 0; i < n; i++)
		buf[i] = (char)('a' + (from + i) % 23);
}

/* A reader that takes nothing: the relay passes what the pipe takes, logs
 * exactly that much, waits for POLLOUT and not for more input; as the
 * reader drains, every byte arrives, in the log and on the pipe. */
Test(relay, back_pressure_then_everything, .timeout = 20)
{
	int p[2];
	cr_assert_eq(pipe(p), 0);
	cr_assert_geq(fcntl(p[1], F_SETPIPE_SZ, 4096), 4096);
	struct rig g;
	rig_open(&g, p[1]);
	close(p[1]); /* fd 1 holds it */
	static char buf[100000], got[100000];
	fill_pattern(buf, sizeof buf, 0);
	cr_assert_eq(write(g.cmd_out, buf, sizeof buf), (ssize_t)sizeof buf);
	for (int i = 0; i < 5; i++)
		cr_assert_eq(rig_turn(&g, 10), 0);
	int in_pipe = fcntl(p[0], F_GETPIPE_SZ);
	cr_expect_leq(log_size(&g), in_pipe, "logged %lld with %d passed at most",
		      log_size(&g), in_pipe);
	cr_expect_gt(log_size(&g), 0);
	struct pollfd pfd[RELAY_POLL_SLOTS];
	relay_poll_set(g.relay, pfd);
	cr_expect_eq(pfd[0].fd, -1, "still reading the command while its reader is full");
	cr_expect_geq(pfd[1].fd, 0, "not waiting for room on stdout");
	/* the reader now reads everything */
	size_t have = 0;
	while (have < sizeof got) {
		ssize_t k = read(p[0], got + have, sizeof got - have);
		cr_assert_gt(k, 0);
		have += (size_t)k;
		cr_assert_eq(rig_turn(&g, 0), 0);
	}
	cr_expect_eq(memcmp(buf, got, sizeof buf), 0);
	close(g.cmd_out);
	cr_assert_eq(relay_finish(g.relay, NULL, 0), 0);
	cr_expect_eq(log_size(&g), (long long)sizeof buf);
	struct relay_report rep;
	relay_report(g.relay, &rep);
	cr_expect_eq(rep.stream[0].bytes, sizeof buf);
	cr_expect_eq(rep.stream[0].passed, sizeof buf);
	cr_expect_eq(rep.stream[0].end, RELAY_END_COMPLETE);
	rig_close(&g);
}

/* The reader goes: what the relay had read is logged, and the command's
 * next write fails with EPIPE. */
Test(relay, reader_gone_gives_the_command_epipe, .timeout = 20)
{
	int p[2];
	cr_assert_eq(pipe(p), 0);
	struct rig g;
	rig_open(&g, p[1]);
	close(p[1]);
	close(p[0]); /* the reader is gone before a byte was written */
	static char buf[10000];
	fill_pattern(buf, sizeof buf, 0);
	cr_assert_eq(write(g.cmd_out, buf, sizeof buf), (ssize_t)sizeof buf);
	cr_assert_eq(rig_turn(&g, 100), 0);
	errno = 0;
	cr_expect_eq(write(g.cmd_out, "x", 1), -1);
	cr_expect_eq(errno, EPIPE);
	close(g.cmd_out);
	cr_assert_eq(relay_finish(g.relay, NULL, 0), 0);
	cr_expect_eq(log_size(&g), (long long)sizeof buf);
	struct relay_report rep;
	relay_report(g.relay, &rep);
	cr_expect_eq(rep.stream[0].end, RELAY_END_READER_GONE);
	cr_expect_eq(rep.stream[0].passed, 0);
	cr_expect_eq(rep.stream[0].bytes, sizeof buf);
	rig_close(&g);
}

/* A reader that never reads, at the end: relay_finish waits until the
 * deadline, then logs the rest; the pass-through ends "cut".  Its pipe is
 * sized on purpose, smaller than what is written: the relay leaves such a
 * pipe as it is (a default one it would grow to 1 MiB). */
Test(relay, slow_reader_cut_at_the_deadline, .timeout = 20)
{
	int p[2];
	cr_assert_eq(pipe(p), 0);
	cr_assert_geq(fcntl(p[1], F_SETPIPE_SZ, 4096), 4096);
	struct rig g;
	rig_open(&g, p[1]);
	close(p[1]);
	static char buf[200000];
	fill_pattern(buf, sizeof buf, 0);
	cr_assert_eq(write(g.cmd_out, buf, sizeof buf), (ssize_t)sizeof buf);
	close(g.cmd_out);
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	uint64_t now = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
	cr_assert_eq(relay_finish(g.relay, NULL, now + 50000000ull), 0);
	cr_expect_eq(log_size(&g), (long long)sizeof buf);
	struct relay_report rep;
	relay_report(g.relay, &rep);
	cr_expect_eq(rep.stream[0].end, RELAY_END_CUT);
	cr_expect_lt(rep.stream[0].passed, sizeof buf);
	cr_expect_eq(rep.log_bytes, sizeof buf);
	rig_close(&g);
	close(p[0]);
}

/* stdout a regular file opened for appending (splice refuses it): the
 * bytes go through memsup's buffer instead, all of them. */
Test(relay, append_file_through_the_copy_path, .timeout = 20)
{
	char path[] = "/tmp/relay-out-XXXXXX";
	int fd = mkstemp(path);
	cr_assert_geq(fd, 0);
	int out = open(path, O_WRONLY | O_APPEND);
	cr_assert_geq(out, 0);
	struct rig g;
	rig_open(&g, out);
	close(out);
	static char buf[300000];
	fill_pattern(buf, sizeof buf, 0);
	cr_assert_eq(write(g.cmd_out, buf, sizeof buf), (ssize_t)sizeof buf);
	close(g.cmd_out);
	cr_assert_eq(relay_finish(g.relay, NULL, 0), 0);
	static char got[sizeof buf + 1];
	cr_expect_eq(pread(fd, got, sizeof got, 0), (ssize_t)sizeof buf);
	cr_expect_eq(memcmp(buf, got, sizeof buf), 0);
	struct relay_report rep;
	relay_report(g.relay, &rep);
	cr_expect_eq(rep.stream[0].passed, sizeof buf);
	cr_expect_eq(rep.stream[0].end, RELAY_END_COMPLETE);
	rig_close(&g);
	close(fd);
	unlink(path);
}
