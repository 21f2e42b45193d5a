/* test_shim_selfmaps.c: /proc/self/maps the shim's way (selfmaps.h): the
 * line parser on captured lines, and scans of this process's own maps,
 * lines longer than the reader's buffer included. */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/selfmaps.h"

Test(selfmaps, parse_lines)
{
	struct selfmaps_entry e;
	const char *l1 = "7f3c0a1b2000-7f3c0a1d4000 r-xp 00002000 fd:01 1234567    "
			 "/usr/lib/x86_64-linux-gnu/libc.so.6";
	cr_assert_eq(selfmaps_parse_line(l1, strlen(l1), &e), 0);
	cr_expect_eq(e.start, 0x7f3c0a1b2000u);
	cr_expect_eq(e.end, 0x7f3c0a1d4000u);
	cr_expect_eq(e.perms, SELFMAPS_R | SELFMAPS_X);
	cr_expect_eq(e.offset, 0x2000u);
	cr_expect_eq(e.dev_major, 0xfd);
	cr_expect_eq(e.dev_minor, 1);
	cr_expect_eq(e.inode, 1234567u);
	cr_expect_eq(e.path_len, strlen("/usr/lib/x86_64-linux-gnu/libc.so.6"));
	cr_expect_eq(memcmp(e.path, "/usr/lib/x86_64-linux-gnu/libc.so.6", e.path_len), 0);

	const char *l2 = "55d0c0000000-55d0c0021000 rw-p 00000000 00:00 0 ";
	cr_assert_eq(selfmaps_parse_line(l2, strlen(l2), &e), 0);
	cr_expect_eq(e.path_len, 0);
	cr_expect_eq(e.perms, SELFMAPS_R | SELFMAPS_W);

	const char *l3 = "7ffd1000-7ffd3000 r-xs 00000000 00:00 0                          [vdso]";
	cr_assert_eq(selfmaps_parse_line(l3, strlen(l3), &e), 0);
	cr_expect_eq(e.perms, SELFMAPS_R | SELFMAPS_X | SELFMAPS_SHARED);
	cr_expect_eq(e.path_len, 6);

	const char *l4 = "1000-2000 r--p 00000000 08:02 42 /tmp/with space (deleted)";
	cr_assert_eq(selfmaps_parse_line(l4, strlen(l4), &e), 0);
	cr_expect_eq(e.path_len, strlen("/tmp/with space (deleted)"));

	const char *bad[] = { "", "zz-1000 r--p 0 00:00 0", "2000-1000 r--p 00000000 00:00 0",
			      "1000-2000 r--p 00000000 0000 0", "1000-2000 r--p 00000000 00:00 x",
			      "1000-2000 rwxpq 0 00:00 0" };
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
		cr_expect_eq(selfmaps_parse_line(bad[i], strlen(bad[i]), &e), -EINVAL, "line %zu",
			     i);
}

struct maps_seen {
	uintptr_t code;
	int code_found, lines;
};

static int maps_count(const struct selfmaps_entry *e, void *ctx)
{
	struct maps_seen *s = ctx;
	s->lines++;
	if (s->code >= e->start && s->code < e->end && (e->perms & SELFMAPS_X))
		s->code_found = 1;
	return 0;
}

Test(selfmaps, scan_sees_our_code_and_stack)
{
	struct maps_seen s = { (uintptr_t)maps_count, 0, 0 };
	uintptr_t lo, hi;
	int local;
	cr_assert_eq(selfmaps_scan(maps_count, &s), 0);
	cr_expect(s.lines > 5);
	cr_expect(s.code_found);
	cr_assert_eq(selfmaps_find((uintptr_t)&local, &lo, &hi), 0);
	cr_expect((uintptr_t)&local >= lo && (uintptr_t)&local < hi);
	cr_expect_eq(selfmaps_find(8, &lo, &hi), -ENOENT);
}

/* Lines longer than the reader's buffer: a file mapped under a long name. */
Test(selfmaps, long_paths_do_not_break_the_scan)
{
	char path[PATH_MAX], top[64];
	int n = snprintf(top, sizeof top, "/tmp/mtmaps.%d", (int)getpid());
	memcpy(path, top, (size_t)n + 1);
	cr_assert_eq(mkdir(path, 0700), 0);
	/* a chain of 100-byte directory names (one name is at most 255) */
	while (n < (int)SELFMAPS_LINE_BYTES + 200) {
		path[n++] = '/';
		memset(path + n, 'x', 100);
		n += 100;
		path[n] = '\0';
		cr_assert_eq(mkdir(path, 0700), 0);
	}
	strcpy(path + n, "/f");
	FILE *f = fopen(path, "w");
	cr_assert_not_null(f, "%s", path);
	fputs("x", f);
	fclose(f);
	int fd = open(path, O_RDONLY);
	void *m = mmap(NULL, 4096, PROT_READ, MAP_PRIVATE, fd, 0);
	cr_assert_neq(m, MAP_FAILED);
	struct maps_seen s = { (uintptr_t)maps_count, 0, 0 };
	cr_expect_eq(selfmaps_scan(maps_count, &s), 0);
	cr_expect(s.code_found, "lines after the long one are still read");
	munmap(m, 4096);
	close(fd);
	unlink(path);
	while ((n = (int)strlen(path)) > (int)strlen(top)) {
		*strrchr(path, '/') = '\0';
		rmdir(path);
	}
}

