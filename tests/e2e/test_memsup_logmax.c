/* test_memsup_logmax.c: --log-max end to end.  The pass-through is the
 * command's output byte for byte, into a pipe (a few MB, and 2 GB) or a
 * file, while stdout.log keeps its first and last part with the marker line
 * between them and the record counts what passed, what was logged and what
 * was left out, per stream, exactly.  `| head -1` still ends the command
 * with SIGPIPE (exit 141).  --log-max 0, unlimited, the bound's edges, and
 * log mode with a bound (one pipe, the order as written).  The commands are
 * tests/progs/counter (each byte says where in the stream it is) and
 * tests/progs/io_mix. */
#include "../progs/counter.h"
#include "../progs/io_mix.h"
#include "stdio/keep.h"
#include "test_memsup_util.h"
#include <stdint.h>

#define MIB (1u << 20)

static long long file_size(const char *path)
{
	struct stat st;
	return stat(path, &st) == 0 ? (long long)st.st_size : -1;
}

/* Read fd to its end: the counter stream from byte 0, every byte checked
 * when `every` (else one word in each 4 KiB, and the whole last MiB).
 * Returns the count. */
static uint64_t read_counter(int fd, int every, uint64_t total)
{
	static unsigned char buf[MIB];
	uint64_t at = 0;
	for (;;) {
		ssize_t k = read(fd, buf, sizeof buf);
		if (k < 0 && errno == EINTR)
			continue;
		cr_assert_geq(k, 0, "read: %s", strerror(errno));
		if (k == 0)
			return at;
		size_t n = (size_t)k, bad = n;
		if (every || at + n + MIB > total) {
			bad = counter_check(buf, at, n);
		} else {
			for (size_t i = (size_t)((8 - at % 8) % 8); i + 8 <= n && bad == n; i += 4096)
				if (counter_check(buf + i, at + i, 8) != 8)
					bad = i;
		}
		cr_assert_eq(bad, n, "the pass-through differs at byte %llu",
			     (unsigned long long)(at + bad));
		at += n;
	}
}

/* stdout.log's [at, at + n) are the counter stream's [from, from + n). */
static void expect_log_counter(int fd, off_t at, uint64_t from, size_t n, const char *what)
{
	unsigned char *buf = malloc(n ? n : 1);
	cr_assert_not_null(buf);
	cr_assert_eq(pread(fd, buf, n, at), (ssize_t)n, "%s: stdout.log is too short", what);
	size_t bad = counter_check(buf, from, n);
	cr_expect_eq(bad, n, "%s differs at its byte %zu", what, bad);
	free(buf);
}

/* stdout.log is the counter stream of `total` bytes kept to `max`: whole,
 * or its first max - max/2 bytes, the marker line, its last max/2. */
static void expect_log_kept(const struct sup_run *r, uint64_t total, uint64_t max)
{
	int fd = open(log_path(r), O_RDONLY);
	cr_assert_geq(fd, 0, "no stdout.log");
	if (total <= max) {
		cr_expect_eq(file_size(log_path(r)), (long long)total);
		expect_log_counter(fd, 0, 0, (size_t)total, "the whole log");
		close(fd);
		return;
	}
	uint64_t tail = max / 2, head = max - tail;
	char marker[KEEP_MARKER_MAX], got[KEEP_MARKER_MAX];
	int m = snprintf(marker, sizeof marker, "\n[memsup: %llu bytes left out]\n",
			 (unsigned long long)(total - max));
	cr_expect_eq(file_size(log_path(r)), (long long)(head + (uint64_t)m + tail),
		     "stdout.log is not the head, the marker and the tail");
	expect_log_counter(fd, 0, 0, (size_t)head, "the head");
	cr_assert_eq(pread(fd, got, (size_t)m, (off_t)head), m);
	cr_expect_eq(memcmp(got, marker, (size_t)m), 0, "no marker line after the head: '%.*s'", m,
		     got);
	expect_log_counter(fd, (off_t)(head + (uint64_t)m), total - tail, (size_t)tail, "the tail");
	close(fd);
}

/* A number of the record's "output": `stream`'s `key`, or the output
 * object's own when stream is NULL (at its top level, not inside a
 * stream's object); -1 for null. */
static long long out_num(const struct sup_run *r, const char *stream, const char *key)
{
	const char *o = rec_str(r, "output");
	cr_assert_not_null(o, "no output key in the record");
	char want[64];
	const char *v = NULL;
	snprintf(want, sizeof want, "\"%s\": ", key);
	if (stream) {
		char in[64];
		snprintf(in, sizeof in, "\"%s\": {", stream);
		const char *from = strstr(o, in);
		cr_assert_not_null(from, "no %s in output: %s", stream, o);
		v = strstr(from, want);
	} else {
		int depth = 0;
		for (const char *p = o; *p && !v; p++) {
			depth += *p == '{' ? 1 : *p == '}' ? -1 : 0;
			if (depth == 1 && strncmp(p, want, strlen(want)) == 0)
				v = p;
		}
	}
	cr_assert_not_null(v, "no %s in output: %s", key, o);
	v += strlen(want);
	return strncmp(v, "null", 4) == 0 ? -1 : (long long)strtoull(v, NULL, 10);
}

static void expect_counts(const struct sup_run *r, const char *stream, long long bytes,
			  long long passed, long long logged)
{
	cr_expect_eq(out_num(r, stream, "bytes"), bytes, "%s bytes", stream);
	if (passed >= 0)
		cr_expect_eq(out_num(r, stream, "passed"), passed, "%s passed", stream);
	cr_expect_eq(out_num(r, stream, "logged"), logged, "%s logged", stream);
	cr_expect_eq(out_num(r, stream, "left_out"), bytes - logged, "%s left_out", stream);
}

static const char *num(char *buf, uint64_t n)
{
	sprintf(buf, "%llu", (unsigned long long)n);
	return buf;
}

/* ---- the pass-through is the output; the log keeps head and tail ---------- */

/* 6 MB in 4 KiB writes (as sort and most stdio programs write) through a
 * pipe: every byte passes, in order; the log keeps the first and last MiB
 * (the default) and says how much it left out. */
Test(memsup_logmax, pipe_passes_everything_log_keeps_head_and_tail, .timeout = 60)
{
	const uint64_t total = 6000000;
	char n[32];
	struct sup_run r;
	tmp_make(&r);
	const char *args[] = { "-q", "--", prog("counter"), num(n, total), "4096", NULL };
	int rd = start_piped(&r, args);
	cr_expect_eq(read_counter(rd, 1, total), total);
	close(rd);
	cr_assert_eq(memsup_wait(&r), 0, "stderr: %s", r.err);
	expect_log_kept(&r, total, 2 * MIB);
	rec_load(&r);
	expect_counts(&r, "stdout", (long long)total, (long long)total, 2 * MIB);
	expect_counts(&r, "stderr", 0, 0, 0);
	cr_expect_eq(out_num(&r, NULL, "log_max"), 2 * MIB);
	cr_expect_eq(out_num(&r, NULL, "bytes"), (long long)total);
	cr_expect_eq(out_num(&r, NULL, "left_out"), (long long)(total - 2 * MIB));
	cr_expect_eq(out_num(&r, NULL, "log_bytes"), file_size(log_path(&r)));
}

/* The program bare with stdout to `out`; its wait status. */
static int bare_run(const char *const *argv, const char *out)
{
	pid_t p = fork();
	cr_assert_geq(p, 0);
	if (p == 0) {
		int o = open(out, O_WRONLY | O_CREAT | O_TRUNC, 0644);
		if (o < 0 || dup2(o, 1) < 0)
			_exit(99);
		execv(argv[0], (char *const *)argv);
		_exit(98);
	}
	int st;
	while (waitpid(p, &st, 0) < 0)
		cr_assert_eq(errno, EINTR);
	return st;
}

/* `memsup -- cmd > file`: the file is what `cmd > file` writes, byte for
 * byte (uneven writes of every byte value), and the log is bounded. */
Test(memsup_logmax, file_is_the_bare_output, .timeout = 60)
{
	struct sup_run r;
	tmp_make(&r);
	const char *bare[] = { prog("io_mix"), "binary", "5000000", "12", NULL };
	cr_assert_eq(bare_run(bare, sup_tmp_path(&r, "bare.out")), 0);
	const char *args[] = { "-q", "--", prog("io_mix"), "binary", "5000000", "12", NULL };
	memsup_start(&r, 1, args); /* its stdout: TMP/memsup.stdout, a file */
	cr_assert_eq(memsup_wait(&r), 0, "stderr: %s", r.err);
	int a = open(sup_tmp_path(&r, "bare.out"), O_RDONLY), b = open(sup_tmp_path(&r, "memsup.stdout"),
								     O_RDONLY);
	cr_assert(a >= 0 && b >= 0);
	cr_expect_eq(file_size(sup_tmp_path(&r, "memsup.stdout")), 5000000);
	static char x[MIB], y[MIB];
	for (uint64_t at = 0;;) {
		ssize_t na = read(a, x, sizeof x), nb = read(b, y, sizeof y);
		cr_assert_eq(na, nb, "the file and the bare output differ in length near %llu",
			     (unsigned long long)at);
		if (na <= 0)
			break;
		cr_assert_eq(memcmp(x, y, (size_t)na), 0, "they differ in [%llu, +%zd)",
			     (unsigned long long)at, na);
		at += (uint64_t)na;
	}
	close(a);
	close(b);
	rec_load(&r);
	expect_counts(&r, "stdout", 5000000, 5000000, 2 * MIB);
	char marker[KEEP_MARKER_MAX];
	int m = snprintf(marker, sizeof marker, "\n[memsup: %d bytes left out]\n",
			 5000000 - 2 * MIB);
	cr_expect_eq(file_size(log_path(&r)), 2 * MIB + m);
}

/* 2 GB through a pipe: all of it passes, the log stays at 2 MiB and the
 * marker, and the counts are exact.  (2e9 bytes in 64 KiB writes: a few
 * seconds; every 4 KiB and the last MiB of the pass-through are checked.) */
Test(memsup_logmax, two_gb_through_a_pipe_log_bounded, .timeout = 180)
{
	const uint64_t total = 2000000000ull;
	char n[32];
	struct sup_run r;
	tmp_make(&r);
	const char *args[] = { "-q", "--", prog("counter"), num(n, total), NULL };
	int rd = start_piped(&r, args);
	cr_expect_eq(read_counter(rd, 0, total), total);
	close(rd);
	cr_assert_eq(memsup_wait(&r), 0, "stderr: %s", r.err);
	expect_log_kept(&r, total, 2 * MIB);
	cr_expect_leq(file_size(log_path(&r)), 2 * MIB + KEEP_MARKER_MAX);
	rec_load(&r);
	expect_counts(&r, "stdout", (long long)total, (long long)total, 2 * MIB);
	cr_expect_eq(out_num(&r, NULL, "left_out"), (long long)(total - 2 * MIB));
	cr_expect_not_null(strstr(rec_str(&r, "output"), "\"end\": \"complete\""));
}

/* `memsup -- cmd | head -1`: the command dies of SIGPIPE as it would bare,
 * memsup exits 141 as before, and what memsup read before is counted and
 * kept within the bound. */
Test(memsup_logmax, head_1_still_gives_141, .timeout = 60)
{
	struct sup_run r;
	tmp_make(&r);
	const char *args[] = { "-q", "--", prog("counter"), "2000000000", NULL };
	int rd = start_piped(&r, args);
	pid_t head = fork();
	cr_assert_geq(head, 0);
	if (head == 0) {
		int null = open("/dev/null", O_WRONLY);
		if (dup2(rd, 0) < 0 || null < 0 || dup2(null, 1) < 0)
			_exit(99);
		execlp("head", "head", "-n", "1", (char *)NULL);
		_exit(98);
	}
	close(rd);
	int st;
	cr_assert_eq(waitpid(head, &st, 0), head);
	cr_expect(WIFEXITED(st) && WEXITSTATUS(st) == 0, "head: status %d", st);
	cr_assert_eq(memsup_wait(&r), 128 + SIGPIPE, "stderr: %s", r.err);
	rec_load(&r);
	cr_expect_eq(rec_num(&r, "exit_code"), -SIGPIPE);
	cr_expect_str_eq(rec_str(&r, "reason"), "null");
	cr_expect_not_null(strstr(rec_str(&r, "output"), "\"end\": \"reader_gone\""), "%s",
			   rec_str(&r, "output"));
	long long bytes = out_num(&r, "stdout", "bytes");
	cr_expect_geq(bytes, out_num(&r, "stdout", "passed"));
	cr_expect_eq(out_num(&r, "stdout", "logged") + out_num(&r, "stdout", "left_out"), bytes);
	expect_log_kept(&r, (uint64_t)bytes, 2 * MIB);
}

/* ---- --log-max's values ----------------------------------------------------- */

Test(memsup_logmax, zero_keeps_only_the_marker, .timeout = 60)
{
	struct sup_run r;
	const char *args[] = { "-q", "--log-max", "0", "--", prog("counter"), "3000000", NULL };
	cr_assert_eq(memsup_run(&r, args), 0, "stderr: %s", r.err);
	char log[256];
	slurp(log_path(&r), log, sizeof log);
	cr_expect_str_eq(log, "\n[memsup: 3000000 bytes left out]\n");
	cr_expect_eq(file_size(sup_tmp_path(&r, "memsup.stdout")), 3000000);
	rec_load(&r);
	expect_counts(&r, "stdout", 3000000, 3000000, 0);
	cr_expect_eq(out_num(&r, NULL, "log_max"), 0);
}

Test(memsup_logmax, unlimited_keeps_everything, .timeout = 60)
{
	struct sup_run r;
	const char *args[] = { "-q", "--log-max", "unlimited", "--", prog("counter"), "5000000",
			       NULL };
	cr_assert_eq(memsup_run(&r, args), 0, "stderr: %s", r.err);
	expect_log_kept(&r, 5000000, UINT64_MAX);
	rec_load(&r);
	expect_counts(&r, "stdout", 5000000, 5000000, 5000000);
	cr_expect_eq(out_num(&r, NULL, "log_max"), -1, "log_max is not null");
	cr_expect_eq(out_num(&r, NULL, "left_out"), 0);
}

/* At the bound the log is whole and unmarked; one byte more and it is cut
 * in two halves around the marker. */
Test(memsup_logmax, the_bound_exactly_and_one_byte_past, .timeout = 60)
{
	static const uint64_t totals[] = { 1000, 1001, 999 };
	for (size_t i = 0; i < sizeof totals / sizeof totals[0]; i++) {
		char n[32];
		struct sup_run r;
		const char *args[] = { "-q", "--log-max", "1000", "--", prog("counter"),
				       num(n, totals[i]), "7", NULL };
		cr_assert_eq(memsup_run(&r, args), 0, "stderr: %s", r.err);
		expect_log_kept(&r, totals[i], 1000);
		rec_load(&r);
		expect_counts(&r, "stdout", (long long)totals[i], (long long)totals[i],
			      totals[i] < 1000 ? (long long)totals[i] : 1000);
	}
}

/* Both streams, one after the other: the head is stdout's first MiB, the
 * tail stderr's last, and each stream's counts say so. */
Test(memsup_logmax, streams_counted_apart, .timeout = 60)
{
	struct sup_run r;
	char script[PATH_MAX * 2 + 64];
	snprintf(script, sizeof script, "'%s' 3000000 && '%s' 3000000 >&2", prog("counter"),
		 prog("counter"));
	const char *args[] = { "-q", "--", "sh", "-c", script, NULL };
	cr_assert_eq(memsup_run(&r, args), 0, "stderr: %.200s", r.err);
	cr_expect_eq(file_size(sup_tmp_path(&r, "memsup.stdout")), 3000000);
	cr_expect_eq(file_size(sup_tmp_path(&r, "memsup.stderr")), 3000000);
	/* the log: stdout's [0, 1 MiB), the marker, stderr's [3e6 - 1 MiB, 3e6) */
	int fd = open(log_path(&r), O_RDONLY);
	cr_assert_geq(fd, 0);
	expect_log_counter(fd, 0, 0, MIB, "the head (stdout)");
	char marker[KEEP_MARKER_MAX];
	int m = snprintf(marker, sizeof marker, "\n[memsup: %d bytes left out]\n",
			 6000000 - 2 * MIB);
	expect_log_counter(fd, MIB + m, 3000000 - MIB, MIB, "the tail (stderr)");
	cr_expect_eq(file_size(log_path(&r)), 2 * MIB + m);
	close(fd);
	rec_load(&r);
	expect_counts(&r, "stdout", 3000000, 3000000, MIB);
	expect_counts(&r, "stderr", 3000000, 3000000, MIB);
	cr_expect_eq(out_num(&r, NULL, "left_out"), 6000000 - 2 * MIB);
}

/* --output log with a bound: both streams through one pipe, so the log's
 * head and tail are those of a bare run writing both into one file, in the
 * order written; nothing on memsup's own stdout. */
Test(memsup_logmax, log_mode_bounded_keeps_the_order, .timeout = 60)
{
	struct sup_run r;
	tmp_make(&r);
	pid_t p = fork();
	cr_assert_geq(p, 0);
	if (p == 0) {
		int o = open(sup_tmp_path(&r, "bare.both"), O_WRONLY | O_CREAT | O_TRUNC | O_APPEND, 0644);
		if (o < 0 || dup2(o, 1) < 0 || dup2(o, 2) < 0)
			_exit(99);
		execl(prog("io_mix"), "io_mix", "mix", "3000", "5", (char *)NULL);
		_exit(98);
	}
	int st;
	cr_assert_eq(waitpid(p, &st, 0), p);
	cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	long long total = file_size(sup_tmp_path(&r, "bare.both"));
	cr_assert_gt(total, 2 * MIB, "io_mix wrote only %lld bytes", total);
	const char *args[] = { "-q", "--output", "log", "--log-max", "1M", "--", prog("io_mix"),
			       "mix", "3000", "5", NULL };
	memsup_start(&r, 1, args);
	cr_assert_eq(memsup_wait(&r), 0, "stderr: %.300s", r.err);
	cr_expect_str_eq(r.out, "");
	cr_expect_str_eq(r.err, "");
	size_t half = MIB / 2;
	char marker[KEEP_MARKER_MAX];
	int m = snprintf(marker, sizeof marker, "\n[memsup: %lld bytes left out]\n", total - MIB);
	cr_assert_eq(file_size(log_path(&r)), MIB + m);
	int a = open(sup_tmp_path(&r, "bare.both"), O_RDONLY), b = open(log_path(&r), O_RDONLY);
	cr_assert(a >= 0 && b >= 0);
	static char x[MIB], y[MIB];
	cr_assert_eq(pread(a, x, half, 0), (ssize_t)half);
	cr_assert_eq(pread(b, y, half, 0), (ssize_t)half);
	cr_expect_eq(memcmp(x, y, half), 0, "the head is not the bare run's");
	cr_assert_eq(pread(b, y, (size_t)m, (off_t)half), m);
	cr_expect_eq(memcmp(marker, y, (size_t)m), 0, "no marker line");
	cr_assert_eq(pread(a, x, half, total - (off_t)half), (ssize_t)half);
	cr_assert_eq(pread(b, y, half, (off_t)half + m), (ssize_t)half);
	cr_expect_eq(memcmp(x, y, half), 0, "the tail is not the bare run's");
	close(a);
	close(b);
	rec_load(&r);
	cr_expect_not_null(strstr(rec_str(&r, "output"), "\"mode\": \"log\", \"log\": \"stdout.log\""),
			   "%s", rec_str(&r, "output"));
	cr_expect_not_null(strstr(rec_str(&r, "output"), "\"stdout\": null, \"stderr\": null"),
			   "%s", rec_str(&r, "output"));
	cr_expect_eq(out_num(&r, NULL, "log_max"), MIB);
	cr_expect_eq(out_num(&r, NULL, "bytes"), total);
	cr_expect_eq(out_num(&r, NULL, "left_out"), total - MIB);
}
