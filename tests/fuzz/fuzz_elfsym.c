/* fuzz_elfsym.c: libFuzzer harness for common/elfsym.h, the ELF reader the
 * shim (its top call sites) and memsup (every sampled frame) run on files
 * they did not write: a module replaced on disk after it was mapped, or
 * anything at all under a module's path.
 *
 * The input is the whole "file", read through a bounded memory reader, so
 * ASan reports any read the reader did not check.  Every entry point runs
 * on it: the program headers (file offsets to addresses, at a few offsets
 * taken from the input itself), the build-id (as a file and as a mapped
 * image), and a symbol lookup of a sorted batch of addresses, then their
 * names.  The harness checks what the header promises (lengths within the
 * caller's room, names NUL-terminated, `found` one of 0, 1, 2, a found
 * sized symbol holding its address) and aborts on a violation.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "elfsym.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CHECK(cond)                                                              \
	do {                                                                     \
		if (!(cond)) {                                                   \
			fprintf(stderr, "fuzz_elfsym: %s:%d: invariant broken: %s\n", \
				__FILE__, __LINE__, #cond);                      \
			abort();                                                 \
		}                                                                \
	} while (0)

struct input {
	const uint8_t *p;
	size_t len;
};

static ssize_t read_input(void *ctx, void *buf, size_t n, uint64_t off)
{
	const struct input *in = ctx;
	if (off >= in->len)
		return 0;
	if (n > in->len - off)
		n = (size_t)(in->len - off);
	memcpy(buf, in->p + off, n);
	return (ssize_t)n;
}

static uint64_t word(const uint8_t *data, size_t size, size_t at)
{
	uint64_t v = 0;
	for (size_t i = 0; i < 8 && at + i < size; i++)
		v |= (uint64_t)data[at + i] << (8 * i);
	return v;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct input in = { data, size };
	struct elfsym e;
	struct elfsym_query q[8];
	uint8_t id[20];
	char name[24];
	uint64_t vaddr;
	int rc;

	if (elfsym_open(&e, read_input, &in) != 0)
		return 0;
	for (int i = 0; i < 4; i++) {
		rc = elfsym_file_vaddr(&e, word(data, size, 64 + 8 * (size_t)i), &vaddr);
		CHECK(rc == 0 || rc == -ENOENT || rc == -ENOEXEC);
	}
	for (int mapped = 0; mapped < 2; mapped++) {
		rc = elfsym_build_id(&e, mapped, id, sizeof id);
		CHECK(rc <= (int)sizeof id);
		CHECK(rc >= 0 || rc == -ENOEXEC);
	}
	/* Addresses from the input, sorted. */
	for (int i = 0; i < 8; i++) {
		memset(&q[i], 0, sizeof q[i]);
		q[i].addr = word(data, size, 24 + 8 * (size_t)i) % (1u << 20);
	}
	for (int i = 1; i < 8; i++)
		for (int j = i; j > 0 && q[j - 1].addr > q[j].addr; j--) {
			struct elfsym_query t = q[j];
			q[j] = q[j - 1];
			q[j - 1] = t;
		}
	rc = elfsym_resolve(&e, q, 8);
	CHECK(rc == 0 || rc == -ENOENT || rc == -ENOEXEC);
	if (rc != 0)
		return 0;
	for (int i = 0; i < 8; i++) {
		ssize_t n;
		CHECK(q[i].found <= 2);
		if (q[i].found == 1)
			CHECK(q[i].addr - q[i].sym_value < q[i].sym_size);
		if (q[i].found == 2)
			CHECK(q[i].sym_value <= q[i].addr);
		memset(name, 'x', sizeof name);
		n = elfsym_name(&e, &q[i], name, sizeof name);
		CHECK(n < (ssize_t)sizeof name);
		if (n >= 0)
			CHECK(name[n] == '\0' && strlen(name) == (size_t)n);
	}
	return 0;
}
