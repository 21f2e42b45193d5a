/* python.h: the Python frames of a sampled allocation in a CPython image
 * (common/stacks.h, "Python frames").
 *
 * Finding the interpreter.  When the module table (modules.c) adds the
 * first executable mapping of a file named python* or libpython*, it hands
 * it to python_probe, which looks up `Py_Version`, `_PyRuntime` and
 * `PyCode_Type` in the mapped image's dynamic symbol table (its GNU hash
 * table, read from memory: the loader has put the dynamic section's
 * addresses in place).  Py_Version's major.minor picks the layout from
 * python.c's one table, an entry per version (3.11, 3.12, 3.13); a
 * version not in it leaves the image at MT_PY_UNKNOWN (native frames
 * only) and the header says so, as does a 3.13 whose own _Py_DebugOffsets
 * (at _PyRuntime's start) disagree with its entry (a free-threaded build).
 * That is all the probe does: no dlsym (it may allocate and takes the
 * loader's lock), no call into the interpreter.
 *
 * The walk, at sample time only (never on the allocation fast path),
 * under sites.c's lock: this thread's thread state (pthread_getspecific of
 * the interpreter's own key: this thread's and no other's), then its
 * current frame and `previous` links to the outermost frame, across the
 * frames entered from C (3.11's is_entry; 3.12 and 3.13's shim frames, an
 * evaluation loop's own, skipped: they mark the frame entered from C), at
 * most PYTHON_WALK_HOPS links.  A chain of at most PYTHON_FRAMES_MAX
 * frames is kept whole; a deeper one keeps its PYTHON_KEEP_INNER
 * innermost frames (the allocation's own), its outermost ones (the
 * program's entry: its <module>, main, ...) and between them one marker
 * that counts the frames left out and those of them entered from C
 * (stacks.h, MT_PYFRAME_ELIDED_CODE).  The frames between are only
 * stepped over: their link, their code object's type; what is copied
 * and named is of the kept frames alone, so a sample's cost grows by a
 * few loads a frame of depth, up to the hop limit.
 * What is this thread's own live state (its thread state, the frames in
 * its data stack's chunks, the code objects they hold) is read directly;
 * anything else (a generator's frame, the chunk headers, a new code
 * object's names and line table) through process_vm_readv on ourselves,
 * where a stale or wild pointer gives EFAULT, never a fault in the
 * program, and the walk stops there (python.c, "The walk", says why the
 * direct reads are safe).  A sample's walk costs no system call once its
 * code objects are known (bench/RESULTS.md: its cost per sample).  The
 * interpreter is never called: no allocation, no lock, no GIL.
 *
 * Each code object is added once to the stacks file's code table (its
 * qualified name and file name copied from compact ASCII/UTF-8 strings,
 * its first line and line table), remembered in a private cache by
 * address and checked against the object's own fields at each use (an
 * address reused by another code object gets a new entry).
 */
#ifndef MEMTRACE_PYTHON_H
#define MEMTRACE_PYTHON_H

#include <stdint.h>
#include <sys/types.h>

#include "stacks.h"

/* The offsets the walk reads of one CPython minor version, in bytes
 * (python.c holds the table, an entry per version). */
struct python_layout {
	uint32_t version;            /* major.minor as Py_Version's top half */
	uint32_t flags;              /* PYTHON_NO_CFRAME, PYTHON_SHIM_ENTRY
					(python.c: what the walk does differently) */
	uint32_t rt_tss_key;         /* _PyRuntime.gilstate.autoTSSkey (Py_tss_t:
					int _is_initialized, pthread_key_t _key) */
	uint32_t ts_thread_id;       /* PyThreadState.thread_id (pthread_self) */
	uint32_t ts_cframe;          /* PyThreadState.cframe (current_frame
					with PYTHON_NO_CFRAME) */
	uint32_t ts_chunk;           /* PyThreadState.datastack_chunk */
	uint32_t chunk_previous, chunk_size, chunk_data; /* _PyStackChunk */
	uint32_t cframe_frame;       /* _PyCFrame.current_frame */
	uint32_t fr_code;            /* _PyInterpreterFrame.f_code (f_executable) */
	uint32_t fr_previous;
	uint32_t fr_instr;           /* prev_instr (instr_ptr) */
	uint32_t fr_entry;           /* is_entry (one byte), or with
					PYTHON_SHIM_ENTRY owner (one byte) */
	uint32_t owner_cstack;       /* FRAME_OWNED_BY_CSTACK: a shim frame */
	uint32_t fr_bytes;           /* bytes read of a frame */
	uint32_t co_type;            /* ob_type */
	uint32_t co_size;            /* ob_size: code units */
	uint32_t co_firstlineno;
	uint32_t co_filename, co_qualname, co_linetable;
	uint32_t co_code;            /* co_code_adaptive */
	uint32_t str_length, str_state, str_ascii_data, str_utf8_length, str_utf8;
	uint32_t str_compact_data;   /* a compact non-ASCII str's code points */
	uint32_t bytes_size, bytes_data;
};

/* struct python_layout's flags (python.c says what each changes). */
#define PYTHON_NO_CFRAME  (1u << 0) /* 3.13: no _PyCFrame */
#define PYTHON_SHIM_ENTRY (1u << 1) /* 3.12+: shim frames, no is_entry */
#define PYTHON_DEBUG_OFFSETS (1u << 2) /* 3.13+: _PyRuntime starts with
					  _Py_DebugOffsets, checked at the probe */

/* The bytes of _Py_DebugOffsets the probe reads, from _PyRuntime's start. */
#define PYTHON_DEBUG_BYTES 568u

/* Whether the _Py_DebugOffsets at d (PYTHON_DEBUG_BYTES of them) agree
 * with L: its cookie, a build with the GIL (a free-threaded build lays
 * its objects out otherwise, under the same version), and each offset of
 * the walk it publishes.  1 if so. */
int python_debug_offsets_agree(const struct python_layout *L, const uint8_t *d);

/* The layout of Py_Version's major.minor, or NULL: a version the shim
 * does not know. */
const struct python_layout *python_layout_find(uint32_t py_version);

/* Python frames kept per sample at most, the elision marker included:
 * they take the stack's last slots (the outermost native frames give way
 * first).  Of a deeper chain, the innermost PYTHON_KEEP_INNER, the
 * marker, and the outermost PYTHON_FRAMES_MAX - PYTHON_KEEP_INNER - 1. */
#define PYTHON_FRAMES_MAX 16u
#define PYTHON_KEEP_INNER 8u
/* Links (frames and shims) a walk follows at most: past CPython's
 * default recursion limit (1000) with room.  Of a chain longer than that,
 * the frames after the marker are the last the walk reached, not the
 * outermost, and the sample counts in py_truncated. */
#define PYTHON_WALK_HOPS 4096u
/* process_vm_readv calls a walk makes at most for frames off the data
 * stack (a generator's or coroutine's frame: two each, its header and its
 * code object's type), as many as 16 such frames cost before the walk
 * went on past them; the walk stops there like at the hop limit. */
#define PYTHON_WALK_PEEKS 32u

/* Makes room for `n` code entries in the table; 1 if there is room. */
typedef int (*python_reserve_fn)(uint32_t n);

/* A mapped file the module table is adding: its ELF header is mapped at
 * elf_start in process pid.  Probes it if its name is python's and no
 * interpreter was found yet; records the outcome in h's py_state and
 * py_version. */
void python_probe(struct mt_stacks_header *h, pid_t pid, uintptr_t elf_start, const char *path,
		  size_t path_len);

/* Appends the calling thread's Python frames (tagged, stacks.h) to
 * pcs[0..n), keeping at most max in all (native frames past max -
 * Python frames are dropped and MT_STACK_TRUNCATED set), new code objects
 * added to h's table; a chain deeper than PYTHON_FRAMES_MAX as the walk
 * above says, its marker in the middle.  Returns the new count; without a
 * known interpreter returns n at once.  Caller holds sites.c's lock. */
unsigned python_stack(struct mt_stacks_header *h, uint64_t *pcs, unsigned n, unsigned max,
		      uint32_t *flags, python_reserve_fn reserve);

/* The walk alone: fills up to max frames (code object, its names and line
 * table, instruction offset in code units, entry) of the calling thread,
 * innermost first; the count, 0 when there is no Python here.  When the
 * chain is deeper than max, out[0..inner) are its innermost frames and
 * out[inner..count) its outermost ones, and *elided counts the frames
 * between (*elided_entries of them entered from C); else inner is the
 * count and *elided 0.  *cut is 1 when the walk ended before the chain
 * did (the hop limit, an unreadable frame). */
struct python_raw_frame {
	uintptr_t code;
	uintptr_t name, file, lines; /* its co_qualname, co_filename, co_linetable */
	uintptr_t at_instr;          /* the frame's instruction pointer */
	uint32_t firstlineno;
	uint32_t instr;
	int entry;
	int direct;                  /* its code object may be read directly */
};
struct python_walked {
	unsigned inner;
	uint32_t elided, elided_entries;
	int cut;
};
unsigned python_walk(struct python_raw_frame *out, unsigned max, struct python_walked *w);

#endif /* MEMTRACE_PYTHON_H */
