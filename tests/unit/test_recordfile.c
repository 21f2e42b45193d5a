/* test_recordfile.c: the record reader on valid, truncated, corrupt and
 * hostile files. */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "collect/recordfile.h"

static char dir[] = "/tmp/mtrecXXXXXX";
static struct mt_record good;

static void setup(void)
{
	cr_assert_not_null(mkdtemp(dir));
	memset(&good, 0, sizeof good);
	good.magic = MT_RECORD_MAGIC;
	good.version = MT_RECORD_VERSION;
	good.record_size = MT_RECORD_SIZE;
	good.pid = 4242;
	good.gen = 1;
	good.relation = MT_REL_EXEC;
	good.parent_pid = 4242;
	good.state = MT_STATE_EXITED;
	good.marker_count = 1;
	good.heap_peak = 12345;
	strcpy(good.exe, "/bin/x");
	memcpy(good.argv, "x\0-y", 5);
	good.argv_bytes = 5;
}

static void teardown(void)
{
	char cmd[64];
	snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
	cr_expect_eq(system(cmd), 0);
}

static void put(const char *name, const void *data, size_t len, size_t file_size)
{
	char path[128];
	int fd;
	snprintf(path, sizeof path, "%s/%s", dir, name);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	cr_assert_geq(fd, 0);
	cr_assert_eq(write(fd, data, len), (ssize_t)len);
	cr_assert_eq(ftruncate(fd, (off_t)file_size), 0);
	close(fd);
}

static int get(const char *name, struct mt_record *out)
{
	char path[128];
	snprintf(path, sizeof path, "%s/%s", dir, name);
	return recordfile_read(path, out);
}

TestSuite(recordfile, .init = setup, .fini = teardown);

Test(recordfile, valid_record)
{
	struct mt_record r;
	put("4242.1.mtr", &good, sizeof good, MT_RECORD_SIZE);
	cr_assert_eq(get("4242.1.mtr", &r), 0);
	cr_expect_eq(r.pid, 4242);
	cr_expect_eq(r.heap_peak, 12345);
	cr_expect_str_eq(r.exe, "/bin/x");
	cr_expect_eq(r.state, MT_STATE_EXITED);
}

Test(recordfile, distinct_errors)
{
	struct mt_record r, bad;
	put("empty", "", 0, 0);
	cr_expect_eq(get("empty", &r), -RECORDFILE_ESHORT);
	put("short", &good, 100, 100);
	cr_expect_eq(get("short", &r), -RECORDFILE_ESHORT);
	put("long", &good, sizeof good, MT_RECORD_SIZE + 1);
	cr_expect_eq(get("long", &r), -RECORDFILE_ELONG);
	bad = good;
	bad.magic = 0; /* still being created */
	put("nomagic", &bad, sizeof bad, MT_RECORD_SIZE);
	cr_expect_eq(get("nomagic", &r), -RECORDFILE_EMAGIC);
	bad = good;
	bad.version = 99;
	put("version", &bad, sizeof bad, MT_RECORD_SIZE);
	cr_expect_eq(get("version", &r), -RECORDFILE_EVERSION);
	bad = good;
	bad.record_size = 4096;
	put("size", &bad, sizeof bad, MT_RECORD_SIZE);
	cr_expect_eq(get("size", &r), -RECORDFILE_ESIZE);
	bad = good;
	bad.state = 77;
	put("state", &bad, sizeof bad, MT_RECORD_SIZE);
	cr_expect_eq(get("state", &r), -RECORDFILE_ECORRUPT);
	bad = good;
	bad.pid = -5;
	put("pid", &bad, sizeof bad, MT_RECORD_SIZE);
	cr_expect_eq(get("pid", &r), -RECORDFILE_ECORRUPT);
	cr_expect_eq(get("missing", &r), -ENOENT);
	cr_expect_eq(get(".", &r), -RECORDFILE_ECORRUPT);
	cr_expect_str_neq(recordfile_strerror(-RECORDFILE_ESHORT),
			  recordfile_strerror(-RECORDFILE_EMAGIC));
	cr_expect_str_eq(recordfile_strerror(-ENOENT), strerror(ENOENT));
}

Test(recordfile, hostile_strings_are_clamped)
{
	struct mt_record r, bad = good;
	memset(bad.exe, 'A', sizeof bad.exe);
	memset(bad.argv, 'B', sizeof bad.argv);
	bad.argv_bytes = 0xffffffffu;
	bad.marker_count = 0xffffffffu;
	memset(bad.markers, 'C', sizeof bad.markers);
	put("hostile", &bad, sizeof bad, MT_RECORD_SIZE);
	cr_assert_eq(get("hostile", &r), 0);
	cr_expect_eq(strlen(r.exe), MT_EXE_BYTES - 1);
	cr_expect_eq(r.argv_bytes, MT_ARGV_BYTES);
	cr_expect_eq(r.argv[MT_ARGV_BYTES - 1], '\0');
	cr_expect_eq(strlen(r.markers[MT_MARKERS - 1].label), MT_LABEL_BYTES - 1);
}

Test(recordfile, names)
{
	int32_t pid;
	uint32_t gen;
	cr_expect_eq(recordfile_parse_name("12.3.mtr", &pid, &gen), 0);
	cr_expect_eq(pid, 12);
	cr_expect_eq(gen, 3);
	const char *bad[] = { "12.mtr", ".3.mtr", "12..mtr", "12.3.mtrx", "-1.0.mtr", "0.0.mtr",
			      "99999999999.0.mtr", "12.3.mtr.tmp", "a.b.mtr", "012.3.mtr", "" };
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
		cr_expect_eq(recordfile_parse_name(bad[i], &pid, &gen), -RECORDFILE_ENAME, "%s",
			     bad[i]);
}

Test(recordfile, list_sorted_by_pid_then_gen)
{
	struct recordfile_entry *e;
	size_t n;
	put("20.1.mtr", "", 0, 0);
	put("3.0.mtr", "", 0, 0);
	put("20.0.mtr", "", 0, 0);
	put("100.2.mtr", "", 0, 0);
	put("20.10.mtr", "", 0, 0);
	put("notes.txt", "", 0, 0);
	cr_assert_eq(recordfile_list(dir, &e, &n), 0);
	cr_assert_eq(n, 5);
	const int32_t pids[] = { 3, 20, 20, 20, 100 };
	const uint32_t gens[] = { 0, 0, 1, 10, 2 };
	for (size_t i = 0; i < n; i++) {
		cr_expect_eq(e[i].pid, pids[i]);
		cr_expect_eq(e[i].gen, gens[i]);
	}
	free(e);
	cr_expect_eq(recordfile_list("/nonexistent/dir", &e, &n), -ENOENT);
}

/* A valid layout is not yet a believable record. */
/* A request is any size the program asked for, served or not:
 * malloc(SIZE_MAX) fails, still counts as the largest request (and in the
 * total, which wraps), and is no figure of memory held. */
Test(recordfile, failed_huge_request_is_plausible)
{
	struct mt_record r = good;
	struct recordfile_bounds b = { 1000000000, 9000000000, 24u << 20 };
	char why[200] = "";
	r.start_mono_ns = 2000000000;
	r.end_mono_ns = 3000000000;
	r.heap_peak = 4096;
	r.heap_requested_total = (uint64_t)SIZE_MAX + 4097; /* SIZE_MAX and 4 KiB, wrapped */
	r.heap_largest_request = SIZE_MAX;
	cr_expect_eq(recordfile_plausible(&r, &b, why, sizeof why), 0, "%s", why);
}

Test(recordfile, plausible_bounds)
{
	struct mt_record r = good;
	struct recordfile_bounds b = { 1000000000, 9000000000, 24u << 20 }; /* 24 GiB */
	char why[200];
	r.start_mono_ns = 2000000000;
	r.end_mono_ns = 3000000000;
	r.heap_peak_mono_ns = 2500000000;
	r.vm_hwm_kb = 100000;
	cr_assert_eq(recordfile_plausible(&r, &b, why, sizeof why), 0, "%s", why);

	struct mt_record bad = r;
	bad.vm_hwm_kb = UINT64_C(9444732965739290);
	cr_expect_eq(recordfile_plausible(&bad, &b, why, sizeof why), -RECORDFILE_EIMPLAUSIBLE);
	cr_expect_not_null(strstr(why, "VmHWM, 9444732965739290 kB, is more than the machine's "
					"25165824 kB of RAM and swap"), "%s", why);
	b.memory_kb = 0; /* unknown: not checked */
	cr_expect_eq(recordfile_plausible(&bad, &b, why, sizeof why), 0);
	b.memory_kb = 24u << 20;

	bad = r;
	bad.marker_count = 0xFFFFFFF7u;
	cr_expect_eq(recordfile_plausible(&bad, &b, why, sizeof why), -RECORDFILE_EIMPLAUSIBLE);
	cr_expect_not_null(strstr(why, "4294967287 markers"), "%s", why);

	bad = r;
	bad.start_mono_ns = 10; /* before the run */
	cr_expect_eq(recordfile_plausible(&bad, &b, why, sizeof why), -RECORDFILE_EIMPLAUSIBLE);
	cr_expect_not_null(strstr(why, "started outside the run"), "%s", why);

	bad = r;
	bad.end_mono_ns = 99000000000; /* after the run */
	cr_expect_eq(recordfile_plausible(&bad, &b, why, sizeof why), -RECORDFILE_EIMPLAUSIBLE);

	bad = r;
	bad.heap_peak = UINT64_C(1) << 60;
	cr_expect_eq(recordfile_plausible(&bad, &b, why, sizeof why), -RECORDFILE_EIMPLAUSIBLE);
	cr_expect_not_null(strstr(why, "address space"), "%s", why);

	bad = r;
	bad.heap_peak_mono_ns = 5000000000; /* after its own end */
	cr_expect_eq(recordfile_plausible(&bad, &b, why, sizeof why), -RECORDFILE_EIMPLAUSIBLE);

	bad = r;
	bad.heap_current = bad.heap_peak + 1;
	cr_expect_eq(recordfile_plausible(&bad, &b, why, sizeof why), -RECORDFILE_EIMPLAUSIBLE);
	bad.state = MT_STATE_RUNNING; /* live: current may pass a lagging peak */
	cr_expect_eq(recordfile_plausible(&bad, &b, why, sizeof why), 0, "%s", why);
	cr_expect_str_eq(recordfile_strerror(-RECORDFILE_EIMPLAUSIBLE),
			 "implausible record (its figures cannot be true)");
}

