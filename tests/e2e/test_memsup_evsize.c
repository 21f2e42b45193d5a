/* test_memsup_evsize.c: what a run of many short images leaves behind.
 *
 * 2,000 runs of /bin/true under memsup, traced, sampled at the default
 * interval.  The target is 1 KiB of evidence an image.  Two parts of it
 * grow with different things: processes.json, records.fold, stacks.fold
 * and the rest with the images; timeline.jsonl, rss.jsonl and timeline.svg
 * with the samples, that is with the wall time, which a loaded machine
 * stretches (about 300 bytes a sample; 2,000 /bin/true took 1 s to 30 s
 * here, so from 15 to 500 bytes an image).  The first part is held to
 * 700 bytes an image, which leaves the per-sample files 324; before
 * processes.json left out its defaults it was 1,290 (processes.json 1,150
 * a line, records.fold 136).  The whole is printed, not judged. */
#include <criterion/criterion.h>
#include <dirent.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "test_guard.h"
#include "test_memsup_util.h"

#define IMAGES 2000

/* Apparent bytes below dir, as du -sb counts them (directories too); the
 * per-sample files apart. */
static void size_below(const char *dir, long long *all, long long *per_sample)
{
	struct stat st;
	DIR *d = opendir(dir);
	cr_assert_not_null(d, "%s", dir);
	cr_assert_eq(stat(dir, &st), 0);
	*all += st.st_size;
	for (struct dirent *e; (e = readdir(d));) {
		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		char path[2 * PATH_MAX];
		snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
		cr_assert_eq(lstat(path, &st), 0, "%s", path);
		if (S_ISDIR(st.st_mode)) {
			size_below(path, all, per_sample);
			continue;
		}
		*all += st.st_size;
		if (!strcmp(e->d_name, "timeline.jsonl") || !strcmp(e->d_name, "rss.jsonl") ||
		    !strcmp(e->d_name, "timeline.svg"))
			*per_sample += st.st_size;
	}
	closedir(d);
}

/* Lines of processes.json but its "[" and "]": one an image. */
static long long images_of(const char *dir)
{
	char path[PATH_MAX + 32];
	snprintf(path, sizeof path, "%s/processes.json", dir);
	FILE *f = fopen(path, "r");
	cr_assert_not_null(f, "%s", path);
	long long n = 0;
	for (int c; (c = getc(f)) != EOF;)
		n += c == '\n';
	fclose(f);
	return n - 2;
}

Test(memsup_evsize, true_images_leave_under_1kib_each, .timeout = 900)
{
	guard_require();
	struct sup_run r;
	char loop[128];
	snprintf(loop, sizeof loop, "i=0; while [ $i -lt %d ]; do /bin/true; i=$((i+1)); done",
		 IMAGES);
	const char *args[] = { "-q", "--", "/bin/sh", "-c", loop, NULL };
	cr_assert_eq(memsup_run(&r, args), 0, "memsup: %s", r.err);
	long long images = images_of(r.dir), all = 0, per_sample = 0;
	/* the shell and its 2,000 /bin/true, and a fork child or two */
	cr_assert_geq(images, IMAGES + 1, "%lld images in processes.json", images);
	size_below(r.dir, &all, &per_sample);
	double per_image = (double)(all - per_sample) / (double)images;
	cr_log_info("%lld images: %lld bytes of evidence, %.0f an image; %.0f an image without "
		    "timeline.jsonl, rss.jsonl and timeline.svg (%lld bytes)",
		    images, all, (double)all / (double)images, per_image, per_sample);
	cr_expect_leq(per_image, 700.0,
		      "%.0f bytes an image in the files that grow with the images (%lld images, "
		      "%lld bytes of evidence, %lld of them per sample)",
		      per_image, images, all, per_sample);
}
