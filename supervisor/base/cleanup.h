/* cleanup.h: variables that free or close what they hold when they go out
 * of scope (the cleanup attribute of GCC and Clang), for functions whose
 * early returns would each repeat the same free() and close().  A value
 * handed on to an owner elsewhere is taken out first (p = NULL, fd = -1).
 */
#ifndef MEMSUP_CLEANUP_H
#define MEMSUP_CLEANUP_H

#include <stdlib.h>
#include <unistd.h>

static inline void cleanup_free(void *p)
{
	free(*(void **)p);
}

static inline void cleanup_close(const int *fd)
{
	if (*fd >= 0)
		close(*fd);
}

#define CLEANUP_FREE __attribute__((cleanup(cleanup_free)))
#define CLEANUP_CLOSE __attribute__((cleanup(cleanup_close)))

#endif /* MEMSUP_CLEANUP_H */
