/* test_marks.c: the marks file's reader (collect/marks.h): lines parsed
 * field by field, forged fields refused, lines cut, a last line without its
 * newline read only at the end, and reading resumed where it stopped. */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "collect/marks.h"
#include "test_tmp.h"

struct seen {
	char label[8192];
	size_t label_len;
	int cut;
	struct marks_line l;
};

struct seen_all {
	struct seen s[8];
	int n;
};

static void keep(void *ctx, const struct marks_line *l)
{
	struct seen_all *a = ctx;
	cr_assert_lt(a->n, 8);
	struct seen *s = &a->s[a->n++];
	s->l = *l;
	memcpy(s->label, l->label, l->label_len);
	s->label[l->label_len] = '\0';
	s->label_len = l->label_len;
	s->cut = l->label_cut;
}

Test(marks, fields_parsed_and_forged_ones_refused)
{
	struct marks_line l;
	const char *a = "train\tpid=42\tmaxrss_kb=1000\tmaxrss_children_kb=7\tmono_ns=123456789\r";
	marks_parse(a, strlen(a), &l);
	cr_expect_eq(l.label_len, 5);
	cr_expect_eq(memcmp(l.label, "train", 5), 0);
	cr_expect_eq(l.pid, 42);
	cr_expect_eq(l.maxrss_kb, 1000);
	cr_expect_eq(l.maxrss_children_kb, 7);
	cr_expect_eq(l.mono_ns, 123456789);
	/* no fields: the whole line (less a CR) is the label */
	marks_parse("eval phase\r", 11, &l);
	cr_expect_eq(l.label_len, 10);
	cr_expect_eq(l.pid, 0);
	cr_expect_eq(l.maxrss_kb, -1);
	cr_expect_eq(l.mono_ns, -1);
	/* forged: signs, junk, overflow, pid 0 and past int32, unknown keys */
	const char *f = "x\tpid=-3\tmaxrss_kb=12a\tmono_ns=99999999999999999999\tpid=0\tfoo=1\tpidx=5";
	marks_parse(f, strlen(f), &l);
	cr_expect_eq(l.pid, 0);
	cr_expect_eq(l.maxrss_kb, -1);
	cr_expect_eq(l.mono_ns, -1);
	const char *g = "x\tpid=2147483648\tmaxrss_children_kb=";
	marks_parse(g, strlen(g), &l);
	cr_expect_eq(l.pid, 0);
	cr_expect_eq(l.maxrss_children_kb, -1);
}

Test(marks, read_in_order_resumed_and_the_last_line_at_the_end)
{
	char dir[] = "/tmp/test_marks.XXXXXX";
	cr_assert_not_null(mkdtemp(dir));
	tmp_adopt(dir);
	int dfd = open(dir, O_RDONLY | O_DIRECTORY);
	cr_assert_geq(dfd, 0);
	struct marks_file *mf;
	cr_assert_eq(marks_open(&mf, dfd, dir), 0);
	char want_env[PATH_MAX + 32];
	snprintf(want_env, sizeof want_env, "MEMSUP_MARK=%s/marks", dir);
	cr_expect_str_eq(marks_env_entry(mf), want_env);
	/* made once: a second open finds it there */
	struct marks_file *again;
	cr_expect_eq(marks_open(&again, dfd, dir), -EEXIST);

	FILE *w = fopen(want_env + strlen("MEMSUP_MARK="), "a");
	cr_assert_not_null(w);
	fputs("one\tpid=5\ntwo\nthr", w);
	fflush(w);
	struct seen_all a = { .n = 0 };
	marks_read(mf, 0, keep, &a);
	cr_assert_eq(a.n, 2);
	cr_expect_str_eq(a.s[0].label, "one");
	cr_expect_eq(a.s[0].l.pid, 5);
	cr_expect_str_eq(a.s[1].label, "two");
	/* the rest of the third line comes later; then a line too long for
	 * the buffer, cut, with no field: its label says so */
	fputs("ee\n", w);
	for (int i = 0; i < 5000; i++)
		fputc('z', w);
	fputs("\nlast", w);
	fclose(w);
	marks_read(mf, 0, keep, &a);
	cr_assert_eq(a.n, 4);
	cr_expect_str_eq(a.s[2].label, "three");
	cr_expect_eq(a.s[2].cut, 0);
	cr_expect_eq(a.s[3].label_len, MARKS_LINE_BYTES);
	cr_expect_eq(a.s[3].cut, 1);
	/* "last" has no newline: only the end of the run reads it */
	marks_read(mf, 1, keep, &a);
	cr_assert_eq(a.n, 5);
	cr_expect_str_eq(a.s[4].label, "last");
	marks_read(mf, 1, keep, &a);
	cr_expect_eq(a.n, 5, "nothing is read twice");
	marks_close(mf);
	close(dfd);
}
