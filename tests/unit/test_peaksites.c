/* test_peaksites.c: the tree's heap peak (and its peak of heap plus
 * mappings) on hand-made records and samples
 * -- the samples around it that peaksites keeps, the images the merged
 * view takes at their own exact peak (merge.h, heap_peak_view) and the
 * figures that follow from it: peak_heap_mb (findings_apply) and the tree
 * heap set's traced_heap (callsites.h).  The same rule end to end, on a
 * real program: test_memsup_sites_peak.c.
 *
 * Times are seconds into the run; records start with it, at T0. */
#include <criterion/criterion.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "analyze/callsites.h"
#include "analyze/findings.h"
#include "analyze/merge.h"
#include "collect/live.h"
#include "collect/peaksites.h"
#include "collect/pview.h"
#include "analyze/runrecord.h"

#define T0 UINT64_C(1000000000)
#define NS(s) (T0 + (uint64_t)((s) * 1e9))

struct fixture {
	char dir[PATH_MAX];
	struct live *live;
	struct peaksites *sites;
	struct sup_record rec;
	struct merged_run m;
};

/* A record of pid (100 is the command, the others its fork children) that
 * peaked at heap_peak bytes, peak_s into the run. */
static void put_record_total(struct fixture *f, int32_t pid, uint64_t heap_peak, double peak_s,
			     uint64_t total_peak, double total_s)
{
	struct mt_record r;
	char path[PATH_MAX + 32];
	memset(&r, 0, sizeof r);
	r.magic = MT_RECORD_MAGIC;
	r.version = MT_RECORD_VERSION;
	r.record_size = MT_RECORD_SIZE;
	r.pid = pid;
	r.ppid = pid == 100 ? 1 : 100;
	r.relation = pid == 100 ? MT_REL_ROOT : MT_REL_FORK;
	r.parent_pid = pid == 100 ? 0 : 100;
	r.start_mono_ns = T0;
	r.state = MT_STATE_RUNNING;
	r.heap_peak = heap_peak;
	r.heap_peak_mono_ns = NS(peak_s);
	r.total_peak = total_peak;
	r.total_peak_mono_ns = total_peak ? NS(total_s) : 0;
	snprintf(path, sizeof path, "%s/%d.0.mtr", f->dir, (int)pid);
	int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0644);
	cr_assert_geq(fd, 0);
	cr_assert_eq(ftruncate(fd, MT_RECORD_SIZE), 0);
	cr_assert_eq(pwrite(fd, &r, sizeof r, 0), (ssize_t)sizeof r);
	close(fd);
}

/* ... whose heap and mappings together peaked no higher than its heap. */
static void put_record(struct fixture *f, int32_t pid, uint64_t heap_peak, double peak_s)
{
	put_record_total(f, pid, heap_peak, peak_s, heap_peak, peak_s);
}

static void start(struct fixture *f)
{
	memset(f, 0, sizeof *f);
	snprintf(f->dir, sizeof f->dir, "/tmp/test-peaksites-XXXXXX");
	cr_assert_not_null(mkdtemp(f->dir));
	runrecord_init(&f->rec);
}

/* After the records are written: the live view of them, believed as the
 * command's tree, and the peaks to feed. */
static void open_views(struct fixture *f)
{
	cr_assert_eq(live_open(&f->live, f->dir), 0);
	live_update(f->live, 1);
	/* made-up pids: whatever runs under them here is not looked at */
	live_set_checks(f->live, NULL, 0);
	live_believe(f->live, NULL, 0, 100, 0, 0);
	cr_assert_eq(peaksites_open(&f->sites, f->dir), 0);
}

/* One sample at `at_s`: heaps[i] and maps[i] (NULL: none) for pid
 * 100 + i (heap 0: not alive then). */
static void sample_maps(struct fixture *f, double at_s, const uint64_t *heaps,
			const uint64_t *maps, size_t n)
{
	struct pview_peak_member m[4];
	uint64_t sum = 0, mapped = 0;
	size_t k = 0;
	memset(m, 0, sizeof m);
	for (size_t i = 0; i < n; i++) {
		if (!heaps[i])
			continue;
		m[k].pid = 100 + (pid_t)i;
		m[k].heap = heaps[i];
		m[k].map = maps ? maps[i] : 0;
		m[k].rss = heaps[i] + m[k].map;
		m[k].heap_counted = 1;
		sum += heaps[i];
		mapped += m[k].map;
		k++;
	}
	peaksites_sample(f->sites, f->live, m, k, at_s, sum, mapped, sum + mapped);
}

static void sample(struct fixture *f, double at_s, const uint64_t *heaps, size_t n)
{
	sample_maps(f, at_s, heaps, NULL, n);
}

static void merge(struct fixture *f)
{
	struct merge_input in = {
		.rec = &f->rec, .tracing = 1, .command_pid = 100, .start_mono_ns = T0,
		.live = f->live, .sites = f->sites, .end_mono_ns = NS(10),
	};
	cr_assert_eq(merge_build(&f->m, &in), 0);
}

static const struct image_view *image(const struct fixture *f, pid_t pid)
{
	for (size_t i = 0; i < f->m.n_images; i++)
		if (f->m.images[i].pid == pid)
			return &f->m.images[i];
	cr_assert_fail("no image of pid %d", (int)pid);
	return NULL;
}

static void finish(struct fixture *f)
{
	char cmd[PATH_MAX + 16];
	merge_free(&f->m);
	peaksites_close(f->sites);
	live_close(f->live);
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", f->dir);
	cr_expect_eq(system(cmd), 0);
}

/* One process: its own peak, wherever it was (here a spike before the
 * largest sample's interval), is the tree's; resources.json and stacks.json
 * say the shim's figure, and the polled sum is kept beside it. */
Test(peaksites, lone_image_is_taken_at_its_own_peak, .timeout = 10)
{
	struct fixture f;
	start(&f);
	put_record(&f, 100, 1000, 0.05);
	open_views(&f);
	sample(&f, 0.1, (uint64_t[]){ 300 }, 1);
	sample(&f, 0.2, (uint64_t[]){ 900 }, 1);
	sample(&f, 0.3, (uint64_t[]){ 100 }, 1);
	double before, after;
	peaksites_window(f.sites, PEAKSITES_HEAP, &before, &after);
	cr_expect(before == 0.1 && after == 0.3, "window %g..%g", before, after);
	merge(&f);
	const struct heap_peak_view *v = &f.m.heap_peak;
	cr_assert(v->have);
	cr_expect(v->at_s == 0.2);
	cr_expect_eq(v->polled, 900);
	cr_expect_eq(v->heap, 1000);
	cr_expect_eq(v->counted, 1);
	cr_expect_eq(v->own, 1);
	cr_expect_eq(image(&f, 100)->heap_peak_take, HEAP_PEAK_OWN);
	cr_expect_eq(image(&f, 100)->heap_peak_bytes, 1000);

	struct finding buf[FINDINGS_MAX];
	findings_apply(&f.rec, &f.m, buf, FINDINGS_MAX);
	cr_expect(f.rec.peak_heap_mb == 1000 / 1e6, "%g", f.rec.peak_heap_mb);

	struct callsite_view cv;
	cr_assert_eq(callsites_build(&cv, &f.m, f.sites, -1, NULL), 0);
	cr_expect_eq(cv.tree[PEAKSITES_HEAP].heap, 1000);
	cr_expect_eq(cv.tree[PEAKSITES_HEAP].polled, 900);
	cr_expect_eq(cv.tree[PEAKSITES_RSS].heap, 900, "the RSS peak stays the sample's");
	callsites_free(&cv);
	finish(&f);
}

/* Two processes: the one that peaked between the samples around the
 * largest is taken at its peak; the one that peaked long before keeps the
 * sample's figure (its peak was another moment of the tree). */
Test(peaksites, images_that_peaked_within_the_interval, .timeout = 10)
{
	struct fixture f;
	start(&f);
	put_record(&f, 100, 500, 0.25);
	put_record(&f, 101, 800, 0.05);
	open_views(&f);
	sample(&f, 0.1, (uint64_t[]){ 100, 200 }, 2);
	sample(&f, 0.2, (uint64_t[]){ 300, 300 }, 2);
	sample(&f, 0.3, (uint64_t[]){ 450, 400 }, 2);
	sample(&f, 0.4, (uint64_t[]){ 100, 100 }, 2);
	merge(&f);
	const struct heap_peak_view *v = &f.m.heap_peak;
	cr_assert(v->have);
	cr_expect(v->at_s == 0.3 && v->before_s == 0.2 && v->after_s == 0.4);
	cr_expect_eq(v->polled, 850);
	cr_expect_eq(v->heap, 900, "450 polled of pid 100 -> its 500");
	cr_expect_eq(v->counted, 2);
	cr_expect_eq(v->own, 1);
	cr_expect_eq(image(&f, 100)->heap_peak_take, HEAP_PEAK_OWN);
	cr_expect_eq(image(&f, 101)->heap_peak_take, HEAP_PEAK_POLLED);
	cr_expect_eq(image(&f, 101)->heap_peak_bytes, 400);

	struct finding buf[FINDINGS_MAX];
	findings_apply(&f.rec, &f.m, buf, FINDINGS_MAX);
	cr_expect(f.rec.peak_heap_mb == 900 / 1e6, "%g", f.rec.peak_heap_mb);
	finish(&f);
}

/* The largest sample was the last: nothing after it was seen, so an image
 * that peaked after it peaked within its interval; one that was not alive
 * at it is not counted at all. */
Test(peaksites, last_sample_leaves_the_interval_open, .timeout = 10)
{
	struct fixture f;
	start(&f);
	put_record(&f, 100, 700, 0.9);
	put_record(&f, 101, 300, 0.15);
	put_record(&f, 102, 5000, 0.02);
	open_views(&f);
	sample(&f, 0.02, (uint64_t[]){ 10, 0, 10 }, 3);
	sample(&f, 0.1, (uint64_t[]){ 200, 100, 0 }, 3);
	sample(&f, 0.2, (uint64_t[]){ 600, 250, 0 }, 3);
	merge(&f);
	const struct heap_peak_view *v = &f.m.heap_peak;
	cr_assert(v->have);
	cr_expect(v->at_s == 0.2 && v->before_s == 0.1 && v->after_s < 0);
	cr_expect_eq(v->heap, 700 + 300, "both peaked after the sample before");
	cr_expect_eq(v->own, 2);
	cr_expect_eq(image(&f, 102)->heap_peak_take, HEAP_PEAK_ABSENT);
	finish(&f);
}

/* The peak of heap plus mappings is a moment of its own: here the heap
 * peaks at 0.1 s and the mappings of pid 101 at 0.2 s.  The tree's total
 * peak is that sample, pid 101 taken at its own total_peak (within the
 * sample's interval), pid 100 as polled (its total peaked before it); the
 * call sites' total tree has those figures, the heap tree its own moment. */
Test(peaksites, heap_plus_mappings_is_a_moment_of_its_own, .timeout = 10)
{
	struct fixture f;
	start(&f);
	put_record_total(&f, 100, 500, 0.1, 500, 0.05);
	put_record_total(&f, 101, 100, 0.1, 950, 0.25);
	open_views(&f);
	sample_maps(&f, 0.1, (uint64_t[]){ 500, 100 }, (uint64_t[]){ 0, 0 }, 2);
	sample_maps(&f, 0.2, (uint64_t[]){ 10, 10 }, (uint64_t[]){ 0, 900 }, 2);
	sample_maps(&f, 0.3, (uint64_t[]){ 10, 10 }, (uint64_t[]){ 0, 100 }, 2);
	cr_expect_eq(peaksites_total(f.sites, PEAKSITES_TOTAL), 920);
	merge(&f);
	cr_expect(f.m.heap_peak.at_s == 0.1, "%g", f.m.heap_peak.at_s);
	const struct heap_peak_view *v = &f.m.total_peak;
	cr_assert(v->have);
	cr_expect(v->at_s == 0.2 && v->before_s == 0.1 && v->after_s == 0.3);
	cr_expect_eq(v->polled, 920);
	cr_expect_eq(v->heap, 960, "910 polled of pid 101 -> its 950");
	cr_expect_eq(v->counted, 2);
	cr_expect_eq(v->own, 1);
	cr_expect_eq(image(&f, 101)->total_peak_take, HEAP_PEAK_OWN);
	cr_expect_eq(image(&f, 101)->total_peak_bytes, 950);
	cr_expect_eq(image(&f, 100)->total_peak_take, HEAP_PEAK_POLLED);
	cr_expect_eq(image(&f, 100)->total_peak_bytes, 10);

	struct callsite_view cv;
	cr_assert_eq(callsites_build(&cv, &f.m, f.sites, -1, NULL), 0);
	cr_expect(cv.tree[PEAKSITES_TOTAL].at_s == 0.2);
	cr_expect_eq(cv.tree[PEAKSITES_TOTAL].heap, 960);
	cr_expect_eq(cv.tree[PEAKSITES_TOTAL].polled, 920);
	cr_expect(cv.tree[PEAKSITES_HEAP].at_s == 0.1);
	cr_expect_eq(cv.tree[PEAKSITES_HEAP].heap, 600);
	callsites_free(&cv);
	finish(&f);
}
