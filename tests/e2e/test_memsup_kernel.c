/* test_memsup_kernel.c: memsup's per-sample kernel counters, end to end in
 * a real memory cgroup: timeline.jsonl, read back through its owner's
 * reader (timeline.h), splits the cgroup's usage as the workload's memory
 * is made -- 64 MB of malloc'd memory in cgroup_anon, a 32 MB file in
 * /dev/shm in cgroup_shmem, a 32 MB disk file read back after its pages
 * were dropped in cgroup_page_cache, the four parts stacking to about the
 * usage -- and a --mem-max breach shows as a limit hit or an OOM kill.
 * Without a cgroup (--cgroup off) no such key is written.  The workloads
 * are tests/progs/memkinds.c and grower.c.  A test that finds no memory
 * cgroup for the run skips where the test itself can make none, and fails
 * where it can (test_cgprobe.h). */
#include "test_cgprobe.h"
#include "test_memsup_util.h"

#include <math.h>
#include <stddef.h>
#include <sys/vfs.h>

#include "evidence/timeline.h"
#include "test_timeline_points.h"

#define MB 1e6
#define TMPFS_MAGIC_ 0x01021994

/* The run had a memory cgroup; else skip, or fail where one can be made. */
static void require_memory(struct sup_run *r)
{
	const char *c = rec_str(r, "containment");
	cr_assert_not_null(c, "no containment in the record");
	if (!strstr(c, "\"memory\": true"))
		cgprobe_skip_or_fail("memory", "the run had no memory cgroup: %s", c);
}

static double parts(const struct timeline_point *p)
{
	return p->cgroup_anon + p->cgroup_page_cache + p->cgroup_shmem + p->cgroup_kernel;
}

/* Every sample with the usage has the split and the events; the split's
 * largest sum is within 4 MB of the largest usage (the kernel batches its
 * counters: cgroup.c); returns the sample with the largest `field`. */
static const struct timeline_point *expect_split(size_t field_off)
{
	const struct timeline_point *best = NULL;
	double max_usage = -1, max_parts = -1;
	for (size_t i = 0; i < tl.n; i++) {
		const struct timeline_point *p = &tl.p[i];
		if (p->cgroup < 0)
			continue;
		cr_assert(p->cgroup_anon >= 0 && p->cgroup_page_cache >= 0 && p->cgroup_shmem >= 0 &&
			  p->cgroup_kernel >= 0, "sample %zu at %.3f s: the usage without its split",
			  i, p->t);
		cr_assert(p->cgroup_limit_hits >= 0 && p->cgroup_oom_kills >= 0,
			  "sample %zu at %.3f s: the usage without the events", i, p->t);
		if (p->cgroup > max_usage)
			max_usage = p->cgroup;
		if (parts(p) > max_parts)
			max_parts = parts(p);
		const double *v = (const double *)((const char *)p + field_off);
		if (!best || *v > *(const double *)((const char *)best + field_off))
			best = p;
	}
	cr_assert_not_null(best, "no sample had the cgroup's usage");
	cr_expect_leq(fabs(max_usage - max_parts), 4 * MB,
		      "largest usage %.0f, largest sum of the parts %.0f", max_usage, max_parts);
	return best;
}

static void expect_no_events(void)
{
	for (size_t i = 0; i < tl.n; i++)
		if (tl.p[i].cgroup_limit_hits >= 0)
			cr_expect(tl.p[i].cgroup_limit_hits == 0 && tl.p[i].cgroup_oom_kills == 0,
				  "sample at %.3f s: %.0f limit hits, %.0f OOM kills without a limit",
				  tl.p[i].t, tl.p[i].cgroup_limit_hits, tl.p[i].cgroup_oom_kills);
}

static int is_tmpfs(const char *path)
{
	struct statfs sf;
	return statfs(path, &sf) == 0 && (unsigned long)sf.f_type == TMPFS_MAGIC_;
}

/* 64 MB malloc'd and written: anonymous memory, and nothing else grows. */
Test(memsup_kernel, malloc_64mb_is_cgroup_anon, .timeout = 60)
{
	struct sup_run r;
	const char *args[] = { "--no-trace", "--poll-ms", "20", "--", prog("memkinds"), "anon",
			       "64", "600", NULL };
	cr_assert_eq(memsup_run(&r, args), 0, "stderr: %s", r.err);
	rec_load(&r);
	require_memory(&r);
	tl_load(&r, "timeline.jsonl");
	const struct timeline_point *p = expect_split(offsetof(struct timeline_point, cgroup_anon));
	/* memory.stat is summed from per-CPU counters that the kernel folds
	 * in batches (64 pages a CPU), so a read may lag the pages by up to a
	 * batch per CPU: a helper's suite saw 63.92 MB under load */
	double lag = 64.0 * 4096 * (double)sysconf(_SC_NPROCESSORS_ONLN);
	cr_expect_geq(p->cgroup_anon, 64 * MB - lag, "largest cgroup_anon %.0f", p->cgroup_anon);
	cr_expect_lt(p->cgroup_shmem + p->cgroup_page_cache, 8 * MB,
		     "the heap counted as file or shared memory: shmem %.0f, page cache %.0f",
		     p->cgroup_shmem, p->cgroup_page_cache);
	expect_no_events();
}

/* 32 MB written into a file in /dev/shm and held: shared memory, not page
 * cache, though the kernel counts it among the file pages. */
Test(memsup_kernel, tmpfs_32mb_is_cgroup_shmem, .timeout = 60)
{
	struct sup_run r;
	char file[64];
	if (!is_tmpfs("/dev/shm"))
		cr_skip_test("/dev/shm is not a tmpfs here");
	snprintf(file, sizeof file, "/dev/shm/memsup-kinds-%d", (int)getpid());
	const char *args[] = { "--no-trace", "--poll-ms", "20", "--", prog("memkinds"), "shmem",
			       file, "32", "600", NULL };
	int st = memsup_run(&r, args);
	unlink(file);
	cr_assert_eq(st, 0, "stderr: %s", r.err);
	rec_load(&r);
	require_memory(&r);
	tl_load(&r, "timeline.jsonl");
	const struct timeline_point *p = expect_split(offsetof(struct timeline_point, cgroup_shmem));
	cr_expect_geq(p->cgroup_shmem, 32 * MB, "largest cgroup_shmem %.0f", p->cgroup_shmem);
	cr_expect_lt(p->cgroup_page_cache, 4 * MB, "shared memory counted as page cache too: %.0f",
		     p->cgroup_page_cache);
	cr_expect_lt(p->cgroup_anon, 8 * MB, "shared memory counted as anon: %.0f", p->cgroup_anon);
	expect_no_events();
}

/* A 32 MB disk file written (page cache), its pages dropped, then read
 * back: the page cache falls by about 32 MB and grows by about 32 MB
 * again -- the read is charged to the run. */
Test(memsup_kernel, disk_file_read_back_grows_cgroup_page_cache, .timeout = 60)
{
	struct sup_run r;
	char file[PATH_MAX];
	tmp_make(&r);
	if (is_tmpfs(r.tmp))
		cr_skip_test("%s is a tmpfs: no page cache of a disk to read into", r.tmp);
	snprintf(file, sizeof file, "%s/kinds.data", r.tmp);
	const char *args[] = { "--no-trace", "--poll-ms", "20", "--", prog("memkinds"), "cache",
			       file, "32", "300", NULL };
	memsup_start(&r, 1, args);
	cr_assert_eq(memsup_wait(&r), 0, "stderr: %s", r.err);
	rec_load(&r);
	require_memory(&r);
	tl_load(&r, "timeline.jsonl");
	const struct timeline_point *p =
		expect_split(offsetof(struct timeline_point, cgroup_page_cache));
	cr_expect_leq(p->cgroup_page_cache, 40 * MB, "page cache %.0f for a 32 MB file",
		      p->cgroup_page_cache);
	/* written (high), dropped (low), read (high again) */
	size_t hi = tl.n, lo = tl.n, again = tl.n;
	for (size_t i = 0; i < tl.n; i++) {
		double pc = tl.p[i].cgroup_page_cache;
		if (hi == tl.n && pc >= 30 * MB)
			hi = i;
		else if (hi < tl.n && again == tl.n && pc <= tl.p[hi].cgroup_page_cache - 28 * MB &&
			 (lo == tl.n || pc < tl.p[lo].cgroup_page_cache))
			lo = i;
		else if (lo < tl.n && again == tl.n && pc >= tl.p[lo].cgroup_page_cache + 30 * MB)
			again = i;
	}
	cr_assert_lt(hi, tl.n, "the written file never showed as page cache (largest %.0f)",
		     p->cgroup_page_cache);
	cr_assert_lt(lo, tl.n, "the dropped pages never left the page cache");
	cr_assert_lt(again, tl.n, "reading the file back did not grow the page cache by 30 MB "
		     "(from %.0f at %.3f s)", tl.p[lo].cgroup_page_cache, tl.p[lo].t);
	cr_expect_leq(tl.p[again].cgroup_page_cache - tl.p[lo].cgroup_page_cache, 36 * MB);
	cr_expect_lt(tl.p[again].cgroup_shmem, 4 * MB, "a disk file counted as shared memory");
	expect_no_events();
}

/* --mem-max 40 and a grower that goes on to 200 MB: the breach is on the
 * timeline, a limit hit or an OOM kill counted where there was none.  The
 * grower runs under a shell that outlives it (the OOM killer takes the
 * largest), so that a sample sees the kill before the run ends. */
Test(memsup_kernel, mem_max_breach_is_a_timeline_event, .timeout = 60)
{
	struct sup_run r;
	const char *args[] = { "--no-trace", "--poll-ms", "20", "--mem-max", "40", "--", "sh", "-c",
			       "\"$0\" 4 10 200; sleep 20", prog("grower"), NULL };
	int st = memsup_run(&r, args);
	if (st == 125 && strstr(r.err, "--mem-max"))
		cgprobe_skip_or_fail("memory", "memsup refused --mem-max: %s", r.err);
	cr_assert_eq(st, 123, "stderr: %s", r.err);
	rec_load(&r);
	cr_expect_str_eq(rec_str(&r, "reason"), "\"mem_limit_exceeded\"");
	tl_load(&r, "timeline.jsonl");
	const struct timeline_point *first = NULL, *rise = NULL;
	for (size_t i = 0; i < tl.n; i++) {
		const struct timeline_point *p = &tl.p[i];
		if (p->cgroup_limit_hits < 0)
			continue;
		if (!first)
			first = p;
		if (!rise && (p->cgroup_limit_hits > first->cgroup_limit_hits ||
			      p->cgroup_oom_kills > first->cgroup_oom_kills))
			rise = p;
	}
	cr_assert_not_null(first, "no sample with the limit's events");
	cr_expect(first->cgroup_limit_hits == 0 && first->cgroup_oom_kills == 0,
		  "events before the run grew: %.0f limit hits, %.0f OOM kills",
		  first->cgroup_limit_hits, first->cgroup_oom_kills);
	cr_assert_not_null(rise, "neither limit hits nor OOM kills rose in %zu samples", tl.n);
	cr_log_info("at %.3f s: %.0f limit hits, %.0f OOM kills", rise->t, rise->cgroup_limit_hits,
		    rise->cgroup_oom_kills);
}

/* --cgroup off: the /proc scan has no kernel counters, and the timeline
 * writes none of their keys (absent, not 0). */
Test(memsup_kernel, no_cgroup_no_kernel_keys, .timeout = 30)
{
	struct sup_run r;
	char path[PATH_MAX + 32], text[65536];
	const char *args[] = { "--no-trace", "--cgroup", "off", "--poll-ms", "20", "--",
			       prog("memkinds"), "anon", "8", "200", NULL };
	cr_assert_eq(memsup_run(&r, args), 0, "stderr: %s", r.err);
	tl_load(&r, "timeline.jsonl");
	for (size_t i = 0; i < tl.n; i++)
		cr_expect(tl.p[i].cgroup < 0 && tl.p[i].cgroup_anon < 0 &&
			  tl.p[i].cgroup_page_cache < 0 && tl.p[i].cgroup_shmem < 0 &&
			  tl.p[i].cgroup_kernel < 0 && tl.p[i].cgroup_limit_hits < 0 &&
			  tl.p[i].cgroup_oom_kills < 0, "sample at %.3f s has kernel figures",
			  tl.p[i].t);
	snprintf(path, sizeof path, "%s/timeline.jsonl", r.dir);
	slurp(path, text, sizeof text);
	cr_expect_null(strstr(text, "\"cgroup"), "%.300s", text);
}
