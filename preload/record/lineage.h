/* lineage.h: where an image sits in the process tree.
 *
 * Hand-off: every exec variant and posix_spawn put
 * MEMTRACE_PARENT=<pid>.<gen>:<relation> into the envp they pass on (built
 * on the caller's stack: we may be in a vfork child, so no allocation).  The
 * new image trusts it only if it fits: relation EXEC needs pid == getpid(),
 * any other relation pid == getppid(); then it removes the variable from its
 * own environment, so a child started past our hooks (glibc's system() and
 * popen() clone internally) never sees a stale one.  Without a fitting
 * variable the newest record of getppid() in MEMTRACE_DIR is the parent, with
 * that record's spawn_relation or MT_REL_UNKNOWN; with none, MT_REL_ROOT.
 */
#ifndef MEMTRACE_LINEAGE_H
#define MEMTRACE_LINEAGE_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "base/config.h"
#include "record.h"

/* Parses "<pid>.<gen>:<relation>"; 0 or -EINVAL. */
int lineage_parse(const char *value, int32_t *pid, uint32_t *gen, uint32_t *relation);

/* Highest gen of a "<pid>.<gen>.mtr" file in dir; 0 or -errno (-ENOENT). */
int lineage_newest(const char *dir, pid_t pid, uint32_t *gen);

/* Constructor: fills relation/parent_* of r (and MT_FLAG_LINEAGE_GUESSED). */
void lineage_start(struct mt_record *r);

/* Strings an rebuilt envp points into; lives in the caller's frame. */
struct lineage_env {
	char parent[64];
	char preload[CONFIG_VAR_BYTES + PATH_MAX];
};

/* Slots the new envp needs (envp entries + additions + NULL), or 0 when it
 * is too large to copy on the stack (then pass envp on unchanged). */
size_t lineage_env_slots(char *const envp[]);
/* Builds in out[slots] the envp to pass on: envp without MEMTRACE_PARENT,
 * with the preload and MEMTRACE_* put back if MEMTRACE_FOLLOW says so, and
 * MEMTRACE_PARENT=<pid>.<gen>:<relation> if the result carries our preload
 * (an untraced child's environment is left as the program built it).
 * Returns out. */
char **lineage_env_build(char *const envp[], char **out, size_t slots, struct lineage_env *le,
			 int32_t pid, uint32_t gen, unsigned relation);

#endif /* MEMTRACE_LINEAGE_H */
