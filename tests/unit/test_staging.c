/* test_staging.c: the shim's directory on a tmpfs while the run goes on
 * (supervisor/collect/staging.h): where it is chosen, and what the drain
 * moves into the evidence (whole files, byte for byte, holes kept), what
 * it drops (the empty names of folded images) and what it leaves. */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/magic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>

#include "collect/staging.h"

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
