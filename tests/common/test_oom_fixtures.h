/* test_oom_fixtures.h: the hand-written "oom" keys of tests/data/oom/
 * ($MT_DATA; see its README), merged into a record of the test's own, so
 * that every reader of the key is fed the same files.  Header only.
 *
 * A fixture is an object of the keys to add ({"oom_kills": ..., "oom":
 * ...}); a base is a whole record's text, "{...}", which must not have
 * those keys already.  The merge is textual: the base's last '}' and the
 * fixture's first '{' give way to a comma. */
#ifndef TEST_OOM_FIXTURES_H
#define TEST_OOM_FIXTURES_H

#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* tests/data/oom/NAME.json's text into buf. */
static inline void oom_fixture(const char *name, char *buf, size_t cap)
{
	const char *data = getenv("MT_DATA");
	if (!data || !*data)
		cr_skip_test("MT_DATA is not set (run through make check)");
	char path[4096];
	snprintf(path, sizeof path, "%s/oom/%s.json", data, name);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	cr_assert_geq(fd, 0, "%s: %s", path, strerror(errno));
	size_t got = 0;
	ssize_t n;
	while (got + 1 < cap && (n = read(fd, buf + got, cap - 1 - got)) > 0)
		got += (size_t)n;
	close(fd);
	cr_assert_lt(got + 1, cap, "%s is larger than the test's buffer", path);
	buf[got] = '\0';
}

/* base with fixture NAME's keys added, into buf (NAME NULL: base as it is). */
static inline void oom_record(const char *name, const char *base, char *buf, size_t cap)
{
	static char fx[1 << 16];
	if (!name) {
		cr_assert_lt(strlen(base), cap);
		strcpy(buf, base);
		return;
	}
	oom_fixture(name, fx, sizeof fx);
	const char *end = strrchr(base, '}'), *open = strchr(fx, '{');
	cr_assert(end && open, "a record and a fixture are objects");
	int n = snprintf(buf, cap, "%.*s, %s", (int)(end - base), base, open + 1);
	cr_assert(n > 0 && (size_t)n < cap);
}

/* dir made (it must not exist) with resources.json = base + fixture NAME
 * and processes.json = procs (NULL: none written). */
static inline void oom_evidence(const char *dir, const char *name, const char *base, const char *procs)
{
	static char rec[1 << 17];
	cr_assert_eq(mkdir(dir, 0755), 0, "%s: %s", dir, strerror(errno));
	int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	cr_assert_geq(dfd, 0, "%s: %s", dir, strerror(errno));
	oom_record(name, base, rec, sizeof rec);
	static const char *const names[2] = { "resources.json", "processes.json" };
	const char *texts[2] = { rec, procs };
	for (int i = 0; i < 2; i++) {
		if (!texts[i])
			continue;
		int fd = openat(dfd, names[i], O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
		cr_assert_geq(fd, 0, "%s/%s: %s", dir, names[i], strerror(errno));
		size_t len = strlen(texts[i]);
		cr_assert_eq(write(fd, texts[i], len), (ssize_t)len);
		close(fd);
	}
	close(dfd);
}

#endif /* TEST_OOM_FIXTURES_H */
