/* known_allocs.c: a program whose allocations are known exactly, to check what
 * memory tools report against the ground truth.  Used by bench/correctness.py.
 *
 * Phase A (heap): malloc, calloc, posix_memalign, aligned_alloc, then a realloc
 * that grows the malloc block, all live at once; then everything but the
 * calloc block is freed.
 * Phase B (mappings, the calloc block still live): two anonymous mmaps, a
 * munmap of the first, a partial munmap of half the second, a munmap of the
 * rest.  Then a region mapped with the raw mmap system call (so no LD_PRELOAD
 * tool sees it mapped) is unmapped through libc's munmap, which every tool
 * does see: glibc 2.36's memusage subtracts it from its heap counter and wraps.
 * Phase C: the calloc block is freed; the program ends with nothing live.
 *
 * The heap+mappings peak happens in phase B, above both the heap-only peak and
 * the mapping-only peak, so a tool that adds two peaks gets a wrong answer.
 *
 * The ground truth is printed as one JSON line on stdout at the end, built with
 * snprintf on the stack and written with write(2): no stdio buffer is ever
 * allocated, so the program's own calls are exactly the ones listed.  The
 * dynamic loader and libc start-up make no malloc calls before main on glibc
 * 2.36 (checked by running this under the tools: any they report is shown).
 */
#include <malloc.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#define KA_MIB (1024u * 1024u)

struct ka_truth {
	uint64_t req_live, req_peak, req_total;
	uint64_t use_live, use_peak;
	uint64_t map_live, map_peak;
	uint64_t total_use_peak;  /* usable heap + mappings, peak together */
	uint64_t total_req_peak;  /* requested heap + mappings, peak together */
	unsigned n_malloc, n_calloc, n_realloc, n_free, n_posix_memalign,
		n_aligned_alloc, n_mmap, n_munmap;
};

static void ka_update_peaks(struct ka_truth *t)
{
	if (t->req_live > t->req_peak)
		t->req_peak = t->req_live;
	if (t->use_live > t->use_peak)
		t->use_peak = t->use_live;
	if (t->map_live > t->map_peak)
		t->map_peak = t->map_live;
	if (t->use_live + t->map_live > t->total_use_peak)
		t->total_use_peak = t->use_live + t->map_live;
	if (t->req_live + t->map_live > t->total_req_peak)
		t->total_req_peak = t->req_live + t->map_live;
}

static void ka_alloc(struct ka_truth *t, void *p, size_t req)
{
	t->req_live += req;
	t->req_total += req;
	t->use_live += malloc_usable_size(p);
	ka_update_peaks(t);
}

static void ka_release(struct ka_truth *t, void *p, size_t req)
{
	t->req_live -= req;
	t->use_live -= malloc_usable_size(p);
}

static void ka_touch(void *p, size_t n)
{
	/* Write every page so the memory is really used (RSS-based tools see it). */
	for (size_t i = 0; i < n; i += 4096)
		((volatile unsigned char *)p)[i] = 1;
}

static void ka_die(const char *what)
{
	perror(what);
	_exit(1);
}

int main(void)
{
	struct ka_truth t;
	size_t sz_malloc = 1000000, sz_calloc_n = 500, sz_calloc_each = 1000,
	       sz_pm = 2000000, sz_aa = 3 * KA_MIB, sz_grow = 4000000;
	size_t m1 = 1 * KA_MIB, m2 = 8 * KA_MIB, unseen = 8 * KA_MIB;
	void *a, *b, *c = NULL, *d, *a2;
	unsigned char *map1, *map2, *raw;
	char out[1536];
	int len;

	memset(&t, 0, sizeof t);

	/* ---- phase A: the heap ---- */
	a = malloc(sz_malloc);
	t.n_malloc++;
	if (!a)
		ka_die("malloc");
	ka_alloc(&t, a, sz_malloc);
	b = calloc(sz_calloc_n, sz_calloc_each);
	t.n_calloc++;
	if (!b)
		ka_die("calloc");
	ka_alloc(&t, b, sz_calloc_n * sz_calloc_each);
	t.n_posix_memalign++;
	if (posix_memalign(&c, 64, sz_pm) != 0)
		ka_die("posix_memalign");
	ka_alloc(&t, c, sz_pm);
	d = aligned_alloc(4096, sz_aa);
	t.n_aligned_alloc++;
	if (!d)
		ka_die("aligned_alloc");
	ka_alloc(&t, d, sz_aa);
	ka_touch(a, sz_malloc);
	ka_touch(c, sz_pm);
	ka_touch(d, sz_aa);
	/* realloc: the old block leaves and the new one arrives at once. */
	ka_release(&t, a, sz_malloc);
	a2 = realloc(a, sz_grow);
	t.n_realloc++;
	if (!a2)
		ka_die("realloc");
	ka_alloc(&t, a2, sz_grow);
	ka_touch(a2, sz_grow);
	ka_release(&t, a2, sz_grow);
	free(a2);
	ka_release(&t, c, sz_pm);
	free(c);
	ka_release(&t, d, sz_aa);
	free(d);
	t.n_free += 3;

	/* ---- phase B: mappings, with the calloc block still live ---- */
	map1 = mmap(NULL, m1, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	t.n_mmap++;
	if (map1 == MAP_FAILED)
		ka_die("mmap");
	t.map_live += m1;
	ka_update_peaks(&t);
	map2 = mmap(NULL, m2, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	t.n_mmap++;
	if (map2 == MAP_FAILED)
		ka_die("mmap");
	t.map_live += m2;
	ka_update_peaks(&t);
	ka_touch(map1, m1);
	ka_touch(map2, m2);
	if (munmap(map1, m1) != 0)
		ka_die("munmap");
	t.n_munmap++;
	t.map_live -= m1;
	/* partial: the first half of map2 goes, the second half stays */
	if (munmap(map2, m2 / 2) != 0)
		ka_die("munmap");
	t.n_munmap++;
	t.map_live -= m2 / 2;
	if (munmap(map2 + m2 / 2, m2 / 2) != 0)
		ka_die("munmap");
	t.n_munmap++;
	t.map_live -= m2 / 2;
	/* Mapped behind every tool's back, unmapped in front of it.  The truth
	 * counts neither: the program made no mmap call that a tool could see,
	 * so the right answer is to ignore the unmapping of unknown memory. */
	raw = (unsigned char *)syscall(SYS_mmap, NULL, unseen, PROT_READ | PROT_WRITE,
				       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (raw == MAP_FAILED)
		ka_die("raw mmap");
	if (munmap(raw, unseen) != 0)
		ka_die("munmap");
	t.n_munmap++;

	/* ---- phase C ---- */
	ka_release(&t, b, sz_calloc_n * sz_calloc_each);
	free(b);
	t.n_free++;

	len = snprintf(out, sizeof out,
		       "{\"heap_requested_peak\": %llu, \"heap_usable_peak\": %llu, "
		       "\"heap_requested_total\": %llu, \"heap_end\": %llu, "
		       "\"map_anon_peak\": %llu, \"map_end\": %llu, "
		       "\"total_usable_peak\": %llu, \"total_requested_peak\": %llu, "
		       "\"unseen_munmap\": %llu, "
		       "\"calls\": {\"malloc\": %u, \"calloc\": %u, \"realloc\": %u, "
		       "\"free\": %u, \"posix_memalign\": %u, \"aligned_alloc\": %u, "
		       "\"mmap\": %u, \"munmap\": %u}}\n",
		       (unsigned long long)t.req_peak, (unsigned long long)t.use_peak,
		       (unsigned long long)t.req_total, (unsigned long long)t.req_live,
		       (unsigned long long)t.map_peak, (unsigned long long)t.map_live,
		       (unsigned long long)t.total_use_peak,
		       (unsigned long long)t.total_req_peak,
		       (unsigned long long)unseen,
		       t.n_malloc, t.n_calloc, t.n_realloc, t.n_free,
		       t.n_posix_memalign, t.n_aligned_alloc, t.n_mmap, t.n_munmap);
	if (len > 0 && write(STDOUT_FILENO, out, (size_t)len) != len)
		return 1;
	return 0;
}
