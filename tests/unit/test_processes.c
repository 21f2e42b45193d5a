/* test_processes.c: processes.json written lean and whole, read the same.
 *
 * memsup writes processes.json in its lean form, without the keys whose
 * value is their default; processes_fill (the one reader, processes.h)
 * puts them back.  Here made-up merged runs, every branch of the writer
 * and random figures (0 or not, each on its own), are written both ways:
 * the lean file read through processes_read_each must be, image by image
 * and key by key, the whole file as it stands; the whole file must read
 * the same through the filler (nothing added); and an evidence directory
 * written with every key by an older memsup (tests/data/processes_full)
 * must read exactly as it stands. */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "analyze/merge.h"
#include "evidence/jsonr.h"
#include "evidence/processes.h"
#include "test_py.h"

#define MAX_IMG 600

static struct image_view img[MAX_IMG];
static struct mt_marker marks[MAX_IMG][2];
static struct mt_marker_rusage mrus[MAX_IMG][2];
static uint64_t hists[MAX_IMG][MT_HIST_BUCKETS];
static struct merged_run run;
static uint64_t seed = 0x9e3779b97f4a7c15ull;

static uint64_t rnd(void)
{
	/* xorshift64: the same images on every run */
	seed ^= seed << 13;
	seed ^= seed >> 7;
	seed ^= seed << 17;
	return seed;
}

/* 0 half the time, else a small or a large figure. */
static uint64_t fig(void)
{
	uint64_t r = rnd();
	if (r & 1)
		return 0;
	return r & 2 ? (r >> 8) % 5000 : r >> 12;
}

static double secs(void)
{
	return (double)(rnd() % 100000000) / 1e6;
}

static const char argv_two[] = "/bin/true\0--x";
static const char argv_empty_arg[] = "sh\0";

/* One image with every field drawn at random, traced or not. */
static void random_image(size_t i)
{
	struct image_view *iv = &img[i];
	memset(iv, 0, sizeof *iv);
	iv->pid = 100 + (pid_t)i;
	iv->gen = rnd() % 3 == 0 ? (uint32_t)(rnd() % 3) : 0;
	iv->ppid = rnd() % 4 ? 50 : 0;
	switch (rnd() % 4) {
	case 0:
		break; /* no argv */
	case 1:
		iv->argv = argv_two;
		iv->argv_len = sizeof argv_two;
		break;
	case 2:
		iv->argv = argv_empty_arg;
		iv->argv_len = sizeof argv_empty_arg;
		break;
	default:
		iv->argv = argv_two;
		iv->argv_len = 0; /* there, but empty */
	}
	iv->exe = rnd() % 3 ? "/usr/bin/true" : NULL;
	iv->traced = rnd() % 4 != 0;
	iv->record_error = rnd() % 8 == 0 ? -EINVAL : 0;
	iv->untraced_why = (enum untraced_why)(rnd() % 6);
	iv->sampled = rnd() % 2;
	iv->first_seen_s = secs();
	iv->last_seen_s = secs();
	iv->samples_seen = (unsigned)(iv->sampled ? 1 + rnd() % 5 : rnd() % 2);
	iv->polled_peak_rss = fig();
	iv->polled_peak_at_s = secs();
	iv->polled_hwm_kb = fig();
	iv->sid = rnd() % 3 ? 50 : 0;
	iv->escaped = rnd() % 5 == 0;
	iv->leftover_killed = rnd() % 5 == 0;
	iv->have_status = rnd() % 3 == 0;
	iv->wait_status = rnd() % 2 ? (int)(rnd() % 4) << 8 : 9; /* exit(n) or SIGKILL */
	iv->at_peak = rnd() % 3 == 0;
	iv->peak_rss = fig();
	iv->peak_heap = fig();
	iv->peak_map = fig();
	iv->have_smaps = rnd() % 2;
	iv->peak_pss = fig();
	iv->peak_anon = fig();
	iv->peak_file = fig();
	iv->peak_shmem = fig();
	iv->peak_swap = fig();

	struct image_rec *r = &iv->rec;
	r->pid = iv->pid;
	r->ppid = iv->ppid;
	r->gen = iv->gen;
	r->relation = (uint32_t)(rnd() % MT_REL_COUNT);
	/* a parent that is the ppid half the time: the lean form leaves it out */
	r->parent_pid = rnd() % 2 ? iv->ppid : 77;
	r->parent_gen = (uint32_t)(rnd() % 3 == 0 ? rnd() % 4 : 0);
	r->flags = (uint32_t)(rnd() % 2 ? 0 : rnd() & 0x7ff);
	r->argc = (uint32_t)(rnd() % 4);
	r->state = (uint32_t)(rnd() % MT_STATE_COUNT);
	r->marker_count = (uint32_t)(rnd() % 3 == 0 ? 1 + rnd() % 3 : 0);
	r->start_mono_ns = fig();
	r->start_real_ns = fig();
	r->end_mono_ns = fig();
	r->heap_current = fig();
	r->heap_peak = fig();
	r->heap_peak_mono_ns = fig();
	r->heap_at_fork = fig();
	r->map_anon_at_fork = fig();
	r->heap_requested_total = fig();
	r->heap_largest_request = fig();
	for (unsigned c = 0; c < MT_CALL_COUNT; c++)
		r->calls[c] = rnd() % 4 ? 0 : fig();
	r->map_anon_current = fig();
	r->map_anon_peak = fig();
	r->map_file_current = fig();
	r->map_file_peak = fig();
	r->map_largest = fig();
	r->map_untracked_calls = fig();
	r->map_untracked_bytes = fig();
	r->total_current = fig();
	r->total_peak = fig();
	r->total_peak_mono_ns = fig();
	r->exit_code = rnd() % 2 ? 0 : (int32_t)(rnd() % 256);
	r->exit_signal = (int32_t)(rnd() % 3 ? 0 : rnd() % 32);
	r->vm_hwm_kb = fig();
	r->vm_rss_kb = fig();
	r->vm_peak_kb = fig();
	r->ru_maxrss_self_kb = fig();
	r->ru_maxrss_children_kb = fig();
	if (rnd() % 2) {
		r->hist_len = (uint32_t)(1 + rnd() % MT_HIST_BUCKETS);
		for (unsigned b = 0; b < r->hist_len; b++)
			hists[i][b] = rnd() % 3 ? 0 : fig();
		iv->hist = hists[i];
	}
	if (r->marker_count) {
		for (unsigned k = 0; k < 2; k++) {
			marks[i][k].mono_ns = fig();
			marks[i][k].heap_current = fig();
			marks[i][k].map_current = fig();
			snprintf(marks[i][k].label, sizeof marks[i][k].label, "phase %u", k);
			mrus[i][k].maxrss_self_kb = fig();
			mrus[i][k].maxrss_children_kb = fig();
		}
		if (r->marker_count > 2)
			r->marker_count = 2;
		iv->markers = marks[i];
		iv->marker_rusage = mrus[i];
	}
}

/* The same value: numbers, strings, arrays item by item, objects key by
 * key (in any order).  Where they differ, *where names the key. */
static int same(const struct jsonr_value *a, const struct jsonr_value *b, const char **where)
{
	if (a->type != b->type)
		return 0;
	switch (a->type) {
	case JSONR_NULL:
		return 1;
	case JSONR_BOOL:
		return a->boolean == b->boolean;
	case JSONR_NUMBER:
		return a->number == b->number;
	case JSONR_STRING:
		return a->len == b->len && memcmp(a->string, b->string, a->len) == 0;
	case JSONR_ARRAY:
		if (a->n != b->n)
			return 0;
		for (size_t i = 0; i < a->n; i++)
			if (!same(&a->items[i], &b->items[i], where))
				return 0;
		return 1;
	case JSONR_OBJECT:
		if (a->n != b->n) {
			*where = "(a key more on one side)";
			return 0;
		}
		for (size_t i = 0; i < a->n; i++) {
			const struct jsonr_value *o = jsonr_get(b, a->keys[i]);
			if (!o || !same(&a->items[i], o, where)) {
				*where = a->keys[i];
				return 0;
			}
		}
		return 1;
	}
	return 0;
}

/* Every image of a file, as a tree of its own: filled (processes_read_each)
 * or as the file has it (jsonr_read_file_each). */
struct images {
	struct jsonr_value *v[MAX_IMG + 16];
	size_t n;
};

static int keep_image(const struct jsonr_value *item, void *ctx)
{
	struct images *im = ctx;
	cr_assert_lt(im->n, MAX_IMG + 16);
	/* a copy, through the one member it can be put in */
	struct jsonr_value *box;
	cr_assert_eq(jsonr_parse("{}", 2, &box, NULL, 0), 0);
	cr_assert_eq(jsonr_put(box, "image", item), 0);
	im->v[im->n++] = box;
	return 0;
}

static void read_images(int dirfd, int filled, struct images *im)
{
	char err[256];
	im->n = 0;
	int rc = filled ? processes_read_each(dirfd, 64u << 20, keep_image, im, err, sizeof err)
			: jsonr_read_file_each(dirfd, "processes.json", 64u << 20, keep_image, im, err,
					       sizeof err);
	cr_assert_eq(rc, 0, "%s", err);
}

static void free_images(struct images *im)
{
	for (size_t i = 0; i < im->n; i++)
		jsonr_free(im->v[i]);
	im->n = 0;
}

static void expect_same_images(const struct images *a, const struct images *b, const char *what)
{
	cr_assert_eq(a->n, b->n, "%s: %zu images against %zu", what, a->n, b->n);
	for (size_t i = 0; i < a->n; i++) {
		const char *where = "?";
		cr_expect(same(jsonr_get(a->v[i], "image"), jsonr_get(b->v[i], "image"), &where),
			  "%s: image %zu (pid %.0f) differs at \"%s\"", what, i,
			  jsonr_num(jsonr_get(jsonr_get(a->v[i], "image"), "pid"), -1), where);
	}
}

static int make_dir(char *tmpl)
{
	cr_assert_not_null(mkdtemp(tmpl));
	int fd = open(tmpl, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	cr_assert_geq(fd, 0);
	return fd;
}

static void remove_dir(int fd, const char *path)
{
	unlinkat(fd, "processes.json", 0);
	close(fd);
	rmdir(path);
}

static off_t size_of(int dirfd)
{
	struct stat st;
	cr_assert_eq(fstatat(dirfd, "processes.json", &st, 0), 0);
	return st.st_size;
}

Test(processes, lean_reads_as_whole, .timeout = 30)
{
	/* names as long as each other: report pads its column to them */
	char lean_dir[] = "/tmp/mt_procs_lean_XXXXXX", all_dir[] = "/tmp/mt_procs_full_XXXXXX";
	memset(&run, 0, sizeof run);
	for (size_t i = 0; i < MAX_IMG; i++)
		random_image(i);
	run.images = img;
	run.n_images = MAX_IMG;
	run.start_mono_ns = 1000;
	int lean = make_dir(lean_dir), all = make_dir(all_dir);
	cr_assert_eq(processes_write_form(lean, &run, PROCESSES_LEAN), 0);
	cr_assert_eq(processes_write_form(all, &run, PROCESSES_ALL), 0);

	struct images a, b;
	read_images(lean, 1, &a);
	read_images(all, 0, &b);
	expect_same_images(&a, &b, "lean, filled, against whole as written");
	free_images(&a);
	/* the whole form has every key already: the filler adds nothing */
	read_images(all, 1, &a);
	expect_same_images(&a, &b, "whole, filled, against whole as written");
	free_images(&a);
	free_images(&b);
	cr_expect_lt(size_of(lean), size_of(all), "the lean form is no smaller");

	/* memsup.py's reader, and report, diff and plot through memsup */
	const char *data = getenv("MT_DATA");
	cr_assert_not_null(data, "MT_DATA unset");
	char cmd[8192], out[8192];
	snprintf(cmd, sizeof cmd, "python3 %s %s %s %s/processes_full/resources.json 2>&1",
		 py_script("processes_forms.py"), lean_dir, all_dir, data);
	int st = py_output(cmd, out, sizeof out);
	cr_expect_eq(st, 0, "%s", out);
	for (const char *const *f = (const char *const[]){ "resources.json", "timeline.svg", NULL }; *f;
	     f++) {
		unlinkat(lean, *f, 0);
		unlinkat(all, *f, 0);
	}
	remove_dir(lean, lean_dir);
	remove_dir(all, all_dir);
}

/* A /bin/true image as a loop of them leaves it: traced, ended, sampled
 * or not; its line must fit the 1 KiB an image the evidence may take,
 * with room for the rest of the evidence (records.fold, the timeline). */
Test(processes, true_image_is_short, .timeout = 10)
{
	char dir[] = "/tmp/mt_procs_true_XXXXXX";
	static const char argv[] = "/bin/true";
	memset(&run, 0, sizeof run);
	for (size_t i = 0; i < 2; i++) {
		struct image_view *iv = &img[i];
		memset(iv, 0, sizeof *iv);
		iv->pid = 32760 + (pid_t)i;
		iv->ppid = 7036;
		iv->argv = argv;
		iv->argv_len = sizeof argv;
		iv->exe = "/usr/bin/true";
		iv->traced = 1;
		iv->rec = (struct image_rec){
			.pid = iv->pid, .ppid = 7036, .parent_pid = 7036, .relation = MT_REL_VFORK,
			.argc = 1, .state = MT_STATE_EXITED,
			.start_real_ns = 1796678764171416752ull, .start_mono_ns = 25477783716218ull,
			.end_mono_ns = 25477793634201ull, .vm_hwm_kb = 1352, .vm_rss_kb = 1352,
			.vm_peak_kb = 9676, .ru_maxrss_self_kb = 2532,
		};
		iv->sampled = i == 1;
		iv->first_seen_s = 159.840735;
		iv->last_seen_s = 159.848003;
		iv->samples_seen = i == 1 ? 2 : 0;
		iv->polled_peak_rss = 1368064;
		iv->polled_peak_at_s = 159.848003;
		iv->sid = i == 1 ? 7036 : 0;
	}
	run.images = img;
	run.n_images = 2;
	run.start_mono_ns = 25477783716218ull - 159844216000ull;
	int fd = make_dir(dir);
	cr_assert_eq(processes_write(fd, &run), 0);
	off_t n = size_of(fd);
	/* 2,300 bytes for the two in the whole form (1,150 a line), 890 lean */
	cr_expect_leq(n, 900, "processes.json of two /bin/true images: %lld bytes", (long long)n);
	remove_dir(fd, dir);
}

/* What an older memsup wrote, every key there: read as it stands. */
Test(processes, old_evidence_reads_as_written, .timeout = 10)
{
	const char *data = getenv("MT_DATA");
	cr_assert_not_null(data, "MT_DATA unset");
	char path[4096];
	snprintf(path, sizeof path, "%s/processes_full", data);
	int fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	cr_assert_geq(fd, 0, "%s", path);
	struct images a, b;
	read_images(fd, 1, &a);
	read_images(fd, 0, &b);
	cr_assert_geq(a.n, 10);
	expect_same_images(&a, &b, "older evidence, filled, against as written");
	free_images(&a);
	free_images(&b);
	close(fd);
}
