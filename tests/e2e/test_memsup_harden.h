/* test_memsup_harden.h: helpers shared by the hardening tests
 * (tests/e2e/test_memsup_harden_*.c), over test_memsup_util.h.
 *
 * harden_start() is sup_spawn() (test_memsup_util.h) after the test
 * process made itself a child subreaper, so that
 * whatever memsup leaves behind -- a live process or an unreaped zombie --
 * re-parents to the test, where no_children_left() finds it. */
#ifndef TEST_MEMSUP_HARDEN_H
#define TEST_MEMSUP_HARDEN_H

#include "test_memsup_util.h"
#include <grp.h>
#include <sys/prctl.h>

#define NOBODY 65534

typedef sup_child_hook harden_hook;

static inline void harden_start(struct sup_run *r, harden_hook hook, const char *const *argv)
{
	if (prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) < 0)
		cr_skip_test("no PR_SET_CHILD_SUBREAPER: leftovers cannot be checked");
	sup_spawn(r, hook, argv);
}

/* After memsup_wait(): nothing of the tree re-parented to us, alive or
 * zombie (waitpid says ECHILD: we have no child at all). */
static inline void no_children_left(void)
{
	int st;
	pid_t p = waitpid(-1, &st, WNOHANG);
	cr_expect(p < 0 && errno == ECHILD,
		  "memsup left a process behind: waitpid(-1) gave %d (%s)", (int)p,
		  p == 0 ? "a live process" : p > 0 ? "an unreaped zombie" : strerror(errno));
	/* reap what can be reaped (all_pids_gone() kills live leftovers) */
	while (p > 0)
		p = waitpid(-1, &st, WNOHANG);
}

/* Every pid in pidfile (one per line) is gone: kill(pid, 0) fails with
 * ESRCH, so it is neither alive nor a zombie nobody reaped.  Returns how
 * many pids there were. */
static inline int all_pids_gone(const char *pidfile)
{
	static char text[1 << 20];
	slurp(pidfile, text, sizeof text);
	int n = 0;
	for (char *p = text, *end; *p; p = end) {
		long pid = strtol(p, &end, 10);
		if (end == p)
			break;
		errno = 0;
		int rc = kill((pid_t)pid, 0);
		cr_expect(rc < 0 && errno == ESRCH, "pid %ld is still there after memsup returned",
			  pid);
		if (rc == 0)
			kill((pid_t)pid, SIGKILL);
		n++;
	}
	return n;
}

/* python3 checks a .jsonl file (tests/py/jsonl_lines.py): every line one
 * JSON value, the file ends with a newline (or is empty).  Returns the
 * number of lines; fails the test on a torn or invalid line. */
static inline long jsonl_whole_lines(const char *path)
{
	char cmd[2 * PATH_MAX + 64], out[64];
	snprintf(cmd, sizeof cmd, "python3 '%s' '%s'", py_script("jsonl_lines.py"), path);
	FILE *f = popen(cmd, "r");
	cr_assert_not_null(f);
	size_t got = fread(out, 1, sizeof out - 1, f);
	out[got] = '\0';
	int st = pclose(f);
	cr_assert_eq(st, 0, "%s has a torn or invalid line", path);
	return strtol(out, NULL, 10);
}

/* stderr names the file and the error: "memsup: OP DIR/NAME: STRERROR". */
static inline void expect_error_line(const struct sup_run *r, const char *file, int err)
{
	char want[PATH_MAX + 128];
	snprintf(want, sizeof want, "%s: %s", file, strerror(err));
	cr_expect_not_null(strstr(r->err, want), "stderr does not say '%s': %s", want, r->err);
}

/* Root ignores permission bits: run memsup as nobody when we are root. */
static inline void become_nobody(const struct sup_run *r)
{
	(void)r;
	if (geteuid() == 0 && (setgroups(0, NULL) < 0 || setgid(NOBODY) < 0 ||
			       setuid(NOBODY) < 0))
		_exit(96);
}

/* Whether nobody can run memsup and the workloads (not when the build
 * tree sits under a private directory such as /root). */
static inline int nobody_can_run(void)
{
	pid_t p = fork();
	cr_assert_geq(p, 0);
	if (p == 0) {
		become_nobody(NULL);
		_exit(access(env_or_skip("MEMSUP"), X_OK) == 0 &&
		      access(prog("sleeper"), X_OK) == 0 ? 0 : 1);
	}
	int st;
	waitpid(p, &st, 0);
	return WIFEXITED(st) && WEXITSTATUS(st) == 0;
}

/* A directory everyone may write into, for the pids and the marker. */
static inline void open_tmp_to_nobody(const struct sup_run *r, char *shared, size_t cap)
{
	snprintf(shared, cap, "%s/w", r->tmp);
	cr_assert_eq(chmod(r->tmp, 0755), 0);
	cr_assert_eq(mkdir(shared, 0777), 0);
	cr_assert_eq(chmod(shared, 0777), 0);
}

#endif
