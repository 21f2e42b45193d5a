/* test_pview.c: the per-process poller view on a fake proc root and
 * hand-made records, so that timing cannot decide the outcome: samples
 * are attributed to the image running at their time across an exec; an
 * image without a record is inspected only once /proc really shows it (the
 * shim marks EXECED just before execve, and /proc shows the old image until
 * the kernel has loaded the new one); the peak keeps smaps figures. */
#include <criterion/criterion.h>
#include <fcntl.h>
#include <limits.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "collect/live.h"
#include "collect/pview.h"
#include "test_tmp.h"

static char top[PATH_MAX];

static void put_file(const char *rel, const char *text, size_t len)
{
	char path[PATH_MAX + 64];
	snprintf(path, sizeof path, "%s/%s", top, rel);
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	cr_assert_geq(fd, 0, "%s", path);
	cr_assert_eq(write(fd, text, len), (ssize_t)len);
	close(fd);
}

static void put_exe(const char *target)
{
	char path[PATH_MAX + 64];
	snprintf(path, sizeof path, "%s/proc/700/exe", top);
	unlink(path);
	cr_assert_eq(symlink(target, path), 0);
}

/* A fake proc root with pid 700 (session 700, its parent 1) running
 * `comm`, and an empty records directory: TOP/proc, TOP/rec.  `status` is
 * the rest of /proc/700/status after Name, PPid, Uid and Gid. */
static void fake_pid_700(const char *comm, const char *status)
{
	char path[PATH_MAX + 64], text[512];
	snprintf(top, sizeof top, "/tmp/test-pview-XXXXXX");
	cr_assert_not_null(mkdtemp(top));
	tmp_adopt(top);
	snprintf(path, sizeof path, "%s/proc", top);
	cr_assert_eq(mkdir(path, 0755), 0);
	strcat(path, "/700");
	cr_assert_eq(mkdir(path, 0755), 0);
	snprintf(path, sizeof path, "%s/rec", top);
	cr_assert_eq(mkdir(path, 0755), 0);
	int n = snprintf(text, sizeof text,
			 "700 (%s) S 1 700 700 0 -1 4194304 117 0 0 0 0 0 0 0 20 0 1 0 123898 "
			 "3133440 360 18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 0 17 1 0 0 0 0 "
			 "0\n", comm);
	put_file("proc/700/stat", text, (size_t)n);
	n = snprintf(text, sizeof text, "Name:\t%s\nPPid:\t1\nUid:\t0\t0\t0\t0\n"
		     "Gid:\t0\t0\t0\t0\n%s", comm, status);
	put_file("proc/700/status", text, (size_t)n);
}

/* TOP/rec/700.GEN.mtr: pid 700's image GEN, started at `start`, in
 * `state` since `end` (0: running), running `exe` with argv (argv_len
 * bytes, each argument NUL-terminated). */
static void put_record(uint32_t gen, uint64_t start, uint64_t end, uint32_t state,
		       const char *argv, size_t argv_len, const char *exe)
{
	struct mt_record r;
	memset(&r, 0, sizeof r);
	r.magic = MT_RECORD_MAGIC;
	r.version = MT_RECORD_VERSION;
	r.record_size = MT_RECORD_SIZE;
	r.pid = 700;
	r.gen = gen;
	r.ppid = 1;
	r.start_mono_ns = start;
	r.end_mono_ns = end;
	r.state = state;
	r.heap_current = 4096;
	memcpy(r.argv, argv, argv_len);
	r.argv_bytes = (uint32_t)argv_len;
	strcpy(r.exe, exe);
	char path[PATH_MAX + 64];
	snprintf(path, sizeof path, "%s/rec/700.%u.mtr", top, (unsigned)gen);
	int fd = open(path, O_RDWR | O_CREAT, 0644);
	cr_assert_geq(fd, 0);
	cr_assert_eq(ftruncate(fd, MT_RECORD_SIZE), 0);
	cr_assert_eq(pwrite(fd, &r, sizeof r, 0), (ssize_t)sizeof r);
	close(fd);
}

/* The records of TOP/rec (listed once) and the view of TOP/proc. */
static void open_views(struct live **l, struct pview **pv)
{
	char path[PATH_MAX + 64];
	snprintf(path, sizeof path, "%s/rec", top);
	cr_assert_eq(live_open(l, path), 0);
	cr_assert_eq(live_update(*l, 1), 0);
	snprintf(path, sizeof path, "%s/proc", top);
	cr_assert_eq(pview_open(pv, strdup(path), 1), 0);
	pview_set_look_budget(*pv, 10000); /* fixtures: the looks are not timed here */
}

static void close_views(struct live *l, struct pview *pv)
{
	pview_close(pv);
	live_close(l);
}

Test(pview, exec_attribution_and_postponed_inspection, .timeout = 10)
{
	/* pid 700, session 700, still running "env -i prog" (/bin/true is a
	 * dynamic ELF the inspection can read) */
	fake_pid_700("env", "VmHWM:\t    2000 kB\nRssAnon:\t 100 kB\nRssFile:\t 900 kB\n"
			    "RssShmem:\t 0 kB\n");
	static const char rollup_text[] = "Rss: 1000 kB\nPss: 400 kB\nSwap: 0 kB\n";
	put_file("proc/700/smaps_rollup", rollup_text, sizeof rollup_text - 1);
	put_file("proc/700/cmdline", "env\0-i\0prog\0", 12);
	put_file("proc/700/environ", "LD_PRELOAD=/x/libmemtrace.so\0", 29);
	put_exe("/bin/true");

	/* its record, gen 0: started at 1000, EXECED at 3000 */
	put_record(0, 1000, 3000, MT_STATE_EXECED, "env\0-i\0prog\0", 12, "/bin/true");
	struct live *l;
	struct pview *pv;
	open_views(&l, &pv);
	struct tree_member m = { 700, 1000000, 0 };
	struct pview_sums s;

	/* before the exec: gen 0, traced, its exec marked but its memory
	 * still there: its heap counts with its RSS */
	pview_sample(pv, l, 2000, 2000, &m, 1, 1, 1000000, &s);
	cr_expect_eq(s.traced, 1);
	cr_expect_eq(s.heap, 4096);
	const struct pview_proc *p = pview_find(pv, 700);
	cr_assert_not_null(p);
	cr_expect_eq(p->sid, 700);
	cr_expect_null(p->argv, "a record names it: no cmdline read at first sight");
	const struct pview_peak *pk = pview_peak(pv);
	cr_expect(pk->have_smaps && s.have_pss && s.pss == 400 * 1024);
	cr_expect_eq(pk->m[0].anon, 100 * 1024);
	cr_expect_eq(pk->m[0].file, 900 * 1024);
	cr_expect_eq(p->hwm_kb, 2000);

	/* after the exec mark, /proc still shows env: the exec has not
	 * replaced the memory yet, so the readings are still gen 0's */
	for (int i = 0; i < 4; i++)
		pview_sample(pv, l, 4000 + (uint64_t)i, 4000 + (uint64_t)i, &m, 1, 0, 0, &s);
	cr_assert_eq(p->nimgs, 1, "a new image while /proc still showed the old one");
	cr_expect_eq(p->imgs[0].gen, 0);
	cr_expect_eq(p->imgs[0].samples, 5);

	/* the new image is there, without the shim in its environment */
	put_file("proc/700/cmdline", "prog\0", 5);
	put_file("proc/700/environ", "A=1\0", 4);
	pview_sample(pv, l, 5000, 5000, &m, 1, 0, 0, &s);
	cr_assert_eq(p->nimgs, 2);
	const struct pview_img *g1 = &p->imgs[1];
	cr_expect_eq(g1->gen, 1);
	cr_expect_eq(g1->samples, 1);
	cr_expect(g1->inspected);
	cr_expect_eq(g1->why, UNTRACED_NO_PRELOAD);
	cr_expect(g1->argv && g1->argv_len == 5 && memcmp(g1->argv, "prog", 5) == 0,
		  "argv kept with its NUL, as a record keeps it");
	cr_expect_eq(s.traced, 0);
	cr_expect_eq(p->imgs[0].samples, 5);
	close_views(l, pv);
}

/* A child that ran its exit hook is still in /proc with its memory until
 * the kernel takes the memory away: a sample that reads its RSS counts its
 * heap too, or the tree's RSS peak would come with too little heap. */
Test(pview, exited_image_still_resident_keeps_its_heap, .timeout = 10)
{
	fake_pid_700("prog", "VmHWM:\t    2000 kB\n");
	put_file("proc/700/cmdline", "prog\0", 5);
	put_exe("/bin/true");
	put_record(0, 1000, 3000, MT_STATE_EXITED, "prog\0", 5, "/bin/true");
	struct live *l;
	struct pview *pv;
	open_views(&l, &pv);
	struct tree_member m = { 700, 1000000, 0 };
	struct pview_sums s;
	pview_sample(pv, l, 3500, 3500, &m, 1, 1, 1000000, &s);
	cr_expect_eq(s.traced, 1);
	cr_expect_eq(s.heap, 4096);
	const struct pview_peak *pk = pview_peak(pv);
	cr_assert_eq(pk->n, 1);
	cr_expect(pk->m[0].heap_counted);
	cr_expect_eq(pk->heap, 4096);
	close_views(l, pv);
}

/* A posix_spawn child without a record, first seen still in its parent's
 * image (the parent's argv and exe, the shim in its environment: nothing
 * conclusive), then caught in the middle of its exec of a static program
 * (the new exe, the cmdline not set up yet: empty).  The parent's argv must
 * not stay with the static image (it was reported as 'bs_untraced' running
 * bs_static); its own is read while it runs. */
Test(pview, spawned_child_caught_mid_exec_keeps_no_parent_argv, .timeout = 10)
{
	const char *progs = getenv("MT_PROGS");
	if (!progs)
		cr_skip_test("MT_PROGS is not set (run through make check)");
	char stat_bin[PATH_MAX];
	snprintf(stat_bin, sizeof stat_bin, "%s/bs_static", progs);
	if (access(stat_bin, R_OK) != 0)
		cr_skip_test("no %s", stat_bin);
	fake_pid_700("parent", "VmHWM:\t    2000 kB\n");
	put_file("proc/700/cmdline", "parent\0arg\0", 11);
	put_file("proc/700/environ", "LD_PRELOAD=/x/libmemtrace.so\0", 29);
	put_exe("/bin/true");
	struct live *l;
	struct pview *pv;
	open_views(&l, &pv);
	struct tree_member m = { 700, 1000000, 0 };
	struct pview_sums s;

	/* in the parent's image: inconclusive, looked at again */
	pview_sample(pv, l, 1000, 1000, &m, 1, 1, 1000000, &s);
	const struct pview_proc *p = pview_find(pv, 700);
	cr_assert_not_null(p);
	cr_assert_eq(p->nimgs, 1);
	cr_expect_not(p->imgs[0].inspected);

	/* mid-exec: the static program's exe, an empty cmdline */
	put_exe(stat_bin);
	put_file("proc/700/cmdline", "", 0);
	pview_sample(pv, l, 2000, 2000, &m, 1, 0, 0, &s);
	const struct pview_img *img = &p->imgs[0];
	cr_expect(img->inspected);
	cr_expect_eq(img->why, UNTRACED_STATIC);
	cr_expect_str_eq(img->exe, stat_bin);
	cr_expect_null(img->argv, "the parent's argv stayed with the static image: %.*s",
		       (int)img->argv_len, img->argv ? img->argv : "");

	/* running: its own argv */
	put_file("proc/700/cmdline", "bs_static\0", 10);
	pview_sample(pv, l, 3000, 3000, &m, 1, 0, 0, &s);
	cr_expect(img->argv && img->argv_len == 10 && memcmp(img->argv, "bs_static", 10) == 0);
	close_views(l, pv);
}

/* An exec that finishes between memsup's reading of a pid and its look at
 * /proc: the reading was of the old memory, though /proc shows the new
 * image by then (a sanitizer build under load gave a forked child's 60 MB
 * to the `sleep` it exec'd).  The text pages read with the RSS decide, and
 * the other way round too: an image that marked its exec during a sample
 * and was replaced before its pid was read. */
Test(pview, reading_across_an_exec_goes_by_its_text_pages, .timeout = 10)
{
	fake_pid_700("fat", "VmHWM:\t    2000 kB\n");
	put_file("proc/700/cmdline", "fat\0", 4);
	put_exe("/bin/true");
	/* gen 0 "fat": 1000 to its exec mark at 3000; gen 1 "thin": its
	 * constructor at 6000, its own exec marked at 8500; gen 2 none yet */
	put_record(0, 1000, 3000, MT_STATE_EXECED, "fat\0", 4, "/bin/true");
	put_record(1, 6000, 8500, MT_STATE_EXECED, "thin\0", 5, "/bin/sleep");
	struct live *l;
	struct pview *pv;
	open_views(&l, &pv);
	struct pview_sums s;
	const uint64_t fat = 60u << 20, thin = 2u << 20;

	/* before the mark: surely fat's, and its text (5 pages) learnt */
	struct tree_member m = { 700, fat, 5 };
	pview_sample(pv, l, 2000, 2000, &m, 1, 1, fat, &s);
	const struct pview_proc *p = pview_find(pv, 700);
	cr_assert_not_null(p);
	cr_assert_eq(p->nimgs, 1);
	cr_expect_eq(p->imgs[0].text_pages, 5);

	/* after the mark, /proc already shows thin, but the reading's text
	 * is fat's: fat's memory, read before the exec finished */
	put_file("proc/700/cmdline", "thin\0", 5);
	put_exe("/bin/sleep");
	pview_sample(pv, l, 4000, 4000, &m, 1, 0, fat, &s);
	cr_expect_eq(p->nimgs, 1, "a reading of fat's memory was given to the image after it");
	cr_expect_eq(p->imgs[0].samples, 2);

	/* the new memory, not set up yet (no text) and then thin's (9) */
	m = (struct tree_member){ 700, 100u << 10, 0 };
	pview_sample(pv, l, 4500, 4500, &m, 1, 0, 0, &s);
	m = (struct tree_member){ 700, thin, 9 };
	pview_sample(pv, l, 5000, 5000, &m, 1, 0, 0, &s);
	pview_sample(pv, l, 7000, 7000, &m, 1, 0, 0, &s);
	cr_assert_eq(p->nimgs, 2);
	const struct pview_img *g0 = &p->imgs[0], *g1 = &p->imgs[1];
	cr_expect_eq(g0->samples, 2);
	cr_expect_eq(g0->peak_rss, fat);
	cr_expect_eq(g1->gen, 1);
	cr_expect_eq(g1->samples, 3);
	cr_expect_eq(g1->peak_rss, thin, "thin's peak %llu: not its own memory",
		     (unsigned long long)g1->peak_rss);
	cr_expect_eq(g1->text_pages, 9, "learnt only once it surely ran (7000)");

	/* thin marks its exec at 8500, inside a sample read from 8000 to
	 * 9000: a reading with its text is its own, one with other text is
	 * of the image after it */
	pview_sample(pv, l, 8000, 9000, &m, 1, 0, 0, &s);
	cr_expect_eq(p->nimgs, 2);
	cr_expect_eq(g1->samples, 4);
	m = (struct tree_member){ 700, 1u << 20, 3 };
	pview_sample(pv, l, 8200, 9000, &m, 1, 0, 0, &s);
	cr_assert_eq(p->nimgs, 3, "a reading of the next image's memory was given to thin");
	cr_expect_eq(p->imgs[2].gen, 2);
	cr_expect_eq(p->imgs[1].samples, 4);
	close_views(l, pv);
}

/* ---- Pss from status (pview.h, "Pss without the walk") ---- */

#define KB 1024ull
#define MS 1000000ull

/* TOP/proc/PID/status with its memory split (KiB) and TOP/proc/PID/
 * smaps_rollup as a walk would say it: `alone` makes Pss_Anon equal to
 * Anonymous (every anonymous page mapped once), else half of it. */
static void put_mem(int pid, uint64_t anon, uint64_t file, uint64_t swap, uint64_t pss_file,
		    int alone)
{
	char rel[64], text[512];
	snprintf(rel, sizeof rel, "proc/%d", pid);
	char path[PATH_MAX + 64];
	snprintf(path, sizeof path, "%s/%s", top, rel);
	mkdir(path, 0755);
	int n = snprintf(text, sizeof text,
			 "Name:\tgrow\nPPid:\t1\nUid:\t0\t0\t0\t0\nGid:\t0\t0\t0\t0\n"
			 "VmHWM:\t%llu kB\nRssAnon:\t%llu kB\nRssFile:\t%llu kB\n"
			 "RssShmem:\t0 kB\nVmSwap:\t%llu kB\n",
			 (unsigned long long)(anon + file), (unsigned long long)anon,
			 (unsigned long long)file, (unsigned long long)swap);
	snprintf(rel, sizeof rel, "proc/%d/status", pid);
	put_file(rel, text, (size_t)n);
	uint64_t pss_anon = alone ? anon : anon / 2;
	n = snprintf(text, sizeof text,
		     "Rss: %llu kB\nPss: %llu kB\nPss_Anon: %llu kB\nPss_File: %llu kB\n"
		     "Pss_Shmem: 0 kB\nAnonymous: %llu kB\nSwap: %llu kB\n",
		     (unsigned long long)(anon + file), (unsigned long long)(pss_anon + pss_file),
		     (unsigned long long)pss_anon, (unsigned long long)pss_file,
		     (unsigned long long)anon, (unsigned long long)swap);
	snprintf(rel, sizeof rel, "proc/%d/smaps_rollup", pid);
	put_file(rel, text, (size_t)n);
}

/* The view of TOP/proc without records, KSM's switch at TOP/ksm_run. */
static struct pview *open_plain(const char *ksm)
{
	char path[PATH_MAX + 64];
	struct pview *pv;
	put_file("ksm_run", ksm, strlen(ksm));
	snprintf(path, sizeof path, "%s/proc", top);
	cr_assert_eq(pview_open(&pv, strdup(path), 0), 0);
	pview_set_look_budget(pv, 10000);
	snprintf(path, sizeof path, "%s/ksm_run", top);
	pview_set_ksm_path(pv, strdup(path));
	return pv;
}

static unsigned rollups_of(const struct pview *pv, unsigned *derived)
{
	unsigned r;
	pview_read_counts(pv, &r, derived);
	return r;
}

/* One process growing alone (sort): its rollup is read once; at later
 * peaks its Pss is its anonymous RSS at the peak sample plus the file
 * part of that rollup, whatever a walk would say now -- until a process
 * joins the tree, which may be a fork child sharing its pages: then it is
 * walked again, and a walk that finds shared pages is believed. */
Test(pview, pss_from_status_while_anonymous_pages_are_alone, .timeout = 10)
{
	fake_pid_700("grow", "");
	put_mem(700, 100000, 1000, 0, 300, 1);
	struct pview *pv = open_plain("0\n");
	struct pview_sums s;
	unsigned derived;
	struct tree_member m[2] = { { 700, 101000 * KB, 0 }, { 701, 0, 0 } };

	pview_sample(pv, NULL, 1000 * MS, 1000 * MS, m, 1, 1, m[0].rss, &s);
	const struct pview_peak *pk = pview_peak(pv);
	cr_expect_eq(rollups_of(pv, &derived), 1);
	cr_expect(s.have_pss && s.pss == 100300 * KB, "pss %llu", (unsigned long long)s.pss);
	cr_expect_not(pk->m[0].derived);

	/* doubled, a second later (due by time): no walk; a walk would say
	 * 150000 (the rollup file is stale on purpose) */
	put_mem(700, 200000, 1000, 0, 300, 1);
	put_file("proc/700/smaps_rollup", "Rss: 201000 kB\nPss: 150000 kB\n", 30);
	m[0].rss = 201000 * KB;
	pview_sample(pv, NULL, 2000 * MS, 2000 * MS, m, 1, 1, m[0].rss, &s);
	cr_expect_eq(rollups_of(pv, &derived), 1, "the process was walked again");
	cr_expect_eq(derived, 1);
	cr_expect(pk->have_smaps && pk->m[0].derived && !pk->m[0].carried);
	cr_expect_eq(pk->m[0].pss, 200300 * KB, "pss %llu", (unsigned long long)pk->m[0].pss);
	cr_expect_eq(s.pss, 200300 * KB);

	/* a peak 100 ms later, 2% higher: not due, its figures carried --
	 * moved with its anonymous pages, not left at the last sample's */
	m[0].rss = 205000 * KB;
	pview_sample(pv, NULL, 2100 * MS, 2100 * MS, m, 1, 1, m[0].rss, &s);
	cr_expect_eq(rollups_of(pv, &derived), 1);
	cr_expect_eq(derived, 1);
	cr_expect(pk->m[0].carried);
	cr_expect_eq(pk->m[0].pss, 204300 * KB, "pss %llu", (unsigned long long)pk->m[0].pss);

	/* a fork child joins, sharing half of the parent's anonymous pages:
	 * both walked, the parent's shared pages counted half */
	put_mem(700, 209000, 1000, 0, 300, 0);
	put_mem(701, 500, 500, 0, 100, 1);
	m[0].rss = 210000 * KB;
	m[1].rss = 1000 * KB;
	pview_sample(pv, NULL, 3000 * MS, 3000 * MS, m, 2, 1, 211000 * KB, &s);
	cr_expect_eq(rollups_of(pv, &derived), 3, "a member joined: both walked");
	cr_expect_eq(pk->m[0].pss, (104500 + 300) * KB, "pss %llu",
		     (unsigned long long)pk->m[0].pss);
	cr_expect_not(pk->m[0].derived);

	/* the next due peak: the parent shares its pages still, walked; the
	 * child's were its own at its walk, and nothing joined since */
	pview_sample(pv, NULL, 4000 * MS, 4000 * MS, m, 2, 1, 211000 * KB, &s);
	cr_expect_eq(rollups_of(pv, &derived), 4);
	cr_expect_eq(derived, 2);
	cr_expect(pk->m[1].derived);
	cr_expect_eq(pk->m[1].pss, 600 * KB);
	cr_expect_eq(s.pss, (104800 + 600) * KB);
	pview_close(pv);
}

/* Where the pages may be shared without a fork the view would see, or the
 * file part is not small, the process is walked at each due peak. */
Test(pview, pss_walked_where_pages_may_be_shared, .timeout = 10)
{
	fake_pid_700("grow", "");
	put_mem(700, 100000, 1000, 0, 300, 1);
	struct pview *pv = open_plain("1\n");
	struct pview_sums s;
	unsigned derived;
	struct tree_member m = { 700, 101000 * KB, 0 };
	uint64_t t = 1000 * MS;

	/* KSM running: it may merge the pages with another process's */
	pview_sample(pv, NULL, t, t, &m, 1, 1, m.rss, &s);
	t += 1000 * MS;
	pview_sample(pv, NULL, t, t, &m, 1, 1, m.rss, &s);
	cr_expect_eq(rollups_of(pv, &derived), 2);
	cr_expect_eq(derived, 0);

	/* KSM stopped, but 10 MB of file pages (9% of its RSS, above 4 MB):
	 * their Pss depends on who else maps them */
	put_file("ksm_run", "0\n", 2);
	put_mem(700, 100000, 10000, 0, 300, 1);
	m.rss = 110000 * KB;
	t += 1000 * MS;
	pview_sample(pv, NULL, t, t, &m, 1, 1, m.rss, &s);
	cr_expect_eq(rollups_of(pv, &derived), 3);
	cr_expect_eq(derived, 0);

	/* small file part again: from status */
	put_mem(700, 100000, 1000, 0, 300, 1);
	m.rss = 101000 * KB;
	t += 1000 * MS;
	pview_sample(pv, NULL, t, t, &m, 1, 1, m.rss, &s);
	cr_expect_eq(rollups_of(pv, &derived), 3);
	cr_expect_eq(derived, 1);

	/* swapped out: walked, and a walk with swap entries is no basis (a
	 * fork relative may share them) */
	put_mem(700, 90000, 1000, 10000, 300, 1);
	m.rss = 91000 * KB;
	t += 1000 * MS;
	pview_sample(pv, NULL, t, t, &m, 1, 1, m.rss, &s);
	put_mem(700, 90000, 1000, 0, 300, 1);
	t += 1000 * MS;
	pview_sample(pv, NULL, t, t, &m, 1, 1, m.rss, &s);
	cr_expect_eq(rollups_of(pv, &derived), 5);
	cr_expect_eq(derived, 1);

	/* a sample without it, then it again: maybe another process on the
	 * same pid -- walked */
	pview_sample(pv, NULL, t + 10 * MS, t + 10 * MS, &m, 0, 0, 0, &s);
	t += 1000 * MS;
	pview_sample(pv, NULL, t, t, &m, 1, 1, m.rss, &s);
	cr_expect_eq(rollups_of(pv, &derived), 6);
	cr_expect_eq(derived, 1);
	pview_close(pv);
}
