/* fuzz_stackfile.c: libFuzzer harness for the stacks file reader
 * (supervisor/collect/stackfile.h): a stacks file that is being made, cut
 * short, corrupted or written by someone else must never crash memsup nor
 * make it index outside what it read.
 *
 * The input's first byte picks how the rest becomes a file (in a memfd):
 *   bits 0-1 clear: the bytes are the file, as they are (any size);
 *   otherwise:      a plausible header (magic, version, layout, pid 42 gen
 *                   1) in a file of header + module table + N stack entries
 *                   (N = the second byte % 17, or shorter when bit 2 is set:
 *                   cut at the third byte * 4 KiB), then the rest as patches
 *                   (offset: 3 bytes LE, modulo the size; length: 1 byte;
 *                   data) over it, so that small inputs reach the counts,
 *                   the paths and the columns.
 * Accepted: counts within the slots and within the file, paths terminated,
 * build-id lengths and frame counts within their arrays, modules_seen
 * within the modules read, and every other byte of every entry read back
 * exactly as the file holds it.  The live set names only stacks below the
 * count, each with its file columns.  The same bytes, as a NUL-terminated
 * string, go through stackfile_parse_name against a reference parse.
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

#include "collect/stackfile.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CHECK(cond)                                                                    \
	do {                                                                           \
		if (!(cond)) {                                                         \
			fprintf(stderr, "fuzz_stackfile: %s:%d: invariant broken: %s\n", \
				__FILE__, __LINE__, #cond);                            \
			abort();                                                       \
		}                                                                      \
	} while (0)

static int memfd = -1;

/* The file's bytes at [off, off+n), zeros past its end (sparse or short). */
static void file_bytes(const unsigned char *img, size_t img_len, size_t off, void *out, size_t n)
{
	memset(out, 0, n);
	if (off < img_len)
		memcpy(out, img + off, n < img_len - off ? n : img_len - off);
}

static void check_accepted(const struct stackfile *f, const unsigned char *img, size_t img_len)
{
	const struct mt_stacks_header *h = &f->h;
	CHECK(img_len >= MT_STACKS_HEADER_BYTES);
	CHECK(h->magic == MT_STACKS_MAGIC && h->version == MT_STACKS_VERSION);
	CHECK(h->pid == 42 && h->gen == 1);
	CHECK(h->module_count <= MT_STACKS_MODULE_SLOTS);
	CHECK(h->stack_count <= MT_STACKS_SLOTS);
	CHECK(MT_STACKS_MODULES_OFFSET + (uint64_t)h->module_count * MT_STACKS_MODULE_BYTES <=
	      img_len || h->module_count == 0);
	CHECK(MT_STACKS_STACKS_OFFSET + (uint64_t)h->stack_count * MT_STACKS_STACK_BYTES <=
	      img_len || h->stack_count == 0);
	for (uint32_t i = 0; i < h->module_count; i++) {
		struct mt_stacks_module want;
		const struct mt_stacks_module *m = &f->modules[i];
		CHECK(memchr(m->path, '\0', sizeof m->path) != NULL);
		CHECK(m->build_id_len <= MT_STACKS_BUILD_ID_BYTES);
		file_bytes(img, img_len, MT_STACKS_MODULES_OFFSET + (size_t)i * MT_STACKS_MODULE_BYTES,
			   &want, sizeof want);
		/* what the reader may change: the path's last byte, a build-id
		 * length past its array (then 0) */
		want.path[MT_STACKS_PATH_BYTES - 1] = '\0';
		if (want.build_id_len > MT_STACKS_BUILD_ID_BYTES)
			want.build_id_len = 0;
		CHECK(memcmp(&want, m, sizeof want) == 0);
	}
	for (uint32_t i = 0; i < h->stack_count; i++) {
		struct mt_stack want;
		const struct mt_stack *s = &f->stacks[i];
		CHECK(s->nframes <= MT_STACKS_FRAMES);
		CHECK(s->modules_seen <= h->module_count);
		file_bytes(img, img_len, MT_STACKS_STACKS_OFFSET + (size_t)i * MT_STACKS_STACK_BYTES,
			   &want, sizeof want);
		if (want.nframes > MT_STACKS_FRAMES)
			want.nframes = MT_STACKS_FRAMES;
		if (want.modules_seen > h->module_count)
			want.modules_seen = h->module_count;
		CHECK(memcmp(&want, s, sizeof want) == 0);
	}
}

static void check_live(const struct stackfile *f, const struct stackfile_set *set,
		       const unsigned char *img, size_t img_len)
{
	CHECK(set->read);
	CHECK(set->n <= f->h.stack_count);
	for (size_t i = 0; i < set->n; i++) {
		const struct stackfile_live *e = &set->e[i];
		struct mt_stack s;
		CHECK(e->stack < f->h.stack_count);
		CHECK(i == 0 || e->stack > set->e[i - 1].stack);
		file_bytes(img, img_len, MT_STACKS_STACKS_OFFSET + (size_t)e->stack * MT_STACKS_STACK_BYTES,
			   &s, sizeof s);
		CHECK(e->bytes == s.live_bytes && e->count == s.live_count && e->var == s.live_var);
		CHECK(e->bytes && e->count);
	}
}

static void fuzz_read(const uint8_t *data, size_t size)
{
	unsigned mode = size ? data[0] : 0;
	const uint8_t *body = size ? data + 1 : data;
	size_t n = size ? size - 1 : 0;
	unsigned char *img;
	size_t img_len;

	if ((mode & 3) == 0) {
		img_len = n;
		img = malloc(img_len ? img_len : 1);
		CHECK(img != NULL);
		if (n)
			memcpy(img, body, n);
	} else {
		unsigned stacks = n > 0 ? body[0] % 17u : 0;
		img_len = MT_STACKS_STACKS_OFFSET + (size_t)stacks * MT_STACKS_STACK_BYTES;
		if ((mode & 4) && n > 1 && (size_t)body[1] * 4096u < img_len)
			img_len = (size_t)body[1] * 4096u;
		img = calloc(1, img_len ? img_len : 1);
		CHECK(img != NULL);
		if (img_len >= sizeof(struct mt_stacks_header)) {
			struct mt_stacks_header *h = (struct mt_stacks_header *)(void *)img;
			h->magic = MT_STACKS_MAGIC;
			mt_stacks_set_layout(h);
			h->pid = 42;
			h->gen = 1;
			h->module_count = 2;
			h->stack_count = stacks;
		}
		for (size_t i = 2; img_len && i + 4 <= n;) {
			size_t off = (size_t)body[i] | (size_t)body[i + 1] << 8 |
				     (size_t)body[i + 2] << 16;
			size_t len = body[i + 3];
			i += 4;
			if (len > n - i)
				len = n - i;
			off %= img_len;
			if (len > img_len - off)
				len = img_len - off;
			memcpy(img + off, body + i, len);
			i += len;
		}
	}

	CHECK(ftruncate(memfd, 0) == 0);
	CHECK(ftruncate(memfd, (off_t)img_len) == 0);
	if (img_len)
		CHECK(pwrite(memfd, img, img_len, 0) == (ssize_t)img_len);

	struct stackfile f;
	int rc = stackfile_read_fd(memfd, 42, 1, &f);
	switch (-rc) {
	case 0: {
		struct stackfile_set set = { 0 }, copy = { 0 };
		int changed = 0;
		check_accepted(&f, img, img_len);
		CHECK(stackfile_read_live(memfd, 42, 1, &set, &changed) == 0 && changed);
		check_live(&f, &set, img, img_len);
		/* unchanged events: not read again */
		CHECK(stackfile_read_live(memfd, 42, 1, &set, &changed) == 0 && !changed);
		CHECK(stackfile_set_copy(&copy, &set) == 0 && copy.n == set.n);
		CHECK(copy.n == 0 || memcmp(copy.e, set.e, copy.n * sizeof *copy.e) == 0);
		stackfile_set_free(&copy);
		stackfile_set_free(&set);
		stackfile_free(&f);
		break;
	}
	case STACKFILE_ESHORT:
		CHECK(img_len < MT_STACKS_HEADER_BYTES);
		break;
	case STACKFILE_EMAGIC:
	case STACKFILE_EVERSION:
	case STACKFILE_ELAYOUT:
	case STACKFILE_EIDENTITY:
		CHECK(img_len >= MT_STACKS_HEADER_BYTES);
		break;
	default:
		fprintf(stderr, "fuzz_stackfile: unexpected result %d (%s)\n", rc,
			stackfile_strerror(rc));
		abort();
	}
	if (rc != 0) {
		/* a refused file reads as nothing, and its live set too */
		struct stackfile_set set = { 0 };
		int changed = 1;
		CHECK(f.modules == NULL && f.stacks == NULL);
		CHECK(stackfile_read_live(memfd, 42, 1, &set, &changed) == rc && !changed);
		CHECK(!set.read && set.n == 0);
	}
	const char *msg = stackfile_strerror(rc);
	CHECK(msg != NULL && msg[0] != '\0');
	free(img);
}

/* Reference: a digit 1-9 then digits, '.', digits, ".mts"; pid within
 * int32, gen within uint32. */
static void fuzz_name(const uint8_t *data, size_t size)
{
	char *name = malloc(size + 1);
	CHECK(name != NULL);
	memcpy(name, data, size);
	name[size] = '\0';
	int32_t pid = -7;
	uint32_t gen = 7;
	int rc = stackfile_parse_name(name, &pid, &gen);
	CHECK(rc == 0 || rc == -STACKFILE_ENAME);
	if (rc == 0) {
		size_t a = strspn(name, "0123456789");
		CHECK(a > 0 && name[0] != '0' && name[a] == '.');
		size_t b = strspn(name + a + 1, "0123456789");
		CHECK(b > 0 && strcmp(name + a + 1 + b, MT_STACKS_SUFFIX) == 0);
		unsigned long long p = strtoull(name, NULL, 10);
		unsigned long long g = strtoull(name + a + 1, NULL, 10);
		CHECK(pid > 0 && (unsigned long long)pid == p);
		CHECK((unsigned long long)gen == g);
		char back[48];
		stackfile_name(back, sizeof back, pid, gen);
		int32_t p2;
		uint32_t g2;
		CHECK(stackfile_parse_name(back, &p2, &g2) == 0 && p2 == pid && g2 == gen);
	}
	free(name);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (memfd < 0) {
		memfd = memfd_create("fuzz_stackfile", MFD_CLOEXEC);
		CHECK(memfd >= 0);
	}
	fuzz_read(data, size);
	fuzz_name(data, size);
	return 0;
}
