/* test_report.c: `memsup report` (report_main called directly, stdout and
 * stderr captured) over evidence directories made by the real memsup
 * ($MEMSUP) running workloads of known size (tests/progs/steady, spike),
 * over hand-broken ones, and over records given the hand-written OOM
 * kills of tests/data/oom.  CSV and JSON are read back with python3's csv,
 * shlex and json modules, not with our own code. */
#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <math.h>

#include "evidence/jsonr.h"
#include "commands.h"
#include "view/report.h"
#include "test_cgprobe.h"
#include "test_memsup_util.h"
#include "test_oom_fixtures.h"

/* report_main(args) with stdout/stderr captured into out/err. */
static int report_capture(const char *const *args, char *out, size_t outcap, char *err, size_t errcap)
{
	char *argv[64];
	int argc = 0;
	argv[argc++] = (char *)"report";
	for (int i = 0; args[i]; i++) {
		cr_assert_lt(argc, 63);
		argv[argc++] = (char *)args[i];
	}
	argv[argc] = NULL;

	FILE *fo = tmpfile(), *fe = tmpfile();
	cr_assert(fo && fe);
	fflush(stdout);
	fflush(stderr);
	int so = dup(1), se = dup(2);
	cr_assert(so >= 0 && se >= 0);
	dup2(fileno(fo), 1);
	dup2(fileno(fe), 2);
	int rc = report_main(argc, argv);
	fflush(stdout);
	fflush(stderr);
	dup2(so, 1);
	dup2(se, 2);
	close(so);
	close(se);
	size_t n = (size_t)pread(fileno(fo), out, outcap - 1, 0);
	out[n == (size_t)-1 ? 0 : n] = '\0';
	n = (size_t)pread(fileno(fe), err, errcap - 1, 0);
	err[n == (size_t)-1 ? 0 : n] = '\0';
	fclose(fo);
	fclose(fe);
	return rc;
}

/* memsup -o base/name [extra...] -- command...; the evidence dir's path. */
static const char *sweep_run(const char *base, const char *name, const char *const *args, int want)
{
	static char dirs[8][PATH_MAX];
	static int slot;
	struct sup_run r;
	char *dir = dirs[slot++ % 8];
	const char *argv[48];
	int n = 0;

	snprintf(dir, PATH_MAX, "%s/%s", base, name);
	argv[n++] = "-q";
	argv[n++] = "-o";
	argv[n++] = dir;
	for (int i = 0; args[i]; i++)
		argv[n++] = args[i];
	argv[n] = NULL;
	tmp_make(&r);
	memsup_start(&r, 0, argv);
	cr_assert_eq(memsup_wait(&r), want, "memsup %s: status %d; stderr: %s", name, r.status, r.err);
	return dir;
}

static void write_file(const char *dir, const char *name, const char *text, size_t len)
{
	char path[PATH_MAX + 64];
	snprintf(path, sizeof path, "%s/%s", dir, name);
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	cr_assert(fd >= 0, "%s: %s", path, strerror(errno));
	cr_assert_eq(write(fd, text, len), (ssize_t)len);
	close(fd);
}

static struct jsonr_value *read_json(const char *dir, const char *name)
{
	struct jsonr_value *v;
	char err[300];
	int dfd = open(dir, O_RDONLY | O_DIRECTORY);
	cr_assert(dfd >= 0);
	cr_assert_eq(jsonr_read_file(dfd, name, 1 << 26, &v, err, sizeof err), 0, "%s", err);
	close(dfd);
	return v;
}

/* python3 turns the CSV (csv module) into JSON, which we then walk: a list
 * of objects, header -> field.  It also checks that every command field
 * splits back (shlex) into the argv of that run's resources.json. */
static struct jsonr_value *csv_to_json(const char *csv_text)
{
	char path[] = "/tmp/test_report_csv.XXXXXX";
	int fd = mkstemp(path);
	cr_assert(fd >= 0);
	cr_assert_eq(write(fd, csv_text, strlen(csv_text)), (ssize_t)strlen(csv_text));
	close(fd);
	static const char script[] =
		"import csv, json, shlex, sys, os\n"
		"rows = list(csv.DictReader(open(sys.argv[1], newline='', encoding='utf-8', errors='surrogateescape')))\n"
		"for r in rows:\n"
		"    if r['status'] in ('ok', 'running'):\n"
		"        rec = json.load(open(os.path.join(r['dir'], 'resources.json')))\n"
		"        assert shlex.split(r['command']) == rec['command'], (r['command'], rec['command'])\n"
		"print(json.dumps(rows))\n";
	char cmd[PATH_MAX + 100];
	setenv("MT_CSV_SCRIPT", script, 1);
	snprintf(cmd, sizeof cmd, "python3 -c \"$MT_CSV_SCRIPT\" '%s'", path);
	FILE *p = popen(cmd, "r");
	cr_assert_not_null(p);
	static char buf[1 << 18];
	size_t n = fread(buf, 1, sizeof buf - 1, p);
	buf[n] = '\0';
	cr_assert_eq(pclose(p), 0, "python3 could not read the CSV back:\n%s", csv_text);
	unlink(path);
	struct jsonr_value *v;
	char err[300];
	cr_assert_eq(jsonr_parse(buf, n, &v, err, sizeof err), 0, "%s", err);
	return v;
}

static const char *field(const struct jsonr_value *row, const char *key)
{
	const char *s = jsonr_str(jsonr_get(row, key), NULL);
	cr_assert_not_null(s, "no column %s", key);
	return s;
}

static double field_num(const struct jsonr_value *row, const char *key)
{
	const char *s = field(row, key);
	char *end;
	double d = strtod(s, &end);
	cr_assert(*s && !*end, "column %s is not a number: '%s'", key, s);
	return d;
}

static char out[1 << 18], err[1 << 14];

/* Two steady runs of known size and one that exits 3: every column is what
 * the run did, and the CSV reads back with python's csv module. */
Test(report, csv_of_real_runs, .timeout = 60)
{
	char base[] = "/tmp/test_report.XXXXXX";
	cr_assert_not_null(mkdtemp(base));
	tmp_adopt(base);
	/* Each holds its size for 400 ms: the polled peak must see it even
	 * when memsup is descheduled for a while (50 ms was missed once, at
	 * load ~30). */
	const char *a30[] = { "--meta", "mb=30", "--meta", "kind=steady", "--", prog("steady"), "30", "400", NULL };
	const char *a70[] = { "--meta", "mb=70", "--meta", "kind=steady", "--", prog("steady"), "70", "400", NULL };
	/* An awkward command: comma, quotes, newline, empty argument. */
	const char *a3[] = { "--meta", "extra=a,\"b\"", "--", prog("spike"), "10", "400", "0", "3",
			     "x,y", "say \"hi\"", "two\nlines", "", "it's", NULL };
	const char *d30 = sweep_run(base, "mb=30", a30, 0);
	const char *d70 = sweep_run(base, "mb=70", a70, 0);
	const char *d3 = sweep_run(base, "exit3", a3, 3);

	const char *args[] = { "--csv", d30, d70, d3, NULL };
	cr_assert_eq(report_capture(args, out, sizeof out, err, sizeof err), 0, "stderr: %s", err);
	cr_assert_str_empty(err);
	/* The header: fixed columns around the sorted union of meta keys. */
	static const char head[] = "dir,status,meta:extra,meta:kind,meta:mb,command,exit,reason,"
				   "wall_s,peak_mb,peak_source,peak_tree_rss_mb,peak_heap_mb,"
				   "largest_name,largest_pid,largest_mb,blind_spots,"
				   "oom_kills,oom_victim_pid,oom_victim_comm,oom_limit_by\r\n";
	cr_assert(strncmp(out, head, sizeof head - 1) == 0, "%s", out);
	struct jsonr_value *rows = csv_to_json(out);
	cr_assert_eq(rows->n, 3);

	const char *dirs[] = { d30, d70, d3 };
	const double mb[] = { 30, 70, 10 };
	for (size_t i = 0; i < 3; i++) {
		const struct jsonr_value *row = jsonr_at(rows, i);
		struct jsonr_value *res = read_json(dirs[i], "resources.json");
		cr_assert_str_eq(field(row, "dir"), dirs[i]);
		cr_assert_str_eq(field(row, "status"), "ok");
		cr_assert_eq(field_num(row, "exit"), i == 2 ? 3 : 0);
		cr_assert_str_eq(field(row, "reason"), "");
		/* The workload's size, with room for 2 MiB rounding and the
		 * program itself; spike's tree peak is its 10 MB plus that. */
		double peak = field_num(row, "peak_tree_rss_mb");
		cr_expect(peak >= mb[i] && peak <= mb[i] + 6, "%s: peak %.3f MB", dirs[i], peak);
		cr_expect_eq(peak, jsonr_num(jsonr_get(res, "peak_tree_rss_mb"), -1));
		/* the answer beside it, as the record says it */
		double answer = field_num(row, "peak_mb");
		cr_expect(answer >= mb[i] && answer <= mb[i] + 6, "%s: answer %.3f MB", dirs[i], answer);
		cr_expect_eq(answer, jsonr_num(jsonr_get(res, "peak_mb"), -1));
		cr_expect_str_eq(field(row, "peak_source"), jsonr_str(jsonr_get(res, "peak_source"), "?"));
		cr_expect_eq(field_num(row, "wall_s"), jsonr_num(jsonr_get(res, "wall_s"), -1));
		/* Traced: the heap is a number (the workloads mmap, so small). */
		cr_expect_lt(field_num(row, "peak_heap_mb"), 2.0);
		/* The largest process is the workload itself, the command's pid. */
		cr_expect_str_eq(field(row, "largest_name"), i == 2 ? "spike" : "steady");
		cr_expect_eq(field_num(row, "largest_pid"), jsonr_num(jsonr_get(res, "pid"), -2));
		double lmb = field_num(row, "largest_mb");
		cr_expect(lmb >= mb[i] && lmb <= mb[i] + 6, "largest %.3f MB", lmb);
		cr_expect_eq(field_num(row, "blind_spots"), (double)jsonr_get(res, "blind_spots")->n);
		/* nothing was killed: 0 with a memory cgroup, unknown without */
		const struct jsonr_value *kills = jsonr_get(res, "oom_kills");
		cr_expect_str_eq(field(row, "oom_kills"), kills && kills->type == JSONR_NUMBER ? "0" : "");
		cr_expect_str_eq(field(row, "oom_victim_pid"), "");
		jsonr_free(res);
	}
	/* The meta columns: each row its own values, empty where it has none. */
	cr_expect_str_eq(field(jsonr_at(rows, 0), "meta:mb"), "30");
	cr_expect_str_eq(field(jsonr_at(rows, 1), "meta:mb"), "70");
	cr_expect_str_eq(field(jsonr_at(rows, 1), "meta:kind"), "steady");
	cr_expect_str_eq(field(jsonr_at(rows, 1), "meta:extra"), "");
	cr_expect_str_eq(field(jsonr_at(rows, 2), "meta:mb"), "");
	cr_expect_str_eq(field(jsonr_at(rows, 2), "meta:extra"), "a,\"b\"");
	/* The command is whole (the script checked it splits back to argv). */
	cr_expect(strstr(field(jsonr_at(rows, 2), "command"), "'two\nlines' '' 'it'\\''s'") != NULL,
		  "%s", field(jsonr_at(rows, 2), "command"));
	jsonr_free(rows);
}

/* The same runs as JSON: command as an array, nulls where a value is not
 * there, and python's json module agrees. */
Test(report, json_of_real_runs, .timeout = 60)
{
	char base[] = "/tmp/test_report.XXXXXX";
	cr_assert_not_null(mkdtemp(base));
	tmp_adopt(base);
	const char *a[] = { "--no-trace", "--meta", "mb=25", "--", prog("steady"), "25", "100", "a b", NULL };
	const char *d = sweep_run(base, "untraced", a, 0);
	const char *args[] = { "--json", d, NULL };
	cr_assert_eq(report_capture(args, out, sizeof out, err, sizeof err), 0, "%s", err);

	char path[PATH_MAX + 32];
	snprintf(path, sizeof path, "%s/report.json", base);
	write_file(base, "report.json", out, strlen(out));
	char cmd[PATH_MAX + 400];
	snprintf(cmd, sizeof cmd,
		 "python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); "
		 "assert r[0][\"command\"][-1] == \"a b\" and len(r[0][\"command\"]) == 4; "
		 "assert r[0][\"peak_heap_mb\"] is None and r[0][\"exit\"] == 0' '%s'", path);
	cr_assert_eq(system(cmd), 0, "python3 disagrees with:\n%s", out);

	struct jsonr_value *v;
	cr_assert_eq(jsonr_parse(out, strlen(out), &v, err, sizeof err), 0, "%s", err);
	const struct jsonr_value *row = jsonr_at(v, 0);
	cr_assert_str_eq(jsonr_str(jsonr_get(row, "status"), NULL), "ok");
	cr_assert_str_eq(jsonr_str(jsonr_get(jsonr_get(row, "meta"), "mb"), NULL), "25");
	cr_assert_eq(jsonr_get(row, "command")->type, JSONR_ARRAY);
	cr_assert_eq(jsonr_get(row, "reason")->type, JSONR_NULL);
	/* --no-trace: no heap figure, null rather than 0. */
	cr_assert_eq(jsonr_get(row, "peak_heap_mb")->type, JSONR_NULL);
	double peak = jsonr_num(jsonr_get(row, "peak_tree_rss_mb"), -1);
	cr_expect(peak >= 25 && peak <= 31, "peak %.3f", peak);
	cr_assert_str_eq(jsonr_str(jsonr_get(row, "largest_name"), NULL), "steady");
	jsonr_free(v);
}

/* Row i of the table (0 = header), and the column of the header's `name`. */
static const char *table_line(const char *text, int i, char *buf, size_t cap)
{
	const char *p = text;
	for (; i > 0 && p; i--) {
		p = strchr(p, '\n');
		if (p)
			p++;
	}
	cr_assert(p && *p, "no line %d in:\n%s", i, text);
	size_t n = strcspn(p, "\n");
	cr_assert_lt(n, cap);
	memcpy(buf, p, n);
	buf[n] = '\0';
	return buf;
}

/* The people's table: aligned columns (a right-aligned number ends under
 * its header's end), long commands cut with "...", sorted as asked, a
 * missing value "-". */
Test(report, table_sorted_and_aligned, .timeout = 60)
{
	char base[] = "/tmp/test_report.XXXXXX";
	cr_assert_not_null(mkdtemp(base));
	tmp_adopt(base);
	/* meta mb 8 < 30 < 64 as numbers, but "30" < "64" < "8" as text. */
	/* each held 400 ms: a sample sees it even on a loaded machine */
	const char *a8[] = { "--meta", "mb=8", "--", prog("steady"), "8", "400", NULL };
	const char *a30[] = { "--meta", "mb=30", "--", prog("steady"), "30", "400",
			      "a-long-argument-that-makes-the-command-longer-than-forty", NULL };
	const char *a64[] = { "--meta", "mb=64", "--", prog("steady"), "64", "400", NULL };
	const char *d8 = sweep_run(base, "r8", a8, 0);
	const char *d30 = sweep_run(base, "r30", a30, 0);
	const char *d64 = sweep_run(base, "r64", a64, 0);
	char missing[PATH_MAX];
	snprintf(missing, sizeof missing, "%s/not-there", base);

	char line[4096], head[4096];
	const char *peak_order[] = { "--sort", "peak", d30, missing, d8, d64, NULL };
	cr_assert_eq(report_capture(peak_order, out, sizeof out, err, sizeof err), 1, "%s", err);
	table_line(out, 0, head, sizeof head);
	cr_assert(strncmp(head, "DIR", 3) == 0, "%s", head);
	const char *ph = strstr(head, "PEAK_MB");
	cr_assert_not_null(ph);
	size_t peak_end = (size_t)(ph - head) + strlen("PEAK_MB");
	const char *want[] = { d64, d30, d8, missing };
	const double mb[] = { 64, 30, 8, -1 };
	for (int i = 0; i < 4; i++) {
		table_line(out, i + 1, line, sizeof line);
		cr_assert(strncmp(line, want[i], strlen(want[i])) == 0 && line[strlen(want[i])] == ' ',
			  "row %d should be %s:\n%s", i, want[i], out);
		cr_assert_geq(strlen(line), peak_end);
		/* The number ending where the header ends. */
		size_t s = peak_end;
		while (s > 0 && line[s - 1] != ' ')
			s--;
		char cell[32];
		snprintf(cell, sizeof cell, "%.*s", (int)(peak_end - s), line + s);
		if (mb[i] < 0) {
			cr_expect_str_eq(cell, "-");
			cr_expect(strstr(line, "broken: no such directory") != NULL, "%s", line);
		} else {
			double v = strtod(cell, NULL);
			cr_expect(v >= mb[i] && v <= mb[i] + 6, "%s: '%s'", want[i], cell);
			cr_expect(strstr(line, " ok") != NULL && line[strlen(line) - 1] == 'k', "%s", line);
		}
	}
	/* The long command is cut to 40 columns, ending in "...". */
	table_line(out, 2, line, sizeof line);
	cr_expect(strstr(line, "a-long-argument") == NULL, "%s", line);
	cr_expect(strstr(line, "... ") != NULL, "%s", line);

	/* --reverse: smallest first, the row without a value still last. */
	const char *rev[] = { "--sort=peak", "--reverse", d30, missing, d8, d64, NULL };
	cr_assert_eq(report_capture(rev, out, sizeof out, err, sizeof err), 1);
	const char *want_rev[] = { d8, d30, d64, missing };
	for (int i = 0; i < 4; i++) {
		table_line(out, i + 1, line, sizeof line);
		cr_expect(strncmp(line, want_rev[i], strlen(want_rev[i])) == 0, "row %d: %s", i, line);
	}

	/* meta:mb compares numbers as numbers; ascending. */
	const char *by_meta[] = { "--sort", "meta:mb", d64, d8, d30, NULL };
	cr_assert_eq(report_capture(by_meta, out, sizeof out, err, sizeof err), 0);
	const char *want_meta[] = { d8, d30, d64 };
	for (int i = 0; i < 3; i++) {
		table_line(out, i + 1, line, sizeof line);
		cr_expect(strncmp(line, want_meta[i], strlen(want_meta[i])) == 0, "row %d: %s", i, line);
		cr_expect(strstr(line, "  mb=") != NULL, "meta shown as key=value: %s", line);
	}
	/* exit: all 0, a tie: the argument order stays. */
	const char *by_exit[] = { "--sort", "exit", d64, d8, d30, NULL };
	cr_assert_eq(report_capture(by_exit, out, sizeof out, err, sizeof err), 0);
	const char *want_exit[] = { d64, d8, d30 };
	for (int i = 0; i < 3; i++) {
		table_line(out, i + 1, line, sizeof line);
		cr_expect(strncmp(line, want_exit[i], strlen(want_exit[i])) == 0, "row %d: %s", i, line);
	}
	/* The CSV of the long command is whole. */
	const char *csv[] = { "--csv", d30, NULL };
	cr_assert_eq(report_capture(csv, out, sizeof out, err, sizeof err), 0);
	cr_expect(strstr(out, "a-long-argument-that-makes-the-command-longer-than-forty") != NULL, "%s", out);
}

/* Broken, half-written and running directories: each is a row that says so,
 * the good row among them is whole, and the exit status is 1. */
Test(report, broken_rows_never_stop_the_others, .timeout = 60)
{
	char base[] = "/tmp/test_report.XXXXXX";
	cr_assert_not_null(mkdtemp(base));
	tmp_adopt(base);
	/* held 300 ms: the figures checked below are polled, and a 50 ms hold
	 * fell between two samples under load (1.7 MB read for 12) */
	const char *ag[] = { "--", prog("steady"), "12", "300", NULL };
	const char *good = sweep_run(base, "good", ag, 0);
	const char *ap[] = { "--", prog("steady"), "12", "300", NULL };
	const char *noprocs = sweep_run(base, "noprocs", ap, 0);
	char path[PATH_MAX + 32];
	snprintf(path, sizeof path, "%s/processes.json", noprocs);
	cr_assert_eq(unlink(path), 0);

	/* resources.json cut in the middle (a copy of a real one). */
	char half[PATH_MAX], garbage[PATH_MAX], empty[PATH_MAX], array[PATH_MAX], file[PATH_MAX];
	char nosuch[PATH_MAX];
	static char text[1 << 16];
	snprintf(path, sizeof path, "%s/resources.json", good);
	slurp(path, text, sizeof text);
	size_t len = strlen(text);
	cr_assert_gt(len, 200);
	snprintf(half, sizeof half, "%s/half", base);
	cr_assert_eq(mkdir(half, 0755), 0);
	write_file(half, "resources.json", text, len / 2);
	snprintf(garbage, sizeof garbage, "%s/garbage", base);
	cr_assert_eq(mkdir(garbage, 0755), 0);
	write_file(garbage, "resources.json", "\x7f" "ELF\x00\xff", 6);
	snprintf(empty, sizeof empty, "%s/empty", base);
	cr_assert_eq(mkdir(empty, 0755), 0);
	snprintf(array, sizeof array, "%s/array", base);
	cr_assert_eq(mkdir(array, 0755), 0);
	write_file(array, "resources.json", "[1, 2]\n", 7);
	snprintf(file, sizeof file, "%s/a-file", base);
	write_file(base, "a-file", "x", 1);
	snprintf(nosuch, sizeof nosuch, "%s/nosuch", base);
	/* processes.json torn in its second image: the first, whole, must not
	 * be named the largest (the file is read an image at a time) */
	char torn[PATH_MAX];
	snprintf(torn, sizeof torn, "%s/torn", base);
	cr_assert_eq(mkdir(torn, 0755), 0);
	write_file(torn, "resources.json", text, len);
	const char *tp = "[{\"pid\": 5, \"argv\": [\"/bin/big\"], \"vm_hwm_kb\": 900000},\n"
			 " {\"pid\": 6, \"argv\": [\"sm";
	write_file(torn, "processes.json", tp, strlen(tp));

	const char *args[] = { "--csv", half, garbage, good, empty, array, file, nosuch, noprocs,
			       torn, NULL };
	cr_assert_eq(report_capture(args, out, sizeof out, err, sizeof err), 1, "%s", err);
	cr_assert_str_empty(err);
	struct jsonr_value *rows = csv_to_json(out);
	cr_assert_eq(rows->n, 9);
	const char *status[] = {
		NULL, /* half: the position depends on the record; checked below */
		"broken: resources.json: line 1 col 1: expected a value, got byte 0x7f",
		"ok",
		"broken: resources.json: No such file or directory",
		"broken: resources.json: not a JSON object",
		"broken: not a directory",
		"broken: no such directory",
		"broken: processes.json: No such file or directory",
		"broken: processes.json: line 2 col 22: unterminated string",
	};
	const char *dirs[] = { half, garbage, good, empty, array, file, nosuch, noprocs, torn };
	for (size_t i = 0; i < 9; i++) {
		const struct jsonr_value *row = jsonr_at(rows, i);
		cr_expect_str_eq(field(row, "dir"), dirs[i]);
		if (status[i])
			cr_expect_str_eq(field(row, "status"), status[i]);
	}
	const char *hs = field(jsonr_at(rows, 0), "status");
	cr_expect(strncmp(hs, "broken: resources.json: line ", 29) == 0, "%s", hs);
	/* The good row is whole, between the broken ones. */
	double peak = field_num(jsonr_at(rows, 2), "peak_tree_rss_mb");
	cr_expect(peak >= 12 && peak <= 18, "%.3f", peak);
	cr_expect_str_eq(field(jsonr_at(rows, 2), "largest_name"), "steady");
	/* Without processes.json the record's own figures are still shown. */
	peak = field_num(jsonr_at(rows, 7), "peak_tree_rss_mb");
	cr_expect(peak >= 12 && peak <= 18, "%.3f", peak);
	cr_expect_str_eq(field(jsonr_at(rows, 7), "largest_name"), "");
	cr_expect_str_eq(field(jsonr_at(rows, 8), "largest_name"), "");
	cr_expect_str_eq(field(jsonr_at(rows, 8), "largest_mb"), "");
	jsonr_free(rows);

	/* The table says the same, one line per directory. */
	const char *targs[] = { half, garbage, good, empty, array, file, nosuch, noprocs, torn, NULL };
	cr_assert_eq(report_capture(targs, out, sizeof out, err, sizeof err), 1);
	size_t lines = 0;
	for (const char *p = out; (p = strchr(p, '\n')); p++)
		lines++;
	cr_expect_eq(lines, 10, "%s", out);
	cr_expect(strstr(out, "broken: processes.json: No such file or directory\n") != NULL, "%s", out);
}

/* memsup SIGKILLed mid-run: its sentinel closes the record
 * ("supervisor_killed", no processes.json), and the row is whole, not
 * broken, but "killed", and the report exits 1: its figures end where
 * memsup did, and the command was killed with it.  Had the sentinel died too (the machine went down), the record
 * would still say "running": that row is "running", not broken.  The
 * sentinel is waited for, so nothing writes into the directory after the
 * test has looked (or removed it). */
Test(report, killed_memsup_is_running, .timeout = 60)
{
	struct sup_run r;
	char path[PATH_MAX + 32], copy[PATH_MAX + 32], cmd[3 * PATH_MAX + 200];
	tmp_make(&r);
	const char *args[] = { "--no-trace", "--meta", "phase=1", "--", prog("steady"), "20", "20000", NULL };
	memsup_start(&r, 1, args);
	snprintf(path, sizeof path, "%s/resources.json", r.dir);
	cr_assert(wait_for_file(path));
	usleep(1500 * 1000); /* past a rewrite with samples in it */
	kill(r.pid, SIGKILL);
	cr_assert_eq(memsup_wait(&r), 1000 + SIGKILL);
	rec_load_after_sentinel(&r, 15);
	cr_assert_str_eq(rec_str(&r, "reason"), "\"supervisor_killed\"");

	const char *rargs[] = { "--json", r.dir, NULL };
	cr_assert_eq(report_capture(rargs, out, sizeof out, err, sizeof err), 1, "%s", err);
	struct jsonr_value *v;
	cr_assert_eq(jsonr_parse(out, strlen(out), &v, err, sizeof err), 0, "%s", err);
	const struct jsonr_value *row = jsonr_at(v, 0);
	cr_assert_str_eq(jsonr_str(jsonr_get(row, "status"), NULL),
			 "killed: memsup was killed before the run ended; figures until then");
	cr_assert_str_eq(jsonr_str(jsonr_get(row, "reason"), NULL), "supervisor_killed");
	cr_expect_geq(jsonr_num(jsonr_get(row, "peak_tree_rss_mb"), -1), 20);
	/* memsup never reached its answer: the polled sum, named as such */
	cr_expect_str_eq(jsonr_str(jsonr_get(row, "peak_source"), "?"), "polled_rss");
	cr_expect_eq(jsonr_get(row, "largest_name")->type, JSONR_NULL);
	jsonr_free(v);

	/* the same record as memsup left it, sentinel or not: "running" */
	snprintf(copy, sizeof copy, "%s/left", r.tmp);
	cr_assert_eq(mkdir(copy, 0755), 0);
	snprintf(cmd, sizeof cmd,
		 "python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); "
		 "d[\"reason\"]=\"running\"; json.dump(d, open(sys.argv[2], \"w\"))' "
		 "'%s' '%s/resources.json'", path, copy);
	cr_assert_eq(system(cmd), 0);
	const char *largs[] = { "--json", copy, NULL };
	cr_assert_eq(report_capture(largs, out, sizeof out, err, sizeof err), 0, "%s", err);
	cr_assert_eq(jsonr_parse(out, strlen(out), &v, err, sizeof err), 0, "%s", err);
	row = jsonr_at(v, 0);
	cr_assert_str_eq(jsonr_str(jsonr_get(row, "status"), NULL), "running");
	cr_assert_str_eq(jsonr_str(jsonr_get(row, "reason"), NULL), "running");
	cr_expect_geq(jsonr_num(jsonr_get(row, "peak_tree_rss_mb"), -1), 20);
	jsonr_free(v);

	/* a record of a memsup before the answer (no peak_mb, no
	 * peak_source): PEAK is its summed RSS, and says so (still killed:
	 * exit 1) */
	snprintf(copy, sizeof copy, "%s/older", r.tmp);
	cr_assert_eq(mkdir(copy, 0755), 0);
	snprintf(cmd, sizeof cmd,
		 "python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); "
		 "[d.pop(k) for k in (\"peak_mb\", \"peak_source\", \"peak_at_s\", "
		 "\"peak_breakdown\")]; json.dump(d, open(sys.argv[2], \"w\"))' "
		 "'%s' '%s/resources.json'", path, copy);
	cr_assert_eq(system(cmd), 0);
	const char *oargs[] = { "--json", copy, NULL };
	cr_assert_eq(report_capture(oargs, out, sizeof out, err, sizeof err), 1, "%s", err);
	cr_assert_eq(jsonr_parse(out, strlen(out), &v, err, sizeof err), 0, "%s", err);
	row = jsonr_at(v, 0);
	cr_expect_str_eq(jsonr_str(jsonr_get(row, "peak_source"), "?"), "polled_rss");
	cr_expect_eq(jsonr_num(jsonr_get(row, "peak_mb"), -1),
		     jsonr_num(jsonr_get(row, "peak_tree_rss_mb"), -2));
	jsonr_free(v);
}

/* The table row of dir (the first whitespace-split words of the line that
 * starts with it) into words[]; how many. */
static int table_words(const char *table, const char *dir, char words[][128], int max)
{
	size_t dl = strlen(dir);
	for (const char *l = table; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL) {
		if (strncmp(l, dir, dl) != 0 || l[dl] != ' ')
			continue;
		int n = 0;
		const char *p = l;
		while (n < max && *p && *p != '\n') {
			while (*p == ' ')
				p++;
			size_t w = strcspn(p, " \n");
			if (!w)
				break;
			snprintf(words[n++], 128, "%.*s", (int)w, p);
			p += w;
		}
		return n;
	}
	cr_assert_fail("no row for %s in:\n%s", dir, table);
	return 0;
}

/* A command that never started: its row says so (status "start failed:
 * WHY"), shows no peak (the record's is null: no 0.0 from a tree that never
 * was, nor a source), sorts after the runs with one, and the report exits 1
 * in every format, as for a broken row; the runs beside it keep their rows. */
Test(report, start_failed_is_no_peak_and_fails, .timeout = 60)
{
	struct sup_run r;
	tmp_make(&r);
	const char *good_args[] = { "--", prog("steady"), "20", "200", NULL };
	const char *good = sweep_run(r.tmp, "good", good_args, 0);
	const char *gone_args[] = { "--", "/nonexistent/memsup-no-such-program", NULL };
	const char *gone = sweep_run(r.tmp, "gone", gone_args, 127);
	const char *lost_args[] = { "--", "memsup-no-such-command-in-path", NULL };
	const char *lost = sweep_run(r.tmp, "lost", lost_args, 127);

	const char *targs[] = { "--sort", "peak", gone, good, lost, NULL };
	cr_assert_eq(report_capture(targs, out, sizeof out, err, sizeof err), 1, "%s%s", out, err);
	cr_expect_str_empty(err);
	char w[24][128];
	int n = table_words(out, gone, w, 24);
	/* DIR COMMAND EXIT REASON WALL_S PEAK_MB PEAK_FROM HEAP_MB LARGEST BLIND OOM STATUS */
	cr_assert_geq(n, 11, "%s", out);
	cr_expect_str_eq(w[2], "127");
	cr_expect_str_eq(w[3], "start_failed");
	cr_expect_str_eq(w[5], "-", "PEAK_MB of a command that never ran: %s", w[5]);
	cr_expect_str_eq(w[6], "-", "PEAK_FROM of a command that never ran: %s", w[6]);
	cr_expect(strstr(out, "start failed: execvp: No such file or directory"), "%s", out);
	n = table_words(out, good, w, 24);
	cr_assert_lt(n, 24, "a row of more words than the test keeps: %s", out);
	cr_expect_str_eq(w[n - 1], "ok");
	/* --sort peak: the run with a peak first, those without after it */
	const char *first_row = strchr(out, '\n') + 1;
	cr_expect(strncmp(first_row, good, strlen(good)) == 0, "%s", out);

	const char *jargs[] = { "--json", good, gone, NULL };
	cr_assert_eq(report_capture(jargs, out, sizeof out, err, sizeof err), 1, "%s", err);
	struct jsonr_value *v;
	cr_assert_eq(jsonr_parse(out, strlen(out), &v, err, sizeof err), 0, "%s", err);
	const struct jsonr_value *row = jsonr_at(v, 1);
	cr_expect_str_eq(jsonr_str(jsonr_get(row, "status"), "?"),
			 "start failed: execvp: No such file or directory");
	cr_expect_eq(jsonr_get(row, "peak_mb")->type, JSONR_NULL);
	cr_expect_eq(jsonr_get(row, "peak_source")->type, JSONR_NULL);
	cr_expect_eq(jsonr_num(jsonr_get(row, "exit"), -1), 127);
	cr_expect_str_eq(jsonr_str(jsonr_get(jsonr_at(v, 0), "status"), "?"), "ok");
	cr_expect_geq(jsonr_num(jsonr_get(jsonr_at(v, 0), "peak_mb"), -1), 20);
	jsonr_free(v);

	const char *cargs[] = { "--csv", gone, NULL };
	cr_assert_eq(report_capture(cargs, out, sizeof out, err, sizeof err), 1, "%s", err);
	v = csv_to_json(out);
	row = jsonr_at(v, 0);
	cr_expect_str_eq(field(row, "status"), "start failed: execvp: No such file or directory");
	cr_expect_str_eq(field(row, "peak_mb"), "");
	cr_expect_str_eq(field(row, "peak_source"), "");
	jsonr_free(v);

	/* the good run alone still passes */
	const char *oargs[] = { good, NULL };
	cr_assert_eq(report_capture(oargs, out, sizeof out, err, sizeof err), 0, "%s", err);
}

/* ---- the OOM column ---- */

/* A record of a run that ended on its own, for the fixtures' keys. */
#define OOM_BASE(reason)                                                                       \
	"{\"command\": [\"/bin/job\", \"--big\"], \"exit_code\": -9, \"signal\": 9, "         \
	"\"exit_status\": 137, \"reason\": " reason ", \"wall_s\": 5.0, "                        \
	"\"peak_tree_rss_mb\": 151.0, \"peak_mb\": 149.5, \"peak_source\": \"cgroup\", "       \
	"\"blind_spots\": []}"

/* The table's OOM cell of the row of dir: from under the heading to the
 * row's status, which the caller knows. */
static void table_oom_cell(const char *table, const char *dir, const char *status, char *cell,
			   size_t cap)
{
	char head[4096], line[4096];
	table_line(table, 0, head, sizeof head);
	const char *h = strstr(head, "  OOM  ");
	cr_assert_not_null(h, "no OOM heading: %s", head);
	size_t at = (size_t)(h - head) + 2;
	for (int i = 1;; i++) {
		table_line(table, i, line, sizeof line);
		if (strncmp(line, dir, strlen(dir)) == 0 && line[strlen(dir)] == ' ')
			break;
	}
	size_t ls = strlen(line), ss = strlen(status);
	cr_assert(ls > at + ss && strcmp(line + ls - ss, status) == 0, "'%s' does not end with '%s'",
		  line, status);
	size_t end = ls - ss;
	while (end > at && line[end - 1] == ' ')
		end--;
	cr_assert_lt(end - at, cap);
	snprintf(cell, cap, "%.*s", (int)(end - at), line + at);
}

/* Each fixture's OOM kills in the table (count, first victim, whose
 * limit), the CSV and the JSON: "-" (empty, null) where memsup could not
 * see a kill, never 0; the comm's own bytes; a forged "oom" breaks its row
 * with the key named, the other rows and the row's other figures whole. */
Test(report, oom_kills_of_each_fixture, .timeout = 30)
{
	static const struct {
		const char *name;    /* the fixture; a running record's is after '+' */
		const char *cell;    /* the table's */
		const char *count;   /* CSV: oom_kills */
		const char *pid;     /* CSV: oom_victim_pid */
		const char *comm;    /* CSV: oom_victim_comm */
		const char *by;      /* CSV: oom_limit_by */
		const char *status;
	} rows[] = {
		{ "one_kill", "1: 4242 python (run)", "1", "4242", "python", "run", "ok" },
		{ "two_kills", "2: 5001 worker (inside)", "2", "5001", "worker", "inside", "ok" },
		{ "none", "0", "0", "", "", "", "ok" },
		{ "unseen", "-", "", "", "", "", "ok" },
		{ "older", "1", "1", "", "", "", "ok" },
		{ "unnamed", "1: ? (above)", "1", "", "", "above", "ok" },
		{ "odd_comm", "1: 6006 it's-\xc3\xa9\xff (machine)", "1", "6006", "it's-\xc3\xa9\xff",
		  "machine", "ok" },
		{ "forged_string", "-", "", "", "", "",
		  "broken: resources.json: \"oom\": not an array or null" },
		{ "forged_victim", "-", "", "", "", "",
		  "broken: resources.json: \"oom\"[0].victim: not an object" },
		{ "+one_kill", "1: 4242 python (run)", "1", "4242", "python", "run", "running" },
		{ "+forged_victim", "-", "", "", "", "",
		  "broken: resources.json: \"oom\"[0].victim: not an object" },
	};
	enum { N = sizeof rows / sizeof rows[0] };
	char base[] = "/tmp/test_report.XXXXXX";
	cr_assert_not_null(mkdtemp(base));
	tmp_adopt(base);
	static char dirs[N][PATH_MAX];
	const char *args[N + 2] = { NULL };
	for (size_t i = 0; i < N; i++) {
		int running = rows[i].name[0] == '+';
		snprintf(dirs[i], PATH_MAX, "%s/%s%s", base, running ? "running_" : "", rows[i].name + running);
		oom_evidence(dirs[i], rows[i].name + running, running ? OOM_BASE("\"running\"") : OOM_BASE("null"),
			     running ? NULL : "[]\n");
		args[i] = dirs[i];
	}
	cr_assert_eq(report_capture(args, out, sizeof out, err, sizeof err), 1, "%s", err);
	cr_assert_str_empty(err);
	for (size_t i = 0; i < N; i++) {
		char cell[256];
		table_oom_cell(out, dirs[i], rows[i].status, cell, sizeof cell);
		cr_expect_str_eq(cell, rows[i].cell, "%s", dirs[i]);
	}

	const char *cargs[N + 2] = { "--csv" };
	memcpy(cargs + 1, args, N * sizeof *args);
	cr_assert_eq(report_capture(cargs, out, sizeof out, err, sizeof err), 1, "%s", err);
	struct jsonr_value *v = csv_to_json(out);
	cr_assert_eq(v->n, N);
	for (size_t i = 0; i < N; i++) {
		const struct jsonr_value *row = jsonr_at(v, i);
		cr_expect_str_eq(field(row, "status"), rows[i].status, "%s", dirs[i]);
		cr_expect_str_eq(field(row, "oom_kills"), rows[i].count, "%s", dirs[i]);
		cr_expect_str_eq(field(row, "oom_victim_pid"), rows[i].pid, "%s", dirs[i]);
		cr_expect_str_eq(field(row, "oom_victim_comm"), rows[i].comm, "%s", dirs[i]);
		cr_expect_str_eq(field(row, "oom_limit_by"), rows[i].by, "%s", dirs[i]);
		/* the row's other figures are still read */
		cr_expect_eq(field_num(row, "peak_mb"), 149.5, "%s", dirs[i]);
	}
	jsonr_free(v);

	const char *jargs[N + 2] = { "--json" };
	memcpy(jargs + 1, args, N * sizeof *args);
	cr_assert_eq(report_capture(jargs, out, sizeof out, err, sizeof err), 1, "%s", err);
	cr_assert_eq(jsonr_parse(out, strlen(out), &v, err, sizeof err), 0, "%s", err);
	for (size_t i = 0; i < N; i++) {
		const struct jsonr_value *row = jsonr_at(v, i);
		const struct jsonr_value *c = jsonr_get(row, "oom_kills"), *p = jsonr_get(row, "oom_victim_pid");
		const struct jsonr_value *m = jsonr_get(row, "oom_victim_comm"), *b = jsonr_get(row, "oom_limit_by");
		cr_assert(c && p && m && b, "%s: every row has every OOM key", dirs[i]);
		if (*rows[i].count)
			cr_expect_eq(jsonr_num(c, -1), atof(rows[i].count), "%s", dirs[i]);
		else
			cr_expect_eq(c->type, JSONR_NULL, "%s: unknown is null, never 0", dirs[i]);
		if (*rows[i].pid)
			cr_expect_eq(jsonr_num(p, -1), atof(rows[i].pid), "%s", dirs[i]);
		else
			cr_expect_eq(p->type, JSONR_NULL, "%s", dirs[i]);
		cr_expect_str_eq(*rows[i].comm ? jsonr_str(m, "(not a string)") : (m->type == JSONR_NULL ? "" : "?"),
				 rows[i].comm, "%s", dirs[i]);
		cr_expect_str_eq(*rows[i].by ? jsonr_str(b, "(not a string)") : (b->type == JSONR_NULL ? "" : "?"),
				 rows[i].by, "%s", dirs[i]);
	}
	jsonr_free(v);

	/* the rows that are whole pass on their own */
	const char *good[] = { dirs[0], dirs[2], dirs[3], dirs[5], dirs[6], NULL };
	cr_assert_eq(report_capture(good, out, sizeof out, err, sizeof err), 0, "%s%s", out, err);
}

/* oom_three (children of 20, 40 and 100 MB, a parent growing to 50) under
 * --mem-max MAX into r->tmp/NAME; memsup's status; the children's pids in
 * r->tmp/NAME.pids. */
static int oom_three_run(struct sup_run *r, const char *name, const char *max)
{
	char dir[PATH_MAX], pids[PATH_MAX + 8];
	snprintf(dir, sizeof dir, "%s/%s", r->tmp, name);
	snprintf(pids, sizeof pids, "%s.pids", dir);
	const char *args[] = { "-q", "-o", dir, "--poll-ms", "20", "--mem-max", max, "--", prog("oom_three"),
			       pids, "20", "40", "100", "50", NULL };
	struct sup_run run;
	tmp_make(&run);
	memsup_start(&run, 0, args);
	int st = memsup_wait(&run);
	if (st == 125 && strstr(run.err, "--mem-max"))
		cgprobe_skip_or_fail("memory", "memsup refused --mem-max: %s", run.err);
	memcpy(r->err, run.err, sizeof r->err);
	return st;
}

/* The writer's own record of a real OOM kill, read back: oom_three's
 * largest child (100 MB) killed at --mem-max 200, beside a run it fits
 * (400).  The report's row, memsup.py's read_oom and the run's own
 * timeline.svg name the same victim (as root, the pid the kernel's log
 * names; else whom memsup inferred). */
Test(report, oom_kill_of_a_real_run, .timeout = 90)
{
	struct sup_run r;
	tmp_make(&r);
	cr_assert_eq(oom_three_run(&r, "kill", "200"), 123, "stderr: %s", r.err);
	cr_assert_eq(oom_three_run(&r, "fit", "400"), 0, "stderr: %s", r.err);
	char pids[256], kill_dir[PATH_MAX], fit_dir[PATH_MAX];
	slurp(sup_tmp_path(&r, "kill.pids"), pids, sizeof pids);
	const char *c = strstr(pids, "c=");
	cr_assert_not_null(c, "pids: %s", pids);
	long long child = atoll(c + 2);
	snprintf(kill_dir, sizeof kill_dir, "%s", sup_tmp_path(&r, "kill"));
	snprintf(fit_dir, sizeof fit_dir, "%s", sup_tmp_path(&r, "fit"));

	const char *jargs[] = { "--json", kill_dir, fit_dir, NULL };
	cr_assert_eq(report_capture(jargs, out, sizeof out, err, sizeof err), 0, "%s", err);
	struct jsonr_value *v;
	cr_assert_eq(jsonr_parse(out, strlen(out), &v, err, sizeof err), 0, "%s", err);
	const struct jsonr_value *killed = jsonr_at(v, 0), *fit = jsonr_at(v, 1);
	cr_expect_eq(jsonr_num(jsonr_get(killed, "oom_kills"), -1), 1);
	long long pid = (long long)jsonr_num(jsonr_get(killed, "oom_victim_pid"), -1);
	if (geteuid() == 0)
		cr_expect_eq(pid, child, "the kernel's log names pid %lld, the report %lld", child, pid);
	cr_expect_str_eq(jsonr_str(jsonr_get(killed, "oom_victim_comm"), "?"), "oom_three");
	cr_expect_str_eq(jsonr_str(jsonr_get(killed, "oom_limit_by"), "?"), "run");
	cr_expect_eq(jsonr_num(jsonr_get(fit, "oom_kills"), -1), 0, "a run it fits: 0, known");
	cr_expect_eq(jsonr_get(fit, "oom_victim_pid")->type, JSONR_NULL);
	jsonr_free(v);

	/* memsup.py's reader says the same of the writer's record */
	static const char script[] =
		"import json, sys\n"
		"sys.path.insert(0, sys.argv[1])\n"
		"import memsup\n"
		"k = memsup.read_oom(json.load(open(sys.argv[2])))\n"
		"v = k.kills[0]\n"
		"print(k.count, v['victim']['pid'], v['victim']['comm'], v['limit']['by'])\n";
	char cmd[3 * PATH_MAX], said[256], want[256];
	setenv("MT_OOM_SCRIPT", script, 1);
	snprintf(cmd, sizeof cmd, "python3 -c \"$MT_OOM_SCRIPT\" '%s/scripts' '%s/resources.json'",
		 env_or_skip("MT_SRCDIR"), kill_dir);
	FILE *py = popen(cmd, "r");
	cr_assert_not_null(py);
	size_t n = fread(said, 1, sizeof said - 1, py);
	said[n] = '\0';
	cr_assert_eq(pclose(py), 0, "read_oom failed on the writer's record: %s", said);
	snprintf(want, sizeof want, "1 %lld oom_three run\n", pid);
	cr_expect_str_eq(said, want);

	/* the run's own picture names the victim on its mark */
	static char svg[1 << 21];
	char path[PATH_MAX + 32], mark[128];
	snprintf(path, sizeof path, "%s/timeline.svg", kill_dir);
	slurp(path, svg, sizeof svg);
	snprintf(mark, sizeof mark, "<title>OOM kill: pid %lld &apos;oom_three&apos; at ", pid);
	cr_expect_not_null(strstr(svg, mark), "%s not in %s", mark, path);
}

struct bad_opt {
	char args[3][40];
	char want[100]; /* a substring of stderr */
};

ParameterizedTestParameters(report, bad_usage)
{
	static struct bad_opt cases[] = {
		{ { "--bogus", "d" }, "unknown option '--bogus'" },
		{ { "-x", "d" }, "unknown option '-x'" },
		{ { "--sort", "size", "d" }, "--sort: unknown key 'size'" },
		{ { "--sort=meta:", "d" }, "--sort: unknown key 'meta:'" },
		{ { "d", "--sort" }, "--sort needs a KEY" },
		{ { "--csv", "--json", "d" }, "--csv and --json exclude each other" },
		{ { "--csv" }, "no evidence directory given" },
		{ { "--csv=1", "d" }, "unknown option '--csv=1'" },
	};
	return cr_make_param_array(struct bad_opt, cases, sizeof cases / sizeof cases[0]);
}

/* A bad option: 125, a message naming it, and nothing on stdout (even when
 * the directories are fine: options are all read first). */
ParameterizedTest(struct bad_opt *c, report, bad_usage)
{
	const char *args[4] = { NULL };
	for (int i = 0; i < 3 && c->args[i][0]; i++)
		args[i] = c->args[i];
	char dir[] = "/tmp/test_report.XXXXXX";
	cr_assert_not_null(mkdtemp(dir));
	tmp_adopt(dir);
	cr_assert_eq(chdir(dir), 0);
	cr_assert_eq(mkdir("d", 0755), 0);
	cr_assert_eq(report_capture(args, out, sizeof out, err, sizeof err), 125);
	cr_assert_str_empty(out, "stdout: %s", out);
	cr_assert(strstr(err, c->want) != NULL, "stderr: %s", err);
	cr_assert(strncmp(err, "memsup report: ", 15) == 0, "%s", err);
}

Test(report, help_on_stdout)
{
	const char *args[] = { "--help", NULL };
	cr_assert_eq(report_capture(args, out, sizeof out, err, sizeof err), 0);
	cr_assert(strncmp(out, "Usage: memsup report", 20) == 0, "%s", out);
	cr_assert_str_empty(err);
	/* Every option the help names is one report_main accepts. */
	const char *opts[] = { "--csv", "--json", "--sort", "--reverse", "--help", NULL };
	for (int i = 0; opts[i]; i++)
		cr_expect(strstr(out, opts[i]) != NULL, "%s not in the help", opts[i]);
	const char *h[] = { "-h", NULL };
	cr_assert_eq(report_capture(h, out, sizeof out, err, sizeof err), 0);
}
