/* test_memsup_stacks.c: the sampled call sites of a run under memsup:
 * stacks.json at the tree's peaks, flame.svg and flame.folded, and
 * `memsup flame`.
 *
 * tests/progs/site_shares holds 50%, 30% and 20% of its heap in three
 * functions, in two processes at once, and prints the truth (usable bytes
 * per function per process) on stdout, which memsup keeps in stdout.log.
 * The checks are python3 (a real JSON parser, not ours):
 * tests/py/memsup_stacks.py, one per test.
 */
#include "test_memsup_util.h"
#include "test_py.h"

/* Run the check named `name` of tests/py/memsup_stacks.py (the test's own
 * name) on r->dir; fail the test with python's output if it raises, else
 * log what it printed. */
/* At the default interval: each function's share of the tree's heap at its
 * heap peak within 5 points of the truth, the estimate within 4 standard
 * errors (and 1%) of the traced heap it estimates, both processes there;
 * the folded lines add up to it and the picture says it. */
Test(memsup_stacks, shares_at_the_tree_heap_peak, .timeout = 120)
{
	struct sup_run r;
	const char *args[] = { "-q", "--", prog("site_shares"), "300", "2", "0", "300", NULL };
	cr_assert_eq(memsup_run(&r, args), 0, "stderr: %s", r.err);
	sup_py_check(&r, "memsup_stacks.py", "shares_at_the_tree_heap_peak", NULL);
	sup_done(&r);
}

/* Every block sampled: exact, per process and function, at the tree's
 * peak and at each image's own; the estimate is the traced heap. */
Test(memsup_stacks, exact_with_every_block_sampled, .timeout = 120)
{
	struct sup_run r;
	const char *args[] = { "-q", "-e", "MEMTRACE_SAMPLE_BYTES=1", "--", prog("site_shares"),
			       "100", "2", "0", "300", NULL };
	cr_assert_eq(memsup_run(&r, args), 0, "stderr: %s", r.err);
	sup_py_check(&r, "memsup_stacks.py", "exact_with_every_block_sampled", NULL);
	sup_done(&r);
}

/* The pictures are redrawn from stacks.json alone, byte for byte; --at rss
 * draws the other moment; bad arguments are memsup errors. */
Test(memsup_stacks, memsup_flame_redraws_the_same, .timeout = 120)
{
	struct sup_run r, f;
	char svg1[32768], svg2[32768], fold1[8192], fold2[8192], path[PATH_MAX + 32];
	const char *args[] = { "-q", "--", prog("site_shares"), "60", "2", "0", "200", NULL };
	cr_assert_eq(memsup_run(&r, args), 0, "stderr: %s", r.err);
	snprintf(path, sizeof path, "%s/flame.svg", r.dir);
	slurp(path, svg1, sizeof svg1);
	snprintf(path, sizeof path, "%s/flame.folded", r.dir);
	slurp(path, fold1, sizeof fold1);
	cr_assert(strlen(svg1) > 500 && strlen(fold1) > 10);
	unlink(path);

	memcpy(f.tmp, r.tmp, sizeof f.tmp);
	const char *redraw[] = { env_or_skip("MEMSUP"), "flame", r.dir, NULL };
	sup_spawn(&f, NULL, redraw);
	cr_assert_eq(memsup_wait(&f), 0, "%s", f.err);
	snprintf(path, sizeof path, "%s/flame.svg", r.dir);
	slurp(path, svg2, sizeof svg2);
	snprintf(path, sizeof path, "%s/flame.folded", r.dir);
	slurp(path, fold2, sizeof fold2);
	cr_expect_str_eq(svg2, svg1);
	cr_expect_str_eq(fold2, fold1);

	const char *rss[] = { env_or_skip("MEMSUP"), "flame", r.dir, "--at", "rss", "-o", "-",
			      "--folded", "/dev/null", NULL };
	sup_spawn(&f, NULL, rss);
	cr_assert_eq(memsup_wait(&f), 0, "%s", f.err);
	cr_expect_not_null(strstr(f.out, "RSS peak"), "%.300s", f.out);

	static const char *const bad[][6] = {
		{ "flame", NULL },
		{ "flame", "/nonexistent/dir", NULL },
		{ "flame", "DIR", "--at", "pss", NULL },
		{ "flame", "DIR", "--width", "10", NULL },
		{ "flame", "DIR", "--frobnicate", NULL },
		{ "flame", "DIR", "DIR", NULL },
	};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		const char *argv[8] = { env_or_skip("MEMSUP") };
		for (size_t k = 0; bad[i][k]; k++)
			argv[k + 1] = strcmp(bad[i][k], "DIR") ? bad[i][k] : r.dir;
		sup_spawn(&f, NULL, argv);
		cr_expect_eq(memsup_wait(&f), 125, "case %zu: %s", i, f.err);
		cr_expect_neq(f.err[0], '\0', "case %zu says why", i);
	}
	sup_done(&r);
}

/* Without tracing there is nothing sampled: no stacks.json, no flame. */
Test(memsup_stacks, untraced_run_has_no_call_sites, .timeout = 60)
{
	struct sup_run r;
	char path[PATH_MAX + 32];
	const char *args[] = { "-q", "--no-trace", "--", prog("site_shares"), "20", "1", NULL };
	cr_assert_eq(memsup_run(&r, args), 0, "stderr: %s", r.err);
	snprintf(path, sizeof path, "%s/stacks.json", r.dir);
	cr_expect(!path_exists(path));
	snprintf(path, sizeof path, "%s/flame.svg", r.dir);
	cr_expect(!path_exists(path));
	sup_done(&r);
}

/* The summary names the largest sites at the tree's peak of heap plus
 * mappings (its heap peak, for a program that maps nothing itself), by
 * function and line. */
Test(memsup_stacks, summary_lists_the_sites, .timeout = 60)
{
	struct sup_run r;
	const char *args[] = { "--", prog("site_shares"), "60", "1", "0", "200", NULL };
	cr_assert_eq(memsup_run(&r, args), 0, "stderr: %s", r.err);
	cr_expect_not_null(strstr(r.err, "memsup: heap at the tree's peak of heap plus mappings ("), "%s", r.err);
	/* each frame with its line: site_shares is built with debug info */
	cr_expect_not_null(strstr(r.err, ": hold_half (site_shares.c:"), "%s", r.err);
	cr_expect_not_null(strstr(r.err, ") < shares_take (site_shares.c:"), "%s", r.err);
	cr_expect_not_null(strstr(r.err, ") < main (site_shares.c:"), "%s", r.err);
	sup_done(&r);
}
