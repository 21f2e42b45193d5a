/* transcript.c: the pseudo-terminal relay of --output transcript (see
 * transcript.h).
 *
 *   memsup's stdin --in[]--> pty master --(line discipline)--> the command
 *   the command --> pty master --out[]--> stdout.log, then memsup's stdout
 *
 * Each buffer is filled only when empty, so a slow side holds back only
 * its own direction, and a byte reaches memsup's stdout only once it is in
 * the log. */
#include "stdio/transcript.h"
#include "base/clock.h"
#include "stdio/keep.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <termios.h>
#include <unistd.h>

#define TRANSCRIPT_IN_BYTES 4096
#define TRANSCRIPT_OUT_BYTES 65536
#define TRANSCRIPT_ROUNDS 8       /* reads of the pty per pump: the loop stays lively */
#define TRANSCRIPT_IDLE_MS 2000   /* at the end, a pty silent this long with no reader
				     gone is as good as ended (a holder stuck in D state) */

struct transcript {
	struct keep keep;     /* what of it stdout.log keeps (--log-max) */
	uint64_t log_max;     /* KEEP_UNLIMITED: all of it */
	int log_err;          /* -errno of a failed write to stdout.log; 0 */
	int master;           /* -1 before transcript_start() */
	int slave;            /* memsup's copy until the command has it; -1 */
	int master_done;      /* EIO: no slave open any more */
	int in_done;          /* memsup's stdin ended or failed */
	int out_fd;           /* memsup's stdout, or a private non-blocking
				 description of it; -1: the pass-through ended */
	int out_owned;
	int out_full;         /* out_fd said EAGAIN: wait for POLLOUT */
	char in[TRANSCRIPT_IN_BYTES];
	size_t in_off, in_len;
	char out[TRANSCRIPT_OUT_BYTES];
	size_t out_off, out_len;
	uint64_t bytes;       /* what the pty showed, kept or not */
	pid_t leader;         /* the command, the pty's session leader; 0 */
	int suspended;        /* memsup stopped it for a ^Z */
};

static void close_fd(int *fd)
{
	if (*fd >= 0)
		close(*fd);
	*fd = -1;
}

/* memsup's stdout as the pass-through's target: a description of its own
 * with O_NONBLOCK where one can be opened (a terminal, a pipe), so that
 * the shell's stays as it was; a regular file or a socket as it is. */
static void open_out(struct transcript *t)
{
	struct stat st;
	t->out_fd = -1;
	if (fstat(STDOUT_FILENO, &st) < 0)
		return;
	t->out_fd = STDOUT_FILENO;
	if (S_ISREG(st.st_mode) || S_ISSOCK(st.st_mode))
		return;
	int p = open("/proc/self/fd/1", O_WRONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
	if (p >= 0) {
		t->out_fd = p;
		t->out_owned = 1;
	}
}

int transcript_open(struct transcript **out, int log_fd, uint64_t log_max)
{
	struct transcript *t = calloc(1, sizeof *t);
	*out = NULL;
	if (!t)
		return -ENOMEM;
	int rc = keep_init(&t->keep, log_max);
	if (rc < 0) {
		free(t);
		return rc;
	}
	keep_set_log(&t->keep, log_fd);
	t->log_max = log_max;
	t->master = t->slave = t->out_fd = -1;
	*out = t;
	return 0;
}

int transcript_start(struct transcript *t, int term, int *slave)
{
	struct termios modes;
	struct winsize ws;
	char name[128];
	*slave = -1;
	/* like the pty, only now: the sentinel must hold no copy of it */
	open_out(t);
	t->master = posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);
	if (t->master < 0)
		return -errno;
	if (grantpt(t->master) < 0 || unlockpt(t->master) < 0)
		return -errno;
	int e = ptsname_r(t->master, name, sizeof name);
	if (e)
		return -e;
	t->slave = open(name, O_RDWR | O_NOCTTY | O_CLOEXEC);
	if (t->slave < 0)
		return -errno;
	int fl = fcntl(t->master, F_GETFL);
	if (fl < 0 || fcntl(t->master, F_SETFL, fl | O_NONBLOCK) < 0)
		return -errno;
	/* the command's terminal starts as memsup's is: the same special
	 * characters and modes (memsup's is about to go raw), the same size */
	if (term >= 0 && tcgetattr(term, &modes) == 0)
		tcsetattr(t->slave, TCSANOW, &modes);
	if (term >= 0 && ioctl(term, TIOCGWINSZ, &ws) == 0)
		ioctl(t->slave, TIOCSWINSZ, &ws);
	*slave = t->slave;
	return 0;
}

void transcript_started(struct transcript *t, pid_t leader)
{
	close_fd(&t->slave);
	t->leader = leader;
}

int transcript_suspended(struct transcript *t)
{
	int s = t && t->suspended;
	if (t)
		t->suspended = 0;
	return s;
}

void transcript_redraw(struct transcript *t)
{
	pid_t fg = t && t->master >= 0 ? tcgetpgrp(t->master) : -1;
	if (fg > 0)
		killpg(fg, SIGWINCH);
}

/* Where in[from..len) the pty would turn a byte into SIGTSTP for the
 * leader's own group, which is orphaned (the kernel discards it there):
 * its index, or len. */
static size_t suspend_key(const struct transcript *t, size_t from, size_t len)
{
	struct termios m;
	if (t->leader <= 0 || tcgetattr(t->master, &m) < 0 || !(m.c_lflag & ISIG) ||
	    m.c_cc[VSUSP] == _POSIX_VDISABLE || tcgetpgrp(t->master) != t->leader)
		return len;
	const char *k = memchr(t->in + from, m.c_cc[VSUSP], len - from);
	return k ? (size_t)(k - t->in) : len;
}

void transcript_resize(struct transcript *t, int term)
{
	struct winsize ws;
	/* the pty signals its foreground group (SIGWINCH) when the size changes */
	if (t && t->master >= 0 && term >= 0 && ioctl(term, TIOCGWINSZ, &ws) == 0)
		ioctl(t->master, TIOCSWINSZ, &ws);
}

void transcript_poll_set(struct transcript *t, struct pollfd pfd[TRANSCRIPT_POLL_SLOTS],
			 int input)
{
	for (int i = 0; i < TRANSCRIPT_POLL_SLOTS; i++)
		pfd[i] = (struct pollfd){ -1, 0, 0 };
	if (!t || t->master < 0 || t->log_err)
		return;
	if (input && !t->in_done && t->in_len == 0 && !t->master_done)
		pfd[0] = (struct pollfd){ STDIN_FILENO, POLLIN, 0 };
	short ev = 0;
	if (!t->master_done && t->out_len == 0)
		ev |= POLLIN;
	if (!t->master_done && t->in_len > t->in_off)
		ev |= POLLOUT;
	if (ev)
		pfd[1] = (struct pollfd){ t->master, ev, 0 };
	/* held output waits for room, or (the pump's rounds spent) for the
	 * next pump: either way POLLOUT brings it, or nothing would */
	if (t->out_fd >= 0 && (t->out_full || t->out_len > t->out_off))
		pfd[2] = (struct pollfd){ t->out_fd, POLLOUT, 0 };
}

/* What was typed, on to the pty. */
static void pump_in(struct transcript *t, int readable)
{
	if (readable && t->in_len == 0 && !t->in_done) {
		ssize_t n = read(STDIN_FILENO, t->in, sizeof t->in);
		if (n > 0) {
			t->in_off = 0;
			t->in_len = (size_t)n;
		} else if (n == 0 || (errno != EAGAIN && errno != EINTR)) {
			t->in_done = 1; /* a hangup: SIGHUP ends the run */
		}
	}
	while (t->in_len > t->in_off && !t->master_done) {
		size_t end = suspend_key(t, t->in_off, t->in_len);
		if (end == t->in_off) {
			/* ^Z for the command's own group: stopped by memsup, the
			 * rest of what was typed kept for when it runs again */
			t->in_off++;
			t->suspended = 1;
			killpg(t->leader, SIGSTOP);
			return;
		}
		ssize_t k = write(t->master, t->in + t->in_off, end - t->in_off);
		if (k > 0) {
			t->in_off += (size_t)k;
			continue;
		}
		if (k < 0 && errno == EINTR)
			continue;
		if (k < 0 && errno == EAGAIN)
			return;
		break; /* the pty is gone: what was typed goes nowhere */
	}
	t->in_off = t->in_len = 0;
}

/* The held output on to memsup's stdout, without blocking. */
static void deliver(struct transcript *t)
{
	while (t->out_len > t->out_off && t->out_fd >= 0 && !t->out_full) {
		ssize_t k = write(t->out_fd, t->out + t->out_off, t->out_len - t->out_off);
		if (k > 0) {
			t->out_off += (size_t)k;
			continue;
		}
		if (k < 0 && errno == EINTR)
			continue;
		if (k < 0 && errno == EAGAIN) {
			t->out_full = 1;
			return;
		}
		/* the reader is gone, or the terminal: the log goes on alone */
		if (t->out_owned)
			close(t->out_fd);
		t->out_fd = -1;
	}
	if (t->out_off == t->out_len || t->out_fd < 0)
		t->out_off = t->out_len = 0;
}

/* buf into the log, or the part of it --log-max keeps.  0 or -errno. */
static int log_all(struct transcript *t, const char *buf, size_t n)
{
	int rc = keep_from_buf(&t->keep, 0, buf, n);
	return rc < 0 ? (t->log_err = rc) : 0;
}

/* What the pty shows: into the log, then on.  1 when something came. */
static int pump_out(struct transcript *t)
{
	int came = 0;
	for (int round = 0; round < TRANSCRIPT_ROUNDS; round++) {
		deliver(t);
		if (t->out_len > 0 || t->master_done || t->log_err)
			break;
		ssize_t n = read(t->master, t->out, sizeof t->out);
		if (n < 0 && (errno == EAGAIN || errno == EINTR))
			break;
		if (n <= 0) {
			t->master_done = 1; /* EIO: no slave open any more */
			break;
		}
		came = 1;
		t->bytes += (uint64_t)n;
		if (log_all(t, t->out, (size_t)n) < 0)
			break;
		t->out_off = 0;
		t->out_len = t->out_fd >= 0 ? (size_t)n : 0; /* no reader: the log alone */
	}
	return came;
}

int transcript_pump(struct transcript *t, const struct pollfd pfd[TRANSCRIPT_POLL_SLOTS])
{
	if (!t || t->master < 0 || t->log_err)
		return t ? t->log_err : 0;
	if (pfd[2].fd >= 0 && pfd[2].revents)
		t->out_full = 0;
	pump_in(t, pfd[0].fd >= 0 && pfd[0].revents);
	pump_out(t);
	return t->log_err;
}

int transcript_finish(struct transcript *t, const struct relay_stop *stop, uint64_t deadline_ns)
{
	if (!t || t->master < 0)
		return t ? t->log_err : 0;
	uint64_t idle_since = clock_mono_ns();
	int cut = 0;
	t->in_len = t->in_off = 0;
	while (!t->log_err) {
		size_t held = t->out_len - t->out_off;
		t->out_full = 0;
		if (pump_out(t) || t->out_len - t->out_off != held)
			idle_since = clock_mono_ns();
		if (t->master_done && t->out_len == 0)
			break;
		uint64_t now = clock_mono_ns();
		if ((deadline_ns && now >= deadline_ns) ||
		    (now - idle_since) / 1000000 > TRANSCRIPT_IDLE_MS) {
			cut = 1;
			break;
		}
		struct pollfd pfd[3] = {
			{ t->master_done || t->out_len ? -1 : t->master, POLLIN, 0 },
			{ t->out_len && t->out_fd >= 0 ? t->out_fd : -1, POLLOUT, 0 },
			{ stop ? stop->fd : -1, POLLIN, 0 },
		};
		int np = poll(pfd, 3, 100);
		if (np > 0 && pfd[2].revents && (!stop->stop || stop->stop(stop->ctx))) {
			cut = 1;
			break;
		}
	}
	/* a slow or stuck reader: the rest into the log only */
	if (cut) {
		if (t->out_owned)
			close_fd(&t->out_fd);
		t->out_fd = -1;
		while (!t->master_done && !t->log_err) {
			t->out_len = t->out_off = 0;
			ssize_t n = read(t->master, t->out, sizeof t->out);
			if (n <= 0)
				break;
			t->bytes += (uint64_t)n;
			log_all(t, t->out, (size_t)n);
		}
	}
	int rc = keep_finish(&t->keep);
	if (rc < 0 && !t->log_err)
		t->log_err = rc;
	return t->log_err;
}

void transcript_report(const struct transcript *t, struct relay_report *out)
{
	memset(out, 0, sizeof *out);
	out->mode = RELAY_INHERIT; /* the record names it from its terminal mode */
	out->logged = 1;
	if (!t)
		return;
	struct stat st;
	if (fstat(t->keep.log_fd, &st) == 0) {
		out->have_log_bytes = 1;
		out->log_bytes = (uint64_t)st.st_size; /* the marker line too */
	}
	out->bounded = t->log_max != KEEP_UNLIMITED;
	out->log_max = out->bounded ? t->log_max : 0;
	out->have_bytes = 1;
	out->bytes = t->bytes;
	out->left_out = keep_left_out(&t->keep, 0);
}

void transcript_close(struct transcript *t)
{
	if (!t)
		return;
	close_fd(&t->master);
	close_fd(&t->slave);
	if (t->out_owned)
		close_fd(&t->out_fd);
	keep_free(&t->keep);
	free(t);
}
