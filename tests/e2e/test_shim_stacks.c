/* test_shim_stacks.c: sampled call sites under LD_PRELOAD (stacks.h).
 *
 * tests/progs/site_shares holds known shares of its heap (50%, 30%, 20%)
 * in three functions, in two processes at once; its stdout is the ground
 * truth (malloc_usable_size sums).  The tables are read back from the
 * "<pid>.<gen>.mts" files and each sampled stack is named from its first
 * frame, through the table's modules and the ELF symbols (elfsym.h).
 * site_shares is built with frame pointers, site_shares_nofp without.
 */
#include <criterion/criterion.h>
#include <criterion/logging.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "elfsym.h"
#include "stacks.h"
#include "test_guard.h"
#include "test_shim_harness.h"
#include "test_tmp.h"

enum { HALF, THREE_TENTHS, FIFTH, OTHER, NSITES };
static const char *const site_names[] = { "hold_half", "hold_three_tenths", "hold_fifth" };
static const double site_share[] = { 0.5, 0.3, 0.2 };

/* One process's stacks file, whole, or NULL if it has none. */
static unsigned char *stacks_load(const struct shim_run *r, pid_t pid, uint32_t gen)
{
	char path[PATH_MAX + 64];
	struct stat st;
	unsigned char *buf;
	int fd;
	snprintf(path, sizeof path, "%s/%d.%u%s", r->dir, (int)pid, gen, MT_STACKS_SUFFIX);
	fd = open(path, O_RDONLY);
	if (fd < 0)
		return NULL;
	cr_assert_eq(fstat(fd, &st), 0);
	cr_assert_geq(st.st_size, MT_STACKS_HEADER_BYTES);
	buf = calloc(1, MT_STACKS_SIZE);
	cr_assert_not_null(buf);
	cr_assert_eq(pread(fd, buf, (size_t)st.st_size, 0), st.st_size);
	close(fd);
	const struct mt_stacks_header *h = (const void *)buf;
	cr_assert_eq(h->magic, MT_STACKS_MAGIC);
	cr_assert_eq(h->version, MT_STACKS_VERSION);
	cr_assert_eq(h->stack_bytes, MT_STACKS_STACK_BYTES);
	cr_assert_eq(h->module_bytes, MT_STACKS_MODULE_BYTES);
	cr_assert_eq(h->pid, pid);
	cr_assert_eq(h->gen, gen);
	cr_assert_leq(h->stack_count, MT_STACKS_SLOTS);
	cr_assert_leq(h->module_count, MT_STACKS_MODULE_SLOTS);
	cr_assert_leq(MT_STACKS_STACKS_OFFSET + (uint64_t)h->stack_count * MT_STACKS_STACK_BYTES,
		      (uint64_t)st.st_size, "published stacks lie inside the file");
	cr_assert_eq(h->peak_seq % 2, 0);
	return buf;
}

static ssize_t pread_fd(void *ctx, void *buf, size_t n, uint64_t off)
{
	ssize_t r = pread(*(int *)ctx, buf, n, (off_t)off);
	return r < 0 ? -errno : r;
}

/* The function holding return address pc, by the table's modules. */
static void name_pc(unsigned char *t, const struct mt_stack *st, uint64_t pc, char *name,
		    size_t cap)
{
	const struct mt_stacks_header *h = (const void *)t;
	const struct mt_stacks_module *m = NULL;
	struct elfsym e;
	struct elfsym_query q;
	uint64_t vaddr;
	int fd;
	name[0] = '\0';
	for (uint32_t i = 0; i < h->module_count && i < st->modules_seen; i++) {
		const struct mt_stacks_module *c = mt_stacks_module(t, i);
		if (pc > c->start && pc <= c->end)
			m = c; /* the newest holding it */
	}
	if (!m || (m->flags & MT_MODULE_VDSO))
		return;
	fd = open(m->path, O_RDONLY);
	if (fd < 0)
		return;
	if (elfsym_open(&e, pread_fd, &fd) == 0 &&
	    elfsym_file_vaddr(&e, pc - 1 - m->start + m->file_offset, &vaddr) == 0) {
		memset(&q, 0, sizeof q);
		q.addr = vaddr;
		if (elfsym_resolve(&e, &q, 1) == 0 && q.found)
			elfsym_name(&e, &q, name, cap);
	}
	close(fd);
}

static int site_of(unsigned char *t, const struct mt_stack *st)
{
	char name[128];
	if (!st->nframes)
		return OTHER;
	name_pc(t, st, st->pc[0], name, sizeof name);
	for (int i = 0; i < 3; i++)
		if (!strcmp(name, site_names[i]))
			return i;
	return OTHER;
}

struct sums {
	double bytes[NSITES], var[NSITES];
	uint64_t samples, fp, dwarf;
};

/* Adds one process's peak columns (or live columns when the heap rose
 * after the last sampled event, stacks.h), by site. */
static void sum_peak(unsigned char *t, uint64_t record_heap_peak, struct sums *s)
{
	const struct mt_stacks_header *h = (const void *)t;
	int live = record_heap_peak > h->seen_heap_peak;
	cr_expect_eq(h->state, MT_STACKS_FINISHED);
	for (uint32_t i = 0; i < h->stack_count; i++) {
		const struct mt_stack *st = mt_stacks_stack(t, i);
		int k = site_of(t, st);
		s->bytes[k] += (double)(live ? st->live_bytes : st->peak_bytes);
		s->var[k] += (double)(live ? st->live_var : st->peak_var) * 1048576.0;
	}
	s->samples += h->samples;
	s->fp += h->fp_samples;
	s->dwarf += h->backtrace_samples;
}

struct truth {
	pid_t pid[4];
	double bytes[4][3];
	int n;
};

static void parse_truth(const char *out, struct truth *t)
{
	memset(t, 0, sizeof *t);
	for (const char *p = out; (p = strstr(p, "pid=")) != NULL && t->n < 4; p++) {
		int pid;
		unsigned long long a, b, c;
		cr_assert_eq(sscanf(p, "pid=%d half=%llu three_tenths=%llu fifth=%llu", &pid, &a, &b,
				    &c),
			     4);
		t->pid[t->n] = pid;
		t->bytes[t->n][0] = (double)a;
		t->bytes[t->n][1] = (double)b;
		t->bytes[t->n][2] = (double)c;
		t->n++;
	}
}

static void run_ok(struct shim_run *r, const char *const *argv, const char *const *env)
{
	shim_run(r, argv, env, 0);
	cr_assert(WIFEXITED(r->status) && WEXITSTATUS(r->status) == 0,
		  "%s: status %#x\nstdout:\n%s\nstderr:\n%s", argv[0], r->status, r->out, r->err);
}

/* site_shares under the shim; the sums of every process's table. */
static void shares(const char *prog, const char *const *env, struct truth *tr, struct sums *s,
		   uint64_t *heap_peak_sum, struct shim_run *r)
{
	const char *argv[] = { prog, "300", "2", NULL };
	run_ok(r, argv, env);
	parse_truth(r->out, tr);
	cr_assert_eq(tr->n, 2, "stdout: %s", r->out);
	memset(s, 0, sizeof *s);
	*heap_peak_sum = 0;
	for (int i = 0; i < tr->n; i++) {
		struct mt_record rec;
		unsigned char *t;
		shim_record(r, tr->pid[i], 0, &rec);
		t = stacks_load(r, tr->pid[i], 0);
		cr_assert_not_null(t, "no stacks file for pid %d", (int)tr->pid[i]);
		sum_peak(t, rec.heap_peak, s);
		*heap_peak_sum += rec.heap_peak;
		free(t);
	}
}

Test(shim_stacks, shares_at_the_default_interval, .timeout = 120)
{
	struct shim_run r;
	struct truth tr;
	struct sums s;
	uint64_t peak;
	double truth[3] = { 0, 0, 0 }, all = 0, est = 0, var = 0;
	shares("site_shares", NULL, &tr, &s, &peak, &r);
	for (int k = 0; k < 3; k++) {
		for (int i = 0; i < tr.n; i++)
			truth[k] += tr.bytes[i][k];
		all += truth[k];
	}
	for (int k = 0; k < NSITES; k++) {
		est += s.bytes[k];
		var += s.var[k];
	}
	for (int k = 0; k < 3; k++) {
		double share = s.bytes[k] / est, want = truth[k] / all;
		cr_log_info("%s: estimated %.1f%% (%.1f MB), true %.1f%% (%.1f MB)\n", site_names[k],
			    100 * share, s.bytes[k] / 1e6, 100 * want, truth[k] / 1e6);
		cr_expect(fabs(share - want) <= 0.05, "%s: %.3f vs %.3f", site_names[k], share, want);
		cr_expect(fabs(want - site_share[k]) < 0.02, "the workload's own shares");
	}
	/* The estimate of the whole heap at the peak, against the records'. */
	cr_log_info("estimated %.1f MB +- %.1f MB of the records' %.1f MB heap peaks (%llu "
		    "samples, %llu frame-pointer stacks, %llu DWARF)\n",
		    est / 1e6, sqrt(var) / 1e6, (double)peak / 1e6, (unsigned long long)s.samples,
		    (unsigned long long)s.fp, (unsigned long long)s.dwarf);
	cr_expect(fabs(est - (double)peak) <= 4.0 * sqrt(var) + 0.01 * (double)peak,
		  "est %.0f peak %llu se %.0f", est, (unsigned long long)peak, sqrt(var));
	cr_expect_gt(s.fp, 0, "site_shares keeps frame pointers: the walk is trusted");
	shim_done(&r);
}

Test(shim_stacks, shares_exact_with_every_block_sampled, .timeout = 120)
{
	const char *env[] = { "MEMTRACE_SAMPLE_BYTES=1", NULL };
	const char *argv[] = { "site_shares", "300", "2", NULL };
	struct shim_run r;
	struct truth tr;
	run_ok(&r, argv, env);
	parse_truth(r.out, &tr);
	cr_assert_eq(tr.n, 2);
	for (int i = 0; i < tr.n; i++) {
		struct mt_record rec;
		struct sums s;
		double sum = 0;
		unsigned char *t = stacks_load(&r, tr.pid[i], 0);
		memset(&s, 0, sizeof s);
		shim_record(&r, tr.pid[i], 0, &rec);
		cr_assert_not_null(t);
		cr_expect_eq(((struct mt_stacks_header *)t)->sample_bytes, 1);
		/* the file was made and its live columns moved: memsup rereads it */
		cr_expect_gt(rec.stacks_changes, 1, "the record counts the file's changes");
		sum_peak(t, rec.heap_peak, &s);
		for (int k = 0; k < 3; k++)
			cr_expect_eq(s.bytes[k], tr.bytes[i][k], "pid %d %s: %.0f vs %.0f",
				     (int)tr.pid[i], site_names[k], s.bytes[k], tr.bytes[i][k]);
		for (int k = 0; k < NSITES; k++) {
			sum += s.bytes[k];
			cr_expect_eq(s.var[k], 0);
		}
		/* every live block at the peak: the heap peak itself */
		cr_expect_eq(sum, (double)rec.heap_peak);
		free(t);
	}
	shim_done(&r);
}

/* The stacks themselves: site < shares_take < main (or shares_child). */
static void expect_frames(const char *prog, const char *const *env, int want_fp)
{
	const char *argv[] = { prog, "30", "1", NULL };
	struct shim_run r;
	struct truth tr;
	unsigned char *t;
	int seen = 0;
	run_ok(&r, argv, env);
	parse_truth(r.out, &tr);
	t = stacks_load(&r, tr.pid[0], 0);
	cr_assert_not_null(t);
	const struct mt_stacks_header *h = (const void *)t;
	for (uint32_t i = 1; i < h->stack_count; i++) {
		const struct mt_stack *st = mt_stacks_stack(t, i);
		char n1[128], n2[128];
		if (site_of(t, st) == OTHER)
			continue;
		cr_assert_geq(st->nframes, 3);
		name_pc(t, st, st->pc[1], n1, sizeof n1);
		name_pc(t, st, st->pc[2], n2, sizeof n2);
		cr_expect_str_eq(n1, "shares_take");
		cr_expect_str_eq(n2, "main");
		cr_expect(st->flags & (want_fp ? MT_STACK_FP : MT_STACK_BACKTRACE), "flags %#x",
			  st->flags);
		seen++;
	}
	cr_expect_gt(seen, 3);
	if (want_fp)
		cr_expect_eq(h->backtrace_samples, 0, "one check, then the walk alone");
	else
		cr_expect_gt(h->backtrace_samples, 0);
	/* the shim's cached unwind rules gave libgcc's stacks every time
	 * they were checked (never set where there is no such walk) */
	cr_expect_eq(h->flags & MT_STACKS_FLAG_CFI_OFF, 0, "flags %#x", h->flags);
	free(t);
	shim_done(&r);
}

Test(shim_stacks, frame_pointer_stacks, .timeout = 60)
{
	const char *env[] = { "MEMTRACE_SAMPLE_BYTES=1", NULL };
	expect_frames("site_shares", env, 1);
}

Test(shim_stacks, dwarf_stacks_without_frame_pointers, .timeout = 60)
{
	const char *env[] = { "MEMTRACE_SAMPLE_BYTES=1", NULL };
	expect_frames("site_shares_nofp", env, 0);
}

/* Children that exec get a table per image; the forked image that only
 * exec'd leaves none. */
Test(shim_stacks, exec_children_get_their_own_table, .timeout = 120)
{
	const char *env[] = { "MEMTRACE_SAMPLE_BYTES=1", NULL };
	const char *argv[] = { "site_shares", "100", "2", "1", NULL };
	struct shim_run r;
	struct truth tr;
	run_ok(&r, argv, env);
	parse_truth(r.out, &tr);
	cr_assert_eq(tr.n, 2);
	/* stdout order: the parent's line comes first or second */
	for (int i = 0; i < 2; i++) {
		struct mt_record rec;
		struct sums s;
		int child = tr.pid[i] != r.pid;
		unsigned char *t = stacks_load(&r, tr.pid[i], child ? 1 : 0);
		memset(&s, 0, sizeof s);
		cr_assert_not_null(t, "pid %d", (int)tr.pid[i]);
		shim_record(&r, tr.pid[i], child ? 1 : 0, &rec);
		sum_peak(t, rec.heap_peak, &s);
		for (int k = 0; k < 3; k++)
			cr_expect_eq(s.bytes[k], tr.bytes[i][k]);
		free(t);
		if (child)
			cr_expect_null(stacks_load(&r, tr.pid[i], 0), "the pre-exec image");
	}
	shim_done(&r);
}

/* A fork child holds what its parent had sampled: its table starts as a
 * copy (MT_STACKS_FLAG_INHERITED), and its peak is both shares. */
Test(shim_stacks, fork_child_inherits_the_sampled_set, .timeout = 120)
{
	const char *env[] = { "MEMTRACE_SAMPLE_BYTES=1", NULL };
	const char *argv[] = { "site_shares", "100", "2", "2", NULL };
	struct shim_run r;
	struct truth tr;
	int parent = -1, child = -1;
	run_ok(&r, argv, env);
	parse_truth(r.out, &tr);
	cr_assert_eq(tr.n, 2);
	for (int i = 0; i < 2; i++)
		*(tr.pid[i] == r.pid ? &parent : &child) = i;
	cr_assert(parent >= 0 && child >= 0);
	struct mt_record rec;
	struct sums s;
	unsigned char *t = stacks_load(&r, tr.pid[child], 0);
	cr_assert_not_null(t);
	const struct mt_stacks_header *h = (const void *)t;
	cr_expect(h->flags & MT_STACKS_FLAG_INHERITED);
	memset(&s, 0, sizeof s);
	shim_record(&r, tr.pid[child], 0, &rec);
	sum_peak(t, rec.heap_peak, &s);
	for (int k = 0; k < 3; k++)
		cr_expect_eq(s.bytes[k], tr.bytes[parent][k] + tr.bytes[child][k], "%s",
			     site_names[k]);
	free(t);
	shim_done(&r);
}

Test(shim_stacks, standalone_summary_names_the_sites, .timeout = 60)
{
	const char *argv[] = { "site_shares", "60", "1", NULL };
	const char *quiet[] = { "MEMTRACE_QUIET=1", NULL };
	const char *off[] = { "MEMTRACE_SAMPLE_BYTES=0", NULL };
	struct shim_run r;
	shim_run(&r, argv, NULL, SHIM_NO_DIR);
	cr_assert_eq(r.status, 0);
	cr_expect_not_null(strstr(r.err, "memtrace:   heap by call site, at the heap peak (sampled "
					 "every 524.2 kB on average): "),
			   "%s", r.err);
	cr_expect_not_null(strstr(r.err, "  hold_half < shares_take < main"), "%s", r.err);
	cr_expect_not_null(strstr(r.err, "  hold_three_tenths < shares_take < main"), "%s", r.err);
	cr_expect_not_null(strstr(r.err, "  hold_fifth < shares_take < main"), "%s", r.err);
	shim_done(&r);
	shim_run(&r, argv, quiet, SHIM_NO_DIR);
	cr_expect_str_eq(r.err, "");
	shim_done(&r);
	shim_run(&r, argv, off, SHIM_NO_DIR);
	cr_expect_not_null(strstr(r.err, "memtrace:   calls"));
	cr_expect_null(strstr(r.err, "call site"), "%s", r.err);
	shim_done(&r);
}

/* Mapped memory (stacks.h, "Mapped memory"): map_sites's own anonymous
 * mappings are sites of their own kind in the standalone summary, "[mmap]"
 * before the frames, at the image's heap+mmap peak; with every mapping
 * sampled each function's line is its mapped length (map_sites 20: 12, 6,
 * 2 MB in pieces, 3 MB grown by mremap, 2 MB left of a region cut twice). */
Test(shim_stacks, standalone_summary_names_mapping_sites, .timeout = 60)
{
	const char *argv[] = { "map_sites", "20", NULL };
	const char *every[] = { "MEMTRACE_SAMPLE_BYTES=1", NULL };
	struct shim_run r;
	shim_run(&r, argv, every, SHIM_NO_DIR);
	cr_assert_eq(r.status, 0, "%s", r.err);
	cr_expect_not_null(strstr(r.err, "memtrace:   heap and mappings by call site, at the "
					 "heap+mmap peak (every block sampled): "),
			   "%s", r.err);
	cr_expect_not_null(strstr(r.err, "  [mmap] hold_sixty < main"), "%s", r.err);
	cr_expect_not_null(strstr(r.err, "  [mmap] hold_grown < main"), "%s", r.err);
	cr_expect_not_null(strstr(r.err, "  [mmap] hold_partial < main"), "%s", r.err);
	cr_expect_null(strstr(r.err, "drop_early"), "unmapped before the peak: %s", r.err);
	/* the heap block is no mapping */
	cr_expect_null(strstr(r.err, "[mmap] main"), "%s", r.err);
	shim_done(&r);
}

/* A standalone tree's table (two images): the listed images' sites, each
 * at its own peak, in the same summary; the tree's directory, with its
 * stacks files, removed. */
Test(shim_stacks, standalone_tree_table_has_the_sites, .timeout = 60)
{
	const char *argv[] = { "site_shares", "100", "2", NULL };
	char dir[] = "/tmp/mtsites.XXXXXX", tmpdir[64];
	struct shim_run r;
	cr_assert_not_null(mkdtemp(dir));
	tmp_adopt(dir);
	snprintf(tmpdir, sizeof tmpdir, "TMPDIR=%s", dir);
	const char *env[] = { "MEMTRACE_SAMPLE_BYTES=1", tmpdir, NULL };
	shim_run(&r, argv, env, SHIM_NO_DIR);
	cr_assert_eq(r.status, 0, "%s", r.err);
	cr_expect_not_null(strstr(r.err, "memtrace: 2 images in 2 processes"), "%s", r.err);
	cr_expect_not_null(strstr(r.err, "memtrace:   heap by call site, each image above at its "
					 "own heap peak (every block sampled): "),
			   "%s", r.err);
	cr_expect_not_null(strstr(r.err, "hold_half < shares_take < main"), "%s", r.err);
	cr_expect_not_null(strstr(r.err, "hold_half < shares_take < shares_child < main"), "%s",
			   r.err);
	cr_expect_not_null(strstr(r.err, "hold_fifth < shares_take < shares_child < main"), "%s",
			   r.err);
	cr_expect_eq(rmdir(dir), 0, "the tree's directory was not removed: %s", strerror(errno));
	shim_done(&r);
}

Test(shim_stacks, sampling_off_leaves_no_table, .timeout = 60)
{
	const char *env[] = { "MEMTRACE_SAMPLE_BYTES=0", NULL };
	const char *argv[] = { "site_shares", "60", "2", NULL };
	struct shim_run r;
	struct truth tr;
	run_ok(&r, argv, env);
	parse_truth(r.out, &tr);
	for (int i = 0; i < tr.n; i++) {
		struct mt_record rec;
		shim_record(&r, tr.pid[i], 0, &rec);
		cr_expect_null(stacks_load(&r, tr.pid[i], 0));
		cr_expect_eq(rec.stacks_changes, 0, "no stacks file, no change to read");
	}
	shim_done(&r);
}

/* A file-size limit the stacks file cannot grow past (its stack table
 * starts 528 KiB into the file): the program runs as it would bare; below
 * the table's start there is no stacks file, above it a valid one that
 * filled up (later stacks in the catch-all). */
Test(shim_stacks, file_size_limit_never_kills, .timeout = 120)
{
	const char *env[] = { "MEMTRACE_SAMPLE_BYTES=1", NULL };
	const char *py = "import json; print(len(json.dumps([str(i) * (i % 7) for i in "
			 "range(20000)])))";
	char script[256], bare[64];
	struct shim_run r;
	snprintf(script, sizeof script, "exec python3 -c '%s'", py);
	const char *plain[] = { "/bin/sh", "-c", script, NULL };
	shim_run(&r, plain, NULL, SHIM_NO_PRELOAD);
	cr_assert_eq(r.status, 0);
	snprintf(bare, sizeof bare, "%s", r.out);
	shim_done(&r);
	for (int kb = 12; kb <= 560; kb += 548) {
		snprintf(script, sizeof script, "ulimit -f %d; exec python3 -c '%s'", kb, py);
		const char *argv[] = { "/bin/bash", "-c", script, NULL };
		struct mt_record *recs;
		size_t n, big = 0;
		run_ok(&r, argv, env);
		cr_expect_str_eq(r.out, bare, "limit %d KiB", kb);
		/* bash, then whatever python3 is on PATH (maybe a wrapper), the
		 * real interpreter last: the image with the largest heap */
		n = shim_records(&r, &recs);
		for (size_t i = 0; i < n; i++) {
			free(stacks_load(&r, recs[i].pid, recs[i].gen)); /* valid if any */
			if (recs[i].heap_peak > recs[big].heap_peak)
				big = i;
		}
		unsigned char *t = stacks_load(&r, recs[big].pid, recs[big].gen);
		if (kb == 12) {
			cr_expect_null(t);
		} else {
			const struct mt_stacks_header *h = (const void *)t;
			cr_assert_not_null(t);
			cr_expect(h->flags & MT_STACKS_FLAG_FILE_FULL);
			cr_expect_gt(h->catchall_samples, 0);
			cr_expect_eq(h->state, MT_STACKS_FINISHED);
		}
		free(t);
		free(recs);
		shim_done(&r);
	}
}

/* Threads, fork, exec and signal handlers that allocate, with every block
 * sampled (every path of sites.c, the queue included), then at a small
 * interval: the program's own checks hold and it exits 0. */
Test(shim_stacks, stress_with_every_block_sampled, .timeout = 300)
{
	const char *rates[] = { "MEMTRACE_SAMPLE_BYTES=1", "MEMTRACE_SAMPLE_BYTES=4096" };
	guard_require();
	for (int i = 0; i < 2; i++) {
		const char *env[] = { rates[i], NULL };
		const char *argv[] = { "x_stress", "3", "5000", "8", NULL };
		struct shim_run r;
		run_ok(&r, argv, env);
		cr_expect_not_null(strstr(r.out, ": ok\n"), "%s: %s %s", rates[i], r.out, r.err);
		shim_done(&r);
	}
}
