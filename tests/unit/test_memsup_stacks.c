/* test_memsup_stacks.c: the sampled call sites of a run under memsup:
 * stacks.json at the tree's peaks, flame.svg and flame.folded, and
 * `memsup flame`.
 *
 * tests/progs/site_shares holds 50%, 30% and 20% of its heap in three
 * functions, in two processes at once, and prints the truth (usable bytes
 * per function per process) on stdout, which memsup keeps in stdout.log.
 * The checks are python3 (a real JSON parser, not ours).
 */
#include "test_memsup_util.h"

/* The checks' common part: the evidence, the truth, helpers. */
static const char prelude[] =
	"import json, os, re, sys\n"
	"d = sys.argv[1]\n"
	"st = json.load(open(os.path.join(d, 'stacks.json')))\n"
	"frames = st['frames']\n"
	"truth = {}\n"
	"for m in re.finditer(r'pid=(\\d+) half=(\\d+) three_tenths=(\\d+) fifth=(\\d+)',\n"
	"                     open(os.path.join(d, 'stdout.log')).read()):\n"
	"    truth[int(m.group(1))] = {'hold_half': int(m.group(2)),\n"
	"        'hold_three_tenths': int(m.group(3)), 'hold_fifth': int(m.group(4))}\n"
	"assert len(truth) == 2, truth\n"
	"def site_fn(s):\n"
	"    return frames[s['frames'][0]]['function'] if s['frames'] else None\n"
	"def by_fn(sites, pid=None):\n"
	"    out = {}\n"
	"    for s in sites:\n"
	"        if pid is None or s.get('pid') == pid:\n"
	"            out[site_fn(s)] = out.get(site_fn(s), 0) + s['bytes']\n"
	"    return out\n"
	"FNS = ['hold_half', 'hold_three_tenths', 'hold_fifth']\n";

static void check(struct sup_run *r, const char *script)
{
	static char text[16384];
	snprintf(text, sizeof text, "%s%s", prelude, script);
	setenv("MT_STACKS_CHECK", text, 1);
	char cmd[PATH_MAX + 600];
	snprintf(cmd, sizeof cmd, "python3 -c \"$MT_STACKS_CHECK\" '%s' 2>&1", r->dir);
	FILE *f = popen(cmd, "r");
	cr_assert_not_null(f);
	static char out[16384];
	size_t got = fread(out, 1, sizeof out - 1, f);
	out[got] = '\0';
	int st = pclose(f);
	cr_assert_eq(st, 0, "check failed:\n%s\nmemsup stderr:\n%s", out, r->err);
	if (got)
		cr_log_info("%s", out);
}

static void done(struct sup_run *r)
{
	char cmd[PATH_MAX + 16];
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", r->tmp);
	if (system(cmd) != 0)
		cr_log_warn("could not remove %s", r->tmp);
}

/* At the default interval: each function's share of the tree's heap at its
 * heap peak within 5 points of the truth, the estimate within 4 standard
 * errors (and 1%) of the traced heap it estimates, both processes there;
 * the folded lines add up to it and the picture says it. */
Test(memsup_stacks, shares_at_the_tree_heap_peak, .timeout = 120)
{
	struct sup_run r;
	const char *args[] = { "-q", "--", prog("site_shares"), "300", "2", "0", "300", NULL };
	cr_assert_eq(memsup_run(&r, args), 0, "stderr: %s", r.err);
	check(&r,
	      "t = st['tree']['heap_peak']\n"
	      "assert st['sample_bytes'] == 524288, st['sample_bytes']\n"
	      "est, se, heap = t['estimated_bytes'], t['se_bytes'], t['traced_heap']\n"
	      "got = by_fn(t['sites'])\n"
	      "tot = {f: sum(truth[p][f] for p in truth) for f in FNS}\n"
	      "all_true = sum(tot.values())\n"
	      "for f in FNS:\n"
	      "    share, want = got.get(f, 0) / est, tot[f] / all_true\n"
	      "    print('%s: estimated %.1f%%, true %.1f%%' % (f, 100 * share, 100 * want))\n"
	      "    assert abs(share - want) <= 0.05, (f, share, want)\n"
	      "print('estimated %.1f MB +- %.1f MB of %.1f MB traced' % (est / 1e6, se / 1e6, heap / 1e6))\n"
	      "assert abs(est - heap) <= 4 * se + 0.01 * heap, (est, se, heap)\n"
	      "assert heap >= 0.99 * all_true, (heap, all_true)\n"
	      "assert {s['pid'] for s in t['sites']} == set(truth), t['sites']\n"
	      "folded = sum(int(l.rsplit(' ', 1)[1])\n"
	      "             for l in open(os.path.join(d, 'flame.folded')))\n"
	      "assert folded == est, (folded, est)\n"
	      "svg = open(os.path.join(d, 'flame.svg')).read()\n"
	      "assert 'Heap by call site at the tree' in svg and 'hold_three_tenths' in svg\n"
	      "assert 'one standard error' in svg\n"
	      "imgs = {i['pid']: i for i in st['images']}\n"
	      "assert set(imgs) == set(truth), imgs.keys()\n"
	      "for p, i in imgs.items():\n"
	      "    assert i['samples'] > 20 and i['error'] is None and i['finished'], i\n"
	      "    assert i['fp_stacks'] > 0, i\n"
	      "    assert i['cfi_fallback'] is False, i\n"
	      /* the sites at the RSS peak are of the images whose heap
	       * processes.json counts at that peak, and the heaps agree */
	      "P = json.load(open(os.path.join(d, 'processes.json')))\n"
	      "at = {(p['pid'], p['gen']): p['at_peak'] for p in P if p['at_peak']}\n"
	      "rp = st['tree']['rss_peak']\n"
	      "assert sum(a['heap'] or 0 for a in at.values()) == rp['traced_heap'], (at, rp)\n"
	      "counted = {k for k, a in at.items() if a['heap']}\n"
	      "assert {(s['pid'], s['gen']) for s in rp['sites']} <= counted, (rp['sites'], at)\n");
	done(&r);
}

/* Every block sampled: exact, per process and function, at the tree's
 * peak and at each image's own; the estimate is the traced heap. */
Test(memsup_stacks, exact_with_every_block_sampled, .timeout = 120)
{
	struct sup_run r;
	const char *args[] = { "-q", "-e", "MEMTRACE_SAMPLE_BYTES=1", "--", prog("site_shares"),
			       "100", "2", "0", "300", NULL };
	cr_assert_eq(memsup_run(&r, args), 0, "stderr: %s", r.err);
	check(&r,
	      "t = st['tree']['heap_peak']\n"
	      "assert st['sample_bytes'] == 1 and t['se_bytes'] == 0, t\n"
	      "for p in truth:\n"
	      "    got = by_fn(t['sites'], p)\n"
	      "    for f in FNS:\n"
	      "        assert got.get(f) == truth[p][f], (p, f, got.get(f), truth[p][f])\n"
	      "assert t['estimated_bytes'] == t['traced_heap'], t\n"
	      "for i in st['images']:\n"
	      "    own = by_fn(i['at_peak']['sites'])\n"
	      "    for f in FNS:\n"
	      "        assert own.get(f) == truth[i['pid']][f], (i['pid'], f, own)\n"
	      "    assert i['at_peak']['estimated_bytes'] == i['heap_peak'], i\n"
	      "    assert not by_fn(i['at_exit']['sites']).get('hold_half'), 'freed at exit'\n"
	      "mods = {m['path'].rsplit('/', 1)[-1]: m for m in st['modules']}\n"
	      "assert mods['site_shares']['symbols'] == 'named', mods\n"
	      "assert mods['site_shares']['build_id'], mods\n");
	done(&r);
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
	done(&r);
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
	done(&r);
}

/* The summary names the largest sites at the tree's heap peak. */
Test(memsup_stacks, summary_lists_the_sites, .timeout = 60)
{
	struct sup_run r;
	const char *args[] = { "--", prog("site_shares"), "60", "1", "0", "200", NULL };
	cr_assert_eq(memsup_run(&r, args), 0, "stderr: %s", r.err);
	cr_expect_not_null(strstr(r.err, "memsup: heap at the tree's heap peak ("), "%s", r.err);
	cr_expect_not_null(strstr(r.err, ": hold_half < shares_take < main"), "%s", r.err);
	done(&r);
}
