/* test_answer.c: the answer's candidates, sample by sample
 * (supervisor/analyze/answer.h): the polled peak, the first of equals
 * kept; the cgroup's counters where its usage was largest, a sample whose
 * parts add up preferred to one whose parts do not; and the answer chosen
 * from them. */
#include <criterion/criterion.h>
#include <stdlib.h>

#include "analyze/answer.h"
#include "units.h"

static struct sup_record *fresh(void)
{
	struct sup_record *r = malloc(sizeof *r);
	cr_assert_not_null(r);
	runrecord_init(r);
	return r;
}

static struct contain_state usage(uint64_t bytes, int split, int agrees)
{
	struct contain_state k = { 0 };
	k.have_usage = 1;
	k.usage = bytes;
	k.have_split = split;
	k.split_agrees = agrees;
	return k;
}

Test(answer, the_polled_peak_keeps_the_first_of_equals)
{
	struct sup_record *r = fresh();
	struct contain_state none = { 0 };
	/* the first sample is a peak, even of nothing */
	cr_expect(answer_note_sample(r, 0.01, 0, &none));
	cr_expect_float_eq(r->peak_at_s, 0.01, 1e-12);
	cr_expect(answer_note_sample(r, 0.02, 100, &none));
	cr_expect(!answer_note_sample(r, 0.03, 100, &none));
	cr_expect(!answer_note_sample(r, 0.04, 50, &none));
	cr_expect_eq(r->peak_bytes, 100);
	cr_expect_float_eq(r->peak_at_s, 0.02, 1e-12);
	/* no usage read: no cgroup candidate */
	cr_expect_float_eq(r->kernel_peak_at_s, -1, 1e-12);
	free(r);
}

Test(answer, the_cgroup_at_its_largest_usage_whose_parts_add_up)
{
	struct sup_record *r = fresh();
	struct contain_state k = usage(100, 1, 0);
	answer_note_sample(r, 0.1, 10, &k);
	cr_expect_float_eq(r->kernel_peak_at_s, 0.1, 1e-12);
	/* larger but as unsure: it displaces */
	k = usage(200, 1, 0);
	answer_note_sample(r, 0.2, 10, &k);
	cr_expect_eq(r->kernel_at_peak.usage, 200);
	/* smaller, but its parts add up: it displaces one whose do not */
	k = usage(150, 1, 1);
	answer_note_sample(r, 0.3, 10, &k);
	cr_expect_eq(r->kernel_at_peak.usage, 150);
	cr_expect_float_eq(r->kernel_peak_at_s, 0.3, 1e-12);
	/* larger, but its parts do not add up: it does not */
	k = usage(300, 1, 0);
	answer_note_sample(r, 0.4, 10, &k);
	cr_expect_eq(r->kernel_at_peak.usage, 150);
	/* equal and sure: the first is kept; larger and sure: taken */
	k = usage(150, 1, 1);
	answer_note_sample(r, 0.5, 10, &k);
	cr_expect_float_eq(r->kernel_peak_at_s, 0.3, 1e-12);
	k = usage(160, 1, 1);
	answer_note_sample(r, 0.6, 10, &k);
	cr_expect_eq(r->kernel_at_peak.usage, 160);
	cr_expect_float_eq(r->kernel_peak_at_s, 0.6, 1e-12);
	free(r);
}

Test(answer, the_best_witness_answers)
{
	struct sup_record *r = fresh();
	answer_apply(r);
	cr_expect_eq(r->peak_source, SUP_PEAK_NONE);
	cr_expect_str_eq(answer_words(r), "");
	struct contain_state none = { 0 };
	answer_note_sample(r, 0.5, 3 * UNITS_MB, &none);
	answer_apply(r);
	cr_expect_eq(r->peak_source, SUP_PEAK_POLLED_RSS);
	cr_expect_float_eq(r->peak_mb, 3.0, 1e-9);
	cr_expect_float_eq(r->peak_source_at_s, 0.5, 1e-12);
	r->peak_pss_mb = 2.5;
	answer_apply(r);
	cr_expect_eq(r->peak_source, SUP_PEAK_POLLED_PSS);
	cr_expect_float_eq(r->peak_mb, 2.5, 1e-9);
	struct contain_state k = usage(4 * UNITS_MB, 0, 0);
	answer_note_sample(r, 0.7, 3 * UNITS_MB, &k);
	r->cgroup.have_peak = 1;
	r->cgroup.peak = 5 * UNITS_MB;
	answer_apply(r);
	cr_expect_eq(r->peak_source, SUP_PEAK_CGROUP);
	cr_expect_float_eq(r->peak_mb, 5.0, 1e-9);
	cr_expect_float_eq(r->peak_source_at_s, 0.7, 1e-12);
	free(r);
}
