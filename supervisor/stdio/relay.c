/* relay.c: the command's stdout and stderr, passed through and logged
 * (see relay.h).
 *
 * One stream's bytes take this path (tee mode):
 *
 *   command --pipe--> src --tee--> dst (memsup's fd, when it is a pipe)
 *                      |    \-tee--> hold --splice/copy--> dst (any other)
 *                      \--keep--> stdout.log's head (splice), the tail's
 *                                 ring (read), or /dev/null (splice)
 *
 * tee(2) duplicates what is in src without consuming it; the same count is
 * then taken out of src by keep_from() (keep.h).  So the log and the
 * pass-through get the same bytes in the same order, and a byte leaves src
 * only once the log has kept it or counted it as left out.  No byte
 * crosses into memsup's memory except on the copy path (a socket, a file
 * opened O_APPEND, a target splice refuses) and for the tail: the last
 * log_max/2 bytes, which only the end of the output tells. */
#include "stdio/relay.h"
#include "base/clock.h"
#include "stdio/keep.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* The command's pipes get this capacity when the kernel allows it (the
 * default /proc/sys/fs/pipe-max-size): fewer wake-ups of memsup per byte. */
#define RELAY_PIPE_BYTES (1 << 20)
#define RELAY_PIPE_DEFAULT_PAGES 16 /* a new pipe's capacity (pipe(7)) */
#define RELAY_CHUNK (1 << 20)       /* at most this per tee/splice call */
#define RELAY_COPY_BYTES (1 << 16)  /* the copy path's buffer */
#define RELAY_ROUNDS 8              /* chunks per stream per pump: the loop stays lively */
/* After a pump that found less than half a pipe, memsup looks at the pipes
 * again only a nap later: a command that writes 4 KiB at a time would
 * otherwise wake memsup for every write, and the wake-ups, not the bytes,
 * would be most of memsup's CPU.  The nap is how long the command took to
 * write what the pump found, scaled to half a pipe (so that at the same
 * pace the pipe is half full at the next look), from RELAY_NAP_NS to
 * RELAY_NAP_MAX_NS.  A fast writer fills half a pipe between two looks and
 * is never made to wait by a nap; one that speeds up sharply may wait for
 * the rest of one. */
#define RELAY_NAP_NS 1000000ull
#define RELAY_NAP_MAX_NS 5000000ull

_Static_assert(RELAY_LOG_UNLIMITED == KEEP_UNLIMITED, "one word for no bound");
_Static_assert(RELAY_STREAMS == KEEP_STREAMS, "the log keeps what the relay reads");

static const char *const mode_names[RELAY_MODE_COUNT] = { "tee", "log", "inherit" };
static const char *const end_names[RELAY_END_COUNT] = {
	"complete", "not_open", "reader_gone", "write_failed", "cut",
};

const char *relay_mode_name(enum relay_mode mode)
{
	return (unsigned)mode < RELAY_MODE_COUNT ? mode_names[mode] : NULL;
}

int relay_mode_parse(const char *name, enum relay_mode *out)
{
	for (unsigned i = 0; i < RELAY_MODE_COUNT; i++)
		if (strcmp(name, mode_names[i]) == 0) {
			*out = (enum relay_mode)i;
			return 0;
		}
	return -EINVAL;
}

const char *relay_end_name(enum relay_end end)
{
	return (unsigned)end < RELAY_END_COUNT ? end_names[end] : NULL;
}

/* How bytes reach memsup's own fd. */
enum sink {
	SINK_NONE,   /* they don't: closed at the start, or the reader went */
	SINK_PIPE,   /* tee(2) from src straight into it */
	SINK_SPLICE, /* through `hold`, then splice(2) */
	SINK_COPY,   /* through `hold`, then read(2) + write(2)/send(2) */
};

struct relay_stream {
	int idx;             /* 0: stdout, 1: stderr (in log mode: both) */
	int src;             /* memsup's read end of the command's pipe; -1: closed */
	int cmd_end;         /* the command's write end (its fd 1 or 2); -1 after the start */
	int keeper;          /* a write end opened once src closed early: keeps what the
				command wrote after memsup's last read; -1: none */
	int dst;             /* where the pass-through goes; -1: nowhere */
	int dst_owned;       /* dst is a private description memsup opened */
	int dst_socket;      /* send(MSG_DONTWAIT) instead of write */
	enum sink sink;
	int hold[2];         /* the bytes logged but not yet passed on (not SINK_PIPE) */
	size_t held;         /* bytes in hold */
	char *buf;           /* SINK_COPY: bytes taken from hold, not yet written */
	size_t boff, blen;
	int out_full;        /* dst said EAGAIN: wait for POLLOUT */
	int src_stalled;     /* src has bytes but nowhere to put them yet */
	int drained;         /* the last take took all src had */
	int hup;             /* the last poll said src's writers are gone */
	struct relay_stream_report rep;
};

struct relay {
	enum relay_mode mode;
	int relaying;        /* memsup reads the command's output: tee, or log
				with a bound (one pipe for both streams) */
	uint64_t log_max;    /* KEEP_UNLIMITED: no bound */
	struct keep keep;    /* what of it stdout.log keeps */
	int log_fd;
	int log_err;         /* -errno of a write to stdout.log that failed: the relay
				moves nothing more; 0: none */
	uint64_t nap_until;  /* CLOCK_MONOTONIC ns before which no src is looked at */
	uint64_t took_ns;    /* when a pump last took bytes */
	size_t nap_bytes;    /* half the smallest of the command's pipes */
	struct relay_stream s[RELAY_STREAMS];
};

static void close_fd(int *fd)
{
	if (*fd >= 0)
		close(*fd);
	*fd = -1;
}

/* A closed fd 0, 1 or 2 gets /dev/null, close-on-exec: the next file memsup
 * opens cannot take its number (and be written to as stdout), and the
 * command, after exec, finds it closed as it would without memsup.
 * Returns 1 when fd was closed. */
static int guard_stdio(int fd)
{
	if (fcntl(fd, F_GETFD) >= 0 || errno != EBADF)
		return 0;
	int n = open("/dev/null", (fd == 0 ? O_RDONLY : O_WRONLY) | O_CLOEXEC);
	if (n >= 0 && n != fd) {
		dup3(n, fd, O_CLOEXEC);
		close(n);
	}
	return 1;
}

/* Where stream s passes its bytes: memsup's own fd `fd` as it is, or a
 * private non-blocking description of the same device. */
static void choose_sink(struct relay_stream *s, int fd, int was_closed)
{
	struct stat st;
	s->dst = -1;
	s->sink = SINK_NONE;
	if (was_closed || fstat(fd, &st) < 0) {
		s->rep.end = RELAY_END_NOT_OPEN;
		return;
	}
	s->dst = fd;
	if (S_ISFIFO(st.st_mode)) {
		/* SPLICE_F_NONBLOCK makes tee/splice into a pipe non-blocking
		 * without touching the description the shell shares */
		s->sink = SINK_PIPE;
		/* A shell's pipe holds 64 KiB: every 64 KiB would cost memsup a
		 * wake-up and a tee, and most of its CPU in a fast pipeline.  A
		 * pipe of the kernel's default size grows to the command's (where
		 * the kernel refuses, it stays): the reader sees the same bytes,
		 * the command may only get further ahead of it.  A pipe sized on
		 * purpose is left as it is. */
		if (fcntl(fd, F_GETPIPE_SZ) == RELAY_PIPE_DEFAULT_PAGES * sysconf(_SC_PAGESIZE))
			(void)fcntl(fd, F_SETPIPE_SZ, RELAY_PIPE_BYTES);
	} else if (S_ISSOCK(st.st_mode)) {
		/* splice into a socket blocks whatever its flags say: copy, with
		 * MSG_DONTWAIT per call */
		s->sink = SINK_COPY;
		s->dst_socket = 1;
	} else if (S_ISREG(st.st_mode) || S_ISBLK(st.st_mode)) {
		/* a disk does not hang; splice refuses an O_APPEND target */
		int fl = fcntl(fd, F_GETFL);
		s->sink = fl >= 0 && (fl & O_APPEND) ? SINK_COPY : SINK_SPLICE;
	} else {
		/* A terminal or another device: a write can block for good (^S, a
		 * stopped pty reader).  Setting O_NONBLOCK on the shared description
		 * would surprise the shell, so open the device again, privately. */
		char path[64];
		snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
		int p = open(path, O_WRONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
		if (p >= 0) {
			s->dst = p;
			s->dst_owned = 1;
		}
		s->sink = SINK_SPLICE;
	}
}

/* The command's pipe for stream s. */
static int open_pipe(struct relay_stream *s)
{
	int p[2];
	if (pipe2(p, O_CLOEXEC) < 0)
		return -errno;
	s->src = p[0];
	s->cmd_end = p[1];
	/* a bigger pipe, fewer wake-ups; the default one works too */
	(void)fcntl(p[1], F_SETPIPE_SZ, RELAY_PIPE_BYTES);
	return 0;
}

static int open_stream(struct relay_stream *s, int fd, int was_closed)
{
	int rc = open_pipe(s);
	if (rc < 0)
		return rc;
	choose_sink(s, fd, was_closed);
	if (s->sink == SINK_SPLICE || s->sink == SINK_COPY) {
		if (pipe2(s->hold, O_CLOEXEC) < 0)
			return -errno;
		/* as big as src, so that one tee can take all of it */
		int size = fcntl(s->cmd_end, F_GETPIPE_SZ);
		if (size > 0)
			(void)fcntl(s->hold[1], F_SETPIPE_SZ, size);
	}
	return 0;
}

int relay_open(struct relay **out, enum relay_mode mode, uint64_t log_max)
{
	int closed[3];
	*out = NULL;
	for (int fd = 0; fd < 3; fd++)
		closed[fd] = guard_stdio(fd);
	struct relay *r = calloc(1, sizeof *r);
	if (!r)
		return -ENOMEM;
	r->mode = mode;
	r->log_fd = -1;
	r->log_max = mode == RELAY_INHERIT ? KEEP_UNLIMITED : log_max;
	r->relaying = mode == RELAY_TEE || (mode == RELAY_LOG && log_max != RELAY_LOG_UNLIMITED);
	for (int i = 0; i < RELAY_STREAMS; i++) {
		struct relay_stream *s = &r->s[i];
		s->idx = i;
		s->src = s->cmd_end = s->keeper = s->dst = s->hold[0] = s->hold[1] = -1;
	}
	int rc = keep_init(&r->keep, r->relaying ? r->log_max : KEEP_UNLIMITED);
	if (rc == 0 && mode == RELAY_TEE) {
		for (int i = 0; i < RELAY_STREAMS && rc == 0; i++)
			rc = open_stream(&r->s[i], i + 1, closed[i + 1]);
	} else if (rc == 0 && r->relaying) {
		/* log, bounded: one pipe is the command's stdout and stderr, so
		 * memsup reads both in the order they were written; nothing is
		 * passed on */
		rc = open_pipe(&r->s[0]);
	}
	if (rc < 0) {
		relay_close(r);
		return rc;
	}
	r->nap_bytes = RELAY_PIPE_BYTES / 2;
	for (int i = 0; i < RELAY_STREAMS; i++) {
		int size = r->s[i].cmd_end >= 0 ? fcntl(r->s[i].cmd_end, F_GETPIPE_SZ) : -1;
		if (size > 0 && (size_t)size / 2 < r->nap_bytes)
			r->nap_bytes = (size_t)size / 2;
	}
	*out = r;
	return 0;
}

int relay_set_log(struct relay *r, int log_fd)
{
	r->log_fd = log_fd;
	keep_set_log(&r->keep, log_fd);
	if (!r->relaying || log_fd < 0)
		return 0;
	int fl = fcntl(log_fd, F_GETFL);
	if (fl < 0 || fcntl(log_fd, F_SETFL, fl & ~O_APPEND) < 0)
		return -errno;
	return 0;
}

void relay_child_fds(const struct relay *r, int *out_fd, int *err_fd)
{
	switch (r->mode) {
	case RELAY_TEE:
		*out_fd = r->s[0].cmd_end;
		*err_fd = r->s[1].cmd_end;
		break;
	case RELAY_LOG:
		*out_fd = *err_fd = r->relaying ? r->s[0].cmd_end : r->log_fd;
		break;
	default:
		*out_fd = *err_fd = -1;
		break;
	}
}

void relay_started(struct relay *r)
{
	for (int i = 0; i < RELAY_STREAMS; i++)
		close_fd(&r->s[i].cmd_end);
}

/* ---- moving bytes --------------------------------------------------------- */

static size_t pending(const struct relay_stream *s)
{
	return s->held + (s->blen - s->boff);
}

static int bytes_in(int fd)
{
	int n = 0;
	return ioctl(fd, FIONREAD, &n) == 0 ? n : 0;
}

/* Exactly n bytes, known to be in `from`, out of it and into what the log
 * keeps (keep.h: the head, the tail, or left out).  0 or -errno. */
static int log_from(struct relay *r, struct relay_stream *s, int from, size_t n)
{
	int rc = keep_from(&r->keep, s->idx, from, n);
	if (rc < 0)
		return r->log_err = rc;
	s->rep.bytes += (uint64_t)n;
	return 0;
}

/* Everything `from` holds now into the log, nothing passed on (the
 * pass-through is over); only what was there at the start, so that a fast
 * writer cannot keep memsup here.  0 or -errno. */
static int log_rest(struct relay *r, struct relay_stream *s, int from)
{
	size_t left = (size_t)bytes_in(from);
	return left > 0 ? log_from(r, s, from, left) : 0;
}

/* The stream's reader is gone, or writing to it failed with `err`: no more
 * pass-through.  What src holds goes into the log; then memsup's read end
 * closes, so that the command's next write gets EPIPE (SIGPIPE) as it
 * would without memsup.  A write end opened first through /proc keeps the
 * pipe's buffer alive: bytes written between the last read and the close
 * are still in it at the end (relay_finish).  0 or -errno of the log. */
static int stop_passing(struct relay *r, struct relay_stream *s, int err)
{
	if (s->rep.end == RELAY_END_COMPLETE) {
		s->rep.end = err == EPIPE || err == ECONNRESET ? RELAY_END_READER_GONE
							       : RELAY_END_WRITE_FAILED;
		s->rep.err = s->rep.end == RELAY_END_WRITE_FAILED ? err : 0;
	}
	s->sink = SINK_NONE;
	s->held = s->boff = s->blen = 0;
	s->out_full = s->src_stalled = 0;
	close_fd(&s->hold[0]);
	close_fd(&s->hold[1]);
	if (s->dst_owned)
		close_fd(&s->dst);
	s->dst = -1;
	if (s->src < 0)
		return 0;
	int rc = log_rest(r, s, s->src);
	char path[64];
	snprintf(path, sizeof path, "/proc/self/fd/%d", s->src);
	s->keeper = open(path, O_WRONLY | O_NONBLOCK | O_CLOEXEC);
	close_fd(&s->src);
	return rc;
}

/* The held bytes on to dst, without blocking.  0, or -errno of the log
 * (stop_passing). */
static int deliver(struct relay *r, struct relay_stream *s)
{
	while (pending(s) > 0 && !s->out_full) {
		ssize_t k;
		if (s->sink == SINK_SPLICE) {
			k = splice(s->hold[0], NULL, s->dst, NULL, s->held, SPLICE_F_NONBLOCK);
			if (k < 0 && errno == EINVAL) {
				s->sink = SINK_COPY; /* a target splice refuses */
				continue;
			}
			if (k > 0)
				s->held -= (size_t)k;
		} else {
			if (s->boff == s->blen) {
				if (!s->buf && !(s->buf = malloc(RELAY_COPY_BYTES)))
					return stop_passing(r, s, ENOMEM);
				size_t want = s->held < RELAY_COPY_BYTES ? s->held : RELAY_COPY_BYTES;
				ssize_t got = read(s->hold[0], s->buf, want);
				if (got <= 0)
					return stop_passing(r, s, got < 0 ? errno : EIO);
				s->boff = 0;
				s->blen = (size_t)got;
				s->held -= (size_t)got;
			}
			const char *p = s->buf + s->boff;
			size_t n = s->blen - s->boff;
			k = s->dst_socket ? send(s->dst, p, n, MSG_DONTWAIT | MSG_NOSIGNAL)
					  : write(s->dst, p, n);
			if (k > 0)
				s->boff += (size_t)k;
		}
		if (k > 0) {
			s->rep.passed += (uint64_t)k;
			continue;
		}
		if (k < 0 && errno == EINTR)
			continue;
		if (k < 0 && errno == EAGAIN) {
			s->out_full = 1;
			return 0;
		}
		return stop_passing(r, s, k < 0 ? errno : EIO);
	}
	return 0;
}

/* New bytes from src: duplicated to where they pass on, then the same
 * count into the log.  Returns the count (0: nothing now), or -errno of
 * the log. */
static ssize_t take(struct relay *r, struct relay_stream *s)
{
	size_t have = (size_t)bytes_in(s->src);
	s->drained = 0;
	if (have == 0) {
		/* poll said the writers are gone (which no byte can follow),
		 * and the pipe is empty: its end */
		if (s->hup)
			close_fd(&s->src);
		return 0;
	}
	size_t want = have < RELAY_CHUNK ? have : RELAY_CHUNK;
	if (s->sink == SINK_NONE) {
		int rc = log_from(r, s, s->src, want);
		s->drained = want == have;
		return rc < 0 ? rc : (ssize_t)want;
	}
	int to = s->sink == SINK_PIPE ? s->dst : s->hold[1];
	ssize_t n = tee(s->src, to, want, SPLICE_F_NONBLOCK);
	if (n == 0)
		return 0; /* nothing to duplicate after all: the next look sees */
	if (n < 0) {
		if (errno == EINTR)
			return 0;
		if (errno == EAGAIN) {
			/* src has bytes, and the way on is full */
			s->src_stalled = 1;
			if (s->sink == SINK_PIPE)
				s->out_full = 1;
			return 0;
		}
		/* EPIPE: the pipe's reader went (a tee into our own hold pipe
		 * cannot fail so; if it does, the pass-through stops all the same) */
		int rc = stop_passing(r, s, errno);
		return rc < 0 ? rc : 0;
	}
	if (s->sink == SINK_PIPE)
		s->rep.passed += (uint64_t)n;
	else
		s->held += (size_t)n;
	s->drained = (size_t)n == have;
	int rc = log_from(r, s, s->src, (size_t)n);
	return rc < 0 ? rc : n;
}

/* Move what can move now; *took: how many bytes came from src. */
static int stream_pump(struct relay *r, struct relay_stream *s, size_t *took)
{
	*took = 0;
	for (int round = 0; round < RELAY_ROUNDS; round++) {
		int rc = deliver(r, s);
		if (rc < 0)
			return rc;
		if (s->src < 0 || s->src_stalled)
			break;
		ssize_t n = take(r, s);
		if (n < 0)
			return (int)n;
		if (n == 0)
			break;
		*took += (size_t)n;
		if (s->drained) {
			/* src is drained: what trickles in now waits for the next
			 * look, where it comes in larger pieces (each look costs
			 * calls whatever it finds) */
			if ((rc = deliver(r, s)) < 0)
				return rc;
			break;
		}
	}
	/* stalled with nothing to wait on (dst took all it was offered, the
	 * hold pipe is still full): look again at the next turn of the loop */
	if (s->src_stalled && !s->out_full)
		s->src_stalled = 0;
	return 0;
}

void relay_poll_set(struct relay *r, struct pollfd pfd[RELAY_POLL_SLOTS])
{
	uint64_t now = clock_mono_ns();
	for (int i = 0; i < RELAY_STREAMS; i++) {
		const struct relay_stream *s = &r->s[i];
		struct pollfd *in = &pfd[2 * i], *out = &pfd[2 * i + 1];
		int want_in = r->relaying && !r->log_err && s->src >= 0 &&
			      !s->src_stalled && now >= r->nap_until;
		int want_out = r->relaying && !r->log_err && s->dst >= 0 &&
			       s->out_full;
		*in = (struct pollfd){ want_in ? s->src : -1, POLLIN, 0 };
		*out = (struct pollfd){ want_out ? s->dst : -1, POLLOUT, 0 };
	}
}

int relay_pump(struct relay *r, const struct pollfd pfd[RELAY_POLL_SLOTS])
{
	if (!r->relaying || r->log_err)
		return 0;
	int go = 0;
	for (int i = 0; i < RELAY_POLL_SLOTS; i++)
		go |= pfd[i].fd >= 0 && pfd[i].revents;
	if (!go)
		return 0;
	/* Both streams at once, stdout first, whichever woke memsup: what the
	 * two pipes hold goes into the log at the same moment, so that the
	 * streams' interleaving there is off by at most one look at them. */
	size_t took_all = 0;
	for (int i = 0; i < RELAY_STREAMS; i++) {
		struct relay_stream *s = &r->s[i];
		const struct pollfd *in = &pfd[2 * i], *out = &pfd[2 * i + 1];
		if (out->fd >= 0 && out->revents)
			s->out_full = s->src_stalled = 0; /* room (or an error to meet) */
		s->hup = in->fd >= 0 && (in->revents & POLLHUP);
		size_t took;
		int rc = stream_pump(r, s, &took);
		if (rc < 0)
			return rc;
		took_all += took;
	}
	if (took_all > 0) {
		uint64_t now = clock_mono_ns();
		if (took_all < r->nap_bytes) {
			uint64_t nap = RELAY_NAP_NS;
			if (r->took_ns && now > r->took_ns) {
				double pace = (double)(now - r->took_ns) / (double)took_all;
				double want = pace * (double)r->nap_bytes;
				nap = want > RELAY_NAP_MAX_NS ? RELAY_NAP_MAX_NS
					: want > RELAY_NAP_NS ? (uint64_t)want : RELAY_NAP_NS;
			}
			r->nap_until = now + nap;
		}
		r->took_ns = now;
	}
	return 0;
}

uint64_t relay_wake_ns(const struct relay *r)
{
	return r->nap_until > clock_mono_ns() ? r->nap_until : 0;
}

/* ---- the end ---------------------------------------------------------------- */

/* Whether stream s still has bytes to pass on; with every writer gone, an
 * empty src is as good as its end (a write end that something outside the
 * tree holds must not keep memsup waiting). */
static int stream_busy(struct relay_stream *s)
{
	if (s->src >= 0 && !s->src_stalled && bytes_in(s->src) == 0)
		close_fd(&s->src);
	return s->src >= 0 || (s->sink != SINK_NONE && pending(s) > 0);
}

/* What the command wrote after memsup closed src early, kept by the
 * keeper: read it through a read end opened again, into the log. */
static int log_kept(struct relay *r, struct relay_stream *s)
{
	if (s->keeper < 0)
		return 0;
	char path[64];
	snprintf(path, sizeof path, "/proc/self/fd/%d", s->keeper);
	int rd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	int rc = rd >= 0 ? log_rest(r, s, rd) : 0;
	close_fd(&rd);
	close_fd(&s->keeper);
	return rc;
}

int relay_finish(struct relay *r, const struct relay_stop *stop, uint64_t deadline_ns)
{
	if (!r->relaying || r->log_err)
		return r->log_err;
	int rc = 0, cut = 0;
	r->nap_until = 0; /* the writers are gone: nothing more to wait for */
	for (;;) {
		int busy = 0;
		for (int i = 0; i < RELAY_STREAMS && rc == 0; i++) {
			size_t took;
			r->s[i].out_full = r->s[i].src_stalled = 0;
			rc = stream_pump(r, &r->s[i], &took);
			busy |= stream_busy(&r->s[i]);
		}
		if (rc < 0 || !busy)
			break;
		/* a slow reader: wait for it, as the command would have */
		struct pollfd pfd[RELAY_POLL_SLOTS + 1];
		relay_poll_set(r, pfd);
		int stop_fd = stop ? stop->fd : -1;
		pfd[RELAY_POLL_SLOTS] = (struct pollfd){ stop_fd, POLLIN, 0 };
		int timeout = -1;
		if (deadline_ns) {
			uint64_t now = clock_mono_ns();
			if (now >= deadline_ns) {
				cut = 1;
				break;
			}
			uint64_t ms = (deadline_ns - now + 999999) / 1000000;
			timeout = ms > 60000 ? 60000 : (int)ms;
		}
		int any = stop_fd >= 0;
		for (int i = 0; i < RELAY_POLL_SLOTS; i++)
			any |= pfd[i].fd >= 0;
		if (!any)
			break; /* nothing could wake us: do not wait for ever */
		int np = poll(pfd, RELAY_POLL_SLOTS + 1, timeout);
		if (np > 0 && pfd[RELAY_POLL_SLOTS].revents && (!stop->stop || stop->stop(stop->ctx))) {
			cut = 1;
			break;
		}
	}
	for (int i = 0; i < RELAY_STREAMS && rc == 0; i++) {
		struct relay_stream *s = &r->s[i];
		if (cut && (s->src >= 0 || pending(s) > 0) && s->rep.end == RELAY_END_COMPLETE)
			s->rep.end = RELAY_END_CUT;
		if (s->src >= 0)
			rc = log_rest(r, s, s->src);
		if (rc == 0)
			rc = log_kept(r, s);
		close_fd(&s->src);
	}
	/* every byte is in: the tail and the marker where bytes were left out */
	if (rc == 0 && (rc = keep_finish(&r->keep)) < 0)
		r->log_err = rc;
	return rc;
}

void relay_report(const struct relay *r, struct relay_report *out)
{
	memset(out, 0, sizeof *out);
	out->mode = r->mode;
	out->logged = r->mode != RELAY_INHERIT;
	struct stat st;
	if (out->logged && r->log_fd >= 0 && fstat(r->log_fd, &st) == 0) {
		out->have_log_bytes = 1;
		out->log_bytes = (uint64_t)st.st_size;
	}
	out->bounded = out->logged && r->log_max != RELAY_LOG_UNLIMITED;
	out->log_max = out->bounded ? r->log_max : 0;
	out->have_bytes = r->relaying;
	for (int i = 0; i < RELAY_STREAMS; i++) {
		struct relay_stream_report *s = &out->stream[i];
		*s = r->s[i].rep;
		s->logged = keep_logged(&r->keep, i);
		s->left_out = keep_left_out(&r->keep, i);
		out->bytes += s->bytes;
		out->left_out += s->left_out;
	}
	out->have_streams = r->mode == RELAY_TEE;
	if (!out->have_streams)
		memset(out->stream, 0, sizeof out->stream);
}

void relay_close(struct relay *r)
{
	if (!r)
		return;
	for (int i = 0; i < RELAY_STREAMS; i++) {
		struct relay_stream *s = &r->s[i];
		close_fd(&s->src);
		close_fd(&s->cmd_end);
		close_fd(&s->keeper);
		close_fd(&s->hold[0]);
		close_fd(&s->hold[1]);
		if (s->dst_owned)
			close_fd(&s->dst);
		free(s->buf);
	}
	keep_free(&r->keep);
	free(r);
}
