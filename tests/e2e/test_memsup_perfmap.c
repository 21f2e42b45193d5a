/* test_memsup_perfmap.c: frames in generated code named from the JIT's
 * /tmp/perf-PID.map (supervisor/analyze/perfmap.h).  The parser is driven
 * on text in memory; the end-to-end tests run tests/progs/jit_sites, whose
 * machine code calls malloc through a C function, under the real memsup,
 * and read stacks.json with python3's json (tests/py/memsup_perfmap.py);
 * the node tests run `node --perf-basic-prof` on a script whose three
 * functions hold known shares of the heap (below). */
#include <criterion/criterion.h>
#include <stdio.h>
#include <unistd.h>

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

/* ---- JavaScript frames: node --perf-basic-prof -------------------------- */

/* Three JavaScript functions keep 150, 90 and 60 buffers of 1 MiB alive
 * (50/30/20% of 300 MiB; Buffer.allocUnsafeSlow is one malloc each, never
 * touched, so the run stays small in RSS).  The shim's unwinder steps
 * V8's builtins and generated code by their frame pointers, memsup names
 * the generated code from node's /tmp/perf-PID.map; V8 writes a map line
 * for an interpreted function's code only with
 * --interpreted-frames-native-stack (else every interpreted frame is the
 * one Builtins_InterpreterEntryTrampoline), so the run gives it, as perf
 * users do. */
static const char node_script[] =
	"'use strict';\n"
	"const keep = [];\n"
	"function alpha(n) { for (let i = 0; i < n; i++) keep.push(Buffer.allocUnsafeSlow(1 << 20)); }\n"
	"function beta(n) { for (let i = 0; i < n; i++) keep.push(Buffer.allocUnsafeSlow(1 << 20)); }\n"
	"function gamma(n) { for (let i = 0; i < n; i++) keep.push(Buffer.allocUnsafeSlow(1 << 20)); }\n"
	"alpha(150);\n"
	"beta(90);\n"
	"gamma(60);\n"
	"console.log(keep.length);\n";

/* node (Debian's package names it nodejs too), or skip. */
static const char *node_or_skip(void)
{
	static char found[PATH_MAX];
	const char *path = getenv("PATH");
	static const char *const names[] = { "node", "nodejs" };
	for (int k = 0; k < 2; k++) {
		for (const char *p = path ? path : "/usr/bin:/bin"; *p;) {
			size_t len = strcspn(p, ":");
			snprintf(found, sizeof found, "%.*s/%s", (int)len, p, names[k]);
			if (len && access(found, X_OK) == 0)
				return found;
			p += len + (p[len] == ':');
		}
	}
	cr_skip_test("node is not installed (Debian: apt-get install nodejs)");
	return NULL;
}

static void node_run(const char *sample, const char *check)
{
	struct sup_run r;
	char script[PATH_MAX];
#if !defined(__x86_64__)
	cr_skip_test("the shim steps frames without unwind tables on x86-64 only");
#endif
	const char *node = node_or_skip();
	tmp_make(&r);
	snprintf(script, sizeof script, "%s/shares.js", r.tmp);
	FILE *f = fopen(script, "w");
	cr_assert_not_null(f);
	cr_assert_eq(fputs(node_script, f) >= 0 && fclose(f) == 0, 1);
	const char *args[] = { "-e", sample, "--", node, "--perf-basic-prof",
			       "--interpreted-frames-native-stack", script, NULL };
	memsup_start(&r, 1, args);
	cr_assert_eq(memsup_wait(&r), 0, "stderr: %s", r.err);
	sup_py_check(&r, "memsup_perfmap.py", check, NULL);
	sup_done(&r);
}

/* The three functions' names, from the map, with the C++ frames that
 * called into JavaScript (node::Start, V8's Execution::Call) outward of
 * them and node's allocator inward; shares within 5 points, as the C
 * call sites' are (test_shim_stacks.c): 1 MiB blocks at the default
 * 512 KiB interval leave each function's estimate about 1.5 points of
 * standard error. */
Test(memsup_nodeframes, js_shares_at_the_default_interval, .timeout = 120)
{
	node_run("MEMTRACE_SAMPLE_BYTES=524288", "js_shares_at_the_default_interval");
}

/* Every buffer sampled: at a 64 KiB interval a 1 MiB block is sampled
 * with probability 1 - exp(-16) and counts for its size, so the shares
 * are the script's within half a point (V8's own heap pages and objects
 * made under a function count for it too: 2.4 MB of the 300 MiB here).
 * Not every block (MEMTRACE_SAMPLE_BYTES=1): node makes half a million
 * allocations at its start, whose stacks fill the stacks file's table and
 * whose live blocks the shim's, and the buffers' then go uncounted. */
Test(memsup_nodeframes, js_shares_exact_with_every_buffer_sampled, .timeout = 120)
{
	node_run("MEMTRACE_SAMPLE_BYTES=65536", "js_shares_exact_with_every_buffer_sampled");
}
