/* elfsym.c: ELF program headers, build-id and function symbols through a
 * caller's read function (see elfsym.h).  Never allocates. */
#include <elf.h>
#include <errno.h>
#include <string.h>

#include "elfsym.h"

/* Symbols read per call: a 1.5 KiB stack buffer. */
#define ELFSYM_BATCH 64u

static int elfsym_read_all(const struct elfsym *e, void *buf, size_t n, uint64_t off)
{
	ssize_t r = e->read(e->ctx, buf, n, off);
	if (r < 0)
		return (int)r;
	return (size_t)r == n ? 0 : -ENOEXEC;
}

int elfsym_open(struct elfsym *e, elfsym_read_fn read, void *ctx)
{
	Elf64_Ehdr h;
	int rc;
	memset(e, 0, sizeof *e);
	e->read = read;
	e->ctx = ctx;
	if ((rc = elfsym_read_all(e, &h, sizeof h, 0)) != 0)
		return rc;
	if (memcmp(h.e_ident, ELFMAG, SELFMAG) != 0 || h.e_ident[EI_CLASS] != ELFCLASS64 ||
	    h.e_ident[EI_DATA] != ELFDATA2LSB || h.e_ehsize < sizeof h)
		return -ENOEXEC;
	if (h.e_phnum && h.e_phentsize != sizeof(Elf64_Phdr))
		return -ENOEXEC;
	if (h.e_shnum && h.e_shentsize != sizeof(Elf64_Shdr))
		return -ENOEXEC;
	e->phoff = h.e_phoff;
	e->phnum = h.e_phnum;
	e->shoff = h.e_shoff;
	e->shnum = h.e_shnum;
	e->shstrndx = h.e_shstrndx;
	e->type = h.e_type;
	return 0;
}

static int elfsym_phdr(const struct elfsym *e, unsigned i, Elf64_Phdr *ph)
{
	return elfsym_read_all(e, ph, sizeof *ph, e->phoff + (uint64_t)i * sizeof *ph);
}

int elfsym_file_vaddr(const struct elfsym *e, uint64_t off, uint64_t *vaddr)
{
	for (unsigned i = 0; i < e->phnum; i++) {
		Elf64_Phdr ph;
		int rc = elfsym_phdr(e, i, &ph);
		if (rc)
			return rc;
		if (ph.p_type != PT_LOAD || off < ph.p_offset || off - ph.p_offset >= ph.p_memsz)
			continue;
		*vaddr = ph.p_vaddr + (off - ph.p_offset);
		return 0;
	}
	return -ENOENT;
}

/* Walks one note segment's notes for NT_GNU_BUILD_ID "GNU". */
static int elfsym_notes(const struct elfsym *e, uint64_t at, uint64_t size, uint8_t *out,
			size_t cap)
{
	uint64_t pos = 0;
	while (pos <= size && size - pos >= sizeof(Elf64_Nhdr)) {
		Elf64_Nhdr nh;
		char name[4];
		uint64_t namesz, descsz;
		int rc = elfsym_read_all(e, &nh, sizeof nh, at + pos);
		if (rc)
			return rc;
		namesz = ((uint64_t)nh.n_namesz + 3) & ~(uint64_t)3;
		descsz = ((uint64_t)nh.n_descsz + 3) & ~(uint64_t)3;
		pos += sizeof nh;
		if (namesz > size - pos || descsz > size - pos - namesz)
			return 0;
		if (nh.n_type == NT_GNU_BUILD_ID && nh.n_namesz == 4 && nh.n_descsz > 0) {
			size_t n = nh.n_descsz < cap ? nh.n_descsz : cap;
			if ((rc = elfsym_read_all(e, name, 4, at + pos)) != 0)
				return rc;
			if (memcmp(name, "GNU", 4) == 0) {
				rc = elfsym_read_all(e, out, n, at + pos + namesz);
				return rc ? rc : (int)n;
			}
		}
		pos += namesz + descsz;
	}
	return 0;
}

int elfsym_build_id(const struct elfsym *e, int mapped, uint8_t *out, size_t cap)
{
	uint64_t base = UINT64_MAX;
	if (mapped) {
		/* The lowest PT_LOAD's page is where the reader's offset 0 is. */
		for (unsigned i = 0; i < e->phnum; i++) {
			Elf64_Phdr ph;
			int rc = elfsym_phdr(e, i, &ph);
			if (rc)
				return rc;
			if (ph.p_type == PT_LOAD && ph.p_vaddr < base)
				base = ph.p_vaddr & ~(uint64_t)0xfff;
		}
		if (base == UINT64_MAX)
			return 0;
	}
	for (unsigned i = 0; i < e->phnum; i++) {
		Elf64_Phdr ph;
		int rc = elfsym_phdr(e, i, &ph);
		if (rc)
			return rc;
		if (ph.p_type != PT_NOTE || ph.p_filesz > (1u << 20))
			continue;
		if (mapped && ph.p_vaddr < base)
			continue;
		rc = elfsym_notes(e, mapped ? ph.p_vaddr - base : ph.p_offset, ph.p_filesz, out, cap);
		if (rc != 0)
			return rc;
	}
	return 0;
}

static int elfsym_shdr(const struct elfsym *e, unsigned i, Elf64_Shdr *sh)
{
	if (i >= e->shnum)
		return -ENOEXEC;
	return elfsym_read_all(e, sh, sizeof *sh, e->shoff + (uint64_t)i * sizeof *sh);
}

int elfsym_section(const struct elfsym *e, const char *name, struct elfsym_section *out)
{
	Elf64_Shdr strs, sh;
	size_t len = strlen(name);
	char buf[64];
	int rc;
	if (len + 1 > sizeof buf)
		return -ENOENT;
	if (!e->shnum || (rc = elfsym_shdr(e, e->shstrndx, &strs)) != 0)
		return e->shnum ? rc : -ENOENT;
	for (unsigned i = 1; i < e->shnum; i++) {
		if ((rc = elfsym_shdr(e, i, &sh)) != 0)
			return rc;
		if (sh.sh_name >= strs.sh_size || strs.sh_size - sh.sh_name < len + 1)
			continue;
		if ((rc = elfsym_read_all(e, buf, len + 1, strs.sh_offset + sh.sh_name)) != 0)
			return rc;
		if (memcmp(buf, name, len + 1) != 0)
			continue;
		out->offset = sh.sh_offset;
		out->size = sh.sh_size;
		out->type = sh.sh_type;
		out->flags = sh.sh_flags;
		return 0;
	}
	return -ENOENT;
}

int elfsym_build_id_sections(const struct elfsym *e, uint8_t *out, size_t cap)
{
	for (unsigned i = 1; i < e->shnum; i++) {
		Elf64_Shdr sh;
		int rc = elfsym_shdr(e, i, &sh);
		if (rc)
			return rc;
		if (sh.sh_type != SHT_NOTE || sh.sh_size > (1u << 20))
			continue;
		if ((rc = elfsym_notes(e, sh.sh_offset, sh.sh_size, out, cap)) != 0)
			return rc;
	}
	return 0;
}

/* The first query at or above addr. */
static size_t elfsym_lower(const struct elfsym_query *q, size_t n, uint64_t addr)
{
	size_t lo = 0, hi = n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (q[mid].addr < addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* Is sym a better answer for query x than what it has? */
static void elfsym_offer(struct elfsym_query *x, const Elf64_Sym *s)
{
	int global = ELF64_ST_BIND(s->st_info) != STB_LOCAL;
	if (s->st_size) {
		/* Several sized symbols may hold one address (aliases, nested
		 * local labels): the innermost, then a global name, wins. */
		if (x->found == 1 && (s->st_size > x->sym_size ||
				      (s->st_size == x->sym_size && (x->global || !global))))
			return;
		x->found = 1;
	} else {
		if (x->found == 1 || (x->found == 2 && x->sym_value >= s->st_value))
			return;
		x->found = 2;
	}
	x->sym_value = s->st_value;
	x->sym_size = s->st_size;
	x->name_off = s->st_name;
	x->global = (uint8_t)global;
}

/* Executable sections (index < ELFSYM_SECTIONS), a bit each. */
#define ELFSYM_SECTIONS 1024u
#define ELFSYM_CODE_RANGES 32u
struct elfsym_exec {
	uint64_t bits[ELFSYM_SECTIONS / 64];
	/* the first executable sections' address ranges (.init, .plt, .text,
	 * .fini, ...): a size-0 symbol holds only addresses of its own */
	struct {
		unsigned shndx;
		uint64_t hi; /* end address */
	} code[ELFSYM_CODE_RANGES];
	unsigned ncode;
};

static int elfsym_in_code(const struct elfsym_exec *x, unsigned shndx)
{
	return shndx < ELFSYM_SECTIONS && (x->bits[shndx / 64] >> (shndx % 64) & 1);
}

static void elfsym_apply(const Elf64_Sym *s, const struct elfsym_exec *x, struct elfsym_query *q,
			 size_t n)
{
	unsigned type = ELF64_ST_TYPE(s->st_info);
	size_t i;
	if (!elfsym_in_code(x, s->st_shndx) || s->st_value == 0)
		return;
	if (type != STT_FUNC && type != STT_GNU_IFUNC && !(type == STT_NOTYPE && !s->st_size))
		return;
	i = elfsym_lower(q, n, s->st_value);
	if (s->st_size) {
		for (; i < n && q[i].addr - s->st_value < s->st_size; i++)
			elfsym_offer(&q[i], s);
	} else {
		/* Within its section, up to the next query a sized symbol holds. */
		uint64_t hi = 0;
		for (unsigned k = 0; k < x->ncode; k++)
			if (x->code[k].shndx == s->st_shndx)
				hi = x->code[k].hi;
		for (; i < n && q[i].addr < hi && q[i].found != 1; i++)
			elfsym_offer(&q[i], s);
	}
}

int elfsym_resolve(struct elfsym *e, struct elfsym_query *q, size_t n)
{
	Elf64_Shdr sym, str;
	Elf64_Sym batch[ELFSYM_BATCH];
	struct elfsym_exec exec;
	int have = 0, rc = 0;
	uint64_t count;

	for (size_t i = 0; i < n; i++) {
		q[i].found = 0;
		q[i].global = 0;
	}
	/* Functions live in executable sections: a size-0 NOTYPE symbol
	 * elsewhere (_edata, __bss_start) is no function. */
	memset(&exec, 0, sizeof exec);
	for (unsigned i = 1; i < e->shnum && i < ELFSYM_SECTIONS; i++) {
		if ((rc = elfsym_shdr(e, i, &sym)) != 0)
			return rc;
		if (!(sym.sh_flags & SHF_EXECINSTR))
			continue;
		exec.bits[i / 64] |= UINT64_C(1) << (i % 64);
		if (exec.ncode < ELFSYM_CODE_RANGES) {
			exec.code[exec.ncode].shndx = i;
			exec.code[exec.ncode].hi = sym.sh_addr + sym.sh_size;
			exec.ncode++;
		}
	}
	/* .symtab if there is one, else .dynsym. */
	for (unsigned pass = 0; pass < 2 && !have; pass++) {
		for (unsigned i = 1; i < e->shnum; i++) {
			if ((rc = elfsym_shdr(e, i, &sym)) != 0)
				return rc;
			if (sym.sh_type == (pass ? SHT_DYNSYM : SHT_SYMTAB)) {
				have = 1;
				break;
			}
		}
	}
	if (!have)
		return -ENOENT;
	if (sym.sh_entsize != sizeof(Elf64_Sym) || (rc = elfsym_shdr(e, sym.sh_link, &str)) != 0 ||
	    str.sh_type != SHT_STRTAB)
		return rc ? rc : -ENOEXEC;
	e->strtab_off = str.sh_offset;
	e->strtab_size = str.sh_size;
	count = sym.sh_size / sizeof(Elf64_Sym);
	for (uint64_t at = 0; at < count;) {
		size_t k = count - at < ELFSYM_BATCH ? (size_t)(count - at) : ELFSYM_BATCH;
		ssize_t r = e->read(e->ctx, batch, k * sizeof batch[0],
				    sym.sh_offset + at * sizeof(Elf64_Sym));
		if (r < 0)
			return (int)r;
		k = (size_t)r / sizeof batch[0];
		if (!k)
			break;
		for (size_t j = 0; j < k; j++)
			elfsym_apply(&batch[j], &exec, q, n);
		at += k;
	}
	return 0;
}

ssize_t elfsym_name(const struct elfsym *e, const struct elfsym_query *q, char *buf, size_t cap)
{
	ssize_t r;
	size_t len;
	if (!cap)
		return 0;
	buf[0] = '\0';
	if (!q->found || q->name_off >= e->strtab_size)
		return -ENOENT;
	if (cap - 1 > e->strtab_size - q->name_off)
		cap = (size_t)(e->strtab_size - q->name_off) + 1;
	r = e->read(e->ctx, buf, cap - 1, e->strtab_off + q->name_off);
	if (r < 0)
		return r;
	len = strnlen(buf, (size_t)r);
	buf[len] = '\0';
	return (ssize_t)len;
}
