/* test_cli.c: cli_parse, table-driven: every good form and every bad
 * argument (with the text the message must contain). */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cli.h"
#include "base/number.h"

#define MAXARGS 24

static int parse(const char *const *args, struct sup_options *o, char *err, size_t cap)
{
	static char *argv[MAXARGS + 2];
	static char store[MAXARGS + 1][256];
	int argc = 0;
	argv[argc] = strcpy(store[argc], "memsup");
	argc++;
	for (int i = 0; args[i]; i++, argc++) {
		cr_assert_lt(argc, MAXARGS + 1, "too many arguments for the test harness");
		argv[argc] = strcpy(store[argc], args[i]);
	}
	argv[argc] = NULL;
	return cli_parse(argc, argv, o, err, cap);
}

struct bad {
	const char *args[MAXARGS];
	const char *needle;
};

static const struct bad bads[] = {
	{ { "--rss-mb", "abc", "--", "x" }, "--rss-mb: 'abc' is not a number (more than 0, at most 1000000000 MB)" },
	{ { "--rss-mb", "0", "--", "x" }, "--rss-mb: '0' is out of range (more than 0" },
	{ { "--rss-mb", "-1", "--", "x" }, "'-1'" },
	{ { "--rss-mb", "NaN", "--", "x" }, "'NaN'" },
	{ { "--rss-mb", "-inf", "--", "x" }, "'-inf'" },
	{ { "--rss-mb", "infinity", "--", "x" }, "'infinity'" },
	{ { "--rss-mb", "", "--", "x" }, "--rss-mb: ''" },
	{ { "--rss-mb", " ", "--", "x" }, "--rss-mb: ' '" },
	{ { "--rss-mb", "5 ", "--", "x" }, "'5 '" },
	{ { "--rss-mb", "0x", "--", "x" }, "'0x'" },
	{ { "--rss-mb", "1e400", "--", "x" }, "'1e400'" },
	{ { "--wall-s", "0", "--", "x" }, "--wall-s: '0'" },
	{ { "--wall-s", "1s", "--", "x" }, "--wall-s: '1s'" },
	{ { "--poll-ms", "-10", "--", "x" }, "--poll-ms: '-10'" },
	{ { "--grace-s", "nan", "--", "x" }, "--grace-s: 'nan'" },
	{ { "--" }, "no command" },
	{ { NULL }, "no command" },
	{ { "--json" }, "no command" },
	{ { "--", "" }, "empty" },
	{ { "-e", "FOO", "--", "x" }, "--env: 'FOO'" },
	{ { "--env", "=bar", "--", "x" }, "--env: '=bar' has an empty KEY" },
	{ { "-C", "/no/such/dir/memsup", "--", "x" }, "--cwd: '/no/such/dir/memsup'" },
	{ { "-C", "/dev/null", "--", "x" }, "--cwd: '/dev/null' is not a directory" },
	{ { "-C", "", "--", "x" }, "--cwd" },
	{ { "-o", "/", "--", "x" }, "--out: '/' already exists" },
	{ { "-o", "", "--", "x" }, "--out" },
	{ { "--nope", "--", "x" }, "unknown option '--nope'" },
	{ { "-x", "--", "x" }, "unknown option '-x'" },
	/* inside a cluster the bad letter is named, not the word before it */
	{ { "--json", "-xq", "--", "x" }, "unknown option '-x'" },
	{ { "--json", "-qx", "--", "x" }, "unknown option '-x'" },
	{ { "-qo" }, "option '-o' needs a value" },
	{ { "--discovery", "magic", "--", "x" }, "--discovery: 'magic'" },
	{ { "--max-procs", "0", "--", "x" }, "--max-procs: '0' is out of range (a whole number from 1 to 4194304)" },
	/* plausible-looking values that used to turn into others */
	{ { "--wall-s", "9999999999999", "--", "x" }, "--wall-s: '9999999999999' is out of range (more than 0, at most 100000000 seconds)" },
	{ { "--wall-s", "100000001", "--", "x" }, "out of range" },
	{ { "--grace-s", "1e308", "--", "x" }, "--grace-s: '1e308' is out of range" },
	{ { "--poll-ms", "1e308", "--", "x" }, "--poll-ms: '1e308' is out of range (from 0.1 to 60000 milliseconds)" },
	{ { "--poll-ms", "1e-9", "--", "x" }, "--poll-ms: '1e-9' is out of range" },
	{ { "--poll-ms", "0.0001", "--", "x" }, "--poll-ms: '0.0001' is out of range" },
	{ { "--poll-ms", "60000.5", "--", "x" }, "out of range" },
	{ { "--rss-mb", " 5", "--", "x" }, "--rss-mb: ' 5' is not a number" },
	{ { "--rss-mb", "+5", "--", "x" }, "--rss-mb: '+5' is not a number" },
	{ { "--rss-mb", "0x10", "--", "x" }, "--rss-mb: '0x10' is not a number" },
	{ { "--rss-mb", ".", "--", "x" }, "--rss-mb: '.' is not a number" },
	{ { "--rss-mb", "1e", "--", "x" }, "--rss-mb: '1e' is not a number" },
	{ { "--max-procs", " 5", "--", "x" }, "--max-procs: ' 5' is not a number" },
	{ { "--max-procs", "0x10", "--", "x" }, "--max-procs: '0x10' is not a number" },
	{ { "--max-procs", "4194305", "--", "x" }, "--max-procs: '4194305' is out of range" },
	{ { "--wall-s", "5", "--wall-s", "10", "--", "x" }, "--wall-s is given twice ('5', then '10')" },
	{ { "-o", "a", "--out", "b", "--", "x" }, "--out is given twice ('a', then 'b')" },
	{ { "--discovery", "scan", "--discovery", "children", "--", "x" }, "--discovery is given twice" },
	{ { "--max-procs", "1.5", "--", "x" }, "--max-procs: '1.5'" },
	{ { "--max-procs", "-3", "--", "x" }, "--max-procs: '-3'" },
	{ { "--max-procs", "", "--", "x" }, "--max-procs: ''" },
	{ { "--max-procs", "99999999999999999999", "--", "x" }, "--max-procs: '9999" },
	{ { "--wall-s" }, "'--wall-s' needs a value" },
	{ { "--cgroup", "maybe", "--", "x" }, "--cgroup: 'maybe' is not one of auto, off" },
	{ { "--cgroup", "", "--", "x" }, "--cgroup: ''" },
	{ { "--mem-max", "0", "--", "x" }, "--mem-max: '0' is out of range (from 0.1 to 1000000000 MB)" },
	{ { "--mem-max", "lots", "--", "x" }, "--mem-max: 'lots' is not a number" },
	{ { "--mem-max", "0.01", "--", "x" }, "--mem-max: '0.01' is out of range" },
	{ { "--mem-max", "1e13", "--", "x" }, "--mem-max: '1e13' is out of range" },
	{ { "--mem-max", "100", "--cgroup", "off", "--", "x" }, "--mem-max needs a memory cgroup" },
	/* --log-max: a size or unlimited, and only where there is a log */
	{ { "--log-max", "1X", "--", "x" }, "--log-max: '1X' is not a number (a size from 0 to 1T, in bytes or with K, M, G, T, or unlimited)" },
	{ { "--log-max", "", "--", "x" }, "--log-max: ''" },
	{ { "--log-max", "-1", "--", "x" }, "--log-max: '-1' is not a number" },
	{ { "--log-max", "1.5M", "--", "x" }, "--log-max: '1.5M' is not a number" },
	{ { "--log-max", "1m", "--", "x" }, "--log-max: '1m' is not a number" },
	{ { "--log-max", "1MB", "--", "x" }, "--log-max: '1MB' is not a number" },
	{ { "--log-max", "1 M", "--", "x" }, "--log-max: '1 M' is not a number" },
	{ { "--log-max", "unlimitd", "--", "x" }, "--log-max: 'unlimitd' is not a number" },
	{ { "--log-max", "2T", "--", "x" }, "--log-max: '2T' is out of range" },
	{ { "--log-max", "1099511627777", "--", "x" }, "--log-max: '1099511627777' is out of range" },
	{ { "--log-max", "99999999999999999999", "--", "x" }, "--log-max: '9999" },
	{ { "--log-max", "1M", "--log-max", "2M", "--", "x" }, "--log-max is given twice ('1M', then '2M')" },
	{ { "--log-max", "1M", "--output", "inherit", "--", "x" }, "--log-max bounds stdout.log: it cannot go with --output inherit" },
	{ { "--log-max" }, "'--log-max' needs a value" },
	{ { "x", "-o" }, NULL }, /* not bad: -o after the command is the command's */
};

Test(cli, bad_arguments)
{
	for (size_t i = 0; i < sizeof bads / sizeof bads[0]; i++) {
		struct sup_options o;
		char err[512];
		int rc = parse(bads[i].args, &o, err, sizeof err);
		if (!bads[i].needle) {
			cr_expect_eq(rc, 0, "case %zu: %s", i, err);
		} else {
			cr_expect_eq(rc, -1, "case %zu (%s) accepted", i,
				     bads[i].args[0] ? bads[i].args[0] : "(none)");
			cr_expect_not_null(strstr(err, bads[i].needle), "case %zu: '%s' lacks '%s'",
					   i, err, bads[i].needle);
			cr_expect_null(strchr(err, '\n'), "case %zu: not one line", i);
		}
		cli_free(&o);
	}
}

Test(cli, defaults)
{
	struct sup_options o;
	char err[256];
	const char *args[] = { "prog", "-o", "arg", NULL };
	cr_assert_eq(parse(args, &o, err, sizeof err), 0, "%s", err);
	cr_expect_null(o.out);
	cr_expect_eq(o.poll_ms, 10);
	cr_expect_eq(o.sparse_ms, 100);
	cr_expect_eq(o.wall_s, 0);
	cr_expect_eq(o.rss_mb, 0);
	cr_expect_eq(o.grace_s, 0);
	cr_expect_eq(o.discovery, TREE_AUTO);
	cr_expect_eq(o.cgroup, CONTAIN_AUTO);
	cr_expect_eq(o.mem_max_mb, 0);
	cr_expect_eq(o.json, 0);
	cr_expect_eq(o.quiet, 0);
	cr_expect_eq(o.output, RELAY_TEE);
	cr_expect_eq(o.log_max, 2 << 20, "tee keeps the first and the last MiB");
	cr_expect_str_eq(o.cwd, "");
	cr_assert_eq(o.command_argc, 3);
	cr_expect_str_eq(o.command[0], "prog");
	cr_expect_str_eq(o.command[1], "-o"); /* "+": options stop at the command */
	cr_expect_null(o.command[3]);
	cli_free(&o);
}

/* At a terminal (stdin or stdout) without --output, the command is a job
 * there and nothing is piped or logged; --output keeps what it asks for. */
Test(cli, at_a_terminal)
{
	static const struct {
		const char *output;  /* NULL: not given */
		int in_tty, out_tty;
		enum terminal_mode want;
		enum relay_mode want_output;
	} cases[] = {
		{ NULL, 0, 0, TERMINAL_NONE, RELAY_TEE },
		{ NULL, 1, 0, TERMINAL_JOB, RELAY_INHERIT },
		{ NULL, 0, 1, TERMINAL_JOB, RELAY_INHERIT },
		{ NULL, 1, 1, TERMINAL_JOB, RELAY_INHERIT },
		{ "tee", 1, 1, TERMINAL_NONE, RELAY_TEE },
		{ "log", 1, 1, TERMINAL_NONE, RELAY_LOG },
		{ "inherit", 1, 1, TERMINAL_NONE, RELAY_INHERIT },
		{ "inherit", 0, 0, TERMINAL_NONE, RELAY_INHERIT },
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		struct sup_options o;
		char err[256];
		const char *with[] = { "--output", cases[i].output, "cmd", NULL };
		const char *without[] = { "cmd", NULL };
		cr_assert_eq(parse(cases[i].output ? with : without, &o, err, sizeof err), 0, "%s",
			     err);
		cr_assert_eq(cli_at_terminal(&o, cases[i].in_tty, cases[i].out_tty, err, sizeof err),
			     0, "case %zu: %s", i, err);
		cr_expect_eq(o.terminal, cases[i].want, "case %zu", i);
		cr_expect_eq(o.output, cases[i].want_output, "case %zu", i);
		cli_free(&o);
	}
	/* a transcript is of a terminal that is typed at */
	struct sup_options o;
	char err[256];
	const char *transcript[] = { "--output", "transcript", "cmd", NULL };
	cr_assert_eq(parse(transcript, &o, err, sizeof err), 0, "%s", err);
	cr_expect_eq(o.terminal, TERMINAL_TRANSCRIPT);
	cr_expect_eq(cli_at_terminal(&o, 1, 0, err, sizeof err), 0, "%s", err);
	cr_expect_eq(o.terminal, TERMINAL_TRANSCRIPT);
	cr_expect_eq(o.output, RELAY_INHERIT);
	cr_expect_eq(cli_at_terminal(&o, 0, 1, err, sizeof err), -1);
	cr_expect_not_null(strstr(err, "--output transcript: memsup's standard input is not a "
				  "terminal"), "%s", err);
	cli_free(&o);
	/* --log-max at a terminal without --output would bound nothing */
	const char *bounded[] = { "--log-max", "1M", "cmd", NULL };
	cr_assert_eq(parse(bounded, &o, err, sizeof err), 0, "%s", err);
	cr_expect_eq(cli_at_terminal(&o, 0, 0, err, sizeof err), 0, "a pipe: %s", err);
	cli_free(&o);
	cr_assert_eq(parse(bounded, &o, err, sizeof err), 0, "%s", err);
	cr_expect_eq(cli_at_terminal(&o, 1, 1, err, sizeof err), -1);
	cr_expect_not_null(strstr(err, "--log-max bounds stdout.log, and at a terminal there is "
				  "none"), "%s", err);
	cr_expect_null(strchr(err, '\n'));
	cli_free(&o);
	cr_expect_str_eq(terminal_mode_name(TERMINAL_TRANSCRIPT), "transcript");
	cr_expect_str_eq(terminal_mode_name(TERMINAL_JOB), "terminal");
	cr_expect_null(terminal_mode_name(TERMINAL_NONE));
	cr_expect_null(terminal_mode_name(TERMINAL_MODE_COUNT));
}

Test(cli, every_option)
{
	struct sup_options o;
	char err[256];
	const char *args[] = { "-o", "/tmp/memsup-cli-test-nonexistent/x", "--wall-s", "1.5",
			       "--rss-mb", "2e3", "--poll-ms", "0.5", "--grace-s", "3", "-C", "/usr/../usr",
			       NULL };
	cr_assert_eq(parse(args, &o, err, sizeof err), -1); /* no command yet */
	cli_free(&o);
	const char *args2[] = { "-e", "A=1", "--env", "B=x=y", "--json", "-q", "--discovery",
				"scan", "-C", "/usr/../usr", "--wall-s", "1.5", "--mem-max", "2.5e3",
				"--cgroup", "auto", "cmd", NULL };
	cr_assert_eq(parse(args2, &o, err, sizeof err), 0, "%s", err);
	cr_expect_eq(o.mem_max_mb, 2500);
	cr_expect_eq(o.cgroup, CONTAIN_AUTO);
	cr_expect_eq(o.n_env, 2);
	cr_expect_str_eq(o.env[0], "A=1");
	cr_expect_str_eq(o.env[1], "B=x=y");
	cr_expect(o.json && o.quiet);
	cr_expect_eq(o.discovery, TREE_SCAN);
	cr_expect_str_eq(o.cwd, "/usr");
	cr_expect_eq(o.wall_s, 1.5);
	cli_free(&o);
	const char *args3[] = { "--rss-mb", "2e3", "--poll-ms", "0.5", "--grace-s", "3",
				"--discovery", "children", "-o", "/tmp/memsup-cli-test-nonexistent/x",
				"--cgroup", "off", "--", "cmd", NULL };
	cr_assert_eq(parse(args3, &o, err, sizeof err), 0, "%s", err);
	cr_expect_eq(o.cgroup, CONTAIN_OFF);
	cr_expect_eq(o.rss_mb, 2000);
	cr_expect_eq(o.poll_ms, 0.5);
	cr_expect_eq(o.grace_s, 3);
	cr_expect_eq(o.discovery, TREE_CHILDREN);
	cr_expect_str_eq(o.out, "/tmp/memsup-cli-test-nonexistent/x");
	cli_free(&o);
	/* --log-max, and its default in each mode that logs */
	static const struct {
		const char *args[6];
		uint64_t want;
	} logs[] = {
		{ { "--output", "log", "x" }, RELAY_LOG_UNLIMITED },
		{ { "--output", "tee", "x" }, 2 << 20 },
		{ { "--log-max", "0", "x" }, 0 },
		{ { "--log-max", "3M", "x" }, 3 << 20 },
		{ { "--log-max", "1KiB", "x" }, 1024 },
		{ { "--log-max", "12345", "x" }, 12345 },
		{ { "--log-max", "1T", "x" }, 1ull << 40 },
		{ { "--log-max", "unlimited", "x" }, RELAY_LOG_UNLIMITED },
		{ { "--output", "log", "--log-max", "1G", "x" }, 1 << 30 },
		{ { "--output", "transcript", "x" }, 2 << 20 },
		{ { "--output", "transcript", "--log-max", "5K", "x" }, 5 << 10 },
		{ { "--output", "transcript", "--log-max", "unlimited", "x" }, RELAY_LOG_UNLIMITED },
	};
	for (size_t i = 0; i < sizeof logs / sizeof logs[0]; i++) {
		cr_assert_eq(parse(logs[i].args, &o, err, sizeof err), 0, "%s", err);
		cr_expect_eq(o.log_max, logs[i].want, "case %zu: %llu", i,
			     (unsigned long long)o.log_max);
		cli_free(&o);
	}
}

Test(cli, help_and_version_stop_parsing)
{
	struct sup_options o;
	char err[256];
	const char *h[] = { "--help", NULL };
	cr_assert_eq(parse(h, &o, err, sizeof err), 0);
	cr_expect(o.help);
	cli_free(&o);
	const char *v[] = { "-V", NULL };
	cr_assert_eq(parse(v, &o, err, sizeof err), 0);
	cr_expect(o.version);
	cli_free(&o);
}

/* number.h: the one reader of command-line numbers. */
Test(cli, strict_numbers)
{
	double v;
	uint64_t n;
	cr_expect_eq(number_real("1", 0, 1, 10, &v), 0);
	cr_expect_eq(v, 1);
	cr_expect_eq(number_real("0.001", 0, 1, 10, &v), 0);
	cr_expect_eq(number_real(".5", 0, 1, 10, &v), 0);
	cr_expect_eq(v, 0.5);
	cr_expect_eq(number_real("5.", 0, 1, 10, &v), 0);
	cr_expect_eq(number_real("2e0", 0, 1, 10, &v), 0);
	cr_expect_eq(v, 2);
	cr_expect_eq(number_real("1E-3", 0, 1, 10, &v), 0);
	cr_expect_eq(number_real("0", 0, 1, 10, &v), -ERANGE);  /* lo excluded */
	cr_expect_eq(number_real("0", 0, 0, 10, &v), 0);        /* lo included */
	cr_expect_eq(number_real("10", 0, 1, 10, &v), 0);       /* hi included */
	cr_expect_eq(number_real("10.0001", 0, 1, 10, &v), -ERANGE);
	cr_expect_eq(number_real("1e400", 0, 1, 1e300, &v), -ERANGE);
	cr_expect_eq(number_real("1e-400", 0, 1, 10, &v), -ERANGE); /* underflows to 0 */
	static const char *const not_numbers[] = { "", " 1", "1 ", "+1", "-1", "0x10", "inf",
						   "nan", "1e", "1e+", ".", "e5", "1.2.3", "1,5" };
	for (size_t i = 0; i < sizeof not_numbers / sizeof not_numbers[0]; i++)
		cr_expect_eq(number_real(not_numbers[i], 0, 1, 1e9, &v), -EINVAL, "'%s'",
			     not_numbers[i]);
	cr_expect_eq(number_real(NULL, 0, 1, 10, &v), -EINVAL);
	cr_expect_eq(number_count("42", 1, 100, &n), 0);
	cr_expect_eq(n, 42);
	cr_expect_eq(number_count("0", 1, 100, &n), -ERANGE);
	cr_expect_eq(number_count("18446744073709551616", 1, UINT64_MAX, &n), -ERANGE);
	cr_expect_eq(number_count("4.0", 1, 100, &n), -EINVAL);
	cr_expect_eq(number_count("1e2", 1, 1000, &n), -EINVAL);
	cr_expect_eq(number_count("", 1, 100, &n), -EINVAL);
	/* sizes: 1024-based suffixes, one of them, nothing after it */
	cr_expect_eq(number_size("0", 100, &n), 0);
	cr_expect_eq(n, 0);
	cr_expect_eq(number_size("7K", UINT64_MAX, &n), 0);
	cr_expect_eq(n, 7 << 10);
	cr_expect_eq(number_size("7KiB", UINT64_MAX, &n), 0);
	cr_expect_eq(n, 7 << 10);
	cr_expect_eq(number_size("2M", UINT64_MAX, &n), 0);
	cr_expect_eq(n, 2 << 20);
	cr_expect_eq(number_size("3GiB", UINT64_MAX, &n), 0);
	cr_expect_eq(n, 3ull << 30);
	cr_expect_eq(number_size("1T", 1ull << 40, &n), 0);
	cr_expect_eq(n, 1ull << 40);
	cr_expect_eq(number_size("1025G", 1ull << 40, &n), -ERANGE);
	cr_expect_eq(number_size("101", 100, &n), -ERANGE);
	cr_expect_eq(number_size("16777216T", UINT64_MAX, &n), -ERANGE); /* 2^64 */
	static const char *const not_sizes[] = { "", "K", "1k", "1KB", "1Ki", "1KiBs", "1.5M",
						 "1e3", "-1", "+1", " 1", "1 ", "1MM", "0x10" };
	for (size_t i = 0; i < sizeof not_sizes / sizeof not_sizes[0]; i++)
		cr_expect_eq(number_size(not_sizes[i], UINT64_MAX, &n), -EINVAL, "'%s'",
			     not_sizes[i]);
}

/* Every option at both ends of its range is taken. */
Test(cli, ranges_edges_accepted)
{
	static const char *const good[][3] = {
		{ "--wall-s", "100000000" }, { "--wall-s", "0.001" }, { "--rss-mb", "1000000000" },
		{ "--poll-ms", "0.1" },       { "--poll-ms", "60000" }, { "--grace-s", "86400" },
		{ "--max-procs", "1" },       { "--max-procs", "4194304" },
		{ "--log-max", "0" },         { "--log-max", "1T" },
	};
	for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
		struct sup_options o;
		char err[512];
		const char *args[] = { good[i][0], good[i][1], "--", "x", NULL };
		cr_expect_eq(parse(args, &o, err, sizeof err), 0, "%s %s: %s", good[i][0], good[i][1],
			     err);
		cli_free(&o);
	}
}

/* Every long option is in the --help text. */
Test(cli, help_lists_every_option)
{
	static const char *longs[] = { "--out", "--wall-s", "--rss-mb", "--poll-ms", "--grace-s",
				       "--cwd", "--env", "--json", "--quiet", "--discovery", "--mem-max",
				       "--cgroup", "--max-procs",
				       "--help", "--version" };
	for (size_t i = 0; i < sizeof longs / sizeof longs[0]; i++)
		cr_expect_not_null(strstr(cli_help_text, longs[i]), "%s", longs[i]);
}

/* The options --help, man/memsup.1 and README.md name.  The man page is the
 * reference: it and --help name the same options.  The README shows only
 * some of them, and must not name one that --help does not list. */
static char *slurp_doc(const char *rel)
{
	const char *src = getenv("MT_SRCDIR");
	if (!src)
		cr_skip_test("MT_SRCDIR is not set (run through make check)");
	char path[4096];
	snprintf(path, sizeof path, "%s/%s", src, rel);
	FILE *f = fopen(path, "r");
	cr_assert_not_null(f, "%s", path);
	static char buf[2][1 << 17];
	static int slot;
	char *b = buf[slot++ % 2];
	size_t n = fread(b, 1, sizeof buf[0] - 1, f);
	b[n] = '\0';
	fclose(f);
	/* roff writes a literal minus as "\-" */
	char *w = b;
	for (char *r = b; *r; r++) {
		if (r[0] == '\\' && r[1] == '-')
			continue;
		*w++ = *r;
	}
	*w = '\0';
	return b;
}

static int is_word_char(char c)
{
	return c == '-' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
}

/* The next "--word" option of TEXT from *P on, into OPT: "--" at the start
 * or after a character that is not part of a word, then a lowercase letter,
 * then lowercase letters, digits and dashes.  0 when there is none. */
static int next_option(const char *text, const char **p, char *opt, size_t size)
{
	for (const char *q = *p; (q = strstr(q, "--")) != NULL; q++) {
		if (q > text && is_word_char(q[-1]))
			continue;
		if (q[2] < 'a' || q[2] > 'z')
			continue; /* the bare "--", a table rule, a dash in prose */
		size_t n = 2;
		while (n < size - 1 && (q[n] == '-' || (q[n] >= 'a' && q[n] <= 'z') ||
					(q[n] >= '0' && q[n] <= '9')))
			n++;
		*p = q + n;
		while (q[n - 1] == '-')
			n--;
		memcpy(opt, q, n);
		opt[n] = '\0';
		return 1;
	}
	return 0;
}

/* Whether TEXT names option OPT as a whole word ("--out" is not in "--output"). */
static int names_option(const char *text, const char *opt)
{
	size_t n = strlen(opt);
	for (const char *q = text; (q = strstr(q, opt)) != NULL; q++) {
		if ((q == text || !is_word_char(q[-1])) && !is_word_char(q[n]))
			return 1;
	}
	return 0;
}

/* The options man/memsup.1 documents: every "--word" in the tag line of a
 * .TP paragraph in its OPTIONS section.  Written into NAMES (NUL-separated),
 * returns how many. */
static int man_options(char *man, char *names, size_t size)
{
	char *sec = strstr(man, "\n.SH OPTIONS");
	cr_assert_not_null(sec, "man/memsup.1 has no OPTIONS section");
	char *end = strstr(sec + 1, "\n.SH ");
	if (end)
		*end = '\0';
	int count = 0;
	size_t used = 0;
	for (char *line = strstr(sec, "\n.TP\n"); line; line = strstr(line + 1, "\n.TP\n")) {
		const char *tag = line + 5;
		const char *nl = strchr(tag, '\n');
		char buf[256];
		size_t len = nl ? (size_t)(nl - tag) : strlen(tag);
		if (len >= sizeof buf)
			len = sizeof buf - 1;
		memcpy(buf, tag, len);
		buf[len] = '\0';
		const char *p = buf;
		char opt[32];
		while (next_option(buf, &p, opt, sizeof opt)) {
			size_t n = strlen(opt) + 1;
			cr_assert_lt(used + n, size);
			memcpy(names + used, opt, n);
			used += n;
			count++;
		}
	}
	return count;
}

Test(cli, help_man_and_readme_agree)
{
	char *man = slurp_doc("man/memsup.1");
	char *readme = slurp_doc("README.md");
	char opt[32];

	/* --help -> man page */
	int seen = 0;
	for (const char *p = cli_help_text; next_option(cli_help_text, &p, opt, sizeof opt); seen++)
		cr_expect(names_option(man, opt), "man/memsup.1 lacks %s, which --help lists", opt);
	cr_expect_geq(seen, 12);

	/* man page OPTIONS -> --help */
	static char names[4096];
	int documented = man_options(man, names, sizeof names);
	cr_expect_geq(documented, 12);
	for (const char *o = names; *o; o += strlen(o) + 1)
		cr_expect(names_option(cli_help_text, o),
			  "man/memsup.1 documents %s, which --help does not list", o);

	/* README -> --help: the README may name any option, but only a live one. */
	for (const char *p = readme; next_option(readme, &p, opt, sizeof opt);)
		cr_expect(names_option(cli_help_text, opt),
			  "README.md names %s, which memsup --help does not list", opt);
}
