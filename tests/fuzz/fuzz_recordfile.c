/* fuzz_recordfile.c: libFuzzer harness for the record file reader
 * (supervisor/collect/recordfile.h): a truncated, corrupted or hostile
 * record in MEMTRACE_DIR must never crash memsup nor mislead it.
 *
 * The input's first byte picks how the rest becomes a file (in a memfd, read
 * back with recordfile_read_fd):
 *   bit 2 clear: the bytes are overlaid on a zeroed MT_RECORD_SIZE image,
 *                or, when bits 0-1 are also clear, written as they are (any
 *                size: the short/long checks);
 *   bit 2 set:   the bytes are patches (offset: 2 bytes LE, length: 1 byte,
 *                data) applied to a plausible record, so that small inputs
 *                reach argv_bytes, the markers and the exit block;
 *   bit 0:       force the magic; bit 1: force version and record_size.
 * An accepted record must carry the right magic, version and size, valid
 * pid/state/relation, NUL-terminated strings and a clamped argv_bytes, and
 * must otherwise be byte for byte what the file holds (the reader may only
 * normalize, never invent).  The same bytes, as a NUL-terminated string, go
 * through recordfile_parse_name, whose accepted names are checked against a
 * reference parse.
 */
#include <errno.h>
#include <inttypes.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "collect/recordfile.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CHECK(cond)                                                              \
	do {                                                                     \
		if (!(cond)) {                                                   \
			fprintf(stderr, "fuzz_recordfile: %s:%d: invariant broken: %s\n", \
				__FILE__, __LINE__, #cond);                      \
			abort();                                                 \
		}                                                                \
	} while (0)

static int memfd = -1;

static void image_force_header(unsigned char *img, unsigned mode)
{
	struct mt_record *r = (struct mt_record *)(void *)img;
	if (mode & 1)
		r->magic = MT_RECORD_MAGIC;
	if (mode & 2) {
		r->version = MT_RECORD_VERSION;
		r->record_size = MT_RECORD_SIZE;
	}
}

/* What the reader may change: terminate the strings, clamp argv_bytes.
 * Everything else must come back exactly as stored. */
static void record_normalize(struct mt_record *r)
{
	r->exe[MT_EXE_BYTES - 1] = '\0';
	if (r->argv_bytes > MT_ARGV_BYTES)
		r->argv_bytes = MT_ARGV_BYTES;
	if (r->argv_bytes > 0)
		r->argv[r->argv_bytes - 1] = '\0';
	for (unsigned i = 0; i < MT_MARKERS; i++)
		r->markers[i].label[MT_LABEL_BYTES - 1] = '\0';
}

static void check_accepted(const struct mt_record *r, const unsigned char *img,
			   size_t img_len)
{
	CHECK(img_len == MT_RECORD_SIZE);
	CHECK(r->magic == MT_RECORD_MAGIC);
	CHECK(r->version == MT_RECORD_VERSION);
	CHECK(r->record_size == MT_RECORD_SIZE);
	CHECK(r->pid > 0);
	CHECK(r->parent_pid >= 0);
	CHECK(r->state <= MT_STATE_SIGNALED);
	CHECK(r->relation <= MT_REL_UNKNOWN);
	CHECK(memchr(r->exe, '\0', sizeof r->exe) != NULL);
	CHECK(r->argv_bytes <= MT_ARGV_BYTES);
	if (r->argv_bytes > 0)
		CHECK(r->argv[r->argv_bytes - 1] == '\0');
	for (unsigned i = 0; i < MT_MARKERS; i++)
		CHECK(memchr(r->markers[i].label, '\0', MT_LABEL_BYTES) != NULL);

	/* Not misled: the record is the file, normalized. */
	struct mt_record *want = malloc(sizeof *want);
	CHECK(want != NULL);
	memcpy(want, img, sizeof *want);
	record_normalize(want);
	CHECK(memcmp(want, r, sizeof *want) == 0);
	free(want);
}

/* The plausibility check on an accepted record, against bounds the input
 * also chooses: never crashes, always says why when it refuses, and agrees
 * with a plain reading of its own rules on the kernel figures. */
static void check_plausible(const struct mt_record *r, unsigned mode)
{
	struct recordfile_bounds b = {
		.run_start_ns = (mode & 8) ? r->start_mono_ns : 0,
		.now_ns = (mode & 16) ? UINT64_MAX / 2 : r->start_mono_ns + 1000000000u,
		.memory_kb = (mode & 32) ? 0 : UINT64_C(24) << 20,
	};
	char why[200] = "";
	int rc = recordfile_plausible(r, &b, why, sizeof why);
	CHECK(rc == 0 || rc == -RECORDFILE_EIMPLAUSIBLE);
	if (rc < 0)
		CHECK(why[0] != '\0' && memchr(why, '\0', sizeof why) != NULL);
	if (rc == 0 && b.memory_kb)
		CHECK(r->vm_hwm_kb <= b.memory_kb + 64u * 1024u);
	if (rc == 0)
		CHECK(r->marker_count <= UINT32_C(1) << 31);
}

static void fuzz_read(const uint8_t *data, size_t size)
{
	unsigned mode = size ? data[0] : 0;
	const uint8_t *body = size ? data + 1 : data;
	size_t n = size ? size - 1 : 0;
	unsigned char *img;
	size_t img_len;

	if ((mode & 7) == 0) { /* raw: the file is the bytes, any size */
		img_len = n;
		img = malloc(img_len ? img_len : 1);
		CHECK(img != NULL);
		if (n)
			memcpy(img, body, n);
	} else {
		img_len = MT_RECORD_SIZE;
		img = calloc(1, img_len);
		CHECK(img != NULL);
		if (mode & 4) {
			struct mt_record *r = (struct mt_record *)(void *)img;
			r->magic = MT_RECORD_MAGIC;
			r->version = MT_RECORD_VERSION;
			r->record_size = MT_RECORD_SIZE;
			r->pid = 42;
			r->argc = 1;
			memcpy(r->argv, "prog", 5);
			r->argv_bytes = 5;
			memcpy(r->exe, "/bin/prog", 10);
			for (size_t i = 0; i + 3 <= n;) {
				size_t off = (size_t)body[i] | (size_t)body[i + 1] << 8;
				size_t len = body[i + 2];
				i += 3;
				if (len > n - i)
					len = n - i;
				off %= MT_RECORD_SIZE;
				if (len > MT_RECORD_SIZE - off)
					len = MT_RECORD_SIZE - off;
				memcpy(img + off, body + i, len);
				i += len;
			}
		} else {
			memcpy(img, body, n < img_len ? n : img_len);
		}
		image_force_header(img, mode);
	}

	CHECK(ftruncate(memfd, 0) == 0);
	if (img_len)
		CHECK(pwrite(memfd, img, img_len, 0) == (ssize_t)img_len);

	struct mt_record *out = malloc(sizeof *out);
	CHECK(out != NULL);
	int rc = recordfile_read_fd(memfd, out);
	switch (-rc) {
	case 0:
		check_accepted(out, img, img_len);
		check_plausible(out, mode);
		break;
	case RECORDFILE_ESHORT:
		CHECK(img_len < MT_RECORD_SIZE);
		break;
	case RECORDFILE_ELONG:
		CHECK(img_len > MT_RECORD_SIZE);
		break;
	case RECORDFILE_EMAGIC:
	case RECORDFILE_EVERSION:
	case RECORDFILE_ESIZE:
	case RECORDFILE_ECORRUPT:
		CHECK(img_len == MT_RECORD_SIZE);
		break;
	default:
		fprintf(stderr, "fuzz_recordfile: unexpected result %d (%s)\n", rc,
			recordfile_strerror(rc));
		abort();
	}
	/* Every result has a message. */
	const char *msg = recordfile_strerror(rc);
	CHECK(msg != NULL && msg[0] != '\0');
	free(out);
	free(img);
}

/* Reference: all digits, '.', all digits, ".mtr"; values as strtoull
 * reads them. */
static void fuzz_name(const uint8_t *data, size_t size)
{
	char *name = malloc(size + 1);
	CHECK(name != NULL);
	memcpy(name, data, size);
	name[size] = '\0';
	int32_t pid = -7;
	uint32_t gen = 7;
	int rc = recordfile_parse_name(name, &pid, &gen);
	CHECK(rc == 0 || rc == -RECORDFILE_ENAME);
	if (rc == 0) {
		size_t a = strspn(name, "0123456789");
		CHECK(a > 0 && name[a] == '.');
		size_t b = strspn(name + a + 1, "0123456789");
		CHECK(b > 0 && strcmp(name + a + 1 + b, MT_RECORD_SUFFIX) == 0);
		unsigned long long p = strtoull(name, NULL, 10);
		unsigned long long g = strtoull(name + a + 1, NULL, 10);
		CHECK(pid > 0 && (unsigned long long)pid == p);
		CHECK((unsigned long long)gen == g);
	}
	free(name);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (memfd < 0) {
		memfd = memfd_create("fuzz_recordfile", MFD_CLOEXEC);
		CHECK(memfd >= 0);
	}
	fuzz_read(data, size);
	fuzz_name(data, size);
	return 0;
}
