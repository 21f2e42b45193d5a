/* alloc_script.c: a scripted sequence over the whole malloc family, with
 * the exact figures the shim must record.
 *
 * The program computes what the record must say itself, in the shim's
 * terms (malloc_usable_size of each live block), and prints it at the end
 * with write(2) from a stack buffer: no stdio, so nothing but the script
 * allocates.  Output: one "key=value" per line.
 */
#include <malloc.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static uint64_t cur, peak, requested, largest;
static uint64_t hist[64]; /* bucket b: 2^(b-1) < n <= 2^b; 0 holds 0 and 1 */
static uint64_t n_malloc, n_calloc, n_realloc, n_reallocarray, n_free, n_pm, n_aa, n_ma, n_va,
	n_pva;

static void grew(void *p, size_t req)
{
	unsigned b = 0;
	while (b < 63 && ((uint64_t)1 << b) < req)
		b++;
	hist[b]++;
	requested += req;
	if (req > largest)
		largest = req;
	if (p)
		cur += malloc_usable_size(p);
	if (cur > peak)
		peak = cur;
}

static void *my_malloc(size_t n)
{
	void *p = malloc(n);
	n_malloc++;
	grew(p, n);
	return p;
}

static void my_free(void *p)
{
	if (p)
		cur -= malloc_usable_size(p);
	n_free++;
	free(p);
}

static void *my_realloc(void *p, size_t n)
{
	uint64_t old = p ? malloc_usable_size(p) : 0;
	void *q = realloc(p, n);
	n_realloc++;
	cur -= old;
	grew(q, n);
	return q;
}

static void out(char *buf, size_t *len, const char *key, uint64_t v)
{
	/* signed, as the harness reads it: a figure past 2^63 (the failed
	 * requests' bytes) comes back as the same 64 bits */
	*len += (size_t)snprintf(buf + *len, 4096 - *len, "%s=%lld\n", key, (long long)v);
}

int main(void)
{
	char buf[4096];
	size_t len = 0;
	void *a, *b, *c, *d, *e, *f, *keep;
	void *al[6];
	uint64_t old;
	volatile size_t huge; /* not a constant: no warning about its size */

	a = my_malloc(100);
	b = my_malloc(5000);
	c = calloc(10, 100);
	n_calloc++;
	grew(c, 1000);
	a = my_realloc(a, 20000);
	my_free(b);
	d = my_malloc(1 << 20); /* mmapped chunk inside glibc: still heap */
	memset(d, 1, 4096);
	my_free(d);
	c = my_realloc(c, 10);  /* shrink */
	e = my_realloc(NULL, 300); /* realloc(NULL) == malloc */
	old = malloc_usable_size(e);
	e = reallocarray(e, 7, 100);
	n_reallocarray++;
	cur -= old;
	grew(e, 700);
	my_free(NULL);

	/* The edges: requests of 0 and 1 byte; requests no heap can meet,
	 * which fail and still count (request, the last bucket, the
	 * largest); a realloc that fails (the old block stays as it was);
	 * realloc(p, 0), which in glibc frees p and returns NULL. */
	huge = SIZE_MAX - 4096;
	f = my_malloc(0);
	my_free(f);
	f = my_malloc(1);
	my_free(f);
	if (my_malloc(huge) != NULL || my_malloc(((size_t)1 << 63) + 5) != NULL)
		return 1;
	f = my_malloc(48);
	if (realloc(f, huge) != NULL)
		return 1;
	n_realloc++;
	grew(NULL, huge);
	f = my_realloc(f, 200);
	old = malloc_usable_size(f);
	if (realloc(f, 0) != NULL)
		return 1;
	n_realloc++;
	cur -= old;
	grew(NULL, 0);

	/* Every aligned variant. */
	if (posix_memalign(&al[0], 64, 3000) != 0)
		return 1;
	n_pm++;
	grew(al[0], 3000);
	al[1] = aligned_alloc(256, 512);
	n_aa++;
	grew(al[1], 512);
	al[2] = memalign(4096, 10000);
	n_ma++;
	grew(al[2], 10000);
	al[3] = valloc(123);
	n_va++;
	grew(al[3], 123);
	al[4] = pvalloc(5000);
	n_pva++;
	grew(al[4], 5000);
	keep = my_malloc(777);
	for (int i = 0; i < 5; i++)
		my_free(al[i]);
	my_free(a);
	my_free(c);
	my_free(e);

	out(buf, &len, "heap_current", cur);
	out(buf, &len, "heap_peak", peak);
	out(buf, &len, "requested", requested);
	out(buf, &len, "largest", largest);
	out(buf, &len, "malloc", n_malloc);
	out(buf, &len, "calloc", n_calloc);
	out(buf, &len, "realloc", n_realloc);
	out(buf, &len, "reallocarray", n_reallocarray);
	out(buf, &len, "free", n_free);
	out(buf, &len, "posix_memalign", n_pm);
	out(buf, &len, "aligned_alloc", n_aa);
	out(buf, &len, "memalign", n_ma);
	out(buf, &len, "valloc", n_va);
	out(buf, &len, "pvalloc", n_pva);
	out(buf, &len, "keep", (uint64_t)(uintptr_t)keep != 0);
	for (unsigned i = 0; i < 64; i++) {
		char key[16];
		snprintf(key, sizeof key, "hist%u", i);
		if (hist[i])
			out(buf, &len, key, hist[i]);
	}
	if (write(1, buf, len) != (ssize_t)len)
		return 1;
	return 0;
}
