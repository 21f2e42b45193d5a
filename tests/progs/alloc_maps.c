/* alloc_maps.c: mmap/munmap/mremap with known sizes, partial munmap and
 * mremap grow/shrink/move, ending with a known set of live mappings.
 * Prints (write(2), no stdio) the figures the record must hold.
 */
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#define PG 4096UL

static uint64_t anon, anon_peak, file, file_peak, largest, total_peak;

static void note(int64_t da, int64_t df, uint64_t made)
{
	anon += (uint64_t)da;
	file += (uint64_t)df;
	if (anon > anon_peak)
		anon_peak = anon;
	if (file > file_peak)
		file_peak = file;
	if (anon + file > total_peak)
		total_peak = anon + file;
	if (made > largest)
		largest = made;
}

static void die(const char *what)
{
	perror(what);
	exit(2);
}

int main(int argc, char **argv)
{
	char buf[1024], path[] = "/tmp/alloc_maps.XXXXXX";
	size_t len = 0;
	int fd = mkstemp(path);
	char *a, *f, *g, *h, *target, *hole;

	if (fd < 0 || ftruncate(fd, 8 * PG) != 0)
		die("tmp file");
	unlink(path);

	/* 10 anonymous pages, then a hole punched in the middle (split). */
	a = mmap(NULL, 10 * PG, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (a == MAP_FAILED)
		die("mmap anon");
	note(10 * PG, 0, 10 * PG);
	if (munmap(a + 4 * PG, 2 * PG) != 0)
		die("munmap middle");
	note(-2 * (int64_t)PG, 0, 0);
	/* Trim the tail piece's last page, and the head's first. */
	if (munmap(a + 9 * PG, PG) != 0 || munmap(a, PG) != 0)
		die("munmap ends");
	note(-2 * (int64_t)PG, 0, 0);
	/* a+1..a+4 (3 pages) and a+6..a+9 (3 pages) remain. */

	/* A file mapping of 3 pages, an odd length that rounds up. */
	f = mmap(NULL, 2 * PG + 100, PROT_READ, MAP_SHARED, fd, 0);
	if (f == MAP_FAILED)
		die("mmap file");
	note(0, 3 * PG, 3 * PG);

	/* mremap grow (may move), then shrink in place. */
	g = mmap(NULL, 4 * PG, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (g == MAP_FAILED)
		die("mmap g");
	note(4 * PG, 0, 4 * PG);
	g = mremap(g, 4 * PG, 16 * PG, MREMAP_MAYMOVE);
	if (g == MAP_FAILED)
		die("mremap grow");
	note(12 * PG, 0, 16 * PG);
	g = mremap(g, 16 * PG, 5 * PG, 0);
	if (g == MAP_FAILED)
		die("mremap shrink");
	note(-11 * (int64_t)PG, 0, 0);

	/* mremap move to a fixed place (reserve it first, then free it). */
	target = mmap(NULL, 5 * PG, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (target == MAP_FAILED)
		die("mmap target");
	note(5 * PG, 0, 5 * PG);
	h = mremap(g, 5 * PG, 5 * PG, MREMAP_MAYMOVE | MREMAP_FIXED, target);
	if (h != target)
		die("mremap move");
	note(-5 * (int64_t)PG, 0, 0); /* the target's old mapping was replaced */
	/* MAP_FIXED over part of the moved region replaces 2 pages by a file
	 * mapping: anon -2, file +2. */
	if (mmap(h + PG, 2 * PG, PROT_READ, MAP_SHARED | MAP_FIXED, fd, 0) == MAP_FAILED)
		die("mmap fixed");
	note(-2 * (int64_t)PG, 2 * PG, 2 * PG);

	/* Unmapping what was never mapped here must change nothing. The page
	 * is one the kernel just handed out and took back through raw system
	 * calls the shim does not see, so nothing lives there: an address
	 * guessed beside h could be a library's page, and unmapping that
	 * killed this program about one run in 60. */
	hole = (char *)syscall(SYS_mmap, NULL, PG, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (hole == MAP_FAILED || syscall(SYS_munmap, hole, PG) != 0)
		die("raw mmap hole");
	if (munmap(hole, PG) != 0)
		die("munmap hole");

	len += (size_t)snprintf(buf + len, sizeof buf - len,
				"map_anon_current=%llu\nmap_anon_peak=%llu\n"
				"map_file_current=%llu\nmap_file_peak=%llu\n"
				"map_largest=%llu\nmap_total_peak=%llu\n",
				(unsigned long long)anon, (unsigned long long)anon_peak,
				(unsigned long long)file, (unsigned long long)file_peak,
				(unsigned long long)largest, (unsigned long long)total_peak);
	if (write(1, buf, len) != (ssize_t)len)
		return 1;
	(void)argc;
	(void)argv;
	return 0;
}
