/* test_shim_harness.c: see test_shim_harness.h. */
#include <criterion/criterion.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "collect/recordfile.h"
#include "test_shim_harness.h"

extern char **environ;

static int shim_is_ours(const char *e)
{
	return !strncmp(e, "LD_PRELOAD=", 11) || !strncmp(e, "MEMTRACE_", 9);
}

static char *shim_slurp(const char *path)
{
	FILE *f = fopen(path, "rb");
	char *buf;
	long n;
	if (!f)
		return strdup("");
	fseek(f, 0, SEEK_END);
	n = ftell(f);
	fseek(f, 0, SEEK_SET);
	buf = malloc((size_t)n + 1);
	cr_assert_not_null(buf);
	n = (long)fread(buf, 1, (size_t)n, f);
	buf[n] = '\0';
	fclose(f);
	return buf;
}

void shim_reload(struct shim_run *r)
{
	char path[PATH_MAX + 8];
	free(r->out);
	free(r->err);
	snprintf(path, sizeof path, "%s/out", r->base);
	r->out = shim_slurp(path);
	snprintf(path, sizeof path, "%s/err", r->base);
	r->err = shim_slurp(path);
}

void shim_run(struct shim_run *r, const char *const *argv, const char *const *env,
	      unsigned flags)
{
	const char *so = getenv("MEMTRACE_SO"), *progs = getenv("MT_PROGS");
	char prog[PATH_MAX * 2], path[PATH_MAX + 8], preload[PATH_MAX + 16], dirvar[PATH_MAX + 32];
	size_t n = 0, ne = 0;
	char **envp;

	memset(r, 0, sizeof *r);
	cr_assert_not_null(so, "MEMTRACE_SO is not set");
	cr_assert_not_null(progs, "MT_PROGS is not set");
	snprintf(r->base, sizeof r->base, "%s/mtshim.XXXXXX",
		 getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
	cr_assert_not_null(mkdtemp(r->base));
	snprintf(r->dir, sizeof r->dir, "%s/rec", r->base);
	cr_assert_eq(mkdir(r->dir, 0700), 0);
	if (strchr(argv[0], '/'))
		snprintf(prog, sizeof prog, "%s", argv[0]);
	else
		snprintf(prog, sizeof prog, "%s/%s", progs, argv[0]);

	while (environ[n])
		n++;
	while (env && env[ne])
		ne++;
	envp = calloc(n + ne + 3, sizeof *envp);
	cr_assert_not_null(envp);
	n = 0;
	for (char **e = environ; *e; e++)
		if (!shim_is_ours(*e))
			envp[n++] = *e;
	snprintf(preload, sizeof preload, "LD_PRELOAD=%s", so);
	if (flags & SHIM_RELATIVE_DIR)
		snprintf(dirvar, sizeof dirvar, "MEMTRACE_DIR=rec");
	else
		snprintf(dirvar, sizeof dirvar, "MEMTRACE_DIR=%s", r->dir);
	if (!(flags & SHIM_NO_PRELOAD))
		envp[n++] = preload;
	if (!(flags & SHIM_NO_DIR))
		envp[n++] = dirvar;
	for (size_t i = 0; i < ne; i++)
		envp[n++] = (char *)env[i];
	envp[n] = NULL;

	fflush(NULL);
	r->pid = fork();
	cr_assert_neq(r->pid, -1);
	if (r->pid == 0) {
		int fd;
		snprintf(path, sizeof path, "%s/out", r->base);
		fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
		dup2(fd, 1);
		snprintf(path, sizeof path, "%s/err", r->base);
		fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
		dup2(fd, 2);
		fd = open("/dev/null", O_RDONLY);
		dup2(fd, 0);
		if ((flags & SHIM_RELATIVE_DIR) && chdir(r->base) != 0)
			_exit(126);
		execve(prog, (char *const *)argv, envp);
		_exit(127);
	}
	free(envp);
	if (!(flags & SHIM_ASYNC))
		shim_wait(r);
}

void shim_wait(struct shim_run *r)
{
	cr_assert_eq(waitpid(r->pid, &r->status, 0), r->pid);
	shim_reload(r);
}

static void shim_rmtree(const char *path)
{
	DIR *d = opendir(path);
	struct dirent *e;
	char sub[PATH_MAX + 256];
	if (!d) {
		unlink(path);
		return;
	}
	while ((e = readdir(d)) != NULL) {
		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		snprintf(sub, sizeof sub, "%s/%s", path, e->d_name);
		shim_rmtree(sub);
	}
	closedir(d);
	rmdir(path);
}

void shim_done(struct shim_run *r)
{
	if (!getenv("MT_KEEP"))
		shim_rmtree(r->base);
	free(r->out);
	free(r->err);
	r->out = r->err = NULL;
}

void shim_record(const struct shim_run *r, pid_t pid, uint32_t gen, struct mt_record *out)
{
	char path[PATH_MAX + 64];
	int rc;
	snprintf(path, sizeof path, "%s/%d.%u.mtr", r->dir, (int)pid, gen);
	rc = recordfile_read(path, out);
	cr_assert_eq(rc, 0, "record %s: %s", path, recordfile_strerror(rc));
}

size_t shim_records(const struct shim_run *r, struct mt_record **out)
{
	struct recordfile_entry *ents;
	size_t n;
	cr_assert_eq(recordfile_list(r->dir, &ents, &n), 0);
	*out = calloc(n ? n : 1, sizeof **out);
	cr_assert_not_null(*out);
	for (size_t i = 0; i < n; i++)
		shim_record(r, ents[i].pid, ents[i].gen, &(*out)[i]);
	free(ents);
	return n;
}

long long shim_value_or(const char *text, const char *key, long long dflt)
{
	size_t k = strlen(key);
	for (const char *p = text; (p = strstr(p, key)) != NULL; p += k) {
		if ((p == text || p[-1] == '\n' || p[-1] == ' ') && p[k] == '=')
			return strtoll(p + k + 1, NULL, 10);
	}
	return dflt;
}

uint64_t shim_value(const char *text, const char *key)
{
	long long v = shim_value_or(text, key, -1);
	cr_assert_neq(v, -1, "no %s= in output:\n%s", key, text);
	return (uint64_t)v;
}

const char *shim_argv(const struct mt_record *rec, unsigned i)
{
	uint32_t off = 0;
	for (unsigned k = 0; off < rec->argv_bytes; k++) {
		if (k == i)
			return rec->argv + off;
		off += (uint32_t)strlen(rec->argv + off) + 1;
	}
	return NULL;
}
