/* test_memsup_diff.c: `memsup diff BASE NEW`, the regression gate, run as
 * the real memsup ($MEMSUP) over evidence directories that memsup made of
 * trees of known size (tests/progs/steady), and over hand-broken ones.  The
 * JSON and JUnit XML are read back with python3's json and xml.etree, not
 * with our own code.  The limit's parser and the comparison are also driven
 * directly (diff.h).  The OOM kills are judged over records given the
 * hand-written keys of tests/data/oom. */
#include <criterion/criterion.h>
#include <math.h>

#include "view/diff.h"
#include "test_cgprobe.h"
#include "test_memsup_util.h"
#include "test_oom_fixtures.h"

/* memsup -q -o TMP/name -- sh -c "steady A JOIN steady B; wait": a tree of
 * a shell and two children holding A and B MB, at once (JOIN "&") or one
 * after the other (";"); the evidence dir's path. */
static const char *pair_run(struct sup_run *r, const char *name, int a_mb, const char *join, int b_mb)
{
	static char dirs[4][PATH_MAX];
	static int slot;
	char *dir = dirs[slot++ % 4], script[2 * PATH_MAX + 64];
	const char *steady = prog("steady");

	snprintf(dir, PATH_MAX, "%s/%s", r->tmp, name);
	snprintf(script, sizeof script, "%s %d 250 %s %s %d 250; wait", steady, a_mb, join, steady, b_mb);
	const char *args[] = { "-q", "-o", dir, "--", "sh", "-c", script, NULL };
	struct sup_run run;
	tmp_make(&run);
	memsup_start(&run, 0, args);
	cr_assert_eq(memsup_wait(&run), 0, "memsup %s: status %d; stderr: %s", name, run.status, run.err);
	return dir;
}

static const char *tree_run(struct sup_run *r, const char *name, int a_mb, int b_mb)
{
	return pair_run(r, name, a_mb, "&", b_mb);
}

/* memsup diff ARGS... in r->tmp; its status, r->out and r->err. */
static int diff_run(struct sup_run *r, const char *const *args)
{
	const char *argv[32];
	int n = 0;
	argv[n++] = env_or_skip("MEMSUP");
	argv[n++] = "diff";
	for (int i = 0; args[i] && n < 31; i++)
		argv[n++] = args[i];
	argv[n] = NULL;
	sup_spawn(r, NULL, argv);
	return memsup_wait(r);
}

/* python3 CODE FILE: the test fails, with what python printed (the
 * assertion's message and the values it shows), unless CODE passes FILE. */
static void py_check(const char *code, const char *file)
{
	static char out[16384];
	char path[] = "/tmp/test_memsup_diff_py.XXXXXX";
	int fd = mkstemp(path);
	cr_assert(fd >= 0);
	cr_assert_eq(write(fd, code, strlen(code)), (ssize_t)strlen(code));
	close(fd);
	char cmd[2 * PATH_MAX];
	snprintf(cmd, sizeof cmd, "python3 %s '%s' 2>&1", path, file);
	int st = py_output(cmd, out, sizeof out);
	unlink(path);
	cr_assert_eq(st, 0, "the check of %s failed:\n%s", file, out);
}

/* ---- the gate over real runs ---- */

Test(memsup_diff, child_regression_is_found_and_named, .timeout = 60)
{
	struct sup_run r;
	tmp_make(&r);
	const char *base = tree_run(&r, "base", 10, 20);
	const char *nw = tree_run(&r, "new", 10, 50);
	/* 40 MB lets the answer through: the child alone must fail the gate */
	const char *args[] = { "--max-increase", "40MB", "--process-max-increase", "10%", base, nw, NULL };
	cr_assert_eq(diff_run(&r, args), 1, "stdout: %s\nstderr: %s", r.out, r.err);
	cr_assert(strncmp(r.out, "REGRESSION:", 11) == 0, "%s", r.out);
	cr_assert(strstr(r.out, "REGRESSED") && strstr(r.out, "steady 50 250"), "%s", r.out);
	/* the unchanged child is not a row: the few lines that changed */
	cr_assert_null(strstr(r.out, "steady 10 250"), "%s", r.out);
	/* and with one limit for both, 40 MB lets it all through */
	const char *one[] = { "--max-increase", "40MB", base, nw, NULL };
	cr_assert_eq(diff_run(&r, one), 0, "stdout: %s\nstderr: %s", r.out, r.err);
}

/* A site is each process at its own peak, summed: the two children of a
 * sequence are never alive at once, so no one sample of the tree holds
 * both, yet both count.  wl_hold maps MB rounded up to 2 MiB, plus 2 MiB
 * to align; the shim counts mappings exactly.  (The tree's set at its heap
 * peak depended on when the poll fell, and failed this gate under load.) */
Test(memsup_diff, sites_are_each_process_at_its_own_peak, .timeout = 60)
{
	struct sup_run r;
	tmp_make(&r);
	const char *base = pair_run(&r, "base", 10, ";", 20);
	const char *nw = pair_run(&r, "new", 10, ";", 50);
	const char *args[] = { "--json", base, nw, NULL };
	cr_assert_eq(diff_run(&r, args), 1, "stderr: %s", r.err);
	const char *out = sup_tmp_path(&r, "memsup.stdout");
	/* 10 MB: 6 x 2 MiB; 20 MB: 11 x 2 MiB; 50 MB: 25 x 2 MiB */
	py_check("import sys, json\n"
		 "d = json.load(open(sys.argv[1]))\n"
		 "s = [x for x in d['sites'] if x['stack'].startswith('wl_hold <- main')]\n"
		 "assert len(s) == 1, d['sites']\n"
		 "M = 2 * 1048576 / 1e6\n"
		 "assert abs(s[0]['base_mb'] - 17 * M) < 1e-6, s\n"
		 "assert abs(s[0]['new_mb'] - 31 * M) < 1e-6, s\n"
		 "assert s[0]['regressed'], s\n",
		 out);
}

Test(memsup_diff, same_sizes_pass, .timeout = 60)
{
	struct sup_run r;
	tmp_make(&r);
	const char *base = tree_run(&r, "base", 10, 20);
	const char *nw = tree_run(&r, "new", 10, 20);
	const char *args[] = { base, nw, NULL };
	cr_assert_eq(diff_run(&r, args), 0, "stdout: %s\nstderr: %s", r.out, r.err);
	cr_assert(strncmp(r.out, "ok:", 3) == 0, "%s", r.out);
}

Test(memsup_diff, noise_under_the_limit_passes, .timeout = 60)
{
	struct sup_run r;
	tmp_make(&r);
	const char *base = tree_run(&r, "base", 10, 20);
	const char *nw = tree_run(&r, "new", 10, 22);
	const char *pass[] = { "--max-increase", "20%", base, nw, NULL };
	cr_assert_eq(diff_run(&r, pass), 0, "stdout: %s\nstderr: %s", r.out, r.err);
	/* the same 2 MB is over a limit of 1 MB: the gate does see it */
	const char *fail[] = { "--max-increase", "1MB", base, nw, NULL };
	cr_assert_eq(diff_run(&r, fail), 1, "stdout: %s\nstderr: %s", r.out, r.err);
	cr_assert(strstr(r.out, "steady 22 250"), "%s", r.out);
}

Test(memsup_diff, junit_is_well_formed_with_a_failure, .timeout = 60)
{
	struct sup_run r;
	tmp_make(&r);
	const char *base = tree_run(&r, "base", 10, 20);
	const char *nw = tree_run(&r, "new", 10, 50);
	const char *xml = sup_tmp_path(&r, "junit.xml");
	const char *args[] = { "--junit", xml, base, nw, NULL };
	cr_assert_eq(diff_run(&r, args), 1, "stderr: %s", r.err);
	static const char check[] =
		"import sys, xml.etree.ElementTree as ET\n"
		"s = ET.parse(sys.argv[1]).getroot()\n"
		"assert s.tag == 'testsuite', s.tag\n"
		"f = [c for c in s.iter('testcase') if c.find('failure') is not None]\n"
		"assert int(s.get('failures')) == len(f) >= 2, ET.tostring(s)\n"
		"assert f[0].get('name') == 'peak_mb', f[0].get('name')\n"
		"assert any(c.get('name').startswith('process ') and 'steady 50 250' in c.get('name') for c in f), "
		"ET.tostring(s)\n"
		"n = [c.get('name') for c in s.iter('testcase')]\n"
		"assert len(n) == len(set(n)) == int(s.get('tests')), n\n";
	py_check(check, xml);
	/* a pass is a suite without failures */
	const char *ok[] = { "--junit", xml, base, base, NULL };
	cr_assert_eq(diff_run(&r, ok), 0, "stderr: %s", r.err);
	py_check("import sys, xml.etree.ElementTree as ET\n"
		 "s = ET.parse(sys.argv[1]).getroot()\n"
		 "assert s.get('failures') == '0' and s.find('.//failure') is None\n",
		 xml);
}

Test(memsup_diff, json_names_the_regression, .timeout = 60)
{
	struct sup_run r;
	tmp_make(&r);
	const char *base = tree_run(&r, "base", 10, 20);
	const char *nw = tree_run(&r, "new", 10, 50);
	const char *args[] = { "--json", base, nw, NULL };
	cr_assert_eq(diff_run(&r, args), 1, "stderr: %s", r.err);
	const char *out = sup_tmp_path(&r, "memsup.stdout");
	py_check("import sys, json\n"
		 "d = json.load(open(sys.argv[1]))\n"
		 "assert d['verdict'] == 'regression' and d['peak']['regressed'], d\n"
		 "p = [x for x in d['processes'] if x['regressed']]\n"
		 "assert len(p) == 1 and p[0]['command'].endswith('steady 50 250'), d\n"
		 "assert 25 < p[0]['change_mb'] < 35, p\n",
		 out);
}

Test(memsup_diff, report_json_is_a_baseline, .timeout = 60)
{
	struct sup_run r;
	tmp_make(&r);
	const char *base = tree_run(&r, "base", 10, 20);
	const char *nw = tree_run(&r, "new", 10, 50);
	const char *rargs[] = { env_or_skip("MEMSUP"), "report", "--json", base, NULL };
	sup_spawn(&r, NULL, rargs);
	cr_assert_eq(memsup_wait(&r), 0, "%s", r.err);
	char json[PATH_MAX];
	snprintf(json, sizeof json, "%s/memsup.stdout", r.tmp);
	char copy[PATH_MAX];
	snprintf(copy, sizeof copy, "%s/base.json", r.tmp);
	cr_assert_eq(rename(json, copy), 0);
	const char *args[] = { copy, nw, NULL };
	cr_assert_eq(diff_run(&r, args), 1, "stdout: %s\nstderr: %s", r.out, r.err);
	cr_assert(strncmp(r.out, "REGRESSION:", 11) == 0, "%s", r.out);
}

/* sh -c "site_shares 40 1 0 400 & merge_tree hold MB 400; wait": three
 * sampled call sites of known shares and one block of MB from `block`. */
static const char *site_run(struct sup_run *r, const char *name, int mb)
{
	static char dirs[4][PATH_MAX];
	static int slot;
	char *dir = dirs[slot++ % 4], script[2 * PATH_MAX + 64];

	snprintf(dir, PATH_MAX, "%s/%s", r->tmp, name);
	snprintf(script, sizeof script, "%s 40 1 0 400 & %s hold %d 400; wait", prog("site_shares"),
		 prog("merge_tree"), mb);
	const char *args[] = { "-q", "-o", dir, "--", "sh", "-c", script, NULL };
	struct sup_run run;
	tmp_make(&run);
	memsup_start(&run, 0, args);
	cr_assert_eq(memsup_wait(&run), 0, "memsup %s: status %d; stderr: %s", name, run.status, run.err);
	return dir;
}

Test(memsup_diff, call_site_regression_is_found_and_named, .timeout = 60)
{
	struct sup_run r;
	tmp_make(&r);
	const char *base = site_run(&r, "base", 10);
	const char *nw = site_run(&r, "new", 40);
	/* 100%: far over the sampler's noise on the other sites; the block's
	 * site grew by 300% */
	const char *args[] = { "--max-increase", "1000%", "--process-max-increase", "100%", "--json", base, nw, NULL };
	cr_assert_eq(diff_run(&r, args), 1, "stdout: %s\nstderr: %s", r.out, r.err);
	py_check("import sys, json\n"
		 "d = json.load(open(sys.argv[1]))\n"
		 "assert not d['peak']['regressed'], d['peak']\n"
		 "s = [x for x in d['sites'] if x['regressed']]\n"
		 "assert len(s) == 1 and s[0]['stack'].startswith('block <- main'), s or d['sites']\n"
		 "assert 25 < s[0]['change_mb'] < 35, s\n",
		 sup_tmp_path(&r, "memsup.stdout"));
}

/* ---- bad input: 125, one line naming it, nothing written or created ---- */

static void assert_bad(struct sup_run *r, const char *const *args, const char *says)
{
	const char *xml = sup_tmp_path(r, "never.xml");
	const char *argv[16];
	int n = 0;
	argv[n++] = "--junit";
	argv[n++] = xml;
	for (int i = 0; args[i] && n < 15; i++)
		argv[n++] = args[i];
	argv[n] = NULL;
	cr_assert_eq(diff_run(r, argv), 125, "stdout: %s\nstderr: %s", r->out, r->err);
	cr_assert_str_empty(r->out);
	cr_assert(strstr(r->err, says), "wanted '%s' in: %s", says, r->err);
	cr_assert(strncmp(r->err, "memsup diff: ", 13) == 0 && strchr(r->err, '\n') == r->err + strlen(r->err) - 1,
		  "one line: %s", r->err);
	cr_assert_not(path_exists(xml));
}

Test(memsup_diff, missing_baseline_is_125, .timeout = 60)
{
	struct sup_run r;
	tmp_make(&r);
	const char *nw = tree_run(&r, "new", 10, 20);
	const char *gone = sup_tmp_path(&r, "no-such-run");
	const char *args[] = { gone, nw, NULL };
	assert_bad(&r, args, "baseline");
	cr_assert(strstr(r.err, "no-such-run: No such file or directory"), "%s", r.err);
	/* a directory that is not a run */
	const char *empty = sup_tmp_path(&r, "empty");
	cr_assert_eq(mkdir(empty, 0755), 0);
	const char *args2[] = { empty, nw, NULL };
	assert_bad(&r, args2, "empty/resources.json: No such file or directory");
}

/* A run whose command never started has no peak: on either side, and as
 * a `memsup report --json` baseline, diff refuses it with the reason the
 * record gives, as memsup report fails its "start failed" row. */
Test(memsup_diff, start_failed_run_is_refused, .timeout = 60)
{
	struct sup_run r;
	tmp_make(&r);
	const char *good = tree_run(&r, "good", 10, 20);
	const char *gone = sup_tmp_path(&r, "gone");
	const char *args[] = { "-q", "-o", gone, "--", "/nonexistent/memsup-no-such-program", NULL };
	struct sup_run run;
	tmp_make(&run);
	memsup_start(&run, 0, args);
	cr_assert_eq(memsup_wait(&run), 127, "%s", run.err);

	const char *as_new[] = { good, gone, NULL };
	assert_bad(&r, as_new, "new run ");
	cr_assert(strstr(r.err, "gone: the command could not start (execvp: No such file or directory): "
			 "there is no peak to compare"), "%s", r.err);
	const char *as_base[] = { gone, good, NULL };
	assert_bad(&r, as_base, "baseline ");
	cr_assert(strstr(r.err, "the command could not start"), "%s", r.err);

	/* memsup report --json of it, as a baseline: its status says why */
	char cmd[3 * PATH_MAX];
	const char *json = sup_tmp_path(&r, "gone.json");
	snprintf(cmd, sizeof cmd, "'%s' report --json '%s' >'%s'", env_or_skip("MEMSUP"), gone, json);
	cr_assert_eq(WEXITSTATUS(system(cmd)), 1);
	const char *as_report[] = { json, good, NULL };
	assert_bad(&r, as_report, "start failed: execvp: No such file or directory");
}

Test(memsup_diff, broken_baseline_is_125, .timeout = 60)
{
	struct sup_run r;
	tmp_make(&r);
	const char *nw = tree_run(&r, "new", 10, 20);
	char broken[PATH_MAX + 32];
	snprintf(broken, sizeof broken, "%s/broken", r.tmp);
	cr_assert_eq(mkdir(broken, 0755), 0);
	char path[PATH_MAX + 64];
	snprintf(path, sizeof path, "%s/resources.json", broken);
	FILE *f = fopen(path, "w");
	cr_assert_not_null(f);
	fputs("{\"peak_mb\": 12.5,", f); /* torn */
	fclose(f);
	const char *args[] = { broken, nw, NULL };
	assert_bad(&r, args, "broken/resources.json: line 1");
	/* whole, but without the answer or the polled peak it falls back to
	 * (evidence/read.h) */
	f = fopen(path, "w");
	cr_assert_not_null(f);
	fputs("{\"command\": [\"x\"], \"wall_s\": 1.0, \"peak_mb\": null, \"reason\": null}\n", f);
	fclose(f);
	assert_bad(&r, args, "broken/resources.json: no numeric \"peak_tree_rss_mb\"");
	/* a report baseline of two runs is not one baseline */
	snprintf(path, sizeof path, "%s/two.json", r.tmp);
	f = fopen(path, "w");
	cr_assert_not_null(f);
	fputs("[{\"status\":\"ok\",\"peak_mb\":1},{\"status\":\"ok\",\"peak_mb\":2}]\n", f);
	fclose(f);
	const char *args2[] = { path, nw, NULL };
	assert_bad(&r, args2, "holds 2 runs");
}

Test(memsup_diff, bad_limit_is_125, .timeout = 60)
{
	struct sup_run r;
	tmp_make(&r);
	const char *nw = tree_run(&r, "new", 10, 20);
	const char *a1[] = { "--max-increase", "5", nw, nw, NULL };
	assert_bad(&r, a1, "--max-increase: '5' is not a limit");
	const char *a2[] = { "--max-increase", "-5%", nw, nw, NULL };
	assert_bad(&r, a2, "'-5%'");
	const char *a3[] = { "--floor", "x", nw, nw, NULL };
	assert_bad(&r, a3, "'x' is not a number");
	const char *a4[] = { nw, NULL };
	assert_bad(&r, a4, "needs BASE and NEW");
}

/* ---- the pure half ---- */

Test(memsup_diff, limit_parse)
{
	struct diff_limit l;
	cr_assert_eq(diff_limit_parse("5%", &l), 0);
	cr_assert(l.percent && l.value == 5);
	cr_assert_eq(diff_limit_parse("20MB", &l), 0);
	cr_assert(!l.percent && l.value == 20);
	cr_assert_eq(diff_limit_parse("1.5GB", &l), 0);
	cr_assert(!l.percent && l.value == 1500);
	cr_assert_eq(diff_limit_parse("500KB", &l), 0);
	cr_assert(!l.percent && fabs(l.value - 0.5) < 1e-12);
	const char *bad[] = { "", "%", "5", "MB", "5 %", " 5%", "-1%", "0x5MB", "5mb", "inf%", "5%%", NULL };
	for (int i = 0; bad[i]; i++)
		cr_assert_eq(diff_limit_parse(bad[i], &l), -EINVAL, "'%s'", bad[i]);
	cr_assert_eq(diff_limit_parse("2000000%", &l), -ERANGE);
}

Test(memsup_diff, exceeds_needs_limit_and_floor)
{
	struct diff_limit pct = { 1, 10 }, mb = { 0, 5 };
	cr_assert_not(diff_exceeds(&pct, 0, 100, 110));  /* at the limit: passes */
	cr_assert(diff_exceeds(&pct, 0, 100, 110.5));
	cr_assert_not(diff_exceeds(&pct, 1, 0.5, 1.2));  /* +140%, but under the floor */
	cr_assert(diff_exceeds(&mb, 1, NAN, 6));          /* a new process: all growth */
	cr_assert_not(diff_exceeds(&mb, 1, 6, NAN));      /* gone: never a regression */
	cr_assert_not(diff_exceeds(&mb, 0, 100, 50));
}

/* Two processes of one program whose arguments changed are still matched
 * (the second pass), and a twin of equal command is matched by rank. */
Test(memsup_diff, compare_matches_and_orders)
{
	struct diff_proc bp[] = {
		{ "\x1fsteady 20\x1f" "1", "sh\x1fsteady\x1f" "1", "steady 20", 22, NAN, 0, 0 },
		{ "\x1fworker\x1f" "1", "\x1fworker\x1f" "1", "worker", 5, NAN, 0, 0 },
		{ "\x1fworker\x1f" "2", "\x1fworker\x1f" "2", "worker #2", 5, NAN, 0, 0 },
	};
	struct diff_proc np[] = {
		{ "\x1fworker\x1f" "2", "\x1fworker\x1f" "2", "worker #2", 9, NAN, 0, 0 },
		{ "\x1fsteady 50\x1f" "1", "sh\x1fsteady\x1f" "1", "steady 50", 52, NAN, 0, 0 },
		{ "\x1fworker\x1f" "1", "\x1fworker\x1f" "1", "worker", 5.01, NAN, 0, 0 },
	};
	struct diff_run b = { 30, bp, 3, 1, NULL, 0, 0, NAN, { 0 } }, n = { 60, np, 3, 1, NULL, 0, 0, NAN, { 0 } };
	struct diff_limit lim = { 1, 10 };
	struct diff_result res;
	cr_assert_eq(diff_compare(&b, &n, &lim, &lim, 1, &res), 0);
	cr_assert(res.peak.regressed);
	cr_assert_eq(res.n_regressed, 3);
	cr_assert_eq(res.n_rows, 2, "the 0.01 MB change is no row");
	cr_assert_str_eq(res.rows[0].name, "steady 50");
	cr_assert_eq(res.rows[0].base_mb, 22);
	cr_assert_str_eq(res.rows[1].name, "worker #2");
	diff_result_free(&res);
}

/* Sampled sites are judged by their own standard errors, not a fixed floor: a site
 * of a few samples that doubled by chance (4 -> 7.7 MB, 1.7 SE of the
 * difference) passes the limits and is still no regression, and says so;
 * a site that grew 10 MB with 1 MB errors (7 SE) is one; an exact site
 * (every block sampled: no error) is held to the limits alone. */
Test(memsup_diff, sampled_sites_judged_by_their_errors)
{
	struct diff_proc procs[] = {
		{ "\x1fprog\x1f" "1", "\x1fprog\x1f" "1", "prog", 100, NAN, 0, 0 },
	};
	struct diff_proc bs[] = {
		{ "big <- main", "big <- main", "big <- main", 30, 0, 1.0, 0 },
		{ "exact <- main", "exact <- main", "exact <- main", 1, 0, 0, 0 },
		{ "small <- main", "small <- main", "small <- main", 4, 0, 1.5, 0 },
	};
	struct diff_proc ns[] = {
		{ "big <- main", "big <- main", "big <- main", 40, 0, 1.0, 0 },
		{ "exact <- main", "exact <- main", "exact <- main", 2.5, 0, 0, 0 },
		{ "small <- main", "small <- main", "small <- main", 7.7, 0, 1.5, 0 },
	};
	struct diff_run b = { 100, procs, 1, 1, bs, 3, 1, NAN, { 0 } };
	struct diff_run n = { 100, procs, 1, 1, ns, 3, 1, NAN, { 0 } };
	struct diff_limit lim = { 1, 10 };
	struct diff_result res;
	cr_assert_eq(diff_compare(&b, &n, &lim, &lim, 1, &res), 0);
	int seen = 0;
	for (size_t i = 0; i < res.n_rows; i++) {
		const struct diff_row *r = &res.rows[i];
		if (r->kind != DIFF_SITE)
			continue;
		seen++;
		if (!strcmp(r->name, "big <- main")) {
			cr_expect(r->regressed, "10 MB at 1 MB errors: %.1f SE", r->sigmas);
			cr_expect(r->sigmas > 7 && r->sigmas < 7.1, "%.2f SE", r->sigmas);
		} else if (!strcmp(r->name, "small <- main")) {
			cr_expect_not(r->regressed, "chance: %.1f SE", r->sigmas);
			cr_expect(r->sigmas > 1.7 && r->sigmas < 1.8, "%.2f SE", r->sigmas);
		} else {
			cr_expect(r->regressed, "an exact site is held to the limits alone");
			cr_expect(isnan(r->sigmas), "an exact site has no error: %f", r->sigmas);
		}
	}
	cr_expect_eq(seen, 3);
	cr_expect_eq(res.n_regressed, 2);
	diff_result_free(&res);
}

/* Equal peaks, one process's heap at exit grown: only the live rows
 * move, and they are named as what they are. */
Test(memsup_diff, compare_live_at_exit)
{
	struct diff_proc bp[] = {
		{ "\x1f" "cc a.c\x1f" "1", "\x1f" "cc\x1f" "1", "cc a.c", 40, 0.5 },
		{ "\x1fld\x1f" "1", "\x1fld\x1f" "1", "ld", 30, NAN },
	};
	struct diff_proc np[] = {
		{ "\x1f" "cc a.c\x1f" "1", "\x1f" "cc\x1f" "1", "cc a.c", 40, 9.5 },
		{ "\x1fld\x1f" "1", "\x1fld\x1f" "1", "ld", 30, 25 },
	};
	struct diff_run b = { 70, bp, 2, 1, NULL, 0, 0, 0.5, { 0 } }, n = { 70, np, 2, 1, NULL, 0, 0, 34.5, { 0 } };
	struct diff_limit lim = { 1, 10 };
	struct diff_result res;
	cr_assert_eq(diff_compare(&b, &n, &lim, &lim, 1, &res), 0);
	cr_assert_not(res.peak.regressed);
	cr_assert(res.live.regressed, "the tree's live heap at exit grew 0.5 -> 34.5 MB");
	/* ld was killed in BASE (no figure): its 25 MB in NEW is no row */
	cr_assert_eq(res.n_rows, 1);
	cr_assert_eq(res.rows[0].kind, DIFF_LIVE);
	cr_assert_str_eq(res.rows[0].name, "cc a.c");
	cr_assert(res.rows[0].regressed);
	cr_assert_eq(res.n_regressed, 2);
	diff_result_free(&res);
	/* without the figure on one side, the tree's live heap is not judged */
	n.live_mb = NAN;
	cr_assert_eq(diff_compare(&b, &n, &lim, &lim, 1, &res), 0);
	cr_assert_not(res.live.regressed);
	cr_assert_eq(res.n_regressed, 1);
	diff_result_free(&res);
}

/* A leak that does not move the peak: leaker holds 31 MB at its peak in
 * both runs, but leaves 1 MB allocated at exit in BASE and 12 MB in NEW.
 * The gate fails on what was live at exit and names the process and the
 * call site (leaker allocates in main). */
Test(memsup_diff, leak_at_exit_is_found_with_an_equal_peak, .timeout = 60)
{
	struct sup_run r;
	tmp_make(&r);
	char base[PATH_MAX], nw[PATH_MAX];
	const char *sizes[2][2] = { { "1", "30" }, { "12", "19" } };
	for (int k = 0; k < 2; k++) {
		char *dir = k ? nw : base;
		snprintf(dir, PATH_MAX, "%s/%s", r.tmp, k ? "new" : "base");
		const char *args[] = { "-q", "-o", dir, "--", prog("leaker"), sizes[k][0], sizes[k][1], NULL };
		struct sup_run run;
		tmp_make(&run);
		memsup_start(&run, 0, args);
		cr_assert_eq(memsup_wait(&run), 0, "memsup: status %d; stderr: %s", run.status, run.err);
	}
	const char *args[] = { "--json", base, nw, NULL };
	cr_assert_eq(diff_run(&r, args), 1, "stdout: %s\nstderr: %s", r.out, r.err);
	const char *out = sup_tmp_path(&r, "memsup.stdout");
	py_check("import sys, json\n"
		 "d = json.load(open(sys.argv[1]))\n"
		 "assert d['verdict'] == 'regression' and not d['peak']['regressed'], d\n"
		 "t = d['live_at_exit']\n"
		 "assert t['regressed'] and 1.0 <= t['base_mb'] < 1.1 and 12.0 <= t['new_mb'] < 12.1, t\n"
		 "p = d['processes_live_at_exit']\n"
		 "assert len(p) == 1 and p[0]['regressed'] and p[0]['command'].endswith('leaker 12 19'), p\n"
		 "assert 10.9 < p[0]['change_mb'] < 11.1, p\n"
		 /* and the call site that leaks, by the sampler's estimate:
		  * 11 MB more; 12 blocks of 1 MB at a mean interval of 512 KiB:
		  * about 1.5 MB of error, taken 4 times.  stdout's 4 KiB
		  * buffer, live at exit too, is sampled with probability
		  * 1 - e^(-4 KiB / 512 KiB), about 1 run in 130, and then
		  * shows as a site of 0.5 MB: listed, not a regression. */
		 "s = d['sites_live_at_exit']\n"
		 "m = [x for x in s if x['stack'].startswith('main <- ')]\n"
		 "assert len(m) == 1 and m[0]['regressed'] and 5 < m[0]['change_mb'] < 18, s\n"
		 "assert not [x for x in s if x['regressed'] and x is not m[0]], s\n",
		 out);
	const char *text[] = { base, nw, NULL };
	cr_assert_eq(diff_run(&r, text), 1, "stdout: %s\nstderr: %s", r.out, r.err);
	cr_assert(strstr(r.out, "live heap at exit 1.0") && strstr(r.out, "live at exit ") &&
		  strstr(r.out, "leaker 12 19") && strstr(r.out, "site live at exit main <- "), "%s", r.out);
}

/* memsup -q -o TMP/sweep/mb=LABEL --meta mb=LABEL -- steady MB 200 */
static void sweep_run(struct sup_run *r, const char *sweep, int label, int mb)
{
	char dir[PATH_MAX], meta[32], size[16];
	snprintf(dir, sizeof dir, "%s/%s/mb=%d", r->tmp, sweep, label);
	snprintf(meta, sizeof meta, "mb=%d", label);
	snprintf(size, sizeof size, "%d", mb);
	const char *args[] = { "-q", "-o", dir, "--meta", meta, "--", prog("steady"), size, "200", NULL };
	struct sup_run run;
	tmp_make(&run);
	memsup_start(&run, 0, args);
	cr_assert_eq(memsup_wait(&run), 0, "memsup %s: status %d; stderr: %s", dir, run.status, run.err);
}

Test(memsup_diff, sweep_is_matched_by_meta_label, .timeout = 60)
{
	struct sup_run r;
	tmp_make(&r);
	sweep_run(&r, "base", 10, 10);
	sweep_run(&r, "base", 20, 20);
	sweep_run(&r, "new", 10, 10);
	sweep_run(&r, "new", 20, 50); /* the regression, in one run of two */
	char base[PATH_MAX + 8], nw[PATH_MAX + 8];
	snprintf(base, sizeof base, "%s/base", r.tmp);
	snprintf(nw, sizeof nw, "%s/new", r.tmp);
	const char *args[] = { base, nw, NULL };
	cr_assert_eq(diff_run(&r, args), 1, "stdout: %s\nstderr: %s", r.out, r.err);
	cr_assert(strstr(r.out, "mb=10: ok:") && strstr(r.out, "mb=20: REGRESSION:"), "%s", r.out);
	const char *same[] = { base, base, NULL };
	cr_assert_eq(diff_run(&r, same), 0, "stdout: %s\nstderr: %s", r.out, r.err);
	/* a run whose baseline is gone: the sweep cannot be judged */
	char gone[PATH_MAX + 32];
	snprintf(gone, sizeof gone, "%s/base/mb=20/resources.json", r.tmp);
	cr_assert_eq(unlink(gone), 0);
	assert_bad(&r, args, "(mb=20) has no baseline");
}

/* ---- OOM kills: the hand-written records of tests/data/oom ---- */

/* A record of a run whose answer is PEAK MB, for the fixtures' keys. */
#define OOM_BASE(peak)                                                                          \
	"{\"command\": [\"/bin/job\"], \"exit_code\": -9, \"signal\": 9, \"exit_status\": 137, "    \
	"\"reason\": null, \"wall_s\": 5.0, \"peak_tree_rss_mb\": " peak ", \"peak_mb\": " peak \
	", \"peak_source\": \"cgroup\"}"

/* r->tmp/NAME (NAME: a fixture of tests/data/oom, "~" before it for a run
 * whose answer is lower: the kill cut it short), its processes none. */
static const char *oom_run(struct sup_run *r, const char *name)
{
	static char dirs[8][PATH_MAX];
	static int slot;
	char *dir = dirs[slot++ % 8];
	int low = name[0] == '~';
	snprintf(dir, PATH_MAX, "%s/%s%s", r->tmp, low ? "low_" : "", name + low);
	if (access(dir, F_OK) != 0)
		oom_evidence(dir, name + low, low ? OOM_BASE("101.5") : OOM_BASE("150.0"), "[]\n");
	return dir;
}

/* NEW OOMs where BASE did not: a regression whatever the peak (here the
 * kill lowered it), the line naming the victim and the limit; BASE that
 * could not see OOM kills counts as none, and says so; a kill that went
 * away, or one on both sides, is said and fails nothing. */
Test(memsup_diff, new_oom_is_a_regression, .timeout = 30)
{
	static const struct {
		const char *base, *nw;
		int status;
		const char *line; /* NULL: no OOM line */
	} cases[] = {
		{ "none", "~one_kill", 1,
		  "  REGRESSED NEW newly OOMs: the kernel killed pid 4242 'python' (limit: run's cgroup, "
		  "150 MB)\n" },
		{ "unseen", "one_kill", 1,
		  "  REGRESSED NEW newly OOMs: the kernel killed pid 4242 'python' (limit: run's cgroup, "
		  "150 MB); BASE could not see OOM kills\n" },
		{ "none", "two_kills", 1,
		  "  REGRESSED NEW newly OOMs: the kernel killed pid 5001 'worker' (limit: a cgroup inside "
		  "the run's (/memsup.slice/memsup-5000.scope/job), 64 MB), 2 kills in all\n" },
		{ "none", "unnamed", 1,
		  "  REGRESSED NEW newly OOMs: the kernel killed an unidentified process (limit: a cgroup "
		  "above the run's (/slurm/uid_1000/job_77/step_0), 4000 MB)\n" },
		{ "none", "odd_comm", 1,
		  "  REGRESSED NEW newly OOMs: the kernel killed pid 6006 'it's-\xc3\xa9\xff' (limit: the "
		  "whole machine)\n" },
		{ "none", "older", 1, "  REGRESSED NEW newly OOMs: the kernel killed 1 process\n" },
		{ "one_kill", "none", 0,
		  "  changed   NEW no longer OOMs: in BASE the kernel killed pid 4242 'python' (limit: "
		  "run's cgroup, 150 MB)\n" },
		{ "one_kill", "unseen", 0,
		  "  oom       NEW could not see OOM kills; in BASE the kernel killed pid 4242 'python' "
		  "(limit: run's cgroup, 150 MB)\n" },
		{ "one_kill", "two_kills", 0,
		  "  oom       both OOM (kills 1 -> 2): in NEW the kernel killed pid 5001 'worker'" },
		{ "none", "none", 0, NULL },
		{ "unseen", "unseen", 0, NULL },
		{ "unseen", "none", 0, NULL },
	};
	struct sup_run r;
	tmp_make(&r);
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		const char *args[] = { oom_run(&r, cases[i].base), oom_run(&r, cases[i].nw), NULL };
		int st = diff_run(&r, args);
		cr_expect_eq(st, cases[i].status, "%s -> %s: status %d\nstdout: %s\nstderr: %s", cases[i].base,
			     cases[i].nw, st, r.out, r.err);
		cr_expect(strncmp(r.out, cases[i].status ? "REGRESSION: " : "ok: ", cases[i].status ? 12 : 4) == 0,
			  "%s -> %s: %s", cases[i].base, cases[i].nw, r.out);
		if (cases[i].line)
			cr_expect(strstr(r.out, cases[i].line), "%s -> %s: wanted\n%s\nin:\n%s", cases[i].base,
				  cases[i].nw, cases[i].line, r.out);
		else
			cr_expect_null(strstr(r.out, "OOM"), "%s -> %s: %s", cases[i].base, cases[i].nw, r.out);
		/* the verdict's count has the OOM in it */
		if (cases[i].status)
			cr_expect(strstr(r.out, "; 1 regressed\n"), "%s", r.out);
	}
}

/* --json and --junit say the same: the change, both sides' counts (null:
 * could not see OOM kills) and first victims, the comm's bytes as memsup
 * writes them; the JUnit case "oom kills" fails for a new OOM only. */
Test(memsup_diff, oom_in_json_and_junit, .timeout = 30)
{
	struct sup_run r;
	tmp_make(&r);
	const char *xml = sup_tmp_path(&r, "junit.xml");
	const char *args[] = { "--json", "--junit", xml, oom_run(&r, "unseen"), oom_run(&r, "odd_comm"), NULL };
	cr_assert_eq(diff_run(&r, args), 1, "stderr: %s", r.err);
	const char *out = sup_tmp_path(&r, "memsup.stdout");
	py_check("import sys, json\n"
		 "d = json.load(open(sys.argv[1]))\n"
		 "o = d['oom']\n"
		 "assert d['verdict'] == 'regression' and d['regressed'] == 1, d\n"
		 "assert o['change'] == 'new' and o['regressed'] is True, o\n"
		 "assert o['base_kills'] is None and o['base_first'] is None, o\n"
		 "assert o['new_kills'] == 1, o\n"
		 "assert o['new_first'] == {'pid': 6006, 'comm': \"it's-\\u00e9\\udcff\", "
		 "'limit_by': 'machine', 'cgroup': None, 'limit_mb': None}, o\n"
		 "assert not d['peak']['regressed'], d\n",
		 out);
	py_check("import sys, xml.etree.ElementTree as ET\n"
		 "s = ET.parse(sys.argv[1]).getroot()\n"
		 "c = [c for c in s.iter('testcase') if c.get('name') == 'oom kills']\n"
		 "assert len(c) == 1, ET.tostring(s)\n"
		 "f = c[0].find('failure')\n"
		 "assert f is not None and s.get('failures') == '1', ET.tostring(s)\n"
		 "assert f.get('message').startswith(\"NEW newly OOMs: the kernel killed pid 6006 'it's-\"), f.get('message')\n",
		 xml);
	/* gone: the case passes; counts and victim of each side */
	const char *gone[] = { "--json", "--junit", xml, oom_run(&r, "two_kills"), oom_run(&r, "none"), NULL };
	cr_assert_eq(diff_run(&r, gone), 0, "stderr: %s", r.err);
	py_check("import sys, json\n"
		 "o = json.load(open(sys.argv[1]))['oom']\n"
		 "assert o['change'] == 'gone' and o['regressed'] is False, o\n"
		 "assert o['base_kills'] == 2 and o['new_kills'] == 0 and o['new_first'] is None, o\n"
		 "assert o['base_first'] == {'pid': 5001, 'comm': 'worker', 'limit_by': 'inside', "
		 "'cgroup': '/memsup.slice/memsup-5000.scope/job', 'limit_mb': 64.0}, o\n",
		 out);
	py_check("import sys, xml.etree.ElementTree as ET\n"
		 "s = ET.parse(sys.argv[1]).getroot()\n"
		 "c = [c for c in s.iter('testcase') if c.get('name') == 'oom kills']\n"
		 "assert len(c) == 1 and c[0].find('failure') is None, ET.tostring(s)\n"
		 "assert s.get('failures') == '0', ET.tostring(s)\n",
		 xml);
	/* neither side could tell: no case for it */
	const char *blind[] = { "--json", "--junit", xml, oom_run(&r, "unseen"), oom_run(&r, "unseen"), NULL };
	cr_assert_eq(diff_run(&r, blind), 0, "stderr: %s", r.err);
	py_check("import sys, xml.etree.ElementTree as ET\n"
		 "s = ET.parse(sys.argv[1]).getroot()\n"
		 "assert not [c for c in s.iter('testcase') if c.get('name') == 'oom kills'], ET.tostring(s)\n"
		 "assert s.get('tests') == str(len(list(s.iter('testcase')))), ET.tostring(s)\n",
		 xml);
}

/* A `memsup report --json` baseline carries its OOM kills: a run that
 * OOMs against one that did not regresses, and a victim in the baseline
 * is named when the kill went away. */
Test(memsup_diff, report_json_baseline_knows_its_oom_kills, .timeout = 30)
{
	struct sup_run r;
	tmp_make(&r);
	const char *none = oom_run(&r, "none"), *one = oom_run(&r, "one_kill");
	char cmd[3 * PATH_MAX];
	const char *json = sup_tmp_path(&r, "none.json");
	snprintf(cmd, sizeof cmd, "'%s' report --json '%s' >'%s'", env_or_skip("MEMSUP"), none, json);
	cr_assert_eq(system(cmd), 0);
	const char *args[] = { json, one, NULL };
	cr_assert_eq(diff_run(&r, args), 1, "stdout: %s\nstderr: %s", r.out, r.err);
	cr_expect(strstr(r.out, "  REGRESSED NEW newly OOMs: the kernel killed pid 4242 'python'"), "%s", r.out);
	json = sup_tmp_path(&r, "one.json");
	snprintf(cmd, sizeof cmd, "'%s' report --json '%s' >'%s'", env_or_skip("MEMSUP"), one, json);
	cr_assert_eq(system(cmd), 0);
	const char *back[] = { json, none, NULL };
	cr_assert_eq(diff_run(&r, back), 0, "stdout: %s\nstderr: %s", r.out, r.err);
	/* the report keeps whose limit, not its size */
	cr_expect(strstr(r.out, "  changed   NEW no longer OOMs: in BASE the kernel killed pid 4242 'python' "
			 "(limit: run's cgroup)\n"), "%s", r.out);
}

/* A forged "oom" on either side is bad input (125), the key named: a gate
 * that cannot tell whether a run was OOM killed cannot pass it. */
Test(memsup_diff, forged_oom_is_125, .timeout = 30)
{
	struct sup_run r;
	tmp_make(&r);
	const char *a1[] = { oom_run(&r, "none"), oom_run(&r, "forged_string"), NULL };
	assert_bad(&r, a1, "new run ");
	cr_assert(strstr(r.err, "forged_string/resources.json: \"oom\": not an array or null"), "%s", r.err);
	const char *a2[] = { oom_run(&r, "forged_victim"), oom_run(&r, "none"), NULL };
	assert_bad(&r, a2, "baseline ");
	cr_assert(strstr(r.err, "forged_victim/resources.json: \"oom\"[0].victim: not an object"), "%s", r.err);
}

/* The writer's own records: oom_three (children of 20, 40 and 100 MB, a
 * parent growing to 50) at --mem-max 400, where it fits, then at 200,
 * where the kernel kills the 100 MB child.  NEW's peak is lower (the kill
 * cut it short), yet the gate fails and names the victim and the run's
 * limit; the other way round it passes and says the kill went away. */
Test(memsup_diff, real_oom_kill_regresses, .timeout = 90)
{
	struct sup_run r;
	tmp_make(&r);
	const char *dirs[2] = { NULL, NULL }, *max[2] = { "400", "200" };
	static char paths[2][PATH_MAX], pids[2 * PATH_MAX + 8];
	for (int i = 0; i < 2; i++) {
		snprintf(paths[i], PATH_MAX, "%s/mem%s", r.tmp, max[i]);
		snprintf(pids, sizeof pids, "%s.pids", paths[i]);
		const char *args[] = { "-q", "-o", paths[i], "--poll-ms", "20", "--mem-max", max[i], "--",
				       prog("oom_three"), pids, "20", "40", "100", "50", NULL };
		struct sup_run run;
		tmp_make(&run);
		memsup_start(&run, 0, args);
		int st = memsup_wait(&run);
		if (st == 125 && strstr(run.err, "--mem-max"))
			cgprobe_skip_or_fail("memory", "memsup refused --mem-max: %s", run.err);
		cr_assert_eq(st, i ? 123 : 0, "--mem-max %s: %d, stderr: %s", max[i], st, run.err);
		dirs[i] = paths[i];
	}
	char text[256], line[400];
	slurp(pids, text, sizeof text); /* the second run's */
	const char *c = strstr(text, "c=");
	cr_assert_not_null(c, "pids: %s", text);
	/* as root the kernel's log names the victim; else memsup infers it */
	if (geteuid() == 0)
		snprintf(line, sizeof line, "  REGRESSED NEW newly OOMs: the kernel killed pid %lld "
			 "'oom_three' (limit: run's cgroup, ", atoll(c + 2));
	else
		snprintf(line, sizeof line, "  REGRESSED NEW newly OOMs: the kernel killed ");
	const char *args[] = { dirs[0], dirs[1], NULL };
	cr_assert_eq(diff_run(&r, args), 1, "stdout: %s\nstderr: %s", r.out, r.err);
	cr_expect(strstr(r.out, line), "wanted\n%s\nin:\n%s", line, r.out);
	cr_expect(strstr(r.out, "(limit: run's cgroup"), "%s", r.out);
	const char *back[] = { dirs[1], dirs[0], NULL };
	diff_run(&r, back); /* its verdict is the peak's, which the kill cut short */
	cr_expect(strstr(r.out, "  changed   NEW no longer OOMs: in BASE the kernel killed "), "%s", r.out);
}

/* The pure half: BASE none (or unknown) and NEW with kills regress; the
 * other way round, or both, do not. */
Test(memsup_diff, compare_oom_kills)
{
	struct oomkills_kill victim = { 4.5, 4242, (char *)"python", 140, OOM_BY_RUN, NULL, 150 };
	struct diff_run none = { .peak_mb = 100, .has_procs = 1, .live_mb = NAN, .oom = { 1, 0, NULL, 0 } };
	struct diff_run unseen = { .peak_mb = 100, .has_procs = 1, .live_mb = NAN };
	struct diff_run one = { .peak_mb = 90, .has_procs = 1, .live_mb = NAN, .oom = { 1, 1, &victim, 1 } };
	struct diff_limit lim = { 1, 20 }; /* 90 -> 100 MB is no regression */
	const struct {
		const struct diff_run *b, *n;
		enum diff_oom_change change;
		int regressed;
	} cases[] = {
		{ &none, &one, DIFF_OOM_NEW, 1 },     { &unseen, &one, DIFF_OOM_NEW, 1 },
		{ &one, &none, DIFF_OOM_GONE, 0 },    { &one, &unseen, DIFF_OOM_UNSEEN, 0 },
		{ &one, &one, DIFF_OOM_BOTH, 0 },     { &none, &none, DIFF_OOM_NONE, 0 },
		{ &unseen, &unseen, DIFF_OOM_NONE, 0 }, { &none, &unseen, DIFF_OOM_NONE, 0 },
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		struct diff_result res;
		cr_assert_eq(diff_compare(cases[i].b, cases[i].n, &lim, &lim, 1, &res), 0);
		cr_expect_eq(res.oom.change, cases[i].change, "case %zu: %s", i, diff_oom_change_name(res.oom.change));
		cr_expect_eq(res.oom.regressed, cases[i].regressed, "case %zu", i);
		cr_expect_eq(res.n_regressed, (size_t)cases[i].regressed, "case %zu: the peak fell or held", i);
		diff_result_free(&res);
	}
	cr_expect_str_eq(diff_oom_change_name(DIFF_OOM_COUNT), "none");
}
