/* test_memsup_refusals.c: ordinary records memsup refused, end to end.
 *
 * Each test runs the built memsup ($MEMSUP) on an ordinary command whose
 * records memsup once did not believe, or whose images it listed as
 * untraced for a reason that was not true, and judges processes.json and
 * resources.json with python3 (tests/py/memsup_refusals.py, one check per
 * test):
 *  - `mv` links libselinux, whose constructor allocates before the shim's:
 *    the record's start must not come after the peak times it states;
 * Forged records are still refused: tests/e2e/test_memsup_forged.c. */
#include "test_memsup_util.h"
#include "test_py.h"

/* 100 rounds of two `mv` in the run's directory: 200 images that allocate
 * before the shim's constructor runs, each a record that says so. */
Test(memsup_refusals, mv_records_start_before_their_peaks, .timeout = 120)
{
	struct sup_run r;
	const char *args[] = { "--", "/bin/sh", "-c",
			       "touch a && i=0; while [ $i -lt 100 ]; do mv a b; mv b a; "
			       "i=$((i+1)); done",
			       NULL };
	cr_assert_eq(memsup_run(&r, args), 0, "stderr: %s", r.err);
	sup_py_check(&r, "memsup_refusals.py", "mv_records_start_before_their_peaks", "200");
	sup_done(&r);
}
