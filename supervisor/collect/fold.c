/* fold.c: the fold file's format, both ways (see fold.h). */
#include "collect/fold.h"
#include "collect/recordfile.h"
#include "evidence/files.h"
#include "invariant.h"
#include "base/grow.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void fold_put32(unsigned char *p, uint32_t v)
{
	p[0] = (unsigned char)v;
	p[1] = (unsigned char)(v >> 8);
	p[2] = (unsigned char)(v >> 16);
	p[3] = (unsigned char)(v >> 24);
}

static uint32_t fold_get32(const unsigned char *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* CRC-32 (IEEE 802.3, reflected, zlib's crc32: what memsup.py checks),
 * eight bytes a step through eight tables ("slicing by 8"), made at the
 * first call.  A bit at a time it took about 0.1 s of memsup's 0.68 s of
 * CPU over a make -j2 of this project (perf), packing the stacks files and
 * reading them back; a byte at a time still a third of packing one.  The
 * supervisor is single-threaded. */
static uint32_t fold_crc(uint32_t crc, const unsigned char *p, size_t n)
{
	static uint32_t t[8][256];
	static int made;
	if (!made) {
		for (uint32_t b = 0; b < 256; b++) {
			uint32_t c = b;
			for (int k = 0; k < 8; k++)
				c = (c >> 1) ^ (0xEDB88320u & (0u - (c & 1u)));
			t[0][b] = c;
		}
		for (int k = 1; k < 8; k++)
			for (uint32_t b = 0; b < 256; b++)
				t[k][b] = (t[k - 1][b] >> 8) ^ t[0][t[k - 1][b] & 0xffu];
		made = 1;
	}
	crc = ~crc;
	for (; n >= 8; n -= 8, p += 8) {
		uint32_t lo = crc ^ fold_get32(p), hi = fold_get32(p + 4);
		crc = t[7][lo & 0xffu] ^ t[6][(lo >> 8) & 0xffu] ^ t[5][(lo >> 16) & 0xffu] ^
		      t[4][lo >> 24] ^ t[3][hi & 0xffu] ^ t[2][(hi >> 8) & 0xffu] ^
		      t[1][(hi >> 16) & 0xffu] ^ t[0][hi >> 24];
	}
	while (n--)
		crc = (crc >> 8) ^ t[0][(crc ^ *p++) & 0xffu];
	return ~crc;
}

/* How many zeros start p, at most max: eight bytes a step while it can. */
static size_t zero_run(const unsigned char *p, size_t max)
{
	size_t r = 0;
	uint64_t w;
	while (max - r >= 8) {
		memcpy(&w, p + r, 8);
		if (w)
			break;
		r += 8;
	}
	while (r < max && p[r] == 0)
		r++;
	return r;
}

/* How many bytes from p (p[0] not zero) go into one literal: up to the
 * next two zeros in a row (a lone zero costs less inside the literal), at
 * most max; avail bytes are there to look at. */
static size_t literal_len(const unsigned char *p, size_t max, size_t avail)
{
	size_t l = 1;
	while (l < max) {
		const unsigned char *z = memchr(p + l, 0, max - l);
		if (!z)
			return max;
		l = (size_t)(z - p);
		if (l + 1 < avail && p[l + 1] == 0)
			return l;
		l++;
	}
	return max;
}

size_t fold_encode_bytes(const void *src, size_t n, unsigned char *out)
{
	const unsigned char *in = src;
	size_t i = 0, o = 0;
	while (i < n) {
		size_t left = n - i;
		size_t run = zero_run(in + i, left < FOLD_LONG_RUN_MAX ? left : FOLD_LONG_RUN_MAX);
		if (run > FOLD_SHORT_RUN_MAX) {
			/* three bytes for a long run: a record's empty marker
			 * and histogram tables are thousands of zeros */
			out[o++] = FOLD_LONG_RUN;
			out[o++] = (unsigned char)run;
			out[o++] = (unsigned char)(run >> 8);
			i += run;
			continue;
		}
		if (run) {
			out[o++] = (unsigned char)(0x7f + run);
			i += run;
			continue;
		}
		size_t lit = literal_len(in + i, left < 128 ? left : 128, left);
		MT_ASSERT(lit >= 1 && lit <= 128);
		out[o++] = (unsigned char)(lit - 1);
		memcpy(out + o, in + i, lit);
		o += lit;
		i += lit;
	}
	/* fold.h: the caller's buffer holds FOLD_ENCODED_MAX(n) bytes, and
	 * fold_read_entry refuses an entry any longer */
	MT_ASSERT_MSG(o <= FOLD_ENCODED_MAX(n), "an encoding within its bound");
	return o;
}

/* Version 1 (the magic's last byte '1') knew no long runs: 0xff was 128
 * zeros there. */
static int decode_version(unsigned version, const unsigned char *in, size_t n, void *dst,
			  size_t cap, size_t *len)
{
	unsigned char *out = dst;
	size_t i = 0, o = 0;
	while (i < n) {
		unsigned c = in[i++];
		size_t run = c < 0x80 ? c + 1u : c - 0x7fu;
		if (c == FOLD_LONG_RUN && version >= 2) {
			if (n - i < 2)
				return -EBADMSG;
			run = (size_t)in[i] | (size_t)in[i + 1] << 8;
			i += 2;
		}
		if (run > cap - o)
			return -EBADMSG;
		if (c < 0x80) {
			if (run > n - i)
				return -EBADMSG;
			memcpy(out + o, in + i, run);
			i += run;
		} else {
			memset(out + o, 0, run);
		}
		o += run;
	}
	MT_ASSERT(o <= cap);
	*len = o;
	return 0;
}

int fold_decode_bytes(const unsigned char *in, size_t n, void *dst, size_t cap, size_t *len)
{
	return decode_version(FOLD_VERSION, in, n, dst, cap, len);
}

/* The version of a magic read from a file, if it is one of the family of
 * `magic` (either version); 0 if not. */
static unsigned magic_version(uint32_t got, uint32_t magic)
{
	unsigned v = (got >> 24) - '0';
	return FOLD_MAGIC_FAMILY(got) == FOLD_MAGIC_FAMILY(magic) && v >= 1 && v <= FOLD_VERSION
		? v : 0;
}

size_t fold_encode(const struct mt_record *rec, unsigned char *out)
{
	return fold_encode_bytes(rec, FOLD_RECORD_BYTES, out);
}

int fold_decode(const unsigned char *in, size_t n, struct mt_record *out)
{
	size_t len;
	int rc = fold_decode_bytes(in, n, out, FOLD_RECORD_BYTES, &len);
	return rc == 0 && len == FOLD_RECORD_BYTES ? 0 : -EBADMSG;
}

size_t fold_entry_bytes(uint32_t magic, int32_t pid, uint32_t gen, const void *src, size_t n,
			unsigned char *buf)
{
	size_t e = fold_encode_bytes(src, n, buf + FOLD_HEADER_BYTES);
	fold_put32(buf, magic);
	fold_put32(buf + 4, (uint32_t)e);
	fold_put32(buf + 8, (uint32_t)pid);
	fold_put32(buf + 12, gen);
	fold_put32(buf + FOLD_HEADER_BYTES + e, fold_crc(0, buf + 8, 8 + e));
	return FOLD_HEADER_BYTES + e + 4;
}

size_t fold_entry(const struct mt_record *r, unsigned char *buf)
{
	size_t len = fold_entry_bytes(FOLD_MAGIC, r->pid, r->gen, r, FOLD_RECORD_BYTES, buf);
	MT_ASSERT_MSG(len <= FOLD_MAX_ENTRY, "a record's entry within FOLD_MAX_ENTRY");
	return len;
}

int fold_read_entry(int fd, off_t off, uint32_t magic, size_t cap, void *dst, size_t *len,
		    int32_t *pid, uint32_t *gen, off_t *next)
{
	unsigned char head[FOLD_HEADER_BYTES];
	ssize_t got = recordfile_pread_full(fd, head, sizeof head, off);
	if (got < 0)
		return (int)got;
	if (got == 0)
		return 0;
	unsigned version = (size_t)got < sizeof head ? 0 : magic_version(fold_get32(head), magic);
	if (!version)
		return -EBADMSG;
	uint32_t n = fold_get32(head + 4);
	if (n > FOLD_ENCODED_MAX(cap))
		return -EBADMSG;
	/* pid and gen, then the payload and its CRC: the CRC's input in one
	 * piece */
	unsigned char *buf = malloc(8u + n + 4u);
	if (!buf)
		return -ENOMEM;
	memcpy(buf, head + 8, 8);
	got = recordfile_pread_full(fd, buf + 8, n + 4u, off + (off_t)sizeof head);
	int rc = 1;
	if (got < 0)
		rc = (int)got;
	else if ((size_t)got < n + 4u || fold_get32(buf + 8 + n) != fold_crc(0, buf, 8 + n) ||
		 decode_version(version, buf + 8, n, dst, cap, len) < 0)
		rc = -EBADMSG;
	free(buf);
	if (rc < 0)
		return rc;
	*pid = (int32_t)fold_get32(head + 8);
	*gen = fold_get32(head + 12);
	*next = off + (off_t)(sizeof head + n + 4u);
	return 1;
}

int fold_peek_entry(int fd, off_t off, uint32_t magic, int32_t *pid, uint32_t *gen, off_t *next)
{
	unsigned char head[FOLD_HEADER_BYTES];
	ssize_t got = recordfile_pread_full(fd, head, sizeof head, off);
	if (got < 0)
		return (int)got;
	if (got == 0)
		return 0;
	if ((size_t)got < sizeof head || !magic_version(fold_get32(head), magic))
		return -EBADMSG;
	*pid = (int32_t)fold_get32(head + 8);
	*gen = fold_get32(head + 12);
	*next = off + (off_t)(sizeof head + fold_get32(head + 4) + 4u);
	return 1;
}

int fold_read_at(int fd, off_t off, struct mt_record *out, off_t *next)
{
	int32_t pid;
	uint32_t gen;
	size_t len;
	int rc = fold_read_entry(fd, off, FOLD_MAGIC, FOLD_RECORD_BYTES, out, &len, &pid, &gen,
				 next);
	if (rc <= 0)
		return rc;
	if (len != FOLD_RECORD_BYTES || out->pid != pid || out->gen != gen)
		return -EBADMSG;
	return 1;
}

int fold_read_record(int evdirfd, int32_t pid, uint32_t gen, struct mt_record *out)
{
	char name[64];
	struct mt_record *r = malloc(sizeof *r);
	int found = 0, rc, fd;
	off_t off = 0, next;
	if (!r)
		return -ENOMEM;
	snprintf(name, sizeof name, EVIDENCE_RECORDS_DIR "/%d.%u.mtr", (int)pid, (unsigned)gen);
	rc = recordfile_read_at(evdirfd, name, out);
	if (rc == 0)
		rc = filecheck_record_of(out, pid, gen); /* of the image its name says */
	/* no file (the run's records were staged: staging.h) or an empty
	 * one: the fold has it */
	int named = rc != -ENOENT;
	if (rc == 0 || (rc != -RECORDFILE_ESHORT && named)) {
		free(r);
		return rc; /* whole there, or not a record for another reason */
	}
	fd = openat(evdirfd, EVIDENCE_RECORDS_FOLD, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		rc = -errno;
		free(r);
		return rc != -ENOENT ? rc : named ? -RECORDFILE_ESHORT : -ENOENT;
	}
	/* the newest copy: memsup killed between a fold and the emptying of
	 * the file folds the same image again */
	while ((rc = fold_read_at(fd, off, r, &next)) > 0) {
		if (r->pid == pid && r->gen == gen) {
			memcpy(out, r, sizeof *out);
			found = 1;
		}
		off = next;
	}
	close(fd);
	free(r);
	if (!found)
		return named ? -RECORDFILE_ESHORT : -ENOENT;
	return filecheck_record(out);
}

static int add_image(struct recordfile_entry **v, size_t *n, size_t *cap, int32_t pid,
		     uint32_t gen)
{
	if (grow_array((void **)v, cap, *n + 1, sizeof **v) < 0)
		return -ENOMEM;
	(*v)[(*n)++] = (struct recordfile_entry){ pid, gen };
	return 0;
}

int fold_list_images(int evdirfd, struct recordfile_entry **out, size_t *count)
{
	struct recordfile_entry *v = NULL;
	size_t n = 0, cap = 0;
	int rc = 0, fd;
	*out = NULL;
	*count = 0;
	if ((fd = openat(evdirfd, EVIDENCE_RECORDS_FOLD, O_RDONLY | O_CLOEXEC)) >= 0) {
		off_t off = 0, next;
		int32_t pid;
		uint32_t gen;
		while (!rc && fold_peek_entry(fd, off, FOLD_MAGIC, &pid, &gen, &next) == 1) {
			rc = add_image(&v, &n, &cap, pid, gen);
			off = next;
		}
		close(fd);
	} else if (errno != ENOENT) {
		return -errno;
	}
	int dfd = openat(evdirfd, EVIDENCE_RECORDS_DIR, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	DIR *d = dfd >= 0 ? fdopendir(dfd) : NULL;
	if (!d && dfd >= 0)
		close(dfd);
	for (struct dirent *e; !rc && d && (e = readdir(d));) {
		int32_t pid;
		uint32_t gen;
		if (recordfile_parse_name(e->d_name, &pid, &gen) == 0)
			rc = add_image(&v, &n, &cap, pid, gen);
	}
	if (d)
		closedir(d);
	if (rc) {
		free(v);
		return rc;
	}
	size_t k = 0;
	if (n) {
		qsort(v, n, sizeof *v, recordfile_entry_cmp);
		for (size_t i = 0; i < n; i++)
			if (!k || recordfile_entry_cmp(&v[k - 1], &v[i]) != 0)
				v[k++] = v[i];
	}
	*out = v;
	*count = k;
	return 0;
}

