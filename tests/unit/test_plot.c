/* test_plot.c: timeline.svg (svg.c) and its loader and subcommand (plot.c).
 *
 * Well-formedness is judged by python3's xml.etree (a real XML parser, not
 * ours; tests/py/plot_*.py); figures are checked against the data the test made or, end to
 * end, against the resources.json that memsup wrote for a workload of known
 * size. */
#include "test_memsup_util.h"
#include "test_oom_fixtures.h"
#include "test_py.h"

#include "commands.h"
#include "view/plot.h"
#include "view/svg.h"
#include "evidence/timeline.h"

/* python3 tests/py/NAME ARGS...; its exit status (or 1000+signal). */
static int py(const char *name, const char *a1, const char *a2)
{
	char *argv[] = { "python3", (char *)py_script(name), (char *)a1, (char *)a2, NULL };
	int st;
	fflush(NULL);
	pid_t pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		execvp("python3", argv);
		_exit(127);
	}
	while (waitpid(pid, &st, 0) < 0)
		cr_assert_eq(errno, EINTR);
	return WIFEXITED(st) ? WEXITSTATUS(st) : 1000 + WTERMSIG(st);
}


static char tmpdir[64];

static const char *tmp_path(const char *name)
{
	static char p[4][256];
	static int slot;
	if (!tmpdir[0]) {
		snprintf(tmpdir, sizeof tmpdir, "/tmp/plot-test-XXXXXX");
		cr_assert_not_null(mkdtemp(tmpdir));
		tmp_adopt(tmpdir);
	}
	char *s = p[slot++ % 4];
	snprintf(s, 256, "%s/%s", tmpdir, name);
	return s;
}

/* Each test's directory goes when it ends (MT_KEEP=1 keeps it to look at). */
static void tmp_remove(void)
{
	if (!tmpdir[0] || getenv("MT_KEEP"))
		return;
	pid_t pid = fork();
	if (pid == 0) {
		execlp("rm", "rm", "-rf", "--", tmpdir, (char *)NULL);
		_exit(127);
	}
	if (pid > 0)
		waitpid(pid, NULL, 0);
}

TestSuite(plot, .fini = tmp_remove);

static void save(const char *path, const char *text, size_t len)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	cr_assert_geq(fd, 0, "%s: %s", path, strerror(errno));
	cr_assert_eq(write(fd, text, len), (ssize_t)len);
	close(fd);
}

/* Render d; the caller frees b.p.  Also saved as NAME for the XML check. */
static char *render(const struct plot_data *d, const char *name, size_t *len)
{
	struct svg_buf b = { 0 };
	cr_assert_eq(svg_render(d, &b), 0);
	cr_assert_not_null(b.p);
	save(tmp_path(name), b.p, b.len);
	if (len)
		*len = b.len;
	return b.p;
}

static int xml_ok(const char *name)
{
	return py("plot_wellformed.py", tmp_path(name), NULL) == 0;
}

/* A small run: 2 s, RSS up to 123.4 MB at 1.5 s, heap with a gap. */
static struct plot_point small_rss[200], small_heap[200];
static struct plot_proc small_procs[9];
static struct plot_marker small_marks[2] = { { 0.5, "load" }, { 1.2, "compute" } };
static double small_starts[] = { 0.01, 0.3, 0.6 }, small_exits[] = { 1.9 };

static struct plot_data small_data(void)
{
	for (int i = 0; i < 200; i++) {
		double t = 0.01 * (i + 1);
		small_rss[i] = (struct plot_point){ t, 10e6 + 50e6 * t };
		small_heap[i] = (struct plot_point){ t, i >= 80 && i < 90 ? -1 : 5e6 + 20e6 * t };
	}
	small_rss[149].v = 123.4e6; /* t = 1.5 */
	for (int i = 0; i < 9; i++)
		small_procs[i] = (struct plot_proc){ "pid 1 worker", 0.1 * i, 1.0 + 0.1 * i,
						     (i + 1) * 1e6, 0.5 + 0.1 * i, 0 };
	return (struct plot_data){
		.title = "memsup: worker --fast",
		.rss = small_rss, .n_rss = 200, .heap = small_heap, .n_heap = 200,
		.procs = small_procs, .n_procs = 9,
		.markers = small_marks, .n_markers = 2,
		.starts = small_starts, .n_starts = 3, .exits = small_exits, .n_exits = 1,
		.have_peak = 1, .peak_t = 1.5, .peak_bytes = 123.4e6, .t_end = 2.0,
	};
}

Test(plot, well_formed_and_deterministic)
{
	struct plot_data d = small_data();
	size_t n1, n2;
	char *a = render(&d, "a.svg", &n1), *b = render(&d, "b.svg", &n2);
	cr_assert(xml_ok("a.svg"), "not well-formed XML: %s", tmp_path("a.svg"));
	cr_assert_eq(n1, n2);
	cr_assert_eq(memcmp(a, b, n1), 0, "the same data drew different bytes");
	/* default size; everything the picture must show is there */
	cr_expect_not_null(strstr(a, "width=\"960\" height=\"540\""));
	cr_expect_not_null(strstr(a, "class=\"rss\""));
	cr_expect_not_null(strstr(a, "class=\"heap\""));
	cr_expect_not_null(strstr(a, "class=\"marker\""));
	cr_expect_not_null(strstr(a, ">compute</text>"));
	cr_expect_not_null(strstr(a, "class=\"starts\""));
	cr_expect_not_null(strstr(a, "class=\"exits\""));
	/* 9 processes: the top 5 by peak, then "4 other processes" */
	cr_expect_not_null(strstr(a, "peak 9.00 MB"), "largest process not in a lane");
	cr_expect_not_null(strstr(a, "4 other processes, largest 4.00 MB"));
	cr_expect_null(strstr(a, "peak 4.00 MB"), "the 6th process has a lane of its own");
	/* the heap gap splits its line in two segments */
	const char *h = strstr(a, "class=\"heap\"");
	const char *he = strchr(strstr(h, " d=\""), '>');
	int moves = 0;
	for (const char *p = strstr(h, " d=\"") + 4; p < he; p++)
		moves += *p == 'M';
	cr_expect_eq(moves, 2, "heap segments: %d", moves);
	free(a);
	free(b);
}

Test(plot, peak_label_shows_value_and_time)
{
	struct plot_data d = small_data();
	char *s = render(&d, "peak.svg", NULL);
	cr_expect_not_null(strstr(s, ">peak 123 MB at 1.50 s</text>"), "%s", strstr(s, "class=\"peak\""));
	free(s);
	d.peak_bytes = 2.5e9;
	d.peak_t = 0.25;
	d.t_end = 0.5;
	s = render(&d, "peak2.svg", NULL);
	cr_expect_not_null(strstr(s, ">peak 2.50 GB at 0.250 s</text>"), "%s", strstr(s, "class=\"peak\""));
	cr_expect_not_null(strstr(s, "memory (GB)"));
	free(s);
	d.have_peak = 0;
	s = render(&d, "nopeak.svg", NULL);
	cr_expect_null(strstr(s, "class=\"peak\""));
	free(s);
}

Test(plot, budget_line_iff_budget)
{
	struct plot_data d = small_data();
	char *s = render(&d, "nob.svg", NULL);
	cr_expect_null(strstr(s, "class=\"budget\""));
	cr_expect_null(strstr(s, "budget"));
	free(s);
	d.budget_bytes = 200e6;
	s = render(&d, "b200.svg", NULL);
	cr_assert(xml_ok("b200.svg"));
	const char *g = strstr(s, "<g class=\"budget\"><path");
	cr_expect_not_null(g, "no budget line");
	cr_expect_not_null(strstr(s, ">budget 200 MB</text>"));
	/* the axis reaches the budget: a 250 MB tick exists (step 50 MB) */
	cr_expect_not_null(strstr(s, ">250</text>"));
	free(s);
	/* far above the data: said, not drawn to scale */
	d.budget_bytes = 8192e6;
	s = render(&d, "b8g.svg", NULL);
	cr_expect_not_null(strstr(s, ">budget 8.19 GB (far above: not to scale)</text>"));
	cr_expect_null(strstr(s, "<g class=\"budget\"><path"));
	cr_expect_not_null(strstr(s, "memory (MB)"), "an 8 GB budget squashed a 123 MB plot");
	free(s);
}

Test(plot, hostile_text_is_escaped)
{
	static const char bad[] = "a&b<c>d\"e'f]]>\x01\x1b[31m\t\xff\xc0\xaf\xed\xa0\x80\xef\xbf\xbe"
				  "\xe2\x82\xac ok \xf4\x90\x80\x80<!--x-->";
	struct plot_data d = small_data();
	struct plot_proc p[1] = { { bad, 0, 1, 1e6, 0.5, 0 } };
	struct plot_marker m[1] = { { 1.0, bad } };
	d.title = bad;
	d.procs = p;
	d.n_procs = 1;
	d.markers = m;
	d.n_markers = 1;
	char *s = render(&d, "hostile.svg", NULL);
	cr_assert(xml_ok("hostile.svg"), "hostile text broke the XML: %s", tmp_path("hostile.svg"));
	cr_expect_not_null(strstr(s, "a&amp;b&lt;c&gt;d&quot;e&apos;f]]&gt;"));
	cr_expect_null(strstr(s, "<!--x"));
	cr_expect_null(strchr(s, '\x01'));
	cr_expect_null(strchr(s, '\x1b'));
	cr_expect_null(strstr(s, "\xff"));
	cr_expect_null(strstr(s, "\xed\xa0"), "a surrogate went through");
	cr_expect_null(strstr(s, "\xef\xbf\xbe"), "U+FFFE went through");
	cr_expect_not_null(strstr(s, "\xe2\x82\xac ok "), "valid UTF-8 (the euro sign) was lost");
	/* python reads the title back: every bad byte is one U+FFFD */
	cr_expect_eq(py("plot_title.py", tmp_path("hostile.svg"), NULL), 0);
	free(s);
}

/* An hour at 100 samples/s, with one 5 GB spike among 1-2 GB: a small
 * file, and the spike still reaches the peak dot. */
Test(plot, hour_at_100hz_is_small_and_keeps_spikes, .timeout = 60)
{
	size_t n = 360000;
	struct plot_point *rss = malloc(n * sizeof *rss), *heap = malloc(n * sizeof *heap);
	cr_assert(rss && heap);
	unsigned x = 12345;
	for (size_t i = 0; i < n; i++) {
		x = x * 1103515245u + 12345u;
		double t = (double)(i + 1) / 100;
		rss[i] = (struct plot_point){ t, 1e9 + (double)(x >> 8 & 0xffff) / 65535.0 * 1e9 };
		heap[i] = (struct plot_point){ t, rss[i].v / 2 };
	}
	rss[200000].v = 5e9;
	struct plot_data d = {
		.title = "hour", .rss = rss, .n_rss = n, .heap = heap, .n_heap = n,
		.have_peak = 1, .peak_t = rss[200000].t, .peak_bytes = 5e9, .t_end = 3600,
	};
	size_t len;
	char *s = render(&d, "hour.svg", &len);
	cr_assert(xml_ok("hour.svg"));
	cr_expect_lt(len, 100000, "an hour at 100 Hz took %zu bytes", len);
	cr_expect_not_null(strstr(s, "time since start (min)"));
	cr_expect_not_null(strstr(s, "memory (GB)"));
	/* the topmost point of the RSS line is the peak dot's height */
	cr_expect_eq(py("plot_spike.py", tmp_path("hour.svg"), NULL), 0, "the spike did not survive");
	free(s);
	free(rss);
	free(heap);
}

static int is_125(double step, double scale)
{
	double m = step / scale;
	while (m >= 10)
		m /= 10;
	while (m < 1)
		m *= 10;
	return (m > 0.999 && m < 1.001) || (m > 1.999 && m < 2.001) || (m > 4.999 && m < 5.001);
}

Test(plot, axes_pick_sane_units)
{
	struct svg_axis a;
	svg_axis_time(0.010, 6, &a);
	cr_expect_str_eq(a.unit, "ms");
	cr_expect(is_125(a.step, 1), "time step %g", a.step);
	cr_expect_leq(a.step, 0.005);
	svg_axis_time(45, 6, &a);
	cr_expect_str_eq(a.unit, "s");
	svg_axis_time(3600, 8, &a);
	cr_expect_str_eq(a.unit, "min");
	cr_expect(is_125(a.step, 60), "minute step %g s", a.step);
	svg_axis_time(5 * 3600, 8, &a);
	cr_expect_str_eq(a.unit, "h");
	svg_axis_bytes(1e6, 6, &a);
	cr_expect_str_eq(a.unit, "MB");
	cr_expect_geq(a.max, 1e6);
	svg_axis_bytes(100e9, 6, &a);
	cr_expect_str_eq(a.unit, "GB");
	cr_expect_geq(a.max, 100e9);
	cr_expect_leq(a.max, 130e9);
	cr_expect(is_125(a.step, 1), "byte step %g", a.step);
	svg_axis_bytes(730e3, 6, &a);
	cr_expect_str_eq(a.unit, "kB");
	char buf[64];
	svg_format_value(&a, 123456, buf, sizeof buf);
	cr_expect_str_eq(buf, "123 kB");

	/* and in the picture: a 10 ms run of 1 MB, a 3-hour run of 100 GB */
	struct plot_point p1[] = { { 0.001, 0.5e6 }, { 0.005, 1e6 }, { 0.010, 0.8e6 } };
	struct plot_data d = { .rss = p1, .n_rss = 3, .have_peak = 1, .peak_t = 0.005,
			       .peak_bytes = 1e6 };
	char *s = render(&d, "10ms.svg", NULL);
	cr_expect_not_null(strstr(s, "time since start (ms)"));
	cr_expect_not_null(strstr(s, ">peak 1.00 MB at 5.00 ms</text>"));
	free(s);
	struct plot_point p2[] = { { 1, 1e9 }, { 5000, 100e9 }, { 10800, 50e9 } };
	d = (struct plot_data){ .rss = p2, .n_rss = 3, .have_peak = 1, .peak_t = 5000,
				.peak_bytes = 100e9 };
	s = render(&d, "100g.svg", NULL);
	cr_expect_not_null(strstr(s, "time since start (h)"));
	cr_expect_not_null(strstr(s, "memory (GB)"));
	cr_expect_not_null(strstr(s, ">peak 100 GB at 1.39 h</text>"));
	free(s);
}

Test(plot, size_is_bounded)
{
	struct plot_data d = small_data();
	d.width = 1;
	d.height = 100000;
	char *s = render(&d, "tiny.svg", NULL);
	cr_expect_not_null(strstr(s, "width=\"320\" height=\"8192\""));
	cr_assert(xml_ok("tiny.svg"));
	free(s);
	/* nothing at all still draws */
	struct plot_data empty = { 0 };
	s = render(&empty, "empty.svg", NULL);
	cr_assert(xml_ok("empty.svg"));
	free(s);
}

/* ---- plot.c: loading a directory ---- */

static int dir_with(const char *name, const char *files[][2])
{
	const char *dir = tmp_path(name);
	cr_assert_eq(mkdir(dir, 0755), 0);
	for (int i = 0; files[i][0]; i++) {
		char p[512];
		snprintf(p, sizeof p, "%s/%s", dir, files[i][0]);
		save(p, files[i][1], strlen(files[i][1]));
	}
	int fd = open(dir, O_RDONLY | O_DIRECTORY);
	cr_assert_geq(fd, 0);
	return fd;
}

Test(plot, partial_directory_degrades)
{
	/* killed mid-way: no processes.json, no timeline.jsonl, a torn last line */
	const char *files[][2] = {
		/* the fixed form (fast path), other valid JSON (jsonr), invalid
		 * lines both refuse, and a torn last line */
		{ "rss.jsonl", "[0.01, 1000000]\n[0.5,42000000]\n[ 1.0 , 2e6 ]\n[0x10, 5]\n"
			       "[02, 5]\n[3, 5]]\n[-, 5]\n[9.0, 99" },
		{ "resources.json", "{\"command\": [\"/usr/bin/make\", \"-j2\"], \"rss_budget_mb\": null,"
				    " \"peak_tree_rss_mb\": 42.0, \"peak_tree_rss_at_s\": 0.5,"
				    " \"wall_s\": 1.0, \"reason\": \"running\"}" },
		{ NULL, NULL },
	};
	int fd = dir_with("partial", files);
	struct plot_set s;
	char err[256] = "";
	cr_assert_eq(plot_load(fd, &s, err, sizeof err), 0, "%s", err);
	cr_expect_eq(s.d.n_rss, 3, "a torn or invalid line was read");
	cr_expect(s.d.n_rss == 3 && s.d.rss[1].t == 0.5 && s.d.rss[1].v == 42e6 &&
		  s.d.rss[2].t == 1.0 && s.d.rss[2].v == 2e6);
	cr_expect_eq(s.d.n_heap, 0);
	cr_expect_str_eq(s.d.title, "memsup: make -j2");
	cr_expect_str_eq(s.d.subtitle, "running, 1.00 s");
	cr_expect(s.d.have_peak && s.d.peak_bytes == 42e6 && s.d.peak_t == 0.5);
	cr_expect_eq(s.d.budget_bytes, 0);
	plot_set_free(&s);
	cr_assert_eq(plot_write_dir(fd, "partial", 0, 0, err, sizeof err), 0, "%s", err);
	cr_assert(xml_ok("partial/timeline.svg"));
	cr_expect(!path_exists(tmp_path("partial/timeline.svg.tmp")));
	close(fd);

	/* a torn resources.json: the samples are still drawn */
	const char *torn[][2] = {
		{ "resources.json", "{\"command\": [\"x\"], \"peak_tr" },
		{ "timeline.jsonl", "{\"t\": 0.1, \"rss\": 5000000, \"heap\": null}\n"
				    "{\"t\": 0.2, \"rss\": 6000000, \"heap\": 1000}\n" },
		{ NULL, NULL },
	};
	fd = dir_with("torn", torn);
	cr_assert_eq(plot_load(fd, &s, err, sizeof err), 0, "%s", err);
	cr_expect_eq(s.d.n_rss, 2, "RSS from timeline.jsonl when rss.jsonl is missing");
	cr_expect_eq(s.d.n_heap, 2);
	cr_expect_lt(s.d.heap[0].v, 0, "a null heap is not zero");
	cr_expect_eq(s.d.heap[1].v, 1000);
	cr_expect_eq(s.d.have_peak, 0);
	plot_set_free(&s);
	close(fd);

	/* nothing there: an error, nothing written */
	const char *none[][2] = { { "stdout.log", "hello\n" }, { NULL, NULL } };
	fd = dir_with("none", none);
	cr_expect_eq(plot_write_dir(fd, "none", 0, 0, err, sizeof err), -ENOENT);
	cr_expect_not_null(strstr(err, "none: no evidence"), "%s", err);
	cr_expect(!path_exists(tmp_path("none/timeline.svg")));
	close(fd);

	/* garbage in every evidence file: an error naming what could not be
	 * read, as memsup report calls it broken, not an empty picture */
	const char *garbage[][2] = {
		{ "resources.json", "\x94\x01\xff not json" },
		{ "rss.jsonl", "\x01\x02\x03\n[x, y]\n" },
		{ NULL, NULL },
	};
	fd = dir_with("garbage", garbage);
	cr_expect_eq(plot_write_dir(fd, "garbage", 0, 0, err, sizeof err), -EINVAL);
	cr_expect_not_null(strstr(err, "garbage: nothing readable here: resources.json: line 1"),
			   "%s", err);
	cr_expect(!path_exists(tmp_path("garbage/timeline.svg")));
	close(fd);
}

Test(plot, markers_from_phases_and_processes)
{
	const char *files[][2] = {
		{ "resources.json",
		  "{\"command\": [\"job\"], \"rss_budget_mb\": 100, \"wall_s\": 3.004,"
		  " \"reason\": \"rss_budget_exceeded\", \"exit_code\": -9, \"signal\": 9,"
		  " \"markers\": [], \"phases\": [{\"label\": \"(start)\", \"start_s\": 0, \"end_s\": 1},"
		  " {\"label\": \"train\", \"start_s\": 1, \"end_s\": 3}]}" },
		{ "processes.json",
		  "[{\"pid\": 7, \"argv\": [\"/bin/job\", \"--x\"], \"first_seen_s\": 0.1,"
		  " \"last_seen_s\": 2.9, \"polled_peak_rss\": 50000000, \"polled_peak_at_s\": 2,"
		  " \"exit_code\": 0, \"record\": null},"
		  " {\"pid\": 8, \"argv\": [], \"first_seen_s\": null, \"last_seen_s\": null,"
		  " \"polled_peak_rss\": null, \"exit_code\": null,"
		  " \"record\": {\"start_s\": 1.5, \"end_s\": 1.6}},"
		  /* the one record layout: the image's life beside its record */
		  " {\"pid\": 9, \"argv\": [], \"first_seen_s\": null, \"last_seen_s\": null,"
		  " \"start_s\": 2.25, \"end_s\": 2.5, \"polled_peak_rss\": null,"
		  " \"exit_code\": 0, \"record\": {\"state\": \"exited\", \"start_mono_ns\": 9}}]" },
		{ NULL, NULL },
	};
	int fd = dir_with("phases", files);
	struct plot_set s;
	char err[256];
	cr_assert_eq(plot_load(fd, &s, err, sizeof err), 0, "%s", err);
	cr_assert_eq(s.d.n_markers, 2);
	cr_expect_str_eq(s.d.markers[1].label, "train");
	cr_expect_str_eq(s.d.subtitle, "rss_budget_exceeded, signal 9, 3.00 s");
	cr_expect_eq(s.d.markers[1].t, 1);
	cr_expect_eq(s.d.budget_bytes, 100e6);
	cr_expect_eq(s.d.n_procs, 1, "a never-sampled process got a lane");
	cr_expect_str_eq(s.d.procs[0].label, "pid 7 job --x");
	cr_expect_eq(s.d.n_starts, 3);
	cr_expect_eq(s.d.n_exits, 3);
	cr_expect_eq(s.d.starts[2], 2.25);
	cr_expect_eq(s.d.exits[2], 2.5);
	plot_set_free(&s);
	close(fd);
}

/* processes.json is read an image at a time (jsonr_read_file_each): many
 * images cross the arrays' growth steps in order; a torn file gives no
 * lanes at all rather than the images before the tear. */
Test(plot, processes_read_one_image_at_a_time)
{
	size_t cap = 1000 * 200 + 16, len = 0;
	char *text = malloc(cap);
	cr_assert_not_null(text);
	text[len++] = '[';
	for (int i = 0; i < 1000; i++)
		len += (size_t)snprintf(text + len, cap - len,
					"%s{\"pid\": %d, \"argv\": [\"/bin/w%d\"], "
					"\"first_seen_s\": %d, \"last_seen_s\": %d.5, "
					"\"polled_peak_rss\": %d, \"exit_code\": 0, \"record\": null}",
					i ? ", " : "", 100 + i, i, i, i, 1000 * (i + 1));
	text[len++] = ']';
	text[len] = '\0';
	const char *files[][2] = { { "processes.json", text }, { NULL, NULL } };
	int fd = dir_with("many", files);
	struct plot_set s;
	char err[256];
	cr_assert_eq(plot_load(fd, &s, err, sizeof err), 0, "%s", err);
	cr_assert_eq(s.d.n_procs, 1000);
	cr_assert_eq(s.d.n_starts, 1000);
	cr_assert_eq(s.d.n_exits, 1000);
	cr_expect_str_eq(s.d.procs[999].label, "pid 1099 w999");
	cr_expect_eq(s.d.procs[999].peak_bytes, 1e6);
	cr_expect_eq(s.d.procs[500].last_s, 500.5);
	plot_set_free(&s);
	close(fd);

	text[len / 2] = '\0'; /* cut in the middle of an image */
	const char *torn[][2] = { { "resources.json", "{\"command\": [\"w\"], \"wall_s\": 2}" },
				  { "processes.json", text }, { NULL, NULL } };
	fd = dir_with("torn", torn);
	cr_assert_eq(plot_load(fd, &s, err, sizeof err), 0, "%s", err);
	cr_expect_eq(s.d.n_procs, 0, "lanes from a torn processes.json");
	cr_expect_eq(s.d.n_starts, 0);
	cr_expect_eq(s.d.n_exits, 0);
	plot_set_free(&s);
	close(fd);
	free(text);
}

/* ---- memsup plot ---- */

static int run_main(const char *const *args, char *out, size_t cap)
{
	char *argv[16];
	int argc = 0;
	argv[argc++] = "plot";
	for (int i = 0; args[i]; i++)
		argv[argc++] = (char *)args[i];
	argv[argc] = NULL;
	fflush(NULL);
	int saved = dup(2), saved1 = dup(1);
	int fd = open(tmp_path("main.err"), O_WRONLY | O_CREAT | O_TRUNC, 0644);
	int fo = open(tmp_path("main.out"), O_WRONLY | O_CREAT | O_TRUNC, 0644);
	dup2(fd, 2);
	dup2(fo, 1);
	int rc = plot_main(argc, argv);
	fflush(NULL);
	dup2(saved, 2);
	dup2(saved1, 1);
	close(fd);
	close(fo);
	close(saved);
	close(saved1);
	slurp(tmp_path("main.err"), out, cap);
	return rc;
}

Test(plot, main_rejects_bad_values)
{
	const char *files[][2] = { { "rss.jsonl", "[0.1, 1000000]\n[0.2, 3000000]\n" }, { NULL, NULL } };
	close(dir_with("cli", files));
	char dir[256];
	snprintf(dir, sizeof dir, "%s", tmp_path("cli"));
	char err[4096];
	const char *a1[] = { dir, "--width", "wide", NULL };
	cr_expect_eq(run_main(a1, err, sizeof err), 125);
	cr_expect_not_null(strstr(err, "--width: 'wide'"), "%s", err);
	const char *a2[] = { dir, "--height=99999", NULL };
	cr_expect_eq(run_main(a2, err, sizeof err), 125);
	cr_expect_not_null(strstr(err, "--height: '99999' is out of range (a whole number from 240 to 8192)"), "%s", err);
	const char *a8[] = { dir, "--width", " 960", NULL };
	cr_expect_eq(run_main(a8, err, sizeof err), 125);
	cr_expect_not_null(strstr(err, "--width: ' 960' is not a number"), "%s", err);
	const char *a3[] = { dir, "--width", NULL };
	cr_expect_eq(run_main(a3, err, sizeof err), 125);
	cr_expect_not_null(strstr(err, "--width needs a value"), "%s", err);
	const char *a4[] = { dir, "--colour", "red", NULL };
	cr_expect_eq(run_main(a4, err, sizeof err), 125);
	cr_expect_not_null(strstr(err, "'--colour'"), "%s", err);
	const char *a5[] = { NULL };
	cr_expect_eq(run_main(a5, err, sizeof err), 125);
	const char *a6[] = { dir, dir, NULL };
	cr_expect_eq(run_main(a6, err, sizeof err), 125);
	const char *a7[] = { "/nonexistent/ev", NULL };
	cr_expect_eq(run_main(a7, err, sizeof err), 125);
	cr_expect_not_null(strstr(err, "/nonexistent/ev"), "%s", err);
	cr_expect(!path_exists(tmp_path("cli/timeline.svg")), "an error wrote a picture");

	/* and the good cases */
	const char *g1[] = { "--width", "1200", dir, NULL };
	cr_expect_eq(run_main(g1, err, sizeof err), 0, "%s", err);
	cr_assert(xml_ok("cli/timeline.svg"));
	char svg[65536];
	slurp(tmp_path("cli/timeline.svg"), svg, sizeof svg);
	cr_expect_not_null(strstr(svg, "width=\"1200\" height=\"540\""));
	const char *g2[] = { dir, "-o", "-", "--height", "300", NULL };
	cr_expect_eq(run_main(g2, err, sizeof err), 0, "%s", err);
	cr_assert(xml_ok("main.out"), "-o - did not write an SVG to stdout");
	slurp(tmp_path("main.out"), svg, sizeof svg);
	cr_expect_not_null(strstr(svg, "width=\"960\" height=\"300\""));
	/* -o on something that is not a regular file writes through it: a
	 * rename would have put a regular file in place of the FIFO */
	char fifo[256];
	snprintf(fifo, sizeof fifo, "%s", tmp_path("fifo"));
	cr_assert_eq(mkfifo(fifo, 0600), 0);
	int rd = open(fifo, O_RDONLY | O_NONBLOCK);
	cr_assert_geq(rd, 0);
	const char *g4[] = { dir, "-o", fifo, NULL };
	cr_expect_eq(run_main(g4, err, sizeof err), 0, "%s", err);
	struct stat st;
	cr_assert_eq(lstat(fifo, &st), 0);
	cr_expect(S_ISFIFO(st.st_mode), "-o FIFO replaced the FIFO");
	char head[6] = "";
	cr_expect_eq(read(rd, head, 5), 5);
	cr_expect_str_eq(head, "<?xml");
	close(rd);
	const char *g3[] = { "-h", NULL };
	cr_expect_eq(run_main(g3, err, sizeof err), 0);
}

/* The largest "cgroup" of DIR/timeline.jsonl in MB (read by timeline.h,
 * the format's owner), or -1 when no line has one. */
struct cgroup_max {
	double mb;
};

static int cgroup_max_line(void *ctx, const char *line, size_t len, int whole)
{
	struct cgroup_max *c = ctx;
	struct timeline_point x;
	if (timeline_parse_sample(line, len, whole, &x) == 0 && x.cgroup >= 0 &&
	    x.cgroup / 1e6 > c->mb)
		c->mb = x.cgroup / 1e6;
	return 0;
}

static double timeline_cgroup_max_mb(const char *dir)
{
	struct cgroup_max c = { -1 };
	int found, fd = open(dir, O_RDONLY | O_DIRECTORY);
	cr_assert_geq(fd, 0);
	cr_assert_eq(timeline_read_file(fd, "timeline.jsonl", cgroup_max_line, &c, &found), 0);
	close(fd);
	return c.mb;
}

/* End to end: memsup holds 60 MB (steady), then plot_write_dir on its
 * directory draws the peak of the picture's answer -- the cgroup's usage
 * where memsup had a memory cgroup, else the summed RSS memsup recorded --
 * and it is about 60 MB. */
Test(plot, end_to_end_peak_of_a_real_run, .timeout = 60)
{
	struct sup_run r;
	const char *args[] = { "--", prog("steady"), "60", "600", NULL };
	cr_assert_eq(memsup_run(&r, args), 0, "stderr: %s", r.err);
	rec_load(&r);
	double rec_peak = timeline_cgroup_max_mb(r.dir);
	if (rec_peak < 0)
		rec_peak = rec_num(&r, "peak_tree_rss_mb");
	char err[512];
	cr_assert_eq(plot_write_dir(-1, r.dir, 0, 0, err, sizeof err), 0, "%s", err);
	char path[PATH_MAX + 32];
	snprintf(path, sizeof path, "%s/timeline.svg", r.dir);
	cr_assert_eq(py("plot_wellformed.py", path, NULL), 0, "%s is not well-formed", path);
	static char svg[1 << 20];
	slurp(path, svg, sizeof svg);
	const char *p = strstr(svg, "<g class=\"peak\">");
	cr_assert_not_null(p, "no peak dot");
	p = strstr(p, ">peak ");
	cr_assert_not_null(p, "no peak label");
	double mb;
	char unit[8];
	cr_assert_eq(sscanf(p, ">peak %lf %7s", &mb, unit), 2);
	cr_expect_str_eq(unit, "MB");
	cr_expect_leq(mb - rec_peak, 0.051, "label %.1f MB, record %.3f MB", mb, rec_peak);
	cr_expect_geq(mb - rec_peak, -0.051, "label %.1f MB, record %.3f MB", mb, rec_peak);
	cr_expect_geq(mb, 60.0, "peak %.1f MB below the 60 MB held", mb);
	cr_expect_leq(mb, 70.0, "peak %.1f MB far above the 60 MB held", mb);
	cr_expect_not_null(strstr(svg, "memsup: steady 60 600"), "title from the command");
	cr_expect_not_null(strstr(svg, "class=\"lanes\""), "no process lane");
}

/* ---- the stacked bands --------------------------------------------------------- */

/* tests/py/plot_stack.py reads the SVG: per band path (class band-K /
 * band-other) its points; it checks that the top level (band-other) peaks
 * at the peak dot, that the RSS line's top is there too, and, at the
 * peak's column, that the level of each band k is the data's cumulative
 * share (argv[2]: "c0,c1,...,rss" in bytes), within the 0.1 px the
 * coordinates are rounded to. */

/* Three processes of known shape and a rest: 0..2 s at 1 kHz (several
 * samples per pixel column, so the column's choice matters), A = 10 MB
 * flat, B ramps 0..40 MB, C is 30 MB from 0.5 s to 1.5 s, the rest 5 MB;
 * the peak is at 1.499 s (10 + 29.98 + 30 + 5 MB), just before a cliff. */
#define NB 2000
static struct plot_stack bands_st[NB];
static struct plot_point bands_rss[NB];
static size_t bands_ip;

static struct plot_data bands_data(double *peak_t, double *cum)
{
	size_t ip = 0;
	for (int i = 0; i < NB; i++) {
		double t = 0.001 * (i + 1);
		double a = 10e6, bb = 20e6 * t, c = t >= 0.5 && t < 1.5 ? 30e6 : 0;
		bands_st[i] = (struct plot_stack){ t, a + bb + c + 5e6, { a, bb, c } };
		bands_rss[i] = (struct plot_point){ t, bands_st[i].rss };
		if (bands_st[i].rss > bands_st[ip].rss)
			ip = i;
	}
	bands_ip = ip;
	*peak_t = bands_st[ip].t;
	cum[0] = bands_st[ip].band[0];
	cum[1] = cum[0] + bands_st[ip].band[1];
	cum[2] = cum[1] + bands_st[ip].band[2];
	cum[3] = bands_st[ip].rss;
	return (struct plot_data){
		.title = "bands", .rss = bands_rss, .n_rss = NB, .stack = bands_st, .n_stack = NB,
		.band_labels = { "pid 11 alpha", "pid 12 beta", "pid 13 gamma" }, .n_bands = 3,
		.have_peak = 1, .peak_t = *peak_t, .peak_bytes = cum[3], .t_end = 2.0,
	};
}

Test(plot, bands_stack_to_the_tree_rss_at_the_peak)
{
	double pt, cum[4];
	struct plot_data d = bands_data(&pt, cum);
	cr_assert_float_eq(pt, 1.499, 1e-9);
	char *s = render(&d, "bands.svg", NULL);
	cr_assert(xml_ok("bands.svg"));
	char want[160];
	snprintf(want, sizeof want, "%.0f,%.0f,%.0f,%.0f", cum[0], cum[1], cum[2], cum[3]);
	cr_expect_eq(py("plot_stack.py", tmp_path("bands.svg"), want), 0, "stack at the peak: %s", want);
	cr_expect_not_null(strstr(s, ">pid 11 alpha<"), "legend names band 0");
	cr_expect_not_null(strstr(s, ">pid 13 gamma<"), "legend names band 2");
	cr_expect_not_null(strstr(s, ">other processes<"), "a rest of 5 MB is a band");
	cr_expect_null(strstr(s, "rss-area"), "the single area is not drawn under bands");
	free(s);

	/* at 320 px (a column holds ~8 samples, the stack keeps the max) */
	d.width = 320;
	s = render(&d, "bands320.svg", NULL);
	cr_assert(xml_ok("bands320.svg"));
	cr_expect_eq(py("plot_stack.py", tmp_path("bands320.svg"), want), 0, "320 px: %s", want);
	free(s);

	/* no rest: no "other processes" in the legend, and a breakdown that
	 * claims more than the total is clipped to it */
	d = bands_data(&pt, cum);
	for (int i = 0; i < NB; i++)
		bands_st[i].rss = bands_rss[i].v = bands_st[i].band[0] + bands_st[i].band[1] +
						   bands_st[i].band[2];
	bands_st[10].band[0] = 1e12;
	d.peak_bytes = bands_st[bands_ip].rss; /* still at 1.499 s, 5 MB lower */
	s = render(&d, "bands-no-rest.svg", NULL);
	cr_expect_null(strstr(s, ">other processes<"));
	snprintf(want, sizeof want, "%.0f,%.0f,%.0f,%.0f", cum[0], cum[1], cum[2], cum[2]);
	cr_expect_eq(py("plot_stack.py", tmp_path("bands-no-rest.svg"), want), 0);
	free(s);
}

/* The loader: "top" through the fast form and through jsonr, bands chosen
 * by peak, stacked by first sight, labelled from processes.json; without
 * "top" (older evidence) no breakdown and one area. */
Test(plot, bands_from_an_evidence_directory)
{
	const char *files[][2] = {
		{ "processes.json",
		  "[{\"pid\": 5, \"argv\": [\"/bin/sh\", \"-c\", \"x\"], \"first_seen_s\": 0.1,"
		  " \"last_seen_s\": 0.1, \"polled_peak_rss\": 1000},"
		  " {\"pid\": 5, \"gen\": 1, \"argv\": [\"/usr/bin/big\", \"--y\"], \"first_seen_s\": 0.2,"
		  " \"last_seen_s\": 0.4, \"polled_peak_rss\": 9000000},"
		  " {\"pid\": 6, \"argv\": [\"small\"], \"first_seen_s\": 0.1,"
		  " \"last_seen_s\": 0.4, \"polled_peak_rss\": 2000000}]" },
		{ "timeline.jsonl",
		  /* the fixed form, pss included */
		  "{\"t\": 0.1, \"rss\": 3000000, \"processes\": 2, \"heap\": null, \"mapped_anon\": null,"
		  " \"mapped_file\": null, \"top\": [[6, 2000000], [5, 1000]]}\n"
		  "{\"t\": 0.2, \"rss\": 9500000, \"processes\": 2, \"heap\": 5, \"mapped_anon\": 0,"
		  " \"mapped_file\": 0, \"pss\": 7, \"top\": [[5, 8000000], [6, 1000000]]}\n"
		  /* jsonr's: other spacing, key order, six entries (five taken:
		   * pid 12 is never seen, so five pids, one band each) */
		  "{\"top\":[[7,1],[8,1],[9,1],[6,3],[5,2],[12,9000000]],\"t\":0.3,\"rss\":9000005,"
		  "\"heap\":null}\n"
		  "{\"t\": 0.4, \"rss\": 100, \"processes\": 1, \"heap\": null, \"top\": []}\n" },
		{ NULL, NULL },
	};
	int fd = dir_with("tops", files);
	struct plot_set s;
	char err[256] = "";
	cr_assert_eq(plot_load(fd, &s, err, sizeof err), 0, "%s", err);
	cr_assert_eq(s.d.n_stack, 4);
	/* peaks: 5 -> 8e6, 6 -> 2e6, 7..9 -> 1 (12's 9e6 was the sixth
	 * entry); in order of first sight: 6, 5, 7, 8, 9 */
	cr_assert_eq(s.d.n_bands, 5);
	cr_expect_eq(s.d.bands_by_command, 0, "five pids: a band each");
	cr_expect_str_eq(s.d.band_labels[0], "pid 6 small");
	cr_expect_str_eq(s.d.band_labels[1], "pid 5 big", "named by the image that held most");
	cr_expect_str_eq(s.d.band_labels[2], "pid 7");
	cr_expect(s.d.stack[0].t == 0.1 && s.d.stack[0].rss == 3e6 &&
		  s.d.stack[0].band[0] == 2e6 && s.d.stack[0].band[1] == 1000);
	cr_expect(s.d.stack[1].band[0] == 1e6 && s.d.stack[1].band[1] == 8e6);
	cr_expect(s.d.stack[2].rss == 9000005 && s.d.stack[2].band[0] == 3 &&
		  s.d.stack[2].band[1] == 2 && s.d.stack[2].band[2] == 1 && s.d.stack[2].band[4] == 1);
	cr_expect(s.d.stack[3].rss == 100 && s.d.stack[3].band[1] == 0);
	cr_expect_eq(s.d.n_heap, 4);
	cr_expect_eq(s.d.heap[1].v, 5);
	cr_expect(s.d.procs[0].band == 2 && s.d.procs[1].band == 2 && s.d.procs[2].band == 1,
		  "lanes know their band");
	plot_set_free(&s);
	cr_assert_eq(plot_write_dir(fd, "tops", 0, 0, err, sizeof err), 0, "%s", err);
	cr_assert(xml_ok("tops/timeline.svg"));
	close(fd);

	const char *old[][2] = {
		{ "timeline.jsonl",
		  "{\"t\": 0.1, \"rss\": 3000000, \"processes\": 2, \"heap\": null}\n"
		  "{\"t\": 0.2, \"rss\": 4000000, \"processes\": 2, \"heap\": 7, \"mapped_anon\": 0,"
		  " \"mapped_file\": 0}\n" },
		{ "processes.json", "[{\"pid\": 5, \"argv\": [\"a\"], \"first_seen_s\": 0.1,"
				    " \"last_seen_s\": 0.2, \"polled_peak_rss\": 1000}]" },
		{ NULL, NULL },
	};
	fd = dir_with("old", old);
	cr_assert_eq(plot_load(fd, &s, err, sizeof err), 0, "%s", err);
	cr_expect_eq(s.d.n_stack, 0, "no \"top\": no breakdown");
	cr_expect_eq(s.d.n_bands, 0);
	cr_expect_eq(s.d.n_rss, 2);
	cr_expect_eq(s.d.n_heap, 2);
	plot_set_free(&s);
	cr_assert_eq(plot_write_dir(fd, "old", 0, 0, err, sizeof err), 0, "%s", err);
	cr_assert(xml_ok("old/timeline.svg"));
	static char svg[1 << 16];
	slurp(tmp_path("old/timeline.svg"), svg, sizeof svg);
	cr_expect_not_null(strstr(svg, "class=\"rss-area\""), "one area, as before");
	cr_expect_null(strstr(svg, "class=\"band "));
	cr_expect_not_null(strstr(svg, "Not stacked"), "the lanes say why");
	close(fd);
}

/* A long run: the breakdown is thinned past PLOT_MAX_STACK samples, pairs
 * keeping the larger tree RSS with its own breakdown, so the peak sample
 * survives whole; pids are noted from every line, thinned or not (pid 9
 * is in line 1000 only, which the thinning drops, and is still a band). */
Test(plot, bands_thinned_keep_the_peak_whole, .timeout = 60)
{
	const char *files[][2] = { { "processes.json", "[]" }, { NULL, NULL } };
	int fd = dir_with("long", files);
	FILE *f = fopen(tmp_path("long/timeline.jsonl"), "w");
	cr_assert_not_null(f);
	size_t n = 3 * PLOT_MAX_STACK + 7, ip = 123457;
	for (size_t i = 0; i < n; i++) {
		unsigned long a = 1000 + i % 97, b = 500 + i % 89, rest = 10;
		if (i == ip)
			a = 5000000, b = 3000000, rest = 7;
		fprintf(f, "{\"t\": %zu.5, \"rss\": %lu, \"processes\": 3, \"heap\": null, "
			"\"top\": [[%d, %lu], [%d, %lu]]}\n", i, a + b + rest, i == 1000 ? 9 : 3, a,
			4, b);
	}
	fclose(f);
	struct plot_set s;
	char err[256] = "";
	cr_assert_eq(plot_load(fd, &s, err, sizeof err), 0, "%s", err);
	cr_expect_leq(s.d.n_stack, PLOT_MAX_STACK);
	cr_expect_geq(s.d.n_stack, PLOT_MAX_STACK / 2);
	size_t best = 0;
	for (size_t i = 1; i < s.d.n_stack; i++) {
		cr_assert_lt(s.d.stack[i - 1].t, s.d.stack[i].t, "time order");
		if (s.d.stack[i].rss > s.d.stack[best].rss)
			best = i;
	}
	cr_assert_eq(s.d.n_bands, 3);
	/* order of first sight: 3 (line 0), 4 (line 0), 9 (line 1000) */
	cr_expect_str_eq(s.d.band_labels[0], "pid 3");
	cr_expect_str_eq(s.d.band_labels[2], "pid 9");
	const struct plot_stack *p = &s.d.stack[best];
	cr_expect(p->t == ip + 0.5 && p->rss == 8000007 && p->band[0] == 5e6 && p->band[1] == 3e6 &&
		  p->band[2] == 0, "the peak sample is not whole: t %g rss %g bands %g %g %g",
		  p->t, p->rss, p->band[0], p->band[1], p->band[2]);
	plot_set_free(&s);
	close(fd);
}

/* End to end on tests/progs/demo_tree (a 20 MB parent, three 40 MB
 * children): every timeline.jsonl line has "top" -- at most five, largest
 * first, pids of the tree, summing to no more than "rss" (to exactly rss
 * here: the tree never has more than four members) -- and the picture's
 * legend names the four demo_tree processes, its stack topping out at the
 * peak. */
Test(plot, end_to_end_bands_of_demo_tree, .timeout = 60)
{
	struct sup_run r;
	const char *args[] = { "--", prog("demo_tree"), NULL };
	cr_assert_eq(memsup_run(&r, args), 0, "stderr: %s", r.err);
	cr_expect_eq(py("plot_top.py", r.dir, NULL), 0, "timeline.jsonl's top");
	char err[512];
	cr_assert_eq(plot_write_dir(-1, r.dir, 0, 0, err, sizeof err), 0, "%s", err);
	char path[PATH_MAX + 32];
	snprintf(path, sizeof path, "%s/timeline.svg", r.dir);
	cr_expect_eq(py("plot_legend.py", r.dir, NULL), 0, "the legend of %s", path);
	cr_expect_eq(py("plot_stack.py", path, "0"), 0, "the stack's top is not the peak");
}

/* ---- the answer: the cgroup's line, its split, its limit, a heap off the scale ---- */

/* python3 tests/py/plot_answer.py MODE FILE ARGS... (see its head). */
static int answer_py(const char *mode, const char *file, const char *a, const char *b,
		     const char *c)
{
	char *argv[] = { "python3", (char *)py_script("plot_answer.py"), (char *)mode,
			 (char *)file, (char *)a, (char *)b, (char *)c, NULL };
	int st;
	fflush(NULL);
	pid_t pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		execvp("python3", argv);
		_exit(127);
	}
	while (waitpid(pid, &st, 0) < 0)
		cr_assert_eq(errno, EINTR);
	return WIFEXITED(st) ? WEXITSTATUS(st) : 1000 + WTERMSIG(st);
}

/* A growing text, for the fixture files. */
struct text {
	char *p;
	size_t len, cap;
};

__attribute__((format(printf, 2, 3)))
static void text_add(struct text *t, const char *fmt, ...)
{
	va_list ap;
	for (;;) {
		va_start(ap, fmt);
		int n = vsnprintf(t->p ? t->p + t->len : NULL, t->p ? t->cap - t->len : 0, fmt, ap);
		va_end(ap);
		cr_assert_geq(n, 0);
		if (t->p && (size_t)n < t->cap - t->len) {
			t->len += (size_t)n;
			return;
		}
		t->cap = (t->cap + (size_t)n + 1) * 2;
		t->p = realloc(t->p, t->cap);
		cr_assert_not_null(t->p);
	}
}

/* An evidence directory of a 5 s run sampled every 0.1 s (t = 0.1 .. 5.0):
 * resources.json (wall_s 5, the summed RSS peak), rss.jsonl, and
 * timeline.jsonl as fill() writes each sample's extra keys (after "heap",
 * before "top", as memsup writes them); two processes that share pages:
 * summed RSS = 2 x the cgroup's 50..140 MB ramp, peak at 4.0 s.  The
 * picture is drawn (plot_write_dir) and read back into *svg. */
typedef void (*sample_fill)(struct text *t, int i, double cgroup);

static double ramp_cgroup(int i)
{
	/* up to 140 MB at sample 39 (4.0 s), then down to 80 MB */
	return i <= 39 ? 50e6 + 90e6 * i / 39 : 80e6;
}

/* answer_dir() with the keys of tests/data/oom/OOM (NULL: none) in its
 * resources.json. */
static const char *answer_dir_oom(const char *name, sample_fill fill, double heap_mb_max,
				  const char *oom, char **svg);

static const char *answer_dir(const char *name, sample_fill fill, double heap_mb_max, char **svg)
{
	return answer_dir_oom(name, fill, heap_mb_max, NULL, svg);
}

static const char *answer_dir_oom(const char *name, sample_fill fill, double heap_mb_max,
				  const char *oom, char **svg)
{
	const char *dir = tmp_path(name);
	char d[256];
	snprintf(d, sizeof d, "%s", dir);
	cr_assert_eq(mkdir(d, 0755), 0);
	struct text tl = { 0 }, rss = { 0 }, res = { 0 }, pr = { 0 };
	for (int i = 0; i < 50; i++) {
		double t = 0.1 * (i + 1), cg = ramp_cgroup(i), rs = 2 * cg;
		/* the heap: a ramp to heap_mb_max at 3.0 s (sample 29) */
		double heap = heap_mb_max * 1e6 * (i <= 29 ? (i + 1) / 30.0 : 0.5);
		text_add(&rss, "[%.1f, %.0f]\n", t, rs);
		text_add(&tl, "{\"t\": %.1f, \"rss\": %.0f, \"processes\": 2, \"heap\": %.0f, "
			 "\"mapped_anon\": 0, \"mapped_file\": 0", t, rs, heap);
		if (fill)
			fill(&tl, i, cg);
		text_add(&tl, ", \"top\": [[100, %.0f], [101, %.0f]]}\n", cg, cg);
	}
	text_add(&res, "{\"command\": [\"/bin/pair\"], \"exit_code\": 0, \"wall_s\": 5.0, "
		 "\"peak_tree_rss_mb\": %.6f, \"peak_tree_rss_at_s\": 4.0, \"samples\": 50}",
		 2 * ramp_cgroup(39) / 1e6);
	static char rec[1 << 17];
	oom_record(oom, res.p, rec, sizeof rec);
	text_add(&pr, "[{\"pid\": 100, \"argv\": [\"/bin/pair\"], \"first_seen_s\": 0.1, "
		 "\"last_seen_s\": 5.0, \"polled_peak_rss\": 140000000, \"polled_peak_at_s\": 4.0},\n"
		 " {\"pid\": 101, \"argv\": [\"/bin/pair\", \"--child\"], \"first_seen_s\": 0.1, "
		 "\"last_seen_s\": 5.0, \"polled_peak_rss\": 140000000, \"polled_peak_at_s\": 4.0}]\n");
	const char *files[][2] = { { "timeline.jsonl", tl.p }, { "rss.jsonl", rss.p },
				   { "resources.json", rec }, { "processes.json", pr.p },
				   { NULL, NULL } };
	for (int k = 0; files[k][0]; k++) {
		char p[512];
		snprintf(p, sizeof p, "%s/%s", d, files[k][0]);
		save(p, files[k][1], strlen(files[k][1]));
	}
	free(tl.p);
	free(rss.p);
	free(res.p);
	free(pr.p);
	char err[512] = "";
	cr_assert_eq(plot_write_dir(-1, d, 0, 0, err, sizeof err), 0, "%s", err);
	char path[600];
	snprintf(path, sizeof path, "%s/timeline.svg", d);
	struct stat st;
	cr_assert_eq(stat(path, &st), 0);
	*svg = malloc((size_t)st.st_size + 1);
	cr_assert_not_null(*svg);
	slurp(path, *svg, (size_t)st.st_size + 1);
	static char out[4][600];
	static int slot;
	char *o = out[slot++ % 4];
	snprintf(o, 600, "%s", path);
	cr_assert_eq(py("plot_wellformed.py", o, NULL), 0, "%s is not well-formed", o);
	return o;
}

static void fill_cgroup(struct text *t, int i, double cg)
{
	(void)i;
	text_add(t, ", \"pss\": %.0f, \"cgroup\": %.0f", cg - 1e6, cg);
}

/* The cgroup's usage is drawn as the answer, labelled as such, at its true
 * height: 140 MB against a summed RSS of 280 MB (every page counted once
 * per process), the peak dot on it; the summed RSS says what it is. */
Test(plot, answer_is_the_cgroup_line, .timeout = 30)
{
	char *svg;
	const char *f = answer_dir("answer", fill_cgroup, 100, &svg);
	cr_expect_not_null(strstr(svg, "class=\"answer\""), "no answer line");
	cr_expect_not_null(strstr(svg, ">memory of the tree (cgroup, kernel)</text>"),
			   "the legend does not name the answer");
	cr_expect_not_null(strstr(svg, ">summed RSS (counts shared pages per process)</text>"),
			   "the legend does not say what summed RSS counts");
	cr_expect_null(strstr(svg, "polled Pss"), "Pss is not the answer beside a cgroup");
	cr_expect_not_null(strstr(svg, ">peak 140 MB at 4.00 s</text>"), "the peak is not the answer's");
	cr_expect_not_null(strstr(svg, ">summed RSS 280 MB</text>"), "the summed RSS peak is not named");
	cr_expect_eq(answer_py("line", f, "0.5", NULL, NULL), 0, "the line is not at 140/280");
	/* deterministic: drawn again, the same bytes */
	char *again;
	char err[512];
	char dir[600];
	snprintf(dir, sizeof dir, "%s", tmp_path("answer"));
	cr_assert_eq(plot_write_dir(-1, dir, 0, 0, err, sizeof err), 0, "%s", err);
	size_t n = strlen(svg) + 1;
	again = malloc(n + 16);
	cr_assert_not_null(again);
	slurp(f, again, n + 16);
	cr_expect_str_eq(again, svg, "the same directory drew different bytes");
	free(again);
	free(svg);
}

/* memory.stat's split: anon 70%, page cache 15%, shmem 5% and kernel 10%
 * of the cgroup's usage at each sample (the shares move: anon takes the
 * ramp), stacked in that order under the cgroup line, the last band's top
 * on the line at every column. */
static void split_of(int i, double cg, double p[4])
{
	p[1] = 15e6 + 0.1e6 * i;   /* page cache */
	p[2] = 5e6;                /* shmem */
	p[3] = 0.1 * cg;           /* kernel */
	p[0] = cg - p[1] - p[2] - p[3];
}

static void fill_split(struct text *t, int i, double cg)
{
	double p[4];
	split_of(i, cg, p);
	text_add(t, ", \"cgroup\": %.0f, \"cgroup_anon\": %.0f, \"cgroup_page_cache\": %.0f, "
		 "\"cgroup_shmem\": %.0f, \"cgroup_kernel\": %.0f", cg, p[0], p[1], p[2], p[3]);
}

Test(plot, kernel_split_stacks_to_the_cgroup_line, .timeout = 30)
{
	char *svg;
	const char *f = answer_dir("split", fill_split, 100, &svg);
	for (int k = 0; k < 4; k++) {
		static const char *const cls[] = { "kband-anon", "kband-page-cache", "kband-shmem",
						   "kband-kernel" };
		cr_expect_not_null(strstr(svg, cls[k]), "no %s band", cls[k]);
	}
	cr_expect_not_null(strstr(svg, ">anon</text>"));
	cr_expect_not_null(strstr(svg, ">page cache</text>"));
	cr_expect_not_null(strstr(svg, ">shmem</text>"));
	cr_expect_not_null(strstr(svg, ">kernel memory</text>"));
	double p[4];
	split_of(39, ramp_cgroup(39), p);
	char want[200];
	snprintf(want, sizeof want, "%.0f,%.0f,%.0f,%.0f,%.0f", p[0], p[0] + p[1], p[0] + p[1] + p[2],
		 p[0] + p[1] + p[2] + p[3], ramp_cgroup(39));
	cr_expect_eq(answer_py("kernel", f, want, NULL, NULL), 0, "the split does not stack: %s", want);
	/* the process bands moved to a panel of their own */
	cr_expect_not_null(strstr(svg, "<g class=\"panel\">"));
	cr_expect_not_null(strstr(svg, "class=\"band band-0\""));
	free(svg);
}

/* The limit's counters rise at 2.3 s (0 -> 3 hits) and 3.7 s (3 -> 4),
 * and an OOM kill at 4.5 s: a mark each, at those samples' times. */
static void fill_events(struct text *t, int i, double cg)
{
	int hits = i < 22 ? 0 : i < 36 ? 3 : 4, kills = i < 44 ? 0 : 1;
	text_add(t, ", \"cgroup\": %.0f, \"cgroup_limit_hits\": %d, \"cgroup_oom_kills\": %d", cg,
		 hits, kills);
}

Test(plot, limit_events_marked_at_their_samples, .timeout = 30)
{
	char *svg;
	const char *f = answer_dir("events", fill_events, 100, &svg);
	cr_expect_not_null(strstr(svg, "<title>limit hit at 2.30 s (3)</title>"), "2.3 s not marked");
	cr_expect_not_null(strstr(svg, "<title>limit hit at 3.70 s (1)</title>"), "3.7 s not marked");
	cr_expect_not_null(strstr(svg, "<title>OOM kill at 4.50 s (1)</title>"), "4.5 s not marked");
	cr_expect_not_null(strstr(svg, ">limit hit \xc3\x97" "3</text>"), "the first mark's label");
	cr_expect_not_null(strstr(svg, ">OOM kill</text>"));
	cr_expect_eq(answer_py("event", f, "oom", "4.5", "5"), 0, "the OOM kill's mark is misplaced");
	free(svg);
}

/* One rise only (0 -> 2 at 2.8 s): its mark alone, at its x. */

static void fill_one_event(struct text *t, int i, double cg)
{
	text_add(t, ", \"cgroup\": %.0f, \"cgroup_limit_hits\": %d, \"cgroup_oom_kills\": 0", cg,
		 i < 27 ? 0 : 2);
}

Test(plot, limit_event_marked_at_the_right_x, .timeout = 30)
{
	char *svg;
	const char *f = answer_dir("event", fill_one_event, 100, &svg);
	cr_expect_eq(answer_py("event", f, "limit", "2.8", "5"), 0, "the limit's mark is not at 2.8 s");
	cr_expect_null(strstr(svg, "class=\"event oom\""), "an OOM kill nobody counted");
	free(svg);
}

/* ---- the OOM kills' victims (resources.json's "oom", tests/data/oom) ---- */

/* The counter rises 0 -> 1 at 2.3 s and 1 -> 2 at 4.5 s: two_kills's. */
static void fill_two_kills(struct text *t, int i, double cg)
{
	text_add(t, ", \"cgroup\": %.0f, \"cgroup_oom_kills\": %d", cg, i < 22 ? 0 : i < 44 ? 1 : 2);
}

/* The OOM kill's mark names its victim, in the tooltip and as its label
 * (the comm escaped for XML), where the mark was before; and `memsup plot`
 * draws the same bytes as the run's end. */
Test(plot, oom_mark_names_its_victim, .timeout = 30)
{
	char *svg;
	const char *f = answer_dir_oom("oom1", fill_events, 100, "one_kill", &svg);
	cr_expect_not_null(strstr(svg, "<title>OOM kill: pid 4242 &apos;python&apos; at 4.50 s (1)</title>"),
			   "the tooltip does not name the victim");
	cr_expect_not_null(strstr(svg, ">OOM kill: pid 4242 &apos;python&apos;</text>"),
			   "the label does not name the victim");
	cr_expect_not_null(strstr(svg, "<title>limit hit at 2.30 s (3)</title>"), "the limit's marks stay");
	cr_expect_eq(answer_py("event", f, "oom", "4.5", "5"), 0, "the OOM kill's mark moved");

	/* memsup plot DIR -o -: the same picture */
	char dir[600], msg[512];
	snprintf(dir, sizeof dir, "%s", tmp_path("oom1"));
	const char *args[] = { dir, "-o", "-", NULL };
	cr_assert_eq(run_main(args, msg, sizeof msg), 0, "%s", msg);
	size_t n = strlen(svg) + 1;
	char *again = malloc(n + 16);
	cr_assert_not_null(again);
	slurp(tmp_path("main.out"), again, n + 16);
	cr_expect_str_eq(again, svg, "memsup plot drew another picture");
	free(again);
	free(svg);
}

/* svg_render alone: each victim on the mark nearest its time, its text
 * escaped, none on a limit's mark; one mark of two kills keeps its count
 * as its label and names both in its tooltip. */
Test(plot, oom_victims_on_the_nearest_mark)
{
	struct plot_data d = small_data();
	static const struct plot_event ev[] = { { 0.5, 2, 0 }, { 1.0, 0, 1 }, { 1.7, 0, 2 } };
	static const struct plot_oom oom[] = {
		{ 1.68, "pid 3 'b'" }, { 0.49, "pid 1 '<a&>'" }, { 1.72, "pid 4 'c'" },
	};
	d.events = ev;
	d.n_events = 3;
	d.ooms = oom;
	d.n_ooms = 3;
	char *svg = render(&d, "oom-near.svg", NULL);
	cr_expect_not_null(strstr(svg, "<title>limit hit at 0.500 s (2)</title>"), "a limit names no victim");
	cr_expect_not_null(strstr(svg, "<title>OOM kill: pid 1 &apos;&lt;a&amp;&gt;&apos; at 1.00 s (1)</title>"),
			   "the nearest OOM mark, escaped");
	cr_expect_not_null(strstr(svg, ">OOM kill: pid 1 &apos;&lt;a&amp;&gt;&apos;</text>"));
	cr_expect_not_null(strstr(svg, "<title>OOM kill: pid 3 &apos;b&apos;, pid 4 &apos;c&apos; at 1.70 s (2)"
				       "</title>"), "both victims of the second mark");
	cr_expect_not_null(strstr(svg, ">OOM kill \xc3\x97" "2</text>"), "two kills keep their count");
	cr_expect(xml_ok("oom-near.svg"));
	free(svg);
}

/* Two kills, two marks: each names the victim whose time is its own. */
Test(plot, two_oom_marks_each_their_victim, .timeout = 30)
{
	char *svg;
	const char *f = answer_dir_oom("oom2", fill_two_kills, 100, "two_kills", &svg);
	cr_expect_not_null(strstr(svg, "<title>OOM kill: pid 5001 &apos;worker&apos; at 2.30 s (1)</title>"),
			   "the first mark");
	cr_expect_not_null(strstr(svg, "<title>OOM kill: pid 5000 &apos;make&apos; at 4.50 s (1)</title>"),
			   "the second mark");
	cr_expect_null(strstr(svg, "&apos;worker&apos;, "), "a victim named on both marks");
	cr_expect_eq(py("plot_wellformed.py", f, NULL), 0);
	free(svg);
}

/* A record that names no one -- none listed, no way to see one, a memsup
 * before the list, a forged list -- leaves the counted mark as it was; a
 * victim the kill could not be traced to is said to be one. */
Test(plot, oom_mark_without_a_named_victim, .timeout = 30)
{
	static const char *const plain[] = { "none", "unseen", "older", "forged_string", "forged_victim" };
	for (size_t i = 0; i < sizeof plain / sizeof plain[0]; i++) {
		char *svg, name[32];
		snprintf(name, sizeof name, "oom-%s", plain[i]);
		answer_dir_oom(name, fill_events, 100, plain[i], &svg);
		cr_expect_not_null(strstr(svg, "<title>OOM kill at 4.50 s (1)</title>"), "%s", plain[i]);
		cr_expect_null(strstr(svg, "OOM kill: "), "%s: a victim named", plain[i]);
		free(svg);
	}
	char *svg;
	answer_dir_oom("oom-unnamed", fill_events, 100, "unnamed", &svg);
	cr_expect_not_null(strstr(svg, "<title>OOM kill: an unidentified process at 4.50 s (1)</title>"));
	free(svg);
}

/* No memory cgroup: the samples count no kill, but the kernel's log named
 * one.  The record's kill is a mark of its own at its time, its comm's
 * quote escaped, its letter kept and its byte that is not UTF-8 replaced. */
Test(plot, oom_of_the_record_alone_is_marked, .timeout = 30)
{
	char *svg;
	const char *f = answer_dir_oom("oom-log", NULL, 100, "odd_comm", &svg);
	cr_expect_not_null(strstr(svg, "<title>OOM kill: pid 6006 &apos;it&apos;s-\xc3\xa9\xef\xbf\xbd&apos; "
				       "at 4.50 s (1)</title>"), "the tooltip");
	cr_expect_eq(answer_py("event", f, "oom", "4.5", "5"), 0, "the mark is not at the kill's time");
	cr_expect_not_null(strstr(svg, ">OOM kill: pid 6006 &apos;it&apos;s-\xc3\xa9\xef\xbf\xbd&apos;</text>"),
			   "the label");
	cr_expect_not_null(strstr(svg, ">OOM kill</text>"), "the legend names the mark");
	free(svg);
}

/* xz -9's shape: a heap 6 times the resident memory (requested, never
 * touched) leaves the summed RSS most of the plot's height; the heap runs
 * along the top, marked where it peaks with its true figure. */
Test(plot, heap_off_the_scale_is_clipped, .timeout = 30)
{
	char *svg;
	/* summed RSS peaks at 280 MB; the heap at 6 x 280 = 1,680 MB at 3.0 s */
	const char *f = answer_dir("heap", NULL, 1680, &svg);
	cr_expect_not_null(strstr(svg, ">heap 1,680.0 MB \xe2\x86\x91 off the scale</text>"),
			   "the heap's true figure is not written");
	cr_expect_eq(answer_py("heap", f, "0.8", "3.0", "5"), 0, "the summed RSS is squeezed");
	free(svg);
}

/* ---- bands by command ---- */

/* A build's shape: 1,000 images of cc1, as and ld (334, 333, 333), each
 * seen by two samples 10 ms apart, two at a time; the bands are the three commands, each the
 * sum of its images at each sample, and every image's lane has its
 * command's colour. */
Test(plot, many_short_pids_band_by_command, .timeout = 30)
{
	static const char *const cmd[] = { "/usr/lib/gcc/x86_64-linux-gnu/12/cc1", "/usr/bin/as",
					   "/usr/bin/ld" };
	static const double bytes[] = { 30e6, 5e6, 10e6 };
	struct text pr = { 0 }, tl = { 0 };
	text_add(&pr, "[");
	for (int i = 0; i < 1000; i++)
		text_add(&pr, "%s{\"pid\": %d, \"argv\": [\"%s\", \"-o\", \"x%d\"], \"first_seen_s\": "
			 "%.3f, \"last_seen_s\": %.3f, \"polled_peak_rss\": %.0f, \"exit_code\": 0}\n",
			 i ? ", " : "", 2000 + i, cmd[i % 3], i, 0.01 * i + 0.005, 0.01 * i + 0.015,
			 bytes[i % 3]);
	text_add(&pr, "]\n");
	for (int i = 0; i < 1000; i++) {
		/* at 0.01 i + 0.005: image i and image i - 1, largest first */
		double a = bytes[i % 3], b = i ? bytes[(i - 1) % 3] : 0;
		text_add(&tl, "{\"t\": %.3f, \"rss\": %.0f, \"processes\": %d, \"heap\": null, "
			 "\"mapped_anon\": null, \"mapped_file\": null, \"top\": [", 0.01 * i + 0.005,
			 a + b + 1e6, i ? 3 : 2);
		if (!i)
			text_add(&tl, "[2000, %.0f]", a);
		else if (a >= b)
			text_add(&tl, "[%d, %.0f], [%d, %.0f]", 2000 + i, a, 1999 + i, b);
		else
			text_add(&tl, "[%d, %.0f], [%d, %.0f]", 1999 + i, b, 2000 + i, a);
		text_add(&tl, "]}\n");
	}
	const char *files[][2] = { { "processes.json", pr.p }, { "timeline.jsonl", tl.p },
				   { NULL, NULL } };
	int fd = dir_with("build", files);
	free(pr.p);
	free(tl.p);
	struct plot_set s;
	char err[256] = "";
	cr_assert_eq(plot_load(fd, &s, err, sizeof err), 0, "%s", err);
	cr_assert_eq(s.d.n_bands, 3, "%zu bands for 3 commands", s.d.n_bands);
	/* first seen: cc1 (0.005 s), as, ld */
	cr_expect_str_eq(s.d.band_labels[0], "cc1 (334 processes)");
	cr_expect_str_eq(s.d.band_labels[1], "as (333 processes)");
	cr_expect_str_eq(s.d.band_labels[2], "ld (333 processes)");
	/* each sample: image img's bytes and image img - 1's, in their commands */
	for (size_t i = 0; i < s.d.n_stack; i++) {
		const struct plot_stack *p = &s.d.stack[i];
		int img = (int)(p->t * 100); /* t = 0.01 img + 0.005 */
		if (img < 1 || img >= 999)
			continue;
		double want[3] = { 0, 0, 0 };
		want[img % 3] += bytes[img % 3];
		want[(img - 1) % 3] += bytes[(img - 1) % 3];
		cr_assert(p->band[0] == want[0] && p->band[1] == want[1] && p->band[2] == want[2],
			  "sample %zu (t %g): %g %g %g", i, p->t, p->band[0], p->band[1], p->band[2]);
	}
	for (size_t i = 0; i < s.d.n_procs; i++)
		cr_assert_eq(s.d.procs[i].band, (unsigned)(i % 3) + 1, "lane %zu's colour", i);
	plot_set_free(&s);
	cr_assert_eq(plot_write_dir(fd, "build", 0, 0, err, sizeof err), 0, "%s", err);
	close(fd);
	cr_assert(xml_ok("build/timeline.svg"));
	static char svg[1 << 18];
	slurp(tmp_path("build/timeline.svg"), svg, sizeof svg);
	cr_expect_not_null(strstr(svg, ">cc1 (334 processes)</text>"), "no cc1 band in the legend");
	cr_expect_not_null(strstr(svg, ">ld (333 processes)</text>"));
	cr_expect_not_null(strstr(svg, "class=\"band band-2\""));
	cr_expect_null(strstr(svg, "class=\"band band-3\""), "more bands than commands");
}

/* Without a memory cgroup the answer is the polled Pss: points at the
 * samples that read it (none between: Pss is read near the summed RSS
 * peaks only), labelled as such, the peak dot at the largest; beside a
 * cgroup line it is not drawn. */
Test(plot, pss_points_are_the_answer_without_a_cgroup)
{
	struct plot_data d = small_data();
	struct plot_point pss[3] = { { 1.0, 30e6 }, { 1.5, 61.7e6 }, { 1.6, 50e6 } };
	d.pss = pss;
	d.n_pss = 3;
	char *s = render(&d, "pss.svg", NULL);
	cr_assert(xml_ok("pss.svg"));
	const char *g = strstr(s, "<g class=\"answer pss\"");
	cr_assert_not_null(g, "no Pss points");
	size_t dots = 0;
	for (const char *p = g; (p = strstr(p, "<circle")) && p < strstr(g, "</g>"); p++)
		dots++;
	cr_expect_eq(dots, 3, "%zu points for 3 reads", dots);
	cr_expect_not_null(strstr(s, ">memory of the tree (polled Pss)</text>"));
	cr_expect_not_null(strstr(s, ">peak 61.7 MB at 1.50 s</text>"), "the peak is not Pss's");
	cr_expect_not_null(strstr(s, ">summed RSS 123 MB</text>"), "the summed RSS peak is not named");
	free(s);
	struct plot_point cg[2] = { { 0.5, 40e6 }, { 1.5, 70e6 } };
	d.cgroup = cg;
	d.n_cgroup = 2;
	s = render(&d, "pss-cg.svg", NULL);
	cr_expect_null(strstr(s, "polled Pss"), "Pss beside a cgroup line");
	cr_expect_not_null(strstr(s, "class=\"answer\""));
	free(s);
}

/* From a directory: without "cgroup" the "pss" of the samples that read it
 * are the answer's points (timeline.h keeps "pss" for the reader). */
static void fill_pss(struct text *t, int i, double cg)
{
	if (i >= 30 && i <= 45) /* read near the peak only */
		text_add(t, ", \"pss\": %.0f", cg);
}

Test(plot, pss_points_from_a_directory, .timeout = 30)
{
	char *svg;
	answer_dir("pss", fill_pss, 100, &svg);
	const char *g = strstr(svg, "<g class=\"answer pss\"");
	cr_assert_not_null(g, "no Pss points");
	size_t dots = 0;
	for (const char *p = g; (p = strstr(p, "<circle")) && p < strstr(g, "</g>"); p++)
		dots++;
	cr_expect_eq(dots, 16, "%zu points for 16 reads", dots);
	cr_expect_not_null(strstr(svg, ">memory of the tree (polled Pss)</text>"));
	cr_expect_not_null(strstr(svg, ">peak 140 MB at 4.00 s</text>"), "the peak is not Pss's");
	free(svg);
}

/* The Pss read at the summed RSS peak is in resources.json; where the
 * points miss it, the peak's label says it. */
Test(plot, pss_at_the_peak_from_the_record)
{
	struct plot_data d = small_data();
	struct plot_point pss[2] = { { 1.0, 30e6 }, { 1.4, 58e6 } };
	d.pss = pss;
	d.n_pss = 2;
	d.pss_at_peak_bytes = 61.7e6;
	char *s = render(&d, "pss-rec.svg", NULL);
	cr_expect_not_null(strstr(s, ">peak 58.0 MB at 1.40 s (61.7 MB at the summed RSS peak)</text>"),
			   "%s", strstr(s, "class=\"peak\""));
	free(s);
	d.pss_at_peak_bytes = 58.1e6; /* within 0.5%: not worth a word */
	s = render(&d, "pss-rec2.svg", NULL);
	cr_expect_not_null(strstr(s, ">peak 58.0 MB at 1.40 s</text>"));
	free(s);
}
