/* trace.c: finding libmemtrace.so and preparing the traced environment
 * (see trace.h).  The shim is looked up next to the running binary first so
 * that a build tree (in-tree or VPATH: the binary and the .so are both in
 * the build directory) traces with the shim it was built with, never with an
 * older installed one. */
#include "collect/trace.h"
#include "contain/spawn.h"
#include "record.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* MEMTRACE_PKGLIBDIR and MEMTRACE_BINDIR, as configured: a header make
 * writes from the Makefile (Makefile.am says why not -D flags) */
#include "base/shimdir.h"

const char *trace_pkglibdir(void)
{
	return MEMTRACE_PKGLIBDIR;
}

int trace_relative_dir(const char *from, const char *to, char *out, size_t cap)
{
	if (from[0] != '/' || to[0] != '/')
		return -EINVAL;
	/* the common leading directories, whole components only */
	size_t common = 0;
	for (size_t i = 0;; i++) {
		int fe = from[i] == '/' || !from[i], te = to[i] == '/' || !to[i];
		if (fe && te)
			common = i;
		if (!from[i] || !to[i] || from[i] != to[i])
			break;
	}
	size_t len = 0;
	out[0] = '\0';
	for (const char *p = from + common; *p;) {
		p += strspn(p, "/");
		if (!*p)
			break;
		int n = snprintf(out + len, cap - len, "%s..", len ? "/" : "");
		if (n < 0 || (size_t)n >= cap - len)
			return -ENAMETOOLONG;
		len += (size_t)n;
		p += strcspn(p, "/");
	}
	const char *rest = to + common;
	rest += strspn(rest, "/");
	if (*rest) {
		int n = snprintf(out + len, cap - len, "%s%s", len ? "/" : "", rest);
		if (n < 0 || (size_t)n >= cap - len)
			return -ENAMETOOLONG;
		len += (size_t)n;
	}
	if (!len)
		snprintf(out, cap, ".");
	return 0;
}

static int usable(const char *path)
{
	struct stat st;
	return stat(path, &st) == 0 && S_ISREG(st.st_mode) && access(path, R_OK) == 0;
}

int trace_find_shim(const char *self_exe, const char *pkglibdir, char *out, size_t cap)
{
	char exe[PATH_MAX], path[PATH_MAX + 64];
	if (!self_exe) {
		ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
		if (n > 0) {
			exe[n] = '\0';
			self_exe = exe;
		}
	}
	if (self_exe) {
		char dir[PATH_MAX];
		snprintf(dir, sizeof dir, "%s", self_exe);
		char *slash = strrchr(dir, '/');
		if (slash) {
			*slash = '\0';
			/* supervisor/memsup, or supervisor/.libs/memsup when a
			 * libtool wrapper ran it; then an installed memsup's own
			 * tree: the shim where
			 * pkglibdir is from bindir, so that a tree staged with
			 * DESTDIR, or moved whole to another prefix, traces
			 * with its own shim */
			char inst[PATH_MAX + 64];
			const char *installed = NULL;
			if (trace_relative_dir(MEMTRACE_BINDIR, MEMTRACE_PKGLIBDIR, inst + 1,
					       sizeof inst - 64) == 0) {
				inst[0] = '/';
				strcat(inst, "/" TRACE_SHIM_NAME);
				installed = inst;
			}
			const char *rel[] = {
				"/../preload/.libs/" TRACE_SHIM_NAME,
				"/../../preload/.libs/" TRACE_SHIM_NAME,
				installed,
			};
			for (size_t i = 0; i < sizeof rel / sizeof rel[0]; i++) {
				if (!rel[i])
					continue;
				snprintf(path, sizeof path, "%s%s", dir, rel[i]);
				char real[PATH_MAX];
				if (usable(path) && realpath(path, real)) {
					if (strlen(real) >= cap)
						return -ENAMETOOLONG;
					strcpy(out, real);
					return 0;
				}
			}
		}
	}
	snprintf(path, sizeof path, "%s/%s", pkglibdir ? pkglibdir : trace_pkglibdir(),
		 TRACE_SHIM_NAME);
	if (usable(path)) {
		if (strlen(path) >= cap)
			return -ENAMETOOLONG;
		strcpy(out, path);
		return 0;
	}
	return -ENOENT;
}

void trace_describe_search(char *out, size_t cap)
{
	char exe[PATH_MAX], rel[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
	if (n <= 0) {
		snprintf(out, cap, "in %s", trace_pkglibdir());
		return;
	}
	exe[n] = '\0';
	char *slash = strrchr(exe, '/');
	if (slash)
		*slash = '\0';
	if (trace_relative_dir(MEMTRACE_BINDIR, MEMTRACE_PKGLIBDIR, rel, sizeof rel) < 0)
		snprintf(rel, sizeof rel, "?");
	snprintf(out, cap, "beside itself in %s/../preload/.libs and %s/%s, then in %s", exe, exe,
		 rel, trace_pkglibdir());
}

/* Is `shim` one of the entries of an LD_PRELOAD value?  ld.so splits on
 * spaces and colons. */
static int has_entry(const char *list, const char *shim)
{
	size_t sl = strlen(shim);
	for (const char *p = list; *p;) {
		size_t n = strcspn(p, " :");
		if (n == sl && memcmp(p, shim, n) == 0)
			return 1;
		p += n;
		p += strspn(p, " :");
	}
	return 0;
}

int trace_preload_value(const char *user, const char *shim, char *out, size_t cap)
{
	int n;
	if (!user || !user[strspn(user, " :")])
		n = snprintf(out, cap, "%s", shim);
	else if (has_entry(user, shim))
		n = snprintf(out, cap, "%s", user);
	else
		/* appended: the user's preloads come first, so the user's own
		 * malloc replacement (if any) is what the shim wraps */
		n = snprintf(out, cap, "%s:%s", user, shim);
	return (n < 0 || (size_t)n >= cap) ? -ENAMETOOLONG : 0;
}

char **trace_build_env(char *const *envp, const char *shim, const char *records_dir,
		       int follow, char **owned)
{
	const char *user = spawn_env_get(envp, "LD_PRELOAD");
	size_t cap = (user ? strlen(user) : 0) + strlen(shim) + strlen(records_dir) + 256;
	char *buf = malloc(cap), *p = buf;
	*owned = NULL;
	if (!buf)
		return NULL;
	char *ov[4];
	size_t n = 0;
	ov[n++] = p;
	p += sprintf(p, "LD_PRELOAD=");
	if (trace_preload_value(user, shim, p, cap - (size_t)(p - buf)) < 0) {
		free(buf);
		return NULL;
	}
	p += strlen(p) + 1;
	ov[n++] = p;
	p += sprintf(p, "%s=%s", MT_ENV_DIR, records_dir) + 1;
	ov[n++] = p;
	p += sprintf(p, "%s=1", MT_ENV_QUIET) + 1;
	if (follow) {
		ov[n++] = p;
		p += sprintf(p, "%s=1", MT_ENV_FOLLOW) + 1;
	}
	/* MEMTRACE_PARENT is a hand-off between traced images: one left in
	 * memsup's own environment (memsup run by a traced process) names a
	 * record outside this run, so the command starts a new lineage. */
	size_t nb = 0;
	while (envp[nb])
		nb++;
	char **base = calloc(nb + 1, sizeof *base);
	if (!base) {
		free(buf);
		return NULL;
	}
	size_t k = 0, pl = strlen(MT_ENV_PARENT);
	for (size_t i = 0; i < nb; i++)
		if (strncmp(envp[i], MT_ENV_PARENT, pl) != 0 || envp[i][pl] != '=')
			base[k++] = envp[i];
	char **env = spawn_build_env(base, ov, n);
	free(base);
	if (!env) {
		free(buf);
		return NULL;
	}
	*owned = buf;
	return env;
}
