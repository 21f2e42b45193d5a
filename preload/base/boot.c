/* boot.c: lazy dlsym(RTLD_NEXT) resolution and the bootstrap arena (see
 * boot.h).  "Next" is whatever allocator follows us in the lookup order, so
 * a program that brings its own malloc is wrapped consistently. */
#include <dlfcn.h>
#include <link.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/boot.h"
#include "base/route.h"
#include "base/sys.h"
#include "record.h"

struct boot_real real;
int boot_ready;
__thread int shim_guard __attribute__((tls_model("initial-exec")));

_Alignas(64) char boot_arena[BOOT_ARENA_BYTES] MT_TABLE;
int boot_glibc_chunks;
/* 1: the heap probe is due (glibc's malloc, not probed yet); 2: running;
 * 0: done or not for this allocator.  Until it has run, the hooks size
 * blocks with malloc_usable_size, which the probe checks the headers
 * against, so a block gets the same size on either side of it. */
int boot_probe_due;
unsigned boot_heap_flags;
static size_t boot_used;
static int boot_state; /* 0 idle, 1 resolving, 2 done */

void *boot_alloc(size_t n, size_t align)
{
	size_t old = __atomic_load_n(&boot_used, __ATOMIC_RELAXED), start;
	if (align < 16)
		align = 16;
	do {
		start = (old + align - 1) & ~(align - 1);
		if (start > BOOT_ARENA_BYTES || n > BOOT_ARENA_BYTES - start)
			return NULL;
	} while (!__atomic_compare_exchange_n(&boot_used, &old, start + n, 1, __ATOMIC_RELAXED,
					      __ATOMIC_RELAXED));
	return boot_arena + start; /* static storage: already zero, fit for calloc */
}

size_t boot_span(const void *p)
{
	return (size_t)(boot_arena + BOOT_ARENA_BYTES - (const char *)p);
}

static size_t boot_usable_unknown(void *p)
{
	(void)p;
	return 0;
}

static void *boot_sym(const char *name)
{
	return dlsym(RTLD_NEXT, name);
}

static _Noreturn void boot_die(const char *what)
{
	static const char pre[] = "libmemtrace: cannot resolve the real ";
	sys_write_all(2, pre, sizeof pre - 1);
	sys_write_all(2, what, strlen(what));
	sys_write_all(2, "\n", 1);
	abort();
}

/* The loaded object that holds `addr`: its file name (NULL when unknown)
 * and base.  0 when no object holds it.  _dl_find_object (glibc 2.35) is a
 * lock-free range look-up; dladdr scans the object's whole symbol table for
 * the nearest symbol (libc's ~3,000), which cost every traced process
 * ~0.1 ms at start, a tenth of a `true` (bench/RESULTS.md, run H). */
static int boot_object_of(void *addr, const char **name, void **base)
{
#ifdef HAVE__DL_FIND_OBJECT
	struct dl_find_object fo;
	if (_dl_find_object(addr, &fo) == 0) {
		*name = fo.dlfo_link_map ? fo.dlfo_link_map->l_name : NULL;
		*base = fo.dlfo_map_start;
		return 1;
	}
	return 0;
#else
	Dl_info info;
	if (!dladdr(addr, &info))
		return 0;
	*name = info.dli_fname;
	*base = info.dli_fbase;
	return 1;
#endif
}

/* Both functions come from the same object, or the sizes would be lies. */
static int boot_same_object(void *a, void *b)
{
	const char *na, *nb;
	void *ba, *bb;
	if (!boot_object_of(a, &na, &ba) || !boot_object_of(b, &nb, &bb))
		return 0;
	return ba == bb;
}

/* 1 if the malloc found is glibc's own (libc.so's, with memalign): the
 * probe below is then due.  Allocates nothing. */
static int boot_glibc_candidate(const struct boot_real *r)
{
#if defined(__x86_64__)
	const char *name, *base;
	void *start;
	if (!boot_object_of((void *)r->malloc, &name, &start) || !name)
		return 0;
	base = strrchr(name, '/');
	base = base ? base + 1 : name;
	return strncmp(base, "libc.so", 7) == 0 && r->memalign;
#else
	(void)r;
	return 0;
#endif
}

/* See boot_usable(): 1 if glibc's chunk header gives malloc_usable_size
 * exactly, checked on real blocks of every shape. */
static int boot_check_glibc(const struct boot_real *r)
{
#if defined(__x86_64__)
	/* Heap chunks only.  An mmapped probe would either move glibc's
	 * dynamic mmap threshold when freed (below 32 MiB: the program's
	 * later large blocks would be served differently) or inflate VmPeak
	 * (above it).  Mmapped chunks use the same header with glibc's fixed
	 * 16-byte overhead (musable() in malloc.c, unchanged since 2.26).
	 * Every shape is here: tcache sizes, a size past the tcache (1100:
	 * from the bins or the top chunk) and blocks split off an aligned
	 * chunk.  Each heap page the probe is first to touch is a page fault
	 * in every process (a `true` never mallocs), so the probes are small
	 * and in the one order, found by trying them all, whose blocks and
	 * the chunks left over from splitting stay in the heap's first page
	 * together with glibc's tcache (one fault; the 3000- and 1500-byte
	 * probes before took two, and the earlier 5000, 20000 and
	 * 4096-aligned ones six).  It runs at the program's first
	 * allocation (boot_probe_heap), which touches that page anyway. */
	static const struct {
		size_t size, align;
	} probes[] = { { 1100, 512 }, { 100, 64 }, { 25, 64 },
		       { 24, 512 },   { 1, 64 },   { 0, 64 } };
	int ok = 1;
	for (size_t i = 0; ok && i < sizeof probes / sizeof probes[0]; i++) {
		void *p = r->malloc(probes[i].size);
		void *q = r->memalign(probes[i].align, probes[i].size + 1);
		size_t hp, hq;
		if (!p || !q) {
			ok = 0;
		} else {
			hp = ((const size_t *)p)[-1];
			hq = ((const size_t *)q)[-1];
			ok = (hp & ~(size_t)7) - ((hp & 2) ? 16 : 8) == r->usable(p) &&
			     (hq & ~(size_t)7) - ((hq & 2) ? 16 : 8) == r->usable(q);
		}
		r->free(p);
		r->free(q);
	}
	return ok;
#else
	(void)r;
	return 0;
#endif
}

/* 1 when the malloc the program calls is not ours: another allocator
 * comes first in the lookup order (earlier in LD_PRELOAD, or the program
 * defines malloc itself), so no allocation of the program passes through
 * the hooks.  The first definition of "malloc" in the global scope is
 * what every call binds to; the shim's own object holds boot_alloc.  A
 * non-PIE program that takes malloc's address makes its PLT stub the
 * symbol's value: that stub is no definition (dladdr finds no symbol
 * starting there), the program binds its calls as the others do, and the
 * answer is the shim's (0), as before this check.  dladdr scans a symbol
 * table, so it runs only when the first answer is not ours. */
static int boot_malloc_foreign(void)
{
	void *first = dlsym(RTLD_DEFAULT, "malloc");
	Dl_info info;
	const ElfW(Sym) *sym = NULL;
	if (!first || boot_same_object(first, (void *)boot_alloc))
		return 0;
	/* dladdr does find the PLT stub: its dynamic symbol is the undefined
	 * "malloc" whose value the link set to the stub (python3.11, a non-PIE
	 * program, is one), so the symbol must be a definition as well */
	return dladdr1(first, &info, (void **)&sym, RTLD_DL_SYMENT) && info.dli_saddr == first &&
	       sym && sym->st_shndx != SHN_UNDEF;
}

static void boot_resolve(void)
{
	struct boot_real r;
	int probe = 0;
	memset(&r, 0, sizeof r);
#define BOOT_RESOLVE(field, sym, type) r.field = (__typeof__(r.field))boot_sym(#sym);
	BOOT_REAL_LIST(BOOT_RESOLVE)
#undef BOOT_RESOLVE
	/* The ones we cannot run without. */
#define BOOT_NEEDED(field, sym, type)                                                          \
	if (!r.field)                                                                          \
		boot_die(#sym);
	BOOT_REAL_NEEDED(BOOT_NEEDED)
	BOOT_NEEDED(close, close, close)
	BOOT_NEEDED(fclose, fclose, fclose)
#undef BOOT_NEEDED
	if (!r.usable || !boot_same_object((void *)r.malloc, (void *)r.usable)) {
		r.usable = boot_usable_unknown;
		__atomic_fetch_or(&boot_heap_flags, MT_FLAG_HEAP_UNSIZED, __ATOMIC_RELAXED);
	} else {
		probe = boot_glibc_candidate(&r);
	}
	if (boot_malloc_foreign())
		__atomic_fetch_or(&boot_heap_flags, MT_FLAG_HEAP_FOREIGN, __ATOMIC_RELAXED);
	real = r;
	route_glibc_sizes(boot_glibc_chunks);
	__atomic_store_n(&boot_probe_due, probe, __ATOMIC_RELAXED);
}

void boot_probe_heap(void)
{
	int expected = 1, ok;
	/* One caller runs it; any other (a signal handler's allocation
	 * meanwhile) goes on with malloc_usable_size. */
	if (!__atomic_compare_exchange_n(&boot_probe_due, &expected, 2, 0, __ATOMIC_ACQ_REL,
					 __ATOMIC_RELAXED))
		return;
	ok = boot_check_glibc(&real);
	__atomic_store_n(&boot_glibc_chunks, ok, __ATOMIC_RELAXED);
	route_glibc_sizes(ok);
	__atomic_store_n(&boot_probe_due, 0, __ATOMIC_RELEASE);
}

int boot_init(void)
{
	int expected = 0;
	if (__atomic_load_n(&boot_ready, __ATOMIC_ACQUIRE))
		return 1;
	if (!shim_guard_enter())
		return 0; /* dlsym re-entered us: the caller uses the arena */
	if (__atomic_compare_exchange_n(&boot_state, &expected, 1, 0, __ATOMIC_ACQ_REL,
					__ATOMIC_ACQUIRE)) {
		boot_resolve();
		__atomic_store_n(&boot_state, 2, __ATOMIC_RELEASE);
		__atomic_store_n(&boot_ready, 1, __ATOMIC_RELEASE);
	} else {
		/* Another thread is resolving; it is not waiting for us. */
		while (!__atomic_load_n(&boot_ready, __ATOMIC_ACQUIRE))
			sched_yield();
	}
	shim_guard_leave();
	return 1;
}

static unsigned boot_saved_fast;
static int boot_arena_held;

void boot_arena_begin(void)
{
	boot_arena_held = shim_guard_enter();
	if (!boot_arena_held)
		return; /* inside a hook already: its allocations are ours anyway */
	/* Only the fast-path bits: ROUTE_SITES belongs to sites.c. */
	boot_saved_fast = route_clear(ROUTE_ST | ROUTE_MT);
	/* boot_init() then answers 0 to this thread (its guard is held): the
	 * hooks serve it from the arena. */
	__atomic_store_n(&boot_ready, 0, __ATOMIC_RELEASE);
}

void boot_arena_end(void)
{
	if (!boot_arena_held)
		return;
	__atomic_store_n(&boot_ready, 1, __ATOMIC_RELEASE);
	route_set(boot_saved_fast);
	boot_arena_held = 0;
	shim_guard_leave();
}
