/* test_resources.c: the run record's outcome table -- each outcome's name
 * in resources.json and memsup's exit status -- and the record's "reason"
 * as the JSON says it. */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "analyze/findings.h"
#include "analyze/merge.h"
#include "evidence/evidence.h"
#include "evidence/jsonr.h"
#include "evidence/resources.h"
#include "test_tmp.h"

Test(resources, every_outcome_has_one_name_that_reads_back)
{
	enum sup_reason r;
	cr_expect_null(runrecord_reason_name(SUP_REASON_NONE), "no reason is JSON null");
	cr_expect_eq(runrecord_reason_parse(NULL, &r), 0);
	cr_expect_eq(r, SUP_REASON_NONE);
	for (int i = SUP_REASON_NONE + 1; i < SUP_REASON_COUNT; i++) {
		const char *name = runrecord_reason_name((enum sup_reason)i);
		cr_assert_not_null(name, "outcome %d has no name", i);
		cr_expect_eq(runrecord_reason_parse(name, &r), 0, "%s", name);
		cr_expect_eq(r, (enum sup_reason)i, "%s reads back as another outcome", name);
	}
	cr_expect_null(runrecord_reason_name(SUP_REASON_COUNT));
	cr_expect_eq(runrecord_reason_parse("mem_limit_exceeded_twice", &r), -EINVAL,
		     "a name of another memsup is not guessed at");
	cr_expect_eq(runrecord_reason_parse("", &r), -EINVAL);
}

/* The names and statuses memsup(1), the README and measure_command
 * (scripts/memsup.py) use. */
Test(resources, names_and_exit_statuses_as_documented)
{
	static const struct {
		enum sup_reason r;
		const char *name;
		int status;            /* with run status 77 */
	} want[] = {
		{ SUP_REASON_NONE, NULL, 77 },
		{ SUP_REASON_RUNNING, "running", -1 },
		{ SUP_REASON_WALL_BUDGET, "wall_budget_exceeded", 124 },
		{ SUP_REASON_RSS_BUDGET, "rss_budget_exceeded", 123 },
		{ SUP_REASON_PROCS_BUDGET, "procs_budget_exceeded", 122 },
		{ SUP_REASON_INTERRUPTED, "interrupted", 77 },
		{ SUP_REASON_START_FAILED, "start_failed", 77 },
		{ SUP_REASON_EVIDENCE_FAILED, "evidence_failed", SUP_EXIT_ERROR },
		{ SUP_REASON_MEM_LIMIT, "mem_limit_exceeded", 123 },
		{ SUP_REASON_SUPERVISOR_KILLED, "supervisor_killed", 137 },
	};
	cr_assert_eq(sizeof want / sizeof want[0], SUP_REASON_COUNT, "an outcome is untested");
	for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
		const char *name = runrecord_reason_name(want[i].r);
		if (want[i].name)
			cr_expect_str_eq(name, want[i].name);
		else
			cr_expect_null(name);
		cr_expect_eq(runrecord_exit_status(want[i].r, 77), want[i].status, "%s",
			     name ? name : "null");
	}
}

/* "reason" in the JSON: the table's name, or null. */
Test(resources, reason_in_the_json)
{
	char *cmd[] = { "prog", NULL };
	struct sup_record r;
	runrecord_init(&r);
	r.command = cmd;
	r.command_argc = 1;
	static const struct {
		enum sup_reason r;
		const char *json;
	} cases[] = {
		{ SUP_REASON_RUNNING, "\"reason\": \"running\"," },
		{ SUP_REASON_RSS_BUDGET, "\"reason\": \"rss_budget_exceeded\"," },
		{ SUP_REASON_NONE, "\"reason\": null," },
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		FILE *f = tmpfile();
		cr_assert_not_null(f);
		r.reason = cases[i].r;
		cr_assert_eq(resources_write_json(fileno(f), &r), 0);
		static char buf[1 << 16];
		size_t n = (size_t)pread(fileno(f), buf, sizeof buf - 1, 0);
		buf[n] = '\0';
		cr_expect_not_null(strstr(buf, cases[i].json), "%s not in:\n%s", cases[i].json, buf);
		fclose(f);
	}
	runrecord_free(&r);
}

/* The merge's figures land in the record's keys, in MB, and only when the
 * merge has them. */
Test(resources, apply_merge)
{
	struct image_view im[3];
	memset(im, 0, sizeof im);
	im[0].traced = im[0].sampled = 1;
	im[0].at_peak = 1; /* a traced image at the peak: the heap is measured */
	im[1].sampled = 1;
	im[2].traced = 1;
	struct sup_record r;
	runrecord_init(&r);
	struct merged_run m = { .rec = &r, .tracing = 1, .images = im, .n_images = 3 };
	m.peak.at_s = 0.5;
	m.peak.heap = 2500000;
	m.peak.map_anon = 1000000;
	m.peak.map_file = 500000;
	m.peak.have_smaps = 1;
	m.peak.pss = 7000000;
	struct finding f[FINDINGS_MAX];
	findings_apply(&r, &m, f, FINDINGS_MAX);
	cr_expect_eq(r.processes_traced, 2);
	cr_expect_eq(r.processes_sampled, 2);
	cr_expect_eq(r.peak_heap_mb, 2.5);
	cr_expect_eq(r.peak_mapped_mb, 1.5);
	cr_expect_eq(r.peak_pss_mb, 7.0);
	cr_expect_eq(r.findings, f);
	cr_expect_leq(r.n_findings, FINDINGS_MAX);

	/* tracing on, but no traced image at the peak (a static binary, a
	 * scrubbed environment): the heap was not measured -- null, not 0 */
	runrecord_init(&r);
	im[0].at_peak = 0;
	im[1].at_peak = 1;
	m.peak.heap = 0;
	findings_apply(&r, &m, f, FINDINGS_MAX);
	cr_expect_lt(r.peak_heap_mb, 0, "null when nothing at the peak was traced");
	cr_expect_lt(r.peak_mapped_mb, 0);

	/* untraced, no sample: nothing but the counts */
	runrecord_init(&r);
	m.tracing = 0;
	m.peak.at_s = -1;
	findings_apply(&r, &m, f, FINDINGS_MAX);
	cr_expect_eq(r.processes_sampled, 2);
	cr_expect_lt(r.peak_heap_mb, 0, "null without tracing");
	cr_expect_lt(r.peak_mapped_mb, 0);
	cr_expect_lt(r.peak_pss_mb, 0, "null without a peak sample");
}

/* What the sentinel writes when memsup was killed: the same record, whole
 * and valid, with the outcome, memsup's status and the error changed and
 * nothing else; a record memsup had finished is left alone. */
Test(resources, sentinel_patch_of_a_running_record)
{
	char *cmd[] = { "prog", "a\"b", NULL };
	char *env[] = { "K=\"running\"," };
	struct sup_record r;
	runrecord_init(&r);
	r.command = cmd;
	r.command_argc = 2;
	r.env = env;
	r.n_env = 1;
	r.samples = 42;
	char dir[] = "/tmp/memsup-patch-XXXXXX";
	cr_assert_not_null(mkdtemp(dir));
	tmp_adopt(dir);
	int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	int fd = openat(dfd, "resources.json", O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	cr_assert_eq(resources_write_json(fd, &r), 0);
	close(fd);
	cr_assert_eq(evidence_mark_killed(dfd, "memsup was \"killed\"\n"), 0);
	struct jsonr_value *v;
	char err[256];
	cr_assert_eq(jsonr_read_file(dfd, "resources.json", 1 << 20, &v, err, sizeof err), 0, "%s",
		     err);
	cr_expect_str_eq(jsonr_str(jsonr_get(v, "reason"), "?"), "supervisor_killed");
	cr_expect_eq(jsonr_num(jsonr_get(v, "exit_status"), -1), 137);
	cr_expect_str_eq(jsonr_str(jsonr_get(v, "error"), "?"), "memsup was ?killed??");
	cr_expect_eq(jsonr_num(jsonr_get(v, "samples"), -1), 42, "the rest is kept");
	cr_expect_str_eq(jsonr_str(jsonr_get(jsonr_get(v, "env"), "K"), "?"), "\"running\",",
			 "a value that looks like the key is not touched");
	jsonr_free(v);
	cr_expect_eq(faccessat(dfd, "resources.json.tmp", F_OK, 0), -1, "no temporary left");
	/* a second time: the record is not running any more */
	cr_expect_eq(evidence_mark_killed(dfd, "again"), -ENOENT);
	/* an ended record is left as it is */
	r.reason = SUP_REASON_NONE;
	r.exit_status = 0;
	fd = openat(dfd, "resources.json", O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	cr_assert_eq(resources_write_json(fd, &r), 0);
	close(fd);
	cr_expect_eq(evidence_mark_killed(dfd, "late"), -ENOENT);
	char *out;
	size_t outlen;
	cr_expect_eq(resources_patch_killed("{}", 2, "x", &out, &outlen), -ENOENT);
	close(dfd); /* tmp_adopt removes the directory */
	runrecord_free(&r);
}

/* records_not_believed: each aside's file, pid and why, cut at
 * RUNRECORD_MAX_NOT_BELIEVED, and the total that says it was cut (a
 * command can forge thousands of files). */
Test(resources, records_not_believed_listed_and_counted)
{
	char *cmd[] = { "prog", NULL };
	static struct merge_aside aside[RUNRECORD_MAX_NOT_BELIEVED + 50];
	struct sup_record r;
	runrecord_init(&r);
	r.command = cmd;
	r.command_argc = 1;
	for (size_t i = 0; i < sizeof aside / sizeof aside[0]; i++) {
		aside[i].pid = (pid_t)(3000000 + i);
		aside[i].gen = (uint32_t)(i % 2);
		snprintf(aside[i].why, sizeof aside[i].why, "pid %d cannot exist: \"why\" %zu",
			 (int)aside[i].pid, i);
	}
	r.not_believed = aside;
	r.n_not_believed = sizeof aside / sizeof aside[0];
	FILE *f = tmpfile();
	cr_assert_not_null(f);
	cr_assert_eq(resources_write_json(fileno(f), &r), 0);
	static char buf[1 << 18];
	size_t n = (size_t)pread(fileno(f), buf, sizeof buf - 1, 0);
	buf[n] = '\0';
	fclose(f);
	struct jsonr_value *doc;
	char err[128];
	cr_assert_eq(jsonr_parse(buf, n, &doc, err, sizeof err), 0, "%s", err);
	const struct jsonr_value *list = jsonr_get(doc, "records_not_believed");
	cr_assert_not_null(list);
	cr_expect_eq(jsonr_num(jsonr_get(doc, "records_not_believed_total"), -1),
		     (double)(RUNRECORD_MAX_NOT_BELIEVED + 50));
	cr_expect_not_null(jsonr_at(list, RUNRECORD_MAX_NOT_BELIEVED - 1));
	cr_expect_null(jsonr_at(list, RUNRECORD_MAX_NOT_BELIEVED), "the list is cut");
	const struct jsonr_value *one = jsonr_at(list, 1);
	cr_expect_str_eq(jsonr_str(jsonr_get(one, "file"), ""), "3000001.1.mtr");
	cr_expect_eq(jsonr_num(jsonr_get(one, "pid"), -1), 3000001);
	cr_expect_str_eq(jsonr_str(jsonr_get(one, "why"), ""), "pid 3000001 cannot exist: \"why\" 1");
	jsonr_free(doc);
	/* none: an empty list and 0, not absent keys */
	r.n_not_believed = 0;
	f = tmpfile();
	cr_assert_not_null(f);
	cr_assert_eq(resources_write_json(fileno(f), &r), 0);
	n = (size_t)pread(fileno(f), buf, sizeof buf - 1, 0);
	buf[n] = '\0';
	fclose(f);
	cr_expect_not_null(strstr(buf, "\"records_not_believed\": [],"), "%s", buf);
	cr_expect_not_null(strstr(buf, "\"records_not_believed_total\": 0,"), "%s", buf);
	runrecord_free(&r);
}
