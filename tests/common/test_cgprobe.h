/* test_cgprobe.h: can this process make a cgroup with a given controller?
 *
 * A test that needs memsup to run in a cgroup skips where the machine gives
 * none (not root, no such controller, a read-only cgroupfs).  But memsup's
 * own record is no judge of that: a memsup that wrongly fell back to the
 * /proc scan would turn every cgroup test into a skip, and CI (root, cgroup
 * v1 memory/pids/freezer beside the v2 tree) would stay green.  So the test
 * asks the kernel itself: it makes, and at once removes, an empty cgroup
 * below its own in the hierarchy that has the controller.  Where that
 * works, memsup could have made one too and the test fails, loudly;
 * where it does not, the test skips and says why (cgprobe_skip_or_fail).
 *
 * Test code only: stdio, no cleanup on the failure paths but the probe's.
 */
#ifndef TEST_CGPROBE_H
#define TEST_CGPROBE_H

#include <criterion/criterion.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Does the comma-separated list (a /proc/self/cgroup v1 field) name ctl? */
static inline int cgprobe_list_has(const char *list, size_t len, const char *ctl)
{
	size_t n = strlen(ctl);
	for (const char *p = list, *end = list + len; p < end;) {
		const char *c = memchr(p, ',', (size_t)(end - p));
		size_t w = c ? (size_t)(c - p) : (size_t)(end - p);
		if (w == n && memcmp(p, ctl, n) == 0)
			return 1;
		p += w + 1;
	}
	return 0;
}

/* The directory of this process's cgroup in the hierarchy that has ctl:
 * a v1 one mounted at /sys/fs/cgroup/<its controllers>, else the v2 tree
 * (/sys/fs/cgroup, or /sys/fs/cgroup/unified beside v1) if ctl is in its
 * cgroup.controllers.  1 and dir filled, or 0 and why said. */
static inline int cgprobe_dir(const char *ctl, char *dir, size_t cap, char *why, size_t whycap)
{
	char line[PATH_MAX + 128], v2[PATH_MAX] = "", ctls[PATH_MAX + 32], have[512] = "";
	FILE *f = fopen("/proc/self/cgroup", "r");
	if (!f) {
		snprintf(why, whycap, "/proc/self/cgroup: %s", strerror(errno));
		return 0;
	}
	while (fgets(line, sizeof line, f)) {
		line[strcspn(line, "\n")] = '\0';
		char *a = strchr(line, ':'), *b = a ? strchr(a + 1, ':') : NULL;
		if (!b)
			continue;
		if (b == a + 1) { /* 0::/path, the v2 tree */
			snprintf(v2, sizeof v2, "%s", b + 1);
			continue;
		}
		if (cgprobe_list_has(a + 1, (size_t)(b - a - 1), ctl)) {
			snprintf(dir, cap, "/sys/fs/cgroup/%.*s%s", (int)(b - a - 1), a + 1, b + 1);
			fclose(f);
			return 1;
		}
	}
	fclose(f);
	if (!v2[0]) {
		snprintf(why, whycap, "no cgroup v1 hierarchy has %s and there is no v2 tree", ctl);
		return 0;
	}
	const char *base = access("/sys/fs/cgroup/cgroup.controllers", F_OK) == 0
				   ? "/sys/fs/cgroup" : "/sys/fs/cgroup/unified";
	snprintf(dir, cap, "%s%s", base, strcmp(v2, "/") == 0 ? "" : v2);
	snprintf(ctls, sizeof ctls, "%s/cgroup.controllers", dir);
	f = fopen(ctls, "r");
	size_t got = f ? fread(have, 1, sizeof have - 1, f) : 0;
	have[got] = '\0';
	if (f)
		fclose(f);
	for (char *t = strtok(have, " \n"); t; t = strtok(NULL, " \n"))
		if (strcmp(t, ctl) == 0)
			return 1;
	snprintf(why, whycap, "no cgroup v1 hierarchy has %s, nor does %s", ctl, ctls);
	return 0;
}

/* 1 if this process can make a cgroup with ctl (it made one and removed
 * it), else 0; why says which, where. */
static inline int cgprobe_can_make(const char *ctl, char *why, size_t whycap)
{
	char dir[PATH_MAX], probe[PATH_MAX + 64];
	if (!cgprobe_dir(ctl, dir, sizeof dir, why, whycap))
		return 0;
	snprintf(probe, sizeof probe, "%s/mt-cgprobe-%d", dir, (int)getpid());
	if (mkdir(probe, 0755) < 0) {
		snprintf(why, whycap, "cannot make a cgroup in %s: %s", dir, strerror(errno));
		return 0;
	}
	if (rmdir(probe) < 0)
		cr_log_warn("could not remove the probe cgroup %s: %s", probe, strerror(errno));
	snprintf(why, whycap, "the test made and removed %s", probe);
	return 1;
}

/* Where memsup (or the code under test) ran without a cgroup with ctl:
 * a failure if this process can make one, else a skip; both say why.
 * ctl may be "memory+pids": a failure only if both can be made. */
#define cgprobe_skip_or_fail(ctl, fmt, ...)                                                        \
	do {                                                                                       \
		char cgprobe_why_[2 * PATH_MAX + 128] = "";                                        \
		int cgprobe_can_ = strcmp((ctl), "memory+pids") == 0                               \
					   ? cgprobe_can_make("memory", cgprobe_why_,              \
							      sizeof cgprobe_why_) &&              \
						     cgprobe_can_make("pids", cgprobe_why_,                \
								      sizeof cgprobe_why_)         \
					   : cgprobe_can_make((ctl), cgprobe_why_,                 \
							      sizeof cgprobe_why_);                \
		if (cgprobe_can_)                                                                  \
			cr_assert_fail("a %s cgroup can be made here (%s), yet " fmt, (ctl),       \
				       cgprobe_why_, ##__VA_ARGS__);                                \
		cr_skip_test("no %s cgroup here (%s): " fmt, (ctl), cgprobe_why_, ##__VA_ARGS__);  \
	} while (0)

#endif /* TEST_CGPROBE_H */
