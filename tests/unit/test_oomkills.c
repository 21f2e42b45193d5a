/* test_oomkills.c: the record's "oom" key read back (evidence/oomkills.h),
 * over the hand-written keys of tests/data/oom/ that every reader of it is
 * fed, and over forgeries made here key by key: the count, the victim and
 * the limit as the readers show them; a key of the wrong type, at any
 * depth, is named and nothing of the list is used. */
#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <errno.h>
#include <math.h>
#include <string.h>

#include "evidence/jsonr.h"
#include "evidence/oomkills.h"
#include "test_oom_fixtures.h"

static struct jsonr_value *parse(const char *text)
{
	struct jsonr_value *v;
	char err[200];
	cr_assert_eq(jsonr_parse(text, strlen(text), &v, err, sizeof err), 0, "%s: %s", err, text);
	return v;
}

/* Fixture NAME's keys, read; the rc of oomkills_read, err filled. */
static int read_fixture(const char *name, struct oomkills *k, char *err, size_t errlen)
{
	static char text[1 << 16];
	oom_fixture(name, text, sizeof text);
	struct jsonr_value *v = parse(text);
	int rc = oomkills_read(v, k, err, errlen);
	jsonr_free(v);
	return rc;
}

/* The names are the writer's (contain/oomlimit.c), read backwards. */
Test(oomkills, every_limit_has_one_name_that_reads_back)
{
	for (int i = 0; i < OOM_BY_COUNT; i++)
		cr_expect_eq(oomkills_by_parse(oomlimit_by_name((enum oom_by)i)), (enum oom_by)i);
	cr_expect_eq(oomkills_by_parse("cosmic_ray"), OOM_BY_UNKNOWN, "a newer memsup's name");
	cr_expect_eq(oomkills_by_parse(NULL), OOM_BY_UNKNOWN);
}

Test(oomkills, one_kill)
{
	struct oomkills k;
	char err[200], t[200];
	cr_assert_eq(read_fixture("one_kill", &k, err, sizeof err), 0, "%s", err);
	cr_expect(k.known);
	cr_expect_eq(k.count, 1);
	cr_assert_eq(k.n, 1);
	cr_expect_eq(k.v[0].at_s, 4.5);
	cr_expect_eq(k.v[0].pid, 4242);
	cr_expect_str_eq(k.v[0].comm, "python");
	cr_expect_eq(k.v[0].rss_mb, 140.2);
	cr_expect_eq(k.v[0].by, OOM_BY_RUN);
	cr_expect_str_eq(k.v[0].cgroup, "/memsup.slice/memsup-4240.scope");
	cr_expect_eq(k.v[0].limit_mb, 150);
	oomkills_victim_text(&k.v[0], t, sizeof t);
	cr_expect_str_eq(t, "pid 4242 'python'");
	oomkills_limit_text(&k.v[0], t, sizeof t);
	cr_expect_str_eq(t, "run's cgroup, 150 MB", "the run's own path is not worth its length");
	/* cut to fit, never past the buffer */
	oomkills_victim_text(&k.v[0], t, 12);
	cr_expect_str_eq(t, "pid 4242 'p");
	oomkills_victim_text(&k.v[0], t, 5);
	cr_expect_str_eq(t, "pid ");
	oomkills_free(&k);
	cr_expect_eq(k.n, 0);
	oomkills_free(&k); /* twice is harmless */
}

Test(oomkills, two_kills_in_order)
{
	struct oomkills k;
	char err[200], t[200];
	cr_assert_eq(read_fixture("two_kills", &k, err, sizeof err), 0, "%s", err);
	cr_expect(k.known);
	cr_expect_eq(k.count, 2);
	cr_assert_eq(k.n, 2);
	cr_expect_eq(k.v[0].pid, 5001);
	cr_expect_eq(k.v[1].pid, 5000);
	cr_expect_eq(k.v[0].by, OOM_BY_INSIDE);
	oomkills_limit_text(&k.v[0], t, sizeof t);
	cr_expect_str_eq(t, "a cgroup inside the run's (/memsup.slice/memsup-5000.scope/job), 64 MB");
	oomkills_free(&k);
}

/* [] is a count of 0 that means it: the run had a memory cgroup.  null is
 * no count at all, never 0; a record without the key (a memsup before it)
 * has its oom_kills alone. */
Test(oomkills, none_unseen_and_older)
{
	struct oomkills k;
	char err[200];
	cr_assert_eq(read_fixture("none", &k, err, sizeof err), 0, "%s", err);
	cr_expect(k.known);
	cr_expect_eq(k.count, 0);
	cr_expect_eq(k.n, 0);
	oomkills_free(&k);
	cr_assert_eq(read_fixture("unseen", &k, err, sizeof err), 0, "%s", err);
	cr_expect_not(k.known, "null is not 0");
	oomkills_free(&k);
	cr_assert_eq(read_fixture("older", &k, err, sizeof err), 0, "%s", err);
	cr_expect(k.known);
	cr_expect_eq(k.count, 1);
	cr_expect_eq(k.n, 0);
	oomkills_free(&k);
}

/* The count is the kernel's when it counted more than memsup saw, else
 * what memsup saw: the list (at most 16) and the kills past its room
 * ("oom_unlisted"), as when the kernel's is missing (no memory cgroup, but
 * the kernel log named them); a null list with a kill the kernel counted
 * still counts it; and a record with neither is unknown. */
Test(oomkills, count_is_the_larger)
{
	static const struct {
		const char *record;
		int known;
		unsigned count;
	} cases[] = {
		{ "{\"oom_kills\": 40, \"oom\": [{\"at_s\": 1}]}", 1, 40 },
		{ "{\"oom_kills\": null, \"oom\": [{\"at_s\": 1}, {\"at_s\": 2}]}", 1, 2 },
		{ "{\"oom_kills\": 1, \"oom\": [{\"at_s\": 1}, {\"at_s\": 2}]}", 1, 2 },
		{ "{\"oom_kills\": null, \"oom\": [{\"at_s\": 1}], \"oom_unlisted\": 4}", 1, 5 },
		{ "{\"oom_kills\": 20, \"oom\": [{\"at_s\": 1}], \"oom_unlisted\": 4}", 1, 20 },
		{ "{\"oom_kills\": 2, \"oom\": [], \"oom_unlisted\": \"x\"}", 1, 2 },
		{ "{\"oom_kills\": 2, \"oom\": null}", 1, 2 },
		{ "{\"oom_kills\": 0, \"oom\": null}", 0, 0 },
		{ "{\"oom_kills\": \"3\"}", 0, 0 },
		{ "{\"oom_kills\": -1, \"oom\": []}", 1, 0 },
		{ "{}", 0, 0 },
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		struct jsonr_value *v = parse(cases[i].record);
		struct oomkills k;
		char err[200];
		cr_assert_eq(oomkills_read(v, &k, err, sizeof err), 0, "%s: %s", cases[i].record, err);
		cr_expect_eq(k.known, cases[i].known, "%s", cases[i].record);
		cr_expect_eq(k.count, cases[i].count, "%s", cases[i].record);
		oomkills_free(&k);
		jsonr_free(v);
	}
}

/* Inferred, no candidate: no pid, no comm; a limit above the run's named
 * by its cgroup. */
Test(oomkills, unnamed_victim)
{
	struct oomkills k;
	char err[200], t[200];
	cr_assert_eq(read_fixture("unnamed", &k, err, sizeof err), 0, "%s", err);
	cr_assert_eq(k.n, 1);
	cr_expect_lt(k.v[0].pid, 0);
	cr_expect_null(k.v[0].comm);
	cr_expect(isnan(k.v[0].rss_mb));
	oomkills_victim_text(&k.v[0], t, sizeof t);
	cr_expect_str_eq(t, "an unidentified process");
	oomkills_limit_text(&k.v[0], t, sizeof t);
	cr_expect_str_eq(t, "a cgroup above the run's (/slurm/uid_1000/job_77/step_0), 4000 MB");
	oomkills_free(&k);
}

/* A quote, a letter outside ASCII and a byte that is not UTF-8, as memsup
 * writes them (\u00e9, \udcff): the comm's own bytes come back; the global
 * OOM killer has no cgroup and no limit. */
Test(oomkills, odd_comm_bytes_come_back)
{
	struct oomkills k;
	char err[200], t[200];
	cr_assert_eq(read_fixture("odd_comm", &k, err, sizeof err), 0, "%s", err);
	cr_expect(k.known);
	cr_expect_eq(k.count, 1, "listed, though no cgroup counted it");
	cr_assert_eq(k.n, 1);
	cr_expect_str_eq(k.v[0].comm, "it's-\xc3\xa9\xff");
	oomkills_victim_text(&k.v[0], t, sizeof t);
	cr_expect_str_eq(t, "pid 6006 'it's-\xc3\xa9\xff'");
	oomkills_limit_text(&k.v[0], t, sizeof t);
	cr_expect_str_eq(t, "the whole machine");
	oomkills_free(&k);
	/* a control byte would break a line: shown as '?' */
	struct jsonr_value *v = parse("{\"oom\": [{\"victim\": {\"pid\": 3, \"comm\": \"a\\nb\\u007f\"},"
				      " \"limit\": {\"by\": \"inside\", \"cgroup\": \"/x\\ny\"}}]}");
	cr_assert_eq(oomkills_read(v, &k, err, sizeof err), 0, "%s", err);
	oomkills_victim_text(&k.v[0], t, sizeof t);
	cr_expect_str_eq(t, "pid 3 'a?b?'");
	oomkills_limit_text(&k.v[0], t, sizeof t);
	cr_expect_str_eq(t, "a cgroup inside the run's (/x?y)");
	oomkills_free(&k);
	jsonr_free(v);
}

/* Keys a newer memsup may add are no error; keys a memsup before this one
 * left out read as null; a name of limit.by the table does not know is
 * "unknown"; a kill before the first sample has no tree (null). */
Test(oomkills, absent_and_extra_keys)
{
	struct jsonr_value *early = parse("{\"oom\": [{\"at_s\": 0.002, \"tree\": null,"
					  " \"victim\": {\"pid\": 9}}]}");
	struct oomkills e;
	char eerr[200];
	cr_assert_eq(oomkills_read(early, &e, eerr, sizeof eerr), 0, "%s", eerr);
	cr_expect_eq(e.n, 1);
	oomkills_free(&e);
	jsonr_free(early);

	struct jsonr_value *v = parse("{\"oom\": [{\"at_s\": 1.5, \"why\": \"new key\","
				      " \"limit\": {\"by\": \"hypervisor\"}, \"victim\": {}}]}");
	struct oomkills k;
	char err[200], t[200];
	cr_assert_eq(oomkills_read(v, &k, err, sizeof err), 0, "%s", err);
	cr_assert_eq(k.n, 1);
	cr_expect_eq(k.count, 1);
	cr_expect_lt(k.v[0].pid, 0);
	cr_expect_eq(k.v[0].by, OOM_BY_UNKNOWN);
	cr_expect(isnan(k.v[0].limit_mb));
	oomkills_limit_text(&k.v[0], t, sizeof t);
	cr_expect_str_eq(t, "unknown");
	oomkills_free(&k);
	jsonr_free(v);
}

struct forged {
	char record[400];
	char says[120];
};

ParameterizedTestParameters(oomkills, forged_is_named_and_unused)
{
	static struct forged cases[] = {
		{ "{\"oom\": \"pid 4242 was killed\"}", "\"oom\": not an array or null" },
		{ "{\"oom\": {\"at_s\": 1}}", "\"oom\": not an array or null" },
		{ "{\"oom\": 0}", "\"oom\": not an array or null" },
		{ "{\"oom\": [{\"at_s\": 1}, 7]}", "\"oom\"[1]: not an object" },
		{ "{\"oom\": [{\"victim\": \"4242\"}]}", "\"oom\"[0].victim: not an object" },
		{ "{\"oom\": [{\"victim\": null}]}", "\"oom\"[0].victim: not an object" },
		{ "{\"oom\": [{\"at_s\": \"4.5\"}]}", "\"oom\"[0].at_s: not a number" },
		{ "{\"oom\": [{\"at_s\": null}]}", "\"oom\"[0].at_s: not a number" },
		{ "{\"oom\": [{\"victim\": {\"pid\": \"4242\"}}]}",
		  "\"oom\"[0].victim.pid: not an integer or null" },
		{ "{\"oom\": [{\"victim\": {\"pid\": 42.5}}]}",
		  "\"oom\"[0].victim.pid: not an integer or null" },
		{ "{\"oom\": [{\"victim\": {\"comm\": 7}}]}",
		  "\"oom\"[0].victim.comm: not a string or null" },
		{ "{\"oom\": [{\"victim\": {\"argv\": [\"a\", 1]}}]}",
		  "\"oom\"[0].victim.argv: not an array of strings or null" },
		{ "{\"oom\": [{\"victim\": {\"lineage\": null}}]}",
		  "\"oom\"[0].victim.lineage: not an array of integers" },
		{ "{\"oom\": [{\"victim\": {\"top_sites\": [{\"site\": \"f\", \"mb\": 1}, \"g\"]}}]}",
		  "\"oom\"[0].victim.top_sites[1]: not an object" },
		{ "{\"oom\": [{\"victim\": {\"top_sites\": [{\"site\": \"f\", \"mb\": \"1\"}]}}]}",
		  "\"oom\"[0].victim.top_sites[0].mb: not a number" },
		{ "{\"oom\": [{\"limit\": {\"by\": null}}]}", "\"oom\"[0].limit.by: not a string" },
		{ "{\"oom\": [{\"limit\": {\"limit_mb\": \"150\"}}]}",
		  "\"oom\"[0].limit.limit_mb: not a number or null" },
		{ "{\"oom\": [{\"tree\": {\"processes\": [{\"pid\": 1, \"victim\": 1}]}}]}",
		  "\"oom\"[0].tree.processes[0].victim: not true or false" },
		{ "{\"oom\": [{\"at_s\": 1}, {\"tree\": {\"processes_total\": 2.5}}]}",
		  "\"oom\"[1].tree.processes_total: not an integer" },
		{ "{\"oom\": [{\"tree\": []}]}", "\"oom\"[0].tree: not an object or null" },
	};
	return cr_make_param_array(struct forged, cases, sizeof cases / sizeof cases[0]);
}

ParameterizedTest(struct forged *c, oomkills, forged_is_named_and_unused)
{
	struct jsonr_value *v = parse(c->record);
	struct oomkills k;
	char err[200];
	cr_expect_eq(oomkills_read(v, &k, err, sizeof err), -EINVAL, "%s", c->record);
	cr_expect_str_eq(err, c->says, "%s", c->record);
	cr_expect_not(k.known, "nothing of a forged list is used");
	cr_expect_eq(k.n, 0);
	cr_expect_null(k.v);
	oomkills_free(&k);
	jsonr_free(v);
}

/* The two forged fixtures every reader is fed, and no err buffer at all. */
Test(oomkills, forged_fixtures)
{
	struct oomkills k;
	char err[200];
	cr_expect_eq(read_fixture("forged_string", &k, err, sizeof err), -EINVAL);
	cr_expect_str_eq(err, "\"oom\": not an array or null");
	cr_expect_eq(read_fixture("forged_victim", &k, err, sizeof err), -EINVAL);
	cr_expect_str_eq(err, "\"oom\"[0].victim: not an object");
	cr_expect_eq(read_fixture("forged_victim", &k, NULL, 0), -EINVAL);
	oomkills_free(&k);
}
