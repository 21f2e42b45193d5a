/* test_findings.c: the blind-spot rules over made-up merged runs.
 *
 * Every test starts from clean_run(): one traced, sampled process whose
 * figures agree with each other, which must give no finding at all.  Each
 * test then bends the run one way and checks that exactly the expected kind
 * appears with the right figures, and that the thresholds stated in
 * findings.c sit where they say (one case on each side).  The JSON is
 * parsed by python3 (tests/py/findings_json.py, not by us), with hostile
 * argv bytes that must come back exactly and never reach a sentence as
 * control characters. */
#include <criterion/criterion.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "analyze/answer.h"
#include "analyze/findings.h"
#include "collect/recordfile.h"
#include "evidence/resources.h"
#include "test_py.h"

#define MB 1000000.0
#define MAX_IMG 64

static struct sup_record rec;
static struct image_view img[MAX_IMG];
static struct merged_run run;
static struct finding out[FINDINGS_MAX];
static size_t nout;

static uint64_t mb_b(double mb)
{
	return (uint64_t)(mb * MB + 0.5);
}

/* KiB as the kernel prints them, rounded down. */
static uint64_t mb_kb(double mb)
{
	return (uint64_t)(mb * MB / 1024.0);
}

/* A traced, sampled, ended image; figures in MB. */
static struct image_view *add_img(pid_t pid, uint32_t gen, const char *argv, size_t argv_len,
				  double hwm_mb, double polled_mb)
{
	cr_assert_lt(run.n_images, MAX_IMG);
	struct image_view *im = &img[run.n_images++];
	memset(im, 0, sizeof *im);
	im->pid = pid;
	im->gen = gen;
	im->ppid = 1;
	im->argv = argv;
	im->argv_len = argv_len;
	im->exe = "/usr/bin/prog";
	im->traced = 1;
	im->rec.pid = pid;
	im->rec.gen = gen;
	im->rec.state = MT_STATE_EXITED;
	im->rec.vm_hwm_kb = mb_kb(hwm_mb);
	im->rec.ru_maxrss_self_kb = mb_kb(hwm_mb);
	im->sampled = 1;
	im->first_seen_s = 0.01;
	im->last_seen_s = 1.0;
	im->samples_seen = 100;
	im->polled_peak_rss = mb_b(polled_mb);
	im->polled_hwm_kb = mb_kb(polled_mb);
	return im;
}

#define ARGV(s) s, sizeof s

/* One traced process: 40 MB polled, VmHWM 41 MB, 38 MB of heap at the peak,
 * not shared, rusage agrees.  Nothing to explain. */
static void clean_run(void)
{
	memset(&run, 0, sizeof run);
	memset(out, 0, sizeof out);
	nout = 0;
	runrecord_init(&rec);
	rec.reason = SUP_REASON_NONE;
	rec.peak_bytes = mb_b(40);
	rec.peak_at_s = 0.5;
	rec.max_processes = 1;
	rec.rusage_children_maxrss_mb = 41;
	run.rec = &rec;
	run.images = img;
	run.tracing = 1;
	struct image_view *im = add_img(100, 0, ARGV("worker\0--fast"), 41, 40);
	im->rec.heap_peak = mb_b(39);
	im->at_peak = 1;
	im->peak_rss = mb_b(40);
	im->peak_heap = mb_b(38);
	im->have_smaps = 1;
	im->peak_pss = mb_b(39.5);
	im->peak_anon = mb_b(38.5);
	im->peak_file = mb_b(1.5);
	run.peak.at_s = 0.5;
	run.peak.rss = mb_b(40);
	run.peak.nprocs = 1;
	run.peak.heap = mb_b(38);
	run.peak.have_smaps = 1;
	run.peak.pss = mb_b(39.5);
	run.peak.anon = mb_b(38.5);
	run.peak.file = mb_b(1.5);
}

/* As findings_apply() does before the rules: the answer from the record
 * (here the summed Pss where smaps were read, else the summed RSS; a test
 * that sets the cgroup's peak gets that). */
static void answer(void)
{
	rec.peak_pss_mb = run.peak.at_s >= 0 && run.peak.have_smaps ? (double)run.peak.pss / MB : -1;
	answer_apply(&rec);
}

static void compute(void)
{
	answer();
	nout = findings_compute(&run, out, FINDINGS_MAX);
}

static const struct finding *find(const char *kind)
{
	for (size_t i = 0; i < nout && i < FINDINGS_MAX; i++)
		if (strcmp(out[i].kind, kind) == 0)
			return &out[i];
	return NULL;
}

static const char *kinds(void)
{
	static char buf[512];
	size_t o = 0;
	buf[0] = '\0';
	for (size_t i = 0; i < nout && i < FINDINGS_MAX; i++)
		o += (size_t)snprintf(buf + o, sizeof buf - o, "%s ", out[i].kind);
	return buf;
}

/* Exactly one finding, of this kind. */
static const struct finding *only(const char *kind)
{
	compute();
	cr_assert_eq(nout, 1, "expected only %s, got: %s", kind, kinds());
	const struct finding *f = find(kind);
	cr_assert_not_null(f, "expected %s, got: %s", kind, kinds());
	cr_assert_gt(strlen(f->sentence), 20);
	cr_assert_eq(f->sentence[strlen(f->sentence) - 1], '.', "one plain sentence: %s", f->sentence);
	return f;
}

static void none(const char *why)
{
	compute();
	cr_assert_eq(nout, 0, "%s: expected no finding, got: %s", why, kinds());
}

static double fig(const struct finding *f, const char *key)
{
	for (size_t i = 0; i < f->n_figures; i++)
		if (strcmp(f->figures[i].key, key) == 0)
			return f->figures[i].value;
	cr_assert_fail("%s has no figure %s", f->kind, key);
	return 0;
}

static int has_fig(const struct finding *f, const char *key)
{
	for (size_t i = 0; i < f->n_figures; i++)
		if (strcmp(f->figures[i].key, key) == 0)
			return 1;
	return 0;
}

#define expect_near(v, want, tol) \
	cr_expect((v) >= (want) - (tol) && (v) <= (want) + (tol), "%s = %f, want %f +- %f", #v, \
		  (double)(v), (double)(want), (double)(tol))

/* ---- clean ---------------------------------------------------------------- */

Test(findings, clean_run_has_none)
{
	clean_run();
	none("clean run");
}

Test(findings, empty_run_has_none)
{
	clean_run();
	run.n_images = 0;
	run.peak.at_s = -1;
	rec.peak_at_s = -1;
	rec.rusage_children_maxrss_mb = -1;
	none("nothing sampled");
	cr_expect_eq(findings_compute(NULL, out, FINDINGS_MAX), 0);
}

/* ---- rusage_children -------------------------------------------------------- */

static void fork_tree(int n, double each_mb)
{
	clean_run();
	run.n_images = 0;
	add_img(200, 0, ARGV("forktree"), 1.5, 1.5);
	for (int i = 0; i < n; i++) {
		struct image_view *im = add_img(201 + i, 0, ARGV("forktree"), each_mb + 1.5 + i * 0.1,
						each_mb + 1.5);
		im->rec.relation = MT_REL_FORK;
		im->ppid = 200;
		im->at_peak = 1;
		im->peak_rss = mb_b(each_mb + 1.5);
		im->peak_heap = mb_b(each_mb);
		im->have_smaps = 1;
		im->peak_pss = mb_b(each_mb + 1);
	}
	rec.peak_bytes = mb_b(n * (each_mb + 1.5) + 1.5);
	rec.rusage_children_maxrss_mb = each_mb + 1.5 + (n - 1) * 0.1;
	run.peak.rss = rec.peak_bytes;
	run.peak.pss = mb_b(n * (each_mb + 1) + 1);
	run.peak.nprocs = (unsigned)n + 1;
}

Test(findings, rusage_children_largest_child_vs_the_sum)
{
	fork_tree(4, 30);
	const struct finding *f = only("rusage_children");
	expect_near(fig(f, "rusage_children_maxrss_mb"), 31.8, 1e-9);
	/* the answer: the tree's summed Pss (no cgroup here), not its summed RSS */
	expect_near(fig(f, "tree_peak_mb"), 125, 1e-9);
	expect_near(fig(f, "understated_by_mb"), 125 - 31.8, 1e-9);
	expect_near(fig(f, "processes_at_peak_count"), 5, 0);
	cr_assert_eq(f->n_procs, 1);
	cr_expect_eq(f->procs[0]->pid, 204, "the largest child is named");
	cr_expect_not_null(strstr(f->sentence, "31.8 MB"), "%s", f->sentence);
	cr_expect_not_null(strstr(f->sentence, "125.0 MB"), "%s", f->sentence);
	cr_expect_not_null(strstr(f->sentence, "summed Pss"), "%s", f->sentence);
	cr_expect_not_null(strstr(f->sentence, "held at least 125.0 MB"), "polled: a lower bound: %s",
			   f->sentence);
}

/* With a memory cgroup the kernel's peak is the tree's figure, whatever the
 * polls summed. */
Test(findings, rusage_children_against_the_cgroup_peak)
{
	fork_tree(4, 30);
	rec.cgroup.have_peak = 1;
	rec.cgroup.peak = mb_b(122.25);
	const struct finding *f = only("rusage_children");
	expect_near(fig(f, "tree_peak_mb"), 122.25, 1e-6);
	expect_near(fig(f, "understated_by_mb"), 122.25 - 31.8, 1e-6);
	cr_expect_not_null(strstr(f->sentence, "kernel's exact count"), "%s", f->sentence);
	cr_expect_not_null(strstr(f->sentence, "held 122.2 MB at once"), "exact: %s", f->sentence);
	/* one process sharing its pages with three readers: the cgroup says
	 * the tree held what one held, and nothing is claimed */
	rec.cgroup.peak = mb_b(35);
	compute();
	cr_expect_null(find("rusage_children"), "%s", kinds());
}

Test(findings, rusage_children_thresholds)
{
	/* 10 MB and 25 %: both must hold (the answer here: the summed RSS) */
	clean_run();
	run.peak.have_smaps = 0;
	rec.rusage_children_maxrss_mb = 40;
	rec.peak_bytes = mb_b(50);
	compute();
	cr_expect_not_null(find("rusage_children"), "50 vs 40: 10 MB and 25 %%: %s", kinds());
	rec.peak_bytes = mb_b(49.99);
	compute();
	cr_expect_null(find("rusage_children"), "49.99 vs 40: under 10 MB");
	rec.rusage_children_maxrss_mb = 100;
	rec.peak_bytes = mb_b(125);
	compute();
	cr_expect_not_null(find("rusage_children"), "125 vs 100: exactly 25 %%");
	rec.peak_bytes = mb_b(124.9);
	compute();
	cr_expect_null(find("rusage_children"), "124.9 vs 100: 24.9 MB but under 25 %%");
	rec.rusage_children_maxrss_mb = -1; /* unknown */
	rec.peak_bytes = mb_b(500);
	compute();
	cr_expect_null(find("rusage_children"), "rusage unknown");
}

/* ---- rusage_exec_floor ------------------------------------------------------ */

Test(findings, exec_floor_names_the_image_it_replaced)
{
	clean_run();
	struct image_view *fat = add_img(300, 0, ARGV("fat\0--hold"), 302, 302);
	fat->rec.state = MT_STATE_EXECED;
	struct image_view *small = add_img(300, 1, ARGV("/bin/small"), 1.6, 1.6);
	small->rec.relation = MT_REL_EXEC;
	small->rec.parent_pid = 300;
	small->rec.parent_gen = 0;
	small->rec.ru_maxrss_self_kb = mb_kb(302);
	rec.rusage_children_maxrss_mb = 302; /* same as the tree: no rusage_children */
	rec.peak_bytes = mb_b(302);
	const struct finding *f = only("rusage_exec_floor");
	expect_near(fig(f, "ru_maxrss_mb"), 302, 0.002);
	expect_near(fig(f, "vm_hwm_mb"), 1.6, 0.002);
	expect_near(fig(f, "inherited_mb"), 300.4, 0.003);
	expect_near(fig(f, "process_count"), 1, 0);
	cr_expect_eq(f->procs[0], small);
	cr_expect_not_null(strstr(f->sentence, "'small'"), "%s", f->sentence);
	cr_expect_not_null(strstr(f->sentence, "'fat --hold'"), "the replaced image: %s", f->sentence);
}

Test(findings, exec_floor_posix_spawn_child_names_the_parent)
{
	clean_run();
	struct image_view *parent = add_img(400, 0, ARGV("python3\0big.py"), 250, 250);
	struct image_view *kid = add_img(401, 0, ARGV("ls"), 2, 2);
	kid->rec.relation = MT_REL_SPAWN;
	kid->rec.parent_pid = 400;
	kid->rec.ru_maxrss_self_kb = mb_kb(250);
	rec.rusage_children_maxrss_mb = 250;
	rec.peak_bytes = mb_b(252);
	(void)parent;
	const struct finding *f = only("rusage_exec_floor");
	cr_expect_not_null(strstr(f->sentence, "pid 400 'python3 big.py'"), "%s", f->sentence);
}

Test(findings, exec_floor_thresholds)
{
	clean_run();
	struct image_view *im = add_img(500, 1, ARGV("x"), 1, 1);
	/* own 39062 KiB; 25 % more is 48827.5 KiB, 10 MB more is 48828 */
	im->rec.vm_hwm_kb = 39062;
	im->rec.ru_maxrss_self_kb = 48828;
	compute();
	cr_expect_not_null(find("rusage_exec_floor"), "10.0004 MB and 25.0 %%: %s", kinds());
	im->rec.ru_maxrss_self_kb = 48827;
	compute();
	cr_expect_null(find("rusage_exec_floor"), "just under 25 %%");
	im->rec.vm_hwm_kb = 4000;
	im->rec.ru_maxrss_self_kb = 4000 + 9766; /* 10000384 bytes */
	compute();
	cr_expect_not_null(find("rusage_exec_floor"), "just over 10 MB");
	im->rec.ru_maxrss_self_kb = 4000 + 9765; /* 9999360 bytes */
	compute();
	cr_expect_null(find("rusage_exec_floor"), "just under 10 MB");
	/* killed: no end block, nothing to compare */
	im->rec.ru_maxrss_self_kb = 400000;
	im->rec.state = MT_STATE_RUNNING;
	compute();
	cr_expect_null(find("rusage_exec_floor"), "a RUNNING record has no ru_maxrss");
}

/* ---- unsampled_processes ---------------------------------------------------- */

Test(findings, unsampled_children_with_their_own_peaks)
{
	clean_run();
	static char argvs[40][32];
	for (int i = 0; i < 40; i++) {
		int n = snprintf(argvs[i], sizeof argvs[i], "bs_seqkids%cchild%c%d", 0, 0, i);
		struct image_view *im = add_img(1000 + i, 0, argvs[i], (size_t)n + 1, 50 + i * 0.01, 0);
		im->sampled = 0;
		im->samples_seen = 0;
		im->polled_peak_rss = 0;
		im->polled_hwm_kb = 0;
		im->rec.map_anon_peak = mb_b(50);
		im->rec.relation = MT_REL_SPAWN;
		im->rec.ru_maxrss_self_kb = im->rec.vm_hwm_kb; /* the parent is small */
	}
	const struct finding *f = only("unsampled_processes");
	expect_near(fig(f, "process_count"), 40, 0);
	cr_expect_eq(f->procs_total, 40);
	cr_expect_eq(f->n_procs, FINDING_MAX_PROCS);
	expect_near(fig(f, "largest_vm_hwm_mb"), 50.39, 0.002);
	expect_near(fig(f, "largest_mapped_peak_mb"), 50, 1e-9);
	cr_expect_eq(f->procs[0]->pid, 1039, "largest first");
	for (size_t i = 1; i < f->n_procs; i++)
		cr_expect_eq(f->procs[i]->pid, 1039 - (pid_t)i);
	cr_expect_not_null(strstr(f->sentence, "40 traced process images"), "%s", f->sentence);
	cr_expect_not_null(strstr(f->sentence, "'bs_seqkids child 39'"), "%s", f->sentence);
}

Test(findings, unsampled_needs_a_record_and_no_sample)
{
	clean_run();
	struct image_view *im = add_img(600, 0, ARGV("quick"), 5, 0);
	im->sampled = 0;
	im->traced = 0; /* neither view: cannot happen, but must not count */
	none("untraced unsampled image");
	im->traced = 1;
	im->record_error = -RECORDFILE_ECORRUPT;
	compute();
	cr_expect_null(find("unsampled_processes"), "a corrupt record is not trusted");
	cr_expect_not_null(find("corrupt_record"));
	im->record_error = 0;
	compute();
	cr_expect_not_null(find("unsampled_processes"));
}

/* ---- transient_peak --------------------------------------------------------- */

Test(findings, transient_spike_between_polls)
{
	clean_run();
	run.n_images = 0;
	struct image_view *im = add_img(700, 0, ARGV("bs_transient\0300"), 303.5, 3.5);
	im->at_peak = 1;
	im->peak_rss = mb_b(3.5);
	im->peak_heap = mb_b(3);
	rec.peak_bytes = mb_b(3.5);
	rec.rusage_children_maxrss_mb = 303.5;
	run.peak.rss = mb_b(3.5);
	run.peak.have_smaps = 0;
	const struct finding *f = only("transient_peak");
	expect_near(fig(f, "vm_hwm_mb"), 303.5, 0.002);
	expect_near(fig(f, "polled_peak_rss_mb"), 3.5, 1e-9);
	expect_near(fig(f, "missed_mb"), 300, 0.002);
	expect_near(fig(f, "missed_pct"), 100.0 * 300 / 303.5, 0.01);
	cr_expect_eq(f->procs[0], im);
	cr_expect_not_null(strstr(f->sentence, "VmHWM 303.5 MB"), "%s", f->sentence);
}

Test(findings, transient_uses_the_pollers_hwm_when_killed)
{
	clean_run();
	struct image_view *im = add_img(701, 0, ARGV("killed"), 0, 20);
	im->rec.state = MT_STATE_RUNNING;
	im->rec.vm_hwm_kb = 0;
	im->polled_hwm_kb = mb_kb(80);
	const struct finding *f = only("transient_peak");
	expect_near(fig(f, "vm_hwm_mb"), 80, 0.002);
	expect_near(fig(f, "missed_mb"), 60, 0.002);
}

/* 200 MB of a memfd held for 2 s: the cgroup's peak (202.1 MB) is shared
 * memory that no process's RSS shows (the tree's 2.6 MB), but every sample
 * read the cgroup at that usage: nothing came and went.  A spike the
 * samples missed still shows, against the cgroup's largest sampled usage. */
Test(findings, transient_run_peak_against_the_cgroups_own_samples)
{
	clean_run();
	img[0].rec.vm_hwm_kb = mb_kb(2.6);
	img[0].rec.heap_peak = mb_b(1);
	img[0].peak_rss = img[0].polled_peak_rss = mb_b(2.6);
	img[0].peak_heap = mb_b(1);
	rec.peak_bytes = mb_b(2.6);
	rec.rusage_children_maxrss_mb = 2.6;
	rec.cgroup.have_peak = 1;
	rec.cgroup.peak = mb_b(202.1);
	rec.kernel_peak_at_s = 0.07;
	rec.kernel_at_peak.have_usage = 1;
	rec.kernel_at_peak.usage = mb_b(202.1);
	rec.kernel_at_peak.have_split = 1;
	rec.kernel_at_peak.anon = mb_b(1.2);
	rec.kernel_at_peak.shmem = mb_b(200);
	rec.kernel_at_peak.kernel = mb_b(0.5);
	compute();
	cr_expect_null(find("transient_peak"), "%s", kinds());
	/* the samples read the cgroup at 52.1 MB at most: 150 MB came and went */
	rec.kernel_at_peak.usage = mb_b(52.1);
	rec.kernel_at_peak.shmem = mb_b(50);
	compute();
	const struct finding *f = find("transient_peak");
	cr_assert_not_null(f, "%s", kinds());
	expect_near(fig(f, "missed_mb"), 150, 1e-6);
	expect_near(fig(f, "cgroup_polled_peak_mb"), 52.1, 1e-6);
	cr_expect_not_null(strstr(f->sentence, "came and went"), "%s", f->sentence);
}

Test(findings, transient_thresholds)
{
	clean_run();
	struct image_view *im = add_img(702, 0, ARGV("t"), 1, 1);
	/* 10 MB: VmHWM 97656 KiB (99999744 bytes, so 5 % is 5 MB) */
	im->rec.vm_hwm_kb = 97656;
	im->polled_hwm_kb = 0;
	im->polled_peak_rss = 97656ull * 1024 - 10000000;
	compute();
	cr_expect_not_null(find("transient_peak"), "exactly 10 MB missed: %s", kinds());
	im->polled_peak_rss++;
	compute();
	cr_expect_null(find("transient_peak"), "a byte under 10 MB");
	/* 5 %: VmHWM 400 MB = 390625 KiB exactly; 5 % is 20 MB */
	im->rec.vm_hwm_kb = 390625;
	im->polled_peak_rss = mb_b(380);
	compute();
	cr_expect_not_null(find("transient_peak"), "exactly 5 %% missed");
	im->polled_peak_rss++;
	compute();
	cr_expect_null(find("transient_peak"), "a byte under 5 %% (still > 10 MB)");
	/* never sampled: that is unsampled_processes, not a transient */
	im->polled_peak_rss = 0;
	im->sampled = 0;
	compute();
	cr_expect_null(find("transient_peak"));
	cr_expect_not_null(find("unsampled_processes"));
}

/* ---- non_heap_memory -------------------------------------------------------- */

Test(findings, non_heap_direct_mmap_with_smaps_categories)
{
	clean_run();
	struct image_view *im = &img[0];
	im->argv = "bs_mmap\0" "150";
	im->argv_len = 12;
	im->peak_rss = mb_b(152);
	im->peak_heap = mb_b(0.2);
	im->peak_anon = mb_b(150.4);
	im->peak_file = mb_b(1.6);
	im->peak_pss = mb_b(151.5);
	im->polled_peak_rss = mb_b(152);
	im->rec.vm_hwm_kb = mb_kb(152.5);
	run.peak.rss = mb_b(152);
	run.peak.pss = mb_b(151.5);
	run.peak.heap = mb_b(0.2);
	run.peak.map_anon = mb_b(150);
	rec.peak_bytes = mb_b(152);
	rec.rusage_children_maxrss_mb = 152.5;
	const struct finding *f = only("non_heap_memory");
	expect_near(fig(f, "rss_at_peak_mb"), 152, 1e-9);
	expect_near(fig(f, "heap_at_peak_mb"), 0.2, 1e-9);
	expect_near(fig(f, "non_heap_mb"), 151.8, 1e-9);
	expect_near(fig(f, "mmap_anon_mb"), 150, 1e-9);
	expect_near(fig(f, "mmap_file_mb"), 0, 1e-9);
	expect_near(fig(f, "other_mb"), 1.8, 1e-9);
	expect_near(fig(f, "rss_anon_mb"), 150.4, 1e-9);
	expect_near(fig(f, "rss_file_mb"), 1.6, 1e-9);
	expect_near(fig(f, "peak_at_s"), 0.5, 1e-9);
	cr_expect_not_null(strstr(f->sentence, "150.0 MB anonymous"), "%s", f->sentence);
	cr_expect_not_null(strstr(f->sentence, "smaps: 150.4 MB anonymous"), "%s", f->sentence);
}

Test(findings, non_heap_says_when_smaps_were_read)
{
	clean_run();
	img[0].peak_heap = mb_b(1);
	run.peak.smaps_age_s = -0.1;
	const struct finding *f = only("non_heap_memory");
	expect_near(fig(f, "smaps_age_s"), -0.1, 1e-12);
	cr_expect_not_null(strstr(f->sentence, "smaps (read 0.10 s before the peak sample): 38.5 MB "
				  "anonymous"), "%s", f->sentence);
	run.peak.smaps_age_s = 0.0004; /* the same sample, give or take */
	f = only("non_heap_memory");
	cr_expect_not_null(strstr(f->sentence, "; smaps: 38.5 MB anonymous"), "%s", f->sentence);
	/* a second traced process at the peak whose smaps were not read: no
	 * categories rather than a sum over some of them */
	struct image_view *kid = add_img(150, 0, ARGV("kid"), 52, 52);
	kid->at_peak = 1;
	kid->peak_rss = mb_b(52);
	rec.rusage_children_maxrss_mb = 90;
	rec.peak_bytes = mb_b(92);
	f = only("non_heap_memory");
	expect_near(fig(f, "rss_at_peak_mb"), 92, 1e-9);
	cr_expect_not(has_fig(f, "rss_anon_mb"));
	cr_expect_null(strstr(f->sentence, "smaps"), "%s", f->sentence);
}

Test(findings, non_heap_thresholds_and_scope)
{
	clean_run();
	struct image_view *im = &img[0];
	/* 20 MB (40 % of 50) */
	im->peak_rss = mb_b(50);
	im->peak_heap = mb_b(30);
	compute();
	cr_expect_not_null(find("non_heap_memory"), "20 MB of 50: %s", kinds());
	im->peak_heap = mb_b(30) + 1;
	compute();
	cr_expect_null(find("non_heap_memory"), "a byte under 20 MB");
	/* 20 % (40 MB of 200) */
	im->peak_rss = mb_b(200);
	im->peak_heap = mb_b(160);
	compute();
	cr_expect_not_null(find("non_heap_memory"), "exactly 20 %%");
	im->peak_heap = mb_b(160) + 1;
	compute();
	cr_expect_null(find("non_heap_memory"), "a byte under 20 %%");
	/* heap figures unknown: not counted as non-heap */
	im->peak_heap = 0;
	im->rec.flags |= MT_FLAG_HEAP_UNSIZED;
	compute();
	cr_expect_null(find("non_heap_memory"), "MT_FLAG_HEAP_UNSIZED");
	im->rec.flags = 0;
	/* --no-trace: no heap to compare with */
	run.tracing = 0;
	im->traced = 0;
	compute();
	cr_expect_null(find("non_heap_memory"));
	/* no smaps: the finding still stands, without the smaps figures */
	clean_run();
	img[0].peak_heap = mb_b(1);
	img[0].have_smaps = 0;
	const struct finding *f = only("non_heap_memory");
	cr_expect_not(has_fig(f, "rss_anon_mb"));
	cr_expect_null(strstr(f->sentence, "smaps"));
	cr_expect_not_null(strstr(f->sentence, "39.0 MB is other memory -- code, libraries, stacks, "
				  "JIT code and allocator overhead (no direct mmap)."), "%s", f->sentence);
}

/* ---- shared_pages ----------------------------------------------------------- */

Test(findings, shared_pages_readers_of_a_parents_memory)
{
	clean_run();
	run.n_images = 0;
	for (int i = 0; i < 4; i++) {
		struct image_view *im = add_img(800 + i, 0, ARGV("bs_readers"), 302, 302);
		im->rec.relation = i ? MT_REL_FORK : MT_REL_ROOT;
		im->rec.heap_peak = mb_b(300);
		im->at_peak = 1;
		im->peak_rss = mb_b(302);
		im->peak_heap = mb_b(300);
		im->have_smaps = 1;
		im->peak_pss = mb_b(75.5);
	}
	run.peak.rss = mb_b(4 * 302);
	run.peak.pss = mb_b(302);
	run.peak.nprocs = 4;
	run.peak.smaps_age_s = 0.004;
	rec.peak_bytes = mb_b(4 * 302);
	rec.rusage_children_maxrss_mb = 302;
	compute();
	/* the RSS sum is 4x what time -v says, but the tree held 302 MB (its
	 * Pss): time -v is right here, and rusage_children must not say
	 * otherwise */
	cr_expect_null(find("rusage_children"), "%s", kinds());
	const struct finding *f = find("shared_pages");
	cr_assert_not_null(f, "%s", kinds());
	cr_expect_eq(nout, 1, "%s", kinds());
	expect_near(fig(f, "answer_mb"), 302, 1e-9);
	expect_near(fig(f, "above_answer_mb"), 906, 1e-9);
	expect_near(fig(f, "rss_sum_mb"), 1208, 1e-9);
	expect_near(fig(f, "pss_sum_mb"), 302, 1e-9);
	expect_near(fig(f, "counted_twice_mb"), 906, 1e-9);
	expect_near(fig(f, "counted_twice_pct"), 75, 1e-9);
	expect_near(fig(f, "smaps_age_s"), 0.004, 1e-12);
	cr_expect_eq(f->procs_total, 4);
}

Test(findings, shared_pages_thresholds)
{
	clean_run();
	run.peak.rss = mb_b(100);
	run.peak.pss = mb_b(80);
	rec.peak_bytes = mb_b(40); /* keep rusage_children out */
	compute();
	cr_expect_not_null(find("shared_pages"), "20 MB = 20 %%: %s", kinds());
	run.peak.pss++;
	compute();
	cr_expect_null(find("shared_pages"));
	run.peak.rss = mb_b(300);
	run.peak.pss = mb_b(240);
	compute();
	cr_expect_not_null(find("shared_pages"), "60 MB = 20 %%");
	run.peak.pss++;
	compute();
	cr_expect_null(find("shared_pages"), "a byte under 20 %%");
	run.peak.pss = 0;
	run.peak.have_smaps = 0;
	compute();
	cr_expect_null(find("shared_pages"), "no smaps read: no claim");
}

/* ---- the demo's shape: one true answer, and the gaps that add up ------------- */

/* demo_tree: a parent holding 20 MB of heap forks three children that add
 * 40 MB each; the cgroup's peak is 141.8 MB, the summed RSS 205.2 MB, the
 * summed Pss 138.3 MB, the summed heap 200 MB (each child's 60 counts the
 * parent's 20). */
static void demo_run(void)
{
	clean_run();
	run.n_images = 0;
	struct image_view *parent = add_img(500, 0, ARGV("demo_tree"), 21.9, 21.9);
	parent->at_peak = 1;
	parent->peak_rss = mb_b(21.9);
	parent->peak_heap = mb_b(20);
	parent->rec.heap_peak = mb_b(20);
	parent->have_smaps = 1;
	parent->peak_pss = mb_b(6.9);
	for (int i = 0; i < 3; i++) {
		struct image_view *im = add_img(501 + i, 0, ARGV("demo_tree"), 61.5, 61.1);
		im->rec.relation = MT_REL_FORK;
		im->rec.parent_pid = 500;
		im->rec.parent_gen = 0;
		im->rec.heap_at_fork = mb_b(20);
		im->rec.heap_peak = mb_b(60);
		im->ppid = 500;
		im->at_peak = 1;
		im->peak_rss = mb_b(61.1);
		im->peak_heap = mb_b(60);
		im->have_smaps = 1;
		im->peak_pss = mb_b(43.8);
	}
	rec.peak_bytes = mb_b(205.2);
	rec.max_processes = 4;
	rec.rusage_children_maxrss_mb = 61.5;
	rec.cgroup.have_peak = 1;
	rec.cgroup.peak = mb_b(141.8);
	run.peak.rss = mb_b(205.2);
	run.peak.pss = mb_b(138.3);
	run.peak.heap = mb_b(200);
	run.peak.nprocs = 4;
}

Test(findings, demo_answer_and_gaps_add_up)
{
	demo_run();
	compute();
	cr_expect_eq(rec.peak_source, SUP_PEAK_CGROUP);
	expect_near(rec.peak_mb, 141.8, 1e-6);
	const struct finding *r = find("rusage_children");
	cr_assert_not_null(r, "%s", kinds());
	expect_near(fig(r, "tree_peak_mb"), 141.8, 1e-6);
	expect_near(fig(r, "understated_by_mb"), 141.8 - 61.5, 1e-6);
	const struct finding *s = find("shared_pages");
	cr_assert_not_null(s, "%s", kinds());
	/* summed RSS = Pss + counted twice; answer = Pss + (answer - Pss) */
	expect_near(fig(s, "rss_sum_mb"), 205.2, 1e-6);
	expect_near(fig(s, "counted_twice_mb"), 205.2 - 138.3, 1e-6);
	expect_near(fig(s, "answer_minus_pss_mb"), 141.8 - 138.3, 1e-6);
	expect_near(fig(s, "above_answer_mb"), 205.2 - 141.8, 1e-6);
	cr_expect_not_null(strstr(s->sentence, "3.5 MB more than that Pss"), "%s", s->sentence);
	const struct finding *h = find("heap_inherited");
	cr_assert_not_null(h, "%s", kinds());
	expect_near(fig(h, "heap_sum_mb"), 200, 1e-6);
	expect_near(fig(h, "inherited_mb"), 60, 1e-6);
	expect_near(fig(h, "own_heap_mb"), 140, 1e-6);
	cr_expect_eq(h->procs_total, 3);
	cr_expect_eq(nout, 3, "%s", kinds());
}

Test(findings, heap_inherited_only_while_the_parent_holds_it)
{
	demo_run();
	/* the parent gone from the peak: each child's 20 MB is its own */
	img[0].at_peak = 0;
	compute();
	cr_expect_null(find("heap_inherited"), "%s", kinds());
	/* the parent freed all but 5 MB: no child can share more than that */
	img[0].at_peak = 1;
	img[0].peak_heap = mb_b(5);
	compute();
	cr_expect_null(find("heap_inherited"), "15 MB of 185: under 10 %%: %s", kinds());
	img[0].peak_heap = mb_b(8);
	compute();
	const struct finding *h = find("heap_inherited");
	cr_assert_not_null(h, "24 MB of 188: %s", kinds());
	expect_near(fig(h, "inherited_mb"), 24, 1e-6);
}

Test(findings, untouched_memory_of_a_heap_far_above_resident)
{
	clean_run();
	/* xz -9: 1461.9 MB of heap at its peak, 271 MB resident at most */
	img[0].rec.heap_peak = mb_b(1461.9);
	img[0].rec.vm_hwm_kb = mb_kb(271);
	img[0].polled_peak_rss = mb_b(270); /* the polls saw it: no transient */
	img[0].peak_heap = mb_b(38);
	const struct finding *f = only("untouched_memory");
	expect_near(fig(f, "requested_mb"), 1461.9, 1e-6);
	expect_near(fig(f, "resident_peak_mb"), 271, 0.01);
	expect_near(fig(f, "untouched_mb"), 1461.9 - 271, 0.01);
	cr_expect_not_null(strstr(f->sentence, "never touched"), "%s", f->sentence);
	/* thresholds: 20 MB and 25 % of the requested */
	img[0].rec.heap_peak = mb_b(80);
	img[0].rec.vm_hwm_kb = mb_kb(60);
	compute();
	cr_expect_not_null(find("untouched_memory"), "20 MB = 25 %%: %s", kinds());
	img[0].rec.vm_hwm_kb = mb_kb(60.1);
	compute();
	cr_expect_null(find("untouched_memory"), "19.9 MB: %s", kinds());
	img[0].rec.state = MT_STATE_RUNNING; /* killed: no exact VmHWM */
	img[0].rec.vm_hwm_kb = mb_kb(10);
	compute();
	cr_expect_null(find("untouched_memory"), "%s", kinds());
}

/* jemalloc first in LD_PRELOAD: the shim saw no malloc (heap 0) and its
 * mapping figures are jemalloc's reservations (1359 MB for a 1000 MB
 * block, 20 MB resident).  Nothing may call them requested and never
 * touched; the process is named as one whose heap was not seen. */
Test(findings, heap_not_seen_replaces_untouched_for_another_allocator)
{
	clean_run();
	img[0].rec.flags |= MT_FLAG_HEAP_FOREIGN;
	img[0].rec.heap_peak = 0;
	img[0].rec.map_anon_peak = mb_b(1359);
	img[0].rec.vm_hwm_kb = mb_kb(41);
	const struct finding *f = only("heap_not_seen");
	cr_expect_eq(fig(f, "process_count"), 1);
	cr_expect_eq(f->n_procs, 1);
	cr_expect_eq(f->procs[0], &img[0]);
	cr_expect_null(strstr(f->sentence, "never touched"), "%s", f->sentence);
	/* the same figures from the shim's own malloc: untouched, as before */
	img[0].rec.flags &= ~MT_FLAG_HEAP_FOREIGN;
	compute();
	cr_expect_not_null(find("untouched_memory"), "%s", kinds());
	cr_expect_null(find("heap_not_seen"), "%s", kinds());
}

Test(findings, charged_elsewhere_when_the_answer_is_below_one_process)
{
	clean_run();
	/* a build: the compiler's 62 MB peak, the run's cgroup 55 MB (its
	 * program and libraries were in the page cache before) */
	rec.rusage_children_maxrss_mb = 62;
	rec.cgroup.have_peak = 1;
	rec.cgroup.peak = mb_b(55);
	rec.peak_bytes = mb_b(62);
	const struct finding *f = only("charged_elsewhere");
	expect_near(fig(f, "answer_mb"), 55, 1e-6);
	expect_near(fig(f, "largest_process_mb"), 62, 1e-6);
	expect_near(fig(f, "below_by_mb"), 7, 1e-6);
	rec.cgroup.peak = mb_b(60.01);
	compute();
	cr_expect_null(find("charged_elsewhere"), "1.99 MB: %s", kinds());
	rec.cgroup.have_peak = 0; /* no kernel figure: nothing to say */
	rec.cgroup.peak = mb_b(10);
	compute();
	cr_expect_null(find("charged_elsewhere"), "%s", kinds());
}

Test(findings, page_cache_part_of_the_answer)
{
	clean_run();
	rec.cgroup.have_peak = 1;
	rec.cgroup.peak = mb_b(80);
	rec.kernel_peak_at_s = 0.4;
	rec.kernel_at_peak.have_split = 1;
	rec.kernel_at_peak.usage = mb_b(79);
	rec.kernel_at_peak.anon = mb_b(40);
	rec.kernel_at_peak.page_cache = mb_b(38);
	rec.kernel_at_peak.kernel = mb_b(1);
	rec.rusage_children_maxrss_mb = 70; /* within 25 %% of the answer */
	const struct finding *f = only("page_cache");
	expect_near(fig(f, "cgroup_peak_mb"), 80, 1e-6);
	expect_near(fig(f, "page_cache_mb"), 38, 1e-6);
	expect_near(fig(f, "page_cache_pct"), 47.5, 1e-6);
	cr_expect_not_null(strstr(f->sentence, "reclaimable"), "%s", f->sentence);
	rec.kernel_at_peak.page_cache = mb_b(7.9);
	compute();
	cr_expect_null(find("page_cache"), "7.9 MB of 80: under 10 %%: %s", kinds());
	/* no split at the peak: as the run ended */
	rec.kernel_peak_at_s = -1;
	rec.cgroup.have_stat = 1;
	rec.cgroup.file = mb_b(39);
	f = only("page_cache");
	expect_near(fig(f, "page_cache_mb"), 39, 1e-6);
	cr_expect_not_null(strstr(f->sentence, "as the run ended"), "%s", f->sentence);
}

/* ---- untraced --------------------------------------------------------------- */

Test(findings, untraced_static_and_scrubbed_env_named)
{
	clean_run();
	struct image_view *st = add_img(900, 0, ARGV("/opt/bs_static\0" "20"), 22, 22);
	st->traced = 0;
	st->gen = 0;
	st->untraced_why = UNTRACED_STATIC;
	st->at_peak = 1;
	st->peak_rss = mb_b(22);
	struct image_view *envi = add_img(901, 1, ARGV("bs_clean"), 12, 12);
	envi->traced = 0;
	envi->untraced_why = UNTRACED_NO_PRELOAD;
	rec.peak_bytes = mb_b(62);
	rec.rusage_children_maxrss_mb = 41 + 22; /* keep rusage_children out */
	run.peak.rss = mb_b(62);
	run.peak.pss = mb_b(61);
	const struct finding *f = only("untraced");
	expect_near(fig(f, "process_count"), 2, 0);
	expect_near(fig(f, "static_count"), 1, 0);
	expect_near(fig(f, "no_preload_count"), 1, 0);
	expect_near(fig(f, "secure_count"), 0, 0);
	expect_near(fig(f, "rss_at_peak_mb"), 22, 1e-9);
	expect_near(fig(f, "largest_polled_peak_rss_mb"), 22, 1e-9);
	cr_expect_null(f->why);
	cr_expect_eq(f->procs[0], st);
	cr_expect_eq(f->procs[1], envi);
	cr_expect_not_null(strstr(f->sentence, "1 static binary"), "%s", f->sentence);
	cr_expect_not_null(strstr(f->sentence, "LD_PRELOAD removed"), "%s", f->sentence);
	cr_expect_not_null(strstr(f->sentence, "'bs_static 20'"), "%s", f->sentence);
}

Test(findings, no_trace_run_says_it_once)
{
	fork_tree(3, 1); /* small: nothing else to say */
	run.tracing = 0;
	for (size_t i = 0; i < run.n_images; i++) {
		img[i].traced = 0;
		img[i].untraced_why = UNTRACED_NOT_REQUESTED;
	}
	const struct finding *f = only("untraced");
	cr_expect_str_eq(f->why, "not_requested");
	cr_expect_eq(f->n_procs, 0, "not per process");
	expect_near(fig(f, "process_count"), 4, 0);
	cr_expect_not_null(strstr(f->sentence, "--no-trace"), "%s", f->sentence);
}

/* ---- escaped, budget_overshoot, corrupt_record -------------------------------- */

Test(findings, escaped_tracked_and_killed)
{
	clean_run();
	struct image_view *esc = add_img(1100, 0, ARGV("escaper"), 21.5, 21.5);
	esc->escaped = 1;
	esc->leftover_killed = 1;
	esc->sid = 1100;
	rec.peak_bytes = mb_b(61.5);
	rec.rusage_children_maxrss_mb = 55;
	const struct finding *f = only("escaped");
	expect_near(fig(f, "process_count"), 1, 0);
	expect_near(fig(f, "killed_count"), 1, 0);
	expect_near(fig(f, "largest_polled_peak_rss_mb"), 21.5, 1e-9);
	cr_expect_not_null(strstr(f->sentence, "killed"), "%s", f->sentence);
}

Test(findings, budget_overshoot_figures)
{
	clean_run();
	rec.reason = SUP_REASON_RSS_BUDGET;
	rec.rss_budget_mb = 30;
	rec.exit_status = 123;
	/* the tree peak is the clean run's 40 MB; rusage says 41 */
	const struct finding *f = only("budget_overshoot");
	expect_near(fig(f, "rss_budget_mb"), 30, 0);
	expect_near(fig(f, "tree_peak_mb"), 40, 1e-9);
	expect_near(fig(f, "over_budget_mb"), 10, 1e-9);
	expect_near(fig(f, "over_budget_pct"), 100.0 / 3, 0.01);
	rec.rss_budget_mb = 40; /* reached exactly: still the reason, 0 over */
	compute();
	f = find("budget_overshoot");
	cr_assert_not_null(f);
	expect_near(fig(f, "over_budget_mb"), 0, 1e-9);
	rec.reason = SUP_REASON_NONE; /* a budget that was never reached */
	rec.rss_budget_mb = 500;
	none("budget not reached");
	rec.reason = SUP_REASON_WALL_BUDGET;
	none("the wall budget is not an RSS overshoot");
}

Test(findings, corrupt_record_never_trusted)
{
	clean_run();
	struct image_view *bad = add_img(1200, 3, NULL, 0, 5, 5);
	bad->traced = 0;
	bad->record_error = -RECORDFILE_EMAGIC;
	bad->exe = NULL;
	const struct finding *f = only("corrupt_record");
	expect_near(fig(f, "record_count"), 1, 0);
	cr_expect_not_null(strstr(f->sentence, "1200.3.mtr"), "%s", f->sentence);
	cr_expect_not_null(strstr(f->sentence, "no record magic"), "%s", f->sentence);
	bad->record_error = RECORDFILE_ECORRUPT; /* either sign is accepted */
	f = only("corrupt_record");
	cr_expect_not_null(strstr(f->sentence, "corrupt record"), "%s", f->sentence);
}

/* ---- many at once, capacity ---------------------------------------------------- */

Test(findings, order_and_capacity)
{
	fork_tree(4, 30);                         /* rusage_children */
	rec.reason = SUP_REASON_RSS_BUDGET;       /* budget_overshoot */
	rec.rss_budget_mb = 100;
	img[1].escaped = 1;                       /* escaped */
	img[2].sampled = 0;                       /* unsampled */
	struct finding two[2];
	answer();
	size_t n = findings_compute(&run, two, 2);
	cr_assert_eq(n, 4, "all are counted even when they do not fit");
	cr_expect_str_eq(two[0].kind, "rusage_children");
	cr_expect_str_eq(two[1].kind, "unsampled_processes");
	compute();
	cr_assert_eq(nout, 4, "%s", kinds());
	cr_expect_str_eq(out[2].kind, "escaped");
	cr_expect_str_eq(out[3].kind, "budget_overshoot");
}

/* ---- output ----------------------------------------------------------------- */

/* argv[0] with a terminal escape, C1 CSI (U+009B), quotes, a backslash, a
 * newline and bytes that are not UTF-8; argv[1] in valid UTF-8. */
static const char hostile[] = "evil\x1b[31m\"q\\\n\xc2\x9b\xff\xfe" "x\0caf\xc3\xa9";

static void hex(const char *s, size_t n, char *buf)
{
	for (size_t i = 0; i < n; i++)
		sprintf(buf + 2 * i, "%02x", (unsigned char)s[i]);
	buf[2 * n] = '\0';
}

Test(findings, json_parses_with_exact_argv_and_safe_sentences)
{
	fork_tree(4, 30);
	img[0].argv = hostile;
	img[0].argv_len = sizeof hostile; /* with the final NUL */
	img[0].sampled = 0;               /* unsampled, the largest by total peak */
	img[0].rec.total_peak = mb_b(400);
	img[0].rec.heap_peak = mb_b(400);
	img[1].traced = 0;
	img[1].untraced_why = UNTRACED_STATIC;
	img[2].escaped = 1;
	img[2].leftover_killed = 1;
	compute();
	cr_assert_geq(nout, 4, "%s", kinds());
	const struct finding *u = find("unsampled_processes");
	cr_assert_not_null(u);
	cr_assert_eq(u->procs[0], &img[0]);
	for (const char *p = u->sentence; *p; p++)
		cr_assert((unsigned char)*p >= 0x20 && *p != 0x7f, "control byte in: %s", u->sentence);
	cr_expect_null(strstr(u->sentence, "\xc2\x9b"), "C1 CSI must not reach a sentence");

	char path[] = "/tmp/memsup-findings-XXXXXX";
	int fd = mkstemp(path);
	cr_assert_geq(fd, 0);
	struct jsonw w;
	jsonw_init(&w, fd, 2);
	jsonw_object_begin(&w);
	jsonw_key(&w, "blind_spots");
	findings_write_json(&w, out, nout);
	jsonw_object_end(&w);
	cr_assert_eq(jsonw_finish(&w), 0);
	close(fd);

	char want[2 * sizeof hostile + 1];
	hex(hostile, strlen(hostile), want);
	char cmd[PATH_MAX + 4096];
	snprintf(cmd, sizeof cmd, "python3 '%s' '%s' %s %zu", py_script("findings_json.py"), path,
		 want, nout);
	int st = system(cmd);
	if (st != 0) {
		char text[16384];
		FILE *f = fopen(path, "r");
		size_t n = f ? fread(text, 1, sizeof text - 1, f) : 0;
		text[n] = '\0';
		if (f)
			fclose(f);
		cr_assert_fail("python3 rejected the findings JSON (%d):\n%s", st, text);
	}
	unlink(path);
}

Test(findings, json_empty_list_and_print)
{
	clean_run();
	compute();
	cr_assert_eq(nout, 0);
	char path[] = "/tmp/memsup-findings-XXXXXX";
	int fd = mkstemp(path);
	cr_assert_geq(fd, 0);
	struct jsonw w;
	jsonw_init(&w, fd, 0);
	findings_write_json(&w, out, nout);
	cr_assert_eq(jsonw_finish(&w), 0);
	char text[64] = "";
	cr_assert_eq(pread(fd, text, sizeof text - 1, 0), 2);
	cr_expect_str_eq(text, "[]");
	close(fd);
	unlink(path);

	/* the human lines: one per finding, no control bytes from argv */
	fork_tree(4, 30);
	img[4].argv = hostile;
	img[4].argv_len = sizeof hostile;
	compute();
	char *buf = NULL;
	size_t len = 0;
	FILE *mem = open_memstream(&buf, &len);
	cr_assert_not_null(mem);
	findings_print(mem, out, nout);
	fclose(mem);
	cr_expect_eq(strncmp(buf, "memsup: rusage_children: getrusage", 34), 0, "%s", buf);
	size_t lines = 0;
	for (size_t i = 0; i < len; i++) {
		lines += buf[i] == '\n';
		cr_expect(buf[i] == '\n' || ((unsigned char)buf[i] >= 0x20 && buf[i] != 0x7f),
			  "control byte %#x at %zu", (unsigned char)buf[i], i);
	}
	cr_expect_eq(lines, nout);
	cr_expect_not_null(strstr(buf, "'evil?[31m\"q\\?\?\?\?\?x caf\xc3\xa9'"), "%s", buf);
	free(buf);
}
