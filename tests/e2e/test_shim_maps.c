/* test_shim_maps.c: mmap/munmap/mremap under LD_PRELOAD, exact figures
 * (partial munmap, mremap grow/shrink/move, MAP_FIXED replacement). */
#include <criterion/criterion.h>
#include <sys/wait.h>

#include "test_shim_harness.h"

Test(shim_maps, partial_munmap_and_mremap_are_exact, .timeout = 20)
{
	const char *argv[] = { "alloc_maps", NULL };
	struct shim_run r;
	struct mt_record rec;
	shim_run(&r, argv, NULL, 0);
	cr_assert(WIFEXITED(r.status) && WEXITSTATUS(r.status) == 0, "status %#x: %s%s", r.status,
		  r.out, r.err);
	shim_record(&r, r.pid, 0, &rec);
	cr_expect_eq(rec.map_anon_current, shim_value(r.out, "map_anon_current"));
	cr_expect_eq(rec.map_anon_peak, shim_value(r.out, "map_anon_peak"));
	cr_expect_eq(rec.map_file_current, shim_value(r.out, "map_file_current"));
	cr_expect_eq(rec.map_file_peak, shim_value(r.out, "map_file_peak"));
	cr_expect_eq(rec.map_largest, shim_value(r.out, "map_largest"));
	cr_expect_eq(rec.calls[MT_CALL_MMAP], 5);
	cr_expect_eq(rec.calls[MT_CALL_MUNMAP], 4);
	cr_expect_eq(rec.calls[MT_CALL_MREMAP], 3);
	cr_expect_eq(rec.map_untracked_calls, 0);
	/* The mappings are not heap; total = heap + mappings with its own peak. */
	cr_expect_eq(rec.total_current, rec.heap_current + rec.map_anon_current +
						rec.map_file_current);
	if (rec.heap_peak == 0)
		cr_expect_eq(rec.total_peak, shim_value(r.out, "map_total_peak"));
	cr_expect_lt(rec.total_peak, rec.heap_peak + rec.map_anon_peak + rec.map_file_peak,
		     "the peak of the sum is not the sum of the peaks here");
	shim_done(&r);
}
