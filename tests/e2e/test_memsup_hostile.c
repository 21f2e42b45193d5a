/* test_memsup_hostile.c: hostile environments for the real memsup with
 * tracing on: a command line of 100,000 arguments, arguments holding every
 * byte value (newlines, quotes, backslashes, control characters, invalid
 * UTF-8), an LD_PRELOAD the user already set, and a setuid target.
 *
 * Ground truth is what the command itself received (tests/progs/x_argdump
 * writes its argv to a file) and what the test passed.  resources.json and
 * processes.json are parsed with python3's json module, their strings turned
 * back into bytes with "surrogateescape" (jsonw writes a byte that is not
 * UTF-8 as \udcXX), and compared byte for byte, by the checks in
 * tests/py/hostile_*.py.
 */
#include "test_memsup_util.h"
#include "test_py.h"

/* Writes n strings, each followed by a NUL, to path. */
static void write_list(const char *path, char *const *v, size_t n)
{
	FILE *f = fopen(path, "wb");
	cr_assert_not_null(f);
	for (size_t i = 0; i < n; i++)
		cr_assert_eq(fwrite(v[i], 1, strlen(v[i]) + 1, f), strlen(v[i]) + 1);
	cr_assert_eq(fclose(f), 0);
}

/* Runs the python3 check tests/py/NAME: it gets argv[1..] = args (quoted
 * by the caller).  Fails the test with the script's output when it exits
 * non-zero. */
static void py_check(const struct sup_run *r, const char *name, const char *args)
{
	char cmd[PATH_MAX * 5], out[16384];
	snprintf(cmd, sizeof cmd, "python3 '%s' %s 2>&1", py_script(name), args);
	FILE *f = popen(cmd, "r");
	cr_assert_not_null(f);
	size_t got = fread(out, 1, sizeof out - 1, f);
	out[got] = '\0';
	while (fread(cmd, 1, sizeof cmd, f) > 0) {
	}
	int st = pclose(f);
	cr_assert_eq(st, 0, "%s failed:\n%s\nmemsup stderr:\n%s", name, out, r->err);
}

static void tmp_remove(const struct sup_run *r)
{
	char cmd[400];
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", r->tmp);
	if (system(cmd) != 0)
		cr_log_warn("could not remove %s", r->tmp);
}

/* Runs x_argdump ARGS under memsup and checks argv everywhere; extra
 * memsup options (before "--") in opts.  The check (tests/py/hostile_argv.py):
 * EXPECTED (the command's argv, NUL-terminated strings) must be what the
 * command received (DUMP), resources.json "command", and processes.json's
 * argv of the traced root image, exactly, unless the record's argv was cut
 * (record.h: MT_ARGV_BYTES), which must then be said: flag
 * MT_FLAG_ARGV_TRUNCATED (1) set in "flags", a prefix kept, and the record
 * file's argc still the real count. */
static void run_argv_case(char *const *args, size_t nargs, const char *const *opts,
			  const char *mode)
{
	struct sup_run r;
	tmp_make(&r);
	char dump[PATH_MAX + 32], expected[PATH_MAX + 32], dumpenv[PATH_MAX + 48];
	snprintf(dump, sizeof dump, "%s/dump", r.tmp);
	snprintf(expected, sizeof expected, "%s/expected", r.tmp);
	snprintf(dumpenv, sizeof dumpenv, "X_ARGDUMP=%s", dump);
	size_t nopts = 0;
	while (opts && opts[nopts])
		nopts++;
	char **argv = calloc(nargs + nopts + 10, sizeof *argv);
	cr_assert_not_null(argv);
	size_t n = 0;
	argv[n++] = (char *)env_or_skip("MEMSUP");
	argv[n++] = "-q";
	argv[n++] = "-o";
	argv[n++] = r.dir;
	argv[n++] = "-e";
	argv[n++] = dumpenv;
	for (size_t i = 0; i < nopts; i++)
		argv[n++] = (char *)opts[i];
	argv[n++] = "--";
	size_t cmd0 = n;
	argv[n++] = (char *)prog("x_argdump");
	for (size_t i = 0; i < nargs; i++)
		argv[n++] = args[i];
	argv[n] = NULL;
	write_list(expected, argv + cmd0, n - cmd0);
	sup_spawn(&r, NULL, (const char *const *)argv); /* any length */
	cr_assert_eq(memsup_wait(&r), 0, "memsup: %d, stderr: %s", r.status, r.err);
	char a[4 * PATH_MAX];
	snprintf(a, sizeof a, "'%s' '%s' '%s' %s", r.dir, expected, dump, mode);
	py_check(&r, "hostile_argv.py", a);
	free(argv);
	tmp_remove(&r);
}

/* 100,000 arguments: the whole command line is kept in resources.json and
 * reaches the command; the record keeps what fits MT_ARGV_BYTES and says
 * that it cut. */
Test(memsup_hostile, hundred_thousand_arguments, .timeout = 120)
{
	enum { N = 100000 };
	/* 100,000 x (up to 7 bytes + NUL + a pointer) is about 1.5 MB, twice
	 * (the test's exec of memsup, memsup's of the command): within
	 * ARG_MAX (a quarter of the stack limit, 2 MiB by default) */
	long max = sysconf(_SC_ARG_MAX);
	if (max > 0 && max < 1700000)
		cr_skip_test("ARG_MAX is %ld, too small for 100,000 arguments of this size", max);
	char **args = calloc(N, sizeof *args);
	char *pool = malloc((size_t)N * 8);
	cr_assert(args && pool);
	for (size_t i = 0; i < N; i++) {
		args[i] = pool + i * 8;
		/* every 1000th a hostile one, the rest numbers */
		if (i % 1000 == 999)
			snprintf(args[i], 8, "a\n\"\\\t\x01\xff");
		else
			snprintf(args[i], 8, "%zu", i);
	}
	run_argv_case(args, N, NULL, "prefix");
	free(pool);
	free(args);
}

/* Untraced, the poller keeps PROCFS_ARGV_BYTES of /proc/PID/cmdline: a
 * longer command line is cut and processes.json says so (argc unknown). */
Test(memsup_hostile, untraced_long_cmdline_says_cut, .timeout = 60)
{
	struct sup_run r;
	static char big[6000];
	memset(big, 'x', sizeof big - 1);
	/* steady MB HOLD_MS ignores what follows */
	const char *args[] = { "-q", "--no-trace", "--", prog("steady"), "1", "300", big, NULL };
	const char *small[] = { "-q", "--no-trace", "--", prog("steady"), "1", "300", "", NULL };
	cr_assert_eq(memsup_run(&r, args), 0, "memsup: %s", r.err);
	char a[PATH_MAX + 8];
	snprintf(a, sizeof a, "'%s' cut", r.dir);
	py_check(&r, "hostile_cmdline_cut.py", a);
	struct sup_run q;
	cr_assert_eq(memsup_run(&q, small), 0, "memsup: %s", q.err);
	snprintf(a, sizeof a, "'%s' whole", q.dir);
	py_check(&q, "hostile_cmdline_cut.py", a);
}

/* Every byte value 1..255 alone and all together, empty arguments (also the
 * last one), newlines, quotes, backslashes, control characters, invalid
 * UTF-8 (overlong, surrogate, truncated, out of range) and valid UTF-8 of
 * each length: kept exactly everywhere. */
Test(memsup_hostile, every_byte_value_kept_exactly, .timeout = 60)
{
	static char single[255][2], all[256];
	char *args[300];
	size_t n = 0;
	for (int c = 1; c <= 255; c++) {
		single[c - 1][0] = (char)c;
		args[n++] = single[c - 1];
		all[c - 1] = (char)c;
	}
	args[n++] = all;
	args[n++] = "";
	args[n++] = "two\nlines\r\n";
	args[n++] = "\"double\" 'single' `back`";
	args[n++] = "back\\slash\\\\ \\u0041 \\n";
	args[n++] = "\xc0\x80 overlong NUL";
	args[n++] = "\xed\xa0\x80 surrogate";
	args[n++] = "\xe2\x82 cut \xf0\x9f";
	args[n++] = "\xf5\x80\x80\x80 \xff\xfe";
	args[n++] = "h\xc3\xa9llo \xe2\x82\xac \xf0\x9d\x84\x9e";
	args[n++] = "";
	cr_assert_lt(n, sizeof args / sizeof *args);
	run_argv_case(args, n, NULL, "exact");
}

/* The same bytes in an environment value given with -e: resources.json
 * "env" keeps it exactly (and the command still runs). */
Test(memsup_hostile, every_byte_value_in_env, .timeout = 60)
{
	static char val[300];
	size_t k = 0;
	k += (size_t)snprintf(val, sizeof val, "X_HOSTILE=");
	for (int c = 1; c <= 255; c++)
		val[k++] = (char)c;
	val[k] = '\0';
	const char *opts[] = { "-e", val, NULL };
	char *args[] = { "x" };
	run_argv_case(args, 1, opts, "exact");
	/* run_argv_case removed its directory: check env in a run of our own */
	struct sup_run r;
	const char *a[] = { "-q", "-e", val, "--", prog("x_argdump"), NULL };
	cr_assert_eq(memsup_run(&r, a), 0, "%s", r.err);
	char arg[PATH_MAX + 8];
	snprintf(arg, sizeof arg, "'%s'", r.dir);
	py_check(&r, "hostile_env_bytes.py", arg);
	tmp_remove(&r);
}

/* ---- an LD_PRELOAD the user set ------------------------------------------ */

/* Every image of the command (a shell that runs two x_argdump, one in a
 * fork child, one by exec) must have run both the user's library and the
 * shim: the user's log lists exactly the traced images that started a new
 * image (fork children run no constructor), with LD_PRELOAD = user's first,
 * then the shim (tests/py/hostile_user_preload.py). */
static void user_preload_case(int via_env_option)
{
	/* libtool's build of the module, beside the workload programs */
	char lib[PATH_MAX];
	snprintf(lib, sizeof lib, "%s/.libs/libxuserpreload.so", env_or_skip("MT_PROGS"));
	cr_assert(path_exists(lib), "%s not built", lib);
	struct sup_run r;
	tmp_make(&r);
	char log[PATH_MAX + 16], logenv[PATH_MAX + 64], preenv[PATH_MAX + 16], cmd[PATH_MAX * 3];
	snprintf(log, sizeof log, "%s/user.log", r.tmp);
	snprintf(logenv, sizeof logenv, "X_USERPRELOAD_LOG=%s", log);
	snprintf(preenv, sizeof preenv, "LD_PRELOAD=%s", lib);
	snprintf(cmd, sizeof cmd, "'%s' one; '%s' two", prog("x_argdump"), prog("x_argdump"));
	char *argv[] = { (char *)env_or_skip("MEMSUP"), "-q", "-o", r.dir, "-e", logenv,
			 via_env_option ? "-e" : "-q", via_env_option ? preenv : "-q",
			 "--", "/bin/sh", "-c", cmd, NULL };
	/* The user's preload in memsup's own environment (memsup runs with it
	 * too: its line is left out), or given with -e. */
	char *asan_saved = getenv("ASAN_OPTIONS") ? strdup(getenv("ASAN_OPTIONS")) : NULL;
	if (!via_env_option) {
		setenv("LD_PRELOAD", lib, 1);
#ifdef __SANITIZE_ADDRESS__
		/* an ASan memsup refuses to start after a foreign preload */
		char asan[512];
		snprintf(asan, sizeof asan, "%s%sverify_asan_link_order=0",
			 asan_saved ? asan_saved : "", asan_saved ? ":" : "");
		setenv("ASAN_OPTIONS", asan, 1);
#endif
	}
	sup_spawn(&r, NULL, (const char *const *)argv); /* any length */
	unsetenv("LD_PRELOAD");
	if (asan_saved)
		setenv("ASAN_OPTIONS", asan_saved, 1);
	else
		unsetenv("ASAN_OPTIONS");
	free(asan_saved);
	cr_assert_eq(memsup_wait(&r), 0, "memsup: %d, stderr: %s", r.status, r.err);
	char a[4 * PATH_MAX];
	snprintf(a, sizeof a, "'%s' '%s' '%s' '%s'", r.dir, log, lib, env_or_skip("MEMSUP"));
	py_check(&r, "hostile_user_preload.py", a);
	tmp_remove(&r);
}

Test(memsup_hostile, user_ld_preload_kept_from_environment, .timeout = 60)
{
	user_preload_case(0);
}

Test(memsup_hostile, user_ld_preload_kept_from_env_option, .timeout = 60)
{
	user_preload_case(1);
}

/* ---- a setuid target ------------------------------------------------------- */

/* A copy of x_argdump owned by nobody, mode 4755.  The loader runs it in
 * secure-execution mode and drops LD_PRELOAD (the shim's path has a slash),
 * so it has no record: memsup must still run it correctly (it prints its
 * euid), poll it by /proc, classify it "secure", and say so in the findings. */
Test(memsup_hostile, setuid_target_is_polled_and_classified_secure, .timeout = 60)
{
	if (geteuid() != 0)
		cr_skip_test("not root: cannot make a setuid copy owned by another user");
	struct sup_run r;
	tmp_make(&r);
	char copy[PATH_MAX + 16], cmd[5 * PATH_MAX];
	snprintf(copy, sizeof copy, "%s/suid_argdump", r.tmp);
	snprintf(cmd, sizeof cmd, "cp '%s' '%s' && chown 65534:65534 '%s' && chmod 4755 '%s'",
		 prog("x_argdump"), copy, copy, copy);
	cr_assert_eq(system(cmd), 0);
	struct stat st;
	cr_assert_eq(stat(copy, &st), 0);
	/* a nosuid mount shows only when it runs: its euid stays ours */
	const char *args[] = { "-q", "-e", "X_SLEEP_MS=400", "--", copy, NULL };
	memsup_start(&r, 1, args);
	cr_assert_eq(memsup_wait(&r), 0, "memsup: %d, stderr: %s", r.status, r.err);
	char out[4096], path[PATH_MAX + 32];
	snprintf(path, sizeof path, "%s/stdout.log", r.dir);
	slurp(path, out, sizeof out);
	if (strstr(out, "euid=0 "))
		cr_skip_test("setuid bit ignored here (nosuid mount of %s?): %s", r.tmp, out);
	cr_assert_not_null(strstr(out, "argc=1 ruid=0 euid=65534 sum="), "%s", out);
	char a[3 * PATH_MAX];
	snprintf(a, sizeof a, "'%s' '%s'", r.dir, copy);
	py_check(&r, "hostile_setuid.py", a);
	tmp_remove(&r);
}
