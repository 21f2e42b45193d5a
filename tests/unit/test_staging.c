/* test_staging.c: the shim's directory on a tmpfs while the run goes on
 * (supervisor/collect/staging.h): where it is chosen, and what the drain
 * moves into the evidence (whole files, byte for byte, holes kept), what
 * it drops (the empty names of folded images) and what it leaves; and
 * which directories of other runs a run removes (those whose memsup and
 * sentinel are both gone), with staging_sweep and with memsup itself. */
#include <criterion/criterion.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/magic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/procfs.h"
#include "collect/staging.h"
#include "test_memsup_util.h"

static char ev[64], root[64];
static int evfd = -1;

static void setup(void)
{
	snprintf(ev, sizeof ev, "/tmp/mt-staging-ev.XXXXXX");
	snprintf(root, sizeof root, "/tmp/mt-staging-root.XXXXXX");
	cr_assert_not_null(mkdtemp(ev));
	cr_assert_not_null(mkdtemp(root));
	evfd = open(ev, O_RDONLY | O_DIRECTORY);
	cr_assert_geq(evfd, 0);
	cr_assert_eq(mkdirat(evfd, "records", 0777), 0);
}

static void teardown(void)
{
	char cmd[200];
	close(evfd);
	snprintf(cmd, sizeof cmd, "rm -rf %s %s", ev, root);
	(void)!system(cmd);
}

static void put(const char *dir, const char *name, const void *p, size_t n, off_t at)
{
	char path[PATH_MAX + 64];
	snprintf(path, sizeof path, "%s/%s", dir, name);
	int fd = open(path, O_WRONLY | O_CREAT, 0644);
	cr_assert_geq(fd, 0, "%s: %s", path, strerror(errno));
	if (n)
		cr_assert_eq(pwrite(fd, p, n, at), (ssize_t)n);
	close(fd);
}

static int on_tmpfs(const char *path)
{
	struct statfs sf;
	return statfs(path, &sf) == 0 && sf.f_type == TMPFS_MAGIC;
}

Test(staging, a_root_given_is_used_and_drained_into_records, .init = setup, .fini = teardown)
{
	struct staging st;
	cr_assert_eq(staging_open(&st, ev, root), 0);
	cr_assert(st.staged);
	cr_assert_eq(strncmp(st.dir, root, strlen(root)), 0, "%s not under %s", st.dir, root);
	struct stat sb;
	cr_assert_eq(stat(st.dir, &sb), 0);
	cr_assert(S_ISDIR(sb.st_mode));

	/* a record still whole (its image not folded: memsup killed), a stacks
	 * file with a hole between two written blocks, an empty name of a
	 * folded image */
	unsigned char rec[8192], blk[100];
	for (size_t i = 0; i < sizeof rec; i++)
		rec[i] = (unsigned char)(i * 7 + 1);
	memset(blk, 0xab, sizeof blk);
	put(st.dir, "10.0.mtr", rec, sizeof rec, 0);
	put(st.dir, "10.0.mts", blk, sizeof blk, 0);
	put(st.dir, "10.0.mts", blk, sizeof blk, 300000);
	put(st.dir, "11.0.mtr", NULL, 0, 0);

	size_t moved = 99;
	cr_assert_eq(staging_drain(&st, evfd, &moved), 0);
	cr_expect_eq(moved, 2);
	cr_expect_neq(stat(st.dir, &sb), 0, "the staging directory is removed");

	char path[PATH_MAX + 64];
	unsigned char back[8192];
	snprintf(path, sizeof path, "%s/records/10.0.mtr", ev);
	int fd = open(path, O_RDONLY);
	cr_assert_geq(fd, 0);
	cr_expect_eq(read(fd, back, sizeof back), (ssize_t)sizeof back);
	cr_expect_eq(memcmp(back, rec, sizeof rec), 0, "the record byte for byte");
	close(fd);
	snprintf(path, sizeof path, "%s/records/10.0.mts", ev);
	fd = open(path, O_RDONLY);
	cr_assert_geq(fd, 0);
	cr_assert_eq(fstat(fd, &sb), 0);
	cr_expect_eq(sb.st_size, 300000 + (off_t)sizeof blk);
	/* two 4 KiB blocks written at most (the filesystem's own unit may
	 * round up): the hole stayed one */
	cr_expect_lt(sb.st_blocks * 512, 64 * 1024, "%lld bytes allocated",
		     (long long)sb.st_blocks * 512);
	cr_expect_eq(pread(fd, back, sizeof blk, 300000), (ssize_t)sizeof blk);
	cr_expect_eq(memcmp(back, blk, sizeof blk), 0);
	cr_expect_eq(pread(fd, back, 16, 150000), 16);
	for (int i = 0; i < 16; i++)
		cr_expect_eq(back[i], 0);
	close(fd);
	snprintf(path, sizeof path, "%s/records/11.0.mtr", ev);
	cr_expect_neq(stat(path, &sb), 0, "an empty name is not carried over");
	/* drained twice (memsup, then its sentinel): nothing to do */
	cr_expect_eq(staging_drain(&st, evfd, &moved), 0);
	cr_expect_eq(moved, 0);
}

Test(staging, a_file_that_cannot_move_stays_and_is_said, .init = setup, .fini = teardown)
{
	struct staging st;
	cr_assert_eq(staging_open(&st, ev, root), 0);
	put(st.dir, "12.0.mtr", "x", 1, 0);
	put(st.dir, "13.0.mtr", "y", 1, 0);
	/* records/ already has 12.0.mtr: the copy refuses to overwrite it */
	char path[PATH_MAX + 64];
	snprintf(path, sizeof path, "%s/records", ev);
	put(path, "12.0.mtr", "old", 3, 0);
	size_t moved;
	cr_expect_eq(staging_drain(&st, evfd, &moved), -EEXIST);
	cr_expect_eq(moved, 1, "the others still move");
	struct stat sb;
	snprintf(path, sizeof path, "%s/12.0.mtr", st.dir);
	cr_expect_eq(stat(path, &sb), 0, "what did not move stays staged");
	snprintf(path, sizeof path, "%s/records/13.0.mtr", ev);
	cr_expect_eq(stat(path, &sb), 0);
	snprintf(path, sizeof path, "%s/records/12.0.mtr", ev);
	cr_expect_eq(stat(path, &sb), 0);
	cr_expect_eq(sb.st_size, 3, "the evidence's own file is untouched");
}

Test(staging, off_or_no_tmpfs_writes_into_the_evidence, .init = setup, .fini = teardown)
{
	struct staging st;
	char want[PATH_MAX];
	snprintf(want, sizeof want, "%s/records", ev);
	cr_assert_eq(setenv(STAGING_ENV, "off", 1), 0);
	cr_assert_eq(staging_open(&st, ev, NULL), 0);
	cr_expect_not(st.staged);
	cr_expect_str_eq(st.dir, want);
	cr_expect_eq(staging_drain(&st, evfd, NULL), 0, "nothing to drain");

	cr_assert_eq(setenv(STAGING_ENV, root, 1), 0);
	cr_assert_eq(staging_open(&st, ev, NULL), 0);
	cr_expect(st.staged, "the variable names the root");
	cr_expect_eq(strncmp(st.dir, root, strlen(root)), 0);
	cr_expect_eq(staging_drain(&st, evfd, NULL), 0);

	/* the default: /dev/shm only where it is a tmpfs and the evidence
	 * is not on one */
	cr_assert_eq(unsetenv(STAGING_ENV), 0);
	cr_assert_eq(staging_open(&st, ev, NULL), 0);
	int want_staged = on_tmpfs(STAGING_DEFAULT_ROOT) && !on_tmpfs(ev);
	cr_expect_eq(st.staged, want_staged, "staged %d in %s", st.staged, st.dir);
	if (st.staged)
		cr_expect_eq(strncmp(st.dir, "/dev/shm/memsup-", 16), 0, "%s", st.dir);
	else
		cr_expect_str_eq(st.dir, want);
	cr_expect_eq(staging_drain(&st, evfd, NULL), 0);
	/* a root that cannot hold it: the evidence, not an error, but said */
	cr_assert_eq(staging_open(&st, ev, "/nonexistent/memsup-root"), 0);
	cr_expect_not(st.staged);
	cr_expect_str_eq(st.dir, want);
	cr_expect_eq(st.refused, -ENOENT);
	cr_expect_str_eq(st.root, "/nonexistent/memsup-root");
	cr_assert_eq(setenv(STAGING_ENV, "/nonexistent/memsup-root", 1), 0);
	cr_assert_eq(staging_open(&st, ev, NULL), 0);
	cr_expect_not(st.staged);
	cr_expect_eq(st.refused, -ENOENT, "the variable's root, refused, is said");
	cr_assert_eq(unsetenv(STAGING_ENV), 0);
}

/* The evidence directory removed mid-run (harden_evidence does it): the
 * empty names still go, and the staging directory with them, so nothing
 * is left in /dev/shm; a whole record has nowhere to go and stays. */
Test(staging, no_records_dir_still_drops_the_names, .init = setup, .fini = teardown)
{
	struct staging st;
	struct stat sb;
	char path[PATH_MAX + 64];
	cr_assert_eq(staging_open(&st, ev, root), 0);
	put(st.dir, "20.0.mtr", NULL, 0, 0);
	put(st.dir, "21.0.mtr", NULL, 0, 0);
	snprintf(path, sizeof path, "%s/records", ev);
	cr_assert_eq(rmdir(path), 0);
	cr_expect_eq(staging_drain(&st, evfd, NULL), 0);
	cr_expect_neq(stat(st.dir, &sb), 0, "the staging directory is removed");

	cr_assert_eq(staging_open(&st, ev, root), 0);
	put(st.dir, "22.0.mtr", "z", 1, 0);
	put(st.dir, "23.0.mtr", NULL, 0, 0);
	cr_expect_eq(staging_drain(&st, evfd, NULL), -ENOENT);
	snprintf(path, sizeof path, "%s/22.0.mtr", st.dir);
	cr_expect_eq(stat(path, &sb), 0, "the whole record stays staged");
	snprintf(path, sizeof path, "%s/23.0.mtr", st.dir);
	cr_expect_neq(stat(path, &sb), 0, "the empty name went");
}

/* ---- the directories of runs that are gone (staging_sweep) ----------- */

Test(staging, names_carry_the_pid_and_start_time)
{
	pid_t pid;
	uint64_t start;
	cr_expect_eq(staging_parse_name("memsup-123-456789-aB3xYz", &pid, &start), 0);
	cr_expect_eq(pid, 123);
	cr_expect_eq(start, 456789);
	cr_expect_eq(staging_parse_name("memsup-7-0-abcdef", &pid, &start), 0);
	cr_expect_eq(start, 0);
	/* an older memsup's (nothing tells whether its sentinel lives), the
	 * cgroups', and others: not ours to judge */
	const char *not_ours[] = { "memsup-123-aB3xYz", "memsup-123-run", "memsup-0-1-abcdef",
				   "memsup-12-34-abcdefg", "memsup--1-abcdef", "memsup-1-2-abc",
				   "memsup-99999999999-1-abcdef", "xmemsup-1-2-abcdef", NULL };
	for (int i = 0; not_ours[i]; i++)
		cr_expect_neq(staging_parse_name(not_ours[i], &pid, &start), 0, "%s", not_ours[i]);
}

static int exists(const char *path)
{
	struct stat sb;
	return lstat(path, &sb) == 0;
}

/* A run of memsup while another goes on (here: this process's, then a
 * child's): neither removes the other's directory. */
Test(staging, a_live_run_keeps_its_directory, .init = setup, .fini = teardown)
{
	struct staging a;
	cr_assert_eq(staging_open(&a, ev, root), 0);
	cr_assert(a.staged);
	cr_expect_geq(a.lock_fd, 0, "the directory is locked");
	put(a.dir, "30.0.mtr", "r", 1, 0);
	pid_t c = fork();
	cr_assert_geq(c, 0);
	if (c == 0) {
		struct staging b;
		size_t n = 99;
		if (staging_sweep(root, &n) != 0 || n != 0 || staging_open(&b, ev, root) != 0 ||
		    !b.staged || strcmp(a.dir, b.dir) == 0)
			_exit(1);
		_exit(exists(a.dir) ? 0 : 2);
	}
	int status;
	cr_assert_eq(waitpid(c, &status, 0), c);
	cr_expect(WIFEXITED(status) && WEXITSTATUS(status) == 0, "child status %#x", status);
	char path[PATH_MAX + 16];
	snprintf(path, sizeof path, "%s/30.0.mtr", a.dir);
	cr_expect(exists(path), "the live run's record is there");
}

/* memsup gone, its sentinel still draining: the sentinel's lock (shared
 * by fork) keeps the directory; once both are gone the next sweep
 * removes it, files and all. */
Test(staging, kept_while_the_sentinel_lives_removed_after, .init = setup, .fini = teardown,
     .timeout = 10)
{
	int p[2], q[2];
	char dir[PATH_MAX];
	pid_t sentinel;
	cr_assert_eq(prctl(PR_SET_CHILD_SUBREAPER, 1), 0);
	cr_assert_eq(pipe(p), 0); /* dir and sentinel's pid back */
	cr_assert_eq(pipe(q), 0); /* the sentinel ends at its EOF */
	pid_t memsup = fork();
	cr_assert_geq(memsup, 0);
	if (memsup == 0) {
		struct staging st;
		close(p[0]);
		close(q[1]);
		if (staging_open(&st, ev, root) != 0 || !st.staged)
			_exit(1);
		put(st.dir, "40.0.mtr", "r", 1, 0);
		pid_t s = fork();
		if (s == 0) {
			char b;
			(void)!read(q[0], &b, 1);
			_exit(0);
		}
		(void)!write(p[1], &s, sizeof s);
		(void)!write(p[1], st.dir, sizeof st.dir);
		_exit(0);
	}
	close(p[1]);
	close(q[0]);
	cr_assert_eq(read(p[0], &sentinel, sizeof sentinel), (ssize_t)sizeof sentinel);
	cr_assert_eq(read(p[0], dir, sizeof dir), (ssize_t)sizeof dir);
	close(p[0]);
	int status;
	cr_assert_eq(waitpid(memsup, &status, 0), memsup);
	cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0);

	size_t n = 99;
	cr_assert_eq(staging_sweep(root, &n), 0);
	cr_expect_eq(n, 0);
	cr_expect(exists(dir), "memsup gone, its sentinel not: %s kept", dir);

	close(q[1]); /* the sentinel ends */
	cr_assert_eq(waitpid(sentinel, &status, 0), sentinel);
	cr_assert_eq(staging_sweep(root, &n), 0);
	cr_expect_eq(n, 1);
	cr_expect_not(exists(dir), "both gone: %s removed", dir);
}

/* A name whose pid lives but started at another time: the pid was reused,
 * the memsup that made it is gone.  Names not of this form, a file, and a
 * directory with something not the shim's in it stay. */
Test(staging, a_reused_pid_is_not_its_maker_and_others_stay, .init = setup, .fini = teardown)
{
	char reused[PATH_MAX], old[PATH_MAX], file[PATH_MAX], sub[PATH_MAX], inner[PATH_MAX + 8];
	snprintf(reused, sizeof reused, "%s/memsup-%d-1-abcdef", root, (int)getpid());
	snprintf(old, sizeof old, "%s/memsup-%d-abcdef", root, 999999);
	snprintf(file, sizeof file, "%s/memsup-999999-1-abcdef", root);
	snprintf(sub, sizeof sub, "%s/memsup-999999-2-abcdef", root);
	snprintf(inner, sizeof inner, "%s/d", sub);
	cr_assert_eq(mkdir(reused, 0700), 0);
	cr_assert_eq(mkdir(old, 0700), 0);
	cr_assert_eq(mkdir(sub, 0700), 0);
	cr_assert_eq(mkdir(inner, 0700), 0);
	put(reused, "50.0.mtr", "r", 1, 0);
	put(reused, "50.0.mts", NULL, 0, 0);
	put(root, "memsup-999999-1-abcdef", "f", 1, 0);
	put(sub, "51.0.mtr", "r", 1, 0);
	size_t n = 99;
	cr_assert_eq(staging_sweep(root, &n), 0);
	cr_expect_not(exists(reused), "a reused pid's directory is removed");
	cr_expect(exists(old), "an older memsup's name stays");
	cr_expect(exists(file), "a file of that name stays");
	cr_expect(exists(inner), "what is not the shim's stays");
	cr_expect_eq(n, 2, "%zu", n);
}

/* ---- the same with memsup itself -------------------------------------- */

/* memsup's children as the kernel lists them, into kids; how many. */
static int children_of(pid_t pid, pid_t *kids, int cap)
{
	char path[64], buf[1024];
	snprintf(path, sizeof path, "/proc/%d/task/%d/children", (int)pid, (int)pid);
	slurp(path, buf, sizeof buf);
	int n = 0;
	for (char *s = buf, *end; n < cap; s = end) {
		long v = strtol(s, &end, 10);
		if (end == s)
			break;
		kids[n++] = (pid_t)v;
	}
	return n;
}

/* comm of pid, "" when it is gone. */
static void comm_of(pid_t pid, char *out, size_t cap)
{
	char path[64];
	snprintf(path, sizeof path, "/proc/%d/comm", (int)pid);
	slurp(path, out, cap);
	out[strcspn(out, "\n")] = '\0';
}

/* The one staging directory under dir (its path into out), or 0. */
static int staged_dir(const char *dir, char *out, size_t cap)
{
	int n = 0;
	DIR *d = opendir(dir);
	cr_assert_not_null(d);
	for (struct dirent *e; (e = readdir(d));)
		if (strncmp(e->d_name, STAGING_PREFIX, sizeof STAGING_PREFIX - 1) == 0) {
			snprintf(out, cap, "%s/%s", dir, e->d_name);
			n++;
		}
	closedir(d);
	return n;
}

static void reap_or_kill(pid_t pid)
{
	kill(pid, SIGKILL);
	while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
		;
}

/* SIGKILL to memsup and to its sentinel: the staging directory stays (no
 * one is left to drain it), and the next run under the same root removes
 * it.  MEMSUP_STAGING_DIR keeps it all in the test's directory. */
Test(staging_memsup, killed_with_its_sentinel_the_next_run_removes_it, .init = setup,
     .fini = teardown, .timeout = 30)
{
	struct sup_run a, b;
	char dir[PATH_MAX], other[PATH_MAX];
	pid_t kids[8], sentinel = 0, command = 0;
	cr_assert_eq(prctl(PR_SET_CHILD_SUBREAPER, 1), 0); /* the command comes back to us */
	cr_assert_eq(setenv(STAGING_ENV, root, 1), 0);
	tmp_make(&a);
	const char *args[] = { "--", prog("steady"), "8", "20000", NULL };
	memsup_start(&a, 1, args);
	for (int i = 0; i < 500 && !(sentinel && command); i++) {
		usleep(20000);
		sentinel = command = 0;
		int n = children_of(a.pid, kids, 8);
		for (int k = 0; k < n; k++) {
			char comm[64];
			comm_of(kids[k], comm, sizeof comm);
			struct procfs_stat ps;
			/* the sentinel leads a session of its own; the command
			 * before its exec is a "memsup" too, but does not */
			if (strcmp(comm, "memsup") == 0 &&
			    procfs_read_stat(NULL, kids[k], &ps) == 0 && ps.session == kids[k])
				sentinel = kids[k];
			else if (strcmp(comm, "steady") == 0)
				command = kids[k];
		}
	}
	cr_assert(sentinel && command, "memsup %d: sentinel %d, command %d", (int)a.pid,
		  (int)sentinel, (int)command);
	cr_assert_eq(staged_dir(root, dir, sizeof dir), 1);
	/* the sentinel first: memsup killed first would be drained by it */
	cr_assert_eq(kill(sentinel, SIGKILL), 0);
	cr_assert_eq(kill(a.pid, SIGKILL), 0);
	memsup_wait(&a);
	reap_or_kill(sentinel);
	reap_or_kill(command);
	cr_assert(exists(dir), "%s left behind", dir);

	tmp_make(&b);
	const char *quick[] = { "--", "true", NULL };
	memsup_start(&b, 1, quick);
	cr_expect_eq(memsup_wait(&b), 0, "%s", b.err);
	cr_expect_not(exists(dir), "the next run removed %s", dir);
	cr_expect_eq(staged_dir(root, other, sizeof other), 0, "left: %s", other);
	unsetenv(STAGING_ENV);
}

/* Two runs at once: the second, from start to end, leaves the first's
 * directory alone, and the first ends with its records. */
Test(staging_memsup, two_runs_at_once, .init = setup, .fini = teardown, .timeout = 30)
{
	struct sup_run a, b;
	char dir[PATH_MAX], path[PATH_MAX + 32];
	cr_assert_eq(setenv(STAGING_ENV, root, 1), 0);
	tmp_make(&a);
	const char *slow[] = { "--", prog("steady"), "8", "1500", NULL };
	memsup_start(&a, 1, slow);
	int n = 0;
	for (int i = 0; i < 250 && n == 0; i++) {
		usleep(20000);
		n = staged_dir(root, dir, sizeof dir);
	}
	cr_assert_eq(n, 1);
	tmp_make(&b);
	const char *quick[] = { "--", "true", NULL };
	memsup_start(&b, 1, quick);
	cr_expect_eq(memsup_wait(&b), 0, "%s", b.err);
	cr_expect(exists(dir), "the live run's %s is kept", dir);
	cr_expect_eq(memsup_wait(&a), 0, "%s", a.err);
	snprintf(path, sizeof path, "%s/records.fold", a.dir);
	cr_expect(exists(path), "the first run's records: %s", path);
	cr_expect_not(exists(dir), "drained at its end");
	unsetenv(STAGING_ENV);
}
