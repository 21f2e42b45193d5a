/* outfile.c: the MEMTRACE_OUT file as an output channel (see outfile.h):
 * opened without waiting, written with SIGPIPE held off, failures said on
 * the original stderr.  Async-signal-safe: raw system calls, stack buffers. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <time.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <termios.h>

#include "base/errfd.h"
#include "base/sys.h"
#include "record.h"
#include "report/outfile.h"
#include "textbuf.h"

void outfile_failed(const char *path, const char *step, int err)
{
	char line[PATH_MAX + 160];
	struct textbuf s;
	struct stat st;
	textbuf_init(&s, line, sizeof line);
	textbuf_add(&s, "memtrace[");
	textbuf_add_u64(&s, (uint64_t)sys_getpid());
	textbuf_add(&s, "]: " MT_ENV_OUT " ");
	textbuf_add(&s, path);
	textbuf_add(&s, ": not written: ");
	textbuf_add(&s, step);
	textbuf_add(&s, ": ");
	errfd_add_errno(&s, err);
	/* ENXIO says nothing a person recognises; what the path is does.
	 * Said only where it is so: no guess for other errors. */
	if (err == ENXIO &&
	    sys_call6(SYS_newfstatat, AT_FDCWD, (long)path, (long)&st, AT_SYMLINK_NOFOLLOW, 0,
		      0) == 0 &&
	    S_ISFIFO(st.st_mode))
		textbuf_add(&s, ", a FIFO that no process has open for reading");
	line[s.len] = '\n'; /* over the NUL: cut or not, len < sizeof line */
	errfd_write(line, s.len + 1);
}

/* 1 if fd is a terminal (TCGETS succeeds, as in isatty(3)). */
static int outfile_is_tty(int fd)
{
	struct termios t; /* larger than the kernel's struct termios */
	return sys_call6(SYS_ioctl, fd, TCGETS, (long)&t, 0, 0, 0) == 0;
}

int outfile_open(const char *path)
{
	struct stat st;
	/* O_NONBLOCK: opening a FIFO that no process reads would wait for a
	 * reader, at the program's exit, for as long as none comes (ENXIO
	 * instead); a device may wait for its line.  O_NOCTTY: a terminal
	 * named here must not become the program's controlling one. */
	int fd = sys_open(path,
			  O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW | O_NOCTTY |
				  O_NONBLOCK,
			  0644);
	if (fd < 0) {
		outfile_failed(path, "open", -fd);
		return fd;
	}
	/* Open, the writes should be whole: a file, a terminal, and a FIFO
	 * whose reader is there (it drains what it opened) are written as the
	 * program's own writes would be, blocking.  Any other device stays
	 * non-blocking: a short write there is an error said, not a wait. */
	if (sys_call6(SYS_fstat, fd, (long)&st, 0, 0, 0, 0) == 0 &&
	    (S_ISREG(st.st_mode) || S_ISFIFO(st.st_mode) || outfile_is_tty(fd))) {
		long fl = sys_call6(SYS_fcntl, fd, F_GETFL, 0, 0, 0, 0);
		if (fl >= 0)
			sys_call6(SYS_fcntl, fd, F_SETFL, fl & ~(long)O_NONBLOCK, 0, 0, 0);
	}
	return fd;
}

/* The kernel's sigset size (glibc's sigset_t is larger). */
#define OUTFILE_SIGSET_BYTES (_NSIG / 8)

void outfile_guard_begin(struct outfile_guard *g)
{
	sigset_t pipe_only, pending;
	sigemptyset(&pipe_only);
	sigaddset(&pipe_only, SIGPIPE);
	g->blocked = sys_call6(SYS_rt_sigprocmask, SIG_BLOCK, (long)&pipe_only, (long)&g->old,
			       OUTFILE_SIGSET_BYTES, 0, 0) == 0;
	/* one of the program's own, pending already, is left to it */
	g->pending = g->blocked &&
		     sys_call6(SYS_rt_sigpending, (long)&pending, OUTFILE_SIGSET_BYTES, 0, 0, 0,
			       0) == 0 &&
		     sigismember(&pending, SIGPIPE);
}

void outfile_guard_end(struct outfile_guard *g, int rc)
{
	if (!g->blocked)
		return;
	if (rc == -EPIPE && !g->pending) {
		/* ours, raised by the write: taken before the mask goes back */
		sigset_t pipe_only;
		struct timespec zero = { 0, 0 };
		sigemptyset(&pipe_only);
		sigaddset(&pipe_only, SIGPIPE);
		sys_call6(SYS_rt_sigtimedwait, (long)&pipe_only, 0, (long)&zero,
			  OUTFILE_SIGSET_BYTES, 0, 0);
	}
	sys_call6(SYS_rt_sigprocmask, SIG_SETMASK, (long)&g->old, 0, OUTFILE_SIGSET_BYTES, 0, 0);
}
