/* sites.c: the sampled call sites of this image (see sites.h and the
 * contract, stacks.h).  Async-signal-safe, never allocates; the lock is a
 * spinlock taken only by threads not already inside the shim. */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/uio.h>

#include "base/boot.h"
#include "base/config.h"
#include "base/route.h"
#include "base/sys.h"
#include "core/counters.h"
#include "imagename.h"
#include "invariant.h"
#include "sampling/callstack.h"
#include "sampling/modules.h"
#include "sampling/python.h"
#include "sampling/sample.h"
#include "sampling/sites.h"

uint64_t sites_filter[(1u << SITES_FILTER_BITS) / 64] MT_TABLE;

/* Sampled blocks live now: open addressing on the address, backward-shift
 * deletion, at most 3/4 full.  The table starts with 128 slots (one page)
 * and doubles as it fills, up to 32768 (24576 blocks: 12 GiB of heap at the
 * default interval; a sample beyond that is counted as untracked), so that
 * its pages are touched as it grows and not one at random per sample: a
 * short image samples a few times to a few hundred times, and a first touch
 * costs a page fault (~10 us here). */
#define SITES_LIVE_FIRST_BITS 7u
#define SITES_LIVE_MAX_BITS 15u
#define SITES_VAR_MAX ((UINT64_C(1) << 48) - 1)

struct sites_live {
	uintptr_t addr;   /* 0: empty */
	uint64_t weight;  /* estimated bytes */
	uint64_t var_stack; /* variance (KiB^2, 48 bits) << 16 | stack id */
};

static _Alignas(4096) struct sites_live sites_live[1u << SITES_LIVE_MAX_BITS] MT_TABLE;
static uint32_t sites_live_n, sites_live_bits = SITES_LIVE_FIRST_BITS;
/* The entries of the table being doubled, while it is refilled. */
static struct sites_live sites_live_moving[(1u << (SITES_LIVE_MAX_BITS - 1)) / 4u * 3u] MT_TABLE;

/* Stack ids by hash of their frames (id + 1; 0 empty), never deleted, at
 * most half full.  Like the live table it starts at one page and doubles
 * as stacks come, refilled from sites_hashes: a lookup lands on a random
 * slot, and at its full 64 KiB a short image's first sixteen stacks each
 * touched a page of their own (a fault of ~10 us each here, twice over:
 * the read of the miss, then the write). */
#define SITES_INDEX_FIRST_BITS 10u
#define SITES_INDEX_MAX_BITS 14u
_Static_assert((1u << SITES_INDEX_MAX_BITS) == 2u * MT_STACKS_SLOTS,
	       "the full index is twice the stack slots");
static _Alignas(4096) uint32_t sites_index[1u << SITES_INDEX_MAX_BITS] MT_TABLE;
static uint32_t sites_index_bits = SITES_INDEX_FIRST_BITS;
static uint64_t sites_hashes[MT_STACKS_SLOTS] MT_TABLE;

/* Stacks whose live columns changed since the last peak snapshot. */
static uint16_t sites_dirty[MT_STACKS_SLOTS] MT_TABLE;
static uint8_t sites_dirty_flag[MT_STACKS_SLOTS] MT_TABLE;
static uint32_t sites_dirty_n;

/* Frees queued by signal handlers (see sites.h). */
#define SITES_PENDING 64u
static uintptr_t sites_pending[SITES_PENDING] MT_TABLE;
static uint32_t sites_pending_n;
static uint64_t sites_skips, sites_lost;

static struct mt_stacks_header *sites_hdr;
static int sites_lock_word;
static int sites_ready;       /* sampling on (sites_start) */
static int sites_broken;      /* no table could be made: sampling stops */
static int sites_is_file;     /* sites_hdr is the mapped file */
static int sites_want_file;   /* a fork child's table, waiting for its file */
static int sites_has_file;    /* the image has a record file (sites_start) */
static int sites_own_events;  /* this image sampled or freed a sample itself */
static int sites_missed;      /* a pc in no module since the last refresh */
static uint32_t sites_refresh_at; /* stack_count at the last module refresh */
static uint64_t sites_module_room, sites_stack_room; /* bytes the file holds */
static uint64_t sites_code_room; /* of the Python code table (python.h) */
static char sites_path[PATH_MAX + 64] MT_TABLE;

#define SITES_GROW_BYTES (16u << 10)
#define SITES_MODULES_BYTES ((uint64_t)MT_STACKS_MODULE_SLOTS * MT_STACKS_MODULE_BYTES)
#define SITES_STACKS_BYTES ((uint64_t)MT_STACKS_SLOTS * MT_STACKS_STACK_BYTES)
#define SITES_CODES_BYTES ((uint64_t)MT_STACKS_CODE_SLOTS * MT_STACKS_CODE_BYTES)

static void sites_put(uint64_t *field, uint64_t v)
{
	__atomic_store_n(field, v, __ATOMIC_RELAXED);
}

/* ---- the lock -------------------------------------------------------------- */

static int sites_remove(uintptr_t p, struct sites_held *held);

static void sites_drain(void)
{
	if (!__atomic_load_n(&sites_pending_n, __ATOMIC_ACQUIRE))
		return;
	for (unsigned i = 0; i < SITES_PENDING; i++) {
		uintptr_t p;
		if (!__atomic_load_n(&sites_pending[i], __ATOMIC_RELAXED))
			continue;
		p = __atomic_exchange_n(&sites_pending[i], 0, __ATOMIC_ACQUIRE);
		if (p) {
			__atomic_fetch_sub(&sites_pending_n, 1, __ATOMIC_RELAXED);
			sites_remove(p, NULL);
		}
	}
}

/* Forks under way (sites_fork_prepare to the parent's or the child's
 * handler): a count, since two threads may fork at once, the second waiting
 * for the lock the first holds.  A fork holds the lock while glibc's fork
 * waits for the malloc arenas, and a thread inside glibc's malloc holds
 * one: if a signal handler interrupts it there and allocates (glibc's
 * per-thread cache makes that work bare), its sampled malloc or free must
 * not wait for this lock, or neither thread ever goes on (x_stress with
 * MEMTRACE_SAMPLE_BYTES=4096 hung so). */
static int sites_forking;

/* Held for microseconds (a table update, at worst a /proc/self/maps read);
 * waiters yield the CPU after a short spin.  With `yield_to_fork`, gives up
 * and returns 0 when a fork holds the lock (see sites_forking); else 1. */
static int sites_lock_unless_fork(int yield_to_fork)
{
	unsigned spins = 0;
	while (__atomic_exchange_n(&sites_lock_word, 1, __ATOMIC_ACQUIRE)) {
		while (__atomic_load_n(&sites_lock_word, __ATOMIC_RELAXED)) {
			if (yield_to_fork && __atomic_load_n(&sites_forking, __ATOMIC_ACQUIRE))
				return 0;
			if (++spins < 64) {
#if defined(__x86_64__) || defined(__i386__)
				__asm__ volatile("pause");
#endif
				continue;
			}
			spins = 0;
			sys_call6(SYS_sched_yield, 0, 0, 0, 0, 0, 0);
		}
	}
	sites_drain();
	return 1;
}

static void sites_lock(void)
{
	sites_lock_unless_fork(0);
}

/* The record's stacks_changes (record.h): raised at the unlock after the
 * live columns of a file-backed table changed, or the file was made. */
static int sites_changed;
static uint64_t sites_changes;

static void sites_unlock(void)
{
	sites_drain();
	if (sites_changed && sites_is_file) {
		sites_changed = 0;
		__atomic_store_n(&counters_rec->stacks_changes, ++sites_changes, __ATOMIC_RELEASE);
	}
	__atomic_store_n(&sites_lock_word, 0, __ATOMIC_RELEASE);
}

/* A free that cannot take the lock now: for the next holder. */
static void sites_queue(uintptr_t p)
{
	for (unsigned i = 0; i < SITES_PENDING; i++) {
		uintptr_t none = 0;
		if (__atomic_compare_exchange_n(&sites_pending[i], &none, p, 0, __ATOMIC_RELEASE,
						__ATOMIC_RELAXED)) {
			__atomic_fetch_add(&sites_pending_n, 1, __ATOMIC_RELEASE);
			return;
		}
	}
	__atomic_fetch_add(&sites_lost, 1, __ATOMIC_RELAXED);
}

/* ---- the table's memory ---------------------------------------------------- */

/* len bytes of zeros at off: one pwritev of up to 16 views of one zero
 * page per system call (a growth is 16 KiB or more). */
static int sites_zeros(int fd, uint64_t off, uint64_t len)
{
	static const char zeros[4096];
	struct iovec iov[16];
	while (len) {
		int k = 0;
		for (uint64_t left = len; left && k < 16; k++) {
			size_t n = left < sizeof zeros ? (size_t)left : sizeof zeros;
			iov[k].iov_base = (void *)zeros;
			iov[k].iov_len = n;
			left -= n;
		}
		/* the offset as glibc passes it: whole, then its high half
		 * (which a 64-bit kernel ignores) */
		long r = sys_call6(SYS_pwritev, fd, (long)iov, k, (long)off, (long)(off >> 32), 0);
		if (r == -EINTR)
			continue;
		if (r < 0)
			return (int)r;
		if (r == 0)
			return -ENOSPC;
		off += (uint64_t)r;
		len -= (uint64_t)r;
	}
	return 0;
}

/* RLIMIT_FSIZE now: the program may lower it at any time (ulimit -f). */
static uint64_t sites_fsize_limit(void)
{
	struct rlimit lim;
	if (sys_call6(SYS_getrlimit, RLIMIT_FSIZE, (long)&lim, 0, 0, 0, 0) == 0 &&
	    lim.rlim_cur != RLIM_INFINITY)
		return lim.rlim_cur;
	return UINT64_MAX;
}

/* The file holds [off, off + len) from now on: written zeros, as the
 * record's are (not ftruncate: a store into a hole of a full file system
 * would kill the program with SIGBUS; not fallocate: unwritten extents
 * may still need blocks at the first store). */
static int sites_grow_file(uint64_t off, uint64_t len)
{
	int fd, rc;
	/* Past RLIMIT_FSIZE a write raises SIGXFSZ: stop short of it. */
	if (off + len > sites_fsize_limit())
		return -EFBIG;
	fd = sys_open(sites_path, O_WRONLY | O_CLOEXEC | O_NOFOLLOW, 0);
	if (fd < 0)
		return fd;
	rc = sites_zeros(fd, off, len);
	sys_close(fd);
	return rc;
}

/* Room for `need` bytes of a section at `base`, of at most `max` bytes, of
 * which *room are held.  Grows by doubling, in 16 KiB steps. */
static int sites_reserve(uint64_t base, uint64_t max, uint64_t *room, uint64_t need)
{
	uint64_t grow;
	if (need <= *room)
		return 1;
	if (need > max)
		return 0;
	grow = *room * 2 > need ? *room * 2 : need;
	grow = (grow + SITES_GROW_BYTES - 1) & ~(uint64_t)(SITES_GROW_BYTES - 1);
	if (grow > max)
		grow = max;
	if (sites_grow_file(base + *room, grow - *room) != 0) {
		if (sites_hdr)
			__atomic_fetch_or(&sites_hdr->flags, MT_STACKS_FLAG_FILE_FULL,
					  __ATOMIC_RELAXED);
		return 0;
	}
	*room = grow;
	return 1;
}

static int sites_reserve_modules(uint32_t n)
{
	return sites_reserve(MT_STACKS_MODULES_OFFSET, SITES_MODULES_BYTES, &sites_module_room,
			     (uint64_t)n * MT_STACKS_MODULE_BYTES);
}

static int sites_reserve_stacks(uint32_t n)
{
	return sites_reserve(MT_STACKS_STACKS_OFFSET, SITES_STACKS_BYTES, &sites_stack_room,
			     (uint64_t)n * MT_STACKS_STACK_BYTES);
}

static int sites_reserve_codes(uint32_t n)
{
	return sites_reserve(MT_STACKS_CODES_OFFSET, SITES_CODES_BYTES, &sites_code_room,
			     (uint64_t)n * MT_STACKS_CODE_BYTES);
}

/* All three tables' room: the whole table (memory of our own). */
static void sites_room_all(void)
{
	sites_module_room = SITES_MODULES_BYTES;
	sites_stack_room = SITES_STACKS_BYTES;
	sites_code_room = SITES_CODES_BYTES;
}

static void sites_unlink(void)
{
	sys_call6(SYS_unlink, (long)sites_path, 0, 0, 0, 0, 0);
}

/* Creates and maps "<dir>/<pid>.<gen>.mts" with its header; NULL if it
 * cannot (then the table lives in our memory and memsup sees none). */
static struct mt_stacks_header *sites_map_file(void)
{
	const struct mt_record *r = counters_rec;
	void *m;
	int fd, rc;

	if (imagename_path(sites_path, sizeof sites_path, config.dir, r->pid, r->gen,
			  MT_STACKS_SUFFIX) < 0)
		return NULL;
	if (sites_fsize_limit() < MT_STACKS_HEADER_BYTES)
		return NULL;
	fd = sys_open(sites_path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0644);
	if (fd < 0)
		return NULL;
	rc = sites_zeros(fd, 0, MT_STACKS_HEADER_BYTES);
	/* Beyond the end of the file until it grows: never touched before. */
	m = rc == 0 ? sys_mmap(NULL, MT_STACKS_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0)
		    : MAP_FAILED;
	sys_close(fd);
	if (m == MAP_FAILED) {
		sites_unlink();
		return NULL;
	}
	sites_module_room = sites_stack_room = sites_code_room = 0;
	return m;
}

static struct mt_stacks_header *sites_map_anon(void)
{
	void *m = sys_mmap(NULL, MT_STACKS_SIZE, PROT_READ | PROT_WRITE,
			   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	return m == MAP_FAILED ? NULL : m;
}

/* The table's identity and stack 0, modules, then magic.  0 or -errno. */
static int sites_fill(struct mt_stacks_header *h)
{
	struct mt_stack *st;
	mt_stacks_set_layout(h);
	h->pid = counters_rec->pid;
	h->gen = counters_rec->gen;
	h->sample_bytes = sample_rate();
	h->start_mono_ns = sys_mono_ns_cold();
	if (!sites_reserve_stacks(1))
		return -ENOSPC;
	st = mt_stacks_stack(h, 0);
	st->flags = MT_STACK_CATCHALL;
	__atomic_store_n(&h->stack_count, 1, __ATOMIC_RELEASE);
	modules_refresh(h, sites_reserve_modules);
	sites_refresh_at = 1;
	h->seen_heap_peak = h->peak_heap =
		__atomic_load_n(&counters_rec->heap_peak, __ATOMIC_RELAXED);
	h->seen_total_peak = h->peak_total =
		__atomic_load_n(&counters_rec->total_peak, __ATOMIC_RELAXED);
	if (h->flags & MT_STACKS_FLAG_FILE_FULL)
		return -ENOSPC;
	__atomic_store_n(&h->magic, MT_STACKS_MAGIC, __ATOMIC_RELEASE);
	return 0;
}

/* The first sample: the table, in a file when the image has a record file. */
static int sites_make(void)
{
	struct mt_stacks_header *h = NULL;
	if (sites_hdr)
		return 1;
	if (sites_broken)
		return 0;
	sites_is_file = 0;
	if (config.dir[0] && sites_has_file && counters_is_own_process()) {
		h = sites_map_file();
		sites_is_file = h != NULL;
		if (h && sites_fill(h) != 0) {
			/* No room for even the start: no file, as with the record. */
			sys_munmap(h, MT_STACKS_SIZE);
			sites_unlink();
			h = NULL;
			sites_is_file = 0;
		}
	}
	if (!h) {
		h = sites_map_anon();
		sites_room_all();
		if (!h || sites_fill(h) != 0) {
			sites_broken = 1;
			return 0;
		}
	}
	__atomic_store_n(&sites_hdr, h, __ATOMIC_RELEASE);
	return 1;
}

/* A fork child's table (in our memory since the fork) into its own file,
 * at its first sampled event or its end. */
static void sites_materialize(void)
{
	struct mt_stacks_header *mem = sites_hdr, *f;
	uint32_t nmod = mem->module_count, nstk = mem->stack_count, ncode = mem->code_count;
	sites_want_file = 0;
	if (!(f = sites_map_file()))
		return;
	sites_is_file = 1;
	if (!sites_reserve_modules(nmod) || !sites_reserve_stacks(nstk) ||
	    (ncode && !sites_reserve_codes(ncode))) {
		sys_munmap(f, MT_STACKS_SIZE);
		sites_unlink();
		sites_is_file = 0;
		sites_room_all();
		return;
	}
	memcpy(f, mem, MT_STACKS_HEADER_BYTES);
	f->magic = 0;
	f->flags &= ~(uint32_t)MT_STACKS_FLAG_FILE_FULL;
	memcpy(mt_stacks_module(f, 0), mt_stacks_module(mem, 0),
	       (size_t)nmod * MT_STACKS_MODULE_BYTES);
	memcpy(mt_stacks_stack(f, 0), mt_stacks_stack(mem, 0),
	       (size_t)nstk * MT_STACKS_STACK_BYTES);
	memcpy(mt_stacks_code(f, 0), mt_stacks_code(mem, 0), (size_t)ncode * MT_STACKS_CODE_BYTES);
	__atomic_store_n(&f->magic, MT_STACKS_MAGIC, __ATOMIC_RELEASE);
	/* Every reader of sites_hdr holds the lock, as we do. */
	__atomic_store_n(&sites_hdr, f, __ATOMIC_RELEASE);
	sys_munmap(mem, MT_STACKS_SIZE);
	sites_changed = 1;
}

/* ---- the peak ---------------------------------------------------------------- */

static void sites_mark(uint32_t id)
{
	MT_ASSERT(id < MT_STACKS_SLOTS);
	if (!sites_dirty_flag[id]) {
		/* each stack at most once in the list */
		MT_ASSERT(sites_dirty_n < MT_STACKS_SLOTS);
		sites_dirty_flag[id] = 1;
		sites_dirty[sites_dirty_n++] = (uint16_t)id;
	}
}

/* The live columns of the changed stacks into the peak columns, under the
 * sequence lock (stacks.h): the set at total_peak `total`, when heap_peak
 * was `peak`. */
static void sites_snapshot(struct mt_stacks_header *h, uint64_t total, uint64_t peak)
{
	uint64_t seq = h->peak_seq;
	/* stacks.h: even when stable.  Only the lock holder writes it, so an
	 * odd value here is a snapshot left half done. */
	MT_ASSERT_MSG((seq & 1) == 0, "peak_seq even outside a snapshot");
	MT_ASSERT(sites_dirty_n <= MT_STACKS_SLOTS);
	__atomic_store_n(&h->peak_seq, seq + 1, __ATOMIC_RELAXED);
	__atomic_thread_fence(__ATOMIC_RELEASE);
	for (uint32_t i = 0; i < sites_dirty_n; i++) {
		uint32_t id = sites_dirty[i];
		struct mt_stack *st = mt_stacks_stack(h, id);
		sites_put(&st->peak_bytes, st->live_bytes);
		sites_put(&st->peak_count, st->live_count);
		sites_put(&st->peak_var, st->live_var);
		sites_dirty_flag[id] = 0;
	}
	sites_dirty_n = 0;
	sites_put(&h->peak_heap, peak);
	sites_put(&h->peak_total, total);
	sites_put(&h->peak_mono_ns, sys_mono_ns());
	MT_ASSERT(h->peak_seq == seq + 1);
	__atomic_store_n(&h->peak_seq, seq + 2, __ATOMIC_RELEASE);
}

/* Before the sampled set changes: if the total peak (heap + mappings)
 * rose since the last change, the set as it stands was live at that peak
 * (stacks.h, "The image's peak"). */
static void sites_event(struct mt_stacks_header *h)
{
	uint64_t total = __atomic_load_n(&counters_rec->total_peak, __ATOMIC_RELAXED);
	uint64_t peak = __atomic_load_n(&counters_rec->heap_peak, __ATOMIC_RELAXED);
	if (peak != h->seen_heap_peak)
		sites_put(&h->seen_heap_peak, peak);
	if (total <= h->seen_total_peak)
		return;
	/* stacks.h: the peak columns are the set at the highest peak seen */
	MT_ASSERT(h->peak_total <= h->seen_total_peak);
	sites_snapshot(h, total, peak);
	sites_put(&h->seen_total_peak, total);
}

/* ---- stacks ---------------------------------------------------------------- */

static uint64_t sites_hash(const uint64_t *pcs, unsigned n)
{
	uint64_t h = UINT64_C(0xcbf29ce484222325) ^ n;
	for (unsigned i = 0; i < n; i++) {
		h ^= pcs[i];
		h *= UINT64_C(0x100000001b3);
		h ^= h >> 29;
	}
	return h;
}

static int sites_may_refresh(const struct mt_stacks_header *h)
{
	/* Early misses are libraries loaded after the table was made; later
	 * ones may be JIT code, which no refresh finds: at most one refresh
	 * per 16 new stacks then. */
	return h->module_refreshes < 8 || h->stack_count >= sites_refresh_at + 16;
}

static uint32_t sites_index_mask(void)
{
	return (1u << sites_index_bits) - 1;
}

/* The first empty slot of hash's run. */
static uint32_t sites_index_free(uint64_t hash)
{
	const uint32_t mask = sites_index_mask();
	uint32_t slot = (uint32_t)(hash >> 32) & mask;
	while (sites_index[slot])
		slot = (slot + 1) & mask;
	return slot;
}

/* Room in the index for stack `count` (stacks 1..count-1 are in it):
 * doubles it, and refills it from their hashes, when it would pass half
 * full.  Returns 1 if it moved. */
static int sites_index_room(uint32_t count)
{
	if (count < (1u << sites_index_bits) / 2u || sites_index_bits == SITES_INDEX_MAX_BITS)
		return 0;
	memset(sites_index, 0, sizeof sites_index[0] << sites_index_bits);
	sites_index_bits++;
	for (uint32_t id = 1; id < count; id++)
		sites_index[sites_index_free(sites_hashes[id])] = id + 1;
	return 1;
}

/* A stack's identity is its frames and its kind (stacks.h, MT_STACK_MMAP). */
static uint32_t sites_stack_for(struct mt_stacks_header *h, const uint64_t *pcs, unsigned n,
				uint32_t flags, int miss)
{
	uint64_t hash = sites_hash(pcs, n) ^ ((flags & MT_STACK_MMAP) ? UINT64_C(0x6d6d6170) : 0);
	const uint32_t mask = sites_index_mask();
	uint32_t slot = (uint32_t)(hash >> 32) & mask, id, count;
	struct mt_stack *st;

	for (uint32_t probes = 0; probes <= mask; probes++) {
		uint32_t v = sites_index[slot];
		if (!v)
			break;
		st = mt_stacks_stack(h, v - 1);
		if (sites_hashes[v - 1] == hash && st->nframes == n &&
		    ((st->flags ^ flags) & MT_STACK_MMAP) == 0 &&
		    memcmp(st->pc, pcs, n * sizeof pcs[0]) == 0)
			return v - 1;
		slot = (slot + 1) & mask;
	}
	count = h->stack_count;
	if (n == 0 || count >= MT_STACKS_SLOTS || !sites_reserve_stacks(count + 1))
		goto catchall;
	if (sites_index_room(count))
		slot = sites_index_free(hash);
	/* the index is at most half full: a probe always ends */
	MT_ASSERT(count < (1u << sites_index_bits) / 2u);
	MT_ASSERT(count < MT_STACKS_SLOTS && sites_index[slot] == 0);
	if (miss)
		sites_missed = 1;
	if (sites_missed && sites_may_refresh(h)) {
		modules_refresh(h, sites_reserve_modules);
		sites_missed = 0;
		sites_refresh_at = count;
	}
	id = count;
	st = mt_stacks_stack(h, id);
	st->nframes = n;
	st->flags = flags;
	st->modules_seen = h->module_count;
	memcpy(st->pc, pcs, n * sizeof pcs[0]);
	sites_hashes[id] = hash;
	sites_index[slot] = id + 1;
	/* stacks.h: append-only, entry i published as count i+1 */
	MT_ASSERT(h->stack_count == count);
	__atomic_store_n(&h->stack_count, count + 1, __ATOMIC_RELEASE);
	return id;
catchall:
	__atomic_fetch_add(&h->catchall_samples, 1, __ATOMIC_RELAXED);
	return 0;
}

/* ---- sampled blocks ---------------------------------------------------------- */

/* A block's first slot in the live table: the top bits of its filter slot
 * (sites.h), so that the live blocks of one filter slot share a home and
 * lie in the one run of entries that starts there (sites_filter_drop). */
_Static_assert(SITES_LIVE_MAX_BITS <= SITES_FILTER_BITS,
	       "a live table's home is a prefix of the filter's slot");
static uint32_t sites_home(uintptr_t p)
{
	return sites_slot((const void *)p) >> (SITES_FILTER_BITS - sites_live_bits);
}

static uint32_t sites_live_mask(void)
{
	return (1u << sites_live_bits) - 1;
}

static int sites_find(uintptr_t p)
{
	const uint32_t mask = sites_live_mask();
	for (uint32_t i = sites_home(p), k = 0; k <= mask; i = (i + 1) & mask, k++) {
		if (sites_live[i].addr == p)
			return (int)i;
		if (!sites_live[i].addr)
			return -1;
	}
	return -1;
}

static void sites_place(const struct sites_live *e)
{
	const uint32_t mask = sites_live_mask();
	uint32_t i = sites_home(e->addr);
	while (sites_live[i].addr)
		i = (i + 1) & mask;
	sites_live[i] = *e;
}

/* Doubles the table when it is 3/4 full; 0 if it is full for good. */
static int sites_room(void)
{
	uint32_t slots = 1u << sites_live_bits, n = 0;
	if (sites_live_n < slots / 4u * 3u)
		return 1;
	if (sites_live_bits == SITES_LIVE_MAX_BITS)
		return 0;
	for (uint32_t i = 0; i < slots; i++)
		if (sites_live[i].addr)
			sites_live_moving[n++] = sites_live[i];
	memset(sites_live, 0, slots * sizeof sites_live[0]);
	sites_live_bits++;
	for (uint32_t i = 0; i < n; i++)
		sites_place(&sites_live_moving[i]);
	return 1;
}

/* Empties slot i, moving later entries of the same run back (no tombstones). */
static void sites_delete(uint32_t i)
{
	const uint32_t mask = sites_live_mask();
	uint32_t j = i;
	for (;;) {
		uint32_t k;
		j = (j + 1) & mask;
		if (!sites_live[j].addr)
			break;
		k = sites_home(sites_live[j].addr);
		/* Entry j may move to i unless its home lies cyclically in (i, j]. */
		if (i <= j ? (k <= i || k > j) : (k <= i && k > j)) {
			sites_live[i] = sites_live[j];
			i = j;
		}
	}
	sites_live[i].addr = 0;
	MT_ASSERT(sites_live_n > 0);
	sites_live_n--;
}

/* Under the lock, before the block's allocation returns. */
static void sites_filter_set(uintptr_t p)
{
	unsigned k = sites_slot((const void *)p);
	if (!(__atomic_load_n(&route_mode, __ATOMIC_RELAXED) & ROUTE_SITES))
		route_set(ROUTE_SITES); /* before the bit: free() skips the filter until then */
	__atomic_fetch_or(&sites_filter[k / 64], UINT64_C(1) << (k % 64), __ATOMIC_RELAXED);
}

/* Under the lock, after block p's entry left the table: its bit is
 * cleared unless another live block has the same slot.  Those share p's
 * home (sites_home), and linear probing keeps every entry between its
 * home and the first empty slot after it, so the run from there holds
 * them all (the table is never more than 3/4 full: the run ends).  A live
 * block's bit is never clear, not even for a moment, to a free() that
 * reads the filter without the lock.  Cleared at once rather than
 * recomputed now and then: glibc hands a freed block's address out again
 * soon, and every free of the new, unsampled block would take the lock
 * and look for it in the table until then (about 150 instructions, three
 * frees in four that reached the table in bench/malloc_bench). */
static void sites_filter_drop(uintptr_t p)
{
	const uint32_t mask = sites_live_mask();
	unsigned k = sites_slot((const void *)p);
	for (uint32_t i = sites_home(p); sites_live[i].addr; i = (i + 1) & mask)
		if (sites_slot((const void *)sites_live[i].addr) == k)
			return;
	__atomic_fetch_and(&sites_filter[k / 64], ~(UINT64_C(1) << (k % 64)), __ATOMIC_RELAXED);
}

static void sites_column_add(struct mt_stacks_header *h, uint32_t id, int sign, uint64_t w,
			     uint64_t var)
{
	struct mt_stack *st = mt_stacks_stack(h, id);
	if (sign > 0) {
		sites_put(&st->live_bytes, st->live_bytes + w);
		sites_put(&st->live_count, st->live_count + 1);
		sites_put(&st->live_var, st->live_var + var);
	} else {
		sites_put(&st->live_bytes, st->live_bytes > w ? st->live_bytes - w : 0);
		sites_put(&st->live_count, st->live_count ? st->live_count - 1 : 0);
		sites_put(&st->live_var, st->live_var > var ? st->live_var - var : 0);
	}
	sites_mark(id);
	sites_changed = 1;
}

/* Takes the sample of block p out of the live set (a free, a realloc, or
 * a stale entry whose address came back); 1 if there was one. */
static int sites_remove(uintptr_t p, struct sites_held *held)
{
	struct mt_stacks_header *h = sites_hdr;
	int i = sites_find(p);
	uint64_t w, var;
	uint32_t id;
	if (i < 0)
		return 0;
	w = sites_live[i].weight;
	var = sites_live[i].var_stack >> 16;
	id = (uint32_t)(sites_live[i].var_stack & 0xffff);
	if (h) {
		sites_event(h);
		sites_column_add(h, id, -1, w, var);
		__atomic_fetch_add(&h->sampled_frees, 1, __ATOMIC_RELAXED);
	}
	sites_delete((uint32_t)i);
	sites_filter_drop(p);
	if (held) {
		held->weight = w;
		held->var = var;
		held->stack = id;
		held->held = 1;
	}
	return 1;
}

static void sites_add(struct mt_stacks_header *h, uintptr_t p, uint32_t id, uint64_t w,
		      uint64_t var)
{
	struct sites_live e;
	sites_remove(p, NULL); /* a stale entry: that block is gone */
	if (!sites_room()) {
		__atomic_fetch_add(&h->untracked_samples, 1, __ATOMIC_RELAXED);
		__atomic_fetch_add(&h->untracked_bytes, w, __ATOMIC_RELAXED);
		return;
	}
	if (var > SITES_VAR_MAX)
		var = SITES_VAR_MAX;
	e.addr = p;
	e.weight = w;
	e.var_stack = var << 16 | id;
	sites_place(&e);
	sites_live_n++;
	/* the live table is at most 3/4 full (sites_room) */
	MT_ASSERT(sites_live_n <= (1u << sites_live_bits) / 4u * 3u);
	MT_ASSERT(id < h->stack_count);
	sites_filter_set(p);
	sites_column_add(h, id, 1, w, var);
}

/* ---- sampled mappings --------------------------------------------------------------- */

/* The sampled mappings live now (stacks.h, "Mapped memory"): disjoint
 * [start, end) ranges sorted by address, each with its weight and its
 * variance << 16 | stack id, as the live table's entries.  Apart from the
 * live table, so that free() never looks at them (no filter bit) and a
 * munmap finds every sampled range it overlaps.  Touched only as it
 * fills (.lbss). */
struct sites_region {
	uintptr_t start, end;
	uint64_t weight;
	uint64_t var_stack;
};
static struct sites_region sites_regions[MT_STACKS_MAP_SAMPLES] MT_TABLE;
static uint32_t sites_regions_n;

/* The first region whose end is above addr. */
static uint32_t sites_region_at(uintptr_t addr)
{
	uint32_t lo = 0, hi = sites_regions_n;
	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;
		if (sites_regions[mid].end > addr)
			hi = mid;
		else
			lo = mid + 1;
	}
	return lo;
}

static void sites_region_insert(uint32_t i, uintptr_t s, uintptr_t e, uint64_t w, uint64_t var,
				uint32_t id)
{
	MT_ASSERT(sites_regions_n < MT_STACKS_MAP_SAMPLES && i <= sites_regions_n);
	memmove(&sites_regions[i + 1], &sites_regions[i],
		(sites_regions_n - i) * sizeof sites_regions[0]);
	if (var > SITES_VAR_MAX)
		var = SITES_VAR_MAX;
	sites_regions[i].start = s;
	sites_regions[i].end = e;
	sites_regions[i].weight = w;
	sites_regions[i].var_stack = var << 16 | id;
	__atomic_store_n(&sites_regions_n, sites_regions_n + 1, __ATOMIC_RELAXED);
	/* sorted and disjoint */
	MT_ASSERT(i == 0 || sites_regions[i - 1].end <= s);
	MT_ASSERT(i + 1 == sites_regions_n || e <= sites_regions[i + 1].start);
}

static void sites_region_delete(uint32_t i)
{
	MT_ASSERT(i < sites_regions_n);
	memmove(&sites_regions[i], &sites_regions[i + 1],
		(sites_regions_n - i - 1) * sizeof sites_regions[0]);
	__atomic_store_n(&sites_regions_n, sites_regions_n - 1, __ATOMIC_RELAXED);
}

/* A piece [s, e) of a sampled mapping of `len` bytes counting for w (and
 * var): its share of the weight, its share squared of the variance. */
static void sites_region_piece(struct mt_stacks_header *h, uint32_t i, uintptr_t s, uintptr_t e,
			       uint64_t len, uint64_t w, uint64_t var, uint32_t id)
{
	double f = (double)(e - s) / (double)len;
	uint64_t pw = (uint64_t)((double)w * f + 0.5), pv = (uint64_t)((double)var * f * f + 0.5);
	if (sites_regions_n == MT_STACKS_MAP_SAMPLES) {
		__atomic_fetch_add(&h->untracked_samples, 1, __ATOMIC_RELAXED);
		__atomic_fetch_add(&h->untracked_bytes, pw, __ATOMIC_RELAXED);
		return;
	}
	sites_region_insert(i, s, e, pw, pv, id);
	sites_column_add(h, id, 1, pw, pv);
}

/* [s, e) was unmapped: every sampled mapping it overlaps leaves the live
 * columns, and what is left of it outside [s, e) comes back as pieces.
 * Under the lock.  1 if any changed. */
static int sites_region_cut(struct mt_stacks_header *h, uintptr_t s, uintptr_t e)
{
	uint32_t i = sites_region_at(s);
	int changed = 0;
	while (i < sites_regions_n && sites_regions[i].start < e) {
		struct sites_region r = sites_regions[i];
		uint64_t var = r.var_stack >> 16, len = r.end - r.start;
		uint32_t id = (uint32_t)(r.var_stack & 0xffff);
		if (!changed)
			sites_event(h);
		changed = 1;
		sites_column_add(h, id, -1, r.weight, var);
		sites_region_delete(i);
		if (r.start >= s && r.end <= e) {
			__atomic_fetch_add(&h->sampled_frees, 1, __ATOMIC_RELAXED);
			__atomic_fetch_add(&h->map_unmaps, 1, __ATOMIC_RELAXED);
			continue;
		}
		__atomic_fetch_add(&h->map_cuts, 1, __ATOMIC_RELAXED);
		if (r.start < s)
			sites_region_piece(h, i++, r.start, s, len, r.weight, var, id);
		if (r.end > e)
			sites_region_piece(h, i++, e, r.end, len, r.weight, var, id);
	}
	return changed;
}

/* A sampled mapping [s, e) of stack id; whatever sampled range it overlaps
 * is gone (MAP_FIXED, or unmapped where the shim could not see it). */
static void sites_region_add(struct mt_stacks_header *h, uintptr_t s, uintptr_t e, uint32_t id,
			     uint64_t w, uint64_t var)
{
	sites_region_cut(h, s, e);
	if (sites_regions_n == MT_STACKS_MAP_SAMPLES) {
		__atomic_fetch_add(&h->untracked_samples, 1, __ATOMIC_RELAXED);
		__atomic_fetch_add(&h->untracked_bytes, w, __ATOMIC_RELAXED);
		return;
	}
	MT_ASSERT(id < h->stack_count);
	sites_region_insert(sites_region_at(s), s, e, w, var, id);
	sites_column_add(h, id, 1, w, var);
}

/* ---- entry points -------------------------------------------------------------- */

/* A sampled block (kind 0) or mapping (kind MT_STACK_MMAP), with the
 * shim's guard held by the caller.  0 when a fork held the lock (not
 * taken: a skip). */
static int sites_sample(void *p, size_t usable, uint64_t weight, uintptr_t ra, uint32_t kind)
{
	uint64_t pcs[MT_STACKS_FRAMES], t0, var = sample_var_kib2(weight, usable);
	uint32_t flags = 0, id;
	struct mt_stacks_header *h;
	unsigned n;
	int miss = 0;

	t0 = sys_mono_ns();
	if (!__atomic_load_n(&sites_hdr, __ATOMIC_ACQUIRE)) {
		if (!sites_lock_unless_fork(1))
			goto skip;
		sites_make();
		sites_unlock();
	}
	if (__atomic_load_n(&sites_hdr, __ATOMIC_ACQUIRE)) {
		/* The expensive part, outside the lock. */
		n = callstack_capture(pcs, MT_STACKS_FRAMES, ra, &flags, &miss);
		if (!sites_lock_unless_fork(1))
			goto skip;
		if (sites_want_file)
			sites_materialize();
		h = sites_hdr;
		sites_own_events = 1;
		sites_event(h);
		/* the interpreter's frames, if any (python.h): under the lock,
		 * which the code table needs */
		n = python_stack(h, pcs, n, MT_STACKS_FRAMES, &flags, sites_reserve_codes);
		id = sites_stack_for(h, pcs, n, flags | kind, miss);
		if (kind & MT_STACK_MMAP) {
			sites_region_add(h, (uintptr_t)p, (uintptr_t)p + usable, id, weight, var);
			__atomic_fetch_add(&h->map_samples, 1, __ATOMIC_RELAXED);
		} else {
			sites_add(h, (uintptr_t)p, id, weight, var);
		}
		__atomic_fetch_add(&mt_stacks_stack(h, id)->total_count, 1, __ATOMIC_RELAXED);
		__atomic_fetch_add(&mt_stacks_stack(h, id)->total_bytes, weight, __ATOMIC_RELAXED);
		__atomic_fetch_add(&h->samples, 1, __ATOMIC_RELAXED);
		__atomic_fetch_add((flags & MT_STACK_FP) ? &h->fp_samples : &h->backtrace_samples, 1,
				   __ATOMIC_RELAXED);
		if (MT_UNLIKELY(callstack_cfi_is_off()) &&
		    !(__atomic_load_n(&h->flags, __ATOMIC_RELAXED) & MT_STACKS_FLAG_CFI_OFF))
			__atomic_fetch_or(&h->flags, MT_STACKS_FLAG_CFI_OFF, __ATOMIC_RELAXED);
		sites_put(&h->skipped_samples, __atomic_load_n(&sites_skips, __ATOMIC_RELAXED));
		sites_put(&h->lost_frees, __atomic_load_n(&sites_lost, __ATOMIC_RELAXED));
		__atomic_fetch_add(&h->sample_ns, sys_mono_ns() - t0, __ATOMIC_RELAXED);
		sites_unlock();
	}
	return 1;
skip: /* a fork holds the lock: this block is not sampled */
	__atomic_fetch_add(&sites_skips, 1, __ATOMIC_RELAXED);
	return 0;
}

void sites_note_sample(void *p, size_t usable, uint64_t weight, uintptr_t ra)
{
	if (!__atomic_load_n(&sites_ready, __ATOMIC_RELAXED) || sites_broken)
		return;
	if (!shim_guard_enter()) {
		__atomic_fetch_add(&sites_skips, 1, __ATOMIC_RELAXED);
		return;
	}
	sites_sample(p, usable, weight, ra, 0);
	shim_guard_leave();
}

void sites_note_map(void *p, size_t len, uint64_t weight, uintptr_t ra)
{
	/* sites.h: track.c holds the guard; a handler inside the shim never
	 * gets here (track.c passes its mappings through untracked) */
	MT_ASSERT(shim_guard != 0);
	if (!__atomic_load_n(&sites_ready, __ATOMIC_RELAXED) || sites_broken || !len)
		return;
	sites_sample(p, len, weight, ra, MT_STACK_MMAP);
}

void sites_note_unmap(uintptr_t start, uintptr_t end)
{
	MT_ASSERT(shim_guard != 0);
	if (start >= end || !__atomic_load_n(&sites_regions_n, __ATOMIC_RELAXED))
		return;
	if (!sites_lock_unless_fork(1)) {
		/* a fork holds the lock: the regions stay (stacks.h) */
		__atomic_fetch_add(&sites_lost, 1, __ATOMIC_RELAXED);
		return;
	}
	if (sites_hdr && sites_region_cut(sites_hdr, start, end))
		sites_own_events = 1;
	sites_unlock();
}

/* p's entry out of the table, its sample kept in *held when held is not
 * NULL.  Queued instead, for the next lock holder to drain, when this
 * thread cannot take the lock now: inside a hook already, or a fork holds
 * it (sites_forking). */
static void sites_take_out(void *p, struct sites_held *held)
{
	if (!shim_guard_enter()) {
		sites_queue((uintptr_t)p);
		return;
	}
	if (!sites_lock_unless_fork(1)) {
		sites_queue((uintptr_t)p);
		shim_guard_leave();
		return;
	}
	if (sites_remove((uintptr_t)p, held))
		sites_own_events = 1;
	sites_unlock();
	shim_guard_leave();
}

void sites_forget(void *p)
{
	sites_take_out(p, NULL);
}

void sites_hold(void *p, struct sites_held *held)
{
	held->held = 0;
	sites_take_out(p, held);
}

void sites_unhold(void *p, const struct sites_held *held)
{
	if (!held->held || !shim_guard_enter())
		return;
	if (!sites_lock_unless_fork(1)) {
		shim_guard_leave(); /* the block goes unsampled, as a skip */
		__atomic_fetch_add(&sites_skips, 1, __ATOMIC_RELAXED);
		return;
	}
	if (sites_hdr && held->stack < sites_hdr->stack_count) {
		sites_event(sites_hdr);
		sites_add(sites_hdr, (uintptr_t)p, held->stack, held->weight, held->var);
	}
	sites_unlock();
	shim_guard_leave();
}

void sites_start(int has_file)
{
	uint64_t rate = config.sample_bytes;
	sites_has_file = has_file;
	/* Without block sizes there is nothing to weigh samples by. */
	if (counters_rec->flags & MT_FLAG_HEAP_UNSIZED)
		rate = 0;
	if (rate)
		callstack_init();
	__atomic_store_n(&sites_ready, rate != 0, __ATOMIC_RELAXED);
	sample_start(rate);
}

void sites_finish(unsigned record_state)
{
	struct mt_stacks_header *h;
	/* record.h: an image ends in one of the end states, never RUNNING */
	MT_ASSERT(record_state != MT_STATE_RUNNING && record_state <= MT_STATE_SIGNALED);
	if (!__atomic_load_n(&sites_hdr, __ATOMIC_ACQUIRE) || !shim_guard_enter())
		return;
	sites_lock();
	if (sites_want_file && (sites_own_events || record_state != MT_STATE_EXECED))
		sites_materialize();
	sites_want_file = 0;
	h = sites_hdr;
	sites_event(h);
	if (sites_missed) {
		modules_refresh(h, sites_reserve_modules);
		sites_missed = 0;
	}
	sites_put(&h->skipped_samples, __atomic_load_n(&sites_skips, __ATOMIC_RELAXED));
	sites_put(&h->lost_frees, __atomic_load_n(&sites_lost, __ATOMIC_RELAXED));
	sites_put(&h->end_mono_ns, sys_mono_ns_cold());
	__atomic_store_n(&h->state, MT_STACKS_FINISHED, __ATOMIC_RELEASE);
	sites_unlock();
	shim_guard_leave();
}

void sites_unfinish(void)
{
	struct mt_stacks_header *h = __atomic_load_n(&sites_hdr, __ATOMIC_ACQUIRE);
	if (!h)
		return;
	sites_put(&h->end_mono_ns, 0);
	__atomic_store_n(&h->state, MT_STACKS_RUNNING, __ATOMIC_RELEASE);
}

void sites_fork_prepare(void)
{
	__atomic_fetch_add(&sites_forking, 1, __ATOMIC_RELEASE);
	sites_lock();
}

void sites_fork_parent(void)
{
	sites_unlock();
	__atomic_fetch_sub(&sites_forking, 1, __ATOMIC_RELEASE);
}

/* Async-signal-safe: raw system calls and copies. */
void sites_fork_child(int has_file)
{
	struct mt_stacks_header *old = sites_hdr, *h;
	uint32_t nstk;
	__atomic_store_n(&sites_lock_word, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&sites_forking, 0, __ATOMIC_RELAXED); /* the forker alone is here */
	sample_fork_child();
	sites_changed = 0; /* the record's stacks_changes is 0 (store.c) */
	if (!old)
		return;
	if (sites_is_file) {
		/* The parent's file: copy what it holds into our memory and let
		 * go of it at once. */
		h = sites_map_anon();
		if (h) {
			memcpy(h, old, MT_STACKS_HEADER_BYTES);
			memcpy(mt_stacks_module(h, 0), mt_stacks_module(old, 0),
			       (size_t)old->module_count * MT_STACKS_MODULE_BYTES);
			memcpy(mt_stacks_stack(h, 0), mt_stacks_stack(old, 0),
			       (size_t)old->stack_count * MT_STACKS_STACK_BYTES);
			memcpy(mt_stacks_code(h, 0), mt_stacks_code(old, 0),
			       (size_t)old->code_count * MT_STACKS_CODE_BYTES);
		}
		sys_munmap(old, MT_STACKS_SIZE);
		sites_is_file = 0;
		sites_room_all();
		if (!h) {
			/* No memory: sampling stops; the samples' frees find no
			 * entry to update. */
			sites_hdr = NULL;
			sites_broken = 1;
			memset(sites_filter, 0, sizeof sites_filter);
			return;
		}
	} else {
		h = old; /* our own memory: fork copied it */
	}
	/* The child's own record: figures as inherited, activity from zero
	 * (as the record's calls start at zero). */
	h->pid = counters_rec->pid;
	h->gen = counters_rec->gen;
	h->flags = (h->flags & MT_STACKS_FLAG_MODULES_FULL) | MT_STACKS_FLAG_INHERITED;
	h->start_mono_ns = sys_mono_ns_cold();
	h->samples = h->sampled_frees = h->untracked_samples = h->untracked_bytes = 0;
	h->catchall_samples = h->skipped_samples = h->lost_frees = 0;
	h->fp_samples = h->backtrace_samples = h->sample_ns = h->module_refreshes = 0;
	h->py_samples = h->py_frames = h->py_truncated = 0;
	sites_skips = sites_lost = 0;
	nstk = h->stack_count;
	for (uint32_t i = 0; i < nstk; i++) {
		struct mt_stack *st = mt_stacks_stack(h, i);
		st->peak_bytes = st->live_bytes;
		st->peak_count = st->live_count;
		st->peak_var = st->live_var;
		st->total_bytes = st->total_count = 0;
	}
	for (uint32_t i = 0; i < sites_dirty_n; i++)
		sites_dirty_flag[sites_dirty[i]] = 0;
	sites_dirty_n = 0;
	h->peak_seq = 0;
	h->peak_heap = h->seen_heap_peak = counters_rec->heap_peak;
	h->peak_total = h->seen_total_peak = counters_rec->total_peak;
	h->map_samples = h->map_unmaps = h->map_cuts = 0;
	h->peak_mono_ns = h->start_mono_ns;
	h->end_mono_ns = 0;
	h->state = MT_STACKS_RUNNING;
	sites_hdr = h;
	sites_own_events = 0;
	sites_has_file = has_file;
	sites_want_file = config.dir[0] && has_file;
}

struct mt_stacks_header *sites_table(void)
{
	return __atomic_load_n(&sites_hdr, __ATOMIC_ACQUIRE);
}
