/* grow.h: room for `need` items in an array that doubles as it fills, the
 * one way the supervisor's stages grow their tables (the poller's members,
 * the picture's lanes and points, the flame's images).
 *
 * *p (NULL at first) has room for *cap items of `size` bytes; afterwards
 * for at least `need`.  0, or -ENOMEM with *p and *cap as they were.
 */
#ifndef MEMSUP_GROW_H
#define MEMSUP_GROW_H

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>

#include "invariant.h"

static inline int grow_array(void **p, size_t *cap, size_t need, size_t size)
{
	size_t c = *cap ? *cap : 16;
	void *q;
	if (need <= *cap)
		return 0;
	while (c < need) {
		if (c > SIZE_MAX / 2)
			return -ENOMEM;
		c *= 2;
	}
	if (size && c > SIZE_MAX / size)
		return -ENOMEM;
	q = realloc(*p, c * size);
	if (!q)
		return -ENOMEM;
	*p = q;
	*cap = c;
	MT_ASSERT_MSG(*cap >= need, "room for what was asked");
	return 0;
}

#endif /* MEMSUP_GROW_H */
