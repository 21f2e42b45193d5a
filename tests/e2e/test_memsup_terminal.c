/* test_memsup_terminal.c: memsup at a terminal, on a pseudo-terminal this
 * test owns: memsup is the session leader of a new session whose
 * controlling terminal is the pty's slave, and the test types into the
 * master.  The command gets the terminal as a foreground job (isatty,
 * /dev/tty, the foreground group, the size), ^C reaches it and not memsup,
 * and ^Z -- which no shell could answer here: memsup's group is orphaned,
 * so the kernel will not stop it -- is ignored, as the terminal would
 * ignore it.  --output transcript puts a pty of memsup's between.  The
 * same cases in a real terminal, with a shell's job control, are
 * tests/terminal.sh's (tmux). */
#include "test_memsup_util.h"
#include <poll.h>
#include <sys/ioctl.h>
#include <termios.h>
#include <time.h>

struct pty_run {
	struct sup_run r;
	int master;
	char seen[8192];
	size_t n;
};

/* memsup ARGS... on a fresh pty, as its session leader -- or, `under_sh`,
 * as the child of a script (bash: it waits out a ^C its child survives)
 * that leads the session and its group. */
static void pty_start_as(struct pty_run *p, const char *const *args, int under_sh)
{
	tmp_make(&p->r);
	p->n = 0;
	p->seen[0] = '\0';
	p->master = posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);
	if (p->master < 0)
		cr_skip_test("no pseudo-terminal: %s", strerror(errno));
	cr_assert_eq(grantpt(p->master), 0);
	cr_assert_eq(unlockpt(p->master), 0);
	const char *slave = ptsname(p->master);
	cr_assert_not_null(slave);
	struct winsize ws = { .ws_row = 33, .ws_col = 97 };
	const char *argv[32];
	int k = 0;
	if (under_sh) {
		if (access("/bin/bash", X_OK) < 0)
			cr_skip_test("no /bin/bash");
		argv[k++] = "/bin/bash";
		argv[k++] = "-c";
		argv[k++] = "\"$0\" \"$@\"; exit $?"; /* not exec'd: memsup is sh's child */
	}
	argv[k++] = env_or_skip("MEMSUP");
	argv[k++] = "-q";
	argv[k++] = "-o";
	argv[k++] = p->r.dir;
	for (int i = 0; args[i] && k < 31; i++)
		argv[k++] = args[i];
	argv[k] = NULL;
	p->r.pid = fork();
	cr_assert_geq(p->r.pid, 0);
	if (p->r.pid == 0) {
		/* a session of its own, the slave its controlling terminal */
		if (setsid() < 0)
			_exit(99);
		int s = open(slave, O_RDWR);
		if (s < 0 || ioctl(s, TIOCSCTTY, 0) < 0 || ioctl(s, TIOCSWINSZ, &ws) < 0 ||
		    dup2(s, 0) < 0 || dup2(s, 1) < 0 || dup2(s, 2) < 0 || chdir(p->r.tmp) < 0)
			_exit(99);
		execv(argv[0], (char *const *)argv);
		_exit(98);
	}
}

/* What the terminal shows within 10 ms, kept (the oldest half dropped
 * when full); -1 when no slave is open any more (EIO). */
static int pty_read_some(struct pty_run *p)
{
	struct pollfd pfd = { p->master, POLLIN, 0 };
	if (poll(&pfd, 1, 10) <= 0)
		return 0;
	if (p->n > sizeof p->seen / 2) {
		memmove(p->seen, p->seen + p->n / 2, p->n - p->n / 2 + 1);
		p->n -= p->n / 2;
	}
	ssize_t k = read(p->master, p->seen + p->n, sizeof p->seen - 1 - p->n);
	if (k <= 0)
		return -1;
	p->n += (size_t)k;
	p->seen[p->n] = '\0';
	return 0;
}

static void pty_start(struct pty_run *p, const char *const *args)
{
	pty_start_as(p, args, 0);
}

/* Read the terminal until `want` shows (1) or 20 s pass (0). */
static int pty_wait_for(struct pty_run *p, const char *want)
{
	for (int i = 0; i < 2000 && !strstr(p->seen, want); i++)
		if (pty_read_some(p) < 0)
			break;
	return strstr(p->seen, want) != NULL;
}

static void pty_type(struct pty_run *p, const char *keys)
{
	size_t len = strlen(keys);
	cr_assert_eq(write(p->master, keys, len), (ssize_t)len);
}

/* memsup's status, the terminal drained meanwhile (a full pty would
 * block the command).  A memsup still there after PTY_WAIT_S is stopped
 * (SIGTERM: it kills the tree) and the test fails: a hang must not outlive
 * the test, whatever the runner's timeout does. */
#define PTY_WAIT_S 40
static int pty_wait(struct pty_run *p)
{
	int st;
	struct timespec t0, now;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (;;) {
		pid_t w = waitpid(p->r.pid, &st, WNOHANG);
		if (w == p->r.pid)
			break;
		clock_gettime(CLOCK_MONOTONIC, &now);
		if (now.tv_sec - t0.tv_sec > PTY_WAIT_S) {
			kill(p->r.pid, SIGTERM);
			waitpid(p->r.pid, &st, 0);
			close(p->master);
			cr_assert_fail("memsup still running after %d s; the terminal showed: %s",
				       PTY_WAIT_S, p->seen + (p->n > 300 ? p->n - 300 : 0));
		}
		if (pty_read_some(p) < 0) {
			struct timespec ts = { 0, 10 * 1000 * 1000 };
			nanosleep(&ts, NULL);
		}
	}
	/* what it wrote just before it ended may still be in the pty */
	for (int i = 0; i < 100; i++) {
		size_t before = p->n;
		if (pty_read_some(p) < 0 || p->n == before)
			break;
	}
	close(p->master);
	return WIFEXITED(st) ? WEXITSTATUS(st) : 1000 + WTERMSIG(st);
}

Test(memsup_terminal, command_gets_the_terminal_as_a_foreground_job, .timeout = 60)
{
	struct pty_run p;
	const char *args[] = { "--", prog("ttyprobe"), "7", NULL };
	pty_start(&p, args);
	cr_assert(pty_wait_for(&p, "probe: size"), "no probe: %s", p.seen);
	cr_expect_not_null(strstr(p.seen, "probe: tty 1 1 1 devtty ok fg yes group own"), "%s", p.seen);
	cr_expect_not_null(strstr(p.seen, "probe: size 33x97"), "%s", p.seen);
	pty_type(&p, "q\n");
	cr_expect_eq(pty_wait(&p), 7, "%s", p.seen);
	rec_load(&p.r);
	cr_expect_str_eq(rec_str(&p.r, "output"), "{\"mode\": \"terminal\", \"log\": null, "
			 "\"logged\": [], \"log_bytes\": null, \"stdout\": null, \"stderr\": null, "
			 "\"log_max\": null, \"bytes\": null, \"left_out\": null}");
	cr_expect_str_eq(rec_str(&p.r, "exit_code"), "7");
	cr_expect_str_eq(rec_str(&p.r, "reason"), "null");
	char log[PATH_MAX + 16];
	snprintf(log, sizeof log, "%s/stdout.log", p.r.dir);
	cr_expect_neq(access(log, F_OK), 0, "a job at a terminal has no stdout.log");
}

/* ^C at the terminal ends a command that does not catch it: 130, the
 * command's signal, and no reason of memsup's own. */
static void ctrl_c_ends_a_sleeper(int under_sh)
{
	struct pty_run p;
	const char *args[] = { "--", "sh", "-c", "echo ready; exec sleep 30", NULL };
	pty_start_as(&p, args, under_sh);
	cr_assert(pty_wait_for(&p, "ready"), "%s", p.seen);
	pty_type(&p, "\003");
	cr_expect_eq(pty_wait(&p), 130, "%s", p.seen);
	rec_load(&p.r);
	cr_expect_str_eq(rec_str(&p.r, "reason"), "null", "memsup took the ^C for itself");
	cr_expect_str_eq(rec_str(&p.r, "signal"), "2");
}

Test(memsup_terminal, ctrl_c_reaches_the_command_not_memsup, .timeout = 60)
{
	ctrl_c_ends_a_sleeper(0);
}

/* memsup does not lead its group (a script's child): the command stays in
 * it, as time(1) runs one -- the foreground group, the terminal's ^C for
 * the whole group, and memsup ignoring it. */
Test(memsup_terminal, command_shares_a_group_memsup_does_not_lead, .timeout = 60)
{
	struct pty_run p;
	const char *args[] = { "--", prog("ttyprobe"), "8", NULL };
	pty_start_as(&p, args, 1);
	cr_assert(pty_wait_for(&p, "probe: size"), "%s", p.seen);
	cr_expect_not_null(strstr(p.seen, "probe: tty 1 1 1 devtty ok fg yes group parent's"), "%s",
			   p.seen);
	pty_type(&p, "q\n");
	cr_expect_eq(pty_wait(&p), 8, "%s", p.seen);
	rec_load(&p.r);
	cr_expect_not_null(strstr(rec_str(&p.r, "output"), "\"mode\": \"terminal\""), "%s",
			   rec_str(&p.r, "output"));

	ctrl_c_ends_a_sleeper(1);
}

/* memsup leads the session: its group is orphaned, the kernel discards the
 * SIGTSTP it sends itself, and the command is let run on.  The terminal
 * comes back to memsup at the end, in the modes it started with. */
Test(memsup_terminal, ctrl_z_without_a_shell_is_ignored, .timeout = 60)
{
	struct pty_run p;
	const char *args[] = { "--", prog("ttyprobe"), "4", NULL };
	pty_start(&p, args);
	cr_assert(pty_wait_for(&p, "probe: size"), "%s", p.seen);
	pty_type(&p, "\032");
	/* the command was stopped and continued: it still reads */
	struct timespec ts = { 0, 200 * 1000 * 1000 };
	nanosleep(&ts, NULL);
	pty_type(&p, "q\n");
	cr_expect_eq(pty_wait(&p), 4, "%s", p.seen);
	rec_load(&p.r);
	cr_expect_not_null(strstr(rec_str(&p.r, "notes"), "stopped 1 time"), "%s",
			   rec_str(&p.r, "notes"));
}

/* --output transcript: the command on a pty of its own, sized as memsup's
 * terminal, with a ^Z that memsup turns into a stop it passes up (and,
 * with no shell to stop for, lets the command run on); everything the pty
 * showed is in stdout.log. */
Test(memsup_terminal, transcript_relays_and_logs_a_pty, .timeout = 60)
{
	struct pty_run p;
	const char *args[] = { "--output", "transcript", "--", prog("ttyprobe"), "9", NULL };
	pty_start(&p, args);
	cr_assert(pty_wait_for(&p, "probe: size"), "%s", p.seen);
	cr_expect_not_null(strstr(p.seen, "probe: tty 1 1 1 devtty ok fg yes group own"), "%s", p.seen);
	cr_expect_not_null(strstr(p.seen, "probe: size 33x97"), "%s", p.seen);
	pty_type(&p, "\032");
	struct timespec ts = { 0, 200 * 1000 * 1000 };
	nanosleep(&ts, NULL);
	pty_type(&p, "q\n");
	cr_expect_eq(pty_wait(&p), 9, "%s", p.seen);
	rec_load(&p.r);
	cr_expect_str_eq(rec_str(&p.r, "reason"), "null");
	cr_expect_not_null(strstr(rec_str(&p.r, "output"), "\"mode\": \"transcript\", \"log\": "
				  "\"stdout.log\""), "%s", rec_str(&p.r, "output"));
	cr_expect_not_null(strstr(rec_str(&p.r, "notes"), "stopped 1 time"), "%s",
			   rec_str(&p.r, "notes"));
	char log[PATH_MAX + 16], text[4096];
	snprintf(log, sizeof log, "%s/stdout.log", p.r.dir);
	slurp(log, text, sizeof text);
	cr_expect_not_null(strstr(text, "probe: tty 1 1 1 devtty ok fg yes group own"), "%s", text);
	cr_expect_not_null(strstr(text, "probe: size 33x97"), "%s", text);
	/* the echo of what was typed is part of what the terminal showed */
	cr_expect_not_null(strstr(text, "q\r\n"), "%s", text);
}

/* --output transcript --log-max: the log keeps the first and last half of
 * what the pty showed with the marker between, the record counts what was
 * left out, and memsup's terminal still got all of it. */
Test(memsup_terminal, transcript_log_is_bounded, .timeout = 60)
{
	struct pty_run p;
	/* 100,000 x and one 'E' at the end: no newline, so the pty's ONLCR
	 * does not change the count */
	const char *args[] = { "--output", "transcript", "--log-max", "4K", "--", "sh", "-c",
			       "head -c 100000 /dev/zero | tr '\\0' x; printf E", NULL };
	pty_start(&p, args);
	cr_expect_eq(pty_wait(&p), 0, "%s", p.seen);
	cr_expect_not_null(strstr(p.seen, "xxxxE"), "the terminal missed the end: %s",
			   p.seen + (p.n > 200 ? p.n - 200 : 0));
	rec_load(&p.r);
	const char *out = rec_str(&p.r, "output");
	cr_expect_not_null(strstr(out, "\"log_max\": 4096, \"bytes\": 100001, "
				  "\"left_out\": 95905}"), "%s", out);
	char log[PATH_MAX + 16], text[8192];
	snprintf(log, sizeof log, "%s/stdout.log", p.r.dir);
	slurp(log, text, sizeof text);
	static const char marker[] = "\n[memsup: 95905 bytes left out]\n";
	char want[8192];
	size_t m = sizeof marker - 1;
	memset(want, 'x', 2048);
	memcpy(want + 2048, marker, m);
	memset(want + 2048 + m, 'x', 2047);
	want[2048 + m + 2047] = 'E';
	want[2048 + m + 2048] = '\0';
	cr_expect_str_eq(text, want, "stdout.log is not head, marker, tail");
}

/* --log-max at a terminal without --output would bound a log there is
 * not: refused before anything is made. */
Test(memsup_terminal, log_max_at_a_terminal_is_refused, .timeout = 30)
{
	struct pty_run p;
	const char *args[] = { "--log-max", "1M", "--", "true", NULL };
	pty_start(&p, args);
	cr_expect_eq(pty_wait(&p), 125, "%s", p.seen);
	cr_expect_not_null(strstr(p.seen, "--log-max bounds stdout.log, and at a terminal there "
				  "is none"), "%s", p.seen);
	cr_expect_neq(access(p.r.dir, F_OK), 0, "a refused run made %s", p.r.dir);
}

/* --output transcript needs a terminal to be typed at. */
Test(memsup_terminal, transcript_without_a_terminal_is_refused, .timeout = 30)
{
	struct sup_run r;
	const char *args[] = { "--output", "transcript", "--", "true", NULL };
	cr_expect_eq(memsup_run(&r, args), 125);
	cr_expect_not_null(strstr(r.err, "--output transcript: memsup's standard input is not a "
				  "terminal"), "%s", r.err);
	cr_expect_neq(access(r.dir, F_OK), 0, "a refused run made %s", r.dir);
}

/* Not at a terminal: unchanged (tee, a session of its own). */
Test(memsup_terminal, in_a_pipe_nothing_changes, .timeout = 60)
{
	struct sup_run r;
	const char *args[] = { "-q", "--", "sh", "-c", "ps -o sid= -p $$; ps -o sid= -p $PPID",
			       NULL };
	cr_assert_eq(memsup_run(&r, args), 0, "%s", r.err);
	rec_load(&r);
	cr_expect_not_null(strstr(rec_str(&r, "output"), "\"mode\": \"tee\""), "%s",
			   rec_str(&r, "output"));
	long sid = 0, parent_sid = 0;
	cr_assert_eq(sscanf(r.out, " %ld %ld", &sid, &parent_sid), 2, "%s", r.out);
	cr_expect_neq(sid, parent_sid, "the command is in memsup's session: %s", r.out);
}
