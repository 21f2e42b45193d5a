/* test_pace.c: how often memsup samples (supervisor/run/pace.h): when the
 * options keep it dense, the switch to sparse after --sparse-ms of flat
 * memory and back at the first movement, the doubling of a flat sparse
 * interval up to a second, a wake-up, the schedule's next deadline, and
 * the record's "sampling" fields each decision writes. */
#include <criterion/criterion.h>
#include <string.h>

#include "run/pace.h"

#define MS 1000000ull
#define MIB (1ull << 20)
#define START (1000 * MS) /* the launch, on the monotonic clock */

static struct sup_options defaults(void)
{
	struct sup_options o;
	memset(&o, 0, sizeof o);
	o.poll_ms = 10;
	o.sparse_ms = 100;
	return o;
}

/* An adaptive pace at the defaults (10 ms dense, 100 ms sparse). */
static void open_default(struct pace *p, struct sup_sampling *s)
{
	struct sup_options o = defaults();
	memset(s, 0, sizeof *s);
	pace_open(p, s, &o, pace_why_not(&o), START);
}

/* A sample at `t_ms` after the launch of a tree of n processes holding
 * `rss` (and as much cgroup usage). */
static enum pace_verdict sample(struct pace *p, struct sup_sampling *s, uint64_t t_ms,
				uint64_t rss, unsigned n, uint64_t *lo, uint64_t *hi)
{
	struct pace_reading rd = { .now = START + t_ms * MS, .rss = rss, .n = n,
				   .have_usage = 1, .usage = rss };
	return pace_after_sample(p, s, &rd, lo, hi);
}

/* Flat from 0 ms: sparse at 100 ms, with the kernel watching. */
static void go_sparse(struct pace *p, struct sup_sampling *s, uint64_t rss)
{
	uint64_t lo, hi;
	cr_assert_eq(sample(p, s, 0, rss, 3, &lo, &hi), PACE_KEEP);
	cr_assert_eq(sample(p, s, 100, rss, 3, &lo, &hi), PACE_WATCH);
	pace_watching(p, s, START + 100 * MS, rss, rss);
	cr_assert(p->sparse);
}

Test(pace, delta_is_a_64th_between_1_and_8_mib)
{
	cr_expect_eq(pace_delta(0), MIB);
	cr_expect_eq(pace_delta(64 * MIB), MIB);
	cr_expect_eq(pace_delta(128 * MIB), 2 * MIB);
	cr_expect_eq(pace_delta(512 * MIB), 8 * MIB);
	cr_expect_eq(pace_delta(4096 * MIB), 8 * MIB);
}

Test(pace, options_that_keep_it_dense)
{
	struct sup_options o = defaults();
	cr_expect_null(pace_why_not(&o));
	o.sparse_ms = 0;
	cr_expect_str_eq(pace_why_not(&o), "not asked: --sparse-ms 0 samples every --poll-ms");
	o = defaults();
	o.poll_ms = 100;
	cr_expect_str_eq(pace_why_not(&o), "--poll-ms is no denser than --sparse-ms");
	o = defaults();
	o.rss_mb = 50;
	cr_expect_not_null(strstr(pace_why_not(&o), "--rss-mb is a budget"));
	o = defaults();
	o.max_procs = 4;
	cr_expect_not_null(strstr(pace_why_not(&o), "--max-procs is a budget"));
}

Test(pace, open_fills_the_records_sampling)
{
	struct pace p;
	struct sup_sampling s;
	open_default(&p, &s);
	cr_expect(p.adaptive && !p.sparse);
	cr_expect_eq(p.period_ns, 10 * MS);
	cr_expect_eq(p.sparse_ns, 100 * MS);
	cr_expect_eq(p.sparse_max_ns, 1000 * MS);
	cr_expect_eq(s.adaptive, 1);
	cr_expect_null(s.why_not);
	cr_expect_float_eq(s.dense_s, 0.010, 1e-12);
	cr_expect_float_eq(s.sparse_s, 0.100, 1e-12);
	cr_expect_float_eq(s.sparse_max_s, 1.0, 1e-12);

	/* a --sparse-ms longer than a second is its own longest */
	struct sup_options o = defaults();
	o.sparse_ms = 2500;
	pace_open(&p, &s, &o, NULL, START);
	cr_expect_eq(p.sparse_max_ns, 2500 * MS);
	cr_expect_float_eq(s.sparse_max_s, 2.5, 1e-12);

	/* not adaptive: no sparse figures; --poll-ms 0 is still a period */
	o = defaults();
	o.poll_ms = 0;
	pace_open(&p, &s, &o, "the containment's reason", START);
	cr_expect(!p.adaptive && !s.adaptive);
	cr_expect_str_eq(s.why_not, "the containment's reason");
	cr_expect_eq(p.period_ns, 1);
	cr_expect_eq(s.sparse_s, 0);
	cr_expect_eq(s.sparse_max_s, 0);
}

Test(pace, not_adaptive_never_changes)
{
	struct pace p;
	struct sup_sampling s;
	struct sup_options o = defaults();
	memset(&s, 0, sizeof s);
	pace_open(&p, &s, &o, "no", START);
	uint64_t lo, hi;
	for (uint64_t t = 0; t < 3000; t += 10)
		cr_expect_eq(sample(&p, &s, t, 64 * MIB, 2, &lo, &hi), PACE_KEEP);
	cr_expect(!p.sparse);
	cr_expect_eq(s.switches, 0);
	cr_expect_eq(s.n_changes, 0);
}

Test(pace, flat_for_sparse_ms_asks_the_kernel_to_watch)
{
	struct pace p;
	struct sup_sampling s;
	uint64_t lo = 0, hi = 0;
	open_default(&p, &s);
	/* the first sample is movement: the marks are set from it */
	cr_expect_eq(sample(&p, &s, 0, 256 * MIB, 3, &lo, &hi), PACE_KEEP);
	/* flat, but not yet for --sparse-ms */
	cr_expect_eq(sample(&p, &s, 50, 256 * MIB, 3, &lo, &hi), PACE_KEEP);
	cr_expect_eq(sample(&p, &s, 99, 256 * MIB + 4 * MIB, 3, &lo, &hi), PACE_KEEP);
	/* 100 ms flat: the marks one delta (4 MiB) either side of the usage */
	cr_expect_eq(sample(&p, &s, 100, 256 * MIB, 3, &lo, &hi), PACE_WATCH);
	cr_expect_eq(lo, 252 * MIB);
	cr_expect_eq(hi, 260 * MIB);
	/* asking is not going: still dense until the kernel took the marks */
	cr_expect(!p.sparse);
	cr_expect_eq(s.switches, 0);
	pace_watching(&p, &s, START + 100 * MS, 256 * MIB, 256 * MIB);
	cr_expect(p.sparse);
	cr_expect_eq(p.step_ns, 100 * MS);
	cr_expect_eq(s.switches, 1);
	cr_expect_eq(s.n_changes, 1);
	cr_expect_float_eq(s.changes[0].t, 0.100, 1e-9);
	cr_expect_eq(s.changes[0].sparse, 1);
	cr_expect_float_eq(s.changes[0].interval_s, 0.100, 1e-9);
	/* a small usage's marks do not go below 0 */
	open_default(&p, &s);
	cr_expect_eq(sample(&p, &s, 0, MIB / 2, 1, &lo, &hi), PACE_KEEP);
	cr_expect_eq(sample(&p, &s, 100, MIB / 2, 1, &lo, &hi), PACE_WATCH);
	cr_expect_eq(lo, 0);
	cr_expect_eq(hi, MIB / 2 + MIB);
}

Test(pace, movement_restarts_the_quiet_stretch)
{
	struct pace p;
	struct sup_sampling s;
	uint64_t lo, hi;
	open_default(&p, &s);
	cr_expect_eq(sample(&p, &s, 0, 64 * MIB, 3, &lo, &hi), PACE_KEEP);
	/* the delta is the larger figure's: exactly one (1 MiB of 64) is not
	 * movement; one byte more is */
	cr_expect_eq(sample(&p, &s, 60, 63 * MIB, 3, &lo, &hi), PACE_KEEP);
	cr_expect_eq(p.quiet_since, START);
	cr_expect_eq(sample(&p, &s, 70, 63 * MIB - 1, 3, &lo, &hi), PACE_KEEP);
	cr_expect_eq(p.quiet_since, START + 70 * MS);
	cr_expect_eq(sample(&p, &s, 160, 63 * MIB - 1, 3, &lo, &hi), PACE_KEEP);
	/* another number of processes is movement, whatever the bytes */
	cr_expect_eq(sample(&p, &s, 165, 63 * MIB - 1, 4, &lo, &hi), PACE_KEEP);
	cr_expect_eq(p.quiet_since, START + 165 * MS);
	cr_expect_eq(sample(&p, &s, 265, 63 * MIB - 1, 4, &lo, &hi), PACE_WATCH);
}

Test(pace, no_cgroup_usage_stays_dense)
{
	struct pace p;
	struct sup_sampling s;
	uint64_t lo, hi;
	open_default(&p, &s);
	for (uint64_t t = 0; t < 1000; t += 10) {
		struct pace_reading rd = { .now = START + t * MS, .rss = 8 * MIB, .n = 1 };
		cr_expect_eq(pace_after_sample(&p, &s, &rd, &lo, &hi), PACE_KEEP);
	}
}

Test(pace, an_incomplete_peak_of_about_this_size_holds_it_dense)
{
	struct pace p;
	struct sup_sampling s;
	uint64_t lo, hi;
	open_default(&p, &s);
	struct pace_reading rd = { .now = START, .rss = 100 * MIB, .n = 2, .have_usage = 1,
				   .usage = 100 * MIB, .peak_incomplete = 1, .peak_rss = 110 * MIB };
	cr_expect_eq(pace_after_sample(&p, &s, &rd, &lo, &hi), PACE_KEEP);
	rd.now = START + 200 * MS;
	/* 100 of 110: within 10% */
	cr_expect_eq(pace_after_sample(&p, &s, &rd, &lo, &hi), PACE_KEEP);
	rd.peak_rss = 90 * MIB + MIB; /* 100 * 10 <= 91 * 11: within */
	cr_expect_eq(pace_after_sample(&p, &s, &rd, &lo, &hi), PACE_KEEP);
	rd.peak_rss = 200 * MIB; /* far from it: the peak waits */
	cr_expect_eq(pace_after_sample(&p, &s, &rd, &lo, &hi), PACE_WATCH);
	rd.peak_rss = 110 * MIB;
	rd.peak_incomplete = 0; /* complete: nothing to wait for */
	cr_expect_eq(pace_after_sample(&p, &s, &rd, &lo, &hi), PACE_WATCH);
}

Test(pace, a_flat_sparse_interval_doubles_up_to_a_second)
{
	struct pace p;
	struct sup_sampling s;
	uint64_t lo, hi;
	open_default(&p, &s);
	go_sparse(&p, &s, 32 * MIB);
	const uint64_t steps[] = { 200, 400, 800, 1000, 1000, 1000 };
	uint64_t t = 100;
	for (size_t i = 0; i < sizeof steps / sizeof steps[0]; i++) {
		t += p.step_ns / MS;
		cr_expect_eq(sample(&p, &s, t, 32 * MIB, 3, &lo, &hi), PACE_KEEP);
		cr_expect_eq(p.step_ns, steps[i] * MS, "step %zu: %llu ms", i,
			     (unsigned long long)(p.step_ns / MS));
	}
	/* each lengthening is a change of the record's, with its interval;
	 * none past the longest, and no switch */
	cr_expect_eq(s.lengthened, 4);
	cr_expect_eq(s.switches, 1);
	cr_expect_eq(s.n_changes, 5);
	cr_expect_float_eq(s.changes[1].t, 0.200, 1e-9);
	cr_expect_eq(s.changes[1].sparse, 1);
	cr_expect_float_eq(s.changes[1].interval_s, 0.200, 1e-9);
	cr_expect_float_eq(s.changes[4].interval_s, 1.0, 1e-9);

	/* from 300 ms a step doubles to 600, then ends at the longest */
	struct sup_options o = defaults();
	o.sparse_ms = 300;
	memset(&s, 0, sizeof s);
	pace_open(&p, &s, &o, NULL, START);
	cr_expect_eq(sample(&p, &s, 0, 32 * MIB, 3, &lo, &hi), PACE_KEEP);
	cr_expect_eq(sample(&p, &s, 300, 32 * MIB, 3, &lo, &hi), PACE_WATCH);
	pace_watching(&p, &s, START + 300 * MS, 32 * MIB, 32 * MIB);
	sample(&p, &s, 600, 32 * MIB, 3, &lo, &hi);
	cr_expect_eq(p.step_ns, 600 * MS);
	sample(&p, &s, 1200, 32 * MIB, 3, &lo, &hi);
	cr_expect_eq(p.step_ns, 1000 * MS);
}

Test(pace, movement_while_sparse_goes_dense_at_once)
{
	struct pace p;
	struct sup_sampling s;
	uint64_t lo, hi;
	open_default(&p, &s);
	go_sparse(&p, &s, 32 * MIB);
	cr_expect_eq(sample(&p, &s, 300, 32 * MIB, 3, &lo, &hi), PACE_KEEP);
	cr_expect_eq(p.step_ns, 200 * MS);
	/* the usage alone moved past its mark */
	struct pace_reading rd = { .now = START + 500 * MS, .rss = 32 * MIB, .n = 3,
				   .have_usage = 1, .usage = 34 * MIB };
	cr_expect_eq(pace_after_sample(&p, &s, &rd, &lo, &hi), PACE_TO_DENSE);
	cr_expect(!p.sparse);
	cr_expect_eq(p.mark_usage, 34 * MIB);
	cr_expect_eq(p.quiet_since, START + 500 * MS);
	cr_expect_float_eq(s.sparse_time_s, 0.400, 1e-9);
	cr_expect_eq(s.switches, 2);
	size_t last = s.n_changes - 1;
	cr_expect_float_eq(s.changes[last].t, 0.500, 1e-9);
	cr_expect_eq(s.changes[last].sparse, 0);
	cr_expect_float_eq(s.changes[last].interval_s, 0.010, 1e-9);
	/* the next stretch of sparse starts at --sparse-ms again */
	rd.now = START + 600 * MS;
	cr_expect_eq(pace_after_sample(&p, &s, &rd, &lo, &hi), PACE_WATCH);
	pace_watching(&p, &s, START + 600 * MS, 34 * MIB, 32 * MIB);
	cr_expect_eq(p.step_ns, 100 * MS);
}

Test(pace, a_refused_watch_is_dense_for_good)
{
	struct pace p;
	struct sup_sampling s;
	uint64_t lo, hi;
	open_default(&p, &s);
	cr_expect_eq(sample(&p, &s, 0, 32 * MIB, 3, &lo, &hi), PACE_KEEP);
	cr_expect_eq(sample(&p, &s, 100, 32 * MIB, 3, &lo, &hi), PACE_WATCH);
	pace_refused(&p, &s, "the kernel refused");
	cr_expect(!p.adaptive && !s.adaptive);
	cr_expect_str_eq(s.why_not, "the kernel refused");
	cr_expect_eq(sample(&p, &s, 300, 32 * MIB, 3, &lo, &hi), PACE_KEEP);
	cr_expect_eq(s.switches, 0);
}

Test(pace, a_wake_brings_the_next_sample_forward_once)
{
	struct pace p;
	struct sup_sampling s;
	uint64_t lo, hi, counter = 0;
	open_default(&p, &s);
	/* dense: nothing to wake */
	uint64_t next = START + 50 * MS;
	cr_expect_eq(pace_wake(&p, START + 20 * MS, START + 10 * MS, &next, &counter), 0);
	cr_expect_eq(next, START + 50 * MS);
	cr_expect_eq(counter, 0);
	go_sparse(&p, &s, 32 * MIB);
	/* a wake 4 ms after the last sample: not sooner than --poll-ms after it */
	next = START + 200 * MS;
	cr_expect_eq(pace_wake(&p, START + 104 * MS, START + 100 * MS, &next, &counter), 1);
	cr_expect_eq(next, START + 110 * MS);
	cr_expect_eq(counter, 1);
	cr_expect(p.woke);
	/* once woken, another is not counted until the sample */
	cr_expect_eq(pace_wake(&p, START + 105 * MS, START + 100 * MS, &next, &counter), 0);
	cr_expect_eq(counter, 1);
	/* later than --poll-ms: at once */
	p.woke = 0;
	next = START + 200 * MS;
	cr_expect_eq(pace_wake(&p, START + 150 * MS, START + 100 * MS, &next, &counter), 1);
	cr_expect_eq(next, START + 150 * MS);
	/* the sample after a wake is movement, though the figures are flat */
	cr_expect_eq(sample(&p, &s, 150, 32 * MIB, 3, &lo, &hi), PACE_TO_DENSE);
	cr_expect(!p.woke);
}

Test(pace, next_deadline_on_the_steady_schedule)
{
	struct pace p;
	struct sup_sampling s;
	open_default(&p, &s);
	uint64_t rec = START + 1000 * MS;
	/* dense: one period on */
	cr_expect_eq(pace_next(&p, START + 20 * MS, START + 21 * MS, rec), START + 30 * MS);
	/* deadlines already past are skipped, on the same grid */
	cr_expect_eq(pace_next(&p, START + 20 * MS, START + 55 * MS, rec), START + 60 * MS);
	cr_expect_eq(pace_next(&p, START + 20 * MS, START + 30 * MS, rec), START + 40 * MS);
	/* sparse: the step, cut at the record's second */
	go_sparse(&p, &s, 32 * MIB);
	cr_expect_eq(pace_next(&p, START + 100 * MS, START + 100 * MS, rec), START + 200 * MS);
	p.step_ns = 1000 * MS;
	cr_expect_eq(pace_next(&p, START + 500 * MS, START + 500 * MS, rec), rec);
	/* a record's second already past does not pull it back */
	cr_expect_eq(pace_next(&p, START + 500 * MS, START + 500 * MS, START + 400 * MS),
		     START + 1500 * MS);
}

Test(pace, end_counts_the_last_sparse_stretch)
{
	struct pace p;
	struct sup_sampling s;
	open_default(&p, &s);
	pace_end(&p, &s, START + 50 * MS);
	cr_expect_eq(s.sparse_time_s, 0);
	go_sparse(&p, &s, 32 * MIB);
	pace_end(&p, &s, START + 350 * MS);
	cr_expect_float_eq(s.sparse_time_s, 0.250, 1e-9);
	cr_expect(!p.sparse);
}

Test(pace, changes_past_the_list_are_counted)
{
	struct pace p;
	struct sup_sampling s;
	uint64_t lo, hi, t = 0, rss = 32 * MIB;
	open_default(&p, &s);
	sample(&p, &s, t, rss, 3, &lo, &hi);
	for (unsigned i = 0; i < RUNRECORD_MAX_PACE_CHANGES; i++) {
		t += 100;
		cr_assert_eq(sample(&p, &s, t, rss, 3, &lo, &hi), PACE_WATCH);
		pace_watching(&p, &s, START + t * MS, rss, rss);
		t += 10;
		rss += 16 * MIB;
		cr_assert_eq(sample(&p, &s, t, rss, 3, &lo, &hi), PACE_TO_DENSE);
	}
	cr_expect_eq(s.switches, 2 * RUNRECORD_MAX_PACE_CHANGES);
	cr_expect_eq(s.n_changes, 2 * RUNRECORD_MAX_PACE_CHANGES);
	cr_expect_eq(s.changes[RUNRECORD_MAX_PACE_CHANGES - 1].sparse, 0);
}

Test(pace, sparse_rewrites_the_record_only_for_news)
{
	struct pace p;
	struct sup_sampling s;
	struct sup_record rec;
	struct pace_marks was, cur;
	memset(&rec, 0, sizeof rec);
	open_default(&p, &s);
	rec.peak_bytes = 32 * MIB;
	pace_marks_take(&p, &rec, 0, 15 * MS, &was);
	cr_expect_eq(was.gap_periods, 1);
	/* dense: every second */
	cr_expect(pace_record_due(&p, START + 1000 * MS, START, &was, &was));
	go_sparse(&p, &s, 32 * MIB);
	/* sparse, nothing new: not before five seconds */
	cr_expect(!pace_record_due(&p, START + 1000 * MS, START, &was, &was));
	cr_expect(!pace_record_due(&p, START + 4999 * MS, START, &was, &was));
	cr_expect(pace_record_due(&p, START + 5000 * MS, START, &was, &was));
	/* a later gap within the same --poll-ms is no news; a period more is */
	pace_marks_take(&p, &rec, 0, 19 * MS, &cur);
	cr_expect(!pace_record_due(&p, START + 1000 * MS, START, &cur, &was));
	pace_marks_take(&p, &rec, 0, 20 * MS, &cur);
	cr_expect(pace_record_due(&p, START + 1000 * MS, START, &cur, &was));
	/* a new peak, a note, a phase, a change of pace: news */
	rec.peak_bytes++;
	pace_marks_take(&p, &rec, 0, 15 * MS, &cur);
	cr_expect(pace_record_due(&p, START + 1000 * MS, START, &cur, &was));
	rec.peak_bytes--;
	rec.n_notes = 1;
	pace_marks_take(&p, &rec, 0, 15 * MS, &cur);
	cr_expect(pace_record_due(&p, START + 1000 * MS, START, &cur, &was));
	rec.n_notes = 0;
	pace_marks_take(&p, &rec, 1, 15 * MS, &cur);
	cr_expect(pace_record_due(&p, START + 1000 * MS, START, &cur, &was));
	rec.sampling.n_changes = 2;
	pace_marks_take(&p, &rec, 0, 15 * MS, &cur);
	cr_expect(pace_record_due(&p, START + 1000 * MS, START, &cur, &was));
}
