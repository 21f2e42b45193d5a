/* test_shim_outpath.c: the shim's output paths never hold the program up
 * and never cost the user a file (preload/report/report.c, preload/report/summary.c).
 *
 *  - MEMTRACE_OUT naming a FIFO that no process reads: the traced program
 *    ends as fast as the bare one, status unchanged, and one line on its
 *    stderr names the path and the errno; with a reader, the reader gets
 *    the JSON.  Both for the tree's JSON and for the per-image one (%p).
 *  - A path that cannot be opened is said with its errno.
 *  - MEMTRACE_TREE set by hand beside a user's MEMTRACE_DIR: the user's
 *    record files stay; the standalone tree still removes its own.
 *
 * Every traced program runs in a child with the shim in its environment
 * only; a child that hangs is killed by the test, never left behind.
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
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "test_tmp.h"

extern char **environ;

struct outrun {
	char tmp[PATH_MAX];  /* fresh directory: cwd and TMPDIR of the run */
	int status;          /* wait status; -1: killed by the test, too slow */
	double seconds;      /* from fork to its end */
	char err[8192];      /* its stderr */
};

static const char *so_path(void)
{
	const char *p = getenv("MEMTRACE_SO");
	if (!p || !*p)
		cr_skip_test("MEMTRACE_SO is not set (run through make check)");
	return p;
}

static void tmp_fresh(struct outrun *r)
{
	snprintf(r->tmp, sizeof r->tmp, "/tmp/mt-outpath.XXXXXX");
	cr_assert_not_null(mkdtemp(r->tmp));
	tmp_adopt(r->tmp);
}

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

enum { RUN_FIFO_PER_PID = 1 << 0, RUN_TREE_SELF = 1 << 1, RUN_CLOSE_WHEN_FULL = 1 << 2 };

/* Runs argv traced (the shim, TMPDIR=r->tmp, no MEMTRACE_* but env), its
 * stderr to r->tmp/err.  RUN_FIFO_PER_PID: the child first makes the FIFO
 * r->tmp/out.<its pid> (MEMTRACE_OUT=.../out.%p names it).  RUN_TREE_SELF:
 * MEMTRACE_TREE=<the child's pid><tree_tail> is set, as by hand.  Waits at
 * most `limit` seconds, then kills it (status -1).  fd_reader (>= 0) is
 * read while it runs into *got (cap bytes); with RUN_CLOSE_WHEN_FULL it is
 * never read, and closed once the pipe is full (the writer waits in
 * write(2) then, and its next write finds no reader). */
static void run_traced(struct outrun *r, const char *const *argv, const char *const *env,
		       unsigned flags, const char *tree_tail, double limit, int fd_reader,
		       char *got, size_t cap)
{
	char pre[PATH_MAX + 16], tmpdir[PATH_MAX + 16], errpath[PATH_MAX + 8];
	const char *envp[512];
	size_t n = 0, have = 0;
	snprintf(pre, sizeof pre, "LD_PRELOAD=%s", so_path());
	snprintf(tmpdir, sizeof tmpdir, "TMPDIR=%s", r->tmp);
	snprintf(errpath, sizeof errpath, "%s/err", r->tmp);
	for (char **e = environ; *e && n < 480; e++)
		if (strncmp(*e, "MEMTRACE_", 9) != 0 && strncmp(*e, "LD_PRELOAD=", 11) != 0 &&
		    strncmp(*e, "TMPDIR=", 7) != 0)
			envp[n++] = *e;
	envp[n++] = pre;
	envp[n++] = tmpdir;
	for (size_t i = 0; env && env[i] && n < 508; i++)
		envp[n++] = env[i];
	double t0 = now();
	pid_t pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		static char tree[64], fifo[PATH_MAX + 32];
		int fd = open(errpath, O_WRONLY | O_CREAT | O_TRUNC, 0644);
		if (fd < 0 || dup2(fd, 2) < 0 || chdir(r->tmp) < 0)
			_exit(99);
		if (flags & RUN_FIFO_PER_PID) {
			snprintf(fifo, sizeof fifo, "%s/out.%d", r->tmp, (int)getpid());
			if (mkfifo(fifo, 0600) < 0)
				_exit(98);
		}
		if (flags & RUN_TREE_SELF) {
			snprintf(tree, sizeof tree, "MEMTRACE_TREE=%d%s", (int)getpid(), tree_tail);
			envp[n++] = tree;
		}
		envp[n] = NULL;
		execve(argv[0], (char *const *)argv, (char *const *)envp);
		_exit(97);
	}
	r->status = -1;
	for (;;) {
		int st;
		pid_t w = waitpid(pid, &st, WNOHANG);
		if (fd_reader >= 0 && (flags & RUN_CLOSE_WHEN_FULL)) {
			int queued = 0, size = fcntl(fd_reader, F_GETPIPE_SZ);
			if (ioctl(fd_reader, FIONREAD, &queued) == 0 && size > 0 && queued >= size) {
				close(fd_reader);
				fd_reader = -1;
			}
			usleep(5000);
		} else if (fd_reader >= 0) {
			struct pollfd p = { fd_reader, POLLIN, 0 };
			if (poll(&p, 1, 20) > 0 && have + 1 < cap) {
				ssize_t k = read(fd_reader, got + have, cap - 1 - have);
				if (k > 0)
					have += (size_t)k;
				got[have] = '\0';
			}
		} else if (w == 0) {
			usleep(10000);
		}
		if (w == pid) {
			r->status = st;
			break;
		}
		if (now() - t0 > limit) {
			kill(pid, SIGKILL);
			waitpid(pid, NULL, 0);
			break;
		}
	}
	r->seconds = now() - t0;
	/* what is left in the FIFO after the writer ended */
	for (ssize_t k; fd_reader >= 0 && got && have + 1 < cap &&
			(k = read(fd_reader, got + have, cap - 1 - have)) > 0;)
		have += (size_t)k;
	if (fd_reader >= 0 && got)
		got[have] = '\0';
	r->err[0] = '\0';
	int fd = open(errpath, O_RDONLY);
	if (fd >= 0) {
		ssize_t k = read(fd, r->err, sizeof r->err - 1);
		r->err[k > 0 ? k : 0] = '\0';
		close(fd);
	}
}

static void expect_exited_0_quickly(const struct outrun *r)
{
	cr_assert_neq(r->status, -1, "still running after %.1f s: stderr %s", r->seconds, r->err);
	cr_expect(WIFEXITED(r->status) && WEXITSTATUS(r->status) == 0, "status %#x, stderr %s",
		  r->status, r->err);
	cr_expect_lt(r->seconds, 1.0, "%.2f s", r->seconds);
}

/* ---- MEMTRACE_OUT ------------------------------------------------------ */

Test(shim_outpath, fifo_without_reader_is_skipped_and_said, .timeout = 20)
{
	struct outrun r;
	char fifo[PATH_MAX + 8], var[PATH_MAX + 32], want[PATH_MAX + 64];
	tmp_fresh(&r);
	snprintf(fifo, sizeof fifo, "%s/out", r.tmp);
	cr_assert_eq(mkfifo(fifo, 0600), 0);
	snprintf(var, sizeof var, "MEMTRACE_OUT=%s", fifo);
	const char *argv[] = { "/bin/true", NULL };
	const char *env[] = { var, NULL };
	run_traced(&r, argv, env, 0, NULL, 3.0, -1, NULL, 0);
	expect_exited_0_quickly(&r);
	snprintf(want, sizeof want, "MEMTRACE_OUT %s: not written: open: ENXIO (errno %d)", fifo,
		 ENXIO);
	cr_expect_not_null(strstr(r.err, want), "want \"%s\" in: %s", want, r.err);
	cr_expect_not_null(strstr(r.err, "FIFO"), "%s", r.err);
	cr_expect_eq(strchr(r.err, '\n') - r.err + 1, (long)strlen(r.err), "one line: %s", r.err);
}

Test(shim_outpath, fifo_per_image_without_reader_is_skipped_and_said, .timeout = 20)
{
	struct outrun r;
	char var[PATH_MAX + 32];
	tmp_fresh(&r);
	snprintf(var, sizeof var, "MEMTRACE_OUT=%s/out.%%p", r.tmp);
	const char *argv[] = { "/bin/true", NULL };
	const char *env[] = { var, NULL };
	run_traced(&r, argv, env, RUN_FIFO_PER_PID, NULL, 3.0, -1, NULL, 0);
	expect_exited_0_quickly(&r);
	cr_expect_not_null(strstr(r.err, "/out."), "%s", r.err);
	cr_expect_not_null(strstr(r.err, "ENXIO"), "%s", r.err);
}

Test(shim_outpath, fifo_with_reader_gets_the_report, .timeout = 20)
{
	struct outrun r;
	char fifo[PATH_MAX + 8], var[PATH_MAX + 32], got[65536];
	tmp_fresh(&r);
	snprintf(fifo, sizeof fifo, "%s/out", r.tmp);
	cr_assert_eq(mkfifo(fifo, 0600), 0);
	int rd = open(fifo, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	cr_assert_geq(rd, 0);
	snprintf(var, sizeof var, "MEMTRACE_OUT=%s", fifo);
	const char *argv[] = { "/bin/true", NULL };
	const char *env[] = { var, NULL };
	run_traced(&r, argv, env, 0, NULL, 5.0, rd, got, sizeof got);
	close(rd);
	expect_exited_0_quickly(&r);
	cr_expect_not_null(strstr(got, "\"root_pid\":"), "the reader got: %s", got);
	cr_expect_not_null(strstr(got, "\"records\":["), "%s", got);
	cr_expect(strlen(got) > 0 && got[strlen(got) - 1] == '\n', "whole: %s", got);
	cr_expect_eq(strstr(r.err, "not written"), NULL, "%s", r.err);
}

/* The reader goes away while the tree's JSON (about 100 images, more than
 * a pipe holds) is being written: the write fails with EPIPE, said; the
 * program is not killed by SIGPIPE at its exit. */
Test(shim_outpath, fifo_reader_gone_mid_report_is_epipe_not_sigpipe, .timeout = 30)
{
	struct outrun r;
	char fifo[PATH_MAX + 8], var[PATH_MAX + 32];
	tmp_fresh(&r);
	snprintf(fifo, sizeof fifo, "%s/out", r.tmp);
	cr_assert_eq(mkfifo(fifo, 0600), 0);
	int rd = open(fifo, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	cr_assert_geq(rd, 0);
	snprintf(var, sizeof var, "MEMTRACE_OUT=%s", fifo);
	const char *argv[] = { "/bin/sh", "-c", "i=0; while [ $i -lt 100 ]; do /bin/true; "
				"i=$((i+1)); done", NULL };
	const char *env[] = { var, NULL };
	run_traced(&r, argv, env, RUN_CLOSE_WHEN_FULL, NULL, 20.0, rd, NULL, 0);
	cr_assert_neq(r.status, -1, "still running: %s", r.err);
	cr_expect(WIFEXITED(r.status) && WEXITSTATUS(r.status) == 0,
		  "status %#x (signal %d), stderr %s", r.status,
		  WIFSIGNALED(r.status) ? WTERMSIG(r.status) : 0, r.err);
	cr_expect_not_null(strstr(r.err, "not written: write: EPIPE"), "%s", r.err);
}

Test(shim_outpath, a_regular_file_is_written_and_a_bad_path_said, .timeout = 20)
{
	struct outrun r;
	char path[PATH_MAX + 16], var[PATH_MAX + 32], buf[4096];
	tmp_fresh(&r);
	snprintf(path, sizeof path, "%s/out.json", r.tmp);
	snprintf(var, sizeof var, "MEMTRACE_OUT=%s", path);
	const char *argv[] = { "/bin/true", NULL };
	const char *env[] = { var, NULL };
	run_traced(&r, argv, env, 0, NULL, 5.0, -1, NULL, 0);
	expect_exited_0_quickly(&r);
	int fd = open(path, O_RDONLY);
	cr_assert_geq(fd, 0);
	ssize_t k = read(fd, buf, sizeof buf - 1);
	close(fd);
	cr_assert_gt(k, 0);
	buf[k] = '\0';
	cr_expect_not_null(strstr(buf, "\"root_pid\":"), "%s", buf);
	cr_expect_eq(r.err[0], '\0', "nothing said: %s", r.err);

	/* no such directory: ENOENT, and nothing about FIFOs */
	snprintf(var, sizeof var, "MEMTRACE_OUT=%s/none/out.json", r.tmp);
	run_traced(&r, argv, env, 0, NULL, 5.0, -1, NULL, 0);
	expect_exited_0_quickly(&r);
	cr_expect_not_null(strstr(r.err, "/none/out.json: not written: open: ENOENT (errno 2)"),
			   "%s", r.err);
	cr_expect_eq(strstr(r.err, "FIFO"), NULL, "no word that does not apply: %s", r.err);
}

/* ---- MEMTRACE_TREE ----------------------------------------------------- */

static int count_entries(const char *dir, const char *prefix)
{
	int n = 0;
	DIR *d = opendir(dir);
	cr_assert_not_null(d, "%s", dir);
	for (struct dirent *e; (e = readdir(d));)
		n += strncmp(e->d_name, prefix, strlen(prefix)) == 0 && e->d_name[0] != '.';
	closedir(d);
	return n;
}

static int exists_in(const char *dir, const char *name)
{
	char path[PATH_MAX + 64];
	struct stat sb;
	snprintf(path, sizeof path, "%s/%s", dir, name);
	return lstat(path, &sb) == 0;
}

static void put_file(const char *dir, const char *name, size_t bytes)
{
	char path[PATH_MAX + 64];
	static const char zeros[8192];
	snprintf(path, sizeof path, "%s/%s", dir, name);
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	cr_assert_geq(fd, 0, "%s", path);
	cr_assert_eq(write(fd, zeros, bytes), (ssize_t)bytes);
	close(fd);
}

/* A user's record directory, and MEMTRACE_TREE=<the program's own pid>
 * (a bare pid, as the variable once read, or one with a made-up inode):
 * the files it did not write stay, and its own record is there. */
Test(shim_outpath, a_tree_set_by_hand_removes_nothing_of_the_user, .timeout = 20)
{
	static const char *const tails[] = { "", ".12345", NULL };
	for (int t = 0; tails[t]; t++) {
		struct outrun r;
		char dir[PATH_MAX + 8], var[PATH_MAX + 32];
		tmp_fresh(&r);
		snprintf(dir, sizeof dir, "%s/mine", r.tmp);
		cr_assert_eq(mkdir(dir, 0700), 0); /* as private as the shim's own */
		put_file(dir, "1.0.mtr", 8192);
		put_file(dir, "2.0.mts", 0);
		put_file(dir, "3.1.mtr", 0);
		snprintf(var, sizeof var, "MEMTRACE_DIR=%s", dir);
		const char *argv[] = { "/bin/true", NULL };
		const char *env[] = { var, NULL };
		run_traced(&r, argv, env, RUN_TREE_SELF, tails[t], 5.0, -1, NULL, 0);
		expect_exited_0_quickly(&r);
		cr_expect(exists_in(dir, "1.0.mtr") && exists_in(dir, "2.0.mts") &&
				  exists_in(dir, "3.1.mtr"),
			  "MEMTRACE_TREE=<pid>%s: the user's files stay", tails[t]);
		cr_expect_geq(count_entries(dir, ""), 4, "and this run's record joins them");
	}
}

/* The standalone tree, its root exec'ing (the same pid, a new image that
 * reads MEMTRACE_TREE back): the table is printed and the directory the
 * root made is gone. */
Test(shim_outpath, the_tree_still_removes_its_own_directory, .timeout = 20)
{
	struct outrun r;
	tmp_fresh(&r);
	const char *argv[] = { "/bin/sh", "-c", "/bin/true; exec /bin/true", NULL };
	run_traced(&r, argv, NULL, 0, NULL, 5.0, -1, NULL, 0);
	cr_assert_neq(r.status, -1);
	cr_expect(WIFEXITED(r.status) && WEXITSTATUS(r.status) == 0, "%s", r.err);
	cr_expect_not_null(strstr(r.err, " images in 2 processes from pid "), "%s", r.err);
	cr_expect_eq(count_entries(r.tmp, "memtrace-tree."), 0, "the tree's directory is gone");
}
