/* trace.h: injecting libmemtrace.so into the command's environment.
 *
 * memsup traces by default: the command runs with the shim appended to any
 * LD_PRELOAD it already has, MEMTRACE_DIR pointing at the records directory
 * (where every traced image keeps its record, see common/record.h; a
 * staging directory or <evidence>/records, staging.h) and
 * MEMTRACE_QUIET=1 (the shim's own stderr summary would mix with the
 * command's output).  Nothing here starts or reads anything but the
 * filesystem; the caller owns every returned allocation.
 *
 * Return convention: 0 or -errno.
 */
#ifndef MEMSUP_TRACE_H
#define MEMSUP_TRACE_H

#include <stddef.h>

#define TRACE_SHIM_NAME "libmemtrace.so"

/* Where libmemtrace.so is for the memsup binary at `self_exe` (NULL: read
 * /proc/self/exe): first the build tree (../preload/.libs/ beside
 * supervisor/memsup, also from a libtool .libs/ directory), then where the
 * configured pkglibdir lies from the configured bindir, from memsup's own
 * directory (an installed tree staged under DESTDIR or moved whole), then
 * `pkglibdir` (NULL: the configured MEMTRACE_PKGLIBDIR).  The first regular
 * readable file wins.  0 with the absolute path in out, or -ENOENT. */
int trace_find_shim(const char *self_exe, const char *pkglibdir, char *out, size_t cap);

/* The directory `make install` puts the shim in ($(pkglibdir)). */
const char *trace_pkglibdir(void);

/* The relative path from directory `from` to directory `to`, both absolute
 * ("/usr/local/bin", "/usr/local/lib/memtrace": "../lib/memtrace"; "." when
 * they are one).  Text only: no symbolic link is followed.  0, -EINVAL
 * (one is not absolute) or -ENAMETOOLONG. */
int trace_relative_dir(const char *from, const char *to, char *out, size_t cap);

/* Where trace_find_shim(NULL, NULL, ...) looks, in words for a message:
 * "beside itself in DIR/../preload/.libs and DIR/../lib/memtrace, then in
 * PKGLIBDIR". */
void trace_describe_search(char *out, size_t cap);

/* The LD_PRELOAD value for a command whose own value is `user` (NULL or
 * empty: none): the user's entries kept, in order, and the shim appended
 * unless it is already one of them.  0, -ENAMETOOLONG. */
int trace_preload_value(const char *user, const char *shim, char *out, size_t cap);

/* The command's environment with tracing set up: `envp` (NULL-terminated,
 * not modified) with LD_PRELOAD, MEMTRACE_DIR=records_dir, MEMTRACE_QUIET=1
 * and, when `follow`, MEMTRACE_FOLLOW=1 set over any inherited values, and
 * MEMTRACE_PARENT removed (the command is the root of its lineage).
 * Returns a malloc'd NULL-terminated array; *owned receives a malloc'd
 * block holding the new strings.  Free both (free(*owned), free(array)).
 * NULL on ENOMEM. */
char **trace_build_env(char *const *envp, const char *shim, const char *records_dir,
		       int follow, char **owned);

#endif /* MEMSUP_TRACE_H */
