/* test_evidence.c: the evidence directory's creation rules, and the record
 * written to it as valid JSON (parsed by python3, not by us). */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "output/evidence.h"
#include "output/resources.h"

static void mktmp(char *dir, size_t cap)
{
	snprintf(dir, cap, "/tmp/memsup-evidence-XXXXXX");
	cr_assert_not_null(mkdtemp(dir));
}

Test(evidence, create_makes_parents_and_refuses_existing)
{
	char tmp[PATH_MAX], path[PATH_MAX + 64];
	mktmp(tmp, sizeof tmp);
	snprintf(path, sizeof path, "%s/a/b/ev/", tmp);
	struct evidence ev;
	const char *at;
	cr_assert_eq(evidence_create(&ev, path, 1, &at), 0);
	cr_expect_null(at);
	cr_expect_eq(ev.path[0], '/');
	evidence_close(&ev);
	char f[PATH_MAX + 96];
	snprintf(f, sizeof f, "%s/a/b/ev/stdout.log", tmp);
	cr_expect_eq(access(f, F_OK), 0);
	snprintf(f, sizeof f, "%s/a/b/ev/rss.jsonl", tmp);
	cr_expect_eq(access(f, F_OK), 0);
	cr_expect_eq(evidence_create(&ev, path, 1, &at), -EEXIST);
}

Test(evidence, record_is_valid_json_and_atomic, .timeout = 20)
{
	char tmp[PATH_MAX], path[PATH_MAX + 64];
	mktmp(tmp, sizeof tmp);
	snprintf(path, sizeof path, "%s/ev", tmp);
	struct evidence ev;
	const char *at;
	cr_assert_eq(evidence_create(&ev, path, 1, &at), 0);

	struct sup_record r;
	char *cmd[] = { "prog", "we\"ird\n", "\x01\xff", NULL };
	char *env[] = { "A=1", "B=two words", "A=3" };
	resources_init(&r);
	r.command = cmd;
	r.command_argc = 3;
	r.poll_s = 0.01;
	r.env = env;
	r.n_env = 3;
	r.cwd = "/";
	r.started_at = "2026-12-02T10:00:00.000Z";
	cr_assert_eq(evidence_write_record(&ev, &r, 1), 0);
	r.reason = SUP_REASON_NONE;
	r.have_exit = 1;
	r.exit_code = -9;
	r.signal = 9;
	r.exit_status = 123;
	r.rss_budget_mb = 100;
	r.peak_bytes = 123456789;
	r.peak_at_s = 0.25;
	r.leftovers = calloc(1, sizeof *r.leftovers);
	r.leftovers[0].pid = 42;
	r.leftovers[0].argv = malloc(6);
	memcpy(r.leftovers[0].argv, "ab\0cd", 5);
	r.leftovers[0].argv_len = 5;
	r.n_leftovers = 1;
	resources_note(&r, "a note");
	cr_assert_eq(evidence_write_record(&ev, &r, 1), 0);
	resources_free(&r);
	evidence_close(&ev);

	char cmdline[PATH_MAX + 1024];
	snprintf(cmdline, sizeof cmdline,
		 "python3 -c 'import json,sys,os\n"
		 "d=json.load(open(sys.argv[1]))\n"
		 "assert d[\"command\"][1]==\"we\\\"ird\\n\", d[\"command\"]\n"
		 "assert os.fsencode(d[\"command\"][2])==b\"\\x01\\xff\"\n"
		 "assert d[\"exit_code\"]==-9 and d[\"signal\"]==9 and d[\"exit_status\"]==123\n"
		 "assert d[\"reason\"] is None and d[\"wall_budget_s\"] is None\n"
		 "assert d[\"rss_budget_mb\"]==100.0 and d[\"peak_tree_rss_mb\"]==123.456789\n"
		 "assert d[\"env\"]=={\"B\":\"two words\",\"A\":\"3\"}, d[\"env\"]\n"
		 "assert d[\"leftover_processes_killed\"]==[{\"pid\":42,\"argv\":[\"ab\",\"cd\"]}]\n"
		 "assert d[\"notes\"]==[\"a note\"]\n"
		 "assert not os.path.exists(sys.argv[1]+\".tmp\")\n"
		 "' %s/resources.json",
		 path);
	cr_expect_eq(system(cmdline), 0, "python3 rejected the record");
}
