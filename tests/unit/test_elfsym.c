/* test_elfsym.c: ELF symbols, program headers and build-ids through a read
 * function (elfsym.h), on this executable, on the C library (.dynsym only
 * on Debian), and on garbage, which must be refused without a crash. */
#include <criterion/criterion.h>
#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "elfsym.h"

static ssize_t read_fd(void *ctx, void *buf, size_t n, uint64_t off)
{
	ssize_t r = pread(*(int *)ctx, buf, n, (off_t)off);
	return r < 0 ? -errno : r;
}

struct mem {
	const unsigned char *p;
	size_t len;
};

static ssize_t read_mem(void *ctx, void *buf, size_t n, uint64_t off)
{
	const struct mem *m = ctx;
	if (off >= m->len)
		return 0;
	if (n > m->len - off)
		n = (size_t)(m->len - off);
	memcpy(buf, m->p + off, n);
	return (ssize_t)n;
}

/* The mapping of `path` at file offset 0 (its ELF header), and its end. */
static uintptr_t mapped_base(const char *path, uintptr_t *end)
{
	FILE *f = fopen("/proc/self/maps", "r");
	char line[PATH_MAX + 128];
	uintptr_t base = 0;
	while (f && fgets(line, sizeof line, f)) {
		unsigned long lo, hi, off;
		char p[PATH_MAX];
		if (sscanf(line, "%lx-%lx %*s %lx %*s %*s %s", &lo, &hi, &off, p) == 4 && off == 0 &&
		    !strcmp(p, path)) {
			base = lo;
			*end = hi;
			break;
		}
	}
	if (f)
		fclose(f);
	cr_assert_neq(base, 0, "%s not mapped", path);
	return base;
}

static const char *self_path(void)
{
	static char exe[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
	cr_assert_gt(n, 0);
	exe[n] = '\0';
	return exe;
}

__attribute__((noinline)) int elfsym_test_global(int x);
__attribute__((noinline)) int elfsym_test_global(int x)
{
	return x * 3 + 1;
}

__attribute__((noinline)) static int elfsym_test_local(int x)
{
	return x * 5 + elfsym_test_global(x);
}

static int test_data_object = 42;

/* Names of the functions holding each address (sorted queries). */
static void resolve(const char *path, uintptr_t bias, const uintptr_t *addrs, size_t n,
		    char names[][64])
{
	struct elfsym e;
	struct elfsym_query q[8];
	int fd = open(path, O_RDONLY);
	cr_assert_geq(fd, 0);
	cr_assert_eq(elfsym_open(&e, read_fd, &fd), 0);
	for (size_t i = 0; i < n; i++) {
		memset(&q[i], 0, sizeof q[i]);
		q[i].addr = addrs[i] - bias;
		cr_assert(i == 0 || q[i].addr >= q[i - 1].addr, "queries sorted");
	}
	cr_assert_eq(elfsym_resolve(&e, q, n), 0);
	for (size_t i = 0; i < n; i++) {
		names[i][0] = '\0';
		if (q[i].found)
			cr_assert_geq(elfsym_name(&e, &q[i], names[i], 64), 0);
	}
	close(fd);
}

Test(elfsym, names_our_own_functions)
{
	uintptr_t end, base = mapped_base(self_path(), &end);
	uintptr_t a[] = { (uintptr_t)elfsym_test_global, (uintptr_t)elfsym_test_global + 1,
			  (uintptr_t)elfsym_test_local, (uintptr_t)&test_data_object };
	char names[4][64];
	/* sort: order of the functions in the file is the linker's */
	for (int i = 0; i < 4; i++)
		for (int j = i + 1; j < 4; j++)
			if (a[j] < a[i]) {
				uintptr_t t = a[i];
				a[i] = a[j];
				a[j] = t;
			}
	cr_assert_eq(elfsym_test_local(1), 9);
	resolve(self_path(), base, a, 4, names);
	for (int i = 0; i < 4; i++) {
		if (a[i] == (uintptr_t)&test_data_object)
			cr_expect_str_eq(names[i], "", "data is no function");
		else if (a[i] == (uintptr_t)elfsym_test_local)
			cr_expect_str_eq(names[i], "elfsym_test_local");
		else
			cr_expect_str_eq(names[i], "elfsym_test_global");
	}
}

Test(elfsym, dynsym_of_the_c_library)
{
	Dl_info info;
	void *fn = dlsym(RTLD_DEFAULT, "qsort");
	char real[PATH_MAX], names[1][64];
	uintptr_t end, a[1];
	cr_assert_not_null(fn);
	cr_assert(dladdr(fn, &info));
	cr_assert_not_null(realpath(info.dli_fname, real));
	a[0] = (uintptr_t)fn + 3;
	resolve(real, mapped_base(real, &end), a, 1, names);
	cr_expect_not_null(strstr(names[0], "qsort"), "%s", names[0]);
}

Test(elfsym, file_offsets_become_virtual_addresses)
{
	uintptr_t end, base = mapped_base(self_path(), &end), text = (uintptr_t)elfsym_test_global;
	FILE *f = fopen("/proc/self/maps", "r");
	char line[PATH_MAX + 128];
	uint64_t vaddr = 0;
	int found = 0;
	/* the mapping holding our text: its file offset */
	while (fgets(line, sizeof line, f)) {
		unsigned long lo, hi, off;
		char p[PATH_MAX];
		if (sscanf(line, "%lx-%lx %*s %lx %*s %*s %s", &lo, &hi, &off, p) == 4 &&
		    text >= lo && text < hi) {
			struct elfsym e;
			int fd = open(p, O_RDONLY);
			cr_assert_eq(elfsym_open(&e, read_fd, &fd), 0);
			cr_assert_eq(elfsym_file_vaddr(&e, text - lo + off, &vaddr), 0);
			/* a PIE's first segment is at 0: its address less the base */
			cr_expect_eq(vaddr, text - base);
			cr_expect_eq(elfsym_file_vaddr(&e, UINT64_C(1) << 60, &vaddr), -ENOENT);
			close(fd);
			found = 1;
			break;
		}
	}
	fclose(f);
	cr_assert(found);
	cr_assert_eq(elfsym_file_vaddr(&(struct elfsym){ 0 }, 0, &vaddr), -ENOENT, "no headers");
}

Test(elfsym, build_id_from_the_file_and_from_memory_agree)
{
	const char *exe = self_path();
	uintptr_t end, base = mapped_base(exe, &end);
	struct mem m = { (const unsigned char *)base, end - base };
	struct elfsym e;
	uint8_t a[32], b[32];
	int fd = open(exe, O_RDONLY), na, nb;
	cr_assert_eq(elfsym_open(&e, read_fd, &fd), 0);
	na = elfsym_build_id(&e, 0, a, sizeof a);
	close(fd);
	cr_assert_eq(elfsym_open(&e, read_mem, &m), 0);
	nb = elfsym_build_id(&e, 1, b, sizeof b);
	cr_assert_geq(na, 8, "gcc on Debian links a build-id");
	cr_assert_eq(na, nb);
	cr_expect_eq(memcmp(a, b, (size_t)na), 0);
	/* a short buffer gets the first bytes */
	cr_assert_eq(elfsym_open(&e, read_mem, &m), 0);
	cr_expect_eq(elfsym_build_id(&e, 1, b, 4), 4);
	cr_expect_eq(memcmp(a, b, 4), 0);
}

/* ---- garbage --------------------------------------------------------------- */

static int open_mem(struct elfsym *e, struct mem *m, const void *p, size_t len)
{
	m->p = p;
	m->len = len;
	return elfsym_open(e, read_mem, m);
}

Test(elfsym, garbage_is_refused)
{
	struct elfsym e;
	struct mem m;
	unsigned char buf[4096];
	Elf64_Ehdr *h = (Elf64_Ehdr *)buf;
	struct elfsym_query q = { 0 };
	uint8_t id[32];
	char name[16];

	memset(buf, 0, sizeof buf);
	cr_expect_eq(open_mem(&e, &m, buf, 0), -ENOEXEC, "empty");
	cr_expect_eq(open_mem(&e, &m, "\x7f" "ELF", 4), -ENOEXEC, "short");
	cr_expect_eq(open_mem(&e, &m, buf, sizeof buf), -ENOEXEC, "zeros");
	memcpy(h->e_ident, ELFMAG, SELFMAG);
	h->e_ident[EI_CLASS] = ELFCLASS32;
	h->e_ident[EI_DATA] = ELFDATA2LSB;
	h->e_ehsize = sizeof *h;
	cr_expect_eq(open_mem(&e, &m, buf, sizeof buf), -ENOEXEC, "32-bit");
	h->e_ident[EI_CLASS] = ELFCLASS64;
	h->e_phentsize = 7;
	h->e_phnum = 1;
	cr_expect_eq(open_mem(&e, &m, buf, sizeof buf), -ENOEXEC, "odd phentsize");
	/* Headers that point past the end of the file, huge counts. */
	h->e_phentsize = sizeof(Elf64_Phdr);
	h->e_phnum = 0xffff;
	h->e_phoff = 1u << 30;
	h->e_shentsize = sizeof(Elf64_Shdr);
	h->e_shnum = 0xffff;
	h->e_shoff = sizeof buf - 10;
	cr_assert_eq(open_mem(&e, &m, buf, sizeof buf), 0);
	uint64_t v;
	cr_expect_lt(elfsym_file_vaddr(&e, 0, &v), 0);
	cr_expect_lt(elfsym_build_id(&e, 0, id, sizeof id), 0);
	cr_expect_lt(elfsym_resolve(&e, &q, 1), 0);
	cr_expect_lt(elfsym_name(&e, &q, name, sizeof name), 0);
	/* a note segment whose sizes run past its end */
	Elf64_Phdr *ph = (Elf64_Phdr *)(buf + sizeof *h);
	Elf64_Nhdr *nh = (Elf64_Nhdr *)(buf + 512);
	h->e_phoff = sizeof *h;
	h->e_phnum = 1;
	h->e_shnum = 0;
	ph->p_type = PT_NOTE;
	ph->p_offset = 512;
	ph->p_filesz = 64;
	nh->n_namesz = 4;
	nh->n_descsz = 0x7fffffff;
	nh->n_type = NT_GNU_BUILD_ID;
	memcpy(buf + 512 + sizeof *nh, "GNU", 4);
	cr_assert_eq(open_mem(&e, &m, buf, sizeof buf), 0);
	cr_expect_eq(elfsym_build_id(&e, 0, id, sizeof id), 0);
	cr_expect_eq(elfsym_resolve(&e, &q, 1), -ENOENT, "no symbol table");
}
