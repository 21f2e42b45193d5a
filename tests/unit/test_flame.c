/* test_flame.c: flame.svg and flame.folded from a stacks.json made here
 * (view/flame.h): the tree merged by name, the folded lines exactly, a
 * picture that is the same bytes every time and escapes what it shows. */
#include <criterion/criterion.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "view/flame.h"

static char dir[64];
static int dfd = -1;

/* Two processes; pid 10 has two sites under main (one through f, one
 * through g) and one with no stack; pid 20 has one site whose innermost
 * frame has a name to escape and one frame without a name.  The images
 * are listed out of order, with a second image of pid 10 that has no
 * site: each site's process is named from its own (pid, gen). */
static const char doc[] =
	"{\"version\": 1, \"sample_bytes\": 1,\n"
	" \"tree\": {\"heap_peak\": {\"at_s\": 1.5, \"traced_heap\": 1000, \"rss\": 5000,\n"
	"   \"estimated_bytes\": 1000, \"se_bytes\": 0, \"samples\": 4, \"sites\": [\n"
	"    {\"pid\": 10, \"gen\": 0, \"frames\": [0, 2], \"bytes\": 500, \"samples\": 1},\n"
	"    {\"pid\": 10, \"gen\": 0, \"frames\": [1, 2], \"bytes\": 200, \"samples\": 1},\n"
	"    {\"pid\": 10, \"gen\": 0, \"frames\": [], \"bytes\": 50, \"samples\": 1, \"catchall\": true},\n"
	"    {\"pid\": 20, \"gen\": 1, \"frames\": [3, 4, 2], \"bytes\": 250, \"samples\": 1}]},\n"
	"  \"rss_peak\": null},\n"
	" \"images\": [{\"pid\": 20, \"gen\": 1, \"command\": \"cc1 x.c\"},\n"
	"              {\"pid\": 10, \"gen\": 1, \"command\": \"sh -c x\"},\n"
	"              {\"pid\": 10, \"gen\": 0, \"command\": \"make -j2\"}],\n"
	" \"frames\": [\n"
	"  {\"module\": 0, \"offset\": 16, \"file_offset\": 16, \"function\": \"f\"},\n"
	"  {\"module\": 0, \"offset\": 32, \"file_offset\": 32, \"function\": \"g\"},\n"
	"  {\"module\": 0, \"offset\": 48, \"file_offset\": 48, \"function\": \"main\"},\n"
	"  {\"module\": 1, \"offset\": 64, \"file_offset\": 64, \"function\": \"a<b>&c;d\"},\n"
	"  {\"module\": 1, \"offset\": 4660, \"file_offset\": 4660, \"function\": null}],\n"
	" \"modules\": [{\"path\": \"/bin/make\", \"build_id\": null, \"symbols\": \"named\"},\n"
	"              {\"path\": \"/usr/lib/cc1\", \"build_id\": null, \"symbols\": \"named\"}]}\n";

static void setup(void)
{
	snprintf(dir, sizeof dir, "/tmp/mtflame.XXXXXX");
	cr_assert_not_null(mkdtemp(dir));
	dfd = open(dir, O_RDONLY | O_DIRECTORY);
	int fd = openat(dfd, "stacks.json", O_WRONLY | O_CREAT | O_TRUNC, 0644);
	cr_assert_eq(write(fd, doc, sizeof doc - 1), (ssize_t)(sizeof doc - 1));
	close(fd);
}

static void teardown(void)
{
	char cmd[96];
	close(dfd);
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
	if (system(cmd) != 0)
		cr_log_warn("could not remove %s", dir);
}

TestSuite(flame, .init = setup, .fini = teardown);

/* This document has no total_peak (a memsup before it): the default
 * moment is its heap peak, as it was. */
Test(flame, tree_by_name)
{
	struct flame f;
	char err[256];
	cr_assert_eq(flame_load(dfd, FLAME_AT_TOTAL, &f, err, sizeof err), 0, "%s", err);
	cr_expect(f.at_heap_instead);
	cr_expect(f.have);
	cr_expect_eq(f.nodes[0].bytes, 1000);
	/* largest first: pid 10 (750) before pid 20 (250) */
	const struct flame_node *p10 = &f.nodes[f.nodes[0].first];
	cr_expect_str_eq(p10->name, "pid 10 make -j2");
	cr_expect_eq(p10->bytes, 750);
	const struct flame_node *main10 = &f.nodes[p10->first];
	cr_expect_str_eq(main10->name, "main", "one main for both of its sites");
	cr_expect_eq(main10->bytes, 700);
	cr_expect_eq(f.max_depth, 4);
	flame_free(&f);
}

Test(flame, folded_lines)
{
	struct flame f;
	struct svg_buf b = { 0 };
	cr_assert_eq(flame_load(dfd, 0, &f, NULL, 0), 0);
	cr_assert_eq(flame_folded(&f, &b), 0);
	cr_expect_str_eq(b.p, "pid 10 make -j2;main;f 500\n"
			      "pid 10 make -j2;main;g 200\n"
			      "pid 10 make -j2;[no stack: table full] 50\n"
			      "pid 20 cc1 x.c;main;cc1+0x1234;a<b>&c:d 250\n");
	svg_buf_free(&b);
	flame_free(&f);
}

Test(flame, picture_is_deterministic_and_escaped)
{
	struct flame f;
	struct svg_buf a = { 0 }, b = { 0 };
	cr_assert_eq(flame_load(dfd, 0, &f, NULL, 0), 0);
	cr_assert_eq(flame_render(&f, 800, &a), 0);
	cr_assert_eq(flame_render(&f, 800, &b), 0);
	cr_expect_str_eq(a.p, b.p);
	cr_expect_not_null(strstr(a.p, "width=\"800\""));
	cr_expect_not_null(strstr(a.p, "Heap by call site at the tree&apos;s heap peak"));
	cr_expect_not_null(strstr(a.p, "every block sampled"));
	cr_expect_not_null(strstr(a.p, "a&lt;b&gt;&amp;c;d"));
	cr_expect_null(strstr(a.p, "a<b>"));
	cr_expect_not_null(strstr(a.p, "<title>pid 10 make -j2\n"), "hover titles");
	svg_buf_free(&a);
	svg_buf_free(&b);
	flame_free(&f);
}

/* The RSS peak of this document is null: an honest empty picture. */
Test(flame, a_moment_without_samples)
{
	struct flame f;
	struct svg_buf b = { 0 }, fold = { 0 };
	cr_assert_eq(flame_load(dfd, FLAME_AT_RSS, &f, NULL, 0), 0);
	cr_expect(!f.have);
	cr_assert_eq(flame_render(&f, 0, &b), 0);
	cr_expect_not_null(strstr(b.p, "no sample of the tree was taken"));
	cr_assert_eq(flame_folded(&f, &fold), 0);
	cr_expect_eq(fold.len, 0);
	svg_buf_free(&b);
	svg_buf_free(&fold);
	flame_free(&f);
}

Test(flame, write_dir_and_errors)
{
	char err[256];
	cr_assert_eq(flame_write_dir(dfd, dir, err, sizeof err), 0, "%s", err);
	cr_expect_eq(faccessat(dfd, "flame.svg", R_OK, 0), 0);
	cr_expect_eq(faccessat(dfd, "flame.folded", R_OK, 0), 0);
	cr_expect_neq(faccessat(dfd, "flame.svg.tmp", F_OK, 0), 0);
	unlinkat(dfd, "stacks.json", 0);
	cr_expect_lt(flame_write_dir(dfd, dir, err, sizeof err), 0);
	cr_expect_not_null(strstr(err, "stacks.json"), "%s", err);
}

/* A stacks.json with the peak of heap plus mappings: that is the default
 * moment, its traced_total the figure, and a site marked inherited (held
 * by a fork child, counted in its parent) is not drawn; --at heap still
 * draws the heap peak. */
static const char doc_total[] =
	"{\"version\": 1, \"sample_bytes\": 1,\n"
	" \"tree\": {\"total_peak\": {\"at_s\": 2.0, \"traced_total\": 900, \"rss\": 5000,\n"
	"   \"estimated_bytes\": 900, \"se_bytes\": 0, \"samples\": 3, \"inherited_bytes\": 600,\n"
	"   \"sites\": [\n"
	"    {\"pid\": 1, \"gen\": 0, \"frames\": [0], \"bytes\": 600, \"samples\": 1, \"kind\": \"mmap\"},\n"
	"    {\"pid\": 2, \"gen\": 0, \"frames\": [0], \"bytes\": 600, \"samples\": 1, \"kind\": \"mmap\",\n"
	"     \"inherited\": true},\n"
	"    {\"pid\": 2, \"gen\": 0, \"frames\": [1], \"bytes\": 300, \"samples\": 1, \"kind\": \"heap\"}]},\n"
	"  \"heap_peak\": {\"at_s\": 1.0, \"traced_heap\": 50, \"rss\": 100,\n"
	"   \"estimated_bytes\": 50, \"se_bytes\": 0, \"samples\": 1, \"sites\": [\n"
	"    {\"pid\": 1, \"gen\": 0, \"frames\": [1], \"bytes\": 50, \"samples\": 1}]},\n"
	"  \"rss_peak\": null},\n"
	" \"images\": [{\"pid\": 1, \"gen\": 0, \"command\": \"parent\"},\n"
	"              {\"pid\": 2, \"gen\": 0, \"command\": \"child\"}],\n"
	" \"frames\": [{\"module\": null, \"offset\": null, \"file_offset\": 16, \"function\": \"maps\"},\n"
	"  {\"module\": null, \"offset\": null, \"file_offset\": 32, \"function\": \"grows\"}],\n"
	" \"modules\": []}\n";

Test(flame, total_peak_by_default_inherited_left_out)
{
	struct flame f;
	struct svg_buf b = { 0 };
	char err[256];
	int fd = openat(dfd, "stacks.json", O_WRONLY | O_CREAT | O_TRUNC, 0644);
	cr_assert_eq(write(fd, doc_total, sizeof doc_total - 1), (ssize_t)(sizeof doc_total - 1));
	close(fd);
	cr_assert_eq(flame_load(dfd, FLAME_AT_TOTAL, &f, err, sizeof err), 0, "%s", err);
	cr_expect(f.have);
	cr_expect(!f.at_heap_instead);
	cr_expect_eq(f.traced_heap, 900);
	cr_expect_eq(f.nodes[0].bytes, 900, "the inherited 600 left out");
	cr_assert_eq(flame_folded(&f, &b), 0);
	cr_expect_str_eq(b.p, "pid 1 parent;[mmap];maps 600\n"
			      "pid 2 child;grows 300\n");
	svg_buf_free(&b);
	cr_assert_eq(flame_render(&f, 0, &b), 0);
	cr_expect_not_null(strstr(b.p, "Heap and mappings by call site at the tree&apos;s peak of "
				       "heap plus mappings"), "%s", b.p);
	cr_expect_not_null(strstr(b.p, "blocks fork children inherited that another image holds too"),
			   "%s", b.p);
	svg_buf_free(&b);
	flame_free(&f);
	cr_assert_eq(flame_load(dfd, FLAME_AT_HEAP, &f, err, sizeof err), 0, "%s", err);
	cr_expect_eq(f.nodes[0].bytes, 50);
	cr_expect_eq(f.traced_heap, 50);
	flame_free(&f);
}
