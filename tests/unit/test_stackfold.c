/* test_stackfold.c: packing stacks files into stacks.fold
 * (supervisor/collect/stackfold.h): a file of this layout comes back as
 * its published part byte for byte and leaves records/; anything else
 * stays where it was; a torn entry is refused without touching the ones
 * before it. */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "collect/stackfile.h"
#include "collect/stackfold.h"
#include "evidence/files.h"
#include "stacks.h"

static char dir[64];
static int evfd = -1, recfd = -1;

static void setup(void)
{
	snprintf(dir, sizeof dir, "/tmp/mt-stackfold.XXXXXX");
	cr_assert_not_null(mkdtemp(dir));
	evfd = open(dir, O_RDONLY | O_DIRECTORY);
	cr_assert_geq(evfd, 0);
	cr_assert_eq(mkdirat(evfd, "records", 0777), 0);
	recfd = openat(evfd, "records", O_RDONLY | O_DIRECTORY);
	cr_assert_geq(recfd, 0);
}

static void teardown(void)
{
	char cmd[128];
	close(recfd);
	close(evfd);
	snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
	(void)!system(cmd);
}

/* A stacks file of image (pid, gen) with nmod modules and nstack stacks
 * published, written sparse at the layout's offsets, with a marker byte
 * pattern in each entry and one more unpublished (not packed) past each
 * count.  Its published part (what the fold keeps) into *part. */
static void write_stacks(const char *name, int32_t pid, uint32_t gen, uint32_t nmod,
			 uint32_t nstack, unsigned char **part, size_t *len)
{
	struct mt_stacks_header h;
	memset(&h, 0, sizeof h);
	h.magic = MT_STACKS_MAGIC;
	h.version = MT_STACKS_VERSION;
	h.header_bytes = MT_STACKS_HEADER_BYTES;
	h.module_bytes = MT_STACKS_MODULE_BYTES;
	h.module_slots = MT_STACKS_MODULE_SLOTS;
	h.stack_bytes = MT_STACKS_STACK_BYTES;
	h.stack_slots = MT_STACKS_SLOTS;
	h.max_frames = MT_STACKS_FRAMES;
	h.pid = pid;
	h.gen = gen;
	h.sample_bytes = 524288;
	h.module_count = nmod;
	h.stack_count = nstack;
	h.samples = 99;
	int fd = openat(recfd, name, O_RDWR | O_CREAT | O_TRUNC, 0666);
	cr_assert_geq(fd, 0);
	*len = MT_STACKS_HEADER_BYTES + (size_t)nmod * MT_STACKS_MODULE_BYTES +
	       (size_t)nstack * MT_STACKS_STACK_BYTES;
	unsigned char *p = calloc(1, *len), *q = p;
	memcpy(q, &h, sizeof h);
	q += MT_STACKS_HEADER_BYTES;
	cr_assert_eq(pwrite(fd, p, MT_STACKS_HEADER_BYTES, 0), MT_STACKS_HEADER_BYTES);
	unsigned char entry[MT_STACKS_MODULE_BYTES > MT_STACKS_STACK_BYTES ?
			    MT_STACKS_MODULE_BYTES : MT_STACKS_STACK_BYTES];
	for (uint32_t i = 0; i <= nmod; i++) {
		memset(entry, 0, sizeof entry);
		snprintf((char *)entry + 40, 64, "/lib/module-%u.so", i);
		off_t at = MT_STACKS_MODULES_OFFSET + (off_t)i * MT_STACKS_MODULE_BYTES;
		cr_assert_eq(pwrite(fd, entry, MT_STACKS_MODULE_BYTES, at), MT_STACKS_MODULE_BYTES);
		if (i < nmod) {
			memcpy(q, entry, MT_STACKS_MODULE_BYTES);
			q += MT_STACKS_MODULE_BYTES;
		}
	}
	for (uint32_t i = 0; i <= nstack; i++) {
		memset(entry, 0, sizeof entry);
		for (uint32_t k = 0; k < 8; k++)
			entry[k * 8] = (unsigned char)(i * 8 + k + 1);
		off_t at = MT_STACKS_STACKS_OFFSET + (off_t)i * MT_STACKS_STACK_BYTES;
		cr_assert_eq(pwrite(fd, entry, MT_STACKS_STACK_BYTES, at), MT_STACKS_STACK_BYTES);
		if (i < nstack) {
			memcpy(q, entry, MT_STACKS_STACK_BYTES);
			q += MT_STACKS_STACK_BYTES;
		}
	}
	close(fd);
	*part = p;
}

static int exists(int dfd, const char *name)
{
	struct stat st;
	return fstatat(dfd, name, &st, 0) == 0;
}

Test(stackfold, packs_published_part_and_leaves_the_rest, .init = setup, .fini = teardown)
{
	unsigned char *a, *b;
	size_t alen, blen, packed = 9, left = 9;
	write_stacks("41.0.mts", 41, 0, 3, 10, &a, &alen);
	write_stacks("41.1.mts", 41, 1, 0, 1, &b, &blen);
	/* not packed: foreign bytes under a stacks name, a stacks file whose
	 * name is not its identity, a record */
	int fd = openat(recfd, "42.0.mts", O_WRONLY | O_CREAT, 0666);
	cr_assert_eq(write(fd, "not a stacks file", 17), 17);
	close(fd);
	unsigned char *c;
	size_t clen;
	write_stacks("43.0.mts", 44, 0, 1, 1, &c, &clen);
	fd = openat(recfd, "41.0.mtr", O_WRONLY | O_CREAT, 0666);
	close(fd);

	cr_assert_eq(stackfold_pack(recfd, evfd, &packed, &left), 0);
	cr_expect_eq(packed, 2);
	cr_expect_eq(left, 2);
	cr_expect(!exists(recfd, "41.0.mts"));
	cr_expect(!exists(recfd, "41.1.mts"));
	cr_expect(exists(recfd, "42.0.mts"));
	cr_expect(exists(recfd, "43.0.mts"));
	cr_expect(exists(recfd, "41.0.mtr"));

	fd = openat(evfd, EVIDENCE_STACKS_FOLD, O_RDWR);
	cr_assert_geq(fd, 0);
	struct stat st;
	cr_assert_eq(fstat(fd, &st), 0);
	cr_expect_lt(st.st_size, 2000, "zero runs encoded: %lld bytes", (long long)st.st_size);
	struct stackfold_image im[2];
	off_t off = 0, next;
	for (int i = 0; i < 2; i++) {
		cr_assert_eq(stackfold_read_at(fd, off, &im[i], &next), 1);
		off = next;
	}
	cr_expect_eq(stackfold_read_at(fd, off, &im[0], &next), 0, "end of file");
	/* readdir's order is the directory's: find each by its identity */
	for (int i = 0; i < 2; i++) {
		const unsigned char *want = im[i].gen == 0 ? a : b;
		size_t wlen = im[i].gen == 0 ? alen : blen;
		cr_expect_eq(im[i].pid, 41);
		cr_assert_eq(im[i].len, wlen);
		cr_expect_eq(memcmp(im[i].bytes, want, wlen), 0, "image 41.%u", im[i].gen);
		free(im[i].bytes);
	}
	cr_expect_neq(im[0].gen, im[1].gen);

	/* a torn last entry: refused, the whole ones before it still read */
	cr_assert_eq(ftruncate(fd, st.st_size - 3), 0);
	off = 0;
	cr_assert_eq(stackfold_read_at(fd, off, &im[0], &next), 1);
	free(im[0].bytes);
	cr_expect_eq(stackfold_read_at(fd, next, &im[1], &off), -EBADMSG);
	close(fd);
	free(a);
	free(b);
	free(c);
}

Test(stackfold, nothing_to_pack_makes_no_file, .init = setup, .fini = teardown)
{
	size_t packed = 9, left = 9;
	cr_assert_eq(stackfold_pack(recfd, evfd, &packed, &left), 0);
	cr_expect_eq(packed, 0);
	cr_expect_eq(left, 0);
	cr_expect(!exists(evfd, EVIDENCE_STACKS_FOLD));
}

/* What live.c does as each image ends: one image packed, its file gone,
 * the others untouched; then read back by image through the index as a
 * stacks file whose entries are those a read of the file gave, the newest
 * entry of an image packed twice winning (memsup killed between the write
 * and the unlink packs it again). */
Test(stackfold, packs_one_image_and_reads_it_back_by_image, .init = setup, .fini = teardown)
{
	unsigned char *a, *b, *a2;
	size_t alen, blen, a2len;
	write_stacks("7.0.mts", 7, 0, 2, 5, &a, &alen);
	write_stacks("8.3.mts", 8, 3, 1, 2, &b, &blen);
	int fold = openat(evfd, EVIDENCE_STACKS_FOLD, O_WRONLY | O_APPEND | O_CREAT, 0666);
	cr_assert_geq(fold, 0);
	cr_assert_eq(stackfold_pack_image(recfd, fold, 7, 0), 1);
	cr_expect(!exists(recfd, "7.0.mts"), "packed, so removed");
	cr_expect(exists(recfd, "8.3.mts"), "another image's file stays");
	cr_expect_eq(stackfold_pack_image(recfd, fold, 9, 0), 0, "no file: nothing to pack");
	/* image 7 packed again, with more stacks: the newer entry counts */
	write_stacks("7.0.mts", 7, 0, 2, 6, &a2, &a2len);
	struct stackfile orig;
	cr_assert_eq(stackfile_read_at(recfd, 7, 0, &orig), 0);
	cr_assert_eq(orig.h.stack_count, 6);
	cr_assert_eq(stackfold_pack_image(recfd, fold, 7, 0), 1);
	cr_assert_eq(stackfold_pack_image(recfd, fold, 8, 3), 1);
	close(fold);

	struct stackfold_index ix;
	struct stackfile f;
	cr_assert_eq(stackfold_index_open(&ix, evfd), 0);
	cr_expect_eq(ix.n, 3);
	cr_assert_eq(stackfold_index_read(&ix, 7, 0, &f), 0);
	cr_expect_eq(f.h.module_count, 2);
	cr_expect_eq(f.h.stack_count, 6, "the newest entry: %u stacks", f.h.stack_count);
	/* what reading the file itself gave, entry for entry */
	cr_expect_eq(memcmp(f.modules, orig.modules, 2 * MT_STACKS_MODULE_BYTES), 0);
	cr_expect_eq(memcmp(f.stacks, orig.stacks, 6 * MT_STACKS_STACK_BYTES), 0);
	cr_expect_eq(f.peak_consistent, orig.peak_consistent);
	stackfile_free(&orig);
	stackfile_free(&f);
	cr_assert_eq(stackfold_index_read(&ix, 8, 3, &f), 0);
	cr_expect_eq(f.h.stack_count, 2);
	cr_expect_eq(f.stacks[1].nframes <= MT_STACKS_FRAMES, 1);
	stackfile_free(&f);
	cr_expect_eq(stackfold_index_read(&ix, 8, 2, &f), -ENOENT);
	cr_expect_eq(stackfold_index_read(&ix, 6, 0, &f), -ENOENT);
	cr_expect_eq(stackfold_index_read(&ix, 9, 0, &f), -ENOENT);
	stackfold_index_close(&ix);

	/* no stacks.fold at all: an empty index, every image -ENOENT */
	cr_assert_eq(unlinkat(evfd, EVIDENCE_STACKS_FOLD, 0), 0);
	cr_assert_eq(stackfold_index_open(&ix, evfd), 0);
	cr_expect_eq(ix.n, 0);
	cr_expect_eq(stackfold_index_read(&ix, 7, 0, &f), -ENOENT);
	stackfold_index_close(&ix);
	free(a);
	free(a2);
	free(b);
}
