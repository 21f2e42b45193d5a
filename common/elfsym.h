/* elfsym.h: what a sampled call stack needs from an ELF file: where a file
 * offset lands in the ELF's virtual addresses, the GNU build-id, and the
 * function symbol (.symtab, else .dynsym) that holds an address.
 *
 * Shared by the shim (its stderr summary names the top call sites at exit;
 * the build-ids of mapped modules) and memsup (stacks.json, flame.svg), so
 * it follows the shim's rules: no allocation, no stdio, no exit, small
 * stack buffers.  All input comes through the caller's read function, so
 * the same code reads a file (pread) or the image's own memory, and
 * whatever it reads may be garbage: every offset and count is checked
 * before it is used.  ELF64 little-endian only (x86-64, aarch64, ...).
 * Return convention: 0 (or a length), -errno, or -ENOEXEC for "not an ELF
 * this code reads".
 */
#ifndef MEMTRACE_ELFSYM_H
#define MEMTRACE_ELFSYM_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* Reads up to n bytes at off into buf: bytes read, or -errno. */
typedef ssize_t (*elfsym_read_fn)(void *ctx, void *buf, size_t n, uint64_t off);

struct elfsym {
	elfsym_read_fn read;
	void *ctx;
	uint64_t phoff, shoff;
	uint16_t phnum, shnum, shstrndx, type;
	/* Set by elfsym_resolve: the symbol table used and its strings. */
	uint64_t strtab_off, strtab_size;
};

/* Reads and checks the ELF header.  0 or -ENOEXEC / -errno. */
int elfsym_open(struct elfsym *e, elfsym_read_fn read, void *ctx);

/* The virtual address (as symbols and addr2line use it) of file offset
 * `off`, from the PT_LOAD segment that maps it.  0, or -ENOENT. */
int elfsym_file_vaddr(const struct elfsym *e, uint64_t off, uint64_t *vaddr);

/* The NT_GNU_BUILD_ID note into out (at most cap bytes); its length, 0 if
 * there is none, or -errno.  `mapped`: the reader reads the loaded image,
 * where offset 0 is the lowest PT_LOAD's page (the ELF header) and a
 * segment lies at its p_vaddr from there; otherwise file offsets. */
int elfsym_build_id(const struct elfsym *e, int mapped, uint8_t *out, size_t cap);

/* A section found by name (elfsym_section). */
struct elfsym_section {
	uint64_t offset, size;    /* in the file */
	uint32_t type;            /* SHT_*: SHT_NOBITS has no bytes in the file */
	uint64_t flags;           /* SHF_*: SHF_COMPRESSED for zlib/zstd debug */
};

/* The first section named `name` (".debug_line", ".gnu_debuglink"): 0, or
 * -ENOENT when there is none, -ENOEXEC / -errno. */
int elfsym_section(const struct elfsym *e, const char *name, struct elfsym_section *out);

/* The NT_GNU_BUILD_ID note of the file's SHT_NOTE sections (a separate
 * debug file's program headers need not point at its notes): as
 * elfsym_build_id. */
int elfsym_build_id_sections(const struct elfsym *e, uint8_t *out, size_t cap);

struct elfsym_query {
	uint64_t addr;        /* in: a virtual address of the file */
	uint64_t sym_value;   /* out: the symbol's start (when found) */
	uint64_t sym_size;
	uint32_t name_off;    /* in the symbol table's strings */
	uint8_t found;        /* 1: a sized function symbol holds addr;
	                         2: the nearest function symbol below addr in
	                            its code section has no size (assembly),
	                            taken as holding it */
	uint8_t global;       /* a global (not local) symbol */
};

/* Finds the function symbol of each query (q sorted by addr, ascending) in
 * one pass over .symtab (or .dynsym, when the file has no .symtab).  0 when
 * the table was read (queries left with found == 0 are in no symbol), or
 * -ENOENT when the file has no symbol table, -errno. */
int elfsym_resolve(struct elfsym *e, struct elfsym_query *q, size_t n);

/* The name of a found query (after elfsym_resolve) into buf,
 * NUL-terminated, cut to cap - 1 bytes; its length or -errno. */
ssize_t elfsym_name(const struct elfsym *e, const struct elfsym_query *q, char *buf, size_t cap);

#endif /* MEMTRACE_ELFSYM_H */
