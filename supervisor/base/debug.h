/* debug.h: MEMSUP_DEBUG, memsup's one switch for saying the decisions a
 * record keeps only the outcome of (memsup(1), ENVIRONMENT): a positive
 * number turns it on; anything else, or nothing, leaves it off. */
#ifndef MEMSUP_DEBUG_H
#define MEMSUP_DEBUG_H

#include <stdlib.h>

#define MEMSUP_DEBUG_ENV "MEMSUP_DEBUG"

/* 1 when MEMSUP_DEBUG is a positive decimal number, else 0; the
 * environment is read once (per file that asks). */
static inline int memsup_debug_on(void)
{
	static int level = -1;
	if (level < 0) {
		const char *v = getenv(MEMSUP_DEBUG_ENV);
		char *end = NULL;
		long n = v && *v ? strtol(v, &end, 10) : 0;
		level = end && *end == '\0' && n > 0;
	}
	return level;
}

#endif /* MEMSUP_DEBUG_H */
