/* test_memsup_output.c: the command's stdout and stderr under each
 * --output mode, end to end.  tee (the default): both streams reach
 * memsup's own, unchanged and unmerged, and stdout.log holds them all
 * (--log-max unlimited where a test reads the whole log back; the bounded
 * log has its own tests, test_memsup_logmax.c);
 * compared byte for byte with a bare run of the same program for binary
 * output, for interleaved streams, for 200 MiB, and for readers that stop
 * early, stall or read slowly.  log: stdout.log alone, as measure_command
 * (scripts/memsup.py) has it.  inherit: memsup's own descriptors, a
 * terminal stays one, nothing logged.  stdin passes in every mode. */
#include "../progs/io_mix.h"
#include "test_memsup_harden.h"
#include <stdint.h>

static long long file_size(const char *path)
{
	struct stat st;
	return stat(path, &st) == 0 ? (long long)st.st_size : -1;
}

/* `n` bytes read from fd are bytes [from, from+n) of stream `seed`. */
static void expect_stream(int fd, uint64_t seed, uint64_t from, uint64_t n, const char *what)
{
	static unsigned char buf[1 << 16];
	uint64_t off = 0;
	while (off < n) {
		size_t want = n - off < sizeof buf ? (size_t)(n - off) : sizeof buf;
		ssize_t k = read(fd, buf, want);
		if (k < 0 && errno == EINTR)
			continue;
		cr_assert_gt(k, 0, "%s ends at byte %llu of %llu", what,
			     (unsigned long long)(from + off), (unsigned long long)(from + n));
		for (ssize_t i = 0; i < k; i++)
			if (buf[i] != io_mix_byte(seed, from + off + (uint64_t)i))
				cr_assert_fail("%s differs at byte %llu", what,
					       (unsigned long long)(from + off + (uint64_t)i));
		off += (uint64_t)k;
	}
}

static void expect_file_stream(const char *path, uint64_t seed, uint64_t n)
{
	cr_expect_eq(file_size(path), (long long)n, "%s has %lld bytes, not %llu", path,
		     file_size(path), (unsigned long long)n);
	int fd = open(path, O_RDONLY);
	cr_assert_geq(fd, 0, "%s: %s", path, strerror(errno));
	expect_stream(fd, seed, 0, n, path);
	close(fd);
}

/* The whole of a file, malloc'd (NUL after), its size in *n. */
static char *file_read(const char *path, size_t *n)
{
	long long size = file_size(path);
	cr_assert_geq(size, 0, "%s is missing", path);
	char *buf = malloc((size_t)size + 1);
	cr_assert_not_null(buf);
	int fd = open(path, O_RDONLY);
	cr_assert_geq(fd, 0);
	size_t got = 0;
	while (got < (size_t)size) {
		ssize_t k = read(fd, buf + got, (size_t)size - got);
		cr_assert_gt(k, 0);
		got += (size_t)k;
	}
	close(fd);
	buf[got] = '\0';
	*n = got;
	return buf;
}

static void expect_same_files(const char *a, const char *b)
{
	size_t na, nb;
	char *x = file_read(a, &na), *y = file_read(b, &nb);
	cr_expect_eq(na, nb, "%s has %zu bytes, %s %zu", a, na, b, nb);
	size_t i = 0;
	while (i < na && i < nb && x[i] == y[i])
		i++;
	cr_expect(i == na && i == nb, "%s and %s differ at byte %zu", a, b, i);
	free(x);
	free(y);
}

/* The program bare: argv with stdout to `out`, stderr to `err` (the same
 * path: one O_APPEND file for both, as stdout.log is in log mode).
 * Returns its wait status. */
static int bare_run(const char *const *argv, const char *out, const char *err)
{
	pid_t p = fork();
	cr_assert_geq(p, 0);
	if (p == 0) {
		int o = open(out, O_WRONLY | O_CREAT | O_TRUNC | O_APPEND, 0644);
		int e = strcmp(out, err) ? open(err, O_WRONLY | O_CREAT | O_TRUNC, 0644) : o;
		if (o < 0 || e < 0 || dup2(o, 1) < 0 || dup2(e, 2) < 0)
			_exit(99);
		execv(argv[0], (char *const *)argv);
		_exit(98);
	}
	int st;
	while (waitpid(p, &st, 0) < 0)
		cr_assert_eq(errno, EINTR);
	return st;
}

/* A number of the record's "output" object: `stream`'s `key` ("stdout",
 * "bytes"), or the top level's when stream is NULL. */
static unsigned long long out_num(const struct sup_run *r, const char *stream, const char *key)
{
	const char *o = rec_str(r, "output");
	cr_assert_not_null(o, "no output key in the record");
	char want[64];
	if (stream) {
		snprintf(want, sizeof want, "\"%s\": {", stream);
		o = strstr(o, want);
		cr_assert_not_null(o, "no %s in output: %s", stream, rec_str(r, "output"));
	}
	snprintf(want, sizeof want, "\"%s\": ", key);
	const char *v = strstr(o, want);
	cr_assert_not_null(v, "no %s in output: %s", key, rec_str(r, "output"));
	return strtoull(v + strlen(want), NULL, 10);
}

/* `"stdout": {... "end": "complete"`: the stream's end is `end`. */
static void expect_end(const struct sup_run *r, const char *stream, const char *end)
{
	const char *o = rec_str(r, "output");
	char want[64];
	snprintf(want, sizeof want, "\"%s\": {", stream);
	const char *s = o ? strstr(o, want) : NULL;
	cr_assert_not_null(s, "no %s in output: %s", stream, o);
	snprintf(want, sizeof want, "\"end\": \"%s\"", end);
	const char *e = strstr(s, want), *close = strchr(s, '}');
	cr_expect(e && e < close, "%s did not end %s: %s", stream, end, o);
}

/* ---- tee: what passes through is what a bare run writes ---------------- */

Test(memsup_output, binary_output_passes_through_and_is_logged, .timeout = 60)
{
	struct sup_run r;
	tmp_make(&r);
	const char *bare[] = { prog("io_mix"), "binary", "3000000", "5", NULL };
	cr_assert_eq(bare_run(bare, sup_tmp_path(&r, "bare.out"), sup_tmp_path(&r, "bare.err")), 0);
	const char *args[] = { "-q", "--log-max", "unlimited", "--", prog("io_mix"), "binary",
			       "3000000", "5", NULL };
	memsup_start(&r, 1, args);
	cr_assert_eq(memsup_wait(&r), 0, "stderr: %s", r.err);
	expect_same_files(sup_tmp_path(&r, "memsup.stdout"), sup_tmp_path(&r, "bare.out"));
	expect_same_files(log_path(&r), sup_tmp_path(&r, "bare.out"));
	cr_expect_str_eq(r.err, "", "stderr: %s", r.err);
	rec_load(&r);
	cr_expect_not_null(strstr(rec_str(&r, "output"), "\"mode\": \"tee\", \"log\": \"stdout.log\", "
				  "\"logged\": [\"stdout\", \"stderr\"], \"log_bytes\": 3000000"),
			   "%s", rec_str(&r, "output"));
	cr_expect_eq(out_num(&r, "stdout", "bytes"), 3000000);
	cr_expect_eq(out_num(&r, "stdout", "passed"), 3000000);
	expect_end(&r, "stdout", "complete");
	cr_expect_eq(out_num(&r, "stderr", "bytes"), 0);
	expect_end(&r, "stderr", "complete");
}

/* Split stdout.log's records ("O..." / "E..." lines, each one write of the
 * command) back into the two streams. */
static void split_log(const char *log, size_t n, const char *out_path, const char *err_path)
{
	FILE *o = fopen(out_path, "wb"), *e = fopen(err_path, "wb");
	cr_assert(o && e);
	for (size_t i = 0; i < n;) {
		const char *nl = memchr(log + i, '\n', n - i);
		cr_assert_not_null(nl, "stdout.log ends in the middle of a record at %zu", i);
		size_t len = (size_t)(nl - (log + i)) + 1;
		cr_assert(log[i] == 'O' || log[i] == 'E', "a record torn apart at byte %zu", i);
		fwrite(log + i, 1, len, log[i] == 'O' ? o : e);
		i += len;
	}
	fclose(o);
	fclose(e);
}

Test(memsup_output, interleaved_streams_arrive_unmerged, .timeout = 60)
{
	struct sup_run r;
	tmp_make(&r);
	const char *bare[] = { prog("io_mix"), "mix", "3000", "9", NULL };
	cr_assert_eq(bare_run(bare, sup_tmp_path(&r, "bare.out"), sup_tmp_path(&r, "bare.err")), 0);
	const char *args[] = { "-q", "--log-max", "unlimited", "--", prog("io_mix"), "mix", "3000",
			       "9", NULL };
	memsup_start(&r, 1, args);
	cr_assert_eq(memsup_wait(&r), 0, "stderr: %.300s", r.err);
	/* the pass-through: each stream to its own descriptor, exactly */
	expect_same_files(sup_tmp_path(&r, "memsup.stdout"), sup_tmp_path(&r, "bare.out"));
	expect_same_files(sup_tmp_path(&r, "memsup.stderr"), sup_tmp_path(&r, "bare.err"));
	/* the log: both streams, every record whole, each stream in order */
	size_t n;
	char *log = file_read(log_path(&r), &n);
	split_log(log, n, sup_tmp_path(&r, "log.out"), sup_tmp_path(&r, "log.err"));
	free(log);
	expect_same_files(sup_tmp_path(&r, "log.out"), sup_tmp_path(&r, "bare.out"));
	expect_same_files(sup_tmp_path(&r, "log.err"), sup_tmp_path(&r, "bare.err"));
	rec_load(&r);
	cr_expect_eq(out_num(&r, "stdout", "bytes") + out_num(&r, "stderr", "bytes"), n);
	cr_expect_eq(out_num(&r, NULL, "log_bytes"), n);
}

/* 200 MiB through memsup into a pipe the test reads: every byte on the
 * pass-through and in stdout.log, in order. */
Test(memsup_output, two_hundred_mib_pass_through_and_log, .timeout = 240)
{
	const uint64_t total = 200ull << 20;
	char bytes[32];
	snprintf(bytes, sizeof bytes, "%llu", (unsigned long long)total);
	struct sup_run r;
	tmp_make(&r);
	const char *args[] = { "-q", "--log-max", "unlimited", "--", prog("io_mix"), "binary",
			       bytes, "11", NULL };
	int rd = start_piped(&r, args);
	expect_stream(rd, 11, 0, total, "memsup's stdout");
	char more;
	cr_expect_eq(read(rd, &more, 1), 0, "memsup's stdout goes on past the stream");
	close(rd);
	cr_assert_eq(memsup_wait(&r), 0, "stderr: %s", r.err);
	expect_file_stream(log_path(&r), 11, total);
	unlink(log_path(&r)); /* 200 MiB of /tmp back */
	rec_load(&r);
	cr_expect_eq(out_num(&r, "stdout", "passed"), total);
	expect_end(&r, "stdout", "complete");
}

/* ---- readers that stop, stall or dawdle ------------------------------------ */

/* `memsup ... | head -c 1000`: the command dies of SIGPIPE as it would
 * bare (memsup exits 128+13, as a pipefail shell reports it), head got
 * the stream's first bytes, the log holds every byte memsup read. */
Test(memsup_output, reader_that_stops_early_gives_sigpipe, .timeout = 60)
{
	struct sup_run r;
	tmp_make(&r);
	const char *args[] = { "-q", "--log-max", "unlimited", "--", prog("io_mix"), "binary",
			       "2000000000", "3", NULL };
	int rd = start_piped(&r, args);
	expect_stream(rd, 3, 0, 1000, "the first 1000 bytes");
	close(rd);
	cr_assert_eq(memsup_wait(&r), 128 + SIGPIPE, "stderr: %s", r.err);
	rec_load(&r);
	cr_expect_eq(rec_num(&r, "exit_code"), -SIGPIPE);
	expect_end(&r, "stdout", "reader_gone");
	unsigned long long logged = out_num(&r, "stdout", "bytes");
	cr_expect_geq(out_num(&r, "stdout", "passed"), 1000);
	cr_expect_geq(logged, out_num(&r, "stdout", "passed"));
	expect_file_stream(log_path(&r), 3, logged);
}

/* The same reader, a command that ignores SIGPIPE: it gets EPIPE, and
 * stdout.log holds exactly the bytes its writes put out -- those memsup
 * had not read when the reader went included. */
Test(memsup_output, reader_gone_every_written_byte_logged, .timeout = 60)
{
	struct sup_run r;
	tmp_make(&r);
	const char *count = sup_tmp_path(&r, "count");
	const char *args[] = { "-q", "--log-max", "unlimited", "--", prog("io_mix"), "count",
			       "2000000000", count, NULL };
	int rd = start_piped(&r, args);
	expect_stream(rd, 1, 0, 5000, "the first 5000 bytes");
	close(rd);
	cr_assert_eq(memsup_wait(&r), 0, "stderr: %s", r.err);
	char text[64];
	slurp(count, text, sizeof text);
	unsigned long long wrote = strtoull(text, NULL, 10);
	cr_assert_gt(wrote, 5000, "io_mix wrote %s", text);
	expect_file_stream(log_path(&r), 1, wrote);
	rec_load(&r);
	expect_end(&r, "stdout", "reader_gone");
	cr_expect_eq(out_num(&r, "stdout", "bytes"), wrote);
}

/* A reader that never reads (and never closes): the command blocks on its
 * full pipe, but memsup goes on sampling and the wall budget still ends
 * the run; what the reader did not take is in the log.  Every sample dense
 * (--sparse-ms 0): a blocked command's memory is flat, and the default's
 * sparse interval, doubling to 1 s, would take a handful in the second. */
Test(memsup_output, stalled_reader_does_not_hang_the_run, .timeout = 60)
{
	struct sup_run r;
	tmp_make(&r);
	const char *args[] = { "-q", "--wall-s", "1", "--sparse-ms", "0", "--log-max", "unlimited", "--",
			       prog("io_mix"), "binary", "2000000000", "4", NULL };
	int rd = start_piped(&r, args);
	cr_assert_eq(memsup_wait(&r), 124, "stderr: %s", r.err);
	rec_load(&r);
	cr_expect_str_eq(rec_str(&r, "reason"), "\"wall_budget_exceeded\"");
	cr_expect_gt(rec_num(&r, "samples"), 10, "sampling stopped while the reader stalled");
	expect_end(&r, "stdout", "cut");
	unsigned long long passed = out_num(&r, "stdout", "passed"),
			   logged = out_num(&r, "stdout", "bytes");
	cr_expect_geq(logged, passed);
	expect_file_stream(log_path(&r), 4, logged);
	/* what did pass waits in the pipe, the stream's first bytes */
	expect_stream(rd, 4, 0, passed, "what memsup passed");
	char more;
	cr_expect_eq(read(rd, &more, 1), 0);
	close(rd);
}

/* A slow reader gets every byte, and so does the log. */
Test(memsup_output, slow_reader_gets_everything, .timeout = 60)
{
	const uint64_t total = 6000000;
	struct sup_run r;
	tmp_make(&r);
	const char *args[] = { "-q", "--log-max", "unlimited", "--", prog("io_mix"), "binary",
			       "6000000", "8", NULL };
	int rd = start_piped(&r, args);
	for (uint64_t off = 0; off < total; off += 65536) {
		uint64_t n = total - off < 65536 ? total - off : 65536;
		expect_stream(rd, 8, off, n, "memsup's stdout");
		usleep(5000);
	}
	close(rd);
	cr_assert_eq(memsup_wait(&r), 0, "stderr: %s", r.err);
	expect_file_stream(log_path(&r), 8, total);
	rec_load(&r);
	expect_end(&r, "stdout", "complete");
}

/* memsup started with its stdout closed: the command's stdout is logged
 * only, its stderr passes on; nothing of memsup's lands in the log. */
static void close_stdout(const struct sup_run *r)
{
	(void)r;
	close(1);
}

Test(memsup_output, closed_stdout_is_logged_only, .timeout = 30)
{
	struct sup_run r;
	tmp_make(&r);
	const char *argv[] = { env_or_skip("MEMSUP"), "-q", "--json", "-o", r.dir, "--", "sh", "-c",
			       "echo to-out; echo to-err >&2", NULL };
	sup_spawn(&r, close_stdout, argv);
	cr_assert_eq(memsup_wait(&r), 0, "stderr: %s", r.err);
	cr_expect_str_eq(r.err, "to-err\n");
	char log[256];
	slurp(log_path(&r), log, sizeof log);
	cr_expect(strstr(log, "to-out\n") && strstr(log, "to-err\n") && strlen(log) == 14,
		  "stdout.log: %s", log);
	rec_load(&r);
	expect_end(&r, "stdout", "not_open");
	cr_expect_eq(out_num(&r, "stdout", "passed"), 0);
	expect_end(&r, "stderr", "complete");
}

/* ---- the other modes, and stdin ------------------------------------------------ */

/* log: measure_command's behaviour (scripts/memsup.py), nothing on memsup's
 * stdout or stderr, and the streams exactly as interleaved as one file
 * written by both. */
Test(memsup_output, log_mode_keeps_the_exact_interleaving, .timeout = 60)
{
	struct sup_run r;
	tmp_make(&r);
	const char *bare[] = { prog("io_mix"), "mix", "500", "3", NULL };
	cr_assert_eq(bare_run(bare, sup_tmp_path(&r, "bare.both"), sup_tmp_path(&r, "bare.both")), 0);
	const char *args[] = { "-q", "--output", "log", "--", prog("io_mix"), "mix", "500", "3",
			       NULL };
	memsup_start(&r, 1, args);
	cr_assert_eq(memsup_wait(&r), 0, "stderr: %.300s", r.err);
	cr_expect_str_eq(r.out, "");
	cr_expect_str_eq(r.err, "");
	expect_same_files(log_path(&r), sup_tmp_path(&r, "bare.both"));
	rec_load(&r);
	cr_expect_not_null(strstr(rec_str(&r, "output"), "\"mode\": \"log\", \"log\": \"stdout.log\""),
			   "%s", rec_str(&r, "output"));
	cr_expect_not_null(strstr(rec_str(&r, "output"), "\"stdout\": null, \"stderr\": null"),
			   "%s", rec_str(&r, "output"));
}

static void stdin_from_file(const struct sup_run *r)
{
	int fd = open(sup_tmp_path(r, "in.txt"), O_RDONLY);
	if (fd < 0 || dup2(fd, 0) < 0)
		_exit(97);
}

Test(memsup_output, stdin_passes_through_in_every_mode, .timeout = 60)
{
	static const char *const modes[] = { "tee", "log", "inherit" };
	static const char text[] = "hello from stdin\n";
	for (size_t i = 0; i < 3; i++) {
		struct sup_run r;
		tmp_make(&r);
		int fd = open(sup_tmp_path(&r, "in.txt"), O_WRONLY | O_CREAT | O_TRUNC, 0644);
		cr_assert_eq(write(fd, text, sizeof text - 1), (ssize_t)sizeof text - 1);
		close(fd);
		const char *argv[] = { env_or_skip("MEMSUP"), "-q", "--output", modes[i], "-o", r.dir,
				       "--", "cat", NULL };
		sup_spawn(&r, stdin_from_file, argv);
		cr_assert_eq(memsup_wait(&r), 0, "%s: stderr: %s", modes[i], r.err);
		char log[256];
		slurp(log_path(&r), log, sizeof log);
		cr_expect_str_eq(r.out, i == 1 ? "" : text, "%s", modes[i]);
		cr_expect_str_eq(log, i == 2 ? "" : text, "%s", modes[i]);
		cr_expect_eq(path_exists(log_path(&r)), i != 2, "%s: stdout.log", modes[i]);
		rec_load(&r);
		if (i == 2)
			cr_expect_not_null(strstr(rec_str(&r, "output"),
						  "\"mode\": \"inherit\", \"log\": null, \"logged\": [], "
						  "\"log_bytes\": null, \"stdout\": null"),
					   "%s", rec_str(&r, "output"));
	}
}

/* memsup on a terminal: with inherit the command's stdout is that
 * terminal; with tee it is a pipe, and its output still reaches the
 * terminal. */
static void run_on_pty(const char *mode, char *got, size_t cap)
{
	struct sup_run r;
	tmp_make(&r);
	int m = posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);
	if (m < 0)
		cr_skip_test("no pseudo-terminal: %s", strerror(errno));
	cr_assert_eq(grantpt(m), 0);
	cr_assert_eq(unlockpt(m), 0);
	const char *slave = ptsname(m);
	cr_assert_not_null(slave);
	const char *argv[] = { env_or_skip("MEMSUP"), "-q", "--output", mode, "-o", r.dir, "--",
			       "sh", "-c", "if test -t 1; then echo on-a-tty; else echo not-a-tty; fi",
			       NULL };
	pid_t p = fork();
	cr_assert_geq(p, 0);
	if (p == 0) {
		int s = open(slave, O_RDWR | O_NOCTTY);
		if (s < 0 || dup2(s, 1) < 0 || chdir(r.tmp) < 0)
			_exit(99);
		execv(argv[0], (char *const *)argv);
		_exit(98);
	}
	size_t n = 0;
	for (;;) {
		ssize_t k = read(m, got + n, cap - 1 - n);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0 || n + (size_t)k >= cap - 1)
			break; /* EIO: every slave descriptor closed */
		n += (size_t)k;
	}
	got[n] = '\0';
	int st;
	waitpid(p, &st, 0);
	close(m);
	cr_expect(WIFEXITED(st) && WEXITSTATUS(st) == 0, "%s: status %d", mode, st);
}

Test(memsup_output, inherit_keeps_the_terminal, .timeout = 30)
{
	char got[256];
	run_on_pty("inherit", got, sizeof got);
	cr_expect_not_null(strstr(got, "on-a-tty"), "inherit: %s", got);
	run_on_pty("tee", got, sizeof got);
	cr_expect_not_null(strstr(got, "not-a-tty"), "tee: %s", got);
}
