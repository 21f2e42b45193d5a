/* test_memsup_mapsites.c: call sites of mapped memory under memsup
 * (stacks.h, "Mapped memory"): anonymous mappings the program makes itself
 * are sampled by the heap's sampler and appear in stacks.json as sites of
 * kind "mmap", and in flame.svg and flame.folded under a "[mmap]" root.
 *
 * tests/progs/map_sites maps known lengths from named functions (60/30/10%
 * of its size in pieces of 4 KiB to 1 MiB, a region cut by two munmaps, a
 * region grown by mremap, and pieces unmapped before its peak) and prints
 * the truth on stdout, which memsup keeps in stdout.log.  A python3 run
 * allocating many small objects gets pymalloc's arenas (1 MiB mappings)
 * attributed.  The checks are python3: tests/py/memsup_mapsites.py, one
 * per test.
 */
#include "test_memsup_util.h"
#include "test_py.h"

/* At the default interval: each function's share of the mapped bytes at
 * the image's peak within 5 points of the truth, the estimate within 4
 * standard errors (and 1%) of it, every site of kind mmap; what was
 * unmapped before the peak is not there; the pages are touched, so the
 * tree's RSS peak holds the same sites; flame.folded puts them under
 * [mmap]. */
Test(memsup_mapsites, shares_at_the_default_interval, .timeout = 120)
{
	struct sup_run r;
	const char *args[] = { "-q", "--", prog("map_sites"), "100", "400", "1", NULL };
	cr_assert_eq(memsup_run(&r, args), 0, "stderr: %s", r.err);
	sup_py_check(&r, "memsup_mapsites.py", "shares_at_the_default_interval", NULL);
	sup_done(&r);
}

/* Every mapping sampled: each function's bytes at the image's peak are
 * its mapped length exactly, the partial munmap's remaining pieces and
 * the mremap's grown length included, the early pieces 0, nothing live at
 * the exit (all unmapped); held 300 ms, so that memsup's polls see the
 * heap block map_sites takes last, the tree's heap peak is that moment
 * too. */
Test(memsup_mapsites, exact_with_every_mapping_sampled, .timeout = 120)
{
	struct sup_run r;
	const char *args[] = { "-q", "-e", "MEMTRACE_SAMPLE_BYTES=1", "--", prog("map_sites"), "60",
			       "300", NULL };
	cr_assert_eq(memsup_run(&r, args), 0, "stderr: %s", r.err);
	sup_py_check(&r, "memsup_mapsites.py", "exact_with_every_mapping_sampled", NULL);
	sup_done(&r);
}

/* A malloc-only program (site_shares: glibc's large blocks are mmapped
 * by malloc itself, through its internal __mmap) has no mmap site. */
Test(memsup_mapsites, malloc_mappings_stay_heap, .timeout = 120)
{
	struct sup_run r;
	const char *args[] = { "-q", "-e", "MEMTRACE_SAMPLE_BYTES=1", "--", prog("site_shares"),
			       "60", "1", NULL };
	cr_assert_eq(memsup_run(&r, args), 0, "stderr: %s", r.err);
	sup_py_check(&r, "memsup_mapsites.py", "malloc_mappings_stay_heap", NULL);
	sup_done(&r);
}

/* python3 holding many small objects: pymalloc's arenas are mappings of
 * the interpreter's own, sampled as kind mmap, and their estimate is the
 * anonymous mapped bytes the record counts. */
Test(memsup_mapsites, python_arenas_have_call_sites, .timeout = 180)
{
	struct sup_run r;
	if (system("python3 -c pass >/dev/null 2>&1") != 0)
		cr_skip_test("no python3 here");
	const char *args[] = { "-q", "--", "python3", "-c",
			       "import time\n"
			       "keep = [(i, str(i)) for i in range(1500000)]\n"
			       "time.sleep(0.3)\n",
			       NULL };
	cr_assert_eq(memsup_run(&r, args), 0, "stderr: %s", r.err);
	sup_py_check(&r, "memsup_mapsites.py", "python_arenas_have_call_sites", NULL);
	sup_done(&r);
}

/* The summary names mapping sites with their kind. */
Test(memsup_mapsites, summary_names_the_kind, .timeout = 60)
{
	struct sup_run r;
	const char *args[] = { "-e", "MEMTRACE_SAMPLE_BYTES=1", "--", prog("map_sites"), "20",
			       "300", NULL };
	cr_assert_eq(memsup_run(&r, args), 0, "stderr: %s", r.err);
	cr_expect_not_null(strstr(r.err, "memsup: heap and mapped memory at the tree's peak of heap "
					 "plus mappings ("),
			   "%s", r.err);
	/* map_sites is built with -g: its frames carry their lines */
	cr_expect_not_null(strstr(r.err, ": [mmap] hold_sixty (map_sites.c:"), "%s", r.err);
	cr_expect_not_null(strstr(r.err, ": [mmap] hold_grown (map_sites.c:"), "%s", r.err);
	sup_done(&r);
}
