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
 * Then source lines: each module's DWARF is found where debuggers look
 * (debugfile.h: the file itself, /usr/lib/debug/.build-id/, its
 * .gnu_debuglink) and addr2line (addr2line.h) is run once per module with
 * all its frames' call addresses (the byte before each return address).
 * It gives each frame its file and line and, where functions were
 * inlined at that address, the chain of them: the frame interned by pc
 * becomes the innermost inlined function (SYMBOLS_FRAME_INLINED) and
 * `outer` links the frames it was inlined into, the last the function
 * that was really called; C++ names come demangled.  A module without
 * DWARF whose symbols are mangled C++ names has addr2line demangle them.
 * Every module says in `lines` where its lines came from or why there are
 * none, and all of it has one time budget (SYMBOLS_BUDGET_NS) after which
 * the modules left keep their function names alone.
 *
 * Not thread-safe (addr2line is forked).  Return convention: 0 or -ENOMEM.
 */
#ifndef MEMSUP_SYMBOLS_H
#define MEMSUP_SYMBOLS_H

#include <stddef.h>
#include <stdint.h>

#include "analyze/debugfile.h"
#include "stacks.h"

#define SYMBOLS_NO_MODULE UINT32_MAX
#define SYMBOLS_NO_FRAME UINT32_MAX
/* addr2line's time for the whole run, every module */
#define SYMBOLS_BUDGET_NS (120 * UINT64_C(1000000000))
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

/* Where a module's frames got their source lines, or why they have none. */
enum symbols_lines {
	SYMBOLS_LINES_UNREAD = 0,   /* the file was not read (see its state) */
	SYMBOLS_LINES_READ,         /* from its DWARF (debug.how says where) */
	SYMBOLS_LINES_NO_DEBUG,     /* no DWARF in it, no separate debug file */
	SYMBOLS_LINES_MISMATCH,     /* the only debug file is another build's */
	SYMBOLS_LINES_NO_TOOL,      /* no addr2line to read DWARF with */
	SYMBOLS_LINES_FAILED,       /* addr2line failed on it */
	SYMBOLS_LINES_TIMEOUT,      /* the time budget ran out */
};

struct symbols_module {
	char *path;
	uint64_t inode;
	uint32_t dev_major, dev_minor;
	uint8_t build_id[MT_STACKS_BUILD_ID_BYTES];
	uint32_t build_id_len;
	int vdso;
	int perfmap;               /* path is a JIT's /tmp/perf-PID.map (perfmap.h):
				      its frames' file_offset is the address */
	enum symbols_state state;
	int stripped;              /* no .symtab (only exported names) */
	enum symbols_lines lines;
	struct debugfile debug;    /* where its DWARF was looked for and found */
	uint32_t n_frames, n_unnamed, n_no_line; /* its frames (inlined expanded) */
};

struct symbols_frame {
	uint32_t module;          /* index, or SYMBOLS_NO_MODULE */
	uint64_t file_offset;     /* of the return address; the address itself
				     when module is SYMBOLS_NO_MODULE */
	uint64_t vaddr;           /* the return address as an ELF virtual
				     address of the module (0: unknown) */
	const char *function;     /* NULL: unknown; a Python frame's
				     qualified name */
	const char *file;         /* source file as its DWARF names it, or a
				     Python frame's; NULL: unknown */
	uint32_t line;            /* 0: unknown */
	uint32_t flags;           /* SYMBOLS_FRAME_* */
	uint32_t outer;           /* the frame this one was inlined into (same
				     address), or SYMBOLS_NO_FRAME */
	uint8_t python;           /* a Python frame (module SYMBOLS_PYTHON) */
	uint8_t elided_entries;   /* the elision marker's frames entered
				     from C (stacks.h, MT_PYFRAME_ELIDED_CODE) */
	uint32_t elided;          /* the elision marker's frames left out; 0:
				     not the marker */
};

/* The frame is a function inlined into its `outer` frame. */
#define SYMBOLS_FRAME_INLINED 1u
/* The frame is an outer frame of an inlined chain, not interned by pc:
 * lists of frames hold the innermost, and reach it through `outer`. */
#define SYMBOLS_FRAME_EXPANDED 2u

struct symbols {
	struct symbols_module *modules;
	size_t n_modules, cap_modules;
	struct symbols_frame *frames;
	size_t n_frames, cap_frames;
	uint32_t *index;          /* frames by hash (frame + 1; 0 empty) */
	size_t index_cap;
	char **names;             /* function and file names, owned */
	size_t n_names, cap_names;
	uint64_t deadline_ns;     /* of the addr2line budget (0: not started) */
	char tool[4096];          /* addr2line's path; "" none */
	const char *no_tool;      /* why there is none */
	int tool_looked;
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
/* The index of the Python frame that stands for `frames` frames left out
 * of a deep chain, `entries` of them entered from C (stacks.h): named
 * "<N Python frames elided>" (", M entered from C" when M > 0);
 * -ENOMEM. */
int64_t symbols_pyelided(struct symbols *s, uint32_t frames, uint32_t entries);
/* The module of process pid's JIT code, named by its /tmp/perf-PID.map
 * when that file exists and was written since not_before (CLOCK_REALTIME
 * seconds: a map left by an earlier process of the same pid names
 * nothing); -ENOENT when there is none, -ENOMEM.  Its frames are made with
 * symbols_frame(s, module, 0, 0, pc). */
int64_t symbols_perfmap(struct symbols *s, int pid, int64_t not_before);
/* Names every frame not named yet (each module's file read once). */
int symbols_resolve(struct symbols *s);
/* The words of enum symbols_state and enum symbols_lines, for stacks.json. */
const char *symbols_state_name(enum symbols_state st);
const char *symbols_lines_name(enum symbols_lines l);
/* Why a module's frames lack a function or a line, one word (NULL: every
 * frame has both): its state's, "stripped", "no_debug_info", ... */
const char *symbols_module_why(const struct symbols_module *m);

/* The frame after f in a stack, outward at the same address: the function
 * f was inlined into, or SYMBOLS_NO_FRAME. */
static inline uint32_t symbols_outer(const struct symbols *s, uint32_t f)
{
	return f < s->n_frames ? s->frames[f].outer : SYMBOLS_NO_FRAME;
}

#endif /* MEMSUP_SYMBOLS_H */
