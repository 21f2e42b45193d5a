/* test_fold.c: the fold file's format (supervisor/collect/fold.h), written
 * then read back: records of every shape come back byte for byte, a torn or
 * damaged entry is refused without touching the ones before it, and the
 * newest copy of an image wins. */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "collect/fold.h"
#include "collect/recordfile.h"

static struct mt_record sample(int32_t pid, uint32_t gen)
{
	struct mt_record r;
	memset(&r, 0, sizeof r);
	r.magic = MT_RECORD_MAGIC;
	r.version = MT_RECORD_VERSION;
	r.record_size = MT_RECORD_SIZE;
	r.pid = pid;
	r.gen = gen;
	r.state = MT_STATE_EXITED;
	r.heap_peak = 123456789;
	r.calls[MT_CALL_MALLOC] = 42;
	r.hist[5] = 7;
	strcpy(r.exe, "/usr/bin/true");
	memcpy(r.argv, "true\0--version", 15);
	r.argv_bytes = 15;
	return r;
}

Test(fold, encode_decode_round_trip)
{
	static unsigned char buf[FOLD_MAX_PAYLOAD];
	struct mt_record a = sample(77, 1), b;
	size_t n = fold_encode(&a, buf);
	cr_expect_lt(n, 400, "a sparse record folds small: %zu bytes", n);
	cr_assert_eq(fold_decode(buf, n, &b), 0);
	cr_expect_eq(memcmp(&a, &b, sizeof a), 0);
	/* every byte non-zero: the worst case fits FOLD_MAX_PAYLOAD */
	memset(&a, 0xA5, sizeof a);
	n = fold_encode(&a, buf);
	cr_expect_leq(n, FOLD_MAX_PAYLOAD);
	cr_assert_eq(fold_decode(buf, n, &b), 0);
	cr_expect_eq(memcmp(&a, &b, sizeof a), 0);
	/* alternating zero and not: lone zeros stay literal */
	unsigned char *p = (unsigned char *)&a;
	for (size_t i = 0; i < sizeof a; i++)
		p[i] = (unsigned char)(i % 3 ? i : 0);
	n = fold_encode(&a, buf);
	cr_assert_eq(fold_decode(buf, n, &b), 0);
	cr_expect_eq(memcmp(&a, &b, sizeof a), 0);
	/* too short, too long */
	cr_expect_eq(fold_decode(buf, n - 1, &b), -EBADMSG);
	buf[n] = 0x80;
	cr_expect_eq(fold_decode(buf, n + 1, &b), -EBADMSG);
}

/* Runs of zeros past what one control byte says (127) take three bytes,
 * up to 65,535 zeros each; a record's empty tables are such runs. */
Test(fold, long_zero_runs)
{
	enum { N = 200000 };
	static unsigned char in[N], out[FOLD_ENCODED_MAX(N)], back[N];
	size_t len;
	in[0] = 1;
	in[128 + 1] = 2;        /* a run of exactly 128 */
	in[70000] = 3;          /* a run longer than one u16 count */
	in[N - 1] = 4;
	size_t n = fold_encode_bytes(in, N, out);
	cr_expect_lt(n, 40, "%zu bytes for four bytes among zeros", n);
	cr_assert_eq(fold_decode_bytes(out, n, back, N, &len), 0);
	cr_expect_eq(len, (size_t)N);
	cr_expect_eq(memcmp(in, back, N), 0);
	/* a long run cut short (literal 1, then 0xff and its count): refused */
	cr_assert_eq(out[2], FOLD_LONG_RUN);
	cr_expect_eq(fold_decode_bytes(out, 3, back, N, &len), -EBADMSG);
	cr_expect_eq(fold_decode_bytes(out, 4, back, N, &len), -EBADMSG);
	/* a record of a short-lived image: its tables cost a few bytes */
	struct mt_record a = sample(5, 0);
	cr_expect_lt(fold_encode(&a, out), 140);
}

/* CRC-32 (IEEE), for hand-made entries. */
static uint32_t crc32_ieee(const unsigned char *p, size_t n)
{
	uint32_t crc = ~0u;
	while (n--) {
		crc ^= *p++;
		for (int k = 0; k < 8; k++)
			crc = (crc >> 1) ^ (0xEDB88320u & (0u - (crc & 1u)));
	}
	return ~crc;
}

/* The encoding as first written, a byte at a time: the word-at-a-time
 * encoder must give the same bytes. */
static size_t reference_encode(const unsigned char *in, size_t n, unsigned char *out)
{
	size_t i = 0, o = 0;
	while (i < n) {
		size_t run = 0;
		while (i + run < n && run < FOLD_LONG_RUN_MAX && in[i + run] == 0)
			run++;
		if (run > FOLD_SHORT_RUN_MAX) {
			out[o++] = FOLD_LONG_RUN;
			out[o++] = (unsigned char)run;
			out[o++] = (unsigned char)(run >> 8);
		} else if (run) {
			out[o++] = (unsigned char)(0x7f + run);
		} else {
			while (i + run < n && run < 128 &&
			       !(in[i + run] == 0 && i + run + 1 < n && in[i + run + 1] == 0))
				run++;
			out[o++] = (unsigned char)(run - 1);
			memcpy(out + o, in + i, run);
			o += run;
		}
		i += run;
	}
	return o;
}

/* Inputs of every length up to 300 and of random shapes (zero runs of 1
 * to 70,000 bytes, lone zeros, literals past 128, ends on either): the
 * same bytes as the reference encoder, decoded back whole, and every
 * entry's CRC the bit-at-a-time CRC-32 of its bytes. */
Test(fold, encoder_matches_reference_and_crc_matches_bitwise)
{
	enum { MAX = 200000 };
	unsigned char *in = malloc(MAX), *got = malloc(FOLD_ENCODED_MAX(MAX)),
		      *want = malloc(FOLD_ENCODED_MAX(MAX)), *back = malloc(MAX),
		      *entry = malloc(FOLD_HEADER_BYTES + FOLD_ENCODED_MAX(MAX) + 4);
	cr_assert(in && got && want && back && entry);
	unsigned seed = 12345;
	for (int round = 0; round < 600; round++) {
		size_t n = 0;
		if (round < 300) {
			n = (size_t)round;
			for (size_t i = 0; i < n; i++)
				in[i] = (unsigned char)(rand_r(&seed) % 4 ? 0 : rand_r(&seed));
		} else {
			size_t want_n = (size_t)rand_r(&seed) % MAX;
			while (n < want_n) {
				size_t len = 1 + (size_t)rand_r(&seed) % (rand_r(&seed) % 8 ? 300 : 70000);
				if (len > want_n - n)
					len = want_n - n;
				int zeros = rand_r(&seed) % 2;
				for (size_t i = 0; i < len; i++)
					in[n + i] = zeros ? 0 : (unsigned char)(1 + rand_r(&seed) % 255);
				if (!zeros && len > 2 && rand_r(&seed) % 2)
					in[n + (size_t)rand_r(&seed) % len] = 0; /* a lone zero */
				n += len;
			}
		}
		size_t g = fold_encode_bytes(in, n, got), w = reference_encode(in, n, want), len;
		cr_assert_eq(g, w, "round %d, %zu bytes: %zu encoded, the reference %zu", round, n,
			     g, w);
		cr_assert_eq(memcmp(got, want, g), 0, "round %d, %zu bytes", round, n);
		cr_assert_eq(fold_decode_bytes(got, g, back, MAX, &len), 0);
		cr_assert_eq(len, n);
		cr_assert_eq(memcmp(back, in, n), 0, "round %d", round);
		size_t e = fold_entry_bytes(UINT32_C(0x3246544d), 7, 1, in, n, entry);
		uint32_t crc;
		memcpy(&crc, entry + e - 4, 4);
		cr_assert_eq(crc, crc32_ieee(entry + 8, e - 12), "round %d: CRC over %zu bytes",
			     round, e - 12);
	}
	free(in);
	free(got);
	free(want);
	free(back);
	free(entry);
}

/* Files of earlier builds ("MTF1": 0xff was 128 zeros, no long runs) are
 * still read, as version 1. */
Test(fold, version_one_entries_still_read)
{
	static unsigned char payload[FOLD_MAX_PAYLOAD], entry[FOLD_MAX_ENTRY];
	struct mt_record a = sample(31, 4), out;
	const unsigned char *in = (const unsigned char *)&a;
	size_t n = 0, i = 0;
	/* the version 1 encoding: zero runs of at most 128 (0xff = 128),
	 * everything else one literal byte at a time */
	while (i < sizeof a) {
		size_t run = 0;
		while (i + run < sizeof a && run < 128 && in[i + run] == 0)
			run++;
		if (run) {
			payload[n++] = (unsigned char)(0x7f + run);
			i += run;
		} else {
			payload[n++] = 0;
			payload[n++] = in[i++];
		}
	}
	uint32_t head[4] = { UINT32_C(0x3146544d), (uint32_t)n, 31, 4 };
	memcpy(entry, head, 16);
	memcpy(entry + 16, payload, n);
	uint32_t crc = crc32_ieee(entry + 8, 8 + n);
	memcpy(entry + 16 + n, &crc, 4);
	char path[] = "/tmp/mtfoldv1XXXXXX";
	int fd = mkstemp(path);
	cr_assert_geq(fd, 0);
	cr_assert_eq(write(fd, entry, 20 + n), (ssize_t)(20 + n));
	off_t next;
	cr_assert_eq(fold_read_at(fd, 0, &out, &next), 1);
	cr_expect_eq(memcmp(&a, &out, sizeof a), 0, "read back as version 1");
	cr_expect_eq(next, (off_t)(20 + n));
	/* the same bytes under an unknown version: refused */
	head[0] = UINT32_C(0x3946544d);
	cr_assert_eq(pwrite(fd, head, 4, 0), 4);
	cr_expect_eq(fold_read_at(fd, 0, &out, &next), -EBADMSG);
	close(fd);
	unlink(path);
}

static int fold_file(char *path)
{
	strcpy(path, "/tmp/mtfoldXXXXXX");
	int fd = mkstemp(path);
	cr_assert_geq(fd, 0);
	return fd;
}

Test(fold, entries_torn_tail_and_damage)
{
	static unsigned char buf[FOLD_MAX_ENTRY];
	char path[32];
	int fd = fold_file(path);
	struct mt_record r1 = sample(10, 0), r2 = sample(11, 2), out;
	off_t off = 0, next;
	size_t n1 = fold_entry(&r1, buf);
	cr_assert_eq(write(fd, buf, n1), (ssize_t)n1);
	size_t n2 = fold_entry(&r2, buf);
	cr_assert_eq(write(fd, buf, n2), (ssize_t)n2);
	/* a third, torn half-way (memsup killed while writing) */
	cr_assert_eq(write(fd, buf, n2 / 2), (ssize_t)(n2 / 2));
	cr_assert_eq(fold_read_at(fd, off, &out, &next), 1);
	cr_expect_eq(memcmp(&out, &r1, sizeof out), 0);
	cr_expect_eq(next, (off_t)n1);
	cr_assert_eq(fold_read_at(fd, next, &out, &next), 1);
	cr_expect_eq(out.pid, 11);
	cr_expect_eq(out.gen, 2);
	cr_expect_eq(fold_read_at(fd, next, &out, &next), -EBADMSG, "torn entry refused");
	/* the end */
	cr_assert_eq(ftruncate(fd, (off_t)(n1 + n2)), 0);
	cr_expect_eq(fold_read_at(fd, (off_t)(n1 + n2), &out, &next), 0);
	/* a flipped byte in the first entry's payload: its CRC says so */
	unsigned char c;
	cr_assert_eq(pread(fd, &c, 1, 40), 1);
	c ^= 0x10;
	cr_assert_eq(pwrite(fd, &c, 1, 40), 1);
	cr_expect_eq(fold_read_at(fd, 0, &out, &next), -EBADMSG);
	close(fd);
	unlink(path);
}

/* An evidence directory: whole files are read where they are, emptied ones
 * from the fold, and the newest fold copy wins. */
Test(fold, read_record_of_an_evidence_directory)
{
	static unsigned char buf[FOLD_MAX_ENTRY];
	char dir[] = "/tmp/mtfoldevXXXXXX", path[128];
	cr_assert_not_null(mkdtemp(dir));
	snprintf(path, sizeof path, "%s/records", dir);
	cr_assert_eq(mkdir(path, 0755), 0);
	struct mt_record whole = sample(20, 0), old = sample(21, 0), newer = sample(21, 0), out;
	newer.heap_peak = 999;
	static struct {
		struct mt_record r;
		char pad[MT_RECORD_SIZE - sizeof(struct mt_record)];
	} file;
	file.r = whole;
	snprintf(path, sizeof path, "%s/records/20.0.mtr", dir);
	int fd = open(path, O_WRONLY | O_CREAT, 0644);
	cr_assert_eq(write(fd, &file, sizeof file), (ssize_t)sizeof file);
	close(fd);
	snprintf(path, sizeof path, "%s/records/21.0.mtr", dir);
	close(open(path, O_WRONLY | O_CREAT, 0644)); /* emptied by a fold */
	snprintf(path, sizeof path, "%s/" EVIDENCE_RECORDS_FOLD, dir);
	fd = open(path, O_WRONLY | O_CREAT | O_APPEND, 0644);
	size_t n = fold_entry(&old, buf);
	cr_assert_eq(write(fd, buf, n), (ssize_t)n);
	n = fold_entry(&newer, buf);
	cr_assert_eq(write(fd, buf, n), (ssize_t)n);
	close(fd);
	int dfd = open(dir, O_RDONLY | O_DIRECTORY);
	cr_assert_eq(fold_read_record(dfd, 20, 0, &out), 0);
	cr_expect_eq(out.heap_peak, whole.heap_peak);
	cr_assert_eq(fold_read_record(dfd, 21, 0, &out), 0);
	cr_expect_eq(out.heap_peak, 999, "the newest copy");
	cr_expect_eq(fold_read_record(dfd, 22, 0, &out), -ENOENT);
	/* the images, each once: 20.0 (its file), 21.0 (named in records/
	 * and twice in the fold), 23.1 (in the fold alone: a staged run
	 * leaves no name) */
	struct mt_record only = sample(23, 1);
	fd = open(path, O_WRONLY | O_APPEND);
	n = fold_entry(&only, buf);
	cr_assert_eq(write(fd, buf, n), (ssize_t)n);
	close(fd);
	cr_assert_eq(fold_read_record(dfd, 23, 1, &out), 0, "no name in records/: the fold");
	struct recordfile_entry *e;
	size_t ne;
	cr_assert_eq(fold_list_images(dfd, &e, &ne), 0);
	cr_assert_eq(ne, 3);
	cr_expect(e[0].pid == 20 && e[0].gen == 0);
	cr_expect(e[1].pid == 21 && e[1].gen == 0);
	cr_expect(e[2].pid == 23 && e[2].gen == 1);
	free(e);
	close(dfd);
	char cmd[160];
	snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
	cr_expect_eq(system(cmd), 0);
}
