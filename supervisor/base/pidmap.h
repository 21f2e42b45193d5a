/* pidmap.h: a table keyed by pid, the one every stage uses to find a
 * process again sample after sample (the tree's entries, the live records,
 * the poller's processes, the picture's bands).
 *
 * The caller chooses the entry: any struct whose FIRST member is the
 * `pid_t pid` key; pid 0 marks an empty slot, so 0 is never a key.  Open
 * addressing with linear probing over a power-of-two array kept at most
 * half full, a multiplicative hash of the pid.  Entries move when the
 * table grows: a pointer from pidmap_find() or pidmap_add() is valid until
 * the next pidmap_add(), pidmap_reserve() or pidmap_clear().  Iteration
 * (pidmap_slot()) is in slot order, which depends only on the keys added
 * and their order, never on addresses: the same run gives the same order.
 *
 * Not thread-safe.  Return convention: 0 or -ENOMEM; NULL for no entry.
 */
#ifndef MEMSUP_PIDMAP_H
#define MEMSUP_PIDMAP_H

#include <stddef.h>
#include <sys/types.h>

struct pidmap {
	unsigned char *slots;
	size_t esize;              /* bytes per entry (its pid_t first) */
	size_t cap;                /* slots: a power of two, or 0 */
	size_t used;               /* entries */
};

/* An empty table of entries of `esize` bytes; nothing is allocated yet. */
void pidmap_init(struct pidmap *m, size_t esize);
void pidmap_free(struct pidmap *m);

/* Room for `n` entries without growing: at least 256 slots and 2n. */
int pidmap_reserve(struct pidmap *m, size_t n);

/* The entry of `pid`, or NULL. */
void *pidmap_find(const struct pidmap *m, pid_t pid);

/* The entry of `pid` (> 0): the one there, or a new one, zeroed but for
 * its pid (*added, when not NULL, says which).  NULL when the table could
 * not grow, or for pid 0. */
void *pidmap_add(struct pidmap *m, pid_t pid, int *added);

/* Forget every entry; the slots stay allocated. */
void pidmap_clear(struct pidmap *m);

/* For iteration: the entry in slot i (i < m->cap), or NULL when empty. */
void *pidmap_slot(const struct pidmap *m, size_t i);

#endif /* MEMSUP_PIDMAP_H */
