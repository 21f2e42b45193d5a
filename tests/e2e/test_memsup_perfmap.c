/* test_memsup_perfmap.c: frames in generated code named from the JIT's
 * /tmp/perf-PID.map (supervisor/analyze/perfmap.h).  The parser is driven
 * on text in memory; the end-to-end tests run tests/progs/jit_sites, whose
 * machine code calls malloc through a C function, under the real memsup,
 * and read stacks.json with python3's json (tests/py/memsup_perfmap.py). */
#include <criterion/criterion.h>
#include <stdio.h>

#include "analyze/perfmap.h"
#include "test_memsup_util.h"

static void read_text(const char *text, struct perfmap *pm)
{
	FILE *f = fmemopen((void *)text, strlen(text), "r");
	cr_assert_not_null(f);
	cr_assert_eq(perfmap_read(f, pm), 0);
	fclose(f);
}

/* Hexadecimal with or without 0x, names with spaces, [start, end), bad
 * lines skipped and counted, the later line winning for an address. */
Test(perfmap, lines_and_lookups)
{
	struct perfmap pm;
	read_text("1000 100 LazyCompile:*fib /app/fib.js:3\n"
		  "0x2000 0x10 Builtin:Add\n"
		  "garbage\n"
		  "3000 0 empty\n"
		  "4000 40\n"
		  "1040 20 JS:*inner\n"
		  "zz00 10 not hex\n"
		  "1000 100 LazyCompile:*fib /app/fib.js:3 (again)\n",
		  &pm);
	cr_assert_eq(pm.n, 4);
	cr_assert_eq(pm.bad_lines, 4, "garbage, size 0, no name, not hex: %zu", pm.bad_lines);
	cr_assert_null(perfmap_find(&pm, 0xfff));
	cr_assert_str_eq(perfmap_find(&pm, 0x1000), "LazyCompile:*fib /app/fib.js:3 (again)");
	/* inside both: the later line (the inner one, 1040+20, came before
	 * the second fib line: fib again wins) */
	cr_assert_str_eq(perfmap_find(&pm, 0x1050), "LazyCompile:*fib /app/fib.js:3 (again)");
	cr_assert_str_eq(perfmap_find(&pm, 0x10ff), "LazyCompile:*fib /app/fib.js:3 (again)");
	cr_assert_null(perfmap_find(&pm, 0x1100));
	cr_assert_str_eq(perfmap_find(&pm, 0x200f), "Builtin:Add");
	cr_assert_null(perfmap_find(&pm, 0x2010));
	perfmap_free(&pm);
	/* a later, shorter line inside an earlier one wins where it is */
	read_text("1000 100 outer\n1040 20 inner\n", &pm);
	cr_assert_str_eq(perfmap_find(&pm, 0x1045), "inner");
	cr_assert_str_eq(perfmap_find(&pm, 0x1060), "outer");
	perfmap_free(&pm);
	/* nothing at all */
	read_text("", &pm);
	cr_assert_eq(pm.n, 0);
	cr_assert_null(perfmap_find(&pm, 0x1000));
	perfmap_free(&pm);
}

static void jit_run(struct sup_run *r, const char *mode, const char *check)
{
	const char *args[] = { "-e", "MEMTRACE_SAMPLE_BYTES=1", "--", prog("jit_sites"), "20", mode,
			       NULL };
	int st = memsup_run(r, args);
	if (strstr(r->out, "x86-64 only") || strstr(r->err, "x86-64 only"))
		cr_skip_test("jit_sites makes x86-64 code only");
	cr_assert_eq(st, 0, "stderr: %s", r->err);
	sup_py_check(r, "memsup_perfmap.py", check, NULL);
}

/* A frame in generated code is named by the map the program wrote, and
 * says where the name came from. */
Test(memsup_perfmap, named_by_the_perf_map, .timeout = 60)
{
	struct sup_run r;
	jit_run(&r, "fresh", "named_by_the_perf_map");
}

/* A map older than the process (an earlier process of the same pid left
 * it) names nothing. */
Test(memsup_perfmap, stale_map_names_nothing, .timeout = 60)
{
	struct sup_run r;
	jit_run(&r, "stale", "stale_map_names_nothing");
}
