/* pidmap.c: the pid-keyed open-addressing table (see pidmap.h). */
#include "base/pidmap.h"
#include "invariant.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define PIDMAP_MIN_SLOTS 256u

/* The key of the entry at p: the first bytes of the caller's struct, read
 * as bytes (the table does not know the caller's type). */
static pid_t key_of(const unsigned char *p)
{
	pid_t pid;
	memcpy(&pid, p, sizeof pid);
	return pid;
}

/* Fibonacci hashing: pids are dense and sequential, the multiplier spreads
 * neighbours over the table. */
static size_t home_of(pid_t pid, size_t cap)
{
	return ((uint32_t)pid * 2654435761u) & (cap - 1);
}

/* The slot holding pid in slots[0..cap), or the empty one where it goes. */
static size_t probe(const unsigned char *slots, size_t cap, size_t esize, pid_t pid)
{
	/* the mask and the end of the probe rely on both */
	MT_ASSERT_MSG(cap > 0 && (cap & (cap - 1)) == 0, "a power of two");
	size_t i = home_of(pid, cap);
	for (pid_t k; (k = key_of(slots + i * esize)) != 0 && k != pid; i = (i + 1) & (cap - 1))
		;
	return i;
}

void pidmap_init(struct pidmap *m, size_t esize)
{
	MT_ASSERT_MSG(esize >= sizeof(pid_t), "an entry starts with its pid");
	m->slots = NULL;
	m->esize = esize;
	m->cap = m->used = 0;
}

void pidmap_free(struct pidmap *m)
{
	free(m->slots);
	pidmap_init(m, m->esize);
}

int pidmap_reserve(struct pidmap *m, size_t n)
{
	size_t cap = m->cap ? m->cap : PIDMAP_MIN_SLOTS;
	while (cap < n * 2)
		cap *= 2;
	if (cap == m->cap)
		return 0;
	unsigned char *slots = calloc(cap, m->esize);
	if (!slots)
		return -ENOMEM;
	/* re-placed in slot order: the new layout depends on the keys alone */
	for (size_t i = 0; i < m->cap; i++) {
		const unsigned char *e = m->slots + i * m->esize;
		pid_t pid = key_of(e);
		if (pid)
			memcpy(slots + probe(slots, cap, m->esize, pid) * m->esize, e, m->esize);
	}
	free(m->slots);
	m->slots = slots;
	m->cap = cap;
	MT_ASSERT_MSG(m->used * 2 <= m->cap, "at most half full");
	return 0;
}

void *pidmap_find(const struct pidmap *m, pid_t pid)
{
	if (!m->cap || !pid)
		return NULL;
	MT_ASSERT_MSG(m->used < m->cap, "an empty slot ends every probe");
	unsigned char *e = m->slots + probe(m->slots, m->cap, m->esize, pid) * m->esize;
	return key_of(e) ? e : NULL;
}

void *pidmap_add(struct pidmap *m, pid_t pid, int *added)
{
	if (added)
		*added = 0;
	if (!pid)
		return NULL;
	void *found = pidmap_find(m, pid);
	if (found)
		return found;
	if ((m->used + 1) * 2 > m->cap && pidmap_reserve(m, m->used + 1) < 0)
		return NULL;
	unsigned char *e = m->slots + probe(m->slots, m->cap, m->esize, pid) * m->esize;
	memset(e, 0, m->esize);
	memcpy(e, &pid, sizeof pid);
	m->used++;
	MT_ASSERT_MSG(m->used * 2 <= m->cap, "at most half full");
	if (added)
		*added = 1;
	return e;
}

void pidmap_clear(struct pidmap *m)
{
	if (m->cap)
		memset(m->slots, 0, m->cap * m->esize);
	m->used = 0;
}

void *pidmap_slot(const struct pidmap *m, size_t i)
{
	unsigned char *e = i < m->cap ? m->slots + i * m->esize : NULL;
	return e && key_of(e) ? e : NULL;
}
