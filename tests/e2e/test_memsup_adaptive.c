/* test_memsup_adaptive.c: sampling that follows the memory.
 *
 * End to end, in the run's real memory cgroup: an idle tree (a process
 * asleep for 2 s) is sampled sparsely -- the record's "sampling" says so,
 * and rss.jsonl has well under the dense count of lines; a growing process
 * (tests/progs/grower) is sampled at the dense rate while it grows, each of
 * its steps seen rising; a tree flat for a second that then spikes to
 * 100 MB for 80 ms (tests/progs/spike's delay) is woken by the kernel's
 * usage threshold and gets a sample at the spike whose per-process view
 * holds the spiking process.  All of it by default (--sparse-ms 100).
 * Without a memory cgroup (--cgroup off), under --rss-mb, and with
 * --sparse-ms 0, memsup stays dense and the record says why.  Every
 * assertion is a count or a figure of the record, never a wall time.
 *
 * The backend's part on fixture trees (tests/data/cgroup): cgroup v1 arms
 * two thresholds on memory.usage_in_bytes through cgroup.event_control on
 * one eventfd, readable at once when the usage already lies past a mark,
 * and released by contain_unwatch; cgroup v2 and the /proc scan cannot,
 * and say why.  A test that finds no memory cgroup for the run skips where
 * the test itself can make none, and fails where it can (test_cgprobe.h). */
#include "test_cgprobe.h"
#include "test_memsup_util.h"

#include <poll.h>

#include "base/procfs.h"
#include "contain/contain.h"
#include "evidence/timeline.h"
#include "analyze/runrecord.h"
#include "test_cgfixture.h"
#include "test_timeline_points.h"

#define MB 1e6

/* ---- the record's "sampling" ------------------------------------------------ */

static const char *sampling(const struct sup_run *r)
{
	const char *s = rec_str(r, "sampling");
	cr_assert_not_null(s, "the record has no \"sampling\"");
	cr_assert_neq(strcmp(s, "null"), 0, "\"sampling\" is null");
	return s;
}

/* The text just after "key": in the sampling object. */
static const char *samp_at(const struct sup_run *r, const char *key)
{
	static char copy[32768];
	char pat[64];
	snprintf(copy, sizeof copy, "%s", sampling(r));
	snprintf(pat, sizeof pat, "\"%s\": ", key);
	const char *p = strstr(copy, pat);
	cr_assert_not_null(p, "\"sampling\" has no %s: %s", key, copy);
	return p + strlen(pat);
}

static double samp_num(const struct sup_run *r, const char *key)
{
	const char *p = samp_at(r, key);
	char *end;
	double d = strtod(p, &end);
	cr_assert(end != p, "sampling.%s is not a number: %.40s", key, p);
	return d;
}

static int samp_true(const struct sup_run *r, const char *key)
{
	return strncmp(samp_at(r, key), "true", 4) == 0;
}

/* The run had a memory cgroup whose usage the kernel can watch; else skip
 * (no cgroup can be made here, or its memory files are v2's), or fail
 * where the test could have made one. */
static void require_watchable(struct sup_run *r)
{
	const char *c = rec_str(r, "containment");
	cr_assert_not_null(c, "no containment in the record");
	if (!strstr(c, "\"memory\": true"))
		cgprobe_skip_or_fail("memory", "the run had no memory cgroup: %s", c);
	if (!samp_true(r, "adaptive") && strstr(samp_at(r, "why_not"), "cgroup v2"))
		cr_skip_test("the run's memory cgroup is cgroup v2's: no usage thresholds to "
			     "follow the memory with (%s)", sampling(r));
	cr_assert(samp_true(r, "adaptive"), "a v1 memory cgroup, yet not adaptive: %s",
		  sampling(r));
}

/* ---- the samples ---------------------------------------------------------------- */

/* The lines of DIR/name. */
static size_t lines_of(const struct sup_run *r, const char *name)
{
	char path[PATH_MAX + 64];
	snprintf(path, sizeof path, "%s/%s", r->dir, name);
	FILE *f = fopen(path, "r");
	cr_assert_not_null(f, "%s: %s", path, strerror(errno));
	size_t n = 0;
	for (int ch; (ch = getc(f)) != EOF;)
		n += ch == '\n';
	fclose(f);
	return n;
}

/* ---- end to end ------------------------------------------------------------------ */

/* A process asleep for 2 s: after a tenth of a second without movement the
 * samples come every 100 ms, not every 10 ms. */
Test(memsup_adaptive, idle_tree_is_sampled_sparsely, .timeout = 60)
{
	struct sup_run r;
	const char *args[] = { "--", prog("sleeper"), "2", NULL };
	cr_assert_eq(memsup_run(&r, args), 0, "stderr: %s", r.err);
	rec_load(&r);
	require_watchable(&r);
	double wall = rec_num(&r, "wall_s"), samples = rec_num(&r, "samples");
	size_t lines = lines_of(&r, "rss.jsonl");
	cr_expect_eq((double)lines, samples, "rss.jsonl has %zu lines, the record %.0f samples",
		     lines, samples);
	double dense = wall / 0.010;
	cr_expect_lt(samples, 0.4 * dense, "%.0f samples in %.2f s: the dense count is %.0f; %s",
		     samples, wall, dense, sampling(&r));
	cr_expect_geq(samp_num(&r, "samples_sparse"), 5, "%s", sampling(&r));
	cr_expect_gt(samp_num(&r, "sparse_s"), wall / 2, "%.2f s of run: %s", wall, sampling(&r));
	cr_expect_geq(samp_num(&r, "switches"), 1);
	cr_expect_eq(samp_num(&r, "dense_ms"), 10);
	cr_expect_eq(samp_num(&r, "sparse_ms"), 100);
	cr_expect_not_null(strstr(sampling(&r), "\"sparse\", 100"), "no change to sparse listed: %s",
			   sampling(&r));
}

/* se.slice in a /proc/PID/sched text (CONFIG_SCHED_DEBUG), or -1. */
static long slice_in(const char *text, const char *who)
{
	const char *p = strstr(text, who);
	p = p ? strstr(p, "se.slice") : NULL;
	p = p ? strchr(p, ':') : NULL;
	return p ? strtol(p + 1, NULL, 10) : -1;
}

/* memsup's wake-ups get a 100 us slice (wakeslice.h), the command keeps
 * the kernel's default: the command prints its own sched file and its
 * parent's (memsup: the main process is its child). */
Test(memsup_adaptive, short_slice_is_memsups_alone, .timeout = 60)
{
	struct sup_run r;
	if (access("/proc/self/sched", R_OK) != 0)
		cr_skip_test("no /proc/PID/sched (CONFIG_SCHED_DEBUG)");
	const char *args[] = { "--no-trace", "--", "sh", "-c",
			       "echo COMMAND; cat /proc/$$/sched; echo MEMSUP; cat /proc/$PPID/sched",
			       NULL };
	cr_assert_eq(memsup_run(&r, args), 0, "stderr: %s", r.err);
	rec_load(&r);
	long own = slice_in(r.out, "COMMAND"), sup = slice_in(r.out, "MEMSUP");
	cr_assert(own > 0 && sup > 0, "no se.slice in the sched files: %.300s", r.out);
	const char *at = samp_at(&r, "slice_us");
	if (strncmp(at, "null", 4) == 0)
		cr_skip_test("memsup took no slice here: %s", sampling(&r));
	cr_expect_eq(samp_num(&r, "slice_us"), 100);
	/* a kernel before 6.12 takes the call and ignores the slice */
	if (sup != 100000)
		cr_skip_test("this kernel keeps a %ld ns slice for memsup too", sup);
	cr_expect_neq(own, 100000, "the command inherited memsup's slice");
}

/* The record's "changes": up to cap of [t, "sparse"|"dense", interval_ms]. */
struct change {
	double t, ms;
	int sparse;
};

static size_t changes_of(const struct sup_run *r, struct change *out, size_t cap)
{
	const char *p = samp_at(r, "changes");
	size_t n = 0;
	cr_assert_eq(*p, '[', "sampling.changes is not an array: %.40s", p);
	p++;
	while (n < cap && (p = strchr(p, '[')) != NULL) {
		char mode[16];
		struct change c;
		cr_assert_eq(sscanf(p, "[%lf, \"%15[a-z]\", %lf]", &c.t, mode, &c.ms), 3,
			     "a change is not [t, mode, ms]: %.60s", p);
		c.sparse = strcmp(mode, "sparse") == 0;
		cr_assert(c.sparse || strcmp(mode, "dense") == 0, "mode %s", mode);
		out[n++] = c;
		p++;
	}
	return n;
}

/* A process asleep for 3 s: once sparse, each sample that finds nothing
 * moved doubles the interval, 100 ms to 1 s, and the record lists each
 * step; the samples on the sparse schedule are then about one a second,
 * not ten (28 or so at a steady 100 ms). */
Test(memsup_adaptive, idle_tree_lengthens_its_sparse_interval, .timeout = 60)
{
	struct sup_run r;
	const char *args[] = { "--no-trace", "--", prog("sleeper"), "3", NULL };
	cr_assert_eq(memsup_run(&r, args), 0, "stderr: %s", r.err);
	rec_load(&r);
	require_watchable(&r);
	cr_expect_eq(samp_num(&r, "sparse_max_ms"), 1000, "%s", sampling(&r));
	cr_expect_geq(samp_num(&r, "lengthened"), 3, "%s", sampling(&r));
	double sparse_s = samp_num(&r, "sparse_s"), n = samp_num(&r, "samples_sparse");
	cr_expect_gt(sparse_s, 2, "%s", sampling(&r));
	cr_expect_leq(n, 2 * sparse_s + 4, "%.0f samples in %.2f s of sparse: the interval did "
		      "not lengthen; %s", n, sparse_s, sampling(&r));
	struct change c[RUNRECORD_MAX_PACE_CHANGES];
	size_t nc = changes_of(&r, c, RUNRECORD_MAX_PACE_CHANGES);
	cr_assert_geq(nc, 2, "%s", sampling(&r));
	cr_expect(c[0].sparse && c[0].ms == 100, "the first change: %s", sampling(&r));
	for (size_t i = 1; i < nc; i++) {
		cr_expect(c[i].t >= c[i - 1].t, "changes out of order: %s", sampling(&r));
		if (c[i].sparse && c[i - 1].sparse)
			cr_expect(c[i].ms > c[i - 1].ms && c[i].ms <= 2 * c[i - 1].ms &&
				  c[i].ms <= 1000, "a step from %.0f to %.0f ms: %s", c[i - 1].ms,
				  c[i].ms, sampling(&r));
	}
	size_t at_max = 0;
	for (size_t i = 0; i < nc; i++)
		at_max += c[i].sparse && c[i].ms == 1000;
	cr_expect_eq(at_max, 1, "not one step to 1 s: %s", sampling(&r));
	cr_expect_eq(samp_num(&r, "changes_total"), (double)nc);
}

/* 2 MB every 20 ms until the wall budget: dense samples see the steps one
 * by one (about one rising sample a step), where samples every 100 ms
 * would see five steps at a time (a fifth). */
Test(memsup_adaptive, growing_process_is_sampled_densely, .timeout = 60)
{
	struct sup_run r;
	const char *args[] = { "--no-trace", "--wall-s", "2.5", "--",
			       prog("grower"), "2", "20", "400", NULL };
	cr_assert_eq(memsup_run(&r, args), 124, "stderr: %s", r.err);
	rec_load(&r);
	require_watchable(&r);
	tl_load(&r, "timeline.jsonl");
	size_t rising = 0;
	double lo = tl.p[0].rss, hi = tl.p[0].rss;
	for (size_t i = 1; i < tl.n; i++) {
		if (tl.p[i].rss >= tl.p[i - 1].rss + 1 * MB)
			rising++;
		if (tl.p[i].rss < lo)
			lo = tl.p[i].rss;
		if (tl.p[i].rss > hi)
			hi = tl.p[i].rss;
	}
	double steps = (hi - lo) / (2 * 1048576.0);
	cr_assert_geq(steps, 20, "the grower grew only %.0f MB", (hi - lo) / MB);
	cr_expect_geq((double)rising, 0.4 * steps, "%zu rising samples for %.0f steps of 2 MiB: "
		      "not sampled densely while it grew; %s", rising, steps, sampling(&r));
}

/* memsup SIGKILLed 3.5 s into a flat run (20 MB held from the start): the
 * record on disk was last rewritten at the first second, when the peak and
 * the pace had moved -- since then only the clock and the counts had, so
 * no rewrite -- while rss.jsonl got its lines every second: it holds more
 * samples than the record counts.  The record is still whole and true: the
 * sentinel marked it, and its peak is the 20 MB. */
Test(memsup_adaptive, flat_run_keeps_its_record_until_something_moves, .timeout = 60)
{
	struct sup_run r;
	tmp_make(&r);
	/* --poll-ms 50: the longest gap is news in whole poll periods, and a
	 * sanitizer build's memsup on a loaded machine woke a sparse sample
	 * 10 ms late once (a rewrite, rightly: the gap had grown) */
	const char *args[] = { "--no-trace", "--poll-ms", "50", "--", prog("steady"), "20", "20000",
			       NULL };
	memsup_start(&r, 1, args);
	usleep(3500 * 1000);
	kill(r.pid, SIGKILL);
	cr_assert_eq(memsup_wait(&r), 1000 + SIGKILL);
	rec_load_after_sentinel(&r, 15);
	cr_assert_str_eq(rec_str(&r, "reason"), "\"supervisor_killed\"");
	require_watchable(&r);
	cr_expect_geq(rec_num(&r, "peak_tree_rss_mb"), 20);
	double samples = rec_num(&r, "samples");
	size_t lines = lines_of(&r, "rss.jsonl");
	cr_expect_gt((double)lines, samples, "rss.jsonl has %zu lines, the record %.0f samples: "
		     "rewritten while nothing moved; %s", lines, samples, sampling(&r));
	cr_expect_eq(samp_num(&r, "sparse_max_ms"), 1000);
}

/* Flat for 2.5 s (the sparse interval lengthened to 1 s), then 2 MiB every
 * 20 ms: the kernel's mark wakes memsup at the first steps and the rise is
 * sampled densely, each step seen rising, as in a run that was never
 * sparse (growing_process_is_sampled_densely); at 1 s a sample would see
 * fifty steps at a time. */
Test(memsup_adaptive, flat_tree_then_rise_is_sampled_densely, .timeout = 60)
{
	struct sup_run r;
	char cmd[PATH_MAX + 64];
	snprintf(cmd, sizeof cmd, "sleep 2.5 && exec %s 2 20 400", prog("grower"));
	const char *args[] = { "--no-trace", "--wall-s", "4.5", "--", "/bin/sh", "-c", cmd, NULL };
	cr_assert_eq(memsup_run(&r, args), 124, "stderr: %s", r.err);
	rec_load(&r);
	require_watchable(&r);
	struct change c[RUNRECORD_MAX_PACE_CHANGES];
	size_t nc = changes_of(&r, c, RUNRECORD_MAX_PACE_CHANGES), at_max = 0, dense_after = 0;
	for (size_t i = 0; i < nc; i++) {
		if (c[i].sparse && c[i].ms == 1000 && !at_max)
			at_max = i + 1;
		if (at_max && !c[i].sparse && c[i].t >= 2.4 && !dense_after)
			dense_after = i + 1;
	}
	cr_expect(at_max, "the flat tree's interval never reached 1 s: %s", sampling(&r));
	cr_expect(dense_after, "no change to dense at the rise after it: %s", sampling(&r));
	cr_expect_geq(samp_num(&r, "threshold_wakeups"), 1, "%s", sampling(&r));
	tl_load(&r, "timeline.jsonl");
	size_t rising = 0;
	double lo = 0, hi = 0;
	for (size_t i = 1; i < tl.n; i++) {
		if (tl.p[i].t < 2.4)
			continue;
		if (!lo)
			lo = hi = tl.p[i - 1].rss;
		if (tl.p[i].rss >= tl.p[i - 1].rss + 1 * MB)
			rising++;
		if (tl.p[i].rss > hi)
			hi = tl.p[i].rss;
	}
	double steps = (hi - lo) / (2 * 1048576.0);
	cr_assert_geq(steps, 20, "the grower grew only %.0f MB", (hi - lo) / MB);
	cr_expect_geq((double)rising, 0.4 * steps, "%zu rising samples for %.0f steps of 2 MiB "
		      "after the flat start: not sampled densely; %s", rising, steps, sampling(&r));
	/* the rise's start above all: its first 24 steps (about 0.5 s) are
	 * read step by step, not missed by a 1 s interval that ran on */
	size_t early = 0;
	for (size_t i = 0; i < tl.n; i++)
		early += tl.p[i].t >= 2.4 && tl.p[i].rss > lo + 1 * MB &&
			 tl.p[i].rss <= lo + 24 * 2 * 1048576.0;
	cr_expect_geq((double)early, 10, "%zu samples in the rise's first 24 steps; %s", early,
		      sampling(&r));
}

/* Flat for a second, then 100 MB for 80 ms: the kernel's threshold wakes
 * the sparse memsup, and a sample at the spike names the process in its
 * per-process view. */
Test(memsup_adaptive, flat_tree_that_spikes_gets_a_sample_at_the_spike, .timeout = 60)
{
	struct sup_run r;
	const char *args[] = { "--no-trace", "--", prog("spike"), "100",
			       "80", "0", "0", "1000", NULL };
	cr_assert_eq(memsup_run(&r, args), 0, "stderr: %s", r.err);
	rec_load(&r);
	require_watchable(&r);
	int pid = (int)rec_num(&r, "pid");
	cr_expect_geq(samp_num(&r, "threshold_wakeups"), 1, "%s", sampling(&r));
	cr_expect_geq(samp_num(&r, "samples_sparse"), 3, "%s", sampling(&r));
	tl_load(&r, "timeline.jsonl");
	double best = 0;
	for (size_t i = 0; i < tl.n; i++)
		if (tl.p[i].has_top && tl.p[i].n_top > 0 && tl.p[i].pid[0] == pid &&
		    tl.p[i].bytes[0] > best)
			best = tl.p[i].bytes[0];
	cr_expect_geq(best, 90 * MB, "the largest per-process figure of pid %d was %.1f MB; %s",
		      pid, best / MB, sampling(&r));
}

/* The /proc scan: nothing tells memsup that the memory moved. */
Test(memsup_adaptive, no_memory_cgroup_stays_dense_and_says_why, .timeout = 60)
{
	struct sup_run r;
	const char *args[] = { "--cgroup", "off", "--", prog("sleeper"), "1",
			       NULL };
	cr_assert_eq(memsup_run(&r, args), 0, "stderr: %s", r.err);
	rec_load(&r);
	cr_expect(!samp_true(&r, "adaptive"), "%s", sampling(&r));
	cr_expect_not_null(strstr(samp_at(&r, "why_not"), "no memory cgroup"), "%s",
			   sampling(&r));
	cr_expect_eq(samp_num(&r, "samples_sparse"), 0);
	cr_expect_eq(samp_num(&r, "switches"), 0);
	cr_expect_eq(samp_num(&r, "sparse_s"), 0);
	cr_expect_eq(strncmp(samp_at(&r, "sparse_ms"), "null", 4), 0, "%s", sampling(&r));
}

/* --rss-mb is a polled budget: its promise is one --poll-ms. */
Test(memsup_adaptive, rss_budget_stays_dense_and_says_why, .timeout = 60)
{
	struct sup_run r;
	const char *args[] = { "--rss-mb", "1000", "--", prog("sleeper"), "1",
			       NULL };
	cr_assert_eq(memsup_run(&r, args), 0, "stderr: %s", r.err);
	rec_load(&r);
	cr_expect(!samp_true(&r, "adaptive"), "%s", sampling(&r));
	cr_expect_not_null(strstr(samp_at(&r, "why_not"), "--rss-mb"), "%s", sampling(&r));
	cr_expect_eq(samp_num(&r, "samples_sparse"), 0);
}

/* --sparse-ms 0: an idle tree is sampled every --poll-ms, as before the
 * pace existed, and the record says why; the default (100) follows the
 * memory (idle_tree_is_sampled_sparsely). */
Test(memsup_adaptive, sparse_ms_0_is_dense_and_says_why, .timeout = 60)
{
	struct sup_run r;
	const char *args[] = { "--sparse-ms", "0", "--", prog("sleeper"), "1", NULL };
	cr_assert_eq(memsup_run(&r, args), 0, "stderr: %s", r.err);
	rec_load(&r);
	cr_expect(!samp_true(&r, "adaptive"), "%s", sampling(&r));
	cr_expect_not_null(strstr(samp_at(&r, "why_not"), "--sparse-ms 0"), "%s", sampling(&r));
	cr_expect_eq(samp_num(&r, "samples_sparse"), 0);
	cr_expect_eq(samp_num(&r, "switches"), 0);
	cr_expect_eq(strncmp(samp_at(&r, "sparse_ms"), "null", 4), 0, "%s", sampling(&r));
}

/* ---- the backends, on fixture trees ----------------------------------------------- */

static struct contain *fixture_open(struct fixture *fx, const char *name, const char *mode)
{
	fixture_copy(fx, name);
	struct contain_config cc = fixture_config(fx);
	struct contain *c;
	cr_assert_eq(contain_open(&c, &cc), 0);
	cr_assert_str_eq(contain_info(c)->mode, mode);
	return c;
}

static int readable(int fd)
{
	struct pollfd p = { fd, POLLIN, 0 };
	return poll(&p, 1, 0) == 1 && (p.revents & POLLIN);
}

/* v1: two thresholds on one eventfd (the fixture's usage is 4000000). */
Test(memsup_adaptive, v1_thresholds_armed_on_one_eventfd)
{
	struct fixture fx;
	struct contain *c = fixture_open(&fx, "v1", "cgroup1");
	cr_expect_null(contain_unwatchable(c), "%s", contain_unwatchable(c));
	cr_expect_eq(contain_watch_fd(c), -1, "nothing armed before contain_watch");
	cr_assert_eq(contain_watch(c, 3000000, 5000000), 0);
	int efd = contain_watch_fd(c);
	cr_assert_geq(efd, 0);
	cr_expect(!readable(efd), "the usage lies between the marks: nothing to tell");
	char path[2 * PATH_MAX], text[256];
	size_t len;
	snprintf(path, sizeof path, "%s/memory/jobs/7/memsup-100-run/cgroup.event_control",
		 fx.sys);
	cr_assert_eq(procfs_read_file(path, text, sizeof text, &len), 0);
	int fd1 = -1, fd2 = -1;
	unsigned long long mark = 0;
	cr_expect_eq(sscanf(text, "%d %d %llu", &fd1, &fd2, &mark), 3, "%s", text);
	cr_expect_eq(fd1, efd, "registered on the armed eventfd: %s", text);
	cr_expect_eq(mark, 3000000, "the low mark is registered last: %s", text);
	/* the usage already past the high mark: told at once */
	cr_assert_eq(contain_watch(c, 1000000, 2000000), 0);
	int efd2 = contain_watch_fd(c);
	cr_assert_geq(efd2, 0);
	cr_expect(readable(efd2), "the usage (4000000) lies past the high mark (2000000)");
	contain_unwatch(c);
	cr_expect_eq(contain_watch_fd(c), -1, "unwatched: released");
	contain_close(c);
	fixture_remove(&fx);
}

/* v2's core files have no usage threshold: nothing armed, and why. */
Test(memsup_adaptive, v2_cannot_watch_and_says_why)
{
	struct fixture fx;
	struct contain *c = fixture_open(&fx, "v2", "cgroup2");
	const char *why = contain_unwatchable(c);
	cr_assert_not_null(why);
	cr_expect_not_null(strstr(why, "cgroup v2"), "%s", why);
	cr_expect_eq(contain_watch(c, 1000000, 2000000), -ENOTSUP);
	cr_expect_eq(contain_watch_fd(c), -1);
	contain_close(c);
	fixture_remove(&fx);
}

/* The hybrid layout's memory files are v1's: watchable. */
Test(memsup_adaptive, hybrid_watches_through_v1_memory)
{
	struct fixture fx;
	struct contain *c = fixture_open(&fx, "hybrid", "hybrid");
	cr_expect_null(contain_unwatchable(c), "%s", contain_unwatchable(c));
	cr_expect_eq(contain_watch(c, 1, UINT64_MAX / 2), 0);
	cr_expect_geq(contain_watch_fd(c), 0);
	contain_close(c);
	fixture_remove(&fx);
}
