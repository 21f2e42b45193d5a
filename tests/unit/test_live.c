/* test_live.c: live.c on hand-made record files -- a valid record is
 * mapped and read live, one without magic waits and is picked up once its
 * magic is stored, wrong ones (version, identity, size) are kept as errors
 * and never trusted, and samples are attributed to the image running at
 * their time across an exec. */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "collect/live.h"
#include "collect/recordfile.h"

static char dir[PATH_MAX];

static void mkdir_tmp(void)
{
	snprintf(dir, sizeof dir, "/tmp/test-live-XXXXXX");
	cr_assert_not_null(mkdtemp(dir));
}

static int put(const char *name, const struct mt_record *r, size_t size)
{
	char path[PATH_MAX + 64];
	snprintf(path, sizeof path, "%s/%s", dir, name);
	int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0644);
	cr_assert_geq(fd, 0);
	cr_assert_eq(ftruncate(fd, (off_t)size), 0);
	if (r)
		cr_assert_eq(pwrite(fd, r, sizeof *r, 0), (ssize_t)sizeof *r);
	return fd;
}

static void rec_init(struct mt_record *r, int32_t pid, uint32_t gen, uint64_t start)
{
	memset(r, 0, sizeof *r);
	r->magic = MT_RECORD_MAGIC;
	r->version = MT_RECORD_VERSION;
	r->record_size = MT_RECORD_SIZE;
	r->pid = pid;
	r->ppid = 1;
	r->gen = gen;
	r->relation = gen ? MT_REL_EXEC : MT_REL_ROOT;
	r->parent_pid = gen ? pid : 0;
	r->start_mono_ns = start;
	r->state = MT_STATE_RUNNING;
}

static const struct live_rec *by_name(struct live *l, const char *name)
{
	for (size_t i = 0; i < live_count(l); i++)
		if (strcmp(live_get(l, i)->name, name) == 0)
			return live_get(l, i);
	return NULL;
}

Test(live, valid_pending_and_bad_files, .timeout = 10)
{
	mkdir_tmp();
	struct live *l;
	cr_assert_eq(live_open(&l, dir), 0);
	struct mt_record r;

	rec_init(&r, 100, 0, 1000);
	r.heap_current = 5;
	int fd0 = put("100.0.mtr", &r, MT_RECORD_SIZE);
	/* 100.1: created and sized, magic not stored yet */
	struct mt_record r1;
	rec_init(&r1, 100, 1, 3200);
	r1.magic = 0;
	int fd1 = put("100.1.mtr", &r1, MT_RECORD_SIZE);
	rec_init(&r, 200, 0, 1000);
	r.version = 99;
	close(put("200.0.mtr", &r, MT_RECORD_SIZE));
	rec_init(&r, 999, 0, 1000); /* identity does not match the name */
	close(put("201.0.mtr", &r, MT_RECORD_SIZE));
	close(put("300.0.mtr", NULL, 100)); /* short: still being created */
	close(put("junk.txt", NULL, 10));

	cr_assert_eq(live_update(l, 0), 0);
	cr_expect_eq(live_count(l), 5, "junk.txt is not a record name");
	cr_expect_eq(live_pending(l), 2);
	const struct live_rec *a = by_name(l, "100.0.mtr");
	cr_assert_not_null(a);
	cr_assert_not_null(a->map);
	cr_expect_eq(live_load(&a->map->heap_current), 5);
	cr_expect_eq(by_name(l, "200.0.mtr")->error, -RECORDFILE_EVERSION);
	cr_expect_null(by_name(l, "200.0.mtr")->map);
	cr_expect_eq(by_name(l, "201.0.mtr")->error, -RECORDFILE_ECORRUPT);
	cr_expect_null(by_name(l, "100.1.mtr")->map);
	cr_expect_eq(by_name(l, "100.1.mtr")->error, 0);

	/* the mapping is live: a store by the writer is seen at once */
	uint64_t h = 77;
	cr_assert_eq(pwrite(fd0, &h, sizeof h, offsetof(struct mt_record, heap_current)), 8);
	cr_expect_eq(live_load(&a->map->heap_current), 77);

	/* attribution: gen 0 runs from 1000; it exec'd at 3000 */
	uint32_t gen = 9;
	cr_expect_null(live_image_at(l, 100, 500, &gen), "nothing had started at 500");
	cr_expect_eq(gen, 0);
	cr_expect_eq(live_image_at(l, 100, 2000, &gen), a);
	cr_expect_eq(gen, 0);
	uint64_t end = 3000;
	uint32_t st = MT_STATE_EXECED;
	cr_assert_eq(pwrite(fd0, &end, 8, offsetof(struct mt_record, end_mono_ns)), 8);
	cr_assert_eq(pwrite(fd0, &st, 4, offsetof(struct mt_record, state)), 4);
	cr_expect_eq(live_image_at(l, 100, 2000, &gen), a, "before the exec: still gen 0");
	cr_expect_null(live_image_at(l, 100, 3500, &gen), "gen 1 has no valid record yet");
	cr_expect_eq(gen, 1);

	/* the writer stores magic: picked up at the next update */
	uint64_t magic = MT_RECORD_MAGIC;
	cr_assert_eq(pwrite(fd1, &magic, 8, 0), 8);
	cr_assert_eq(live_update(l, 0), 0);
	cr_expect_eq(live_pending(l), 1);
	const struct live_rec *b = by_name(l, "100.1.mtr");
	cr_assert_not_null(b->map);
	cr_expect_eq(live_image_at(l, 100, 3500, &gen), b);
	cr_expect_eq(gen, 1);
	/* between the exec and the new image's start: gen 1 all the same */
	cr_expect_eq(live_image_at(l, 100, 3100, &gen), b);

	/* a new file after the first listing is found (inotify or mtime) */
	rec_init(&r, 400, 0, 5000);
	close(put("400.0.mtr", &r, MT_RECORD_SIZE));
	cr_assert_eq(live_update(l, 0), 0);
	cr_expect_not_null(by_name(l, "400.0.mtr"));

	/* final copies: valid ones read, the rest keep their error */
	struct mt_record out;
	for (size_t i = 0; i < live_count(l); i++) {
		const struct live_rec *x = live_get(l, i);
		int rc = live_read_final(l, i, &out);
		if (strcmp(x->name, "300.0.mtr") == 0)
			cr_expect_eq(rc, -RECORDFILE_ESHORT);
		else if (x->map)
			cr_expect_eq(rc, 0, "%s: %d", x->name, rc);
		else
			cr_expect_neq(rc, 0, "%s", x->name);
	}
	close(fd0);
	close(fd1);
	live_close(l);
	char cmd[PATH_MAX + 16];
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
	cr_expect_eq(system(cmd), 0);
}

/* A record file shrunk after it was mapped (the shim never does that; a
 * broken or hostile command could): reading it must not kill memsup with
 * SIGBUS.  The read sees zeros, and the record is not trusted afterwards. */
Test(live, shrunk_record_is_not_trusted, .timeout = 10)
{
	mkdir_tmp();
	struct live *l;
	cr_assert_eq(live_open(&l, dir), 0);
	struct mt_record r;
	rec_init(&r, 500, 0, 1000);
	r.heap_current = 12345;
	int fd = put("500.0.mtr", &r, MT_RECORD_SIZE);
	cr_assert_eq(live_update(l, 0), 0);
	const struct live_rec *a = by_name(l, "500.0.mtr");
	cr_assert_not_null(a->map);
	uint32_t gen;
	cr_assert_eq(live_image_at(l, 500, 2000, &gen), a);
	cr_expect_eq(live_load(&a->map->heap_current), 12345);
	cr_assert_eq(ftruncate(fd, 0), 0);
	cr_expect_eq(live_load(&a->map->heap_current), 0, "the faulting page reads as zeros");
	cr_assert_eq(live_update(l, 0), 0);
	cr_expect_eq(a->error, -RECORDFILE_ESHORT);
	cr_expect_null(live_image_at(l, 500, 2000, &gen), "no longer trusted");
	struct mt_record out;
	cr_expect_eq(live_read_final(l, 0, &out), -RECORDFILE_ESHORT);
	close(fd);
	live_close(l);
	char cmd[PATH_MAX + 16];
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
	cr_expect_eq(system(cmd), 0);
}

/* A child whose record came before the command's: one live_believe()
 * believes both -- the command's own, then the child through it, however
 * the records were listed (the child's is doubted first here). */
Test(live, believed_through_the_command_listed_after, .timeout = 10)
{
	mkdir_tmp();
	struct live *l;
	cr_assert_eq(live_open(&l, dir), 0);
	struct mt_record r;
	rec_init(&r, 301, 0, 2000);
	r.relation = MT_REL_FORK;
	r.parent_pid = 300;
	r.parent_gen = 0;
	close(put("301.0.mtr", &r, MT_RECORD_SIZE));
	live_update(l, 1);
	rec_init(&r, 300, 0, 1000);
	close(put("300.0.mtr", &r, MT_RECORD_SIZE));
	live_update(l, 1);
	/* made-up pids: whatever runs under them here is not looked at */
	live_set_checks(l, NULL, 0);
	live_believe(l, NULL, 0, 300, 0, 0);
	cr_assert_not_null(by_name(l, "300.0.mtr"));
	cr_assert_not_null(by_name(l, "301.0.mtr"));
	cr_expect(by_name(l, "300.0.mtr")->believed, "the command's record");
	cr_expect(by_name(l, "301.0.mtr")->believed, "its child, listed first");
	live_close(l);
	char cmd[PATH_MAX + 16];
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
	cr_expect_eq(system(cmd), 0);
}
