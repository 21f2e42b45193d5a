/* test_invariant.c: MT_ASSERT (common/invariant.h).  In a debug build
 * (./configure --enable-debug) a broken invariant kills the process with
 * SIGABRT after one line on stderr naming the file, the line and the
 * expression -- both written straight (MT_ASSERT(0)) and reached through a
 * public API whose table was corrupted (pidmap.h: a capacity that is not a
 * power of two).  In a normal build the expression is type-checked only:
 * never evaluated. */
#include <criterion/criterion.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "invariant.h"
#include "base/pidmap.h"

#if defined(MT_DEBUG) && MT_DEBUG

struct entry {
	pid_t pid;
	int value;
};

static void break_nothing(void)
{
	MT_ASSERT(1 + 1 == 2);
}

static void break_directly(void)
{
	MT_ASSERT(0 && "the test's own");
}

static void break_with_reason(void)
{
	int two = 2;
	MT_ASSERT_MSG(two % 2 == 1, "two is odd");
}

/* A table whose capacity lies: pidmap's probe masks with cap - 1, so a cap
 * that is not a power of two would look in slots that are not there. */
static void break_a_pidmap(void)
{
	struct pidmap m;
	pidmap_init(&m, sizeof(struct entry));
	if (!pidmap_add(&m, 42, NULL))
		_exit(3);
	m.cap -= 1;
	(void)pidmap_find(&m, 42);
}

/* Runs fn in a child with its stderr in buf (NUL-terminated); returns
 * the child's wait status. */
static int run_child(void (*fn)(void), char *buf, size_t cap)
{
	int fds[2], status = 0;
	size_t got = 0;
	cr_assert_eq(pipe(fds), 0);
	pid_t pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		close(fds[0]);
		dup2(fds[1], 2);
		fn();
		_exit(0);
	}
	close(fds[1]);
	for (;;) {
		ssize_t n = read(fds[0], buf + got, cap - 1 - got);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		got += (size_t)n;
		if (got == cap - 1)
			break;
	}
	buf[got] = '\0';
	close(fds[0]);
	cr_assert_eq(waitpid(pid, &status, 0), pid);
	return status;
}

static void expect_abort(int status, const char *err, const char *what)
{
	cr_expect(WIFSIGNALED(status) && WTERMSIG(status) == SIGABRT,
		  "the child was not aborted (status 0x%x)", (unsigned)status);
	cr_expect(strncmp(err, "memtrace: invariant broken at ", 30) == 0,
		  "stderr starts otherwise: \"%s\"", err);
	cr_expect(strstr(err, what) != NULL, "\"%s\" not in \"%s\"", what, err);
	cr_expect_eq(strchr(err, '\n'), err + strlen(err) - 1, "not one line: \"%s\"", err);
}

Test(invariant, a_kept_invariant_says_nothing, .timeout = 10)
{
	char err[1024];
	int status = run_child(break_nothing, err, sizeof err);
	cr_expect(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	cr_expect_str_empty(err);
}

Test(invariant, broken_aborts_naming_file_line_and_expression, .timeout = 10)
{
	char err[1024];
	int status = run_child(break_directly, err, sizeof err);
	expect_abort(status, err, "test_invariant.c:");
	cr_expect(strstr(err, ": 0 && \"the test's own\"\n") != NULL, "%s", err);
}

Test(invariant, the_reason_follows_the_expression, .timeout = 10)
{
	char err[1024];
	int status = run_child(break_with_reason, err, sizeof err);
	expect_abort(status, err, ": two % 2 == 1 (two is odd)\n");
}

Test(invariant, a_corrupt_pidmap_is_caught_through_its_api, .timeout = 10)
{
	char err[1024];
	int status = run_child(break_a_pidmap, err, sizeof err);
	expect_abort(status, err, "pidmap.c:");
}

Test(invariant, the_expression_is_evaluated_once, .timeout = 10)
{
	int n = 0;
	MT_ASSERT(++n == 1);
	MT_ASSERT_MSG(++n == 2, "counted");
	cr_expect_eq(n, 2);
}

#else /* !MT_DEBUG */

Test(invariant, a_release_build_never_evaluates_the_expression)
{
	int n = 0;
	MT_ASSERT(++n == 0);
	MT_ASSERT_MSG(++n == 0, "never evaluated");
	MT_ASSERT(0);
	cr_expect_eq(n, 0, "MT_ASSERT evaluated its expression in a release build");
}

#endif /* MT_DEBUG */
