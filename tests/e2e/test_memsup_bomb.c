/* test_memsup_bomb.c: --max-procs holds a fork bomb without a pids cgroup.
 * Under --cgroup off the C bomb (tests/progs/bomb.c, `for (;;) fork();`)
 * once ran 21 s past --max-procs 100 with no sample between 0.013 s and
 * 20.8 s.  Now, run after run (3 in the README's test command, 10 in CI's
 * thorough check: test_repeat.h), each:
 *  - as root, where RLIMIT_NPROC does not bind: the scan holds it
 *    ("max_procs_by": "scan", memsup at a real-time priority);
 *  - as nobody: RLIMIT_NPROC holds it ("rlimit_nproc"), never past N.
 * (or as the tester, when not root).  Each run ends procs_budget_exceeded with a bounded process count, no
 * stretch of a second without a sample, within a second of the first
 * sample that saw N, and the test's pids fence never refused a fork: it
 * was never filled.  Only inside that fence (guard_require). */
#include "test_guard.h"
#include "test_memsup_harden.h"
#include "test_repeat.h"
#include "contain/procs.h"

#define BOMB_N 100
/* bombs of each kind: few in the README's test command, more in CI's
 * thorough check (test_repeat.h) */
#define BOMB_RUNS test_runs(3, 10)

/* forks the guard's pids.max refused so far (pids.events "max N"); -1
 * when it cannot be read */
static long fence_refusals(void)
{
	char path[PATH_MAX], text[256];
	snprintf(path, sizeof path, "%s/pids.events", getenv("MEMTRACE_PIDS_GUARD"));
	slurp(path, text, sizeof text);
	const char *m = strstr(text, "max ");
	return m ? strtol(m + 4, NULL, 10) : -1;
}

static void to_nobody(const struct sup_run *r)
{
	become_nobody(r);
}

/* One run of the bomb under --cgroup off --max-procs BOMB_N; `by` is the
 * mechanism the record must name, `bound` the most processes a sample may
 * have seen. */
static void bomb_once(int run, int as_nobody, const char *by, double bound, double *worst_end)
{
	struct sup_run r;
	char nmax[16];
	snprintf(nmax, sizeof nmax, "%d", BOMB_N);
	tmp_make(&r);
	if (as_nobody)
		cr_assert_eq(chmod(r.tmp, 0777), 0); /* nobody writes the evidence */
	const char *argv[] = { env_or_skip("MEMSUP"), "-q", "--no-trace", "--cgroup", "off",
			       "--max-procs", nmax, "-o", r.dir, "--", prog("bomb"), NULL };
	long before = fence_refusals();
	harden_start(&r, as_nobody ? to_nobody : NULL, argv);
	int rc = memsup_wait(&r);
	long after = fence_refusals();
	cr_assert_eq(rc, 122, "run %d: memsup said %d: %s", run, rc, r.err);
	no_children_left();
	rec_load(&r);
	cr_expect_str_eq(rec_str(&r, "reason"), "\"procs_budget_exceeded\"", "run %d", run);
	double maxp = rec_num(&r, "max_processes"), wall = rec_num(&r, "wall_s");
	double gap = rec_num(&r, "longest_gap_s");
	cr_expect(before >= 0 && after == before,
		  "run %d: the test's pids fence refused %ld forks: the bomb filled it", run,
		  after - before);
	cr_expect_leq(maxp, bound, "run %d: %.0f processes seen", run, maxp);
	/* passing N happened at most one gap before the sample that saw it */
	cr_expect_lt(gap, 1.0, "run %d: no sample for %.3f s", run, gap);
	char want[32];
	snprintf(want, sizeof want, "\"%s\"", by);
	cr_expect_str_eq(rec_str(&r, "max_procs_by"), want, "run %d: notes: %s", run,
			 rec_str(&r, "notes"));
	double reached = rec_num(&r, "max_procs_reached_at_s");
	cr_expect_lt(wall - reached, 1.0, "run %d: N seen at %.3f s, the run ended at %.3f s",
		     run, reached, wall);
	if (wall - reached > *worst_end)
		*worst_end = wall - reached;
	cr_log_info("run %d (%s): %.0f processes, N seen at %.3f s, ended at %.3f s, longest "
		    "gap %.3f s", run, by, maxp, reached, wall, gap);
}

/* Both halves in one test, one after the other: Criterion runs a file's
 * tests in parallel, and two bombs at once on a small machine would test
 * the machine.
 * Root: RLIMIT_NPROC does not bind; memsup must keep up by itself (a few
 * processes past N may be born between the count and the stop).  Nobody
 * (or the tester, when not root): the kernel refuses the fork past N. */
Test(memsup_bomb, max_procs_held_without_cgroup_every_run, .timeout = 240)
{
	guard_require();
	double worst = 0;
	if (geteuid() == 0) {
		/* the scan holds N by time (the end within a second), not by
		 * count: the bomb forks on while memsup stops it, and in a
		 * loaded suite a sample saw 355; what keeps the machine is the
		 * fence, which must never refuse a fork */
		for (int i = 0; i < BOMB_RUNS; i++)
			bomb_once(i, 0, "scan", 10 * BOMB_N, &worst);
		cr_log_info("root, the scan: the slowest end %.3f s after N was seen", worst);
		if (!nobody_can_run()) {
			cr_log_warn("nobody cannot run memsup from this build tree: the "
				    "RLIMIT_NPROC half was not run");
			return;
		}
	}
	worst = 0;
	for (int i = 0; i < BOMB_RUNS; i++)
		bomb_once(i, geteuid() == 0, "rlimit_nproc", BOMB_N, &worst);
	cr_log_info("RLIMIT_NPROC: the slowest end %.3f s after N was seen", worst);
}

/* procs.h's parser: the real uid is the first "Uid:" field, and a
 * process counts its threads (RLIMIT_NPROC counts tasks). */
Test(memsup_bomb, status_tasks_by_real_uid)
{
	static const char st[] = "Name:\tbomb\nState:\tR (running)\nUid:\t1000\t0\t0\t0\n"
				 "Gid:\t1000\t1000\t1000\t1000\nThreads:\t3\n";
	cr_expect_eq(procs_parse_status_tasks(st, sizeof st - 1, 1000), 3);
	/* euid 0 of a set-uid program: still uid 1000's, by the real uid */
	cr_expect_eq(procs_parse_status_tasks(st, sizeof st - 1, 0), 0);
	static const char cut[] = "Name:\tx\nUid:\t1000\t1000\t1000\t1000\n";
	cr_expect_eq(procs_parse_status_tasks(cut, sizeof cut - 1, 1000), 0, "no Threads: line");
	cr_expect_str_eq(procs_by_name(PROCS_BY_RLIMIT), "rlimit_nproc");
	cr_expect_str_eq(procs_by_name(PROCS_BY_SCAN), "scan");
	cr_expect_str_eq(procs_by_name(PROCS_BY_PIDS_MAX), "pids.max");
	cr_expect_null(procs_by_name(PROCS_BY_NONE));
}

/* Root is exempt from RLIMIT_NPROC whatever its capabilities. */
Test(memsup_bomb, rlimit_does_not_bind_root)
{
	if (geteuid() != 0 || getuid() != 0)
		cr_skip_test("not root");
	cr_expect_eq(procs_rlimit_binds(NULL), 0);
}
