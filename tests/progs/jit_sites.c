/* jit_sites.c: generated code that allocates, named in a perf map.
 *
 * Usage: jit_sites MB [stale].  Writes a small function of x86-64 machine
 * code into an anonymous executable mapping (no file: as a JIT's code is),
 * names it "jit_alloc_fn" in /tmp/perf-PID.map as JIT runtimes do for
 * profilers (node --perf-basic-prof), and calls it: it keeps a frame
 * pointer, as V8's code does, and calls jit_target(), which mallocs MB
 * (decimal) and touches it.  With "stale" the map's time is set an hour
 * back, as a map left by an earlier process of the same pid would be.
 * Holds the block 200 ms, frees it, removes the map and exits 0.  Prints
 * the code's address.  Exits 77 on other machines than x86-64. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>
#include <utime.h>

void *jit_target(size_t bytes);
__attribute__((noinline)) void *jit_target(size_t bytes)
{
	char *p = malloc(bytes);
	if (p)
		memset(p, 0x4a, bytes);
	return p;
}

int main(int argc, char **argv)
{
#if !defined(__x86_64__)
	(void)argc;
	(void)argv;
	fprintf(stderr, "jit_sites: x86-64 only\n");
	return 77;
#else
	size_t bytes = (size_t)(argc > 1 ? strtoul(argv[1], NULL, 10) : 20) * 1000000u;
	int stale = argc > 2 && strcmp(argv[2], "stale") == 0;
	unsigned char *code = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
				   -1, 0);
	if (code == MAP_FAILED) {
		perror("jit_sites: mmap");
		return 1;
	}
	/* push rbp; mov rbp, rsp; movabs rdi, bytes; movabs rax, jit_target;
	 * call rax; pop rbp; ret */
	unsigned char *c = code + 64; /* not at the map's first byte */
	uint64_t size = bytes, target = (uint64_t)(uintptr_t)jit_target;
	size_t n = 0;
	c[n++] = 0x55;
	c[n++] = 0x48; c[n++] = 0x89; c[n++] = 0xe5;
	c[n++] = 0x48; c[n++] = 0xbf; memcpy(c + n, &size, 8); n += 8;
	c[n++] = 0x48; c[n++] = 0xb8; memcpy(c + n, &target, 8); n += 8;
	c[n++] = 0xff; c[n++] = 0xd0;
	c[n++] = 0x5d;
	c[n++] = 0xc3;
	if (mprotect(code, 4096, PROT_READ | PROT_EXEC) != 0) {
		perror("jit_sites: mprotect");
		return 1;
	}
	char path[64];
	snprintf(path, sizeof path, "/tmp/perf-%d.map", (int)getpid());
	FILE *f = fopen(path, "w");
	if (!f) {
		perror("jit_sites: perf map");
		return 1;
	}
	/* another piece of code first, and the same address named again
	 * later: the later line wins, as perf takes it */
	fprintf(f, "%llx 10 jit_other_fn\n", (unsigned long long)(uintptr_t)(code + 16));
	fprintf(f, "%llx %zx jit_old_name\n", (unsigned long long)(uintptr_t)c, n);
	fprintf(f, "not a line\n");
	fprintf(f, "%llx %zx jit_alloc_fn\n", (unsigned long long)(uintptr_t)c, n);
	fclose(f);
	if (stale) {
		struct utimbuf old = { time(NULL) - 3600, time(NULL) - 3600 };
		utime(path, &old);
	}
	printf("jit_sites: code at %p, %zu bytes\n", (void *)c, n);
	fflush(stdout);
	void *(*fn)(void) = (void *(*)(void))(uintptr_t)c;
	void *p = fn();
	if (!p) {
		fprintf(stderr, "jit_sites: malloc failed\n");
		return 1;
	}
	struct timespec ts = { 0, 200000000L };
	nanosleep(&ts, NULL);
	free(p);
	/* the map stays for memsup to read after the run (as node's does);
	 * the test removes it */
	return 0;
#endif
}
