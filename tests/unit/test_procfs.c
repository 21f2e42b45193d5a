/* test_procfs.c: the /proc parsers on captured and hand-made text
 * (tests/data/proc/files), including truncated and odd files, and the
 * readers against a fake proc root. */
#include <criterion/criterion.h>
#include <stdint.h>
#include <criterion/parameterized.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "base/procfs.h"
#include "test_proc_fixtures.h"

static size_t load(const char *name, char *buf, size_t cap)
{
	const char *data = getenv("MT_DATA");
	if (!data)
		cr_skip_test("MT_DATA is not set (run through make check)");
	char path[PATH_MAX];
	snprintf(path, sizeof path, "%s/proc/files/%s", data, name);
	size_t len;
	int rc = procfs_read_file(path, buf, cap, &len);
	cr_assert_eq(rc, 0, "%s: %s", path, strerror(-rc));
	return len;
}

Test(procfs, status_live_capture)
{
	char buf[4096];
	size_t n = load("status_live.txt", buf, sizeof buf);
	struct procfs_status st;
	cr_assert_eq(procfs_parse_status(buf, n, &st), 0);
	cr_expect_str_eq(st.name, "cat");
	cr_expect_eq(st.ppid, 27278);
	cr_expect_eq(st.tgid, 27281);
	cr_expect_eq(st.vm_rss_kb, 1620);
	cr_expect_eq(st.vm_hwm_kb, 1620);
	cr_expect_eq(st.vm_peak_kb, 3060);
	cr_expect_eq(st.vm_size_kb, 3060);
	cr_expect_eq(st.have & 0x7f, 0x7f);
}

Test(procfs, status_kernel_thread_has_no_vm)
{
	char buf[4096];
	size_t n = load("status_kthread.txt", buf, sizeof buf);
	struct procfs_status st;
	cr_assert_eq(procfs_parse_status(buf, n, &st), 0);
	cr_expect_str_eq(st.name, "kthreadd");
	cr_expect_eq(st.ppid, 0);
	cr_expect_eq(st.have & PROCFS_HAVE_RSS, 0);
	cr_expect_eq(st.vm_rss_kb, 0);
}

Test(procfs, status_truncated_keeps_what_is_complete)
{
	char buf[4096];
	size_t n = load("status_truncated.txt", buf, sizeof buf);
	struct procfs_status st;
	cr_assert_eq(procfs_parse_status(buf, n, &st), 0);
	cr_expect_eq(st.ppid, 27278);
	cr_expect_eq(st.have & PROCFS_HAVE_RSS, 0);
}

Test(procfs, status_number_cut_by_short_read_is_not_trusted)
{
	char buf[256];
	size_t n = load("status_cut_number.txt", buf, sizeof buf);
	struct procfs_status st;
	cr_assert_eq(procfs_parse_status(buf, n, &st), 0);
	cr_expect_eq(st.have & PROCFS_HAVE_RSS, 0, "took a cut line: %llu",
		     (unsigned long long)st.vm_rss_kb);
}

Test(procfs, status_garbage_is_einval)
{
	struct procfs_status st;
	cr_expect_eq(procfs_parse_status("", 0, &st), -EINVAL);
	cr_expect_eq(procfs_parse_status("hello\nworld\n", 12, &st), -EINVAL);
}

Test(procfs, stat_live_capture)
{
	char buf[1024];
	size_t n = load("stat_live.txt", buf, sizeof buf);
	struct procfs_stat st;
	cr_assert_eq(procfs_parse_stat(buf, n, &st), 0);
	cr_expect_eq(st.pid, 27284);
	cr_expect_str_eq(st.comm, "cat");
	cr_expect_eq(st.state, 'R');
	cr_expect_eq(st.ppid, 27278);
	cr_expect_eq(st.starttime, 123898);
}

Test(procfs, stat_comm_with_spaces_and_parens)
{
	char buf[1024];
	size_t n = load("stat_odd_comm.txt", buf, sizeof buf);
	struct procfs_stat st;
	cr_assert_eq(procfs_parse_stat(buf, n, &st), 0);
	cr_expect_str_eq(st.comm, "we ird) (x");
	cr_expect_eq(st.state, 'R');
	cr_expect_eq(st.ppid, 1);
	cr_expect_eq(st.starttime, 777);
}

Test(procfs, stat_zombie)
{
	char buf[1024];
	size_t n = load("stat_zombie.txt", buf, sizeof buf);
	struct procfs_stat st;
	cr_assert_eq(procfs_parse_stat(buf, n, &st), 0);
	cr_expect_eq(st.state, 'Z');
	cr_expect_eq(st.ppid, 77);
	cr_expect_eq(st.starttime, 99);
}

Test(procfs, stat_truncated_is_einval)
{
	char buf[1024];
	size_t n = load("stat_truncated.txt", buf, sizeof buf);
	struct procfs_stat st;
	cr_expect_eq(procfs_parse_stat(buf, n, &st), -EINVAL);
	/* every prefix of a good line is refused or parsed right, never wrong */
	n = load("stat_live.txt", buf, sizeof buf);
	for (size_t k = 0; k < n; k++) {
		int rc = procfs_parse_stat(buf, k, &st);
		if (rc == 0)
			cr_expect_eq(st.starttime, 123898, "prefix %zu", k);
	}
	cr_expect_eq(procfs_parse_stat("12 (x", 5, &st), -EINVAL);
	cr_expect_eq(procfs_parse_stat("x (y) R 1", 9, &st), -EINVAL);
}

Test(procfs, statm)
{
	char buf[256];
	struct procfs_statm sm;
	size_t n = load("statm_live.txt", buf, sizeof buf);
	cr_assert_eq(procfs_parse_statm(buf, n, &sm), 0);
	cr_expect_eq(sm.resident_pages, 428);
	cr_expect_eq(sm.text_pages, 5);
	n = load("statm_zombie.txt", buf, sizeof buf);
	cr_assert_eq(procfs_parse_statm(buf, n, &sm), 0);
	cr_expect_eq(sm.resident_pages, 0);
	cr_expect_eq(sm.text_pages, 0);
	n = load("statm_truncated.txt", buf, sizeof buf);
	cr_expect_eq(procfs_parse_statm(buf, n, &sm), -EINVAL, "took \"765 42\" as 42 pages");
	cr_expect_eq(procfs_parse_statm("765 428 399 5", 13, &sm), -EINVAL,
		     "took a text field cut short");
	cr_expect_eq(procfs_parse_statm("", 0, &sm), -EINVAL);
	cr_expect_eq(procfs_parse_statm("1 x 3", 5, &sm), -EINVAL);
}

/* Numbers at and past 64 bits: the largest is taken, one more is not,
 * and leading zeros past 19 digits are no overflow. */
Test(procfs, statm_numbers_at_64_bits)
{
	struct procfs_statm sm;
	const char *max = "1 18446744073709551615 3 4 5 6 7\n";
	cr_assert_eq(procfs_parse_statm(max, strlen(max), &sm), 0);
	cr_expect_eq(sm.resident_pages, UINT64_MAX);
	const char *over = "1 18446744073709551616 3 4 5 6 7\n";
	cr_expect_eq(procfs_parse_statm(over, strlen(over), &sm), -EINVAL);
	const char *wide = "1 99999999999999999999 3 4 5 6 7\n";
	cr_expect_eq(procfs_parse_statm(wide, strlen(wide), &sm), -EINVAL);
	const char *longer = "1 184467440737095516150 3 4 5 6 7\n";
	cr_expect_eq(procfs_parse_statm(longer, strlen(longer), &sm), -EINVAL);
	const char *zeros = "1 0000000000000000000000042 3 0000000000000000000009 5 6 7\n";
	cr_assert_eq(procfs_parse_statm(zeros, strlen(zeros), &sm), 0);
	cr_expect_eq(sm.resident_pages, 42);
	cr_expect_eq(sm.text_pages, 9);
	/* 19 digits, then the text ends: no read past it */
	const char *nine = "1 9999999999999999999";
	cr_expect_eq(procfs_parse_statm(nine, strlen(nine), &sm), -EINVAL);
}

Test(procfs, children)
{
	char buf[256];
	pid_t kids[8];
	size_t n, k;
	n = load("children_three.txt", buf, sizeof buf);
	cr_assert_eq(procfs_parse_children(buf, n, kids, 8, &k), 0);
	cr_assert_eq(k, 3);
	cr_expect_eq(kids[0], 101);
	cr_expect_eq(kids[1], 103);
	cr_expect_eq(kids[2], 9999);
	cr_expect_eq(procfs_parse_children(buf, n, kids, 2, &k), -ENOSPC);
	cr_expect_eq(k, 3);
	n = load("children_empty.txt", buf, sizeof buf);
	cr_assert_eq(procfs_parse_children(buf, n, kids, 8, &k), 0);
	cr_expect_eq(k, 0);
	n = load("children_garbage.txt", buf, sizeof buf);
	cr_expect_eq(procfs_parse_children(buf, n, kids, 8, &k), -EINVAL);
}

/* A process's RSS through procfs_open_statm and procfs_pread_statm, as
 * memsup's samplers read it, below proc root `root` (NULL: /proc). */
static int read_rss(const char *root, pid_t pid, uint64_t *bytes)
{
	uint64_t text;
	int dir = open(root ? root : "/proc", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	cr_assert_geq(dir, 0, "open %s: %s", root ? root : "/proc", strerror(errno));
	int fd = procfs_open_statm(dir, pid);
	close(dir);
	if (fd < 0)
		return fd;
	int rc = procfs_pread_statm(fd, bytes, &text);
	close(fd);
	return rc;
}

Test(procfs, readers_on_fake_root)
{
	const char *r = proc_fixture("tree1");
	struct procfs_stat st;
	uint64_t bytes;
	cr_assert_eq(procfs_read_stat(r, 102, &st), 0);
	cr_expect_str_eq(st.comm, "worker (1)");
	cr_expect_eq(st.ppid, 101);
	cr_assert_eq(read_rss(r, 103, &bytes), 0);
	cr_expect_eq(bytes, 3000 * procfs_page_size());
	pid_t kids[8];
	size_t k;
	cr_assert_eq(procfs_read_children(r, 100, 105, kids, 8, &k), 0);
	cr_expect_eq(k, 1);
	cr_expect_eq(kids[0], 104);
	char cmd[64];
	size_t len;
	cr_assert_eq(procfs_read_cmdline(r, 101, cmd, sizeof cmd, &len), 0);
	cr_expect_eq(len, strlen("sh") + 1 + strlen("--flag"));
	cr_expect_eq(memcmp(cmd, "sh\0--flag", len), 0);
}

Test(procfs, gone_process_is_distinct)
{
	struct procfs_stat st;
	uint64_t bytes;
	cr_expect_eq(procfs_read_stat(proc_fixture("tree1"), 424242, &st), PROCFS_GONE);
	cr_expect_eq(read_rss(proc_fixture("tree1"), 424242, &bytes), PROCFS_GONE);
	cr_expect_eq(read_rss(NULL, 0x7ffffff0, &bytes), PROCFS_GONE);
}

Test(procfs, live_self)
{
	struct procfs_status st;
	struct procfs_stat s;
	uint64_t bytes;
	cr_assert_eq(procfs_read_status(NULL, getpid(), &st), 0);
	cr_assert_eq(procfs_read_stat(NULL, getpid(), &s), 0);
	cr_assert_eq(read_rss(NULL, getpid(), &bytes), 0);
	cr_expect_eq(s.ppid, getppid());
	cr_expect_eq(st.ppid, getppid());
	/* statm and VmRSS are the same figure (read moments apart) */
	double vm = (double)st.vm_rss_kb * 1024;
	cr_expect(bytes > vm * 0.8 && bytes < vm * 1.25, "statm %llu vs VmRSS %.0f",
		  (unsigned long long)bytes, vm);
}

/* ---- the merged view's parsers: smaps_rollup, RssAnon/File/Shmem,
 * session, ELF interpreter ------------------------------------------------ */

Test(procfs, rollup_live_capture)
{
	char buf[4096];
	size_t n = load("smaps_rollup_live.txt", buf, sizeof buf);
	struct procfs_rollup ru;
	cr_assert_eq(procfs_parse_rollup(buf, n, &ru), 0);
	cr_expect_eq(ru.rss_kb, 1620);
	cr_expect_eq(ru.pss_kb, 263);
	cr_expect_eq(ru.anon_kb, 116);
	cr_expect_eq(ru.swap_kb, 0); /* not SwapPss, which follows it */
	cr_expect_eq(ru.pss_anon_kb, 116);
	cr_expect_eq(ru.pss_file_kb, 147);
	cr_expect_eq(ru.shared_kb, 1464);
	cr_expect_eq(ru.private_kb, 40 + 116);
	cr_expect(ru.have & PROCFS_ROLLUP_PSS_PARTS);
}

/* Kernels before 5.10 print no Pss_Anon/File/Shmem lines. */
Test(procfs, rollup_without_pss_parts)
{
	char buf[4096];
	size_t n = load("smaps_rollup_old.txt", buf, sizeof buf);
	struct procfs_rollup ru;
	cr_assert_eq(procfs_parse_rollup(buf, n, &ru), 0);
	cr_expect_eq(ru.pss_kb, 263);
	cr_expect_not(ru.have & PROCFS_ROLLUP_PSS_PARTS);
	cr_expect_eq(ru.pss_anon_kb, 0);
}

/* A read cut inside the Pss number must not yield Pss = 2. */
Test(procfs, rollup_truncated_is_einval)
{
	char buf[4096];
	size_t n = load("smaps_rollup_truncated.txt", buf, sizeof buf);
	struct procfs_rollup ru;
	cr_expect_eq(procfs_parse_rollup(buf, n, &ru), -EINVAL);
	cr_expect_eq(procfs_parse_rollup("", 0, &ru), -EINVAL);
}

Test(procfs, rollup_live_self)
{
	struct procfs_rollup ru;
	cr_assert_eq(procfs_read_rollup(NULL, getpid(), &ru), 0);
	cr_expect_gt(ru.rss_kb, 0);
	cr_expect_leq(ru.pss_kb, ru.rss_kb);
}

Test(procfs, status_rss_parts)
{
	char buf[4096];
	size_t n = load("status_live.txt", buf, sizeof buf);
	struct procfs_status st;
	cr_assert_eq(procfs_parse_status(buf, n, &st), 0);
	cr_expect(st.have & PROCFS_HAVE_RSS_PARTS);
	cr_expect_eq(st.rss_anon_kb, 116);
	cr_expect_eq(st.rss_file_kb, 1504);
	cr_expect_eq(st.rss_shmem_kb, 0);
	cr_expect(st.have & PROCFS_HAVE_SWAP);
	cr_expect_eq(st.vm_swap_kb, 0);
	/* a kernel thread has none of them */
	n = load("status_kthread.txt", buf, sizeof buf);
	cr_assert_eq(procfs_parse_status(buf, n, &st), 0);
	cr_expect_not(st.have & PROCFS_HAVE_RSS_PARTS);
	cr_expect_not(st.have & PROCFS_HAVE_SWAP);
}

Test(procfs, stat_session)
{
	char buf[1024];
	size_t n = load("stat_live.txt", buf, sizeof buf);
	struct procfs_stat st;
	cr_assert_eq(procfs_parse_stat(buf, n, &st), 0);
	cr_expect_eq(st.pgrp, 27278);
	cr_expect_eq(st.session, 8879);
	cr_expect_eq(st.starttime, 123898);
	/* our own session, live */
	cr_assert_eq(procfs_read_stat(NULL, getpid(), &st), 0);
	cr_expect_eq(st.session, getsid(0));
}

static size_t read_head(const char *path, unsigned char *buf, size_t cap)
{
	FILE *f = fopen(path, "rb");
	cr_assert_not_null(f, "%s", path);
	size_t n = fread(buf, 1, cap, f);
	fclose(f);
	return n;
}

Test(procfs, elf_interp)
{
	unsigned char buf[4096];
	/* this test program is dynamically linked */
	size_t n = read_head("/proc/self/exe", buf, sizeof buf);
	cr_expect_eq(procfs_parse_elf_interp(buf, n), 1);
	/* cut before its program headers: not decidable */
	cr_expect_eq(procfs_parse_elf_interp(buf, 60), -EINVAL);
	cr_expect_eq(procfs_parse_elf_interp((const unsigned char *)"#!/bin/sh\n", 10), -EINVAL);
	const char *progs = getenv("MT_PROGS");
	if (!progs)
		cr_skip_test("MT_PROGS is not set");
	char path[PATH_MAX];
	snprintf(path, sizeof path, "%s/merge_static", progs);
	n = read_head(path, buf, sizeof buf);
	cr_expect_eq(procfs_parse_elf_interp(buf, n), 0, "merge_static has a PT_INTERP");
}

Test(procfs, status_ids)
{
	char buf[4096];
	size_t n = load("status_live.txt", buf, sizeof buf);
	struct procfs_status st;
	cr_assert_eq(procfs_parse_status(buf, n, &st), 0);
	cr_expect(st.have & PROCFS_HAVE_IDS);
	/* the capture's Uid/Gid lines */
	char *u = strstr(buf, "Uid:"), *g = strstr(buf, "Gid:");
	cr_assert(u && g);
	unsigned long ru, eu, rg, eg;
	cr_assert_eq(sscanf(u, "Uid: %lu %lu", &ru, &eu), 2);
	cr_assert_eq(sscanf(g, "Gid: %lu %lu", &rg, &eg), 2);
	cr_expect_eq(st.ruid, ru);
	cr_expect_eq(st.euid, eu);
	cr_expect_eq(st.rgid, rg);
	cr_expect_eq(st.egid, eg);
	const char setuid_like[] = "Name:\tx\nPPid:\t1\nUid:\t1000\t0\t0\t0\nGid:\t1000\t1000\t1000\t1000\n";
	cr_assert_eq(procfs_parse_status(setuid_like, sizeof setuid_like - 1, &st), 0);
	cr_expect(st.have & PROCFS_HAVE_IDS);
	cr_expect(st.ruid == 1000 && st.euid == 0 && st.rgid == 1000 && st.egid == 1000);
}

Test(procfs, meminfo_ram_and_swap)
{
	static const char text[] = "MemTotal:       24567890 kB\nMemFree:  100 kB\n"
				   "SwapTotal:       2097148 kB\nSwapFree: 0 kB\n";
	uint64_t kb = 0;
	cr_assert_eq(procfs_parse_meminfo(text, sizeof text - 1, &kb), 0);
	cr_expect_eq(kb, 24567890u + 2097148u);
	static const char noswap[] = "MemTotal: 1000 kB\n";
	cr_assert_eq(procfs_parse_meminfo(noswap, sizeof noswap - 1, &kb), 0);
	cr_expect_eq(kb, 1000);
	static const char cut[] = "MemFree: 5 kB\nMemTotal: 10";
	cr_expect_eq(procfs_parse_meminfo(cut, sizeof cut - 1, &kb), -EINVAL);
	cr_expect_eq(procfs_read_meminfo(NULL, &kb), 0);
	cr_expect_gt(kb, 0);
}

