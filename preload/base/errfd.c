/* errfd.c: the program's original stderr (see errfd.h). */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>

#include "base/config.h"
#include "base/errfd.h"
#include "base/sys.h"
#include "textbuf.h"

static struct {
	int known;        /* fd 2 was open at start */
	dev_t dev;
	ino_t ino;
	mode_t type;      /* S_IFMT bits */
	int dup_fd;       /* taken when the program starts to end; -1 none */
	/* terminal or regular file: where to open it again ("" if not);
	 * kept with config's strings, not in a PATH_MAX array here: the
	 * array made the shim's small variables one page longer, one more
	 * page fault at every start */
	const char *path;
} errfd = { 0, 0, 0, 0, -1, "" };

static int errfd_stat(int fd, struct stat *st)
{
	return (int)sys_call6(SYS_fstat, fd, (long)st, 0, 0, 0, 0);
}

static int errfd_is_original(int fd)
{
	struct stat st;
	return errfd_stat(fd, &st) == 0 && st.st_dev == errfd.dev && st.st_ino == errfd.ino;
}

void errfd_note_start(void)
{
	struct stat st;
	char link[PATH_MAX];
	const char *kept;
	long n;
	if (errfd_stat(2, &st) != 0)
		return;
	errfd.known = 1;
	errfd.dev = st.st_dev;
	errfd.ino = st.st_ino;
	errfd.type = st.st_mode & S_IFMT;
	if (errfd.type != S_IFCHR && errfd.type != S_IFREG)
		return;
	n = sys_call6(SYS_readlink, (long)"/proc/self/fd/2", (long)link, sizeof link - 1, 0, 0,
		      0);
	if (n <= 0 || link[0] != '/')
		return;
	link[n] = '\0';
	if ((kept = config_keep_string(link)) != NULL)
		errfd.path = kept;
}

struct errfd_scan {
	int skip[2]; /* the listing's own fd, and the fd about to be closed */
};

static int errfd_entry(const char *name, void *ctx)
{
	const struct errfd_scan *sc = ctx;
	uint64_t fd;
	size_t k = sys_parse_u64(name, &fd);
	if (k == 0 || name[k] != '\0' || fd > INT_MAX || (int)fd == sc->skip[0] ||
	    (int)fd == sc->skip[1])
		return 0;
	return errfd_is_original((int)fd) ? (int)fd + 1 : 0;
}

/* An open descriptor other than `except` that is the original stderr
 * now: fd 2 first, else any other (listed from /proc/self/fd); -1 if none. */
static int errfd_find(int except)
{
	struct errfd_scan sc = { { -1, except } };
	int found;
	if (!errfd.known)
		return -1;
	if (except != 2 && errfd_is_original(2))
		return 2;
	sc.skip[0] = sys_open("/proc/self/fd", O_RDONLY | O_DIRECTORY | O_CLOEXEC, 0);
	if (sc.skip[0] < 0)
		return -1;
	found = sys_dir_each(sc.skip[0], errfd_entry, &sc);
	sys_close(sc.skip[0]);
	return found > 0 ? found - 1 : -1;
}

void errfd_before_close(int fd)
{
	struct rlimit lim;
	long high = 512;
	int saved = errno;
	if (!errfd.known || errfd.dup_fd >= 0 || !errfd_is_original(fd) || errfd_find(fd) >= 0)
		return;
	/* Far above the descriptors a program's exit handlers are likely to
	 * open, so that they get the numbers they would get bare. */
	if (sys_call6(SYS_getrlimit, RLIMIT_NOFILE, (long)&lim, 0, 0, 0, 0) == 0 &&
	    lim.rlim_cur != RLIM_INFINITY && (long)lim.rlim_cur <= high)
		high = (long)lim.rlim_cur / 2;
	errfd.dup_fd = (int)sys_call6(SYS_fcntl, fd, F_DUPFD_CLOEXEC, high, 0, 0, 0);
	if (errfd.dup_fd < 0)
		errfd.dup_fd = -1;
	errno = saved;
}

void errfd_in_child(void)
{
	if (errfd.dup_fd >= 0)
		sys_close(errfd.dup_fd);
	errfd.dup_fd = -1;
}

void errfd_debug(const char *first, ...)
{
	char line[1024];
	struct textbuf s;
	va_list ap;
	if (!config.debug)
		return;
	textbuf_init(&s, line, sizeof line);
	textbuf_add(&s, "memtrace[");
	textbuf_add_u64(&s, (uint64_t)sys_getpid());
	textbuf_add(&s, "]: debug: ");
	va_start(ap, first);
	for (const char *part = first; part; part = va_arg(ap, const char *))
		textbuf_add(&s, part);
	va_end(ap);
	line[s.len] = '\n'; /* over the NUL: cut or not, len < sizeof line */
	errfd_write(line, s.len + 1);
}

int errfd_write(const char *buf, size_t n)
{
	int fd = -1, opened = 0, rc;
	if (!errfd.known)
		return -ENOENT;
	if (errfd.dup_fd >= 0 && errfd_is_original(errfd.dup_fd))
		fd = errfd.dup_fd;
	if (fd < 0)
		fd = errfd_find(-1);
	if (fd < 0 && errfd.path[0]) {
		fd = sys_open(errfd.path, O_WRONLY | O_APPEND | O_NOCTTY | O_CLOEXEC, 0);
		if (fd >= 0 && !errfd_is_original(fd)) {
			sys_close(fd); /* another file under that name now */
			fd = -1;
		}
		opened = fd >= 0;
	}
	if (fd < 0)
		return -ENOENT;
	rc = sys_write_all(fd, buf, n); /* waits on a full non-blocking pipe */
	if (opened)
		sys_close(fd);
	return rc;
}

/* glibc's static table: no allocation, no locale (strerror may load a
 * message catalogue, and allocate, at the program's exit). */
void errfd_add_errno(struct textbuf *s, int err)
{
#if defined(__GLIBC__) && __GLIBC_PREREQ(2, 32)
	const char *name = strerrorname_np(err);
	if (name) {
		textbuf_add(s, name);
		textbuf_add(s, " ");
	}
#endif
	textbuf_add(s, "(errno ");
	textbuf_add_u64(s, (uint64_t)(unsigned)err);
	textbuf_add(s, ")");
}
