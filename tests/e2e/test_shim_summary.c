/* test_shim_summary.c: `LD_PRELOAD=libmemtrace.so cmd` as a user meets it
 * (no memsup, no MEMTRACE_DIR): one summary for every program, whatever it
 * did to its stderr, and one table for a whole tree.
 *
 * Workloads: tests/progs/x_stderr.c (what programs do to fd 2 before they
 * end) and shell scripts written here (wrapper chains, make -j2).  stderr
 * goes to a pipe read until end of file, as `cmd 2>&1 | less` or a CI log
 * would, or to a regular file.  A summary is the shim's header line: "memtrace:
 * pid N ..." for a tree of one image, "memtrace: N images in ..." for more.
 */
#include <criterion/criterion.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "test_shim_harness.h"

extern char **environ;

struct piped {
	char tmp[PATH_MAX];  /* fresh directory: cwd and TMPDIR of the run */
	int status;
	char out[1 << 16], err[1 << 18];
	size_t outlen, errlen;
};

static const char *progs(void)
{
	const char *p = getenv("MT_PROGS");
	cr_assert_not_null(p, "MT_PROGS is not set");
	return p;
}

static void tmp_fresh(struct piped *r)
{
	snprintf(r->tmp, sizeof r->tmp, "%s/mtsum.XXXXXX",
		 getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
	cr_assert_not_null(mkdtemp(r->tmp));
}

static void drain(int fd, char *buf, size_t cap, size_t *len, int *open)
{
	ssize_t n = read(fd, buf + *len, cap - 1 - *len);
	if (n > 0) {
		*len += (size_t)n;
		if (*len >= cap - 1)
			*len = cap - 2; /* keep reading, keep the head */
	} else if (n == 0 || (errno != EINTR && errno != EAGAIN)) {
		*open = 0;
	}
	buf[*len] = '\0';
}

/* Runs argv (argv[0] under $MT_PROGS unless it holds a '/') with the shim
 * preloaded (unless preload is 0), TMPDIR=r->tmp, no MEMTRACE_* but the
 * extra env entries, stdout and stderr to pipes read to end of file after
 * err_delay_ms.  A test that never sees end of file hits its timeout. */
static void run_piped(struct piped *r, const char *const *argv, const char *const *env,
		      int preload, int err_delay_ms)
{
	int po[2], pe[2];
	char prog[PATH_MAX * 2], pre[PATH_MAX + 16], tmpdir[PATH_MAX + 16];
	const char *envp[512];
	size_t n = 0;
	pid_t pid;
	r->outlen = r->errlen = 0;
	r->out[0] = r->err[0] = '\0';
	if (strchr(argv[0], '/'))
		snprintf(prog, sizeof prog, "%s", argv[0]);
	else
		snprintf(prog, sizeof prog, "%s/%s", progs(), argv[0]);
	for (char **e = environ; *e && n < 480; e++)
		if (strncmp(*e, "LD_PRELOAD=", 11) && strncmp(*e, "MEMTRACE_", 9) &&
		    strncmp(*e, "TMPDIR=", 7))
			envp[n++] = *e;
	snprintf(pre, sizeof pre, "LD_PRELOAD=%s", getenv("MEMTRACE_SO"));
	snprintf(tmpdir, sizeof tmpdir, "TMPDIR=%s", r->tmp);
	if (preload)
		envp[n++] = pre;
	envp[n++] = tmpdir;
	for (size_t i = 0; env && env[i] && n < 510; i++)
		envp[n++] = env[i];
	envp[n] = NULL;
	cr_assert_eq(pipe(po), 0);
	cr_assert_eq(pipe(pe), 0);
	fflush(NULL);
	pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		int null = open("/dev/null", O_RDONLY);
		dup2(null, 0);
		dup2(po[1], 1);
		dup2(pe[1], 2);
		close(po[0]);
		close(pe[0]);
		close(po[1]);
		close(pe[1]);
		if (chdir(r->tmp) != 0)
			_exit(126);
		execve(prog, (char *const *)argv, (char *const *)envp);
		_exit(127);
	}
	close(po[1]);
	close(pe[1]);
	if (err_delay_ms > 0) {
		struct timespec ts = { err_delay_ms / 1000, (err_delay_ms % 1000) * 1000000L };
		nanosleep(&ts, NULL);
	}
	for (int oo = 1, eo = 1; oo || eo;) {
		struct pollfd p[2] = { { oo ? po[0] : -1, POLLIN, 0 }, { eo ? pe[0] : -1, POLLIN, 0 } };
		if (poll(p, 2, -1) < 0)
			continue;
		if (p[0].revents)
			drain(po[0], r->out, sizeof r->out, &r->outlen, &oo);
		if (p[1].revents)
			drain(pe[0], r->err, sizeof r->err, &r->errlen, &eo);
	}
	close(po[0]);
	close(pe[0]);
	cr_assert_eq(waitpid(pid, &r->status, 0), pid);
}

/* How many summaries: header lines of either kind. */
static int summaries(const char *text)
{
	int n = 0;
	for (const char *line = text; *line;) {
		const char *eol = strchr(line, '\n');
		size_t len = eol ? (size_t)(eol - line) : strlen(line);
		if (!strncmp(line, "memtrace: pid ", 14) ||
		    (!strncmp(line, "memtrace: ", 10) && memmem(line, len, " images in ", 11)))
			n++;
		line += len + (eol != NULL);
	}
	return n;
}

static int count_of(const char *text, const char *what)
{
	int n = 0;
	for (const char *p = text; (p = strstr(p, what)) != NULL; p += strlen(what))
		n++;
	return n;
}

static int tree_dirs_left(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	int n = 0;
	cr_assert_not_null(d);
	while ((e = readdir(d)) != NULL)
		n += !strncmp(e->d_name, "memtrace-tree.", 14);
	closedir(d);
	return n;
}

static void rm_tmp(struct piped *r)
{
	char cmd[PATH_MAX + 32];
	if (getenv("MT_KEEP"))
		return;
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", r->tmp);
	cr_expect_eq(system(cmd), 0);
}

static void write_file(const char *path, const char *text, mode_t mode)
{
	FILE *f = fopen(path, "w");
	cr_assert_not_null(f, "%s: %s", path, strerror(errno));
	fputs(text, f);
	fclose(f);
	chmod(path, mode);
}

/* ---- one image ------------------------------------------------------- */

Test(shim_summary, one_image_prints_its_block, .timeout = 60)
{
	static struct piped r;
	const char *argv[] = { "x_stderr", "alloc", "5", NULL };
	tmp_fresh(&r);
	run_piped(&r, argv, NULL, 1, 0);
	cr_assert(WIFEXITED(r.status) && WEXITSTATUS(r.status) == 0, "%s", r.err);
	cr_expect_str_eq(r.out, "x_stderr alloc: done\n");
	cr_expect_eq(summaries(r.err), 1, "stderr:\n%s", r.err);
	cr_expect_not_null(strstr(r.err, "memtrace: pid "), "%s", r.err);
	cr_expect_not_null(strstr(r.err, "heap peak 5.0 MB"), "5 MB is 5.0 MB: %s", r.err);
	cr_expect_eq(tree_dirs_left(r.tmp), 0, "the tree's directory is removed");
	rm_tmp(&r);
}

/* gnulib's close_stdout closes stderr in an atexit handler, before the
 * shim's report: the report still reaches the pipe. */
Test(shim_summary, stderr_closed_by_an_atexit_handler, .timeout = 60)
{
	static struct piped r;
	const char *argv[] = { "x_stderr", "atexit-close", NULL };
	tmp_fresh(&r);
	run_piped(&r, argv, NULL, 1, 0);
	cr_assert(WIFEXITED(r.status) && WEXITSTATUS(r.status) == 0, "%s", r.err);
	cr_expect_eq(summaries(r.err), 1, "stderr:\n%s", r.err);
	rm_tmp(&r);
}

/* GNU tar fcloses stderr at the end of main. */
Test(shim_summary, stderr_fclosed_in_main, .timeout = 60)
{
	static struct piped r;
	const char *argv[] = { "x_stderr", "fclose-stderr", NULL };
	tmp_fresh(&r);
	run_piped(&r, argv, NULL, 1, 0);
	cr_assert(WIFEXITED(r.status) && WEXITSTATUS(r.status) == 0, "%s", r.err);
	cr_expect_eq(strncmp(r.err, "x_stderr: a last word on stderr\n", 32), 0, "%s", r.err);
	cr_expect_eq(summaries(r.err), 1, "stderr:\n%s", r.err);
	rm_tmp(&r);
}

Test(shim_summary, fd2_closed_in_main, .timeout = 60)
{
	static struct piped r;
	const char *argv[] = { "x_stderr", "close2", NULL };
	tmp_fresh(&r);
	run_piped(&r, argv, NULL, 1, 0);
	cr_assert(WIFEXITED(r.status) && WEXITSTATUS(r.status) == 0, "%s", r.err);
	cr_expect_eq(summaries(r.err), 1, "stderr:\n%s", r.err);
	rm_tmp(&r);
}

/* stderr a regular file, then dup2 of another file over fd 2: the report
 * goes to the original file (opened again by path), never into the file
 * fd 2 became. */
Test(shim_summary, dup2_over_stderr_file, .timeout = 60)
{
	struct shim_run r;
	char other[PATH_MAX + 16], text[4096] = "";
	snprintf(other, sizeof other, "/tmp/mtsum-other.%d", (int)getpid());
	const char *argv[] = { "x_stderr", "dup2-over", other, NULL };
	shim_run(&r, argv, NULL, SHIM_NO_DIR);
	cr_assert(WIFEXITED(r.status) && WEXITSTATUS(r.status) == 0, "%s", r.err);
	cr_expect_eq(summaries(r.err), 1, "the original stderr file:\n%s", r.err);
	FILE *f = fopen(other, "r");
	cr_assert_not_null(f);
	text[fread(text, 1, sizeof text - 1, f)] = '\0';
	fclose(f);
	unlink(other);
	cr_expect_null(strstr(text, "memtrace"), "written into what fd 2 became: %s", text);
	shim_done(&r);
}

/* The same with stderr a pipe: a pipe the program took away with dup2 has
 * no way back; the report is lost rather than written elsewhere. */
Test(shim_summary, dup2_over_stderr_pipe_writes_nowhere_else, .timeout = 60)
{
	static struct piped r;
	char other[PATH_MAX + 16], text[4096] = "";
	tmp_fresh(&r);
	snprintf(other, sizeof other, "%s/other", r.tmp);
	const char *argv[] = { "x_stderr", "dup2-over", other, NULL };
	run_piped(&r, argv, NULL, 1, 0);
	cr_assert(WIFEXITED(r.status) && WEXITSTATUS(r.status) == 0, "%s", r.err);
	FILE *f = fopen(other, "r");
	cr_assert_not_null(f);
	text[fread(text, 1, sizeof text - 1, f)] = '\0';
	fclose(f);
	cr_expect_null(strstr(text, "memtrace"), "written into what fd 2 became: %s", text);
	rm_tmp(&r);
}

/* A non-blocking stderr pipe that is nearly full when the program ends,
 * its reader late: the report waits for room and arrives whole. */
Test(shim_summary, nonblocking_full_pipe, .timeout = 60)
{
	static struct piped r;
	const char *argv[] = { "x_stderr", "nonblock-fill", "65000", NULL };
	tmp_fresh(&r);
	run_piped(&r, argv, NULL, 1, 300);
	cr_assert(WIFEXITED(r.status) && WEXITSTATUS(r.status) == 0, "%s", r.err + 65000);
	cr_expect_geq(r.errlen, 65000);
	cr_expect_eq(summaries(r.err + 65000), 1, "after the fill:\n%s", r.err + 65000);
	cr_expect_not_null(strstr(r.err + 65000, "calls "), "the block is whole: %s", r.err + 65000);
	rm_tmp(&r);
}

/* A daemon detaches (fork, setsid, closes its descriptors) and lives on:
 * the reader of the pipe sees end of file at once (run_piped returns;
 * otherwise the test times out), while the daemon is still alive. */
Test(shim_summary, detaching_daemon_lets_the_reader_see_eof, .timeout = 60)
{
	static struct piped r;
	char pidfile[PATH_MAX + 16], line[32] = "";
	pid_t daemon = 0;
	tmp_fresh(&r);
	snprintf(pidfile, sizeof pidfile, "%s/daemon.pid", r.tmp);
	const char *argv[] = { "x_stderr", "daemon", pidfile, NULL };
	run_piped(&r, argv, NULL, 1, 0);
	cr_assert(WIFEXITED(r.status) && WEXITSTATUS(r.status) == 0, "%s", r.err);
	for (int i = 0; i < 500 && !daemon; i++) {
		FILE *f = fopen(pidfile, "r");
		if (f && fgets(line, sizeof line, f))
			daemon = (pid_t)atoi(line);
		if (f)
			fclose(f);
		if (!daemon)
			usleep(10000);
	}
	cr_assert_gt(daemon, 0, "the daemon never wrote its pid");
	cr_expect_eq(kill(daemon, 0), 0, "the daemon should still be alive");
	kill(daemon, SIGKILL);
	/* (whether the daemon's record is in the table depends on whether it
	 * was made before the parent ended: either way, one summary) */
	cr_expect_eq(summaries(r.err), 1, "stderr:\n%s", r.err);
	rm_tmp(&r);
}

/* ---- trees --------------------------------------------------------- */

/* x_stderr by a short path, TMP/x_stderr: a table's COMMAND column keeps
 * 60 bytes of argv, and from a deep build tree (make distcheck's
 * memtrace-X/_build/sub/tests/progs) the arguments the tests look for
 * would be cut off. */
static const char *short_x_stderr(const struct piped *r)
{
	static char link[PATH_MAX + 16];
	char target[PATH_MAX + 16];
	snprintf(link, sizeof link, "%s/x_stderr", r->tmp);
	snprintf(target, sizeof target, "%s/x_stderr", progs());
	cr_assert_eq(symlink(target, link), 0, "%s: %s", link, strerror(errno));
	return link;
}

/* A pyenv-style wrapper chain: bash helpers, then exec of the real program
 * through env: one table, and its first row is the real worker. */
Test(shim_summary, wrapper_chain_prints_one_table, .timeout = 120)
{
	static struct piped r;
	char script[PATH_MAX + 16], text[PATH_MAX * 2];
	tmp_fresh(&r);
	snprintf(script, sizeof script, "%s/worker-shim", r.tmp);
	snprintf(text, sizeof text,
		 "#!/bin/bash\n"
		 "v=$(bash -c 'echo 3.11' | head -1)\n"
		 "for i in 1 2 3; do d=$(dirname \"$0\"); done\n"
		 "exec /usr/bin/env %s \"$@\"\n",
		 short_x_stderr(&r));
	write_file(script, text, 0755);
	const char *argv[] = { script, "alloc", "30", NULL };
	run_piped(&r, argv, NULL, 1, 0);
	cr_assert(WIFEXITED(r.status) && WEXITSTATUS(r.status) == 0, "%s", r.err);
	cr_expect_str_eq(r.out, "x_stderr alloc: done\n");
	cr_expect_eq(summaries(r.err), 1, "stderr:\n%s", r.err);
	cr_expect_eq(count_of(r.err, " images in "), 1, "a table: %s", r.err);
	/* the first row after the header line is the worker */
	const char *row = strstr(r.err, "COMMAND\n");
	cr_assert_not_null(row, "%s", r.err);
	row += 8;
	const char *eol = strchr(row, '\n');
	cr_assert_not_null(eol);
	cr_expect(memmem(row, (size_t)(eol - row), "x_stderr alloc 30", 17) != NULL,
		  "largest row: %.*s", (int)(eol - row), row);
	cr_expect_eq(tree_dirs_left(r.tmp), 0);
	rm_tmp(&r);
}

static void make_project(const struct piped *r)
{
	char path[PATH_MAX + 32], text[PATH_MAX * 4];
	const char *x = short_x_stderr(r);
	snprintf(path, sizeof path, "%s/Makefile", r->tmp);
	snprintf(text, sizeof text,
		 "all: big small1 small2\n"
		 "big:\n\t@%s alloc 40 >/dev/null\n"
		 "small1:\n\t@%s alloc 2 >/dev/null\n"
		 "small2:\n\t@%s alloc 3 >/dev/null\n"
		 ".PHONY: all big small1 small2\n",
		 x, x, x);
	write_file(path, text, 0644);
}

Test(shim_summary, make_j2_prints_one_table, .timeout = 120)
{
	static struct piped r;
	tmp_fresh(&r);
	make_project(&r);
	const char *argv[] = { "/usr/bin/env", "-u", "MAKEFLAGS", "-u", "MFLAGS", "-u", "MAKELEVEL",
			       "make", "-s", "-j2", NULL };
	run_piped(&r, argv, NULL, 1, 0);
	cr_assert(WIFEXITED(r.status) && WEXITSTATUS(r.status) == 0, "%s", r.err);
	cr_expect_eq(summaries(r.err), 1, "stderr:\n%s", r.err);
	const char *row = strstr(r.err, "COMMAND\n");
	cr_assert_not_null(row, "%s", r.err);
	cr_expect(strstr(row, "x_stderr alloc 40") != NULL &&
		  strstr(row, "x_stderr alloc 40") < strchr(row + 8, '\n'),
		  "largest row is the worker:\n%s", r.err);
	rm_tmp(&r);
}

Test(shim_summary, summary_each_prints_every_image, .timeout = 60)
{
	static struct piped r;
	char cmd[PATH_MAX * 3];
	tmp_fresh(&r);
	snprintf(cmd, sizeof cmd, "%s/x_stderr alloc 1; %s/x_stderr alloc 2", progs(), progs());
	const char *argv[] = { "/bin/sh", "-c", cmd, NULL };
	const char *env[] = { "MEMTRACE_SUMMARY=each", NULL };
	run_piped(&r, argv, env, 1, 0);
	cr_assert(WIFEXITED(r.status) && WEXITSTATUS(r.status) == 0, "%s", r.err);
	cr_expect_eq(count_of(r.err, "memtrace: pid "), 3, "sh and two programs:\n%s", r.err);
	cr_expect_eq(count_of(r.err, " images in "), 0, "%s", r.err);
	cr_expect_eq(tree_dirs_left(r.tmp), 0, "no tree was needed");
	rm_tmp(&r);
}

Test(shim_summary, quiet_says_nothing_and_makes_nothing, .timeout = 60)
{
	static struct piped r;
	char cmd[PATH_MAX * 3];
	tmp_fresh(&r);
	snprintf(cmd, sizeof cmd, "%s/x_stderr alloc 1; %s/x_stderr alloc 2", progs(), progs());
	const char *argv[] = { "/bin/sh", "-c", cmd, NULL };
	const char *env[] = { "MEMTRACE_QUIET=1", NULL };
	run_piped(&r, argv, env, 1, 0);
	cr_expect_str_eq(r.err, "");
	cr_expect_eq(tree_dirs_left(r.tmp), 0);
	rm_tmp(&r);
}

/* MEMTRACE_OUT without %p: the tree's JSON, from the root, with every
 * image's record; with %p: one file per image. */
Test(shim_summary, tree_json_and_per_image_json, .timeout = 120)
{
	static struct piped r;
	char cmd[PATH_MAX * 3], out[PATH_MAX + 32], check[PATH_MAX * 2];
	tmp_fresh(&r);
	snprintf(cmd, sizeof cmd, "%s/x_stderr alloc 1; %s/x_stderr alloc 2 | cat", progs(),
		 progs());
	const char *argv[] = { "/bin/sh", "-c", cmd, NULL };
	snprintf(out, sizeof out, "MEMTRACE_OUT=%s/tree.json", r.tmp);
	const char *env[] = { out, NULL };
	run_piped(&r, argv, env, 1, 0);
	cr_assert(WIFEXITED(r.status) && WEXITSTATUS(r.status) == 0, "%s", r.err);
	cr_expect_str_eq(r.err, "", "the JSON replaces the text");
	snprintf(check, sizeof check,
		 "python3 -c 'import json,sys; t = json.load(open(sys.argv[1]));"
		 " assert t[\"images\"] == len(t[\"records\"]) >= 4, t[\"images\"];"
		 " assert any(\"x_stderr\" in \" \".join(x[\"argv\"]) for x in t[\"records\"])'"
		 " %s/tree.json",
		 r.tmp);
	cr_expect_eq(system(check), 0, "tree.json is not what it should be");

	snprintf(out, sizeof out, "MEMTRACE_OUT=%s/img.%%p.json", r.tmp);
	const char *env2[] = { out, "MEMTRACE_QUIET=1", NULL };
	run_piped(&r, argv, env2, 1, 0);
	snprintf(check, sizeof check,
		 "python3 -c 'import glob,json,sys; fs = glob.glob(sys.argv[1] + \"/img.*.json\");"
		 " assert len(fs) >= 3, fs; [json.load(open(f)) for f in fs]' %s",
		 r.tmp);
	cr_expect_eq(system(check), 0, "per-image JSON files missing or broken");
	rm_tmp(&r);
}

/* A root killed before its exit handlers leaves its directory; the next
 * root to start removes it. */
Test(shim_summary, stale_tree_directory_is_swept, .timeout = 60)
{
	static struct piped r;
	char stale[PATH_MAX + 64], rec[PATH_MAX + 96];
	pid_t gone = fork();
	cr_assert_geq(gone, 0);
	if (gone == 0)
		_exit(0);
	cr_assert_eq(waitpid(gone, NULL, 0), gone);
	tmp_fresh(&r);
	snprintf(stale, sizeof stale, "%s/memtrace-tree.%d.12345", r.tmp, (int)gone);
	cr_assert_eq(mkdir(stale, 0700), 0);
	snprintf(rec, sizeof rec, "%s/%d.0.mtr", stale, (int)gone);
	write_file(rec, "half a record", 0644);
	const char *argv[] = { "x_stderr", "alloc", "1", NULL };
	run_piped(&r, argv, NULL, 1, 0);
	cr_assert(WIFEXITED(r.status) && WEXITSTATUS(r.status) == 0, "%s", r.err);
	cr_expect_eq(tree_dirs_left(r.tmp), 0, "the stale directory is still there");
	rm_tmp(&r);
}

/* ---- the program sees nothing ---------------------------------------- */

Test(shim_summary, exit_status_and_stdout_unchanged, .timeout = 60)
{
	static struct piped bare, traced;
	const char *argv[] = { "x_stderr", "exit", "7", NULL };
	tmp_fresh(&bare);
	tmp_fresh(&traced);
	run_piped(&bare, argv, NULL, 0, 0);
	run_piped(&traced, argv, NULL, 1, 0);
	cr_expect_eq(traced.status, bare.status);
	cr_expect_str_eq(traced.out, bare.out);
	cr_expect_str_eq(bare.err, "");
	cr_expect_eq(summaries(traced.err), 1, "%s", traced.err);
	rm_tmp(&bare);
	rm_tmp(&traced);
}

/* ---- names: what a site line calls each frame ---------------------------- */

#define NAMES_HINT "memsup -- CMD names them"

/* Whether a site line ("memtrace:   " then a share, "  ", bytes, "  ",
 * frames) of the summary leaves a frame unnamed: module+0x..., a mangled
 * C++ name or a frame in no module. */
static int names_unnamed_line(const char *err)
{
	for (const char *line = err; *line;) {
		const char *eol = strchr(line, '\n');
		size_t len = eol ? (size_t)(eol - line) : strlen(line);
		char text[1024];
		snprintf(text, sizeof text, "%.*s", (int)(len < sizeof text ? len : sizeof text - 1),
			 line);
		if (!strncmp(text, "memtrace:   ", 12) && strstr(text, "%  ") &&
		    (strstr(text, "+0x") || strstr(text, " _Z") || strstr(text, "< _Z") ||
		     strstr(text, "< ?") || strstr(text, "  ?")))
			return 1;
		line += len + (eol != NULL);
	}
	return 0;
}

/* The hint line is there exactly when a site line needs it, and once. */
static void names_expect_hint_iff_unnamed(const char *err)
{
	int unnamed = names_unnamed_line(err), hints = count_of(err, NAMES_HINT);
	cr_expect_eq(hints, unnamed ? 1 : 0, "unnamed frames: %d, hint lines: %d:\n%s", unnamed,
		     hints, err);
}

/* A Python program allocating at two known lines: its site lines name the
 * Python functions with their files and lines, innermost first, as
 * memsup's summary does. */
Test(shim_summary, names_python_frames_and_lines, .timeout = 120)
{
	static struct piped r;
	char path[PATH_MAX + 16];
	const char *argv[] = { "/usr/bin/python3.11", "prog.py", NULL };
	if (access(argv[0], X_OK) != 0)
		cr_skip_test("no /usr/bin/python3.11");
	tmp_fresh(&r);
	snprintf(path, sizeof path, "%s/prog.py", r.tmp);
	write_file(path,
		   "def load(n):\n"                  /* 1 */
		   "    return bytearray(n)\n"       /* 2: 200 MB */
		   "\n"                              /* 3 */
		   "def main():\n"                   /* 4 */
		   "    a = load(200 << 20)\n"       /* 5 */
		   "    b = bytearray(100 << 20)\n"  /* 6: 100 MB */
		   "    return a, b\n"               /* 7 */
		   "\n"                              /* 8 */
		   "x = main()\n",                   /* 9 */
		   0644);
	run_piped(&r, argv, NULL, 1, 0);
	cr_assert(WIFEXITED(r.status) && WEXITSTATUS(r.status) == 0, "%s", r.err);
	const char *big = strstr(r.err, "  load (prog.py:2) < main (prog.py:5) < <module> (prog.py:9)");
	const char *mid = strstr(r.err, "  main (prog.py:6) < <module> (prog.py:9)");
	cr_expect_not_null(big, "the 200 MB line names load, main, <module>:\n%s", r.err);
	cr_expect_not_null(mid, "the 100 MB line names main, <module>:\n%s", r.err);
	/* 200 MB against 100 MB, each within about 1 MB (its standard error at
	 * the default interval): the larger comes first */
	cr_expect(big && mid && big < mid, "load's line first:\n%s", r.err);
	names_expect_hint_iff_unnamed(r.err);
	rm_tmp(&r);
}

/* A C++ program (tests/progs/lines_cxx.cc, built here with g++ -O2 -g):
 * the shim demangles its frames (common/demangle.h), template arguments
 * folded to <> and parameters dropped, a clone's suffix as c++filt
 * writes it; every frame shown is named, so no hint line. */
/* tests/progs/lines_cxx.cc built into r->tmp with g++ `flags` (stripped
 * when `strip`), then run under the shim; skips without g++. */
static void run_lines_cxx(struct piped *r, const char *flags, int strip)
{
	char cmd[PATH_MAX * 3], exe[PATH_MAX + 16];
	const char *src = getenv("MT_SRCDIR");
	if (!src)
		cr_skip_test("MT_SRCDIR is not set");
	if (system("command -v g++ >/dev/null 2>&1") != 0)
		cr_skip_test("no g++ to build tests/progs/lines_cxx.cc");
	tmp_fresh(r);
	snprintf(exe, sizeof exe, "%s/lines_cxx", r->tmp);
	snprintf(cmd, sizeof cmd, "g++ %s -o '%s' '%s/tests/progs/lines_cxx.cc'%s%s%s", flags, exe,
		 src, strip ? " && strip '" : "", strip ? exe : "", strip ? "'" : "");
	cr_assert_eq(system(cmd), 0, "%s", cmd);
	const char *argv[] = { exe, "0", NULL };
	run_piped(r, argv, NULL, 1, 0);
	cr_assert(WIFEXITED(r->status) && WEXITSTATUS(r->status) == 0, "%s", r->err);
}

Test(shim_summary, names_cxx_demangled, .timeout = 120)
{
	static struct piped r;
	run_lines_cxx(&r, "-O2 -g", 0);
	cr_expect_not_null(strstr(r.err, " < store::Pool<>::grow < fill"), "demangled:\n%s", r.err);
	cr_expect_null(strstr(r.err, "_ZN5store"), "no mangled name left:\n%s", r.err);
	names_expect_hint_iff_unnamed(r.err);
	rm_tmp(&r);
}

/* A C++ frame in no symbol (a static function of a stripped program):
 * it stays module+0x..., and the one line says how to name it. */
Test(shim_summary, names_cxx_stripped_with_the_hint, .timeout = 120)
{
	static struct piped r;
	run_lines_cxx(&r, "-O2", 1);
	cr_expect_not_null(strstr(r.err, "lines_cxx+0x"), "an unnamed frame:\n%s", r.err);
	cr_expect_eq(count_of(r.err, NAMES_HINT), 1, "the hint, once:\n%s", r.err);
	names_expect_hint_iff_unnamed(r.err);
	rm_tmp(&r);
}

/* A C program with full symbols whose sites lie four frames deep in it:
 * every frame shown is named, so no hint line. */
Test(shim_summary, names_c_full_symbols_no_hint, .timeout = 60)
{
	static struct piped r;
	const char *argv[] = { "x_names", "deep", NULL };
	tmp_fresh(&r);
	run_piped(&r, argv, NULL, 1, 0);
	cr_assert(WIFEXITED(r.status) && WEXITSTATUS(r.status) == 0, "%s", r.err);
	cr_expect_not_null(strstr(r.err, "  level3 < level2 < level1 < main"), "%s", r.err);
	cr_expect_eq(count_of(r.err, NAMES_HINT), 0, "no hint for named lines:\n%s", r.err);
	names_expect_hint_iff_unnamed(r.err);
	rm_tmp(&r);
}

/* 1,000,000 blocks of 8 bytes held: malloc hands out 24 usable bytes for
 * each (glibc's smallest chunk), so the heap peak, in usable bytes, is
 * three times the 8.0 MB requested; the line says the heap counts usable
 * sizes rather than leave a peak above "requested" unexplained. */
Test(shim_summary, heap_counts_usable_beside_requested, .timeout = 60)
{
	static struct piped r;
	const char *argv[] = { "x_names", "small", "1000000", "8", NULL };
	tmp_fresh(&r);
	run_piped(&r, argv, NULL, 1, 0);
	cr_assert(WIFEXITED(r.status) && WEXITSTATUS(r.status) == 0, "%s", r.err);
	const char *line = strstr(r.err, "memtrace:   heap peak ");
	cr_assert_not_null(line, "%s", r.err);
	const char *eol = strchr(line, '\n');
	char text[512];
	snprintf(text, sizeof text, "%.*s", eol ? (int)(eol - line) : (int)strlen(line), line);
	cr_expect_not_null(strstr(text, "heap peak 24.0 MB"), "24 usable bytes a block: %s", text);
	cr_expect_not_null(strstr(text, "requested 8.0 MB"), "8 bytes asked a block: %s", text);
	cr_expect_not_null(strstr(text, "usable"), "a heap peak above the bytes requested says "
			   "it counts usable sizes: %s", text);
	rm_tmp(&r);
}
