/* test_pyframes.c: the readers of the Python frames (common/pyline.h,
 * supervisor/analyze/pyframes.h): lines from 3.11's location tables (3.12
 * and 3.13 kept them), as each interpreter itself reads them, and the
 * Python frames put where the evaluation loop ran them. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "analyze/pyframes.h"
#include "analyze/symbols.h"
#include "pyline.h"
#include "test_py.h"
#include "test_pythons.h"

static size_t unhex(const char *s, uint8_t *out, size_t cap)
{
	size_t n = 0;
	for (; s[0] && s[1] && n < cap; s += 2) {
		unsigned v;
		if (sscanf(s, "%2x", &v) != 1)
			break;
		out[n++] = (uint8_t)v;
	}
	return n;
}

/* Every code unit of every code object of a tricky source: the line the
 * interpreter of 3.minor gives (co_lines) is the decoder's, the one
 * pyline_of picks for that version. */
static void lines_as_python_says_of(unsigned minor)
{
	char cmd[2 * PATH_MAX + 64];
	static char line[1 << 20];
	static uint8_t table[1 << 16];
	static struct mt_stacks_code code;
	size_t codes = 0, units = 0, none = 0;
	const char *py = py_interp_or_skip(minor);
	snprintf(cmd, sizeof cmd, "'%s' '%s'", py, py_script("pyframes_lines.py"));
	FILE *f = popen(cmd, "r");
	cr_assert_not_null(f);
	while (fgets(line, sizeof line, f)) {
		unsigned first;
		char *hex = strchr(line, ' '), *list;
		cr_assert_not_null(hex);
		*hex++ = '\0';
		list = strchr(hex, ' ');
		cr_assert_not_null(list);
		*list++ = '\0';
		first = (unsigned)strtoul(line, NULL, 10);
		size_t len = unhex(hex, table, sizeof table);
		codes++;
		for (char *tok = strtok(list, ",\n"); tok; tok = strtok(NULL, ",\n")) {
			unsigned u;
			int want;
			uint32_t got = 0;
			cr_assert_eq(sscanf(tok, "%u:%d", &u, &want), 2, "%s", tok);
			int rc = pyline_311(table, len, first, u, &got);
			if (len <= sizeof code.lines) {
				uint32_t by_version = 0;
				memcpy(code.lines, table, len);
				code.lines_len = (uint32_t)len;
				code.firstlineno = first;
				int rv = pyline_of(0x030000f0u | minor << 16, &code, u,
						       &by_version);
				cr_expect(rv == rc && (rc < 0 || by_version == got),
					  "3.%u's decoder is 3.11's", minor);
			}
			if (want < 0) {
				cr_expect_eq(rc, -1, "unit %u: no line, decoder said %u", u, got);
				none++;
			} else {
				cr_expect_eq(rc, 0, "unit %u of code at line %u: no line", u, first);
				cr_expect_eq(got, (uint32_t)want, "unit %u of code at line %u: %u, want %d",
					     u, first, got, want);
			}
			units++;
		}
	}
	cr_assert_eq(pclose(f), 0);
	cr_assert_geq(codes, 6);
	cr_assert_gt(units, 1000);
	cr_log_info("3.%u: %zu code objects, %zu code units (%zu without a line)", minor, codes,
		    units, none);
}

Test(pyframes, lines_as_python_says, .timeout = 60)
{
	lines_as_python_says_of(11);
}

Test(pyframes, lines_as_python312_says, .timeout = 60)
{
	lines_as_python_says_of(12);
}

Test(pyframes, lines_as_python313_says, .timeout = 60)
{
	lines_as_python_says_of(13);
}

/* Past the copy the shim kept, and for a version it has no decoder for,
 * the line is unknown rather than made up. */
Test(pyframes, unknown_lines_stay_unknown)
{
	/* one entry: no-columns form, line delta +2, 3 code units */
	const uint8_t t[] = { 0x80 | (13 << 3) | 2, 4 };
	uint32_t line = 0;
	cr_assert_eq(pyline_311(t, sizeof t, 10, 0, &line), 0);
	cr_assert_eq(line, 12);
	cr_assert_eq(pyline_311(t, sizeof t, 10, 2, &line), 0);
	cr_assert_eq(pyline_311(t, sizeof t, 10, 3, &line), -1, "past the table");
	cr_assert_eq(pyline_311(t, 1, 10, 0, &line), -1, "cut inside an entry");
	const uint8_t bad[] = { 0x12 };
	cr_assert_eq(pyline_311(bad, 1, 10, 0, &line), -1, "not an entry's start");
	struct mt_stacks_code c;
	memset(&c, 0, sizeof c);
	memcpy(c.lines, t, sizeof t);
	c.lines_len = sizeof t;
	c.firstlineno = 10;
	cr_assert_eq(pyline_of(0x030b07f0, &c, 1, &line), 0);
	cr_assert_eq(line, 12);
	cr_assert_eq(pyline_of(0x036300f0, &c, 1, &line), -1, "no decoder for 3.99");
	char v[32];
	pyframes_version_text(0x030b07f0, v, sizeof v);
	cr_assert_str_eq(v, "3.11.7");
	pyframes_version_text(0x030d00a1, v, sizeof v);
	cr_assert_str_eq(v, "3.13.0a1");
}

static uint32_t native(struct symbols *s, const char *fn, uint64_t off)
{
	int64_t i = symbols_frame(s, SYMBOLS_NO_MODULE, 0, 0, off);
	cr_assert_geq(i, 0);
	s->frames[i].function = fn;
	return (uint32_t)i;
}

static uint32_t py(struct symbols *s, const char *fn, uint32_t line)
{
	int64_t i = symbols_pyframe(s, fn, "/x.py", line);
	cr_assert_geq(i, 0);
	cr_assert(s->frames[i].python);
	return (uint32_t)i;
}

/* Each evaluation loop frame is replaced by its run of Python frames (up
 * to the one entered from C); native frames stay around them; Python
 * frames whose loop frame was cut off the stack go at its end. */
Test(pyframes, runs_replace_their_evaluation_frames)
{
	struct symbols s;
	symbols_init(&s);
	uint32_t malloc_ = native(&s, "malloc", 0x1000), eval1 = native(&s, "_PyEval_EvalFrameDefault", 0x2000),
		 cfn = native(&s, "PyObject_Call", 0x3000), eval2 = native(&s, "_PyEval_EvalFrameDefault", 0x4000),
		 start = native(&s, "Py_RunMain", 0x5000);
	uint32_t f = py(&s, "f", 3), g = py(&s, "g", 7), mod = py(&s, "<module>", 9);
	cr_assert_eq(py(&s, "f", 3), f, "one frame per (function, file, line)");
	cr_assert_neq(py(&s, "f", 4), f);
	uint32_t list[] = { malloc_, eval1, cfn, eval2, start, f, g | PYFRAMES_ENTRY_BIT,
			    mod | PYFRAMES_ENTRY_BIT };
	uint32_t want[] = { malloc_, f, g, cfn, mod, start };
	uint32_t n = pyframes_interleave(list, 8, &s);
	cr_assert_eq(n, 6);
	cr_assert_arr_eq(list, want, sizeof want);

	/* the outer loop frame cut off: its Python frames at the end */
	uint32_t cut[] = { malloc_, eval1, cfn, f, g | PYFRAMES_ENTRY_BIT, mod | PYFRAMES_ENTRY_BIT };
	uint32_t want_cut[] = { malloc_, f, g, cfn, mod };
	cr_assert_eq(pyframes_interleave(cut, 6, &s), 5);
	cr_assert_arr_eq(cut, want_cut, sizeof want_cut);

	/* no Python frame: as it was */
	uint32_t plain[] = { malloc_, eval1, start };
	uint32_t want_plain[] = { malloc_, eval1, start };
	cr_assert_eq(pyframes_interleave(plain, 3, &s), 3);
	cr_assert_arr_eq(plain, want_plain, sizeof want_plain);
	symbols_free(&s);
}

/* A deep chain's elision marker (stacks.h, MT_PYFRAME_ELIDED_CODE) stands
 * in its run: without an entry among the frames it stands for, the run
 * goes on through it to the outer frames (one evaluation loop ran them
 * all); with M entries, the run ends at it and the next M - 1 loop frames,
 * which ran only elided frames, stay, so that the outermost frames meet
 * their own loop frame.  Its name says the count. */
Test(pyframes, elided_frames_keep_their_place)
{
	struct symbols s;
	symbols_init(&s);
	uint32_t malloc_ = native(&s, "malloc", 0x1000), eval1 = native(&s, "_PyEval_EvalFrameDefault", 0x2000),
		 cfn = native(&s, "PyObject_Call", 0x3000), eval2 = native(&s, "_PyEval_EvalFrameDefault", 0x4000),
		 cfn2 = native(&s, "map_next", 0x4800), eval3 = native(&s, "_PyEval_EvalFrameDefault", 0x5000),
		 start = native(&s, "Py_RunMain", 0x6000);
	uint32_t f = py(&s, "f", 3), g = py(&s, "g", 7), mod = py(&s, "<module>", 9);
	int64_t quiet = symbols_pyelided(&s, 12, 0), loud = symbols_pyelided(&s, 12, 2);
	cr_assert(quiet >= 0 && loud >= 0 && quiet != loud);
	cr_assert_str_eq(s.frames[quiet].function, "<12 Python frames elided>");
	cr_assert_str_eq(s.frames[loud].function, "<12 Python frames elided, 2 entered from C>");
	cr_assert_eq(s.frames[loud].elided, 12);
	cr_assert(s.frames[loud].python);
	cr_assert_eq(symbols_pyelided(&s, 12, 2), loud, "one frame per count");
	uint32_t e0 = (uint32_t)quiet, e2 = (uint32_t)loud;

	/* one loop ran the whole chain */
	uint32_t one[] = { malloc_, eval1, start, f, e0, g, mod | PYFRAMES_ENTRY_BIT };
	uint32_t want_one[] = { malloc_, f, e0, g, mod, start };
	cr_assert_eq(pyframes_interleave(one, 7, &s), 6);
	cr_assert_arr_eq(one, want_one, sizeof want_one);

	/* two entries elided: eval1 ran f and the first elided run, eval2
	 * an elided run only, eval3 the last elided run, g and <module> */
	uint32_t two[] = { malloc_, eval1, cfn, eval2, cfn2, eval3, start, f, e2, g,
			   mod | PYFRAMES_ENTRY_BIT };
	uint32_t want_two[] = { malloc_, f, e2, cfn, eval2, cfn2, g, mod, start };
	cr_assert_eq(pyframes_interleave(two, 11, &s), 9);
	cr_assert_arr_eq(two, want_two, sizeof want_two);

	/* the outer loop frames cut off: the rest at the end, in order */
	uint32_t cut[] = { malloc_, eval1, cfn, f, e2, g, mod | PYFRAMES_ENTRY_BIT };
	uint32_t want_cut[] = { malloc_, f, e2, cfn, g, mod };
	cr_assert_eq(pyframes_interleave(cut, 7, &s), 6);
	cr_assert_arr_eq(cut, want_cut, sizeof want_cut);
	symbols_free(&s);
}
