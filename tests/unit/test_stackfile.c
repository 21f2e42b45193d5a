/* test_stackfile.c: the stacks file reader (collect/stackfile.h) on files
 * made here from common/stacks.h's structs: a whole table, the live sets
 * and their re-reads, and every way a file can be short, foreign or lie. */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "collect/stackfile.h"

static char dir[64];
static unsigned char *img;

/* A table of `nstacks` stacks and 2 modules for pid 42 gen 1, in img. */
static void make_table(uint32_t nstacks)
{
	struct mt_stacks_header *h;
	free(img);
	img = calloc(1, MT_STACKS_SIZE);
	cr_assert_not_null(img);
	h = (struct mt_stacks_header *)img;
	h->magic = MT_STACKS_MAGIC;
	mt_stacks_set_layout(h);
	h->pid = 42;
	h->gen = 1;
	h->sample_bytes = 524288;
	h->module_count = 2;
	h->stack_count = nstacks;
	for (uint32_t i = 0; i < 2; i++) {
		struct mt_stacks_module *m = mt_stacks_module(img, i);
		m->start = 0x400000 + i * 0x100000;
		m->end = m->start + 0x10000;
		snprintf(m->path, sizeof m->path, "/lib/mod%u.so", i);
	}
	for (uint32_t i = 0; i < nstacks; i++) {
		struct mt_stack *st = mt_stacks_stack(img, i);
		st->nframes = 2;
		st->modules_seen = 2;
		st->pc[0] = 0x400010 + i;
		st->pc[1] = 0x500010;
		st->live_bytes = i % 3 ? 1000 * i : 0;
		st->live_count = st->live_bytes ? 1 : 0;
		st->peak_bytes = 7 * i;
		st->peak_count = i;
	}
}

/* img's first `len` bytes as DIR/42.1.mts; its fd. */
static int write_file(size_t len)
{
	char path[128];
	int fd;
	snprintf(path, sizeof path, "%s/42.1.mts", dir);
	fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0644);
	cr_assert_geq(fd, 0);
	cr_assert_eq(write(fd, img, len), (ssize_t)len);
	return fd;
}

static size_t used_len(uint32_t nstacks)
{
	return MT_STACKS_STACKS_OFFSET + (size_t)nstacks * MT_STACKS_STACK_BYTES;
}

static void setup(void)
{
	snprintf(dir, sizeof dir, "/tmp/mtstackfile.XXXXXX");
	cr_assert_not_null(mkdtemp(dir));
}

static void teardown(void)
{
	char cmd[96];
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
	if (system(cmd) != 0)
		cr_log_warn("could not remove %s", dir);
	free(img);
	img = NULL;
}

TestSuite(stackfile, .init = setup, .fini = teardown);

Test(stackfile, whole_table)
{
	struct stackfile f;
	int dfd;
	make_table(10);
	close(write_file(used_len(10)));
	dfd = open(dir, O_RDONLY | O_DIRECTORY);
	cr_assert_eq(stackfile_read_at(dfd, 42, 1, &f), 0);
	cr_expect_eq(f.h.stack_count, 10);
	cr_expect_eq(f.h.module_count, 2);
	cr_expect_str_eq(f.modules[1].path, "/lib/mod1.so");
	cr_expect_eq(f.stacks[5].peak_bytes, 35);
	cr_expect_eq(f.stacks[5].pc[0], 0x400015);
	cr_expect(f.peak_consistent);
	stackfile_free(&f);
	cr_expect_eq(stackfile_read_at(dfd, 42, 2, &f), -ENOENT);
	close(dfd);
}

Test(stackfile, not_to_be_trusted)
{
	struct stackfile f;
	struct mt_stacks_header *h;
	int fd;
	make_table(4);
	h = (struct mt_stacks_header *)img;
	fd = write_file(100);
	cr_expect_eq(stackfile_read_fd(fd, 42, 1, &f), -STACKFILE_ESHORT);
	close(fd);
	h->magic = 0;
	fd = write_file(used_len(4));
	cr_expect_eq(stackfile_read_fd(fd, 42, 1, &f), -STACKFILE_EMAGIC);
	close(fd);
	h->magic = MT_STACKS_MAGIC;
	h->version = 9;
	fd = write_file(used_len(4));
	cr_expect_eq(stackfile_read_fd(fd, 42, 1, &f), -STACKFILE_EVERSION);
	close(fd);
	h->version = MT_STACKS_VERSION;
	h->stack_bytes = 320;
	fd = write_file(used_len(4));
	cr_expect_eq(stackfile_read_fd(fd, 42, 1, &f), -STACKFILE_ELAYOUT);
	close(fd);
	h->stack_bytes = MT_STACKS_STACK_BYTES;
	fd = write_file(used_len(4));
	cr_expect_eq(stackfile_read_fd(fd, 43, 1, &f), -STACKFILE_EIDENTITY);
	cr_expect_eq(stackfile_read_fd(fd, 42, 0, &f), -STACKFILE_EIDENTITY);
	close(fd);
	cr_expect_str_eq(stackfile_strerror(-STACKFILE_EMAGIC), "not a stacks file (no magic)");
}

/* Counts beyond the file, beyond the slots, frames beyond the array,
 * paths without their NUL: cut to what is there. */
Test(stackfile, lies_are_cut_short)
{
	struct stackfile f;
	struct mt_stacks_header *h;
	int fd;
	make_table(8);
	h = (struct mt_stacks_header *)img;
	h->stack_count = 100000;
	h->module_count = 5000;
	mt_stacks_stack(img, 2)->nframes = 999;
	mt_stacks_stack(img, 3)->modules_seen = 5000;
	memset(mt_stacks_module(img, 0)->path, 'x', MT_STACKS_PATH_BYTES);
	mt_stacks_module(img, 1)->build_id_len = 4000;
	fd = write_file(used_len(8) + 100);
	cr_assert_eq(stackfile_read_fd(fd, 42, 1, &f), 0);
	cr_expect_eq(f.h.stack_count, 8, "what the file holds");
	cr_expect_eq(f.h.module_count, MT_STACKS_MODULE_SLOTS, "the slots");
	cr_expect_eq(f.stacks[2].nframes, MT_STACKS_FRAMES);
	cr_expect_eq(f.stacks[3].modules_seen, f.h.module_count);
	cr_expect_eq(strlen(f.modules[0].path), MT_STACKS_PATH_BYTES - 1);
	cr_expect_eq(f.modules[1].build_id_len, 0);
	stackfile_free(&f);
	close(fd);
	/* a header alone: no module, no stack */
	h->stack_count = 3;
	h->module_count = 3;
	fd = write_file(MT_STACKS_HEADER_BYTES);
	cr_assert_eq(stackfile_read_fd(fd, 42, 1, &f), 0);
	cr_expect_eq(f.h.stack_count, 0);
	cr_expect_eq(f.h.module_count, 0);
	stackfile_free(&f);
	close(fd);
}

/* A writer in the middle of a peak snapshot (odd sequence): read all the
 * same, said to be inconsistent. */
Test(stackfile, torn_peak_is_said)
{
	struct stackfile f;
	int fd;
	make_table(4);
	((struct mt_stacks_header *)img)->peak_seq = 7;
	fd = write_file(used_len(4));
	cr_assert_eq(stackfile_read_fd(fd, 42, 1, &f), 0);
	cr_expect(!f.peak_consistent);
	stackfile_free(&f);
	close(fd);
}

Test(stackfile, live_sets_are_read_again_only_when_they_moved)
{
	struct stackfile_set set = { 0 }, copy = { 0 };
	struct mt_stacks_header *h;
	int fd, changed;
	make_table(300); /* more than one read of the table */
	h = (struct mt_stacks_header *)img;
	h->samples = 5;
	fd = write_file(used_len(300));
	cr_assert_eq(stackfile_read_live(fd, 42, 1, &set, &changed), 0);
	cr_expect(changed);
	cr_expect_eq(set.n, 200, "the stacks with live bytes: i %% 3 != 0");
	cr_expect_eq(set.e[0].stack, 1);
	cr_expect_eq(set.e[0].bytes, 1000);
	cr_expect_eq(set.e[199].stack, 299);
	cr_assert_eq(stackfile_read_live(fd, 42, 1, &set, &changed), 0);
	cr_expect(!changed, "the same events: not read again");
	close(fd);
	mt_stacks_stack(img, 1)->live_bytes = 0;
	mt_stacks_stack(img, 1)->live_count = 0;
	h->sampled_frees = 1;
	fd = write_file(used_len(300));
	cr_assert_eq(stackfile_read_live(fd, 42, 1, &set, &changed), 0);
	cr_expect(changed);
	cr_expect_eq(set.n, 199);
	cr_assert_eq(stackfile_set_copy(&copy, &set), 0);
	cr_expect_eq(copy.n, 199);
	cr_expect_eq(copy.e[0].stack, 2);
	stackfile_set_free(&set);
	stackfile_set_free(&copy);
	close(fd);
}

Test(stackfile, names)
{
	int32_t pid;
	uint32_t gen;
	char buf[48];
	stackfile_name(buf, sizeof buf, 123, 4);
	cr_expect_str_eq(buf, "123.4.mts");
	cr_expect_eq(stackfile_parse_name("123.4.mts", &pid, &gen), 0);
	cr_expect_eq(pid, 123);
	cr_expect_eq(gen, 4);
	const char *bad[] = { "123.4.mtr", "0.1.mts", "-1.0.mts", "12.mts", "1.2.mtsx",
			      "99999999999.0.mts", "1..mts", ".1.mts", "012.3.mts" };
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
		cr_expect_eq(stackfile_parse_name(bad[i], &pid, &gen), -STACKFILE_ENAME, "%s", bad[i]);
}
