/* test_memsup_pss.c: the Pss at the tree's peak, and what reading it cost
 * (memsup's CPU over `sort` of 200 MB was once more than half
 * smaps_rollup walking the growing process at its peaks).
 *
 * One process that grows alone to a known size (tests/progs/grower: 4 MiB
 * every 10 ms to 200 MiB, touched, then held) has its smaps_rollup read a
 * few times at most (pview.h, "Pss without the walk": at every 10% of
 * growth before, 40 to 50 times), and its Pss at the peak is still what
 * it held: at least the 200 MiB, at most the RSS of the peak sample, and
 * no further below it than the file part a Pss from status may carry
 * (4 MB).  The
 * readers of a parent's pages are walked as before, and their summed Pss
 * counts the pages once.  The counts are MEMSUP_DEBUG's line:
 * "memsup: debug: pview: N smaps_rollup reads, M Pss from status".
 */
#include "test_memsup_util.h"

/* The counts MEMSUP_DEBUG=1 printed; fails the test without the line. */
static void read_counts(const struct sup_run *r, unsigned *rollups, unsigned *derived)
{
	const char *l = strstr(r->err, "memsup: debug: pview: ");
	cr_assert_not_null(l, "no pview line under MEMSUP_DEBUG=1: %s", r->err);
	cr_assert_eq(sscanf(l, "memsup: debug: pview: %u smaps_rollup reads, %u Pss from status",
			    rollups, derived), 2, "%.200s", l);
}

Test(memsup_pss, one_growing_process_walked_once, .timeout = 60)
{
	struct sup_run r;
	unsigned rollups, derived;
	/* 4 MiB (4 MB in whole huge pages) every 10 ms to 200 MiB, held
	 * until --wall-s ends it (124) */
	const char *args[] = { "-q", "--wall-s", "5", "--", prog("grower"), "4", "10", "200", NULL };
	setenv("MEMSUP_DEBUG", "1", 1);
	cr_assert_eq(memsup_run(&r, args), 124, "stderr: %s", r.err);
	read_counts(&r, &rollups, &derived);
	rec_load(&r);
	double pss = rec_num(&r, "peak_pss_mb"), rss = rec_num(&r, "peak_tree_rss_mb");
	/* before its exec (memsup's fork child, sharing memsup's pages),
	 * after it, and one more where the exec changed its image */
	cr_expect_leq(rollups, 3, "%u smaps_rollup reads of one growing process (%u from status)",
		      rollups, derived);
	cr_expect_geq(derived, 1, "no Pss from status: %u reads", rollups);
	cr_expect_geq(rss, 4 * 50 * 1.048576, "peak tree RSS %.3f MB below the 200 MiB held", rss);
	cr_expect(pss >= 4 * 50 * 1.048576 && pss <= rss && rss - pss <= 4.2,
		  "Pss at the peak %.3f MB for 200 MiB held, RSS %.3f MB (%u reads, %u from status)",
		  pss, rss, rollups, derived);
	sup_done(&r);
}

/* Three readers of the parent's 100 MB: fork children sharing its pages,
 * each walked after it joined, and the summed Pss counts the pages once. */
Test(memsup_pss, fork_readers_walked_and_counted_once, .timeout = 60)
{
	struct sup_run r;
	unsigned rollups, derived;
	const char *args[] = { "-q", "--", prog("bs_readers"), "100", "3", "400", NULL };
	setenv("MEMSUP_DEBUG", "1", 1);
	cr_assert_eq(memsup_run(&r, args), 0, "stderr: %s", r.err);
	read_counts(&r, &rollups, &derived);
	rec_load(&r);
	double pss = rec_num(&r, "peak_pss_mb"), rss = rec_num(&r, "peak_tree_rss_mb");
	cr_expect_geq(rollups, 4, "the parent and its three readers each walked: %u reads", rollups);
	cr_expect_geq(rss, 4 * 100.0, "peak tree RSS %.3f MB: not the four holding", rss);
	cr_expect(pss >= 100.0 && pss <= 100.0 + 12,
		  "summed Pss at the peak %.3f MB for 100 MB held (RSS %.3f MB)", pss, rss);
	sup_done(&r);
}
