/* test_shim_handoff.c: the shim's lineage hand-off and end reports as
 * plain functions, without LD_PRELOAD: MEMTRACE_PARENT parsing, the envp
 * rebuilt for exec/spawn (with and without MEMTRACE_FOLLOW), the %p path
 * expansion, the stderr summary, the JSON report and the standalone tree's
 * table. */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/config.h"
#include "core/counters.h"
#include "record/lineage.h"
#include "record.h"
#include "report/summary.h"
#include "report/render.h"
#include "report/report.h"

Test(handoff, parse_parent)
{
	int32_t pid;
	uint32_t gen, rel;
	cr_assert_eq(lineage_parse("123.4:3", &pid, &gen, &rel), 0);
	cr_expect_eq(pid, 123);
	cr_expect_eq(gen, 4);
	cr_expect_eq(rel, MT_REL_EXEC);
	const char *bad[] = { "", "123", "123.4", "123.4:", "123.4:0", "123.4:8", "0.1:1",
			      "x.1:1", "1.x:1", "1.1:1x", "99999999999.1:1", "1.99999999999:1",
			      "-1.1:1" };
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
		cr_expect_eq(lineage_parse(bad[i], &pid, &gen, &rel), -EINVAL, "%s", bad[i]);
	cr_expect_eq(lineage_parse(NULL, &pid, &gen, &rel), -EINVAL);
}

static void config_fake(int follow)
{
	memset(&config, 0, sizeof config);
	config.loaded = 1;
	config.follow = follow;
	config.dir = config.out = "";
	config.self_path = "/opt/mt/libmemtrace.so";
	static char preload[] = "LD_PRELOAD=/opt/mt/libmemtrace.so",
		    dir[] = "MEMTRACE_DIR=/abs/rec", quiet[] = "MEMTRACE_QUIET=1",
		    follow_var[] = "MEMTRACE_FOLLOW=1", unset[] = "";
	for (unsigned k = 0; k < CONFIG_KEEP_COUNT; k++)
		config.keep[k] = unset;
	config.keep[CONFIG_KEEP_PRELOAD] = preload;
	config.keep[CONFIG_KEEP_DIR] = dir;
	config.keep[CONFIG_KEEP_QUIET] = quiet;
	config.keep[CONFIG_KEEP_FOLLOW] = follow_var;
}

static int has(char **env, const char *entry)
{
	for (; *env; env++)
		if (!strcmp(*env, entry))
			return 1;
	return 0;
}

static size_t count(char **env)
{
	size_t n = 0;
	while (env[n])
		n++;
	return n;
}

Test(handoff, traced_env_gets_parent_and_loses_stale_one)
{
	static struct mt_record rec;
	char *in[] = { "A=1", "LD_PRELOAD=/opt/mt/libmemtrace.so", "MEMTRACE_PARENT=9.9:1",
		       "MEMTRACE_DIR=/abs/rec", NULL };
	size_t slots = lineage_env_slots(in);
	char *out[slots];
	struct lineage_env le;
	counters_bind(&rec);
	config_fake(0);
	lineage_env_build(in, out, slots, &le, 42, 3, MT_REL_SPAWN);
	cr_expect_eq(count(out), 4);
	cr_expect(has(out, "A=1"));
	cr_expect(has(out, "MEMTRACE_PARENT=42.3:4"));
	cr_expect(!has(out, "MEMTRACE_PARENT=9.9:1"));
	cr_expect_eq(rec.flags & MT_FLAG_FOLLOWED, 0);
}

Test(handoff, scrubbed_env_left_alone_without_follow)
{
	static struct mt_record rec;
	char *in[] = { "A=1", NULL };
	size_t slots = lineage_env_slots(in);
	char *out[slots];
	struct lineage_env le;
	counters_bind(&rec);
	config_fake(0);
	lineage_env_build(in, out, slots, &le, 42, 0, MT_REL_EXEC);
	cr_expect_eq(count(out), 1, "an untraced child's env is the program's");
	cr_expect(has(out, "A=1"));
}

Test(handoff, scrubbed_env_followed)
{
	static struct mt_record rec;
	char *in[] = { "A=1", "MEMTRACE_QUIET=0", NULL };
	size_t slots = lineage_env_slots(in);
	char *out[slots];
	struct lineage_env le;
	counters_bind(&rec);
	config_fake(1);
	lineage_env_build(in, out, slots, &le, 7, 1, MT_REL_EXEC);
	cr_expect(has(out, "LD_PRELOAD=/opt/mt/libmemtrace.so"));
	cr_expect(has(out, "MEMTRACE_DIR=/abs/rec"));
	cr_expect(has(out, "MEMTRACE_QUIET=0"), "the program's own setting wins");
	cr_expect(!has(out, "MEMTRACE_QUIET=1"));
	cr_expect(has(out, "MEMTRACE_FOLLOW=1"));
	cr_expect(has(out, "MEMTRACE_PARENT=7.1:3"));
	cr_expect(rec.flags & MT_FLAG_FOLLOWED);
}

Test(handoff, foreign_preload_gets_ours_prepended_with_follow)
{
	static struct mt_record rec;
	char *in[] = { "LD_PRELOAD=/usr/lib/libother.so", NULL };
	size_t slots = lineage_env_slots(in);
	char *out[slots];
	struct lineage_env le;
	counters_bind(&rec);
	config_fake(1);
	lineage_env_build(in, out, slots, &le, 7, 0, MT_REL_SPAWN);
	cr_expect(has(out, "LD_PRELOAD=/opt/mt/libmemtrace.so /usr/lib/libother.so"));
	cr_expect(!has(out, "LD_PRELOAD=/usr/lib/libother.so"));
	cr_expect(has(out, "MEMTRACE_PARENT=7.0:4"));
}

Test(handoff, null_envp)
{
	static struct mt_record rec;
	size_t slots = lineage_env_slots(NULL);
	char *out[slots];
	struct lineage_env le;
	counters_bind(&rec);
	config_fake(0);
	lineage_env_build(NULL, out, slots, &le, 7, 0, MT_REL_SPAWN);
	cr_expect_eq(count(out), 0);
}

Test(report, expand_path)
{
	char out[64];
	cr_assert_eq(report_expand_path("/t/mt.%p.json", 1234, out, sizeof out), 0);
	cr_expect_str_eq(out, "/t/mt.1234.json");
	cr_assert_eq(report_expand_path("%%p-%p%", 5, out, sizeof out), 0);
	cr_expect_str_eq(out, "%p-5%");
	cr_expect_eq(report_expand_path("/a/very/long/pattern/%p/that/does/not/fit/in/sixteen", 1,
					 out, 16),
		     -ENAMETOOLONG);
}

static struct mt_record sample(void)
{
	struct mt_record r;
	memset(&r, 0, sizeof r);
	r.version = MT_RECORD_VERSION;
	r.pid = 77;
	r.heap_peak = 3 * 1024 * 1024 + 512 * 1024;
	r.heap_current = 100;
	r.calls[MT_CALL_MALLOC] = 12;
	r.calls[MT_CALL_FREE] = 11;
	r.state = MT_STATE_EXITED;
	r.relation = MT_REL_FORK;
	memcpy(r.argv, "prog\0a\"b\x01\xff", 11);
	r.argv_bytes = 11;
	r.argc = 2;
	strcpy(r.exe, "/bin/prog");
	r.marker_count = 1;
	strcpy(r.markers[0].label, "phase\n1");
	return r;
}

Test(report, summary_text)
{
	struct mt_record r = sample();
	char buf[1024];
	size_t n = render_summary(&r, buf, sizeof buf);
	cr_expect_eq(n, strlen(buf));
	cr_expect_not_null(strstr(buf, "memtrace: pid 77 prog\n"), "%s", buf);
	cr_expect_not_null(strstr(buf, "heap peak 3.6 MB, at exit 100 B"), "%s", buf);
	cr_expect_not_null(strstr(buf, "calls malloc=12 free=11\n"), "%s", buf);
}

Test(report, json_is_valid_and_complete, .timeout = 20)
{
	struct mt_record r = sample();
	char path[] = "/tmp/mtjsonXXXXXX", cmd[512], got[512];
	int fd = mkstemp(path);
	FILE *p;
	cr_assert_geq(fd, 0);
	cr_assert_eq(render_json(&r, fd), 0);
	close(fd);
	snprintf(cmd, sizeof cmd,
		 "python3 -c 'import json,os,sys; d=json.load(open(sys.argv[1])); "
		 "print(d[\"pid\"], d[\"relation\"], d[\"state\"], d[\"heap\"][\"peak\"], "
		 "[os.fsencode(a) for a in d[\"argv\"]], d[\"markers\"][0][\"label\"] == \"phase\\n1\")' %s",
		 path);
	p = popen(cmd, "r");
	cr_assert_not_null(p);
	cr_assert_not_null(fgets(got, sizeof got, p));
	cr_expect_eq(pclose(p), 0);
	cr_expect_str_eq(got, "77 fork exited 3670016 [b'prog', b'a\"b\\x01\\xff'] True\n");
	unlink(path);
}

/* ---- the standalone tree's table (summary.c) --------------------------- */

static struct mt_record image(int32_t pid, uint32_t gen, uint32_t relation, uint64_t peak,
			      const char *argv0)
{
	struct mt_record r;
	memset(&r, 0, sizeof r);
	r.pid = pid;
	r.gen = gen;
	r.relation = relation;
	r.parent_pid = relation == MT_REL_ROOT ? 0 : relation == MT_REL_EXEC ? pid : 100;
	r.state = MT_STATE_EXITED;
	r.total_peak = peak;
	r.heap_peak = peak;
	r.vm_hwm_kb = 2048;
	r.argv_bytes = (uint32_t)strlen(argv0) + 1;
	memcpy(r.argv, argv0, r.argv_bytes);
	return r;
}

/* Twelve images: the ten largest are rows, largest first; the other two
 * are counted with the larger of their peaks; every peak is in the sum. */
Test(summary, top_ten_largest_first_rest_counted)
{
	struct summary_tree t;
	struct mt_record r;
	uint64_t sum = 0;
	static const uint64_t peaks[12] = { 5000, 900000, 1, 70000, 123456789, 42,
					    60000, 3000000, 800, 20000, 20000, 999 };
	summary_tree_init(&t, 100);
	for (int i = 0; i < 12; i++) {
		r = image(100 + i, 0, i ? MT_REL_FORK : MT_REL_ROOT, peaks[i], "prog");
		summary_tree_add(&t, &r);
		sum += peaks[i];
	}
	r = image(100, 1, MT_REL_EXEC, 10, "prog2"); /* an exec: same process */
	r.state = MT_STATE_RUNNING;
	summary_tree_add(&t, &r);
	sum += 10;
	cr_expect_eq(t.images, 13);
	cr_expect_eq(t.processes, 12);
	cr_expect_eq(t.running, 1);
	cr_expect_eq(t.sum_total_peaks, sum);
	cr_assert_eq(t.ntop, SUMMARY_ROWS);
	cr_expect_eq(t.top[0].total_peak, 123456789);
	cr_expect_eq(t.top[1].total_peak, 3000000);
	for (unsigned i = 1; i < t.ntop; i++)
		cr_expect_geq(t.top[i - 1].total_peak, t.top[i].total_peak);
	/* equal peaks: the lower pid first */
	cr_expect_eq(t.top[5].total_peak, 20000);
	cr_expect_eq(t.top[6].total_peak, 20000);
	cr_expect_lt(t.top[5].pid, t.top[6].pid);
	/* out of the table: 42, 10 and 1; the largest of them 42 */
	cr_expect_eq(t.rest_max_total, 42);
}

Test(summary, table_text)
{
	struct summary_tree t;
	struct mt_record r;
	char buf[4096];
	char long_cmd[200];
	summary_tree_init(&t, 4242);
	r = image(4242, 0, MT_REL_ROOT, 2048, "bash");
	summary_tree_add(&t, &r);
	r = image(4242, 1, MT_REL_EXEC, 50 * 1024 * 1024, "python3");
	summary_tree_add(&t, &r);
	memset(long_cmd, 'x', sizeof long_cmd - 1);
	long_cmd[sizeof long_cmd - 1] = '\0';
	r = image(4300, 0, MT_REL_FORK, 4096, long_cmd);
	r.parent_pid = 4242;
	r.state = MT_STATE_RUNNING;
	summary_tree_add(&t, &r);
	size_t n = summary_format(&t, buf, sizeof buf);
	cr_expect_eq(n, strlen(buf));
	cr_expect_not_null(strstr(buf, "memtrace: 3 images in 2 processes from pid 4242 "
					"(1 still running)"),
			   "%s", buf);
	/* the largest first: python3, its lineage, its peak */
	const char *row = strstr(buf, "COMMAND\n");
	cr_assert_not_null(row, "%s", buf);
	cr_expect_not_null(strstr(row, "4242  exec #1"), "%s", buf);
	cr_expect_lt(strstr(row, "python3"), strstr(row, "bash"), "%s", buf);
	cr_expect_not_null(strstr(buf, "52.4 MB"), "%s", buf);
	cr_expect_not_null(strstr(buf, "fork of 4242"), "%s", buf);
	cr_expect_not_null(strstr(buf, "running  xxx"), "%s", buf);
	cr_expect_not_null(strstr(buf, "xxx...\n"), "a cut command says so: %s", buf);
	cr_expect_not_null(strstr(buf, "each at its own time"), "%s", buf);
	cr_expect_null(strstr(buf, "more image"), "all rows shown: %s", buf);
}
