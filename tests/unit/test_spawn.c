/* test_spawn.c: environment merging, exec failures told apart from
 * commands that exit 127, and where the command starts (a session, or a
 * group of its own in memsup's). */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include "contain/spawn.h"

Test(spawn, build_env_overrides_and_appends)
{
	char *base[] = { "A=1", "B=2", "PATH=/bin", NULL };
	char *ov[] = { "B=3", "C=4", "B=5" };
	char **env = spawn_build_env(base, ov, 3);
	cr_assert_not_null(env);
	cr_expect_str_eq(env[0], "A=1");
	cr_expect_str_eq(env[1], "B=5");
	cr_expect_str_eq(env[2], "PATH=/bin");
	cr_expect_str_eq(env[3], "C=4");
	cr_expect_null(env[4]);
	free(env);
	/* "AB=" must not match key "A" */
	char *base2[] = { "AB=1", NULL };
	char *ov2[] = { "A=2" };
	env = spawn_build_env(base2, ov2, 1);
	cr_expect_str_eq(env[0], "AB=1");
	cr_expect_str_eq(env[1], "A=2");
	free(env);
}

static void start(char *const *argv, const char *cwd, struct spawn_result *res)
{
	sigset_t mask;
	sigprocmask(SIG_SETMASK, NULL, &mask);
	int fd = open("/dev/null", O_WRONLY | O_CLOEXEC);
	char *envp[] = { "PATH=/usr/bin:/bin", NULL };
	struct spawn_request req = { .argv = argv, .envp = envp, .cwd = cwd, .out_fd = fd,
				     .err_fd = fd, .mask = &mask };
	cr_assert_eq(spawn_start(&req, res), 0);
	close(fd);
}

Test(spawn, not_found_is_reported, .timeout = 10)
{
	struct spawn_result res;
	char *argv[] = { "/nonexistent/xyz", NULL };
	start(argv, NULL, &res);
	cr_expect_eq(res.start_errno, ENOENT);
	cr_expect_eq(res.exit_status, 127);
	cr_expect_str_eq(res.stage, "execvp");
	/* already reaped */
	cr_expect_eq(waitpid(res.pid, NULL, WNOHANG), -1);
}

Test(spawn, bad_cwd_is_reported, .timeout = 10)
{
	struct spawn_result res;
	char *argv[] = { "true", NULL };
	start(argv, "/nonexistent-dir", &res);
	cr_expect_eq(res.start_errno, ENOENT);
	cr_expect_str_eq(res.stage, "chdir");
}

Test(spawn, exit_127_is_not_a_start_failure, .timeout = 10)
{
	struct spawn_result res;
	char *argv[] = { "sh", "-c", "exit 127", NULL };
	start(argv, "/", &res);
	cr_expect_eq(res.start_errno, 0);
	int st;
	cr_assert_eq(waitpid(res.pid, &st, 0), res.pid);
	cr_expect(WIFEXITED(st) && WEXITSTATUS(st) == 127);
}

Test(spawn, child_gets_new_session, .timeout = 10)
{
	struct spawn_result res;
	char *argv[] = { "sh", "-c", "sleep 5", NULL };
	start(argv, NULL, &res);
	cr_assert_eq(res.start_errno, 0);
	cr_expect_eq(getsid(res.pid), res.pid);
	cr_expect_neq(getsid(res.pid), getsid(0));
	cr_expect_eq(res.sid, res.pid);
	kill(res.pid, SIGKILL);
	waitpid(res.pid, NULL, 0);
}

/* A job at memsup's terminal: a group of its own, memsup's session, the
 * group there from the moment spawn_start() returns (the parent makes it
 * too), and the session in the result. */
Test(spawn, pgrp_child_stays_in_the_session, .timeout = 10)
{
	sigset_t mask;
	sigprocmask(SIG_SETMASK, NULL, &mask);
	char *argv[] = { "sleep", "5", NULL };
	char *envp[] = { "PATH=/usr/bin:/bin", NULL };
	struct spawn_request req = { .argv = argv, .envp = envp, .out_fd = -1, .err_fd = -1,
				     .mask = &mask, .group = SPAWN_PGRP, .tty = -1 };
	struct spawn_result res;
	cr_assert_eq(spawn_start(&req, &res), 0);
	cr_assert_eq(res.start_errno, 0);
	cr_expect_eq(getpgid(res.pid), res.pid);
	cr_expect_neq(getpgid(res.pid), getpgrp());
	cr_expect_eq(getsid(res.pid), getsid(0));
	cr_expect_eq(res.sid, getsid(0));
	/* the group can be signalled as one */
	cr_expect_eq(killpg(res.pid, SIGKILL), 0);
	int st;
	cr_assert_eq(waitpid(res.pid, &st, 0), res.pid);
	cr_expect(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL);
}

Test(spawn, status_convention)
{
	cr_expect_eq(spawn_status_for(ENOENT), 127);
	cr_expect_eq(spawn_status_for(EACCES), 126);
	cr_expect_eq(spawn_status_for(ENOEXEC), 126);
}
