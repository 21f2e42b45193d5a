/* names.c: the names of record.h's enum values (see names.h).  Each table
 * is indexed by its enum, so a value can only have the name beside it, and
 * its size is checked against the enum's count. */
#include <stddef.h>

#include "names.h"

static const char *const names_calls[] = {
	[MT_CALL_MALLOC] = "malloc",
	[MT_CALL_CALLOC] = "calloc",
	[MT_CALL_REALLOC] = "realloc",
	[MT_CALL_REALLOCARRAY] = "reallocarray",
	[MT_CALL_FREE] = "free",
	[MT_CALL_POSIX_MEMALIGN] = "posix_memalign",
	[MT_CALL_ALIGNED_ALLOC] = "aligned_alloc",
	[MT_CALL_MEMALIGN] = "memalign",
	[MT_CALL_VALLOC] = "valloc",
	[MT_CALL_PVALLOC] = "pvalloc",
	[MT_CALL_MMAP] = "mmap",
	[MT_CALL_MUNMAP] = "munmap",
	[MT_CALL_MREMAP] = "mremap",
};

static const char *const names_relations[] = {
	[MT_REL_ROOT] = "root",
	[MT_REL_FORK] = "fork",
	[MT_REL_VFORK] = "vfork",
	[MT_REL_EXEC] = "exec",
	[MT_REL_SPAWN] = "spawn",
	[MT_REL_SYSTEM] = "system",
	[MT_REL_POPEN] = "popen",
	[MT_REL_UNKNOWN] = "unknown",
};

static const char *const names_states[] = {
	[MT_STATE_RUNNING] = "running",
	[MT_STATE_EXITED] = "exited",
	[MT_STATE_UNDERSCORE_EXIT] = "_exit",
	[MT_STATE_EXECED] = "execed",
	[MT_STATE_SIGNALED] = "signaled",
};

#define NAMES_COUNT(t) (sizeof(t) / sizeof((t)[0]))
_Static_assert(NAMES_COUNT(names_calls) == MT_CALL_COUNT, "a name for each call");
_Static_assert(NAMES_COUNT(names_relations) == MT_REL_COUNT, "a name for each relation");
_Static_assert(NAMES_COUNT(names_states) == MT_STATE_COUNT, "a name for each state");

const char *names_call(uint32_t call)
{
	return call < NAMES_COUNT(names_calls) ? names_calls[call] : NULL;
}

const char *names_relation(uint32_t relation)
{
	return relation < NAMES_COUNT(names_relations) ? names_relations[relation] : NULL;
}

const char *names_state(uint32_t state)
{
	return state < NAMES_COUNT(names_states) ? names_states[state] : NULL;
}
