/* test_trace.c: where memsup finds libmemtrace.so (a build tree beside the
 * binary, then pkglibdir), how the user's LD_PRELOAD is kept, and the
 * traced environment. */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <signal.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/procfs.h"
#include "collect/trace.h"

Test(trace, preload_value_keeps_the_user_entries)
{
	char out[256];
	cr_assert_eq(trace_preload_value(NULL, "/x/libmemtrace.so", out, sizeof out), 0);
	cr_expect_str_eq(out, "/x/libmemtrace.so");
	cr_assert_eq(trace_preload_value(" : ", "/x/libmemtrace.so", out, sizeof out), 0);
	cr_expect_str_eq(out, "/x/libmemtrace.so");
	cr_assert_eq(trace_preload_value("/u/a.so /u/b.so", "/x/libmemtrace.so", out, sizeof out), 0);
	cr_expect_str_eq(out, "/u/a.so /u/b.so:/x/libmemtrace.so");
	/* already there: not twice */
	cr_assert_eq(trace_preload_value("/x/libmemtrace.so:/u/a.so", "/x/libmemtrace.so", out,
					 sizeof out), 0);
	cr_expect_str_eq(out, "/x/libmemtrace.so:/u/a.so");
	/* a longer name that merely contains it is another entry */
	cr_assert_eq(trace_preload_value("/x/libmemtrace.so.1", "/x/libmemtrace.so", out, sizeof out), 0);
	cr_expect_str_eq(out, "/x/libmemtrace.so.1:/x/libmemtrace.so");
	cr_expect_eq(trace_preload_value("/u/a.so", "/x/libmemtrace.so", out, 10), -ENAMETOOLONG);
}

static void touch(const char *path)
{
	int fd = open(path, O_WRONLY | O_CREAT, 0644);
	cr_assert_geq(fd, 0, "%s", path);
	close(fd);
}

Test(trace, find_shim_build_tree_then_pkglibdir)
{
	char t[] = "/tmp/test-trace-XXXXXX", p[PATH_MAX + 128], exe[PATH_MAX + 64], out[PATH_MAX];
	cr_assert_not_null(mkdtemp(t));
	snprintf(p, sizeof p, "%s/build", t);
	cr_assert_eq(mkdir(p, 0755), 0);
	strcat(p, "/supervisor");
	cr_assert_eq(mkdir(p, 0755), 0);
	snprintf(exe, sizeof exe, "%s/memsup", p);
	touch(exe);
	snprintf(p, sizeof p, "%s/lib", t);
	cr_assert_eq(mkdir(p, 0755), 0);
	/* nothing anywhere */
	cr_expect_eq(trace_find_shim(exe, p, out, sizeof out), -ENOENT);
	/* installed only */
	snprintf(p, sizeof p, "%s/lib/libmemtrace.so", t);
	touch(p);
	snprintf(p, sizeof p, "%s/lib", t);
	cr_assert_eq(trace_find_shim(exe, p, out, sizeof out), 0);
	cr_expect(strstr(out, "/lib/libmemtrace.so") != NULL, "%s", out);
	/* the build tree wins over the installed one */
	snprintf(p, sizeof p, "%s/build/preload", t);
	cr_assert_eq(mkdir(p, 0755), 0);
	strcat(p, "/.libs");
	cr_assert_eq(mkdir(p, 0755), 0);
	strcat(p, "/libmemtrace.so");
	touch(p);
	snprintf(p, sizeof p, "%s/lib", t);
	cr_assert_eq(trace_find_shim(exe, p, out, sizeof out), 0);
	cr_expect(strstr(out, "/build/preload/.libs/libmemtrace.so") != NULL, "%s", out);
	cr_expect_eq(out[0], '/');
	/* the running memsup of a build tree: the real .so */
	const char *memsup = getenv("MEMSUP"), *so = getenv("MEMTRACE_SO");
	if (memsup && so) {
		char real[PATH_MAX];
		cr_assert_eq(trace_find_shim(memsup, "/nonexistent", out, sizeof out), 0);
		cr_assert_not_null(realpath(so, real));
		cr_expect_str_eq(out, real);
	}
	char cmd[PATH_MAX];
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", t);
	cr_expect_eq(system(cmd), 0);
}

/* The installed shim from the installed memsup: pkglibdir from bindir,
 * by whole path components. */
Test(trace, relative_dir_by_components)
{
	static const struct { const char *from, *to, *want; } cases[] = {
		{ "/usr/local/bin", "/usr/local/lib/memtrace", "../lib/memtrace" },
		{ "/usr/bin", "/usr/lib/x86_64-linux-gnu/memtrace", "../lib/x86_64-linux-gnu/memtrace" },
		{ "/opt/a/bin", "/opt/ab/lib", "../../ab/lib" },
		{ "/x/bin/", "/x/bin", "." },
		{ "/bin", "/lib/memtrace", "../lib/memtrace" },
		{ "/", "/lib", "lib" },
	};
	char out[256];
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		cr_assert_eq(trace_relative_dir(cases[i].from, cases[i].to, out, sizeof out), 0);
		cr_expect_str_eq(out, cases[i].want, "%s -> %s", cases[i].from, cases[i].to);
	}
	cr_expect_eq(trace_relative_dir("bin", "/lib", out, sizeof out), -EINVAL);
	cr_expect_eq(trace_relative_dir("/usr/local/bin", "/usr/local/lib/memtrace", out, 4),
		     -ENAMETOOLONG);
}

Test(trace, build_env_sets_and_overrides)
{
	char *base[] = { "PATH=/bin", "LD_PRELOAD=/u/a.so", "MEMTRACE_PARENT=12.0:1",
			 "MEMTRACE_DIR=/elsewhere", NULL };
	char *owned;
	char **env = trace_build_env(base, "/x/libmemtrace.so", "/ev/records", 1, &owned);
	cr_assert_not_null(env);
	int n = 0, pre = 0, dir = 0, quiet = 0, follow = 0;
	for (; env[n]; n++) {
		pre += strcmp(env[n], "LD_PRELOAD=/u/a.so:/x/libmemtrace.so") == 0;
		dir += strcmp(env[n], "MEMTRACE_DIR=/ev/records") == 0;
		quiet += strcmp(env[n], "MEMTRACE_QUIET=1") == 0;
		follow += strcmp(env[n], "MEMTRACE_FOLLOW=1") == 0;
	}
	cr_expect_eq(n, 5, "PATH, LD_PRELOAD, MEMTRACE_DIR (replaced), QUIET, FOLLOW; "
		     "no MEMTRACE_PARENT");
	cr_expect(pre == 1 && dir == 1 && quiet == 1 && follow == 1);
	for (int i = 0; env[i]; i++)
		cr_expect(strncmp(env[i], "MEMTRACE_PARENT=", 16) != 0, "%s", env[i]);
	free(env);
	free(owned);
	env = trace_build_env(base + 4, "/x/libmemtrace.so", "/ev/records", 0, &owned);
	cr_assert_not_null(env);
	for (n = 0; env[n]; n++)
		cr_expect(strncmp(env[n], "MEMTRACE_FOLLOW=", 16) != 0);
	cr_expect_eq(n, 3);
	free(env);
	free(owned);
}

Test(trace, environ_has)
{
	/* a child's initial environment, read from /proc */
	int pfd[2];
	cr_assert_eq(pipe(pfd), 0);
	pid_t c = fork();
	if (c == 0) {
		char *env[] = { "A=1", "MT_TEST_PRE=/u/x.so:/b/libmemtrace.so", NULL };
		char *argv[] = { "sleep", "5", NULL };
		close(pfd[0]);
		execve("/bin/sleep", argv, env);
		_exit(127);
	}
	close(pfd[1]);
	/* wait for the exec to have happened: the pipe is not CLOEXEC, so
	 * poll the environ instead */
	int has = -1;
	for (int i = 0; i < 200 && has != 1; i++) {
		has = procfs_environ_has(NULL, c, "MT_TEST_PRE", "libmemtrace");
		usleep(5000);
	}
	cr_expect_eq(has, 1);
	cr_expect_eq(procfs_environ_has(NULL, c, "A", "libmemtrace"), 0);
	cr_expect_eq(procfs_environ_has(NULL, c, "NOPE", "x"), 0);
	kill(c, 9);
	waitpid(c, NULL, 0);
	close(pfd[0]);
}
