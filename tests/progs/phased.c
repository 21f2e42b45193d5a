/* phased.c: three phases with known sizes, marked through both channels.
 *
 *   "alloc"  (marks file, with pid and maxrss fields): hold ALLOC_MB (80)
 *            mapped for 400 ms, then unmap it
 *   "idle"   (memtrace_mark when the shim is loaded, else the marks file):
 *            400 ms holding nothing
 *   "heap"   (marks file, a bare label as a shell would write it): malloc
 *            and touch HEAP_MB (30), hold 400 ms, exit 0
 *
 * Usage: phased [ALLOC_MB [HEAP_MB]].  Without MEMSUP_MARK the file markers
 * are skipped (exit 0 all the same). */
#include "workload.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <sys/resource.h>

static void mark_file(const char *label, int with_fields)
{
	const char *path = getenv("MEMSUP_MARK");
	char line[256];
	int n;
	if (!path)
		return;
	if (with_fields) {
		struct rusage self, kids;
		getrusage(RUSAGE_SELF, &self);
		getrusage(RUSAGE_CHILDREN, &kids);
		struct timespec now;
		clock_gettime(CLOCK_MONOTONIC, &now);
		n = snprintf(line, sizeof line,
			     "%s\tpid=%d\tmaxrss_kb=%ld\tmaxrss_children_kb=%ld\tmono_ns=%lld\n",
			     label, (int)getpid(), self.ru_maxrss, kids.ru_maxrss,
			     (long long)now.tv_sec * 1000000000LL + now.tv_nsec);
	} else {
		n = snprintf(line, sizeof line, "%s\n", label);
	}
	int fd = open(path, O_WRONLY | O_APPEND | O_CLOEXEC);
	if (fd < 0)
		wl_die(path);
	if (write(fd, line, (size_t)n) != n) /* one write: one whole line */
		wl_die("write marker");
	close(fd);
}

static void mark_shim_or_file(const char *label)
{
	int (*mark)(const char *) = (int (*)(const char *))dlsym(RTLD_DEFAULT, "memtrace_mark");
	if (mark)
		mark(label);
	else
		mark_file(label, 1);
}

int main(int argc, char **argv)
{
	long alloc_mb = wl_arg(argc, argv, 1, 80), heap_mb = wl_arg(argc, argv, 2, 30);
	size_t alloc = ((size_t)alloc_mb * WL_MB + WL_HUGE - 1) & ~(WL_HUGE - 1);

	mark_file("alloc", 1);
	char *p = wl_hold(alloc);
	wl_sleep_ms(400);
	if (munmap(p, alloc) < 0)
		wl_die("munmap");
	/* Not at once: a sample whose read began before the munmap but was
	 * stamped after the marker would count the 80 MB in "idle". */
	wl_sleep_ms(30);

	mark_shim_or_file("idle");
	wl_sleep_ms(400);

	mark_file("heap", 0);
	char *h = malloc((size_t)heap_mb * WL_MB);
	if (!h)
		wl_die("malloc");
	/* touched through a volatile pointer: a memset before free() is a dead
	 * store the compiler may drop, and the pages would never be resident */
	for (size_t i = 0; i < (size_t)heap_mb * WL_MB; i += 4096)
		((volatile char *)h)[i] = 1;
	wl_sleep_ms(400);
	printf("phased: %ld MB mapped, then %ld MB of heap\n", alloc_mb, heap_mb);
	free(h);
	return 0;
}
