/* memkinds.c: hold memory of one of the kinds memory.stat tells apart, of
 * a known size (decimal MB), for the kernel-split tests
 * (tests/e2e/test_memsup_kernel.c).  Exits 0; 2 on an error.
 *
 *   memkinds anon MB HOLD_MS        malloc MB, write every page, hold
 *   memkinds shmem FILE MB HOLD_MS  write MB into FILE (on a tmpfs: shared
 *                                   memory), hold, remove it
 *   memkinds cache FILE MB HOLD_MS  write MB into FILE (on a disk), fsync
 *                                   and hold (page cache); drop its pages
 *                                   (POSIX_FADV_DONTNEED) and hold; read it
 *                                   all back and hold (page cache again);
 *                                   remove it.  Three holds of HOLD_MS, so
 *                                   that samples see high, low, high.
 *   memkinds memfd MB HOLD_MS       write MB into a memfd (shared memory
 *                                   no file names), hold
 *   memkinds hugetlb MB HOLD_MS     mmap MB (rounded up to 2 MiB) with
 *                                   MAP_HUGETLB, write every page, hold:
 *                                   pages of the huge page pool, in no
 *                                   RSS or VmHWM (HugetlbPages in status)
 *   memkinds hugememfd MB HOLD_MS   the same through a memfd made with
 *                                   MFD_HUGETLB, mapped shared
 * FILE is removed on the way out, also after an error.  Exits 3 when the
 * huge page pool cannot serve the hugetlb kinds (none configured). */
#include "workload.h"

static const char *made; /* FILE, once created */

static void fail(const char *what)
{
	int e = errno;
	if (made)
		unlink(made);
	errno = e;
	wl_die(what);
}

/* MB of bytes into a new file at path; the fd stays open. */
/* mb MB of `byte` written to fd: 0, or -1 with errno (a short write
 * retried, an interrupted one again). */
static int write_mb(int fd, long mb, char byte)
{
	static char chunk[1 << 20];
	memset(chunk, byte, sizeof chunk);
	for (size_t left = (size_t)mb * WL_MB; left > 0;) {
		size_t n = left < sizeof chunk ? left : sizeof chunk;
		ssize_t w = write(fd, chunk, n);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return -1;
		left -= (size_t)w;
	}
	return 0;
}

static int fill_file(const char *path, long mb)
{
	int fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0)
		wl_die("memkinds: open");
	made = path;
	if (write_mb(fd, mb, 'k') < 0)
		fail("memkinds: write");
	return fd;
}

/* MB (rounded up to 2 MiB) of huge pages, mapped anonymous or through a
 * hugetlbfs memfd, every page written, held for ms. */
static int hold_hugetlb(long mb, long ms, int memfd)
{
	size_t len = ((size_t)mb * WL_MB + WL_HUGE - 1) & ~(WL_HUGE - 1);
	char *p;
	if (memfd) {
		int fd = memfd_create("memkinds", MFD_CLOEXEC | MFD_HUGETLB);
		if (fd < 0 || ftruncate(fd, (off_t)len) < 0)
			return 3;
		p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
		close(fd);
	} else {
		p = mmap(NULL, len, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS | MAP_HUGETLB, -1, 0);
	}
	if (p == MAP_FAILED)
		return 3;
	/* a shared hugetlb mapping reserves its pages at mmap; a private
	 * one may still fail at the first touch (SIGBUS), which a pool of
	 * the size asked for avoids */
	for (size_t i = 0; i < len; i += 4096)
		p[i] = (char)(i >> 12 | 1);
	wl_sleep_ms(ms);
	munmap(p, len);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc == 4 && strcmp(argv[1], "anon") == 0) {
		size_t bytes = (size_t)wl_arg(argc, argv, 2, 64) * WL_MB;
		char *p = malloc(bytes);
		if (!p)
			wl_die("memkinds: malloc");
		for (size_t i = 0; i < bytes; i += 4096)
			p[i] = (char)(i >> 12 | 1);
		wl_sleep_ms(wl_arg(argc, argv, 3, 500));
		/* read after the hold, so the pages stay in use until then */
		volatile char sink = p[bytes / 2];
		(void)sink;
		free(p);
		return 0;
	}
	if (argc == 5 && strcmp(argv[1], "shmem") == 0) {
		int fd = fill_file(argv[2], wl_arg(argc, argv, 3, 32));
		wl_sleep_ms(wl_arg(argc, argv, 4, 500));
		close(fd);
		unlink(argv[2]);
		return 0;
	}
	if (argc == 5 && strcmp(argv[1], "cache") == 0) {
		long mb = wl_arg(argc, argv, 3, 32), ms = wl_arg(argc, argv, 4, 300);
		int fd = fill_file(argv[2], mb);
		/* written back first: DONTNEED drops only clean pages */
		if (fsync(fd) < 0)
			fail("memkinds: fsync");
		wl_sleep_ms(ms);
		int rc = posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
		if (rc != 0) {
			errno = rc;
			fail("memkinds: posix_fadvise");
		}
		wl_sleep_ms(ms);
		static char buf[1 << 16];
		size_t got = 0;
		for (;;) {
			ssize_t r = pread(fd, buf, sizeof buf, (off_t)got);
			if (r < 0 && errno == EINTR)
				continue;
			if (r < 0)
				fail("memkinds: read");
			if (r == 0)
				break;
			got += (size_t)r;
		}
		if (got != (size_t)mb * WL_MB) {
			errno = EIO;
			fail("memkinds: short file");
		}
		wl_sleep_ms(ms);
		close(fd);
		unlink(argv[2]);
		return 0;
	}
	if (argc == 4 && strcmp(argv[1], "memfd") == 0) {
		long mb = wl_arg(argc, argv, 2, 32);
		int fd = memfd_create("memkinds", MFD_CLOEXEC);
		if (fd < 0)
			wl_die("memkinds: memfd_create");
		if (write_mb(fd, mb, 'm') < 0)
			wl_die("memkinds: write");
		wl_sleep_ms(wl_arg(argc, argv, 3, 500));
		close(fd);
		return 0;
	}
	if (argc == 4 && (strcmp(argv[1], "hugetlb") == 0 || strcmp(argv[1], "hugememfd") == 0))
		return hold_hugetlb(wl_arg(argc, argv, 2, 40), wl_arg(argc, argv, 3, 500),
				    argv[1][4] == 'm');
	fprintf(stderr, "usage: memkinds anon MB HOLD_MS | shmem FILE MB HOLD_MS | "
			"cache FILE MB HOLD_MS | memfd MB HOLD_MS | hugetlb MB HOLD_MS | "
			"hugememfd MB HOLD_MS\n");
	return 2;
}
