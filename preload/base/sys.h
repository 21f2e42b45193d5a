/* sys.h: raw system calls and number formatting for the shim.
 *
 * Other preloads may interpose open/read/write, and the fork-child and exit
 * paths must be async-signal-safe, so the shim reaches the kernel through
 * syscall(2) only.  Functions return the result or -errno (errno is left
 * untouched, so hooks do not disturb the program's errno).  Nothing here
 * allocates or uses stdio.
 */
#ifndef MEMTRACE_SYS_H
#define MEMTRACE_SYS_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

long sys_call6(long nr, long a, long b, long c, long d, long e, long f);

int sys_open(const char *path, int flags, int mode);
int sys_close(int fd);
ssize_t sys_read(int fd, void *buf, size_t n);
ssize_t sys_pread(int fd, void *buf, size_t n, off_t off);
/* Writes all of buf unless an error other than EINTR occurs; a full
 * non-blocking descriptor (EAGAIN) is waited on with poll, about a second
 * at most in all. */
int sys_write_all(int fd, const void *buf, size_t n);
void *sys_mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off);
int sys_munmap(void *addr, size_t len);
pid_t sys_getpid(void);
pid_t sys_getppid(void);
/* The calling thread's kernel thread id. */
pid_t sys_gettid(void);
/* 1 if `tid` is a live thread of process `pid`, 0 if not (ESRCH), -1 if
 * the kernel would not say. */
int sys_thread_alive(pid_t pid, pid_t tid);
/* Reads the whole of a small /proc file into buf (NUL-terminated); returns
 * the length or -errno. */
ssize_t sys_read_file(const char *path, char *buf, size_t cap);

/* Calls fn(name, ctx) for each entry of the directory open at dirfd
 * ("." and ".." included) until fn returns non-zero, which is returned;
 * 0 at the end of the listing, -errno if it fails. */
int sys_dir_each(int dirfd, int (*fn)(const char *name, void *ctx), void *ctx);

/* CLOCK_MONOTONIC through the vDSO: ~25 ns a call, for the paths that
 * read the clock often (a sampled allocation); but a process's first vDSO
 * read faults in its pages, ~35 us on the machines we measure. */
uint64_t sys_mono_ns(void);
/* The same clocks by system call: ~1 us a call and no fault, for what
 * every image does once or a few times (its start, its end, a thread's
 * seed): a program that never reads the clock itself does not pay the
 * vDSO's first read for the shim's sake. */
uint64_t sys_mono_ns_cold(void);
uint64_t sys_real_ns(void);

/* Parses a decimal prefix of s; returns chars used (0 = none, or overflow). */
size_t sys_parse_u64(const char *s, uint64_t *out);

/* The shim's text builder, struct textbuf, is common/textbuf.h. */

#endif /* MEMTRACE_SYS_H */
