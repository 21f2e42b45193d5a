/* test_timeline.c: the two line formats of the evidence directory, written
 * then read back by their one owner (timeline.h): every line the writer
 * makes is the exact form the fast scanner takes, and reads back as the
 * sample it was; other JSON goes the slow way to the same values; what is
 * not a sample is refused. */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "evidence/timeline.h"
#include "test_tmp.h"

/* The line without its '\n' (as a reader is given it). */
static size_t body(const char *line, size_t n)
{
	cr_assert_gt(n, 0);
	cr_assert_eq(line[n - 1], '\n', "a line ends in a newline: %s", line);
	cr_assert_null(memchr(line, '\n', n - 1), "one line: %s", line);
	return n - 1;
}

Test(timeline, rss_line_like_json_dumps_and_back)
{
	static const struct {
		double t;
		uint64_t bytes;
		const char *line;
	} cases[] = {
		{ 0.010252155, 3514368, "[0.010252155, 3514368]\n" },
		{ 3.2e-05, 0, "[3.2e-05, 0]\n" },
		{ 3600.0, 123456789012ull, "[3600.0, 123456789012]\n" },
		{ 0.1 + 0.2, 4096, "[0.30000000000000004, 4096]\n" },
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		char buf[TIMELINE_RSS_LINE_MAX];
		size_t n = timeline_format_rss(cases[i].t, cases[i].bytes, buf, sizeof buf);
		cr_expect_str_eq(buf, cases[i].line);
		cr_expect_eq(n, strlen(cases[i].line));
		double t = -1, v = -1;
		size_t len = body(buf, n);
		cr_expect_eq(timeline_scan_rss(buf, len, &t, &v), 0, "not the scanned form: %s", buf);
		cr_expect(t == cases[i].t && v == (double)cases[i].bytes, "%s read back as %.17g, %.17g",
			  buf, t, v);
		t = v = -1;
		cr_expect_eq(timeline_parse_rss(buf, len, 1, &t, &v), 0);
		cr_expect(t == cases[i].t && v == (double)cases[i].bytes);
	}
}

static void expect_sample(const struct timeline_sample *w, const struct timeline_point *r,
			  const char *line)
{
	cr_expect_eq(r->t, w->t, "t: %s", line);
	cr_expect_eq(r->rss, (double)w->rss, "rss: %s", line);
	if (w->traced)
		cr_expect_eq(r->heap, (double)w->heap, "heap: %s", line);
	else
		cr_expect_lt(r->heap, 0, "an untraced heap is null, not 0: %s", line);
	if (w->have_cgroup)
		cr_expect_eq(r->cgroup, (double)w->cgroup, "cgroup: %s", line);
	else
		cr_expect_lt(r->cgroup, 0, "no cgroup: absent, not 0: %s", line);
	if (w->have_split) {
		cr_expect(r->cgroup_anon == (double)w->cgroup_anon &&
			  r->cgroup_page_cache == (double)w->cgroup_page_cache &&
			  r->cgroup_shmem == (double)w->cgroup_shmem &&
			  r->cgroup_kernel == (double)w->cgroup_kernel, "split: %s", line);
	} else {
		cr_expect(r->cgroup_anon < 0 && r->cgroup_page_cache < 0 && r->cgroup_shmem < 0 &&
			  r->cgroup_kernel < 0, "no split: absent, not 0: %s", line);
	}
	if (w->have_events)
		cr_expect(r->cgroup_limit_hits == (double)w->cgroup_limit_hits &&
			  r->cgroup_oom_kills == (double)w->cgroup_oom_kills, "events: %s", line);
	else
		cr_expect(r->cgroup_limit_hits < 0 && r->cgroup_oom_kills < 0,
			  "no events: absent, not 0: %s", line);
	cr_expect(r->has_top, "top: %s", line);
	cr_assert_eq(r->n_top, w->n_top, "top entries: %s", line);
	for (size_t k = 0; k < w->n_top; k++) {
		cr_expect_eq(r->pid[k], w->top[k].pid, "top[%zu] pid: %s", k, line);
		cr_expect_eq(r->bytes[k], (double)w->top[k].rss, "top[%zu] bytes: %s", k, line);
	}
}

Test(timeline, sample_line_written_then_read)
{
	struct timeline_sample s[4];
	memset(s, 0, sizeof s);
	/* untraced, no top */
	s[0].t = 0.01;
	s[0].rss = 3514368;
	s[0].processes = 1;
	/* traced, with pss and a full top (the largest numbers a run makes) */
	s[1] = (struct timeline_sample){ .t = 12345.678, .rss = UINT64_C(1) << 52, .processes = 40000,
					 .traced = 1, .heap = 5, .mapped_anon = 0,
					 .mapped_file = 7, .have_pss = 1, .pss = 99, .have_cgroup = 1,
					 .cgroup = UINT64_C(1) << 51, .have_split = 1,
					 .cgroup_anon = UINT64_MAX, .cgroup_page_cache = UINT64_MAX,
					 .cgroup_shmem = UINT64_MAX, .cgroup_kernel = UINT64_MAX,
					 .have_events = 1, .cgroup_limit_hits = UINT64_MAX,
					 .cgroup_oom_kills = UINT64_MAX, .n_top = 5 };
	for (size_t k = 0; k < 5; k++)
		s[1].top[k] = (struct timeline_top){ (pid_t)(4194304 - k), (UINT64_C(1) << 50) >> k };
	/* traced, no pss, one member */
	s[2] = (struct timeline_sample){ .t = 1e-05, .rss = 0, .traced = 1, .n_top = 1,
					 .top = { { 1, 0 } } };
	/* what a sample of memsup in a memory cgroup looks like */
	s[3] = (struct timeline_sample){ .t = 0.30817894700000004, .rss = 40960000, .processes = 3,
					 .traced = 1, .heap = 20000000, .mapped_anon = 8192,
					 .mapped_file = 0, .have_cgroup = 1, .cgroup = 38000000,
					 .have_split = 1, .cgroup_anon = 36000000,
					 .cgroup_page_cache = 1200000, .cgroup_shmem = 4096,
					 .cgroup_kernel = 795904, .have_events = 1, .cgroup_oom_kills = 1,
					 .n_top = 3,
					 .top = { { 900, 30000000 }, { 901, 6000000 }, { 902, 4960000 } } };
	for (size_t i = 0; i < sizeof s / sizeof s[0]; i++) {
		char buf[TIMELINE_LINE_MAX];
		size_t n = timeline_format_sample(&s[i], buf, sizeof buf);
		cr_assert_lt(n, sizeof buf);
		size_t len = body(buf, n);
		struct timeline_point r;
		cr_expect_eq(timeline_scan_sample(buf, len, &r), 0, "not the scanned form: %s", buf);
		expect_sample(&s[i], &r, buf);
		memset(&r, 0xff, sizeof r);
		cr_expect_eq(timeline_parse_sample(buf, len, 1, &r), 0);
		expect_sample(&s[i], &r, buf);
		/* a last line without its newline is only taken as whole JSON:
		 * this one is, so the slow path reads the same sample */
		memset(&r, 0xff, sizeof r);
		cr_expect_eq(timeline_parse_sample(buf, len, 0, &r), 0);
		expect_sample(&s[i], &r, buf);
	}
	char buf[TIMELINE_LINE_MAX];
	timeline_format_sample(&s[3], buf, sizeof buf);
	cr_expect_str_eq(buf, "{\"t\": 0.30817894700000004, \"rss\": 40960000, \"processes\": 3, "
			 "\"heap\": 20000000, \"mapped_anon\": 8192, \"mapped_file\": 0, "
			 "\"cgroup\": 38000000, \"cgroup_anon\": 36000000, "
			 "\"cgroup_page_cache\": 1200000, \"cgroup_shmem\": 4096, "
			 "\"cgroup_kernel\": 795904, \"cgroup_limit_hits\": 0, "
			 "\"cgroup_oom_kills\": 1, "
			 "\"top\": [[900, 30000000], [901, 6000000], [902, 4960000]]}\n");
	timeline_format_sample(&s[0], buf, sizeof buf);
	cr_expect_str_eq(buf, "{\"t\": 0.01, \"rss\": 3514368, \"processes\": 1, \"heap\": null, "
			 "\"mapped_anon\": null, \"mapped_file\": null, \"top\": []}\n");
}

Test(timeline, other_json_and_what_is_not_a_sample)
{
	struct timeline_point r;
	double t, v;
	/* other spacing and key order: not the scanned form, still read */
	const char *loose = "{\"top\":[[7,1],[0,5],[8,-1],[9,2.5],[10,1],[11,1],[12,1],[13,1]],"
			    "\"t\":0.3,\"rss\":9000005}";
	cr_expect_eq(timeline_scan_sample(loose, strlen(loose), &r), -EINVAL);
	cr_assert_eq(timeline_parse_sample(loose, strlen(loose), 1, &r), 0);
	cr_expect(r.t == 0.3 && r.rss == 9000005 && r.heap < 0 && r.has_top);
	/* pid 0, a negative size and a fractional pid are not members */
	cr_assert_eq(r.n_top, TIMELINE_TOP);
	cr_expect(r.pid[0] == 7 && r.pid[1] == 9 && r.bytes[1] == 2.5 && r.pid[4] == 12);
	/* older evidence: no "top" */
	const char *old = "{\"t\": 0.1, \"rss\": 3000000, \"processes\": 2, \"heap\": null}";
	cr_expect_eq(timeline_parse_sample(old, strlen(old), 1, &r), 0);
	cr_expect(!r.has_top && r.n_top == 0);
	cr_expect_eq(timeline_parse_rss("[ 1.0 , 2e6 ]", 13, 1, &t, &v), 0);
	cr_expect(t == 1.0 && v == 2e6);

	static const char *const not_rss[] = {
		"", "[0x10, 5]", "[02, 5]", "[3, 5]]", "[-, 5]", "[1, 2, 3]", "{\"t\": 1}", "[1, null]",
	};
	for (size_t i = 0; i < sizeof not_rss / sizeof not_rss[0]; i++)
		cr_expect_eq(timeline_parse_rss(not_rss[i], strlen(not_rss[i]), 1, &t, &v), -EINVAL,
			     "%s", not_rss[i]);
	/* a torn line: never the scanner, and not whole JSON */
	cr_expect_eq(timeline_parse_rss("[9.0, 99", 8, 0, &t, &v), -EINVAL);
	static const char *const not_samples[] = {
		"", "{}", "[1, 2]", "{\"rss\": 5}", "{\"t\": null, \"rss\": 5}", "{\"t\": 0.1, \"rss\": 5",
		"{\"t\": 0.1, \"rss\": 5, \"processes\": 1, \"heap\": null, \"top\": [], \"top\": []}",
	};
	for (size_t i = 0; i < sizeof not_samples / sizeof not_samples[0]; i++)
		cr_expect_eq(timeline_parse_sample(not_samples[i], strlen(not_samples[i]), 1, &r),
			     -EINVAL, "%s", not_samples[i]);
}

struct lines {
	char text[8][64];
	int whole[8];
	size_t n;
};

static int keep_line(void *ctx, const char *line, size_t len, int whole)
{
	struct lines *l = ctx;
	cr_assert_lt(l->n, 8);
	cr_assert_lt(len, sizeof l->text[0]);
	memcpy(l->text[l->n], line, len);
	l->text[l->n][len] = '\0';
	l->whole[l->n++] = whole;
	return 0;
}

Test(timeline, read_file_gives_each_line_and_the_torn_end)
{
	char dir[] = "/tmp/timeline-test-XXXXXX";
	cr_assert_not_null(mkdtemp(dir));
	tmp_adopt(dir);
	int dfd = open(dir, O_RDONLY | O_DIRECTORY);
	cr_assert_geq(dfd, 0);
	struct lines l = { .n = 0 };
	int found = 1;
	cr_expect_eq(timeline_read_file(dfd, "rss.jsonl", keep_line, &l, &found), 0);
	cr_expect(!found && l.n == 0, "a missing file is no lines, not an error");
	int fd = openat(dfd, "rss.jsonl", O_WRONLY | O_CREAT, 0600);
	cr_assert_geq(fd, 0);
	const char text[] = "[0.1, 5]\n\n[0.2, 6]\n[0.3, 7";
	cr_assert_eq(write(fd, text, sizeof text - 1), (ssize_t)(sizeof text - 1));
	close(fd);
	cr_expect_eq(timeline_read_file(dfd, "rss.jsonl", keep_line, &l, &found), 0);
	cr_expect(found);
	cr_assert_eq(l.n, 4);
	cr_expect(strcmp(l.text[0], "[0.1, 5]") == 0 && l.whole[0]);
	cr_expect(strcmp(l.text[1], "") == 0 && l.whole[1]);
	cr_expect(strcmp(l.text[3], "[0.3, 7") == 0 && !l.whole[3], "the torn end, not whole");
	close(dfd); /* tmp_adopt removes the directory */
}
