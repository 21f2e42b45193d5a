/* test_cgroup.c: the cgroup backends on fake cgroup file systems
 * (tests/data/cgroup: pure v2 with memory and pids, v2 without memory, v1,
 * the hybrid layout, none), each copied to a temporary directory first
 * since the backends write their limits into it.  A plain directory has no
 * kernel to make a new cgroup's files appear, so the fixtures hold the
 * run's cgroup already (memsup-100-run; contain_config.premade); what is
 * tested is what memsup decides, writes and reads there.  Nothing here
 * signals a process: the fixtures' pids are not real. */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/procfs.h"
#include "contain/cgroup.h"
#include "contain/contain.h"
#include "test_cgfixture.h"

/* The text of a fixture file (relative to its sys/). */
static const char *sysfile(const struct fixture *fx, const char *rel)
{
	static char buf[4096];
	char path[2 * PATH_MAX];
	size_t len;
	snprintf(path, sizeof path, "%s/%s", fx->sys, rel);
	if (procfs_read_file(path, buf, sizeof buf, &len) < 0)
		return "(unreadable)";
	return buf;
}

static int has_missing(const struct contain_info *in, const char *needle)
{
	for (size_t i = 0; i < in->n_missing; i++)
		if (strstr(in->missing[i], needle))
			return 1;
	return 0;
}

/* ---- parsers ---------------------------------------------------------------- */

Test(cgroup, parsers)
{
	uint64_t v;
	cr_expect_eq(cgroup_parse_u64("123\n", 4, &v), 0);
	cr_expect_eq(v, 123);
	cr_expect_eq(cgroup_parse_u64("max\n", 4, &v), 0);
	cr_expect_eq(v, UINT64_MAX);
	cr_expect_eq(cgroup_parse_u64("12x\n", 4, &v), -EINVAL);
	cr_expect_eq(cgroup_parse_u64("", 0, &v), -EINVAL);
	cr_expect_eq(cgroup_parse_u64("99999999999999999999999", 23, &v), -EINVAL);

	static const char stat[] = "anon 5\nanon_thp 7\nfile 9\n";
	cr_expect_eq(cgroup_parse_key(stat, sizeof stat - 1, "anon", &v), 0);
	cr_expect_eq(v, 5, "anon, not anon_thp");
	cr_expect_eq(cgroup_parse_key(stat, sizeof stat - 1, "anon_thp", &v), 0);
	cr_expect_eq(v, 7);
	cr_expect_eq(cgroup_parse_key(stat, sizeof stat - 1, "file", &v), 0);
	cr_expect_eq(v, 9);
	cr_expect_eq(cgroup_parse_key(stat, sizeof stat - 1, "kernel", &v), -ENOENT);

	static const char ctl[] = "cpu memory pids\n";
	cr_expect(cgroup_has_word(ctl, sizeof ctl - 1, "memory"));
	cr_expect(cgroup_has_word(ctl, sizeof ctl - 1, "pids"));
	cr_expect(!cgroup_has_word(ctl, sizeof ctl - 1, "mem"));
	cr_expect(!cgroup_has_word("", 0, "cpu"));

	pid_t p[4];
	cr_expect_eq(cgroup_parse_procs("12\n34\n", 6, p, 4), 2);
	cr_expect_eq(p[0], 12);
	cr_expect_eq(p[1], 34);
	cr_expect_eq(cgroup_parse_procs("", 0, p, 4), 0, "an empty cgroup");
	cr_expect_eq(cgroup_parse_procs("1\n2\n3\n", 6, p, 2), 3, "counts past cap");
	cr_expect_eq(cgroup_parse_procs("1\nx\n", 4, p, 4), -EINVAL);
}

/* memory.stat texts (tests/data/cgroup/memstat: two captured on the test
 * VM's v1, two of v2's documented keys), each split as both versions
 * name their parts. */
Test(cgroup, memstat_texts)
{
	static const struct {
		const char *file;
		int v2;
		struct cg_memstat want;
	} cases[] = {
		/* 24 MB anon, 16 MB in /dev/shm, 8 MB of a disk file */
		{ "v1-6.18-mix.stat", 0, { 26480640, 24006656, 16003072, 0 } },
		/* total_rss holds total_rss_huge (65011712): not added again */
		{ "v1-6.18-thp.stat", 0, { 65114112, 0, 0, 0 } },
		/* kernel 1239872 + sock 8192 */
		{ "v2-6.x.stat", 1, { 26480640, 24006656, 16003072, 1248064 } },
		/* no "kernel": kernel_stack + pagetables + percpu + slab + sock */
		{ "v2-5.15.stat", 1, { 26480640, 24006656, 16003072, 1178432 } },
	};
	const char *data = getenv("MT_DATA");
	if (!data)
		cr_skip_test("MT_DATA is not set (run through make check)");
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		char path[PATH_MAX], buf[8192];
		size_t len;
		snprintf(path, sizeof path, "%s/cgroup/memstat/%s", data, cases[i].file);
		cr_assert_eq(procfs_read_file(path, buf, sizeof buf, &len), 0, "%s", path);
		struct cg_memstat m;
		memset(&m, 0xa5, sizeof m);
		cr_assert_eq(cgroup_parse_memstat(buf, len, cases[i].v2, &m), 0, "%s", cases[i].file);
		cr_expect_eq(m.anon, cases[i].want.anon, "%s anon", cases[i].file);
		cr_expect_eq(m.file, cases[i].want.file, "%s file", cases[i].file);
		cr_expect_eq(m.shmem, cases[i].want.shmem, "%s shmem", cases[i].file);
		cr_expect_eq(m.kernel, cases[i].want.kernel, "%s kernel", cases[i].file);
		/* the other version's reading of it finds no anon and file */
		cr_expect_eq(cgroup_parse_memstat(buf, len, !cases[i].v2, &m), -EINVAL, "%s",
			     cases[i].file);
	}
}

/* Keys only by their whole name, a last line without '\n', what is not a
 * memory.stat. */
Test(cgroup, memstat_edges)
{
	struct cg_memstat m;
	static const char v2[] = "anon_thp 1\nanon 2\nfile_mapped 3\nfile 40\nshmem_thp 5\n"
				 "shmem 6\nkernel_stack 7\nsock 8\nkernel 90";
	cr_assert_eq(cgroup_parse_memstat(v2, sizeof v2 - 1, 1, &m), 0);
	cr_expect(m.anon == 2 && m.file == 40 && m.shmem == 6 && m.kernel == 98,
		  "%llu %llu %llu %llu", (unsigned long long)m.anon, (unsigned long long)m.file,
		  (unsigned long long)m.shmem, (unsigned long long)m.kernel);
	/* v1: rss and cache are this cgroup's alone, total_ its subtree's;
	 * an old kernel without total_shmem has no shared memory apart */
	static const char v1[] = "cache 1\nrss 2\nshmem 3\ntotal_cache 10\ntotal_rss 20\n"
				 "total_rss_huge 4\n";
	cr_assert_eq(cgroup_parse_memstat(v1, sizeof v1 - 1, 0, &m), 0);
	cr_expect(m.anon == 20 && m.file == 10 && m.shmem == 0 && m.kernel == 0);
	static const char *const bad[] = {
		"file 1\n",                    /* no anon */
		"anon 1\n",                    /* no file */
		"anon max\nfile 1\n",          /* no amount */
		"anon 1x\nfile 1\n",
		"anon 1\nfile 1\nsock 18446744073709551614\nkernel 2\n", /* wraps */
		"",
	};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
		cr_expect_eq(cgroup_parse_memstat(bad[i], strlen(bad[i]), 1, &m), -EINVAL, "%s",
			     bad[i]);
	/* an unknown key may hold anything */
	static const char odd[] = "anon 1\nfile 2\nsomething new\nnokey\n";
	cr_expect_eq(cgroup_parse_memstat(odd, sizeof odd - 1, 1, &m), 0);
}

/* Where memsup sits, as each layout says it. */
Test(cgroup, layouts)
{
	static const struct {
		const char *name;
		enum cg_layout_kind kind;
		const char *own[CG_NHIER]; /* relative to sys/, NULL: none */
	} cases[] = {
		{ "v2", CG_LAYOUT_V2,
		  { "/user.slice/run.scope", NULL, NULL,
		    NULL } },
		{ "v1", CG_LAYOUT_V1, { NULL, "/memory/jobs/7", "/pids/jobs/7", "/freezer" } },
		{ "hybrid", CG_LAYOUT_HYBRID,
		  { "/unified/guard", "/memory/api", "/pids/guard", NULL } },
		{ "none", CG_LAYOUT_NONE, { NULL, NULL, NULL, NULL } },
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		struct fixture fx;
		struct cg_layout l;
		fixture_copy(&fx, cases[i].name);
		cr_assert_eq(cgroup_layout(fx.sys, fx.proc, 100, &l), 0, "%s", cases[i].name);
		cr_expect_eq(l.kind, cases[i].kind, "%s", cases[i].name);
		for (int h = 0; h < CG_NHIER; h++) {
			char want[2 * PATH_MAX] = "";
			if (cases[i].own[h])
				snprintf(want, sizeof want, "%s%s", fx.sys, cases[i].own[h]);
			cr_expect_str_eq(l.own[h], want, "%s hierarchy %d", cases[i].name, h);
		}
		if (cases[i].kind == CG_LAYOUT_NONE)
			cr_expect_not_null(strstr(l.why, "no cgroup hierarchy"), "%s", l.why);
		fixture_remove(&fx);
	}
}

/* ---- the backends ------------------------------------------------------------- */

/* Members from cgroup.procs (a pid listed twice counted once), RSS from
 * each member's statm: 101 holds 500 pages, 102 250. */
static void expect_members(struct contain *c)
{
	const pid_t *pids;
	size_t n;
	cr_assert_eq(contain_members(c, &pids, &n), 0);
	cr_expect_geq(n, 2);
	uint64_t rss;
	unsigned np;
	cr_assert_eq(contain_sample(c, &rss, &np), 0);
	cr_expect_eq(np, 2);
	cr_expect_eq(rss, 750 * procfs_page_size());
	const struct tree_member *m;
	cr_assert_eq(contain_sampled(c, &m), 2);
	cr_expect_eq(m[0].rss + m[1].rss, rss, "the sample's terms add up to it");
	cr_expect_str_eq(contain_name(c), "cgroup");
}

/* A delegated v2 scope with memory and pids available but not enabled:
 * memsup enables them for the run, sets the limits, and reads the v2
 * files. */
Test(cgroup, v2_delegated_with_memory_and_pids)
{
	struct fixture fx;
	fixture_copy(&fx, "v2");
	struct contain_config cc = fixture_config(&fx);
	cc.max_procs = 40;
	cc.mem_max = 100000000;
	char err[512];
	cr_expect_eq(contain_check(&cc, err, sizeof err), 0, "%s", err);
	struct contain *c;
	cr_assert_eq(contain_open(&c, &cc), 0);
	const struct contain_info *in = contain_info(c);
	cr_expect_str_eq(in->mode, "cgroup2");
	cr_expect_str_eq(in->requested, "auto");
	cr_expect_str_eq(in->kill, "cgroup.kill");
	cr_expect(in->memory);
	cr_expect(in->pids);
	cr_expect_null(in->hint);
	cr_expect_eq(in->n_missing, 0, "%s", in->n_missing ? in->missing[0] : "");
	cr_assert_eq(in->n_paths, 1);
	cr_expect_not_null(strstr(in->paths[0], "/run.scope/memsup-100-run"), "%s", in->paths[0]);
	const char *scope = "user.slice/run.scope";
	char f[512];
	snprintf(f, sizeof f, "%s/cgroup.subtree_control", scope);
	cr_expect_str_eq(sysfile(&fx, f), "+memory +pids");
	snprintf(f, sizeof f, "%s/memsup-100-run/pids.max", scope);
	cr_expect_str_eq(sysfile(&fx, f), "40");
	snprintf(f, sizeof f, "%s/memsup-100-run/memory.max", scope);
	cr_expect_str_eq(sysfile(&fx, f), "100000000");
	snprintf(f, sizeof f, "%s/memsup-100-run/memory.oom.group", scope);
	cr_expect_str_eq(sysfile(&fx, f), "1", "one OOM kill takes the whole run");
	snprintf(f, sizeof f, "%s/memsup-100-run/memory.swap.max", scope);
	cr_expect_str_eq(sysfile(&fx, f), "0", "no swapping past the limit");
	expect_members(c);

	struct contain_state st;
	cr_assert_eq(contain_poll(c, &st), 0);
	cr_expect(st.have_usage);
	cr_expect_eq(st.usage, 3000000);
	cr_expect_eq(st.forks_refused, 3);
	cr_expect(st.have_split);
	cr_expect_eq(st.anon, 50000000);
	cr_expect_eq(st.page_cache, 15000000, "file 20000000 but shmem 5000000");
	cr_expect_eq(st.shmem, 5000000);
	cr_expect_eq(st.kernel, 3020000, "kernel 3000000 + sock 20000");
	cr_expect(st.have_events);
	cr_expect_eq(st.limit_hits, 7, "memory.events max");
	cr_expect_eq(st.oom_kills, 1);
	short ev;
	cr_expect_geq(contain_event_fd(c, &ev), 0, "memory.events is watched");
	cr_expect_eq(ev, POLLPRI);
	struct contain_figures fg;
	cr_assert_eq(contain_figures(c, &fg), 0);
	cr_expect(fg.have_peak);
	cr_expect_eq(fg.peak, 123456789);
	cr_expect(fg.have_stat);
	cr_expect_eq(fg.anon, 50000000);
	cr_expect_eq(fg.file, 20000000);
	cr_expect_eq(fg.kernel, 3020000, "the poll's split, read the same way");
	cr_expect(fg.have_oom);
	cr_expect_eq(fg.oom_kills, 1);
	cr_expect(fg.have_pids);
	cr_expect_eq(fg.forks_refused, 3);
	contain_close(c);
	fixture_remove(&fx);
}

/* A delegated scope without the memory controller: the run has a cgroup
 * (membership, kill, pids) and says what is missing; --mem-max is refused
 * before anything is made, and never becomes the /proc scan. */
Test(cgroup, v2_without_memory)
{
	struct fixture fx;
	fixture_copy(&fx, "v2-nomem");
	struct contain_config cc = fixture_config(&fx);
	struct contain *c;
	cr_assert_eq(contain_open(&c, &cc), 0);
	const struct contain_info *in = contain_info(c);
	cr_expect_str_eq(in->mode, "cgroup2");
	cr_expect(!in->memory);
	cr_expect(in->pids);
	cr_expect(has_missing(in, "memory controller: not available"), "%s",
		  in->n_missing ? in->missing[0] : "(none)");
	struct contain_figures fg;
	contain_figures(c, &fg);
	cr_expect(!fg.have_peak && !fg.have_stat);
	struct contain_state st;
	memset(&st, 0xa5, sizeof st);
	cr_expect_eq(contain_poll(c, &st), 0);
	cr_expect(!st.have_usage && !st.have_split && !st.have_events,
		  "no memory controller: nothing of it");
	cr_expect(st.anon == 0 && st.page_cache == 0 && st.shmem == 0 && st.kernel == 0 &&
		  st.limit_hits == 0 && st.oom_kills == 0);
	contain_close(c);

	cc.mem_max = 50000000;
	char err[1024] = "";
	cr_expect_eq(contain_check(&cc, err, sizeof err), -1);
	cr_expect_not_null(strstr(err, "--mem-max"), "%s", err);
	cr_expect_not_null(strstr(err, "--rss-mb"), "the polled budget is named: %s", err);
	cr_expect_eq(contain_open(&c, &cc), -ENOTSUP, "no polled stand-in");
	fixture_remove(&fx);
}

/* cgroup v1: one cgroup per controller; the command joins each before
 * exec; the freezer kills; the v1 files are read. */
Test(cgroup, v1_memory_pids_freezer)
{
	struct fixture fx;
	fixture_copy(&fx, "v1");
	struct contain_config cc = fixture_config(&fx);
	cc.max_procs = 7;
	cc.mem_max = 64000000;
	struct contain *c;
	cr_assert_eq(contain_open(&c, &cc), 0);
	const struct contain_info *in = contain_info(c);
	cr_expect_str_eq(in->mode, "cgroup1");
	cr_expect_str_eq(in->kill, "freezer");
	cr_expect(in->memory);
	cr_expect(in->pids);
	cr_expect_eq(in->n_paths, 3);
	cr_expect_str_eq(sysfile(&fx, "memory/jobs/7/memsup-100-run/memory.limit_in_bytes"),
			 "64000000");
	cr_expect_str_eq(sysfile(&fx, "memory/jobs/7/memsup-100-run/memory.memsw.limit_in_bytes"),
			 "64000000", "no swapping past the limit");
	cr_expect_str_eq(sysfile(&fx, "pids/jobs/7/memsup-100-run/pids.max"), "7");
	int efd = -1, ofd = -1;
	cr_expect_eq(sscanf(sysfile(&fx, "memory/jobs/7/memsup-100-run/cgroup.event_control"),
			    "%d %d", &efd, &ofd), 2, "the OOM eventfd is registered");
	short ev;
	cr_expect_eq(contain_event_fd(c, &ev), efd);
	cr_expect_eq(ev, POLLIN);
	expect_members(c);
	struct contain_state st;
	cr_assert_eq(contain_poll(c, &st), 0);
	cr_expect_eq(st.usage, 4000000);
	cr_expect_eq(st.forks_refused, 5);
	cr_expect(st.have_split);
	cr_expect_eq(st.anon, 60000000, "total_rss, its huge pages in it");
	cr_expect_eq(st.page_cache, 20000000, "total_cache but total_shmem");
	cr_expect_eq(st.shmem, 10000000);
	cr_expect_eq(st.kernel, 1000000, "memory.kmem.usage_in_bytes");
	cr_expect(st.have_events);
	cr_expect_eq(st.limit_hits, 7, "memory.failcnt 4 + memory.memsw.failcnt 3 (--mem-max)");
	cr_expect_eq(st.oom_kills, 2);
	struct contain_figures fg;
	cr_assert_eq(contain_figures(c, &fg), 0);
	cr_expect_eq(fg.peak, 98765432);
	cr_expect_eq(fg.anon, 60000000, "total_rss");
	cr_expect_eq(fg.file, 30000000, "total_cache");
	cr_expect_eq(fg.kernel, 1000000, "memory.kmem.usage_in_bytes");
	cr_expect_eq(fg.oom_kills, 2);
	contain_close(c);
	fixture_remove(&fx);
}

/* The hybrid layout: v2's unified hierarchy lists and kills, v1 memory and
 * pids measure and limit. */
Test(cgroup, hybrid_v2_core_with_v1_memory_and_pids)
{
	struct fixture fx;
	fixture_copy(&fx, "hybrid");
	struct contain_config cc = fixture_config(&fx);
	cc.max_procs = 50;
	struct contain *c;
	cr_assert_eq(contain_open(&c, &cc), 0);
	const struct contain_info *in = contain_info(c);
	cr_expect_str_eq(in->mode, "hybrid");
	cr_expect_str_eq(in->kill, "cgroup.kill");
	cr_expect(in->memory);
	cr_expect(in->pids);
	cr_expect_eq(in->n_paths, 3);
	cr_expect_not_null(strstr(in->paths[0], "/unified/guard/memsup-100-run"), "%s",
			   in->paths[0]);
	cr_expect_str_eq(sysfile(&fx, "pids/guard/memsup-100-run/pids.max"), "50");
	cr_expect_str_eq(sysfile(&fx, "memory/api/memsup-100-run/memory.limit_in_bytes"),
			 "9223372036854771712\n", "no --mem-max: no limit written");
	short ev;
	/* an OOM kill wakes memsup whichever limit fired: the v1 eventfd
	 * registered on memory.oom_control without --mem-max too */
	cr_expect_geq(contain_event_fd(c, &ev), 0, "no --mem-max: the OOM event is still watched");
	cr_expect_eq(ev, POLLIN);
	cr_expect_not_null(strstr(sysfile(&fx, "memory/api/memsup-100-run/cgroup.event_control"),
				  " "), "no eventfd registered on memory.oom_control");
	expect_members(c);
	struct contain_state st;
	cr_assert_eq(contain_poll(c, &st), 0);
	cr_expect(st.have_split && st.anon == 5000000 && st.page_cache == 0 && st.shmem == 0 &&
		  st.kernel == 0, "an old kernel's memory.stat, no total_shmem");
	cr_expect(st.have_events);
	cr_expect_eq(st.limit_hits, 0, "no --mem-max: memory.failcnt alone, not memsw's 2");
	cr_expect_eq(st.oom_kills, 0, "read without --mem-max too");
	struct contain_figures fg;
	cr_assert_eq(contain_figures(c, &fg), 0);
	cr_expect_eq(fg.peak, 55555555);
	cr_expect_eq(fg.anon, 5000000);
	contain_close(c);
	fixture_remove(&fx);
}

/* No cgroup file system: the /proc scan, with the reason and a hint. */
Test(cgroup, none_falls_back_to_the_scan_and_says_why)
{
	struct fixture fx;
	fixture_copy(&fx, "none");
	struct contain_config cc = fixture_config(&fx);
	struct contain *c;
	cr_assert_eq(contain_open(&c, &cc), 0);
	const struct contain_info *in = contain_info(c);
	cr_expect_str_eq(in->mode, "procscan");
	cr_expect_str_eq(in->kill, "stop-and-kill");
	cr_expect_str_eq(contain_name(c), "scan");
	cr_expect_eq(in->n_paths, 0);
	cr_expect(has_missing(in, "no cgroup hierarchy"));
	cr_assert_not_null(in->hint);
	cr_expect_not_null(strstr(in->hint, "cgroup2"), "%s", in->hint);
	struct contain_state st;
	memset(&st, 0xa5, sizeof st);
	cr_expect_eq(contain_poll(c, &st), 0);
	cr_expect(!st.have_usage && !st.have_split && !st.have_events);
	cr_expect(st.anon == 0 && st.limit_hits == 0 && st.oom_kills == 0);
	short ev;
	cr_expect_eq(contain_event_fd(c, &ev), -1);
	contain_close(c);
	fixture_remove(&fx);
}

/* --cgroup off: the scan, asked for, so no hint, and nothing written. */
Test(cgroup, off_is_the_scan)
{
	struct fixture fx;
	fixture_copy(&fx, "v2");
	struct contain_config cc = fixture_config(&fx);
	cc.cgroup = CONTAIN_OFF;
	cc.max_procs = 40;
	struct contain *c;
	cr_assert_eq(contain_open(&c, &cc), 0);
	const struct contain_info *in = contain_info(c);
	cr_expect_str_eq(in->mode, "procscan");
	cr_expect_str_eq(in->requested, "off");
	cr_expect_null(in->hint);
	cr_expect(!in->pids);
	cr_expect_str_eq(sysfile(&fx, "user.slice/run.scope/memsup-100-run/pids.max"), "max\n");
	contain_close(c);
	cc.mem_max = 1000000;
	char err[512] = "";
	cr_expect_eq(contain_check(&cc, err, sizeof err), -1);
	cr_expect_not_null(strstr(err, "--cgroup off"), "%s", err);
	fixture_remove(&fx);
}

/* ---- cgroups the command made below the run's ------------------------------- */

static void put_file(const struct fixture *fx, const char *rel, const char *text)
{
	char path[2 * PATH_MAX];
	snprintf(path, sizeof path, "%s/%s", fx->sys, rel);
	FILE *f = fopen(path, "w");
	cr_assert_not_null(f, "%s", path);
	fputs(text, f);
	fclose(f);
}

static void put_dir(const struct fixture *fx, const char *rel)
{
	char path[2 * PATH_MAX];
	snprintf(path, sizeof path, "%s/%s", fx->sys, rel);
	cr_assert_eq(mkdir(path, 0755), 0, "%s: %s", path, strerror(errno));
}

/* v1: a member moved into a cgroup of its own below the run's (102 here)
 * is listed, sampled and so killed; cgroup.procs of the run's cgroup
 * alone would miss it. */
Test(cgroup, v1_members_below_the_run_are_listed)
{
	struct fixture fx;
	fixture_copy(&fx, "v1");
	put_file(&fx, "pids/jobs/7/memsup-100-run/cgroup.procs", "101\n");
	put_dir(&fx, "pids/jobs/7/memsup-100-run/inner");
	put_dir(&fx, "pids/jobs/7/memsup-100-run/inner/deeper");
	put_file(&fx, "pids/jobs/7/memsup-100-run/inner/cgroup.procs", "");
	put_file(&fx, "pids/jobs/7/memsup-100-run/inner/deeper/cgroup.procs", "102\n");
	struct contain_config cc = fixture_config(&fx);
	struct contain *c;
	cr_assert_eq(contain_open(&c, &cc), 0);
	expect_members(c);
	contain_close(c);
	fixture_remove(&fx);
}

/* v2: the same, and cgroup.stat's nr_descendants decides whether to look
 * below at all (0: the walk is skipped, so 102 is not seen). */
Test(cgroup, v2_members_below_the_run_are_listed_when_counted)
{
	struct fixture fx;
	fixture_copy(&fx, "v2");
	const char *run = "user.slice/run.scope/memsup-100-run";
	char rel[PATH_MAX];
	put_file(&fx, "user.slice/run.scope/memsup-100-run/cgroup.procs", "101\n");
	snprintf(rel, sizeof rel, "%s/inner", run);
	put_dir(&fx, rel);
	snprintf(rel, sizeof rel, "%s/inner/cgroup.procs", run);
	put_file(&fx, rel, "102\n");
	snprintf(rel, sizeof rel, "%s/cgroup.stat", run);
	put_file(&fx, rel, "nr_descendants 1\nnr_dying_descendants 0\n");
	struct contain_config cc = fixture_config(&fx);
	struct contain *c;
	cr_assert_eq(contain_open(&c, &cc), 0);
	expect_members(c);
	put_file(&fx, rel, "nr_descendants 0\nnr_dying_descendants 0\n");
	const pid_t *pids;
	size_t n;
	cr_assert_eq(contain_members(c, &pids, &n), 0);
	cr_expect_eq(n, 1, "nr_descendants 0: only the run's own cgroup.procs");
	contain_close(c);
	fixture_remove(&fx);
}

/* No cgroup below the run's at the start: the listing reads the run's own
 * cgroup.procs alone (not even cgroup.stat) until inotify tells of a
 * mkdir there; then it looks below at every listing.  The kill's listing
 * (contain_members) always looks. */
Test(cgroup, v2_cgroup_made_below_is_told_then_listed)
{
	struct fixture fx;
	fixture_copy(&fx, "v2");
	const char *run = "user.slice/run.scope/memsup-100-run";
	char rel[PATH_MAX];
	put_file(&fx, "user.slice/run.scope/memsup-100-run/cgroup.procs", "101\n");
	snprintf(rel, sizeof rel, "%s/cgroup.stat", run);
	put_file(&fx, rel, "nr_descendants 0\nnr_dying_descendants 0\n");
	struct contain_config cc = fixture_config(&fx);
	struct contain *c;
	cr_assert_eq(contain_open(&c, &cc), 0);
	int bfd = contain_below_fd(c);
	cr_assert_geq(bfd, 0, "no watch for cgroups made below the run's");
	struct pollfd p = { bfd, POLLIN, 0 };
	cr_expect_eq(poll(&p, 1, 0), 0, "told of a cgroup below before one was made");
	/* a child cgroup with a process in it, counted by cgroup.stat */
	snprintf(rel, sizeof rel, "%s/inner", run);
	put_dir(&fx, rel);
	snprintf(rel, sizeof rel, "%s/inner/cgroup.procs", run);
	put_file(&fx, rel, "102\n");
	snprintf(rel, sizeof rel, "%s/cgroup.stat", run);
	put_file(&fx, rel, "nr_descendants 1\nnr_dying_descendants 0\n");
	uint64_t rss;
	unsigned np;
	cr_assert_eq(contain_sample(c, &rss, &np), 0);
	cr_expect_eq(np, 1, "a sample looked below before the watch told");
	/* untold, the kill's listing finds the member below all the same */
	const pid_t *pids;
	size_t n;
	cr_assert_eq(contain_members(c, &pids, &n), 0);
	cr_expect_eq(n, 2, "the kill's listing did not look below");
	cr_assert_eq(poll(&p, 1, 0), 1, "the mkdir below the run's cgroup was not told");
	contain_below_told(c);
	cr_expect_eq(contain_below_fd(c), -1, "still watching once told");
	expect_members(c);
	contain_close(c);
	fixture_remove(&fx);
}

/* The stale sweep: a dead memsup's run cgroup goes with the cgroups its
 * command made below it, bottom-up; one that still holds a process, or
 * holds a live memsup's cgroup, stays whole. */
Test(cgroup, stale_sweep_removes_the_cgroups_below_bottom_up)
{
	char own[] = "/tmp/memsup-cgsweep-XXXXXX", path[PATH_MAX + 128];
	cr_assert_not_null(mkdtemp(own));
	pid_t dead = fork();
	if (dead == 0)
		_exit(0);
	cr_assert_gt(dead, 0);
	waitpid(dead, NULL, 0);
	/* removable: empty cgroups three deep */
	snprintf(path, sizeof path, "%s/memsup-%d-run", own, (int)dead);
	cr_assert_eq(mkdir(path, 0755), 0);
	snprintf(path, sizeof path, "%s/memsup-%d-run/a", own, (int)dead);
	cr_assert_eq(mkdir(path, 0755), 0);
	snprintf(path, sizeof path, "%s/memsup-%d-run/a/memsup-%d-run", own, (int)dead, (int)dead);
	cr_assert_eq(mkdir(path, 0755), 0);
	snprintf(path, sizeof path, "%s/memsup-%d-run/b", own, (int)dead);
	cr_assert_eq(mkdir(path, 0755), 0);
	/* not removable: a live memsup's cgroup below (ours stands for it) */
	snprintf(path, sizeof path, "%s/memsup-%d-sup", own, (int)dead);
	cr_assert_eq(mkdir(path, 0755), 0);
	snprintf(path, sizeof path, "%s/memsup-%d-sup/memsup-%d-run", own, (int)dead,
		 (int)getpid());
	cr_assert_eq(mkdir(path, 0755), 0);
	cgroup_sweep_stale(own, getpid() + 1);
	snprintf(path, sizeof path, "%s/memsup-%d-run", own, (int)dead);
	cr_expect_eq(access(path, F_OK), -1, "%s is still there", path);
	snprintf(path, sizeof path, "%s/memsup-%d-sup/memsup-%d-run", own, (int)dead,
		 (int)getpid());
	cr_expect_eq(access(path, F_OK), 0, "a live memsup's cgroup was removed");
	char cmd[PATH_MAX + 32];
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", own);
	cr_expect_eq(system(cmd), 0);
}

/* ---- memory.stat kept while the usage stays ---------------------------------- */

/* A sample whose parts stand apart from its usage after the second
 * reading says so (split_agrees 0), keeping its parts for the timeline:
 * the run's breakdown of the answer prefers a sample whose parts agree. */
Test(cgroup, a_sample_says_whether_its_parts_add_up)
{
	struct fixture fx;
	fixture_copy(&fx, "v2");
	struct contain_config cc = fixture_config(&fx);
	struct contain *c;
	cr_assert_eq(contain_open(&c, &cc), 0);
	const char *current = "user.slice/run.scope/memsup-100-run/memory.current";
	struct contain_state st;
	/* anon 50 + file 20 + kernel 3 + sock 0.02 MB: 73.02 MB */
	put_file(&fx, current, "73020000\n");
	cr_assert_eq(contain_poll(c, &st), 0);
	cr_assert(st.have_split && st.split_agrees, "73.02 MB of parts for 73.02 MB");
	put_file(&fx, current, "100000000\n");
	cr_assert_eq(contain_poll(c, &st), 0);
	cr_assert(st.have_split, "the parts stay in the sample");
	cr_assert_eq(st.anon, 50000000);
	cr_assert_not(st.split_agrees, "73 MB of parts for a usage of 100 MB");
	contain_close(c);
	fixture_remove(&fx);
}

/* The parts agree with the usage within 2 MB and 1/16: the demo's peak
 * sample once read usage 141.75 MB and anon 121.43 MB (a child ended
 * between the two reads), which must not stand as the answer's parts. */
Test(cgroup, split_agrees_within_the_counters_lag)
{
	struct cg_memstat ms = { .anon = 121430016, .file = 2000000, .kernel = 1000000 };
	cr_assert_not(cgroup_split_agrees(141750000, &ms), "16 MB apart");
	ms.anon = 135000000;
	cr_assert(cgroup_split_agrees(141750000, &ms), "3.75 MB apart, within 2 MB + 1/16");
	struct cg_memstat z = { 0 };
	cr_assert(cgroup_split_agrees(0, &z));
	/* nothing in the parts: a usage up to 2 MB / (15/16) agrees */
	cr_assert(cgroup_split_agrees(CG_SPLIT_SLACK_BYTES + CG_SPLIT_SLACK_BYTES / 15, &z));
	cr_assert_not(cgroup_split_agrees(CG_SPLIT_SLACK_BYTES + CG_SPLIT_SLACK_BYTES / 15 + 2, &z));
	/* parts above the usage (flushed after the usage fell) are as far off */
	struct cg_memstat big = { .anon = 100000000 };
	cr_assert_not(cgroup_split_agrees(80000000, &big));
	/* huge values do not wrap */
	struct cg_memstat huge = { .anon = UINT64_MAX / 4, .file = UINT64_MAX / 4 };
	cr_assert(cgroup_split_agrees(UINT64_MAX / 2, &huge));
}

/* memory.stat is read again when the usage moves, and after 10 samples of
 * the same usage (cgroup.c: CG_SPLIT_KEEP_SAMPLES), not at every sample:
 * the file changes here under an unchanged memory.current, and the polls
 * show the old split exactly 10 times, then the new one; a usage that
 * moves shows the file's split at once. */
Test(cgroup, memory_stat_is_read_when_the_usage_moves)
{
	struct fixture fx;
	fixture_copy(&fx, "v2");
	struct contain_config cc = fixture_config(&fx);
	struct contain *c;
	cr_assert_eq(contain_open(&c, &cc), 0);
	const char *stat = "user.slice/run.scope/memsup-100-run/memory.stat";
	const char *current = "user.slice/run.scope/memsup-100-run/memory.current";
	struct contain_state st;
	cr_assert_eq(contain_poll(c, &st), 0);
	cr_assert(st.have_split);
	cr_assert_eq(st.anon, 50000000);
	put_file(&fx, stat, "anon 60000000\nfile 20000000\nkernel 3000000\nsock 20000\nshmem 5000000\n");
	for (int i = 0; i < 10; i++) {
		cr_assert_eq(contain_poll(c, &st), 0);
		cr_assert(st.have_split);
		cr_assert_eq(st.anon, 50000000, "poll %d after the read: the kept split", i + 1);
		cr_assert_eq(st.usage, 3000000);
	}
	cr_assert_eq(contain_poll(c, &st), 0);
	cr_assert_eq(st.anon, 60000000, "the 11th poll of one usage reads the file again");
	put_file(&fx, stat, "anon 70000000\nfile 20000000\nkernel 3000000\nsock 20000\nshmem 5000000\n");
	put_file(&fx, current, "3000001\n");
	cr_assert_eq(contain_poll(c, &st), 0);
	cr_assert_eq(st.usage, 3000001);
	cr_assert_eq(st.anon, 70000000, "a usage that moved: read at once");
	contain_close(c);
	fixture_remove(&fx);
}
