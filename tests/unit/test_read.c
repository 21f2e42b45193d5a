/* test_read.c: the one reader of an evidence directory (evidence/read.h),
 * over records written here: each state a reason names, the answer and its
 * source (peak_mb, else the polled RSS peak), the first problem of a broken
 * record, and the typed process images of a lean processes.json and of an
 * older memsup's layout.  tests/python/test_readers_agree.py holds real
 * directories to the same rules, against memsup.py, report and diff. */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "evidence/files.h"
#include "evidence/read.h"

static int dir_with(const char *name, const char *text)
{
	char tmpl[] = "/tmp/mt-read.XXXXXX";
	cr_assert_not_null(mkdtemp(tmpl));
	int dfd = open(tmpl, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	cr_assert_geq(dfd, 0);
	int fd = openat(dfd, name, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	cr_assert_geq(fd, 0);
	cr_assert_eq(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	close(fd);
	return dfd; /* the directory stays in /tmp: the test's process ends */
}

static void read_run(const char *text, struct evidence_run *r)
{
	char err[400];
	int dfd = dir_with(EVIDENCE_RESOURCES, text);
	cr_assert_eq(evidence_read_run(dfd, r, err, sizeof err), 0, "%s", err);
	close(dfd);
}

#define WHOLE "\"command\": [\"x\"], \"wall_s\": 2.5, \"peak_tree_rss_mb\": 40.0"

Test(read, ended_run_answers_with_peak_mb)
{
	struct evidence_run r;
	read_run("{" WHOLE ", \"reason\": null, \"peak_mb\": 42.5, \"peak_source\": \"cgroup\", "
		 "\"exit_status\": 0, \"blind_spots\": [{}, {}]}", &r);
	cr_expect_eq(r.state, EVIDENCE_ENDED);
	cr_expect_eq(r.answer_mb, 42.5);
	cr_expect_str_eq(r.source, "cgroup");
	cr_expect_str_empty(r.broken);
	cr_expect(r.has_processes);
	cr_expect(evidence_run_comparable(&r));
	cr_expect_eq(r.blind_spots, 2);
	cr_expect(r.has_exit && r.exit_status == 0);
	cr_expect(isnan(r.heap_mb), "absent: NAN");
	evidence_run_free(&r);
}

Test(read, killed_memsup_answers_with_the_polled_peak)
{
	struct evidence_run r;
	read_run("{" WHOLE ", \"reason\": \"supervisor_killed\", \"peak_mb\": null, "
		 "\"peak_source\": null, \"exit_status\": 137}", &r);
	cr_expect_eq(r.state, EVIDENCE_KILLED);
	cr_expect_eq(r.answer_mb, 40.0);
	cr_expect_str_eq(r.source, "polled_rss");
	cr_expect(!r.has_processes, "memsup never wrote them");
	cr_expect(!evidence_run_comparable(&r), "a lower bound: no run to hold to a limit");
	evidence_run_free(&r);
}

Test(read, old_record_answers_with_the_polled_peak)
{
	struct evidence_run r;
	read_run("{" WHOLE ", \"exit_code\": 0}", &r);
	cr_expect_eq(r.state, EVIDENCE_ENDED);
	cr_expect_eq(r.answer_mb, 40.0);
	cr_expect_str_eq(r.source, "polled_rss");
	evidence_run_free(&r);
}

Test(read, running_is_never_broken_by_missing_keys)
{
	struct evidence_run r;
	read_run("{\"reason\": \"running\", \"peak_tree_rss_mb\": 3.0}", &r);
	cr_expect_eq(r.state, EVIDENCE_RUNNING);
	cr_expect_str_empty(r.broken);
	cr_expect(!evidence_run_comparable(&r));
	evidence_run_free(&r);
}

Test(read, start_failed_has_no_answer)
{
	struct evidence_run r;
	read_run("{" WHOLE ", \"reason\": \"start_failed\", \"peak_mb\": null, "
		 "\"error\": \"execvp: No such file or directory\"}", &r);
	cr_expect_eq(r.state, EVIDENCE_START_FAILED);
	cr_expect(isnan(r.answer_mb));
	cr_expect_null(r.source);
	cr_expect_str_eq(r.error, "execvp: No such file or directory");
	cr_expect(!evidence_run_comparable(&r));
	evidence_run_free(&r);
}

Test(read, first_problem_is_named)
{
	struct evidence_run r;
	read_run("{\"wall_s\": 1, \"oom\": 3}", &r);
	cr_expect_str_eq(r.broken, EVIDENCE_RESOURCES ": \"oom\": not an array or null");
	evidence_run_free(&r);
	read_run("{\"wall_s\": 1}", &r);
	cr_expect_str_eq(r.broken, EVIDENCE_RESOURCES ": no \"command\" array");
	evidence_run_free(&r);
	read_run("{\"command\": [], \"wall_s\": 1, \"peak_mb\": 5}", &r);
	cr_expect_str_eq(r.broken, EVIDENCE_RESOURCES ": no numeric \"peak_tree_rss_mb\"");
	cr_expect(!evidence_run_comparable(&r));
	evidence_run_free(&r);
}

Test(read, unreadable_record_is_an_error)
{
	struct evidence_run r;
	char err[400];
	int dfd = dir_with(EVIDENCE_RESOURCES, "[1, 2]");
	cr_expect_eq(evidence_read_run(dfd, &r, err, sizeof err), -EINVAL);
	cr_expect_str_eq(err, EVIDENCE_RESOURCES ": not a JSON object");
	evidence_run_free(&r);
	close(dfd);
}

struct seen {
	struct evidence_process p[4];
	size_t n;
};

static int keep(const struct evidence_process *p, void *ctx)
{
	struct seen *s = ctx;
	cr_assert_lt(s->n, 4);
	s->p[s->n] = *p;
	s->p[s->n].argv = NULL; /* borrowed until the callback returns */
	s->p[s->n++].exe = NULL;
	return 0;
}

Test(read, process_images_typed_and_old_layouts_read_the_same)
{
	char err[400];
	/* a lean image with the shim's VmHWM and heap, one polled only, and
	 * one of a memsup before the one record layout (start, end and the
	 * flat heap_current inside the record) */
	int dfd = dir_with(EVIDENCE_PROCESSES,
			   "[{\"pid\": 10, \"argv\": [\"/bin/a\"], \"first_seen_s\": 0.1, "
			   "\"last_seen_s\": 0.9, \"polled_peak_rss\": 4096, \"start_s\": 0.05, "
			   "\"end_s\": 0.95, \"record\": {\"state\": \"exited\", "
			   "\"kernel\": {\"vm_hwm_kb\": 8}, \"heap\": {\"current\": 100}}},"
			   "{\"pid\": 11, \"lineage\": {\"parent_pid\": 10}, \"polled_peak_rss\": 2048, "
			   "\"first_seen_s\": 0.2, \"last_seen_s\": 0.4, \"exit_code\": 0},"
			   "{\"pid\": 12, \"record\": {\"state\": \"_exit\", \"start_s\": 1.5, "
			   "\"end_s\": 2.5, \"heap_current\": 7}}]");
	struct seen s = { .n = 0 };
	cr_assert_eq(evidence_read_processes(dfd, keep, &s, err, sizeof err), 0, "%s", err);
	close(dfd);
	cr_assert_eq(s.n, 3);
	cr_expect_eq(s.p[0].peak_bytes, 8 * 1024, "VmHWM first");
	cr_expect_eq(s.p[0].live_bytes, 100);
	cr_expect_eq(s.p[0].start_s, 0.05);
	cr_expect_eq(s.p[0].end_s, 0.95);
	cr_expect_eq(s.p[1].peak_bytes, 2048, "the polled peak without VmHWM");
	cr_expect_eq(s.p[1].parent_pid, 10);
	cr_expect(isnan(s.p[1].live_bytes), "no record: no live heap");
	cr_expect_eq(s.p[1].start_s, 0.2, "the poller's first sight");
	cr_expect_eq(s.p[1].end_s, 0.4, "its exit was seen: the poller's last sight");
	cr_expect_eq(s.p[2].peak_bytes, -1, "neither");
	cr_expect_eq(s.p[2].live_bytes, 7);
	cr_expect_eq(s.p[2].start_s, 1.5);
	cr_expect_eq(s.p[2].end_s, 2.5);
}
