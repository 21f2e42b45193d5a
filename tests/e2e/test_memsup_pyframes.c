/* test_memsup_pyframes.c: Python frames in the sampled call sites of a
 * run under memsup (common/stacks.h "Python frames", preload/sampling/python.h,
 * supervisor/analyze/pyframes.h).
 *
 * tests/progs/py_sites.py holds 50%, 30% and 20% of its heap in three
 * Python functions; py_parent.py starts two of it; py_deep.py allocates
 * deep in Python, through C and through numpy.  They run under each
 * interpreter whose layout the shim's table has: Debian's
 * /usr/bin/python3.11, and 3.12 and 3.13 where tests/common/test_pythons.h
 * finds them ($MT_PYTHON312, $MT_PYTHON313, pyenv's builds); a test
 * without its interpreter skips, saying so.  The checks are python3:
 * tests/py/memsup_pyframes.py, one per test; MT_PY_WANT tells them the
 * version the image must say it is.
 */
#include "test_memsup_util.h"
#include "test_py.h"
#include "test_pythons.h"

static const char *python_or_skip(void)
{
	return py_interp_or_skip(11);
}

static const char *py_prog(const char *name)
{
	static char p[2][PATH_MAX];
	static unsigned slot;
	const char *src = getenv("MT_SRCDIR");
	if (!src || !*src)
		cr_skip_test("MT_SRCDIR is not set (run through make check)");
	char *out = p[slot++ % 2];
	snprintf(out, PATH_MAX, "%s/tests/progs/%s", src, name);
	return out;
}

/* Runs `prog` with `arg` under CPython 3.minor and has the check `check`
 * judge it. */
static void py_run_check(unsigned minor, const char *prog, const char *arg, const char *check)
{
	struct sup_run r;
	char want[8];
	const char *interp = py_interp_or_skip(minor);
	const char *args[] = { "-q", "--", interp, py_prog(prog), arg, NULL };
	cr_log_info("CPython 3.%u: %s", minor, interp);
	cr_assert_eq(memsup_run(&r, args), 0, "stderr: %s", r.err);
	snprintf(want, sizeof want, "3.%u", minor);
	setenv("MT_PY_WANT", want, 1);
	sup_py_check(&r, "memsup_pyframes.py", check, getenv("MT_SRCDIR"));
	sup_done(&r);
}

/* At the default interval: the three functions, each at its allocation
 * line in its file, hold their shares of the image's heap at its peak
 * within 5 points, in the image's set and the tree's; the Python frames
 * stand where the interpreter's evaluation loop ran them, between native
 * frames, and the image says which Python it is. */
Test(memsup_pyframes, python_functions_and_lines, .timeout = 120)
{
	py_run_check(11, "py_sites.py", "200", "python_functions_and_lines");
}

/* The same under 3.12 (a _PyCFrame still, shim frames instead of
 * is_entry) and 3.13 (the thread state's current_frame, f_executable). */
/* memsup's summary names a Python frame as the interpreter does: its
 * <module> is not a C++ template argument list to fold to <>. */
Test(memsup_pyframes, summary_keeps_python_names, .timeout = 120)
{
	struct sup_run r;
	const char *args[] = { "--", python_or_skip(), py_prog("py_sites.py"), "200", NULL };
	cr_assert_eq(memsup_run(&r, args), 0, "stderr: %s", r.err);
	cr_expect_not_null(strstr(r.err, "half (py_sites.py:"), "%s", r.err);
	cr_expect_not_null(strstr(r.err, " < <module> (py_sites.py:"), "%s", r.err);
	cr_expect_null(strstr(r.err, "<> (py_sites.py:"), "%s", r.err);
	sup_done(&r);
}

Test(memsup_pyframes, python312_functions_and_lines, .timeout = 120)
{
	py_run_check(12, "py_sites.py", "200", "python_functions_and_lines");
}

Test(memsup_pyframes, python313_functions_and_lines, .timeout = 120)
{
	py_run_check(13, "py_sites.py", "200", "python_functions_and_lines");
}

/* A Python parent that starts Python children: every image of the tree
 * has its own Python frames, the children's shares as above, the
 * parent's own function and line too. */
Test(memsup_pyframes, python_children_too, .timeout = 180)
{
	py_run_check(11, "py_parent.py", "80", "python_children_too");
}

Test(memsup_pyframes, python312_children_too, .timeout = 180)
{
	py_run_check(12, "py_parent.py", "80", "python_children_too");
}

Test(memsup_pyframes, python313_children_too, .timeout = 180)
{
	py_run_check(13, "py_parent.py", "80", "python_children_too");
}

/* Deep chains and chains through C (tests/progs/py_deep.py, checked by
 * memsup_pyframes.py's deep_chain_kept): every sampled stack of a known
 * allocation holds the user's chain exactly as the shim keeps it, each
 * function at its line from the allocating one to main and <module>; one
 * deeper than the shim's 16 frames keeps its 8 innermost and 7 outermost
 * frames and a marker between that counts the frames left out and those
 * of them entered from C; and those stacks hold what the program holds,
 * within 4 standard errors and one block. */
static void py_deep_check(unsigned minor, const char *mode, const char *depth)
{
	struct sup_run r;
	char want[8];
	const char *interp = py_interp_or_skip(minor);
	const char *args[] = { "-q", "--", interp, py_prog("py_deep.py"), mode, depth, NULL };
	cr_log_info("CPython 3.%u: %s %s %s", minor, interp, mode, depth);
	cr_assert_eq(memsup_run(&r, args), 0, "stderr: %s", r.err);
	snprintf(want, sizeof want, "3.%u", minor);
	setenv("MT_PY_WANT", want, 1);
	sup_py_check(&r, "memsup_pyframes.py", "deep_chain_kept", getenv("MT_SRCDIR"));
	sup_done(&r);
}

/* A Python recursion 40 calls deep: main and <module> stay, at their
 * lines, past the marker of the 29 frames between. */
Test(memsup_pyframes, deep_recursion_keeps_main, .timeout = 120)
{
	py_deep_check(11, "deep", "40");
}

Test(memsup_pyframes, python312_deep_recursion_keeps_main, .timeout = 120)
{
	py_deep_check(12, "deep", "40");
}

Test(memsup_pyframes, python313_deep_recursion_keeps_main, .timeout = 120)
{
	py_deep_check(13, "deep", "40");
}

/* Python called from C (map over a functools.partial) 20 times over,
 * then map() calling the allocating function: the walk goes on past
 * every frame entered from C, to main and <module>. */
Test(memsup_pyframes, through_c_keeps_user_frames, .timeout = 120)
{
	py_deep_check(11, "roundtrip", "20");
}

Test(memsup_pyframes, python312_through_c_keeps_user_frames, .timeout = 120)
{
	py_deep_check(12, "roundtrip", "20");
}

Test(memsup_pyframes, python313_through_c_keeps_user_frames, .timeout = 120)
{
	py_deep_check(13, "roundtrip", "20");
}

/* A chain through C within the 16 frames: kept whole, no marker. */
Test(memsup_pyframes, short_chain_through_c_whole, .timeout = 120)
{
	py_deep_check(11, "roundtrip", "3");
}

/* numpy (Debian's python3-numpy): its sort allocates under its own Python
 * frames, its random.rand in C; both stacks go on to the user's build()
 * at its line and, 20 calls out, main and <module>. */
Test(memsup_pyframes, through_numpy_keeps_user_frames, .timeout = 180)
{
	char cmd[PATH_MAX + 64];
	snprintf(cmd, sizeof cmd, "%s -c 'import numpy' >/dev/null 2>&1", py_interp_or_skip(11));
	if (system(cmd) != 0)
		cr_skip_test("numpy is not installed for /usr/bin/python3.11 (Debian: python3-numpy)");
	py_deep_check(11, "numpy", "20");
}

/* A Python whose layout the shim does not know (a version simulated by
 * MEMTRACE_PY_VERSION): native frames only, and stacks.json says so. */
Test(memsup_pyframes, unknown_version_falls_back, .timeout = 120)
{
	struct sup_run r;
	const char *args[] = { "-q", "-e", "MEMTRACE_PY_VERSION=0x036300f0", "--",
			       python_or_skip(), py_prog("py_sites.py"), "40", NULL };
	cr_assert_eq(memsup_run(&r, args), 0, "stderr: %s", r.err);
	sup_py_check(&r, "memsup_pyframes.py", "unknown_version_falls_back", getenv("MT_SRCDIR"));
	sup_done(&r);
}

/* A 3.12 told it is 3.13 (a version in the table): its _PyRuntime holds
 * no _Py_DebugOffsets that agree with 3.13's entry, so the probe takes it
 * for a build it does not know (as a free-threaded 3.13 would be): native
 * frames only, and stacks.json says so. */
Test(memsup_pyframes, python312_posing_as_313_falls_back, .timeout = 120)
{
	struct sup_run r;
	const char *args[] = { "-q", "-e", "MEMTRACE_PY_VERSION=0x030d00f0", "--",
			       py_interp_or_skip(12), py_prog("py_sites.py"), "40", NULL };
	cr_assert_eq(memsup_run(&r, args), 0, "stderr: %s", r.err);
	setenv("MT_PY_POSING", "3.13.0", 1);
	sup_py_check(&r, "memsup_pyframes.py", "unknown_version_falls_back", getenv("MT_SRCDIR"));
	sup_done(&r);
}

/* A program that is not Python: no image says Python, no frame is one. */
Test(memsup_pyframes, native_program_has_none, .timeout = 120)
{
	struct sup_run r;
	const char *args[] = { "-q", "--", prog("site_shares"), "60", "2", "0", "200", NULL };
	cr_assert_eq(memsup_run(&r, args), 0, "stderr: %s", r.err);
	sup_py_check(&r, "memsup_pyframes.py", "native_program_has_none", getenv("MT_SRCDIR"));
	sup_done(&r);
}
