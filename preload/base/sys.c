/* sys.c: raw system calls and number formatting (see sys.h).
 * Async-signal-safe; never allocates; never touches errno. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "base/sys.h"

/* syscall(2) sets errno; the inline asm below does not, which keeps every
 * hook errno-transparent without save/restore dances. */
long sys_call6(long nr, long a, long b, long c, long d, long e, long f)
{
#if defined(__x86_64__)
	long ret;
	register long r10 __asm__("r10") = d;
	register long r8 __asm__("r8") = e;
	register long r9 __asm__("r9") = f;
	__asm__ volatile("syscall"
			 : "=a"(ret)
			 : "a"(nr), "D"(a), "S"(b), "d"(c), "r"(r10), "r"(r8), "r"(r9)
			 : "rcx", "r11", "memory");
	return ret;
#else
	int saved = errno;
	long ret = syscall(nr, a, b, c, d, e, f);
	if (ret == -1)
		ret = -errno;
	errno = saved;
	return ret;
#endif
}

int sys_open(const char *path, int flags, int mode)
{
	return (int)sys_call6(SYS_openat, AT_FDCWD, (long)path, flags, mode, 0, 0);
}

int sys_close(int fd)
{
	return (int)sys_call6(SYS_close, fd, 0, 0, 0, 0, 0);
}

ssize_t sys_read(int fd, void *buf, size_t n)
{
	long r;
	do
		r = sys_call6(SYS_read, fd, (long)buf, (long)n, 0, 0, 0);
	while (r == -EINTR);
	return r;
}

ssize_t sys_pread(int fd, void *buf, size_t n, off_t off)
{
	long r;
	do
		r = sys_call6(SYS_pread64, fd, (long)buf, (long)n, (long)off, 0, 0);
	while (r == -EINTR);
	return r;
}

int sys_write_all(int fd, const void *buf, size_t n)
{
	const char *p = buf;
	int waits = 0;
	while (n > 0) {
		long r = sys_call6(SYS_write, fd, (long)p, (long)n, 0, 0, 0);
		if (r == -EINTR)
			continue;
		if (r == -EAGAIN && ++waits <= 100) {
			/* a non-blocking descriptor that is full: wait for room */
			struct pollfd pf = { fd, POLLOUT, 0 };
			sys_call6(SYS_poll, (long)&pf, 1, 10, 0, 0, 0);
			continue;
		}
		if (r < 0)
			return (int)r;
		if (r == 0)
			return -EIO;
		p += r;
		n -= (size_t)r;
	}
	return 0;
}

void *sys_mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off)
{
	long r = sys_call6(SYS_mmap, (long)addr, (long)len, prot, flags, fd, (long)off);
	if (r < 0 && r > -4096)
		return MAP_FAILED;
	return (void *)r;
}

int sys_munmap(void *addr, size_t len)
{
	return (int)sys_call6(SYS_munmap, (long)addr, (long)len, 0, 0, 0, 0);
}

pid_t sys_getpid(void)
{
	return (pid_t)sys_call6(SYS_getpid, 0, 0, 0, 0, 0, 0);
}

pid_t sys_getppid(void)
{
	return (pid_t)sys_call6(SYS_getppid, 0, 0, 0, 0, 0, 0);
}

pid_t sys_gettid(void)
{
	return (pid_t)sys_call6(SYS_gettid, 0, 0, 0, 0, 0, 0);
}

int sys_thread_alive(pid_t pid, pid_t tid)
{
	long r = sys_call6(SYS_tgkill, pid, tid, 0, 0, 0, 0);
	if (r == 0 || r == -EPERM)
		return 1;
	return r == -ESRCH ? 0 : -1;
}

ssize_t sys_read_file(const char *path, char *buf, size_t cap)
{
	int fd = sys_open(path, O_RDONLY | O_CLOEXEC, 0);
	size_t len = 0;
	if (fd < 0)
		return fd;
	while (len + 1 < cap) {
		ssize_t r = sys_read(fd, buf + len, cap - 1 - len);
		if (r < 0) {
			sys_close(fd);
			return r;
		}
		if (r == 0)
			break;
		len += (size_t)r;
	}
	sys_close(fd);
	buf[len] = '\0';
	return (ssize_t)len;
}

/* clock_gettime goes through the vDSO: no system call on x86-64. */
/* The kernel's linux_dirent64. */
struct sys_dirent {
	uint64_t ino;
	int64_t off;
	unsigned short reclen;
	unsigned char type;
	char name[];
};

int sys_dir_each(int dirfd, int (*fn)(const char *name, void *ctx), void *ctx)
{
	char buf[4096];
	for (;;) {
		long n = sys_call6(SYS_getdents64, dirfd, (long)buf, sizeof buf, 0, 0, 0);
		if (n == -EINTR)
			continue;
		if (n <= 0)
			return (int)n;
		for (long off = 0; off < n;) {
			const struct sys_dirent *d = (const struct sys_dirent *)(buf + off);
			int rc;
			off += d->reclen;
			if ((rc = fn(d->name, ctx)) != 0)
				return rc;
		}
	}
}

uint64_t sys_mono_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static uint64_t sys_clock_syscall_ns(clockid_t clock)
{
	struct timespec ts;
	if (sys_call6(SYS_clock_gettime, clock, (long)&ts, 0, 0, 0, 0) != 0)
		return 0;
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

uint64_t sys_mono_ns_cold(void)
{
	return sys_clock_syscall_ns(CLOCK_MONOTONIC);
}

uint64_t sys_real_ns(void)
{
	return sys_clock_syscall_ns(CLOCK_REALTIME);
}

size_t sys_parse_u64(const char *s, uint64_t *out)
{
	uint64_t v = 0;
	size_t i = 0;
	while (s[i] >= '0' && s[i] <= '9') {
		unsigned d = (unsigned)(s[i] - '0');
		if (v > (UINT64_MAX - d) / 10)
			return 0;
		v = v * 10 + d;
		i++;
	}
	*out = v;
	return i;
}
