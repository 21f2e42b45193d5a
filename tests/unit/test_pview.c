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

/* The records of TOP/rec (listed once) and the view of TOP/proc. */
static void open_views(struct live **l, struct pview **pv)
{
	char path[PATH_MAX + 64];
	snprintf(path, sizeof path, "%s/rec", top);
	cr_assert_eq(live_open(l, path), 0);
	cr_assert_eq(live_update(*l, 1), 0);
	snprintf(path, sizeof path, "%s/proc", top);
	cr_assert_eq(pview_open(pv, strdup(path), 1), 0);
}

static void close_views(struct live *l, struct pview *pv)
{
	char cmd[PATH_MAX + 16];
	pview_close(pv);
	live_close(l);
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", top);
	cr_expect_eq(system(cmd), 0);
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
	struct mt_record r;
	memset(&r, 0, sizeof r);
	r.magic = MT_RECORD_MAGIC;
	r.version = MT_RECORD_VERSION;
	r.record_size = MT_RECORD_SIZE;
	r.pid = 700;
	r.ppid = 1;
	r.start_mono_ns = 1000;
	r.end_mono_ns = 3000;
	r.state = MT_STATE_EXECED;
	r.heap_current = 4096;
	memcpy(r.argv, "env\0-i\0prog\0", 12);
	r.argv_bytes = 12;
	strcpy(r.exe, "/bin/true");
	char path[PATH_MAX + 64];
	snprintf(path, sizeof path, "%s/rec/700.0.mtr", top);
	int fd = open(path, O_RDWR | O_CREAT, 0644);
	cr_assert_geq(fd, 0);
	cr_assert_eq(ftruncate(fd, MT_RECORD_SIZE), 0);
	cr_assert_eq(pwrite(fd, &r, sizeof r, 0), (ssize_t)sizeof r);
	close(fd);
	struct live *l;
	struct pview *pv;
	open_views(&l, &pv);
	struct tree_member m = { 700, 1000000 };
	struct pview_sums s;

	/* before the exec: gen 0, traced, running? no: EXECED, so no heap */
	pview_sample(pv, l, 2000, 2000, &m, 1, 1, 1000000, &s);
	cr_expect_eq(s.traced, 1);
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
	struct tree_member m = { 700, 1000000 };
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
