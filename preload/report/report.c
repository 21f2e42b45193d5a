/* report.c: what the shim says when an image ends, and where (see
 * report.h); render.c makes the words. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <string.h>
#include <time.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <termios.h>

#include "base/config.h"
#include "base/errfd.h"
#include "base/sys.h"
#include "textbuf.h"
#include "report/render.h"
#include "report/report.h"
#include "report/summary.h"
#include "report/topsites.h"

int report_expand_path(const char *pattern, int pid, char *out, size_t cap)
{
	struct textbuf s;
	textbuf_init(&s, out, cap);
	for (const char *p = pattern; *p; p++) {
		if (p[0] == '%' && p[1] == 'p') {
			textbuf_add_u64(&s, (uint64_t)(uint32_t)pid);
			p++;
		} else if (p[0] == '%' && p[1] == '%') {
			textbuf_add(&s, "%");
			p++;
		} else {
			textbuf_add_n(&s, p, 1);
		}
	}
	return s.truncated ? -ENAMETOOLONG : 0;
}

void report_out_failed(const char *path, const char *step, int err)
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
static int report_is_tty(int fd)
{
	struct termios t; /* larger than the kernel's struct termios */
	return sys_call6(SYS_ioctl, fd, TCGETS, (long)&t, 0, 0, 0) == 0;
}

int report_out_open(const char *path)
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
		report_out_failed(path, "open", -fd);
		return fd;
	}
	/* Open, the writes should be whole: a file, a terminal, and a FIFO
	 * whose reader is there (it drains what it opened) are written as the
	 * program's own writes would be, blocking.  Any other device stays
	 * non-blocking: a short write there is an error said, not a wait. */
	if (sys_call6(SYS_fstat, fd, (long)&st, 0, 0, 0, 0) == 0 &&
	    (S_ISREG(st.st_mode) || S_ISFIFO(st.st_mode) || report_is_tty(fd))) {
		long fl = sys_call6(SYS_fcntl, fd, F_GETFL, 0, 0, 0, 0);
		if (fl >= 0)
			sys_call6(SYS_fcntl, fd, F_SETFL, fl & ~(long)O_NONBLOCK, 0, 0, 0);
	}
	return fd;
}

/* The kernel's sigset size (glibc's sigset_t is larger). */
#define REPORT_SIGSET_BYTES (_NSIG / 8)

void report_pipe_guard_begin(struct report_pipe_guard *g)
{
	sigset_t pipe_only, pending;
	sigemptyset(&pipe_only);
	sigaddset(&pipe_only, SIGPIPE);
	g->blocked = sys_call6(SYS_rt_sigprocmask, SIG_BLOCK, (long)&pipe_only, (long)&g->old,
			       REPORT_SIGSET_BYTES, 0, 0) == 0;
	/* one of the program's own, pending already, is left to it */
	g->pending = g->blocked &&
		     sys_call6(SYS_rt_sigpending, (long)&pending, REPORT_SIGSET_BYTES, 0, 0, 0,
			       0) == 0 &&
		     sigismember(&pending, SIGPIPE);
}

void report_pipe_guard_end(struct report_pipe_guard *g, int rc)
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
			  REPORT_SIGSET_BYTES, 0, 0);
	}
	sys_call6(SYS_rt_sigprocmask, SIG_SETMASK, (long)&g->old, 0, REPORT_SIGSET_BYTES, 0, 0);
}

static int report_speaks_alone(const struct mt_record *r);

void report_end(const struct mt_record *r)
{
	if (config.out[0] && config.out_per_image) {
		char path[PATH_MAX];
		int fd, rc;
		if (report_expand_path(config.out, r->pid, path, sizeof path) != 0) {
			report_out_failed(config.out, "the name with %p replaced", ENAMETOOLONG);
		} else if ((fd = report_out_open(path)) >= 0) {
			struct report_pipe_guard g;
			report_pipe_guard_begin(&g);
			rc = render_json(r, fd);
			report_pipe_guard_end(&g, rc);
			sys_close(fd);
			if (rc < 0)
				report_out_failed(path, "write", -rc);
		}
	}
	if (report_speaks_alone(r)) {
		char buf[1024];
		size_t n = render_summary(r, buf, sizeof buf);
		errfd_write(buf, n);
		topsites_write(r);
	}
	if (summary_is_root(r))
		summary_end(r);
}

/* Its own block: MEMTRACE_SUMMARY=each, or no tree could be made; never in
 * a user's own MEMTRACE_DIR nor with MEMTRACE_OUT (the records or the JSON
 * are the user's output). */
static int report_speaks_alone(const struct mt_record *r)
{
	(void)r;
	return !config.quiet && !config.out[0] &&
	       (!config.dir[0] || (config.tree_pid && config.summary_each));
}

int report_will_speak(const struct mt_record *r)
{
	return report_speaks_alone(r) ||
	       (!config.quiet && !config.summary_each && !config.out[0] && summary_is_root(r));
}
