/* stacks.h: the second per-image contract between libmemtrace.so (writer)
 * and memsup (reader): the sampled call sites of one process image.
 *
 * The shim samples allocations (see "Sampling" below) and keeps, for every
 * distinct call stack it sampled, the estimated bytes of the sampled blocks
 * still live, live at the image's heap peak, and ever allocated there.  With
 * MEMTRACE_DIR set and a record file made, that table lives in a file
 * "<pid>.<gen>.mts" beside the image's "<pid>.<gen>.mtr" record (same pid
 * and gen), memory-mapped and updated in place, as the record is.  The file
 * is made at the image's first sample, so an image that never sampled has
 * none.  Without a record file the table lives in the shim's own memory and
 * feeds the stderr summary only.  memsup packs the files of a finished run
 * into one (supervisor/collect/stackfold.h); the layout here is the
 * contract either way.
 *
 * Layout: fixed offsets, MT_STACKS_SIZE bytes at most.  The header is at 0,
 * the module table at MT_STACKS_MODULES_OFFSET, the stack table at
 * MT_STACKS_STACKS_OFFSET.  The file is allocated in pieces as the tables
 * fill (fallocate, else written zeros), so it is usually much shorter than
 * MT_STACKS_SIZE and may hold holes; the shim never publishes an entry whose
 * bytes the file does not hold.
 *
 * Consistency rules (what a reader may rely on while the writer runs):
 *  - The header's identity, the module table's first entries and the
 *    catch-all stack 0 are written before `magic` is stored with release
 *    order; a file without the magic, or with another version or layout
 *    constant, is not a stacks file.
 *  - Modules and stacks are append-only.  Entry i is filled completely, then
 *    `module_count` / `stack_count` is raised to i+1 with release order;
 *    read the count (acquire), then the entries below it.  A published
 *    entry's identity (addresses, path, frames) never changes again.
 *  - Every column (`live_*`, `peak_*`, `total_*`) and header counter is a
 *    naturally aligned 64-bit field written with one store: each one read
 *    alone is a value it had, but two fields are not a snapshot.
 *  - The peak columns are rewritten as a whole under `peak_seq`, a sequence
 *    lock: the writer makes it odd, writes the peak columns, `peak_heap` and
 *    `peak_mono_ns`, then makes it even (release).  A reader loads it
 *    (acquire), copies, loads it again, and keeps the copy only if both
 *    loads were the same even number.
 *  - The image's record counts the changes: its stacks_changes (record.h)
 *    is raised with release order after the live columns changed (under
 *    the shim's lock, so after whole updates) and when the file is made;
 *    a reader that polls the record (mapped, no system call) reads this
 *    file only when that count moved.
 *  - End of image: the shim takes its last peak snapshot, then stores
 *    `state` = MT_STACKS_FINISHED (release).  An exec that fails stores
 *    RUNNING again.  Live columns may still move after that (a destructor
 *    that frees), as the record's counters may.
 *
 * Sampling.  Each thread counts down the bytes it allocates (usable bytes,
 * as the record counts them) from a value drawn from an exponential
 * distribution of mean `sample_bytes` (MEMTRACE_SAMPLE_BYTES, default
 * MT_STACKS_DEFAULT_SAMPLE_BYTES); the block that takes the count to zero is
 * sampled and a new count is drawn.  A block of S bytes is thus sampled with
 * probability 1 - exp(-S/R) (R = sample_bytes), and each sampled block
 * counts for S / (1 - exp(-S/R)) estimated bytes, which makes every sum
 * below an unbiased estimate of the bytes of all blocks (tcmalloc's and
 * heapprofd's estimator).  sample_bytes == 1 samples every block and counts
 * it for exactly S bytes.  A sampled block's free (or realloc) removes it
 * from the live columns.
 *
 * Mapped memory.  Anonymous mappings the program makes itself (its calls of
 * the exported mmap, mmap64 and mremap; not glibc's malloc, whose large
 * chunks come from its internal __mmap and are heap blocks above, nor the
 * loader's) are sampled by the same countdown, one countdown per thread
 * shared with the heap: a mapping of S bytes (its length rounded up to whole
 * pages, as record.h's map figures count it, PROT_NONE reservations
 * included) is sampled with probability 1 - exp(-S/R) and counts for
 * S / (1 - exp(-S/R)).  Their stacks carry MT_STACK_MMAP: a stack's
 * identity is its frames and that bit, so a heap site and a mapping site
 * are never one stack.  A munmap (or a MAP_FIXED mapping over it, or an
 * mremap moving it away) of part of a sampled mapping keeps the rest: the
 * remaining pieces count for the sample's weight times their share of its
 * length (still unbiased; exact at sample_bytes 1), each piece a sampled
 * block of its own in live_count; unmapping all of it removes it
 * (sampled_frees).  An mremap is the old range unmapped and the new range
 * mapped anew: sampled again, at the mremap's call site, for its whole new
 * length (MREMAP_DONTUNMAP keeps the old range).  File-backed mappings are
 * not sampled (MAP_ANONYMOUS alone), and neither is a mapping made or
 * unmapped by a signal handler that interrupted the shim, as record.h's
 * map figures do not count it.  A new mapping over a sampled range, made
 * while another thread's fork holds the table's lock, is counted in
 * lost_frees and that range stays live until it is unmapped (munmap holds
 * the map table's lock, which a fork takes first, so it never meets this).  At most
 * MT_STACKS_MAP_SAMPLES sampled mappings are live at once; a sample
 * beyond them is untracked (below).  The catch-all stack 0 has no kind.
 *
 * The image's peak.  The set of sampled blocks changes only at sampled
 * events (a sampled allocation or mapping, a sampled block's free, a
 * sampled mapping's munmap).  At each event, and at the end of the image,
 * the shim first compares the record's total_peak (heap + its own
 * mappings, record.h) with `seen_total_peak`, the total_peak it saw at the
 * previous event: if the peak rose in between, the set as it stood
 * (unchanged since that event) was live at the new peak, and the shim
 * copies the live columns into the peak columns (only the stacks changed
 * since the previous copy) with `peak_total` = that total_peak and
 * `peak_heap` = the heap_peak of that moment.  So:
 *  - the peak columns are the sampled set, heap and mmap kinds, at the
 *    image's total peak, exactly (with every block sampled, the exact heap
 *    and anonymous mappings at that peak), except that
 *  - while the image runs, a peak reached after the last event is not in
 *    them yet: when the record's total_peak exceeds `seen_total_peak`, the
 *    live columns are the set at the peak (nothing changed since the rise).
 * An image that maps nothing itself has total_peak == heap_peak: its peak
 * columns are the set at its heap peak, as they were before mappings were
 * sampled.  An image that does map is taken at its total peak, which may
 * be a moment of a large file mapping (not sampled); `seen_heap_peak` is
 * still the heap_peak at the last event.  A table written before mappings
 * were sampled has seen_total_peak 0: its columns are at the heap peak.
 * A multithreaded image's peaks lag by up to 64 KiB per thread (record.h),
 * and the comparison with them.
 *
 * Stacks.  pc[0] is the return address into the function that called the
 * allocator (malloc, calloc, ..., operator new's own call to malloc), pc[1]
 * its caller's, and so on: return addresses, so a symbolizer looks up
 * pc - 1.  They are absolute addresses of this image; the module table
 * turns them into module + offset: the module entry whose [start, end)
 * holds the pc (the newest such entry among the first `modules_seen` of the
 * stack) maps it to the file offset pc - start + file_offset of `path`,
 * which the file's program headers turn into an ELF virtual address.  A pc
 * in no module (JIT code, a library unloaded before the table saw it) stays
 * an address.  Stack 0 is the catch-all (MT_STACK_CATCHALL, no frames):
 * samples whose stack did not fit the table, or could not be taken at all.
 *
 * Python frames.  In a CPython image whose version the shim knows
 * (preload/sampling/python.h), a sample also reads the interpreter's frame chain of
 * the allocating thread, and the stack's last frames are its Python
 * frames, innermost first, after the native ones: each a tagged value
 * (MT_PYFRAME_*, bits 63-60 are 0xA, which no user-space address has)
 * holding an index into the code table, the instruction's offset in code
 * units and whether the frame was entered from C (its run of Python frames
 * ends there: it belongs to the next native frame of the interpreter's
 * evaluation loop).  The code table (at MT_STACKS_CODES_OFFSET, counted by
 * `code_count`, append-only and published as the stacks are) holds, per
 * code object, its qualified name, file name, first line and a copy of its
 * line table, from which a reader works out the line (the table's format is
 * the interpreter version's: `py_version`).  `py_state` says whether this
 * image is a Python the shim read (MT_PY_WALKED), one whose version it does
 * not know (MT_PY_UNKNOWN: native frames only), or neither (MT_PY_NONE).
 * A chain deeper than the shim keeps (python.h, PYTHON_FRAMES_MAX) keeps
 * its innermost and its outermost frames, the program's own entry among
 * them, and between them one marker (MT_PYFRAME_ELIDED_CODE in the code
 * field) whose instruction field says how many frames were left out (low
 * 24 bits) and how many of those were entered from C (high 8 bits,
 * at most 255): a reader places the frames around it (memsup:
 * supervisor/analyze/pyframes.h) and names it; a reader that does not
 * know it finds no code entry of that index ("unknown code").
 * These fields sat in the header's zeroed tail before, so older files read
 * as "no Python", and a reader of this version reads older files as they
 * were: no version bump.
 */
#ifndef MEMTRACE_STACKS_H
#define MEMTRACE_STACKS_H

#include <stdint.h>

#define MT_STACKS_SUFFIX ".mts"

/* ---- layout constants ---------------------------------------------------- */
#define MT_STACKS_MAGIC   UINT64_C(0x3130304b5453544d) /* "MTSTK001" little-endian */
#define MT_STACKS_VERSION 1u

#define MT_STACKS_DEFAULT_SAMPLE_BYTES (512u * 1024u)
#define MT_STACKS_FRAMES        32u   /* frames kept per stack (innermost first) */
#define MT_STACKS_SLOTS         8192u /* distinct stacks, stack 0 included */
#define MT_STACKS_MODULE_SLOTS  1024u /* executable mappings of files */
#define MT_STACKS_PATH_BYTES    432u  /* module path, NUL-terminated, truncated */
#define MT_STACKS_BUILD_ID_BYTES 32u
#define MT_STACKS_MAP_SAMPLES   4096u /* sampled mappings live at once */

#define MT_STACKS_HEADER_BYTES  4096u
#define MT_STACKS_MODULE_BYTES  512u
#define MT_STACKS_STACK_BYTES   336u
#define MT_STACKS_MODULES_OFFSET MT_STACKS_HEADER_BYTES
#define MT_STACKS_STACKS_OFFSET \
	(MT_STACKS_MODULES_OFFSET + MT_STACKS_MODULE_SLOTS * MT_STACKS_MODULE_BYTES)
#define MT_STACKS_CODE_SLOTS    512u  /* distinct Python code objects */
#define MT_STACKS_CODE_BYTES    2048u
#define MT_STACKS_CODE_NAME_BYTES 160u  /* qualified name, NUL-terminated */
#define MT_STACKS_CODE_FILE_BYTES 320u  /* file name, NUL-terminated */
#define MT_STACKS_CODE_LINES_BYTES 1536u /* line table bytes kept */
#define MT_STACKS_CODES_OFFSET \
	(MT_STACKS_STACKS_OFFSET + MT_STACKS_SLOTS * MT_STACKS_STACK_BYTES)
#define MT_STACKS_SIZE (MT_STACKS_CODES_OFFSET + MT_STACKS_CODE_SLOTS * MT_STACKS_CODE_BYTES)

/* A Python frame in a stack's pc[] (see "Python frames" above). */
#define MT_PYFRAME_TAG_MASK  UINT64_C(0xF000000000000000)
#define MT_PYFRAME_TAG       UINT64_C(0xA000000000000000)
#define MT_PYFRAME_ENTRY     UINT64_C(0x0800000000000000) /* entered from C */
#define MT_PYFRAME_CODE_SHIFT 32
#define MT_PYFRAME_CODE_MASK UINT64_C(0xFFFFF)            /* code table index */
#define MT_PYFRAME_INSTR_MASK UINT64_C(0xFFFFFFFF)        /* code units */
#define MT_PYFRAME_ELIDED_CODE UINT64_C(0xFFFFE)            /* the marker */
#define MT_PYFRAME_ELIDED_MAX  UINT64_C(0xFFFFFF)           /* frames it counts */
#define MT_PYFRAME_ELIDED_ENTRIES_SHIFT 24
static inline int mt_pyframe_is(uint64_t pc)
{
	return (pc & MT_PYFRAME_TAG_MASK) == MT_PYFRAME_TAG;
}
static inline uint64_t mt_pyframe_make(uint32_t code, uint32_t instr, int entry)
{
	return MT_PYFRAME_TAG | (entry ? MT_PYFRAME_ENTRY : 0) |
	       ((uint64_t)(code & MT_PYFRAME_CODE_MASK) << MT_PYFRAME_CODE_SHIFT) | instr;
}
static inline uint32_t mt_pyframe_code(uint64_t pc)
{
	return (uint32_t)((pc >> MT_PYFRAME_CODE_SHIFT) & MT_PYFRAME_CODE_MASK);
}
static inline uint32_t mt_pyframe_instr(uint64_t pc)
{
	return (uint32_t)(pc & MT_PYFRAME_INSTR_MASK);
}
/* The marker of `frames` Python frames left out, `entries` of them
 * entered from C (each clamped to its field). */
static inline uint64_t mt_pyframe_elided(uint32_t frames, uint32_t entries)
{
	uint64_t f = frames < MT_PYFRAME_ELIDED_MAX ? frames : MT_PYFRAME_ELIDED_MAX;
	uint64_t e = entries < 255u ? entries : 255u;
	return MT_PYFRAME_TAG | (MT_PYFRAME_ELIDED_CODE << MT_PYFRAME_CODE_SHIFT) |
	       (e << MT_PYFRAME_ELIDED_ENTRIES_SHIFT) | f;
}
static inline int mt_pyframe_is_elided(uint64_t pc)
{
	return mt_pyframe_is(pc) && mt_pyframe_code(pc) == MT_PYFRAME_ELIDED_CODE;
}
static inline uint32_t mt_pyframe_elided_frames(uint64_t pc)
{
	return (uint32_t)(pc & MT_PYFRAME_ELIDED_MAX);
}
static inline uint32_t mt_pyframe_elided_entries(uint64_t pc)
{
	return (uint32_t)((pc >> MT_PYFRAME_ELIDED_ENTRIES_SHIFT) & 255u);
}

/* The interpreter's evaluation loop: each of its native frames ran a run
 * of the stack's Python frames (see "Python frames" above). */
#define MT_PY_EVAL_FUNCTION "_PyEval_EvalFrameDefault"

/* py_state */
enum mt_py_state {
	MT_PY_NONE = 0,    /* no CPython found in the image (yet) */
	MT_PY_WALKED = 1,  /* a CPython of a known layout: its frames are read */
	MT_PY_UNKNOWN = 2, /* a CPython whose layout the shim does not know
			      (py_version says which): native frames only */
};

/* state */
enum mt_stacks_state {
	MT_STACKS_RUNNING = 0,
	MT_STACKS_FINISHED = 1, /* the image ended (exit, _exit, exec): final peak */
};

/* Header flags (set at creation, or atomically OR-ed later). */
#define MT_STACKS_FLAG_INHERITED    (1u << 0) /* a fork child: the table
                                                 started as its parent's */
#define MT_STACKS_FLAG_MODULES_FULL (1u << 1) /* module table full */
#define MT_STACKS_FLAG_FILE_FULL    (1u << 2) /* the file could not grow: later
                                                 stacks went to stack 0 */
#define MT_STACKS_FLAG_CFI_OFF      (1u << 3) /* the shim's cached unwind rules
                                                 gave a stack libgcc's unwinder
                                                 did not: libgcc walked the
                                                 image's later DWARF stacks */

/* Stack flags. */
#define MT_STACK_FP        (1u << 0) /* frames from the frame-pointer walk */
#define MT_STACK_BACKTRACE (1u << 1) /* frames from the unwind tables (.eh_frame) */
#define MT_STACK_TRUNCATED (1u << 2) /* deeper than MT_STACKS_FRAMES */
#define MT_STACK_CATCHALL  (1u << 3) /* stack 0 (see above) */
#define MT_STACK_MMAP      (1u << 4) /* kind "mmap": anonymous mappings the
                                        program made itself ("Mapped memory"
                                        above); without it kind "heap" */
#define MT_STACK_PYTHON    (1u << 8) /* its last frames are Python frames */

/* Module flags. */
#define MT_MODULE_PATH_TRUNCATED (1u << 0)
#define MT_MODULE_SELF           (1u << 1) /* libmemtrace.so itself */
#define MT_MODULE_VDSO           (1u << 2) /* "[vdso]": no file */

struct mt_stacks_header {
	/* -- written before magic (release), constant afterwards ------------- */
	uint64_t magic;
	uint32_t version;
	uint32_t header_bytes;   /* MT_STACKS_HEADER_BYTES */
	uint32_t module_bytes;   /* MT_STACKS_MODULE_BYTES */
	uint32_t module_slots;   /* MT_STACKS_MODULE_SLOTS */
	uint32_t stack_bytes;    /* MT_STACKS_STACK_BYTES */
	uint32_t stack_slots;    /* MT_STACKS_SLOTS */
	uint32_t max_frames;     /* MT_STACKS_FRAMES */
	uint32_t flags;          /* MT_STACKS_FLAG_* */
	int32_t pid;             /* the record's pid and gen */
	uint32_t gen;
	uint64_t sample_bytes;   /* mean sampling interval R; 1 = every block */
	uint64_t start_mono_ns;  /* when this table was made */

	/* -- published counts (release) -------------------------------------- */
	uint32_t module_count;
	uint32_t stack_count;

	/* -- activity ---------------------------------------------------------- */
	uint64_t samples;          /* sampled allocations (the catch-all's too) */
	uint64_t sampled_frees;    /* sampled blocks freed (or reallocated) */
	/* Sampled blocks not tracked because the shim's live table was full:
	 * counted here (and in their stack's total_*), never in live or peak
	 * columns, since their free could not be recognised. */
	uint64_t untracked_samples;
	uint64_t untracked_bytes;  /* their estimated bytes */
	uint64_t catchall_samples; /* samples given to stack 0 */
	/* A sample fell due while its thread was already inside the shim (a
	 * signal handler that allocates), or while a fork() of another thread
	 * held the table's lock (sites.c, sites_forking): not taken, counted. */
	uint64_t skipped_samples;
	/* Frees of sampled blocks that could not be recognised at once (a
	 * signal handler freeing while its thread was inside the shim, or
	 * while a fork held the lock) and were queued; lost_frees could not
	 * even be queued: their blocks stay in the live columns until their
	 * address is allocated again. */
	uint64_t lost_frees;
	uint64_t fp_samples;       /* stacks taken by the frame-pointer walk */
	uint64_t backtrace_samples;/* stacks taken by the DWARF unwinder */
	uint64_t sample_ns;        /* time spent taking samples (stack + table) */
	uint64_t module_refreshes; /* reads of /proc/self/maps for the table */

	/* -- the image's peak (see above) -------------------------------------- */
	uint64_t peak_seq;         /* sequence lock of the peak columns */
	uint64_t peak_heap;        /* heap_peak the peak columns were live at */
	uint64_t peak_mono_ns;     /* when the shim copied them */
	uint64_t seen_heap_peak;   /* heap_peak at the last sampled event */

	/* -- end of image -------------------------------------------------------- */
	uint64_t end_mono_ns;
	uint32_t state;            /* enum mt_stacks_state, stored last */
	uint32_t reserved0;

	/* -- appended (still version 1: zero in a table written before) ------ */
	uint64_t peak_total;       /* total_peak the peak columns were live at */
	uint64_t seen_total_peak;  /* total_peak at the last sampled event */
	uint64_t map_samples;      /* of `samples`, sampled mappings (kind mmap) */
	uint64_t map_unmaps;       /* sampled mappings unmapped whole (also in
	                              sampled_frees) */
	uint64_t map_cuts;         /* sampled mappings unmapped in part */
	/* -- Python (see "Python frames"; all 0 in a file without them) ------- */
	uint32_t code_bytes;       /* MT_STACKS_CODE_BYTES, set with the layout */
	uint32_t code_slots;       /* MT_STACKS_CODE_SLOTS */
	uint32_t code_count;       /* published count (release) */
	uint32_t py_state;         /* enum mt_py_state */
	uint64_t py_version;       /* the interpreter's Py_Version (0x030b07f0) */
	uint64_t py_samples;       /* samples that held Python frames */
	uint64_t py_frames;        /* Python frames taken, all samples */
	uint64_t py_truncated;     /* samples whose Python or native frames were cut */
};

/* Code table flags. */
#define MT_CODE_NAME_TRUNCATED  (1u << 0)
#define MT_CODE_FILE_TRUNCATED  (1u << 1)
#define MT_CODE_LINES_TRUNCATED (1u << 2) /* lines past the copy are unknown */
#define MT_CODE_NAME_UNREADABLE (1u << 3) /* not compact ASCII/UTF-8 text */
#define MT_CODE_FILE_UNREADABLE (1u << 4)

/* One Python code object (see "Python frames"). */
struct mt_stacks_code {
	uint64_t addr;            /* the code object in this image */
	uint32_t firstlineno;
	uint32_t flags;           /* MT_CODE_* */
	uint32_t lines_len;       /* bytes of `lines` that hold the table */
	uint32_t lines_full;      /* the table's whole length */
	uint32_t reserved[2];
	char name[MT_STACKS_CODE_NAME_BYTES];
	char file[MT_STACKS_CODE_FILE_BYTES];
	uint8_t lines[MT_STACKS_CODE_LINES_BYTES];
};

/* One executable mapping of a file (or the vdso), from /proc/self/maps. */
struct mt_stacks_module {
	uint64_t start, end;      /* [start, end) in this image */
	uint64_t file_offset;     /* of `start` in the file */
	uint64_t inode;
	uint32_t dev_major, dev_minor;
	uint32_t flags;           /* MT_MODULE_* */
	uint32_t build_id_len;    /* 0: none found (read from the mapped ELF) */
	uint8_t build_id[MT_STACKS_BUILD_ID_BYTES];
	char path[MT_STACKS_PATH_BYTES];
};

struct mt_stack {
	uint32_t nframes;         /* 0..MT_STACKS_FRAMES */
	uint32_t flags;           /* MT_STACK_* */
	uint32_t modules_seen;    /* module_count when the stack was added */
	uint32_t reserved0;
	/* Estimated bytes, sample counts, and the estimate's variance in KiB^2
	 * (bytes^2 / 2^20): each sampled block of S bytes counted for w bytes
	 * adds w * (w - S), an unbiased estimate of its share of the variance
	 * (0 when every block is sampled), so sqrt(var) * 1024 is the standard
	 * error of the bytes in bytes. */
	uint64_t live_bytes, live_count, live_var;  /* sampled blocks live now */
	uint64_t peak_bytes, peak_count, peak_var;  /* live at the image's peak */
	uint64_t total_bytes, total_count;          /* every sample ever taken here */
	uint64_t pc[MT_STACKS_FRAMES];
};

/* Entry i of each table, from the table's first byte. */
static inline struct mt_stacks_module *mt_stacks_module(void *table, uint32_t i)
{
	return (struct mt_stacks_module *)((char *)table + MT_STACKS_MODULES_OFFSET +
					   (uint64_t)i * MT_STACKS_MODULE_BYTES);
}

static inline struct mt_stack *mt_stacks_stack(void *table, uint32_t i)
{
	return (struct mt_stack *)((char *)table + MT_STACKS_STACKS_OFFSET +
				   (uint64_t)i * MT_STACKS_STACK_BYTES);
}

static inline struct mt_stacks_code *mt_stacks_code(void *table, uint32_t i)
{
	return (struct mt_stacks_code *)((char *)table + MT_STACKS_CODES_OFFSET +
					 (uint64_t)i * MT_STACKS_CODE_BYTES);
}

/* Whether a header's code table is of this layout (else a reader ignores
 * it, and its Python frames name no code). */
static inline int mt_stacks_codes_ok(const struct mt_stacks_header *h)
{
	return h->code_bytes == MT_STACKS_CODE_BYTES && h->code_slots == MT_STACKS_CODE_SLOTS;
}

/* The version and layout constants of this build: what a writer stores
 * before the magic, and what a reader requires of a file. */
static inline void mt_stacks_set_layout(struct mt_stacks_header *h)
{
	h->version = MT_STACKS_VERSION;
	h->header_bytes = MT_STACKS_HEADER_BYTES;
	h->module_bytes = MT_STACKS_MODULE_BYTES;
	h->module_slots = MT_STACKS_MODULE_SLOTS;
	h->stack_bytes = MT_STACKS_STACK_BYTES;
	h->stack_slots = MT_STACKS_SLOTS;
	h->max_frames = MT_STACKS_FRAMES;
	h->code_bytes = MT_STACKS_CODE_BYTES;
	h->code_slots = MT_STACKS_CODE_SLOTS;
}

static inline int mt_stacks_layout_ok(const struct mt_stacks_header *h)
{
	return h->header_bytes == MT_STACKS_HEADER_BYTES &&
	       h->module_bytes == MT_STACKS_MODULE_BYTES &&
	       h->module_slots == MT_STACKS_MODULE_SLOTS &&
	       h->stack_bytes == MT_STACKS_STACK_BYTES && h->stack_slots == MT_STACKS_SLOTS &&
	       h->max_frames == MT_STACKS_FRAMES;
}

_Static_assert(sizeof(struct mt_stacks_header) <= MT_STACKS_HEADER_BYTES, "header too big");
_Static_assert(sizeof(struct mt_stacks_module) == MT_STACKS_MODULE_BYTES, "module size");
_Static_assert(sizeof(struct mt_stack) == MT_STACKS_STACK_BYTES, "stack size");
_Static_assert(sizeof(struct mt_stacks_code) == MT_STACKS_CODE_BYTES, "code size");

#endif /* MEMTRACE_STACKS_H */
