/* modules.c: the module table and its index (see modules.h).
 * Async-signal-safe; never allocates or locks. */
#include <errno.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/uio.h>

#include "base/selfmaps.h"
#include "base/sys.h"
#include "elfsym.h"
#include "sampling/modules.h"
#include "sampling/python.h"
#include "base/shim.h"

struct modules_span {
	uintptr_t start, end;
	uint32_t entry;
};

static struct modules_span modules_index[2][MT_STACKS_MODULE_SLOTS] MT_TABLE;
static uint32_t modules_index_n[2];
static unsigned modules_cur; /* the published copy */
static uint8_t modules_trusts[MT_STACKS_MODULE_SLOTS] MT_TABLE;
static uint8_t modules_ticks[MT_STACKS_MODULE_SLOTS] MT_TABLE;

/* The anonymous executable mappings (modules.h, modules_jit_find), as the
 * last refresh saw them: double-buffered like the index, and rebuilt
 * whole at each refresh (a JIT maps, grows and drops its code).  Spans
 * of the index's kind, searched the same way; their entry is unused. */
static struct modules_span modules_jit[2][MODULES_JIT_SLOTS] MT_TABLE;
static uint32_t modules_jit_n[2];
static unsigned modules_jit_cur;

/* The span of s[0..n) (sorted by address, as maps lists them) that holds
 * pc, or NULL.  n is read from a table another thread may be publishing:
 * above cap it is not trusted. */
static const struct modules_span *modules_span_find(const struct modules_span *s, uint32_t n,
						    uint32_t cap, uintptr_t pc)
{
	uint32_t lo = 0, hi = n;
	if (hi > cap)
		return NULL;
	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;
		if (pc < s[mid].start)
			hi = mid;
		else if (pc >= s[mid].end)
			lo = mid + 1;
		else
			return &s[mid];
	}
	return NULL;
}

int modules_find(uintptr_t pc)
{
	unsigned cur = __atomic_load_n(&modules_cur, __ATOMIC_ACQUIRE);
	const struct modules_span *s = modules_span_find(
		modules_index[cur], __atomic_load_n(&modules_index_n[cur], __ATOMIC_RELAXED),
		MT_STACKS_MODULE_SLOTS, pc);
	return s ? (int)s->entry : -1;
}

int modules_jit_find(uintptr_t pc)
{
	unsigned cur = __atomic_load_n(&modules_jit_cur, __ATOMIC_ACQUIRE);
	return modules_span_find(modules_jit[cur],
				 __atomic_load_n(&modules_jit_n[cur], __ATOMIC_RELAXED),
				 MODULES_JIT_SLOTS, pc) != NULL;
}

int modules_code(uintptr_t pc)
{
	return modules_find(pc) >= 0 || modules_jit_find(pc);
}

unsigned modules_trust(int i)
{
	if (i < 0 || i >= (int)MT_STACKS_MODULE_SLOTS)
		return MODULES_TRUST_NO;
	return __atomic_load_n(&modules_trusts[i], __ATOMIC_RELAXED);
}

void modules_set_trust(int i, unsigned trust)
{
	if (i >= 0 && i < (int)MT_STACKS_MODULE_SLOTS)
		__atomic_store_n(&modules_trusts[i], (uint8_t)trust, __ATOMIC_RELAXED);
}

unsigned modules_tick(int i)
{
	if (i < 0 || i >= (int)MT_STACKS_MODULE_SLOTS)
		return 0;
	return __atomic_add_fetch(&modules_ticks[i], 1, __ATOMIC_RELAXED);
}

/* ---- reading our own memory safely -------------------------------------- */

/* The first page of the module being read: its ELF header, program
 * headers and (usually) build-id note, in one system call instead of one
 * per header.  Static: modules_refresh's callers serialise it.  Aligned,
 * so that it is one page to fault in, not two. */
static _Alignas(4096) uint8_t modules_page[4096] MT_TABLE;

struct modules_mem {
	pid_t pid;
	uintptr_t base;
	size_t cached;            /* bytes of modules_page read from base */
};

static ssize_t modules_peek(pid_t pid, void *buf, size_t n, uintptr_t at)
{
	struct iovec local = { buf, n }, remote = { (void *)at, n };
	return sys_call6(SYS_process_vm_readv, pid, (long)&local, 1, (long)&remote, 1, 0);
}

static ssize_t modules_mem_read(void *ctx, void *buf, size_t n, uint64_t off)
{
	const struct modules_mem *m = ctx;
	if (off <= m->cached && n <= m->cached - off) {
		memcpy(buf, modules_page + off, n);
		return (ssize_t)n;
	}
	return modules_peek(m->pid, buf, n, m->base + off);
}

/* ---- refresh -------------------------------------------------------------- */

struct modules_scan {
	struct mt_stacks_header *h;
	modules_reserve_fn reserve;
	uint32_t count;
	int added, full;
	pid_t pid;
	uint32_t jit_n; /* spans put in the unused copy of modules_jit */
	/* the latest mapping at file offset 0 (where the ELF header is) */
	uintptr_t elf_start;
	uint64_t elf_inode;
	unsigned elf_major, elf_minor;
};

static int modules_known(const struct modules_scan *sc, const struct selfmaps_entry *m)
{
	unsigned cur = modules_cur;
	const struct modules_span *s = modules_index[cur];
	uint32_t n = modules_index_n[cur];
	for (uint32_t lo = 0, hi = n; lo < hi;) {
		uint32_t mid = lo + (hi - lo) / 2;
		if (m->start < s[mid].start) {
			hi = mid;
		} else if (m->start > s[mid].start) {
			lo = mid + 1;
		} else {
			const struct mt_stacks_module *e = mt_stacks_module(sc->h, s[mid].entry);
			return e->end == m->end && e->file_offset == m->offset &&
			       e->inode == m->inode && e->dev_major == m->dev_major &&
			       e->dev_minor == m->dev_minor;
		}
	}
	return 0;
}

static void modules_build_id(struct modules_scan *sc, struct mt_stacks_module *e)
{
	struct modules_mem mem = { sc->pid, sc->elf_start, 0 };
	struct elfsym elf;
	ssize_t got = modules_peek(sc->pid, modules_page, sizeof modules_page, sc->elf_start);
	int n;
	mem.cached = got > 0 ? (size_t)got : 0;
	if (elfsym_open(&elf, modules_mem_read, &mem) != 0)
		return;
	n = elfsym_build_id(&elf, 1, e->build_id, sizeof e->build_id);
	if (n > 0)
		e->build_id_len = (uint32_t)n;
}

/* An anonymous executable mapping into the unused copy of modules_jit;
 * one that continues the last (a JIT's code growing page by page, in
 * mappings of different rights) extends it.  Past MODULES_JIT_SLOTS the
 * rest are left out: their frames end a stack, as before. */
static void modules_jit_add(struct modules_scan *sc, const struct selfmaps_entry *m)
{
	struct modules_span *s = modules_jit[modules_jit_cur ^ 1u];
	if (m->end <= m->start)
		return;
	if (sc->jit_n && s[sc->jit_n - 1].end == m->start) {
		s[sc->jit_n - 1].end = m->end;
		return;
	}
	if (sc->jit_n == MODULES_JIT_SLOTS)
		return;
	s[sc->jit_n] = (struct modules_span){ m->start, m->end, 0 };
	sc->jit_n++;
}

static int modules_add(const struct selfmaps_entry *m, void *ctx)
{
	struct modules_scan *sc = ctx;
	struct mt_stacks_module *e;
	int vdso;
	size_t len;

	if (m->offset == 0 && m->path_len && m->path[0] == '/') {
		sc->elf_start = m->start;
		sc->elf_inode = m->inode;
		sc->elf_major = m->dev_major;
		sc->elf_minor = m->dev_minor;
	}
	if (!(m->perms & SELFMAPS_X))
		return 0;
	if (!m->path_len || (m->path_len > 6 && memcmp(m->path, "[anon:", 6) == 0)) {
		modules_jit_add(sc, m); /* anonymous code: a JIT's */
		return 0;
	}
	vdso = m->path_len == 6 && memcmp(m->path, "[vdso]", 6) == 0;
	if (m->path[0] != '/' && !vdso)
		return 0; /* [vsyscall] */
	if (sc->full || modules_known(sc, m))
		return 0;
	/* Once the table is full the scan goes on for the JIT's spans. */
	if (sc->count >= MT_STACKS_MODULE_SLOTS) {
		__atomic_fetch_or(&sc->h->flags, MT_STACKS_FLAG_MODULES_FULL, __ATOMIC_RELAXED);
		sc->full = 1;
		return 0;
	}
	if (!sc->reserve(sc->count + 1)) {
		sc->full = 1;
		return 0;
	}
	e = mt_stacks_module(sc->h, sc->count);
	memset(e, 0, sizeof *e);
	e->start = m->start;
	e->end = m->end;
	e->file_offset = m->offset;
	e->inode = m->inode;
	e->dev_major = m->dev_major;
	e->dev_minor = m->dev_minor;
	len = m->path_len;
	if (len >= MT_STACKS_PATH_BYTES || m->truncated) {
		e->flags |= MT_MODULE_PATH_TRUNCATED;
		if (len >= MT_STACKS_PATH_BYTES)
			len = MT_STACKS_PATH_BYTES - 1;
	}
	memcpy(e->path, m->path, len);
	if (vdso)
		e->flags |= MT_MODULE_VDSO;
	if ((uintptr_t)modules_refresh >= m->start && (uintptr_t)modules_refresh < m->end)
		e->flags |= MT_MODULE_SELF;
	if (!vdso && sc->elf_inode == m->inode && sc->elf_major == m->dev_major &&
	    sc->elf_minor == m->dev_minor && sc->elf_start <= m->start) {
		modules_build_id(sc, e);
		/* the interpreter's symbols, if this is python (python.h) */
		python_probe(sc->h, sc->pid, sc->elf_start, m->path, m->path_len);
	}
	sc->count++;
	sc->added++;
	/* Whole entry first, then the count (stacks.h). */
	__atomic_store_n(&sc->h->module_count, sc->count, __ATOMIC_RELEASE);
	return 0;
}

/* The index of the first `count` entries into the unused copy, sorted by
 * start; where ranges overlap (a library unloaded and another mapped at
 * its place) the newer entry stays.  Then published. */
static void modules_rebuild(struct mt_stacks_header *h, uint32_t count)
{
	unsigned next = modules_cur ^ 1u;
	struct modules_span *s = modules_index[next];
	uint32_t n = 0;
	for (uint32_t i = 0; i < count; i++) {
		const struct mt_stacks_module *e = mt_stacks_module(h, i);
		struct modules_span v = { (uintptr_t)e->start, (uintptr_t)e->end, i };
		uint32_t j = n;
		if (v.end <= v.start)
			continue;
		/* Entries come roughly sorted (maps is): short insertion. */
		while (j > 0 && s[j - 1].start > v.start) {
			s[j] = s[j - 1];
			j--;
		}
		s[j] = v;
		n++;
	}
	/* Drop the older of two overlapping spans. */
	for (uint32_t i = 0; i + 1 < n;) {
		if (s[i].end > s[i + 1].start) {
			uint32_t drop = s[i].entry < s[i + 1].entry ? i : i + 1;
			memmove(&s[drop], &s[drop + 1], (n - drop - 1) * sizeof s[0]);
			n--;
			if (i > 0)
				i--;
		} else {
			i++;
		}
	}
	__atomic_store_n(&modules_index_n[next], n, __ATOMIC_RELAXED);
	__atomic_store_n(&modules_cur, next, __ATOMIC_RELEASE);
}

int modules_refresh(struct mt_stacks_header *h, modules_reserve_fn reserve)
{
	struct modules_scan sc;
	int rc;
	memset(&sc, 0, sizeof sc);
	sc.h = h;
	sc.reserve = reserve;
	sc.count = __atomic_load_n(&h->module_count, __ATOMIC_RELAXED);
	sc.pid = sys_getpid();
	/* The index must describe this table (a fork child's copy is the same
	 * table, so this is only needed the first time). */
	if (modules_index_n[modules_cur] == 0 && sc.count)
		modules_rebuild(h, sc.count);
	rc = selfmaps_scan(modules_add, &sc);
	if (rc >= 0) { /* a scan cut short keeps the spans known before */
		unsigned next = modules_jit_cur ^ 1u;
		__atomic_store_n(&modules_jit_n[next], sc.jit_n, __ATOMIC_RELAXED);
		__atomic_store_n(&modules_jit_cur, next, __ATOMIC_RELEASE);
	}
	__atomic_fetch_add(&h->module_refreshes, 1, __ATOMIC_RELAXED);
	if (sc.added)
		modules_rebuild(h, sc.count);
	return rc < 0 ? rc : sc.added;
}
