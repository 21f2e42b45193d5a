/* test_common.c: common/'s pure pieces on their edges: the image file
 * name rule (imagename.h), the digit writer (decimal.h), the bounded
 * text builder (textbuf.h) and the byte figures for people (units.h).  The
 * file checks are held to the three readers' agreement by
 * tests/python/test_readers_agree.py. */
#include <criterion/criterion.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "decimal.h"
#include "imagename.h"
#include "record.h"
#include "stacks.h"
#include "textbuf.h"
#include "units.h"

Test(imagename, format_then_parse_is_the_identity)
{
	static const struct {
		int32_t pid;
		uint32_t gen;
		const char *name;
	} cases[] = {
		{ 1, 0, "1.0.mtr" },
		{ 12, 3, "12.3.mtr" },
		{ INT32_MAX, UINT32_MAX, "2147483647.4294967295.mtr" },
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		char buf[IMAGENAME_MAX_BYTES];
		int32_t pid = 0;
		uint32_t gen = 0;
		cr_expect_eq(imagename_format(buf, sizeof buf, cases[i].pid, cases[i].gen,
					      MT_RECORD_SUFFIX),
			     (int)strlen(cases[i].name));
		cr_expect_str_eq(buf, cases[i].name);
		cr_expect_eq(imagename_parse(buf, MT_RECORD_SUFFIX, &pid, &gen), 0, "%s", buf);
		cr_expect_eq(pid, cases[i].pid);
		cr_expect_eq(gen, cases[i].gen);
	}
}

Test(imagename, one_image_one_name)
{
	static const char *const bad[] = {
		"012.0.mtr", "12.00.mtr", "12.01.mtr", "0.0.mtr", "-1.0.mtr", "+1.0.mtr",
		"2147483648.0.mtr", "1.4294967296.mtr", "1.0.mts", "1.0.mtr.tmp", "1..mtr",
		".0.mtr", "1.0", "", "1.0.MTR", "1 .0.mtr", "99999999999999999999.0.mtr",
	};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		int32_t pid = -7;
		uint32_t gen = 7;
		cr_expect_eq(imagename_parse(bad[i], MT_RECORD_SUFFIX, &pid, &gen), -1, "%s", bad[i]);
		cr_expect(pid == -7 && gen == 7, "%s: out parameters untouched", bad[i]);
	}
	int32_t pid;
	uint32_t gen;
	cr_expect_eq(imagename_parse("5.0.mts", MT_STACKS_SUFFIX, &pid, &gen), 0);
}

Test(imagename, refuses_what_does_not_fit)
{
	char buf[8] = "xxxxxxx", path[64];
	cr_expect_eq(imagename_format(buf, sizeof buf, 123456, 7, MT_RECORD_SUFFIX), -1);
	cr_expect_str_eq(buf, "", "nothing half written");
	cr_expect_eq(imagename_format(buf, sizeof buf, 0, 0, MT_RECORD_SUFFIX), -1);
	cr_expect_eq(imagename_format(buf, sizeof buf, 1, 0, MT_RECORD_SUFFIX), 7);
	cr_expect_str_eq(buf, "1.0.mtr");
	cr_expect_eq(imagename_path(path, sizeof path, "/d", 42, 1, MT_STACKS_SUFFIX), 11);
	cr_expect_str_eq(path, "/d/42.1.mts");
	cr_expect_eq(imagename_path(path, 10, "/d", 42, 1, MT_STACKS_SUFFIX), -1);
	cr_expect_str_eq(path, "");
}

Test(units, decimal_and_never_more_than_is_there)
{
	static const struct {
		uint64_t bytes;
		const char *text;
	} cases[] = {
		{ 0, "0 B" },
		{ 9999, "9999 B" },
		{ 10000, "10.0 kB" },
		{ 999999, "999.9 kB" },
		{ 1000000, "1.0 MB" },
		{ 52428800, "52.4 MB" },          /* 50 MiB */
		{ 1999999999, "1.9 GB" },        /* cut, not rounded up */
		{ 1000000000000, "1.0 TB" },
		{ 999999999999999, "999.9 TB" },
		{ UINT64_MAX, "18446744.0 TB" },
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		char buf[UNITS_BYTES_MAX];
		size_t n = units_format_bytes(buf, sizeof buf, cases[i].bytes);
		cr_expect_str_eq(buf, cases[i].text, "%llu", (unsigned long long)cases[i].bytes);
		cr_expect_eq(n, strlen(buf));
	}
	char small[5];
	cr_expect_eq(units_format_bytes(small, sizeof small, 123456789), 4);
	cr_expect_str_eq(small, "123.", "cut to the buffer, terminated");
}

/* As printf's %llu and %0*llu write them, on the edges: 0, a width below,
 * at and above the digits, UINT64_MAX's 20. */
Test(decimal, digits_and_zeros_in_front_as_printf)
{
	static const struct {
		uint64_t v;
		size_t width;
	} cases[] = {
		{ 0, 0 }, { 0, 1 }, { 0, 3 }, { 7, 3 }, { 5, 9 }, { 123, 2 }, { 123, 3 },
		{ 100000000, 9 }, { 999999999, 9 }, { UINT64_MAX, 0 }, { UINT64_MAX, 20 },
		{ UINT64_MAX, 25 },
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		char want[40], got[40];
		unsigned long long v = cases[i].v;
		int w = (int)cases[i].width;
		int n = snprintf(want, sizeof want, "%0*llu", w, v);
		memset(got, 'x', sizeof got);
		got[sizeof got - 1] = '\0';
		char *end = got + sizeof got - 1, *first = decimal_u64_back(end, cases[i].v,
									     cases[i].width);
		cr_expect_eq(end - first, n, "%llu, width %d", v, w);
		cr_expect_str_eq(first, want, "%llu, width %d", v, w);
		cr_expect_eq(first[-1], 'x', "%llu, width %d: a byte before the first", v, w);
		snprintf(want, sizeof want, "%llu", v);
		cr_expect_eq(decimal_format_u64(got, cases[i].v), strlen(want));
		cr_expect_str_eq(got, want);
	}
}

/* Every capacity from 0 to past the whole text: what is built is the
 * whole text cut as snprintf cuts it, whichever append (a literal, a
 * string, a number) meets the end, and `truncated` says whether it was. */
Test(textbuf, cut_at_every_capacity_as_snprintf_cuts)
{
	const char *whole = "[12, 18446744073709551615, x]";
	for (size_t cap = 0; cap <= strlen(whole) + 2; cap++) {
		char buf[64], want[64];
		memset(buf, '#', sizeof buf);
		struct textbuf t;
		textbuf_init(&t, buf, cap);
		textbuf_add_lit(&t, "[");
		textbuf_add_u64(&t, 12);
		textbuf_add_lit(&t, ", ");
		textbuf_add_u64(&t, UINT64_MAX);
		textbuf_add(&t, ", x");
		textbuf_add_n(&t, "]...", 1);
		snprintf(want, sizeof want, "%.*s", cap ? (int)cap - 1 : 0, whole);
		cr_expect_eq(t.len, strlen(want), "cap %zu", cap);
		cr_expect_eq(t.truncated, cap <= strlen(whole), "cap %zu", cap);
		if (cap)
			cr_expect_str_eq(buf, want, "cap %zu", cap);
		else
			cr_expect_eq(buf[0], '#', "cap 0 wrote a byte");
		cr_expect_eq(buf[cap], '#', "cap %zu: a byte past the end", cap);
	}
}
