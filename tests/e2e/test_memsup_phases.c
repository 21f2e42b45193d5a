/* test_memsup_phases.c: phase markers through the marks file and the shim,
 * the phases they open, and --meta, against tests/progs/phased (80 MB mapped
 * in phase "alloc", nothing in "idle", 30 MB of heap in "heap"). */
#include "test_memsup_util.h"

#include <math.h>

/* Python expressions over the record `d` (resources.json), evaluated by one
 * python3 run (a real JSON parser, and one start-up for the whole test):
 * rec_eval() queues, rec_eval_run() evaluates, then each result is read by
 * its index: str() of the value, one line each (so no value may hold a
 * newline: use repr() in the expression where one could). */
#define EVAL_MAX 32
struct evals {
	const char *expr[EVAL_MAX];
	char val[EVAL_MAX][1024];
	size_t n;
};

static size_t rec_eval(struct evals *e, const char *expr)
{
	cr_assert_lt(e->n, EVAL_MAX);
	e->expr[e->n] = expr;
	return e->n++;
}

static void rec_eval_run(const struct sup_run *r, struct evals *e)
{
	static char text[EVAL_MAX * 600];
	char cmd[PATH_MAX + 300], path[PATH_MAX + 32];
	size_t len = 0;
	for (size_t i = 0; i < e->n; i++)
		len += (size_t)snprintf(text + len, sizeof text - len, "%s\n", e->expr[i]);
	cr_assert_lt(len, sizeof text);
	setenv("MT_EXPRS", text, 1);
	snprintf(path, sizeof path, "%s/resources.json", r->dir);
	snprintf(cmd, sizeof cmd,
		 "python3 -c 'import json,os,sys; d=json.load(open(sys.argv[1]))\n"
		 "for x in os.environ[\"MT_EXPRS\"].splitlines(): print(str(eval(x)))' '%s'",
		 path);
	FILE *f = popen(cmd, "r");
	cr_assert_not_null(f);
	char line[1000];
	for (size_t i = 0; i < e->n; i++) {
		cr_assert_not_null(fgets(line, sizeof line, f), "no value for %s", e->expr[i]);
		line[strcspn(line, "\n")] = '\0';
		snprintf(e->val[i], sizeof e->val[i], "%s", line);
	}
	cr_assert_eq(pclose(f), 0, "python3 could not evaluate the expressions");
}

static double num(const struct evals *e, size_t i)
{
	char *end;
	double d = strtod(e->val[i], &end);
	cr_assert(end != e->val[i], "%s is not a number: '%s'", e->expr[i], e->val[i]);
	return d;
}

#define STR_IS(e, i, want) \
	cr_expect_str_eq((e)->val[i], want, "%s", (e)->expr[i])

#define PHASE(label, key) "[p['" key "'] for p in d['phases'] if p['label'] == '" label "'][0]"
#define MARK(label, key) "[m['" key "'] for m in d['markers'] if m['label'] == '" label "'][0]"

Test(memsup_phases, both_channels_and_per_phase_peaks, .timeout = 120)
{
	struct sup_run r;
	struct evals e = { .n = 0 };
	const char *args[] = { "-q", "--", prog("phased"), "80", "30", NULL };
	cr_assert_eq(memsup_run(&r, args), 0, "memsup failed: %s", r.err);
	rec_load(&r);

	size_t labels = rec_eval(&e, "[m['label'] for m in d['markers']]");
	size_t sources = rec_eval(&e, "[m['source'] for m in d['markers']]");
	size_t phases = rec_eval(&e, "[p['label'] for p in d['phases']]");
	size_t dropped = rec_eval(&e, "d['markers_dropped']");
	size_t tiled = rec_eval(&e, "all(a['end_s'] == b['start_s'] for a, b in "
				    "zip(d['phases'], d['phases'][1:]))");
	size_t last_end = rec_eval(&e, "abs(d['phases'][-1]['end_s'] - d['wall_s']) < 0.01");
	size_t alloc = rec_eval(&e, PHASE("alloc", "peak_tree_rss"));
	size_t idle = rec_eval(&e, PHASE("idle", "peak_tree_rss"));
	size_t heap = rec_eval(&e, PHASE("heap", "peak_tree_rss"));
	size_t heap_heap = rec_eval(&e, PHASE("heap", "peak_heap"));
	size_t alloc_heap = rec_eval(&e, PHASE("alloc", "peak_heap"));
	size_t source = rec_eval(&e, PHASE("alloc", "peak_source"));
	size_t alloc_pid = rec_eval(&e, MARK("alloc", "pid"));
	size_t alloc_maxrss = rec_eval(&e, MARK("alloc", "snapshot") "['maxrss_kb']");
	size_t idle_pid = rec_eval(&e, MARK("idle", "pid"));
	size_t idle_maxrss = rec_eval(&e, MARK("idle", "snapshot") "['maxrss_kb']");
	size_t idle_hwm = rec_eval(&e, MARK("idle", "snapshot") "['vm_hwm_kb']");
	size_t idle_rss = rec_eval(&e, MARK("idle", "snapshot") "['vm_rss_kb']");
	size_t idle_heapcur = rec_eval(&e, MARK("idle", "snapshot") "['heap_current']");
	size_t heap_pid = rec_eval(&e, MARK("heap", "pid"));
	size_t heap_tree = rec_eval(&e, MARK("heap", "tree_rss"));
	rec_eval_run(&r, &e);

	/* three markers in order, the shim's one when traced */
	STR_IS(&e, labels, "['alloc', 'idle', 'heap']");
	STR_IS(&e, sources, "['file', 'shim', 'file']");
	STR_IS(&e, phases, "['(start)', 'alloc', 'idle', 'heap']");
	STR_IS(&e, dropped, "0");
	/* the phases tile the run: each ends where the next starts, the last
	 * at wall_s */
	STR_IS(&e, tiled, "True");
	STR_IS(&e, last_end, "True");

	/* per-phase peaks from the samples: 80 MB (rounded up to 2 MiB) held
	 * in "alloc" and unmapped before "idle" is marked */
	cr_expect_geq(num(&e, alloc), 80e6, "alloc phase peak %.0f", num(&e, alloc));
	cr_expect_leq(num(&e, alloc), 95e6, "alloc phase peak %.0f", num(&e, alloc));
	cr_expect_lt(num(&e, idle), 20e6, "idle phase peak %.0f (80 MB unmapped)", num(&e, idle));
	cr_expect_geq(num(&e, heap), 30e6, "heap phase peak %.0f", num(&e, heap));
	cr_expect_lt(num(&e, heap), 60e6, "heap phase peak %.0f", num(&e, heap));
	double whole = rec_num(&r, "peak_tree_rss_mb") * 1e6;
	cr_expect_lt(fabs(num(&e, alloc) - whole), 1.0,
		     "the run's peak (%.0f) is the alloc phase's (%.0f)", whole, num(&e, alloc));
	/* the traced heap: 30 MB in "heap" only */
	cr_expect_geq(num(&e, heap_heap), 30e6);
	cr_expect_lt(num(&e, alloc_heap), 1e6);
	STR_IS(&e, source, "samples");

	/* the marking process's snapshot.  "alloc": fields from the line */
	double pid = rec_num(&r, "pid");
	cr_expect_eq(num(&e, alloc_pid), pid);
	cr_expect_gt(num(&e, alloc_maxrss), 0);
	/* "idle" (shim): after the unmap, so maxrss and VmHWM hold the 80 MB
	 * while VmRSS no longer does; heap figures from the shim */
	cr_expect_eq(num(&e, idle_pid), pid);
	cr_expect_geq(num(&e, idle_maxrss), 78000);
	cr_expect_geq(num(&e, idle_hwm), 78000);
	cr_expect_lt(num(&e, idle_rss), 20000);
	cr_expect_str_neq(e.val[idle_heapcur], "None");
	/* "heap": a bare label, no pid, the tree's figures all the same */
	STR_IS(&e, heap_pid, "None");
	cr_expect_gt(num(&e, heap_tree), 0);
}

Test(memsup_phases, marks_file_without_tracing, .timeout = 120)
{
	struct sup_run r;
	struct evals e = { .n = 0 };
	/* untraced: the "idle" marker falls back to the marks file */
	const char *args[] = { "-q", "--no-trace", "--", prog("phased"), "40", "10", NULL };
	cr_assert_eq(memsup_run(&r, args), 0, "memsup failed: %s", r.err);
	rec_load(&r);
	size_t marks = rec_eval(&e, "[(m['label'], m['source']) for m in d['markers']]");
	size_t alloc = rec_eval(&e, PHASE("alloc", "peak_tree_rss"));
	size_t heap = rec_eval(&e, PHASE("heap", "peak_heap"));
	size_t maxrss = rec_eval(&e, MARK("idle", "snapshot") "['maxrss_kb']");
	rec_eval_run(&r, &e);
	STR_IS(&e, marks, "[('alloc', 'file'), ('idle', 'file'), ('heap', 'file')]");
	cr_expect_geq(num(&e, alloc), 40e6);
	STR_IS(&e, heap, "None");
	cr_expect_geq(num(&e, maxrss), 38000);
}

Test(memsup_phases, hostile_lines_and_no_markers, .timeout = 120)
{
	struct sup_run r;
	struct evals e = { .n = 0 };
	/* an empty line, a label with invalid UTF-8 and a quote plus junk
	 * fields, a 5000-byte label, mono_ns stamps from outside the run, and
	 * a last line without its newline */
	const char *script =
		"printf '\\n' >> \"$MEMSUP_MARK\"; "
		"printf 'a\"b\\377c\\tpid=zz\\tmaxrss_kb=-1\\n' >> \"$MEMSUP_MARK\"; "
		"head -c 5000 /dev/zero | tr '\\0' x >> \"$MEMSUP_MARK\"; echo >> \"$MEMSUP_MARK\"; "
		"printf 'future\\tmono_ns=999999999999999999\\n' >> \"$MEMSUP_MARK\"; "
		"printf 'past\\tmono_ns=1\\n' >> \"$MEMSUP_MARK\"; "
		"printf 'last' >> \"$MEMSUP_MARK\"";
	const char *args[] = { "-q", "--", "sh", "-c", script, NULL };
	cr_assert_eq(memsup_run(&r, args), 0, "memsup failed: %s", r.err);
	rec_load(&r);
	size_t n = rec_eval(&e, "len(d['markers'])");
	size_t empty = rec_eval(&e, "repr(d['markers'][0]['label'])");
	size_t bytes = rec_eval(&e, "os.fsencode(d['markers'][1]['label'])");
	size_t junk = rec_eval(&e, "(d['markers'][1]['pid'], "
				   "d['markers'][1]['snapshot']['maxrss_kb'])");
	size_t cut = rec_eval(&e, "(len(d['markers'][2]['label']), "
				  "d['markers'][2]['label_truncated'])");
	size_t clock = rec_eval(&e, "[(m['label'], 0 < m['t'] <= d['wall_s']) "
				    "for m in d['markers'][3:5]]");
	size_t last = rec_eval(&e, "d['markers'][5]['label']");
	rec_eval_run(&r, &e);
	STR_IS(&e, n, "6");
	STR_IS(&e, empty, "''");
	STR_IS(&e, bytes, "b'a\"b\\xffc'");
	STR_IS(&e, junk, "(None, None)");
	STR_IS(&e, cut, "(127, True)");
	/* a mono_ns outside the run is not believed: the time seen is kept */
	STR_IS(&e, clock, "[('future', True), ('past', True)]");
	STR_IS(&e, last, "last");

	/* no marker: empty lists, and the marks file exists and is empty;
	 * --meta kept in order, a value may hold '=' and spaces */
	struct sup_run q;
	const char *quiet[] = { "-q", "--meta", "lr=0.1", "--meta", "name=a b=c", "--",
				"true", NULL };
	cr_assert_eq(memsup_run(&q, quiet), 0, "memsup failed: %s", q.err);
	rec_load(&q);
	cr_expect_str_eq(rec_str(&q, "markers"), "[]");
	cr_expect_str_eq(rec_str(&q, "phases"), "[]");
	cr_expect_str_eq(rec_str(&q, "meta"), "{\"lr\": \"0.1\", \"name\": \"a b=c\"}");
	char marks[PATH_MAX + 8];
	struct stat st;
	snprintf(marks, sizeof marks, "%s/marks", q.dir);
	cr_assert_eq(stat(marks, &st), 0);
	cr_expect_eq(st.st_size, 0);
}

Test(memsup_phases, bad_meta_is_refused_before_anything, .timeout = 30)
{
	const char *bad[][3] = {
		{ "--meta", "novalue", "'novalue' is not KEY=VALUE" },
		{ "--meta", "=x", "empty KEY" },
		{ "--meta", "a\tb=1", "control character" },
	};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		struct sup_run r;
		const char *args[] = { bad[i][0], bad[i][1], "--", "true", NULL };
		cr_assert_eq(memsup_run(&r, args), 125, "%s %s", bad[i][0], bad[i][1]);
		cr_expect_not_null(strstr(r.err, bad[i][2]), "stderr: %s", r.err);
		cr_expect_not(path_exists(r.dir), "%s was created", r.dir);
	}
	struct sup_run r;
	const char *twice[] = { "--meta", "k=1", "--meta", "k=2", "--", "true", NULL };
	cr_assert_eq(memsup_run(&r, twice), 125);
	cr_expect_not_null(strstr(r.err, "KEY 'k' is given twice"), "stderr: %s", r.err);
	cr_expect_not(path_exists(r.dir));
}
