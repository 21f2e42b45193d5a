/* test_memsup_args.c: bad arguments (125, a message naming the value, no
 * directory), commands that cannot start (127/126 with a complete record),
 * --help and --version. */
#include "test_memsup_util.h"
#include <dirent.h>

struct bad_case {
	const char *args[8];
	const char *needle; /* must appear in the one-line message */
};

static struct bad_case bad_cases[] = {
	{ { "--rss-mb", "abc", "--", "true" }, "--rss-mb: 'abc' is not a number (more than 0, at most 1000000000 MB)" },
	/* values that used to be taken and turned into others */
	{ { "--wall-s", "9999999999999", "--", "true" }, "--wall-s: '9999999999999' is out of range (more than 0, at most 100000000 seconds)" },
	{ { "--grace-s", "1e308", "--", "true" }, "--grace-s: '1e308' is out of range" },
	{ { "--poll-ms", "1e308", "--", "true" }, "--poll-ms: '1e308' is out of range (from 0.1 to 60000 milliseconds)" },
	{ { "--poll-ms", "1e-9", "--", "true" }, "--poll-ms: '1e-9' is out of range" },
	{ { "--poll-ms", "0.0001", "--", "true" }, "--poll-ms: '0.0001' is out of range" },
	{ { "--rss-mb", " 5", "--", "true" }, "--rss-mb: ' 5' is not a number" },
	{ { "--max-procs", "0x10", "--", "true" }, "--max-procs: '0x10' is not a number" },
	{ { "--wall-s", "5", "--wall-s", "10", "--", "true" }, "--wall-s is given twice ('5', then '10')" },
	{ { "--rss-mb", "0", "--", "true" }, "'0'" },
	{ { "--rss-mb", "-5", "--", "true" }, "'-5'" },
	{ { "--rss-mb", "nan", "--", "true" }, "'nan'" },
	{ { "--rss-mb", "inf", "--", "true" }, "'inf'" },
	{ { "--rss-mb", "", "--", "true" }, "--rss-mb: ''" },
	{ { "--rss-mb", "12x", "--", "true" }, "'12x'" },
	{ { "--wall-s", "-1", "--", "true" }, "--wall-s: '-1'" },
	{ { "--wall-s", "1e999", "--", "true" }, "'1e999'" },
	{ { "--poll-ms", "0", "--", "true" }, "--poll-ms: '0'" },
	{ { "--grace-s", "x", "--", "true" }, "--grace-s: 'x'" },
	{ { "--" }, "no command" },
	{ { "-q" }, "no command" },
	{ { "--", "" }, "empty" },
	{ { "-e", "NOEQUALS", "--", "true" }, "'NOEQUALS'" },
	{ { "-e", "=v", "--", "true" }, "'=v'" },
	{ { "-C", "/nonexistent-memsup-dir", "--", "true" }, "'/nonexistent-memsup-dir'" },
	{ { "-C", "/etc/passwd", "--", "true" }, "not a directory" },
	{ { "--bogus", "--", "true" }, "'--bogus'" },
	{ { "-Z", "--", "true" }, "'-Z'" },
	{ { "--discovery", "psychic", "--", "true" }, "'psychic'" },
	{ { "--output", "file", "--", "true" }, "--output: 'file' is not one of tee, log, inherit, transcript" },
	{ { "--output", "", "--", "true" }, "--output: ''" },
	{ { "--output" }, "needs a value" },
	{ { "--cgroup", "on", "--", "true" }, "--cgroup: 'on'" },
	{ { "--mem-max", "-1", "--", "true" }, "--mem-max: '-1'" },
	{ { "--mem-max", "50", "--cgroup", "off", "--", "true" }, "--mem-max needs a memory cgroup" },
	{ { "--rss-mb" }, "needs a value" },
	{ { "--log-max", "lots", "--", "true" }, "--log-max: 'lots' is not a number (a size from 0 to 1T" },
	{ { "--log-max", "5T", "--", "true" }, "--log-max: '5T' is out of range" },
	{ { "--log-max", "1M", "--output", "inherit", "--", "true" }, "--log-max bounds stdout.log" },
};

static int dir_has_entries(const char *path, const char *except)
{
	DIR *d = opendir(path);
	int n = 0;
	for (struct dirent *e; d && (e = readdir(d));) {
		if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..") &&
		    strncmp(e->d_name, except, strlen(except)))
			n++;
	}
	if (d)
		closedir(d);
	return n;
}

static void check_bad(const struct bad_case *c, int with_out)
{
	struct sup_run r;
	tmp_make(&r);
	memsup_start(&r, with_out, c->args);
	cr_assert_eq(memsup_wait(&r), 125, "%s: status %d, stderr %s", c->args[0], r.status, r.err);
	cr_expect_not_null(strstr(r.err, c->needle), "message %s lacks %s", r.err, c->needle);
	cr_expect_eq(strncmp(r.err, "memsup: ", 8), 0, "%s", r.err);
	char *nl = strchr(r.err, '\n');
	cr_expect(nl && nl[1] == '\0', "not one line: %s", r.err);
	cr_expect(!path_exists(r.dir), "%s created", r.dir);
	/* nothing at all in the cwd but the captured stdout/stderr */
	cr_expect_eq(dir_has_entries(r.tmp, "memsup."), 0, "something was created in %s", r.tmp);
}

Test(memsup_args, bad_arguments_exit_125_and_create_nothing, .timeout = 60)
{
	for (size_t i = 0; i < sizeof bad_cases / sizeof bad_cases[0]; i++) {
		check_bad(&bad_cases[i], 1);
		check_bad(&bad_cases[i], 0); /* default --out: nothing either */
	}
}

Test(memsup_args, existing_out_is_refused, .timeout = 10)
{
	struct sup_run r;
	tmp_make(&r);
	cr_assert_eq(mkdir(r.dir, 0755), 0);
	const char *args[] = { "--", "true", NULL };
	memsup_start(&r, 1, args);
	cr_assert_eq(memsup_wait(&r), 125);
	cr_expect_not_null(strstr(r.err, "already exists"), "%s", r.err);
	cr_expect_not_null(strstr(r.err, r.dir), "%s", r.err);
	char path[PATH_MAX + 32];
	snprintf(path, sizeof path, "%s/resources.json", r.dir);
	cr_expect(!path_exists(path));
}

static void check_start_failed(struct sup_run *r, int want, const char *errtext)
{
	rec_load(r);
	cr_expect_str_eq(rec_str(r, "reason"), "\"start_failed\"");
	cr_expect_eq(rec_num(r, "exit_status"), want);
	cr_expect_str_eq(rec_str(r, "exit_code"), "null");
	const char *e = rec_str(r, "error");
	cr_expect_not_null(strstr(e, errtext), "error %s lacks %s", e, errtext);
	char path[PATH_MAX + 32];
	snprintf(path, sizeof path, "%s/stdout.log", r->dir);
	cr_expect(path_exists(path));
	snprintf(path, sizeof path, "%s/rss.jsonl", r->dir);
	cr_expect(path_exists(path));
}

Test(memsup_args, not_found_is_127_with_record, .timeout = 10)
{
	struct sup_run r;
	const char *args[] = { "--", "/nonexistent/memsup-no-such-program", NULL };
	cr_assert_eq(memsup_run(&r, args), 127, "%s", r.err);
	check_start_failed(&r, 127, "No such file or directory");

	struct sup_run r2;
	const char *args2[] = { "--", "memsup-no-such-command-in-path", NULL };
	cr_assert_eq(memsup_run(&r2, args2), 127, "%s", r2.err);
	check_start_failed(&r2, 127, "No such file or directory");
}

Test(memsup_args, not_executable_is_126_with_record, .timeout = 10)
{
	struct sup_run r;
	tmp_make(&r);
	char file[PATH_MAX + 16];
	snprintf(file, sizeof file, "%s/plain.txt", r.tmp);
	FILE *f = fopen(file, "w");
	cr_assert_not_null(f);
	fputs("not a program\n", f);
	fclose(f);
	chmod(file, 0644);
	const char *args[] = { "--", file, NULL };
	memsup_start(&r, 1, args);
	cr_assert_eq(memsup_wait(&r), 126, "%s", r.err);
	check_start_failed(&r, 126, "Permission denied");
}

/* -q keeps quiet about the figures, not about a command that never ran:
 * one line names it and why, and nothing else is said. */
Test(memsup_args, quiet_still_says_start_failed, .timeout = 10)
{
	struct sup_run r;
	const char *args[] = { "-q", "--", "/nonexistent/memsup-no-such-program", NULL };
	cr_assert_eq(memsup_run(&r, args), 127, "%s", r.err);
	cr_expect_str_eq(r.err, "memsup: could not start '/nonexistent/memsup-no-such-program': "
			 "execvp: No such file or directory; exit status 127\n");
	check_start_failed(&r, 127, "No such file or directory");
	rec_load(&r);
	cr_expect_str_eq(rec_str(&r, "peak_mb"), "null");

	/* without -q it is the summary's first line, and no figure of a run
	 * that held nothing follows */
	struct sup_run r2;
	tmp_make(&r2);
	char file[PATH_MAX + 16];
	snprintf(file, sizeof file, "%s/plain.txt", r2.tmp);
	FILE *f = fopen(file, "w");
	cr_assert_not_null(f);
	fclose(f);
	chmod(file, 0644);
	const char *args2[] = { "--", file, NULL };
	memsup_start(&r2, 1, args2);
	cr_assert_eq(memsup_wait(&r2), 126, "%s", r2.err);
	cr_expect(strncmp(r2.err, "memsup: could not start '", 25) == 0, "%s", r2.err);
	cr_expect(strstr(r2.err, "execvp: Permission denied; exit status 126\n"), "%s", r2.err);
	cr_expect_null(strstr(r2.err, "summed RSS"), "%s", r2.err);
	cr_expect_null(strstr(r2.err, "peak"), "%s", r2.err);
}

/* A command that exits 127 by itself is not "not started". */
Test(memsup_args, exit_127_is_not_start_failed, .timeout = 10)
{
	struct sup_run r;
	const char *args[] = { "--", "/bin/sh", "-c", "exit 127", NULL };
	cr_assert_eq(memsup_run(&r, args), 127, "%s", r.err);
	rec_load(&r);
	cr_expect_str_eq(rec_str(&r, "reason"), "null");
	cr_expect_eq(rec_num(&r, "exit_code"), 127);
}

Test(memsup_args, help_and_version, .timeout = 10)
{
	struct sup_run r;
	const char *h[] = { "--help", NULL };
	cr_assert_eq(memsup_run(&r, h), 0);
	cr_expect_not_null(strstr(r.out, "--rss-mb"));
	cr_expect(!path_exists(r.dir));
	const char *v[] = { "-V", NULL };
	cr_assert_eq(memsup_run(&r, v), 0);
	cr_expect_not_null(strstr(r.out, "memsup (memtrace) "), "%s", r.out);
}

/* Without -o: a fresh memsup-YYYYmmdd-HHMMSS-PID in the cwd, printed. */
Test(memsup_args, default_out_directory, .timeout = 10)
{
	struct sup_run r;
	tmp_make(&r);
	const char *args[] = { "--", "true", NULL };
	memsup_start(&r, 0, args);
	cr_assert_eq(memsup_wait(&r), 0, "%s", r.err);
	DIR *d = opendir(r.tmp);
	char found[256] = "";
	for (struct dirent *e; (e = readdir(d));)
		if (strncmp(e->d_name, "memsup-", 7) == 0)
			snprintf(found, sizeof found, "%s", e->d_name);
	closedir(d);
	cr_assert_neq(found[0], '\0', "no memsup-* directory in %s", r.tmp);
	cr_expect_eq(strlen(found), strlen("memsup-20261202-095000-") + strlen(strrchr(found, '-') + 1));
	cr_expect_not_null(strstr(r.err, found), "path not printed: %s", r.err);
	snprintf(r.dir, sizeof r.dir, "%s/%s", r.tmp, found);
	rec_load(&r);
}
