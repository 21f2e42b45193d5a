/* symbols.h: names for the frames of sampled call stacks, read after the
 * run from the ELF files the stacks files name (common/elfsym.h), never
 * in the traced program.
 *
 * Modules are interned by what identifies a mapped file (path, device,
 * inode, build-id), frames by (module, file offset of the return
 * address); each module's file is opened once, its build-id compared with
 * the one the shim read from the mapped image (a file replaced since then
 * names nothing: its frames keep their offsets only), and its function
 * symbols (.symtab, else .dynsym) looked up for all its frames in one
 * pass.  A frame in no module (JIT code) keeps its absolute address.
 *
 * Not thread-safe.  Return convention: 0 or -ENOMEM.
 */
#ifndef MEMSUP_SYMBOLS_H
#define MEMSUP_SYMBOLS_H

#include <stddef.h>
#include <stdint.h>

#include "stacks.h"

#define SYMBOLS_NO_MODULE UINT32_MAX
/* The module of Python frames (analyze/pyframes.h): none, a frame of the
 * interpreter's own code table. */
#define SYMBOLS_PYTHON UINT32_C(0xFFFFFFFE)

enum symbols_state {
	SYMBOLS_UNREAD = 0, /* not looked at yet */
	SYMBOLS_NAMED,      /* read: frames in a function are named */
	SYMBOLS_MISSING,    /* the file could not be opened */
	SYMBOLS_NOT_ELF,    /* not an ELF file this reader reads */
	SYMBOLS_CHANGED,    /* its build-id is not the mapped image's */
	SYMBOLS_NO_SYMBOLS, /* no .symtab nor .dynsym */
	SYMBOLS_NO_FILE,    /* the vdso */
};

struct symbols_module {
	char *path;
	uint64_t inode;
	uint32_t dev_major, dev_minor;
	uint8_t build_id[MT_STACKS_BUILD_ID_BYTES];
	uint32_t build_id_len;
	int vdso;
	enum symbols_state state;
};

struct symbols_frame {
	uint32_t module;          /* index, or SYMBOLS_NO_MODULE */
	uint64_t file_offset;     /* of the return address; the address itself
				     when module is SYMBOLS_NO_MODULE */
	uint64_t vaddr;           /* the return address as an ELF virtual
				     address of the module (0: unknown) */
	const char *function;     /* NULL: unknown; a Python frame's
				     qualified name */
	const char *file;         /* source file (a Python frame's), or NULL */
	uint32_t line;            /* its line, 0: unknown */
	uint8_t python;           /* a Python frame (module SYMBOLS_PYTHON) */
};

struct symbols {
	struct symbols_module *modules;
	size_t n_modules, cap_modules;
	struct symbols_frame *frames;
	size_t n_frames, cap_frames;
	uint32_t *index;          /* frames by hash (frame + 1; 0 empty) */
	size_t index_cap;
	char **names;             /* function names, owned */
	size_t n_names, cap_names;
};

void symbols_init(struct symbols *s);
void symbols_free(struct symbols *s);

/* The index of the module described by a stacks file's entry; -ENOMEM. */
int64_t symbols_module(struct symbols *s, const struct mt_stacks_module *m);
/* The index of the frame at return address pc, in `module` (an index from
 * symbols_module) mapped at `start` from `file_offset`, or in no module
 * (module SYMBOLS_NO_MODULE); -ENOMEM. */
int64_t symbols_frame(struct symbols *s, uint32_t module, uint64_t start, uint64_t file_offset,
		      uint64_t pc);
/* The index of the Python frame (function, file, line): one frame for
 * each distinct three; -ENOMEM.  file may be NULL. */
int64_t symbols_pyframe(struct symbols *s, const char *function, const char *file, uint32_t line);
/* Names every frame not named yet (each module's file read once). */
int symbols_resolve(struct symbols *s);
/* The words of enum symbols_state, for stacks.json. */
const char *symbols_state_name(enum symbols_state st);

#endif /* MEMSUP_SYMBOLS_H */
