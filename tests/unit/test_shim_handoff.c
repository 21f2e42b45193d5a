/* test_shim_handoff.c: the shim's lineage hand-off and end reports as
 * plain functions, without LD_PRELOAD: MEMTRACE_PARENT parsing, the envp
 * rebuilt for exec/spawn (with and without MEMTRACE_FOLLOW), the %p path
 * expansion, the stderr summary and the JSON report. */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "config.h"
#include "counters.h"
#include "lineage.h"
#include "record.h"
#include "report.h"

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
	strcpy(config.self_path, "/opt/mt/libmemtrace.so");
	strcpy(config.env_preload, "LD_PRELOAD=/opt/mt/libmemtrace.so");
	strcpy(config.env_dir, "MEMTRACE_DIR=/abs/rec");
	strcpy(config.env_quiet, "MEMTRACE_QUIET=1");
	strcpy(config.env_follow, "MEMTRACE_FOLLOW=1");
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
	size_t n = report_format_summary(&r, buf, sizeof buf);
	cr_expect_eq(n, strlen(buf));
	cr_expect_not_null(strstr(buf, "memtrace: pid 77 prog\n"), "%s", buf);
	cr_expect_not_null(strstr(buf, "heap peak 3.5 MiB, at exit 100 B"), "%s", buf);
	cr_expect_not_null(strstr(buf, "calls malloc=12 free=11\n"), "%s", buf);
}

Test(report, json_is_valid_and_complete, .timeout = 20)
{
	struct mt_record r = sample();
	char path[] = "/tmp/mtjsonXXXXXX", cmd[512], got[512];
	int fd = mkstemp(path);
	FILE *p;
	cr_assert_geq(fd, 0);
	cr_assert_eq(report_write_json(&r, fd), 0);
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
