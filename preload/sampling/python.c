/* python.c: CPython's frames for the sampler (see python.h).  Never
 * allocates, never locks (its callers hold sites.c's lock), never calls
 * the interpreter; what it reads of the interpreter's memory is this
 * thread's own live state, read directly, or else read with
 * process_vm_readv on self ("The walk" below says which is which). */
#include <elf.h>
#include <pthread.h>
#include <stddef.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/uio.h>

#include "base/config.h"
#include "base/selfmaps.h"
#include "base/sys.h"
#include "invariant.h"
#include "sampling/python.h"
#include "base/shim.h"

/* ---- the layouts: one entry per CPython minor version ---------------------- */

/* Offsets of what the walk reads, in bytes, as offsetof gives them on
 * x86-64 and other LP64 targets, from each version's own headers
 * (Include/internal/pycore_runtime.h, pycore_frame.h, pycore_tstate.h,
 * cpython/code.h, cpython/unicodeobject.h); tests/unit/test_shim_python.c
 * checks them against the installed headers of each version it finds
 * (python3.11-dev, and 3.12 and 3.13 builds' include directories), and
 * 3.13's against the _Py_DebugOffsets it publishes in _PyRuntime.
 *
 * What differs between them beyond offsets is a flag of the entry:
 *  - 3.11: the thread state's cframe (_PyCFrame.current_frame) names the
 *    current frame, and a frame's is_entry byte says it was entered from C.
 *  - 3.12: still the cframe, but no is_entry: an evaluation loop entered
 *    from C pushes a shim frame of its own (owner FRAME_OWNED_BY_CSTACK, a
 *    C local of the loop) before the frame it runs, so the frame whose
 *    `previous` is a shim is the entered one, and shims are no Python
 *    frames (PYTHON_SHIM_ENTRY; fr_entry is then the owner byte).
 *  - 3.13: no cframe: the thread state holds current_frame itself
 *    (PYTHON_NO_CFRAME: ts_cframe is that field's offset); shims as in
 *    3.12 (f_executable None); f_executable in f_code's place, instr_ptr
 *    (the instruction running) in prev_instr's.
 * The str state bits (kind 2-4, compact 5, ascii 6) and the line table's
 * format are the same in all three. */
static const struct python_layout python_layouts[] = {
	{
		.version = 0x030b,
		.rt_tss_key = 592,
		.ts_thread_id = 152,
		.ts_cframe = 56,
		.ts_chunk = 296,
		.chunk_previous = 0,
		.chunk_size = 8,
		.chunk_data = 24,
		.cframe_frame = 8,
		.fr_code = 32,
		.fr_previous = 48,
		.fr_instr = 56,
		.fr_entry = 68,
		.fr_bytes = 72,
		.co_type = 8,
		.co_size = 16,
		.co_firstlineno = 72,
		.co_filename = 112,
		.co_qualname = 128,
		.co_linetable = 136,
		.co_code = 184,
		.str_length = 16,
		.str_state = 32,
		.str_ascii_data = 48,
		.str_utf8_length = 48,
		.str_utf8 = 56,
		.str_compact_data = 72,
		.bytes_size = 16,
		.bytes_data = 32,
	},
	{
		.version = 0x030c,
		.flags = PYTHON_SHIM_ENTRY,
		.rt_tss_key = 1544,
		.ts_thread_id = 136,
		.ts_cframe = 56,
		.ts_chunk = 232,
		.chunk_previous = 0,
		.chunk_size = 8,
		.chunk_data = 24,
		.cframe_frame = 0,
		.fr_code = 0,
		.fr_previous = 8,
		.fr_instr = 56,
		.fr_entry = 70, /* owner */
		.owner_cstack = 3,
		.fr_bytes = 72,
		.co_type = 8,
		.co_size = 16,
		.co_firstlineno = 68,
		.co_filename = 112,
		.co_qualname = 128,
		.co_linetable = 136,
		.co_code = 192,
		.str_length = 16,
		.str_state = 32,
		.str_ascii_data = 40,
		.str_utf8_length = 40,
		.str_utf8 = 48,
		.str_compact_data = 56,
		.bytes_size = 16,
		.bytes_data = 32,
	},
	{
		.version = 0x030d,
		.flags = PYTHON_NO_CFRAME | PYTHON_SHIM_ENTRY | PYTHON_DEBUG_OFFSETS,
		.rt_tss_key = 2160,
		.ts_thread_id = 152,
		.ts_cframe = 72, /* current_frame */
		.ts_chunk = 232,
		.chunk_previous = 0,
		.chunk_size = 8,
		.chunk_data = 24,
		.cframe_frame = 0,
		.fr_code = 0,   /* f_executable */
		.fr_previous = 8,
		.fr_instr = 56, /* instr_ptr */
		.fr_entry = 70, /* owner */
		.owner_cstack = 3,
		.fr_bytes = 72,
		.co_type = 8,
		.co_size = 16,
		.co_firstlineno = 68,
		.co_filename = 112,
		.co_qualname = 128,
		.co_linetable = 136,
		.co_code = 200,
		.str_length = 16,
		.str_state = 32,
		.str_ascii_data = 40,
		.str_utf8_length = 40,
		.str_utf8 = 48,
		.str_compact_data = 56,
		.bytes_size = 16,
		.bytes_data = 32,
	},
};

const struct python_layout *python_layout_find(uint32_t py_version)
{
	for (size_t i = 0; i < sizeof python_layouts / sizeof python_layouts[0]; i++)
		if (python_layouts[i].version == py_version >> 16)
			return &python_layouts[i];
	return NULL;
}

/* Where 3.13's _Py_DebugOffsets publishes the offsets the walk reads (its
 * struct, Include/internal/pycore_runtime.h: a cookie, version and
 * free_threaded, then a uint64 per field; test_shim_python.c checks these
 * positions against the headers and the check against a real libpython). */
static const struct {
	uint16_t at, field;
} python_debug_checks[] = {
	{ 184, offsetof(struct python_layout, ts_cframe) },      /* current_frame */
	{ 192, offsetof(struct python_layout, ts_thread_id) },
	{ 208, offsetof(struct python_layout, ts_chunk) },
	{ 232, offsetof(struct python_layout, fr_previous) },
	{ 240, offsetof(struct python_layout, fr_code) },        /* executable */
	{ 248, offsetof(struct python_layout, fr_instr) },       /* instr_ptr */
	{ 264, offsetof(struct python_layout, fr_entry) },       /* owner */
	{ 280, offsetof(struct python_layout, co_filename) },
	{ 296, offsetof(struct python_layout, co_qualname) },
	{ 304, offsetof(struct python_layout, co_linetable) },
	{ 312, offsetof(struct python_layout, co_firstlineno) },
	{ 344, offsetof(struct python_layout, co_code) },
	{ 360, offsetof(struct python_layout, co_type) },
	{ 520, offsetof(struct python_layout, bytes_size) },
	{ 528, offsetof(struct python_layout, bytes_data) },
	{ 544, offsetof(struct python_layout, str_state) },
	{ 552, offsetof(struct python_layout, str_length) },
	{ 560, offsetof(struct python_layout, str_ascii_data) }, /* asciiobject_size */
};

int python_debug_offsets_agree(const struct python_layout *L, const uint8_t *d)
{
	uint64_t v;
	if (memcmp(d, "xdebugpy", 8) != 0)
		return 0;
	memcpy(&v, d + 8, sizeof v);
	if ((uint32_t)(v >> 16) != L->version)
		return 0;
	memcpy(&v, d + 16, sizeof v);
	if (v != 0)
		return 0; /* free-threaded */
	for (size_t i = 0; i < sizeof python_debug_checks / sizeof python_debug_checks[0]; i++) {
		uint32_t want;
		memcpy(&v, d + python_debug_checks[i].at, sizeof v);
		memcpy(&want, (const char *)L + python_debug_checks[i].field, sizeof want);
		if (v != want)
			return 0;
	}
	return 1;
}

/* The largest offsets read in one go. */
#define PYTHON_CODE_READ 256u
#define PYTHON_FRAME_READ 128u
#define PYTHON_CHUNKS_MAX 32u
_Static_assert(PYTHON_CODE_READ >= 200 && PYTHON_FRAME_READ >= 72,
	       "a layout's co_code and fr_bytes fit the walk's buffers");

/* The interpreter found (set by python_probe under sites.c's lock, read
 * by python_stack under it too). */
static const struct python_layout *python_lay;
static uintptr_t python_runtime, python_code_type;
static int python_probed;             /* a python* file was looked at */

/* ---- reading our own memory ----------------------------------------------- */

static pid_t python_pid; /* 0: look it up at the next read (a fork child
			    must read itself, not its parent) */

/* n bytes at `at` into buf: 1 if all of them could be read. */
static int python_peek(void *buf, size_t n, uintptr_t at)
{
	struct iovec local = { buf, n }, remote = { (void *)at, n };
	if (at < 4096)
		return 0;
	if (!python_pid)
		python_pid = sys_getpid();
	return sys_call6(SYS_process_vm_readv, python_pid, (long)&local, 1, (long)&remote, 1, 0) ==
	       (long)n;
}

/* A read that is known to be of live memory of this thread (see "The
 * walk" below) is a copy; any other goes through python_peek. */
static int python_read(void *buf, size_t n, uintptr_t at, int direct)
{
	if (!direct)
		return python_peek(buf, n, at);
	memcpy(buf, (const void *)at, n);
	return 1;
}

static uint64_t python_u64(const uint8_t *b, uint32_t off)
{
	uint64_t v;
	memcpy(&v, b + off, sizeof v);
	return v;
}

static uint32_t python_u32(const uint8_t *b, uint32_t off)
{
	uint32_t v;
	memcpy(&v, b + off, sizeof v);
	return v;
}

/* ---- the probe: the mapped image's dynamic symbols ------------------------- */

struct python_dyn {
	uintptr_t gnu_hash, symtab, strtab;
	uint64_t strsz;
	uintptr_t bias;
};

/* The dynamic section of the ELF mapped at base: 0 when found. */
static int python_dynamic(uintptr_t base, struct python_dyn *d)
{
	Elf64_Ehdr eh;
	Elf64_Phdr ph;
	uintptr_t dyn = 0, first_load = UINTPTR_MAX;
	if (!python_peek(&eh, sizeof eh, base) || memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0 ||
	    eh.e_ident[EI_CLASS] != ELFCLASS64 || eh.e_phentsize != sizeof ph || eh.e_phnum > 64)
		return -1;
	for (unsigned i = 0; i < eh.e_phnum; i++) {
		if (!python_peek(&ph, sizeof ph, base + eh.e_phoff + i * sizeof ph))
			return -1;
		if (ph.p_type == PT_LOAD && ph.p_offset == 0 && first_load == UINTPTR_MAX)
			first_load = ph.p_vaddr;
		else if (ph.p_type == PT_DYNAMIC)
			dyn = ph.p_vaddr;
	}
	if (!dyn || first_load == UINTPTR_MAX)
		return -1;
	memset(d, 0, sizeof *d);
	d->bias = base - (first_load & ~(uintptr_t)4095);
	dyn += d->bias;
	for (unsigned i = 0; i < 256; i++) {
		Elf64_Dyn e;
		if (!python_peek(&e, sizeof e, dyn + i * sizeof e))
			return -1;
		if (e.d_tag == DT_NULL)
			break;
		/* glibc's loader relocates these in place; another may not */
		uintptr_t p = e.d_un.d_ptr >= d->bias ? e.d_un.d_ptr : e.d_un.d_ptr + d->bias;
		if (e.d_tag == DT_GNU_HASH)
			d->gnu_hash = p;
		else if (e.d_tag == DT_SYMTAB)
			d->symtab = p;
		else if (e.d_tag == DT_STRTAB)
			d->strtab = p;
		else if (e.d_tag == DT_STRSZ)
			d->strsz = e.d_un.d_val;
	}
	return d->gnu_hash && d->symtab && d->strtab ? 0 : -1;
}

/* The address of defined symbol `name`, through the GNU hash table; 0 if
 * it is not there. */
static uintptr_t python_dynsym(const struct python_dyn *d, const char *name)
{
	uint32_t hdr[4], h = 5381, idx, hv;
	size_t len = strlen(name);
	for (const char *c = name; *c; c++)
		h = h * 33 + (uint8_t)*c;
	if (!python_peek(hdr, sizeof hdr, d->gnu_hash) || hdr[0] == 0)
		return 0;
	uintptr_t buckets = d->gnu_hash + 16 + (uintptr_t)hdr[2] * 8;
	uintptr_t chain = buckets + (uintptr_t)hdr[0] * 4;
	if (!python_peek(&idx, sizeof idx, buckets + (uintptr_t)(h % hdr[0]) * 4) || idx < hdr[1])
		return 0;
	for (unsigned steps = 0; steps < 4096; steps++, idx++) {
		if (!python_peek(&hv, sizeof hv, chain + (uintptr_t)(idx - hdr[1]) * 4))
			return 0;
		if ((hv | 1) == (h | 1)) {
			Elf64_Sym sym;
			char got[64];
			if (!python_peek(&sym, sizeof sym, d->symtab + (uintptr_t)idx * sizeof sym))
				return 0;
			if (sym.st_name < d->strsz && len < sizeof got &&
			    python_peek(got, len + 1, d->strtab + sym.st_name) &&
			    memcmp(got, name, len + 1) == 0)
				return sym.st_shndx != SHN_UNDEF && sym.st_value
					       ? (uintptr_t)sym.st_value + d->bias
					       : 0;
		}
		if (hv & 1)
			break;
	}
	return 0;
}

static int python_is_name(const char *path, size_t len)
{
	const char *base = path;
	for (size_t i = 0; i < len; i++)
		if (path[i] == '/')
			base = path + i + 1;
	len -= (size_t)(base - path);
	return (len >= 6 && memcmp(base, "python", 6) == 0) ||
	       (len >= 9 && memcmp(base, "libpython", 9) == 0);
}

void python_probe(struct mt_stacks_header *h, pid_t pid, uintptr_t elf_start, const char *path,
		  size_t path_len)
{
	struct python_dyn d;
	uintptr_t at_version, at_runtime, at_code_type;
	uint32_t version = 0;
	if (python_lay || !python_is_name(path, path_len))
		return;
	python_pid = pid;
	if (python_dynamic(elf_start, &d) != 0)
		return;
	at_version = python_dynsym(&d, "Py_Version");
	at_runtime = python_dynsym(&d, "_PyRuntime");
	at_code_type = python_dynsym(&d, "PyCode_Type");
	if (!at_version || !at_runtime || !at_code_type ||
	    !python_peek(&version, sizeof version, at_version))
		return; /* python's name, not the interpreter (a launcher) */
	python_probed = 1;
	if (config.py_version)
		version = (uint32_t)config.py_version;
	__atomic_store_n(&h->py_version, version, __ATOMIC_RELAXED);
	const struct python_layout *L = python_layout_find(version);
	if (L && (L->flags & PYTHON_DEBUG_OFFSETS)) {
		/* the interpreter's own word on its layout: a free-threaded or
		 * otherwise different build of a known version is unknown */
		uint8_t dbg[PYTHON_DEBUG_BYTES];
		if (!python_peek(dbg, sizeof dbg, at_runtime) || !python_debug_offsets_agree(L, dbg))
			L = NULL;
	}
	if (L) {
		python_runtime = at_runtime;
		python_code_type = at_code_type;
		python_lay = L;
		__atomic_store_n(&h->py_state, MT_PY_WALKED, __ATOMIC_RELEASE);
		return;
	}
	/* stacks.h: an unknown version falls back to native frames, and says so */
	__atomic_store_n(&h->py_state, MT_PY_UNKNOWN, __ATOMIC_RELEASE);
}

/* ---- the walk ---------------------------------------------------------------- *
 *
 * What is read directly and why that is safe.  process_vm_readv on every
 * read cost 8 us a call on the test VM, 80-400 us a sample
 * (bench/RESULTS.md), so the walk reads directly what is this thread's own
 * live state, and through python_peek what may not be:
 *  - the thread state: pthread_getspecific of the interpreter's own
 *    thread-state key (_PyRuntime.gilstate.autoTSSkey, 3.12+
 *    _PyRuntime.autoTSSkey, in the
 *    interpreter's data segment), which gives this thread's and no other's
 *    (a libc call, not the interpreter's); the interpreter clears the key
 *    before it frees a thread state, and only this thread does either.  It
 *    must say this thread's id, or there is no Python here.
 *  - its current frame, through its cframe: the root one inside the
 *    thread state, or a C local of an evaluation loop still running on
 *    this thread's stack (3.13: the thread state's current_frame).
 *  - its frames: the interpreter pushes them in chunks of its thread
 *    state's data stack (datastack_chunk and its `previous` chain), which
 *    only this thread changes and which stay mapped while a frame of them
 *    is current (their headers read directly too, up to 32 of them).  A
 *    frame inside a chunk is read directly; so is one on this thread's
 *    stack between the walk's own frame and the stack's top (3.12 and
 *    3.13's shim frames, C locals of running evaluation loops: that span
 *    is mapped, python_on_stack); any other (a generator's, a frame
 *    object's) through python_peek.
 *  - a frame's code object: the frame holds a reference to it, so it lives
 *    while the frame is current; read directly for a chunk's frame, through
 *    python_peek otherwise, and its type must be PyCode_Type either way.
 *  - the names and line table of a code object not seen before: through
 *    python_peek (a few times per code object, not per sample).
 * A thread inside the allocator holds its frames still: nothing of its
 * chain changes until the allocation returns. */

struct python_chunks {
	uintptr_t lo[PYTHON_CHUNKS_MAX], hi[PYTHON_CHUNKS_MAX];
	unsigned n;
	unsigned hit; /* the chunk of the last frame found: the next one
			 outward is most often in it too */
};

static int python_in_chunks(struct python_chunks *c, uintptr_t at, size_t n)
{
	unsigned h = c->hit;
	if (h < c->n && at >= c->lo[h] && at < c->hi[h] && c->hi[h] - at >= n)
		return 1;
	for (unsigned i = 0; i < c->n; i++)
		if (at >= c->lo[i] && at < c->hi[i] && c->hi[i] - at >= n) {
			c->hit = i;
			return 1;
		}
	return 0;
}

/* The main thread's stack top, set by the dynamic loader. */
extern void *__libc_stack_end;

/* This thread's stack, [lo, hi) (only this thread reads them), found as
 * callstack.c finds it: below __libc_stack_end for the main thread, the
 * mapping in /proc/self/maps for the others, once per thread. */
static __thread uintptr_t python_tls_lo, python_tls_hi __attribute__((tls_model("initial-exec")));
#define PYTHON_MAIN_SPAN (64u << 20)

/* 1 if [at, at + n) lies in this thread's stack above the walk's own
 * frame: a C local of a caller still running (3.12 and 3.13's shim
 * frames), mapped whatever it holds. */
static int python_on_stack(uintptr_t at, size_t n)
{
	uintptr_t here = (uintptr_t)&at, lo, top;
	if (here < python_tls_lo || here >= python_tls_hi) {
		top = (uintptr_t)__libc_stack_end;
		if (top && here < top && top - here < PYTHON_MAIN_SPAN &&
		    sys_gettid() == sys_getpid())
			lo = top - PYTHON_MAIN_SPAN;
		else if (selfmaps_find(here, &lo, &top) != 0)
			return 0;
		python_tls_lo = lo;
		python_tls_hi = top;
	}
	return at > here && at < python_tls_hi && python_tls_hi - at >= n;
}

/* The calling thread's thread state, or 0. */
static uintptr_t python_tstate(const struct python_layout *L)
{
	const int32_t *tss = (const int32_t *)(python_runtime + L->rt_tss_key);
	uintptr_t t;
	if (!__atomic_load_n(&tss[0], __ATOMIC_RELAXED))
		return 0;
	t = (uintptr_t)pthread_getspecific((pthread_key_t)__atomic_load_n(&tss[1],
									 __ATOMIC_RELAXED));
	if (!t || (t & 7) ||
	    *(const uint64_t *)(t + L->ts_thread_id) != (uint64_t)pthread_self())
		return 0;
	return t;
}

/* Fills r's names, first line and instruction offset from its code
 * object, read as its frame was (directly for a frame of the data stack,
 * else through python_peek).  A code object that can no longer be read
 * leaves them 0: its entry's names then say "?". */
static void python_frame_fill(const struct python_layout *L, struct python_raw_frame *r)
{
	uint8_t co[PYTHON_CODE_READ];
	uintptr_t first;
	uint64_t units;
	r->name = r->file = r->lines = 0;
	r->firstlineno = r->instr = 0;
	if (!python_read(co, L->co_code, r->code, r->direct))
		return;
	first = r->code + L->co_code;
	units = python_u64(co, L->co_size);
	r->name = (uintptr_t)python_u64(co, L->co_qualname);
	r->file = (uintptr_t)python_u64(co, L->co_filename);
	r->lines = (uintptr_t)python_u64(co, L->co_linetable);
	r->firstlineno = python_u32(co, L->co_firstlineno);
	/* 3.11 and 3.12's prev_instr is one unit before the first until the
	 * frame starts: offset 0 then */
	r->instr = r->at_instr >= first && (r->at_instr - first) / 2 < units
			   ? (uint32_t)((r->at_instr - first) / 2)
			   : 0;
}

static void python_reverse(struct python_raw_frame *a, unsigned n)
{
	for (unsigned i = 0; i < n / 2; i++) {
		struct python_raw_frame t = a[i];
		a[i] = a[n - 1 - i];
		a[n - 1 - i] = t;
	}
}

/* The data-stack chunks of thread state t, newest first: the frames in
 * them are this thread's own memory, read in place. */
static void python_chunks_of(const struct python_layout *L, uintptr_t t, struct python_chunks *ch)
{
	uintptr_t chunk = *(const uintptr_t *)(t + L->ts_chunk);
	ch->n = ch->hit = 0;
	while (chunk && !(chunk & 7) && ch->n < PYTHON_CHUNKS_MAX) {
		uint64_t size;
		uint8_t head[32];
		python_read(head, L->chunk_data, chunk, 1); /* this thread's own */
		size = python_u64(head, L->chunk_size);
		if (size <= L->chunk_data || size > (UINT64_C(1) << 32))
			break;
		ch->lo[ch->n] = chunk + L->chunk_data;
		ch->hi[ch->n] = chunk + size;
		ch->n++;
		chunk = (uintptr_t)python_u64(head, L->chunk_previous);
	}
}

/* A walk of `seen` frames, more than fit: out[0..inner) holds the
 * innermost, out[inner..inner+ring) a ring of the latest.  Frame i sits
 * at inner + (i - inner) % ring: the oldest of the ring's, seen - ring, at
 * o; rotated into order, the outermost ring - 1 (one slot is the marker's)
 * moved down over it.  Fills w's counts; returns the frames kept. */
static unsigned python_ring_order(struct python_raw_frame *out, unsigned seen, unsigned inner,
				  unsigned ring, uint32_t tail_entries, struct python_walked *w)
{
	struct python_raw_frame *a = out + inner;
	unsigned o = (seen - inner) % ring, keep = ring - 1;
	uint32_t kept_entries = 0;
	python_reverse(a, o);
	python_reverse(a + o, ring - o);
	python_reverse(a, ring);
	memmove(a, a + 1, keep * sizeof *a);
	for (unsigned j = 0; j < keep; j++)
		kept_entries += a[j].entry != 0;
	w->inner = inner;
	w->elided = seen - inner - keep;
	w->elided_entries = tail_entries - kept_entries;
	return inner + keep;
}

unsigned python_walk(struct python_raw_frame *out, unsigned max, struct python_walked *w)
{
	const struct python_layout *L = python_lay;
	struct python_chunks ch;
	uintptr_t t, frame, cframe;
	/* frames seen, and entries among those past the innermost run */
	unsigned seen = 0, inner, ring, hops, peeks = 0, last = 0;
	uint32_t tail_entries = 0;
	w->inner = 0;
	w->elided = w->elided_entries = 0;
	w->cut = 0;
	if (!L || !max || !(t = python_tstate(L)))
		return 0;
	/* Of a chain deeper than max: the innermost `inner` frames stay in
	 * out[0..inner), and out[inner..max) is a ring of the latest frames
	 * seen, which at the chain's end are its outermost. */
	inner = max > 2 * PYTHON_KEEP_INNER ? PYTHON_KEEP_INNER : max / 2;
	ring = max - inner;
	python_pid = 0;
	python_chunks_of(L, t, &ch);
	if (L->flags & PYTHON_NO_CFRAME) {
		/* 3.13: the thread state names its current frame */
		frame = *(const uintptr_t *)(t + L->ts_cframe);
	} else {
		cframe = *(const uintptr_t *)(t + L->ts_cframe);
		/* the root cframe inside the thread state, or a C local of an
		 * evaluation loop still running on this thread's stack */
		if (!cframe || (cframe & 7))
			return 0;
		python_read(&frame, sizeof frame, cframe + L->cframe_frame, 1);
	}
	/* Every link to the outermost frame is followed: a frame entered
	 * from C (3.11's is_entry, a shim) is marked and the walk goes on to
	 * the frame that called into C.  What a frame costs here is its
	 * header and its code object's type; its names are read below, for
	 * the kept frames only. */
	for (hops = 0; frame && !(frame & 7) && hops < PYTHON_WALK_HOPS; hops++) {
		uint8_t fr[PYTHON_FRAME_READ];
		const uint8_t *fp = fr;
		uintptr_t code;
		uint64_t type;
		struct python_raw_frame *r;
		int direct = python_in_chunks(&ch, frame, L->fr_bytes);
		/* 3.12 and 3.13: a frame on this thread's stack (an
		 * evaluation loop's shim, a C local of a loop still running)
		 * is mapped, whatever it holds: read directly too */
		int shim_here = !direct && (L->flags & PYTHON_SHIM_ENTRY) &&
				python_on_stack(frame, L->fr_bytes);
		if (direct || shim_here) {
			fp = (const uint8_t *)frame; /* its fields read in place */
		} else {
			/* a frame off the data stack (a generator's, a
			 * coroutine's) costs two system calls: a budget of them
			 * bounds the walk's time whatever the chain is made of */
			if ((peeks += 2) > PYTHON_WALK_PEEKS || !python_peek(fr, L->fr_bytes, frame))
				break;
		}
		if ((L->flags & PYTHON_SHIM_ENTRY) && fp[L->fr_entry] == L->owner_cstack) {
			/* an evaluation loop's shim: the frame before it was
			 * the one entered from C */
			if (seen) {
				r = &out[last];
				if (!r->entry && seen - 1 >= inner)
					tail_entries++;
				r->entry = 1;
			}
			frame = (uintptr_t)python_u64(fp, L->fr_previous);
			continue;
		}
		if (ring < 2 && seen == max)
			break; /* too few slots to elide: the innermost only */
		code = (uintptr_t)python_u64(fp, L->fr_code);
		/* a code object, or the walk ends: it is the chain's one check
		 * that a frame is what it claims */
		if (!code || (code & 7))
			break;
		if (direct)
			type = python_u64((const uint8_t *)code, L->co_type);
		else if (!python_peek(&type, sizeof type, code + L->co_type))
			break;
		if (type != python_code_type)
			break;
		/* frame `seen` goes to out[seen] in the innermost run, then
		 * round the ring out[inner..max) */
		last = seen < inner ? seen : (seen == inner || last + 1 == max ? inner : last + 1);
		r = &out[last];
		r->code = code;
		r->at_instr = (uintptr_t)python_u64(fp, L->fr_instr);
		r->direct = direct;
		r->entry = !(L->flags & PYTHON_SHIM_ENTRY) && fp[L->fr_entry] != 0;
		if (r->entry && seen >= inner)
			tail_entries++;
		seen++;
		frame = (uintptr_t)python_u64(fp, L->fr_previous);
	}
	w->cut = frame != 0;
	if (seen <= max)
		w->inner = seen; /* the ring never wrapped: out is in order */
	else
		seen = python_ring_order(out, seen, inner, ring, tail_entries, w);
	for (unsigned i = 0; i < seen; i++)
		python_frame_fill(L, &out[i]);
	return seen;
}

/* ---- the code table ------------------------------------------------------------ */

/* Code objects seen, by address: open addressing, never deleted (a stale
 * entry is caught by its check fields and replaced). */
#define PYTHON_CACHE_BITS 11u
struct python_cached {
	uintptr_t code, name, file, lines;
	uint32_t firstlineno;
	uint32_t index;
};
static struct python_cached python_cache[1u << PYTHON_CACHE_BITS] MT_TABLE;

/* A str object's text into buf (cap bytes with the NUL): compact ASCII,
 * or compact with its UTF-8 form already made.  Returns MT_CODE_*
 * flags for truncation or unreadable text (then buf says "?"). */
/* A compact non-ASCII str of `n` code points of `kind` bytes each (1, 2
 * or 4) as UTF-8 into buf, as python_text. */
static uint32_t python_text_encode(const struct python_layout *L, uintptr_t str, uint64_t n,
				   unsigned kind, char *buf, size_t cap, uint32_t truncated,
				   uint32_t unreadable)
{
	uint8_t units[4 * 160];
	size_t o = 0;
	uint32_t flags = 0;
	if (kind != 1 && kind != 2 && kind != 4)
		goto bad;
	if (n > sizeof units / kind) {
		n = sizeof units / kind;
		flags |= truncated;
	}
	if (n && !python_peek(units, n * kind, str + L->str_compact_data))
		goto bad;
	for (uint64_t i = 0; i < n; i++) {
		uint32_t c = kind == 1 ? units[i]
			     : kind == 2 ? (uint32_t)units[2 * i] | (uint32_t)units[2 * i + 1] << 8
					 : python_u32(units, (uint32_t)(4 * i));
		char e[4];
		size_t k;
		if (c == 0 || c > 0x10FFFF || (c >= 0xD800 && c <= 0xDFFF))
			c = '?'; /* a NUL would cut the name; a surrogate is no UTF-8 */
		if (c < 0x80) {
			e[0] = (char)c;
			k = 1;
		} else if (c < 0x800) {
			e[0] = (char)(0xC0 | c >> 6);
			e[1] = (char)(0x80 | (c & 63));
			k = 2;
		} else if (c < 0x10000) {
			e[0] = (char)(0xE0 | c >> 12);
			e[1] = (char)(0x80 | ((c >> 6) & 63));
			e[2] = (char)(0x80 | (c & 63));
			k = 3;
		} else {
			e[0] = (char)(0xF0 | c >> 18);
			e[1] = (char)(0x80 | ((c >> 12) & 63));
			e[2] = (char)(0x80 | ((c >> 6) & 63));
			e[3] = (char)(0x80 | (c & 63));
			k = 4;
		}
		if (o + k > cap - 1) {
			flags |= truncated;
			break;
		}
		memcpy(buf + o, e, k);
		o += k;
	}
	buf[o] = '\0';
	return flags;
bad:
	buf[0] = '?';
	buf[1] = '\0';
	return unreadable;
}

static uint32_t python_text(const struct python_layout *L, uintptr_t str, char *buf, size_t cap,
			    uint32_t truncated, uint32_t unreadable)
{
	uint8_t head[64];
	uint32_t state;
	uint64_t len;
	uintptr_t data;
	buf[0] = '\0';
	/* the ASCII head first: a short ASCII string may end its mapping
	 * before where the compact form's fields would be */
	if (!python_peek(head, L->str_ascii_data, str))
		goto bad;
	state = python_u32(head, L->str_state);
	/* 3.11: interned:2 kind:3 compact:1 ascii:1 ready:1 */
	if (!(state & (1u << 5)))
		goto bad;
	if (state & (1u << 6)) {
		len = python_u64(head, L->str_length);
		data = str + L->str_ascii_data;
	} else {
		if (!python_peek(head, L->str_utf8 + 8, str))
			goto bad;
		len = python_u64(head, L->str_utf8_length);
		data = (uintptr_t)python_u64(head, L->str_utf8);
		if (!data) /* no UTF-8 form made yet: encode the code points */
			return python_text_encode(L, str, python_u64(head, L->str_length),
						  (state >> 2) & 7, buf, cap, truncated, unreadable);
	}
	uint32_t flags = 0;
	if (len > cap - 1) {
		len = cap - 1;
		flags |= truncated;
	}
	if (len && !python_peek(buf, len, data))
		goto bad;
	if (flags) /* not inside a character */
		while (len && ((uint8_t)buf[len - 1] & 0xC0) == 0x80)
			len--;
	if (flags && len && ((uint8_t)buf[len - 1] & 0xC0) == 0xC0)
		len--;
	buf[len] = '\0';
	/* a NUL inside would cut the name where a reader looks */
	for (size_t i = 0; i < len; i++)
		if (!buf[i])
			buf[i] = '?';
	return flags;
bad:
	buf[0] = '?';
	buf[1] = '\0';
	return unreadable;
}

/* The code table index of the code object at `code` (added if new), or
 * MT_PYFRAME_CODE_MASK when it cannot be (table full, unreadable). */
static uint32_t python_code_index(struct mt_stacks_header *h, const struct python_raw_frame *r,
				  python_reserve_fn reserve)
{
	const struct python_layout *L = python_lay;
	uintptr_t code = r->code, name = r->name, file = r->file, lines = r->lines;
	uint32_t firstlineno = r->firstlineno, count, slot;
	struct python_cached *c;
	struct mt_stacks_code *e;
	slot = (uint32_t)((code * UINT64_C(0x9E3779B97F4A7C15)) >> (64 - PYTHON_CACHE_BITS));
	count = __atomic_load_n(&h->code_count, __ATOMIC_RELAXED);
	c = &python_cache[slot];
	for (unsigned probes = 0; probes < 8; probes++) {
		c = &python_cache[(slot + probes) & ((1u << PYTHON_CACHE_BITS) - 1)];
		if (c->code == code && c->name == name && c->file == file && c->lines == lines &&
		    c->firstlineno == firstlineno && c->index < count)
			return c->index;
		if (c->code == 0 || c->code == code)
			break;
	}
	if (count >= MT_STACKS_CODE_SLOTS || !reserve(count + 1))
		return MT_PYFRAME_CODE_MASK;
	e = mt_stacks_code(h, count);
	memset(e, 0, sizeof *e);
	e->addr = code;
	e->firstlineno = firstlineno;
	e->flags |= python_text(L, name, e->name, sizeof e->name, MT_CODE_NAME_TRUNCATED,
				MT_CODE_NAME_UNREADABLE);
	e->flags |= python_text(L, file, e->file, sizeof e->file, MT_CODE_FILE_TRUNCATED,
				MT_CODE_FILE_UNREADABLE);
	uint8_t bh[64];
	if (python_peek(bh, L->bytes_data, lines)) {
		uint64_t len = python_u64(bh, L->bytes_size);
		uint64_t keep = len < MT_STACKS_CODE_LINES_BYTES ? len : MT_STACKS_CODE_LINES_BYTES;
		if (keep && python_peek(e->lines, keep, lines + L->bytes_data)) {
			e->lines_len = (uint32_t)keep;
			e->lines_full = len > UINT32_MAX ? UINT32_MAX : (uint32_t)len;
			if (keep < len)
				e->flags |= MT_CODE_LINES_TRUNCATED;
		}
	}
	/* stacks.h: append-only, entry i whole before the count says i+1 */
	__atomic_store_n(&h->code_count, count + 1, __ATOMIC_RELEASE);
	if (c->code == 0 || c->code == code)
		*c = (struct python_cached){ code, name, file, lines, firstlineno, count };
	return count;
}

unsigned python_stack(struct mt_stacks_header *h, uint64_t *pcs, unsigned n, unsigned max,
		      uint32_t *flags, python_reserve_fn reserve)
{
	struct python_raw_frame raw[PYTHON_FRAMES_MAX];
	struct python_walked w;
	unsigned k, keep, slots, at;
	if (!python_lay || max > MT_STACKS_FRAMES)
		return n;
	k = python_walk(raw, max < PYTHON_FRAMES_MAX ? max : PYTHON_FRAMES_MAX, &w);
	if (k == 0)
		return n;
	/* a walk that elided left a slot for the marker (python_walk) */
	slots = k + (w.elided != 0);
	keep = n + slots <= max ? n : max - slots;
	if (keep < n || w.elided || w.cut) {
		*flags |= MT_STACK_TRUNCATED;
		__atomic_fetch_add(&h->py_truncated, 1, __ATOMIC_RELAXED);
	}
	at = keep;
	for (unsigned i = 0; i < k; i++) {
		if (i == w.inner && w.elided)
			pcs[at++] = mt_pyframe_elided(w.elided, w.elided_entries);
		pcs[at++] = mt_pyframe_make(python_code_index(h, &raw[i], reserve), raw[i].instr,
					    raw[i].entry);
	}
	*flags |= MT_STACK_PYTHON;
	__atomic_fetch_add(&h->py_samples, 1, __ATOMIC_RELAXED);
	__atomic_fetch_add(&h->py_frames, k, __ATOMIC_RELAXED);
	return at;
}
