/* test_memsup_util.h: helpers for the end-to-end memsup tests (header only,
 * included by each tests/e2e/test_memsup_*.c, and by the unit tests that
 * want its temporary directories and files).
 *
 * memsup_run() runs the built memsup ($MEMSUP) in a fresh temporary
 * directory, evidence in TMP/ev unless the caller passes its own -o, stdout
 * and stderr captured to files.  rec_load() parses resources.json with
 * python3's json module (a real JSON parser, not ours) which also checks that
 * every key of measure_command's record (scripts/memsup.py) is there, and
 * keeps "key<TAB>json" lines for rec_num()/rec_str(). */
#ifndef TEST_MEMSUP_UTIL_H
#define TEST_MEMSUP_UTIL_H

#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "test_py.h"
#include "test_tmp.h"

struct sup_run {
	char tmp[256];        /* fresh directory, cwd of memsup */
	char dir[PATH_MAX];   /* evidence directory */
	int status;           /* memsup's exit status, or 1000+signal */
	pid_t pid;
	char out[65536];      /* memsup's stdout */
	char err[16384];      /* memsup's stderr */
	char rec[65536];      /* "key\tjson\n" lines of resources.json */
};

static inline const char *env_or_skip(const char *name)
{
	const char *v = getenv(name);
	if (!v || !*v)
		cr_skip_test("%s is not set (run through make check)", name);
	return v;
}

static inline const char *prog(const char *name)
{
	static char path[8][PATH_MAX];
	static int slot;
	char *p = path[slot++ % 8];
	snprintf(p, PATH_MAX, "%s/%s", env_or_skip("MT_PROGS"), name);
	return p;
}

static inline void tmp_make(struct sup_run *r)
{
	snprintf(r->tmp, sizeof r->tmp, "/tmp/memsup-test-XXXXXX");
	cr_assert_not_null(mkdtemp(r->tmp));
	snprintf(r->dir, sizeof r->dir, "%s/ev", r->tmp);
	tmp_adopt(r->tmp);
}

static inline void slurp(const char *path, char *buf, size_t cap)
{
	buf[0] = '\0';
	int fd = open(path, O_RDONLY);
	if (fd < 0)
		return;
	size_t got = 0;
	ssize_t n;
	while (got + 1 < cap && (n = read(fd, buf + got, cap - 1 - got)) > 0)
		got += (size_t)n;
	buf[got] = '\0';
	close(fd);
}

/* Start memsup with args (NULL-terminated, without argv[0]); with_out adds
 * "-o TMP/ev" first.  Returns at once; memsup_wait() collects it. */
/* Start any argv (execvp: memsup itself, or a wrapper such as unshare(1)
 * that ends in it) in TMP, its stdout and stderr to TMP/memsup.stdout and
 * TMP/memsup.stderr; `hook` (may be NULL) runs in the child just before the
 * exec (a resource limit, a uid). */
typedef void (*sup_child_hook)(const struct sup_run *r);

static inline void sup_spawn(struct sup_run *r, sup_child_hook hook, const char *const *argv)
{
	char so[PATH_MAX + 16], se[PATH_MAX + 16];
	snprintf(so, sizeof so, "%s/memsup.stdout", r->tmp);
	snprintf(se, sizeof se, "%s/memsup.stderr", r->tmp);
	r->pid = fork();
	cr_assert_geq(r->pid, 0);
	if (r->pid == 0) {
		/* 0666: a hook may drop to another uid that must still write */
		int o = open(so, O_WRONLY | O_CREAT | O_TRUNC, 0666);
		int e = open(se, O_WRONLY | O_CREAT | O_TRUNC, 0666);
		if (o < 0 || e < 0 || chdir(r->tmp) < 0)
			_exit(99);
		dup2(o, 1);
		dup2(e, 2);
		if (hook)
			hook(r);
		execvp(argv[0], (char *const *)argv);
		_exit(98);
	}
}

static inline void memsup_start(struct sup_run *r, int with_out, const char *const *args)
{
	const char *argv[64];
	int n = 0;
	argv[n++] = env_or_skip("MEMSUP");
	if (with_out) {
		argv[n++] = "-o";
		argv[n++] = r->dir;
	}
	for (int i = 0; args[i] && n < 62; i++)
		argv[n++] = args[i];
	argv[n] = NULL;
	sup_spawn(r, NULL, argv);
}

/* TMP/name (r->tmp): one of four static buffers in turn. */
static inline const char *sup_tmp_path(const struct sup_run *r, const char *name)
{
	static char path[4][PATH_MAX];
	static int slot;
	char *p = path[slot++ % 4];
	snprintf(p, PATH_MAX, "%s/%s", r->tmp, name);
	return p;
}

/* The run's stdout.log. */
static inline const char *log_path(const struct sup_run *r)
{
	static char path[PATH_MAX + 16];
	snprintf(path, sizeof path, "%s/stdout.log", r->dir);
	return path;
}

/* memsup -o TMP/ev ARGS with its stdout on a pipe whose read end is
 * returned; stderr to TMP/memsup.stderr; memsup_wait() collects it. */
static inline int start_piped(struct sup_run *r, const char *const *args)
{
	int p[2];
	cr_assert_eq(pipe2(p, O_CLOEXEC), 0);
	const char *argv[32];
	int n = 0;
	argv[n++] = env_or_skip("MEMSUP");
	argv[n++] = "-o";
	argv[n++] = r->dir;
	for (int i = 0; args[i] && n < 31; i++)
		argv[n++] = args[i];
	argv[n] = NULL;
	r->pid = fork();
	cr_assert_geq(r->pid, 0);
	if (r->pid == 0) {
		int e = open(sup_tmp_path(r, "memsup.stderr"), O_WRONLY | O_CREAT | O_TRUNC, 0644);
		if (e < 0 || dup2(p[1], 1) < 0 || dup2(e, 2) < 0 || chdir(r->tmp) < 0)
			_exit(99);
		execv(argv[0], (char *const *)argv);
		_exit(98);
	}
	close(p[1]);
	return p[0];
}

static inline int memsup_wait(struct sup_run *r)
{
	int st;
	while (waitpid(r->pid, &st, 0) < 0)
		cr_assert_eq(errno, EINTR);
	r->status = WIFEXITED(st) ? WEXITSTATUS(st) : 1000 + WTERMSIG(st);
	char path[PATH_MAX + 16];
	snprintf(path, sizeof path, "%s/memsup.stdout", r->tmp);
	slurp(path, r->out, sizeof r->out);
	snprintf(path, sizeof path, "%s/memsup.stderr", r->tmp);
	slurp(path, r->err, sizeof r->err);
	return r->status;
}

static inline int memsup_run(struct sup_run *r, const char *const *args)
{
	tmp_make(r);
	memsup_start(r, 1, args);
	return memsup_wait(r);
}

/* Parse DIR/resources.json (python3 json: tests/py/record_keys.py), insist
 * on every key of measure_command's record (scripts/memsup.py), and keep
 * its top-level keys.  Fails the test if the file is not valid JSON. */
static inline void rec_load(struct sup_run *r)
{
	char cmd[2 * PATH_MAX + 64], path[PATH_MAX + 32];
	snprintf(path, sizeof path, "%s/resources.json", r->dir);
	snprintf(cmd, sizeof cmd, "python3 '%s' '%s'", py_script("record_keys.py"), path);
	FILE *f = popen(cmd, "r");
	cr_assert_not_null(f);
	size_t got = fread(r->rec, 1, sizeof r->rec - 1, f);
	r->rec[got] = '\0';
	int st = pclose(f);
	cr_assert_eq(st, 0, "resources.json is not a valid record (python3 said %d); memsup stderr: %s",
		     st, r->err);
}

/* The JSON text of key's value (up to the end of its line), or NULL. */
static inline const char *rec_str(const struct sup_run *r, const char *key)
{
	static char val[32768];
	size_t kl = strlen(key);
	for (const char *p = r->rec; *p;) {
		const char *nl = strchr(p, '\n');
		size_t n = nl ? (size_t)(nl - p) : strlen(p);
		if (n > kl && memcmp(p, key, kl) == 0 && p[kl] == '\t') {
			size_t m = n - kl - 1;
			if (m >= sizeof val)
				m = sizeof val - 1;
			memcpy(val, p + kl + 1, m);
			val[m] = '\0';
			return val;
		}
		p = nl ? nl + 1 : p + n;
	}
	return NULL;
}

static inline double rec_num(const struct sup_run *r, const char *key)
{
	const char *v = rec_str(r, key);
	cr_assert_not_null(v, "record has no key %s", key);
	char *end;
	double d = strtod(v, &end);
	cr_assert(end != v, "record key %s is not a number: %s", key, v);
	return d;
}

/* The record once memsup's sentinel has rewritten it (a SIGKILLed memsup
 * leaves it "running" until then): loaded again every 10 ms for up to
 * `seconds`. */
static inline void rec_load_after_sentinel(struct sup_run *r, int seconds)
{
	for (int i = 0; i < seconds * 100; i++) {
		rec_load(r);
		if (strcmp(rec_str(r, "reason"), "\"running\"") != 0)
			return;
		usleep(10000);
	}
}

static inline int path_exists(const char *path)
{
	struct stat st;
	return lstat(path, &st) == 0;
}

static inline int pid_alive(pid_t pid)
{
	return kill(pid, 0) == 0 || errno != ESRCH;
}

/* Wait (up to ~5 s) for a file to appear. */
static inline int wait_for_file(const char *path)
{
	for (int i = 0; i < 1000; i++) {
		if (path_exists(path))
			return 1;
		usleep(5000);
	}
	return 0;
}

/* Run the check `name` (the test's own name) of tests/py/SCRIPT on r->dir,
 * with `arg` (NULL: "") after it: fail the test with python's output and
 * memsup's stderr if it raises, skip it with that output if it exits 77
 * (something the check needs is not here), else log what it printed. */
static inline void sup_py_check(const struct sup_run *r, const char *script, const char *name,
				const char *arg)
{
	char cmd[3 * PATH_MAX + 600];
	static char out[16384];
	snprintf(cmd, sizeof cmd, "python3 '%s' '%s' '%s' '%s' 2>&1", py_script(script), name, r->dir,
		 arg ? arg : "");
	int st = py_output(cmd, out, sizeof out);
	if (WIFEXITED(st) && WEXITSTATUS(st) == 77)
		cr_skip_test("%s", out);
	cr_assert_eq(st, 0, "check %s failed:\n%s\nmemsup stderr:\n%s", name, out, r->err);
	if (out[0])
		cr_log_info("%s", out);
}

/* Remove the run's directory (its evidence with it) once a test passed. */
static inline void sup_done(const struct sup_run *r)
{
	char cmd[PATH_MAX + 16];
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", r->tmp);
	if (system(cmd) != 0)
		cr_log_warn("could not remove %s", r->tmp);
}

#endif
