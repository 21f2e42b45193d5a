/* test_memsup_pyframes.c: Python frames in the sampled call sites of a
 * run under memsup (common/stacks.h "Python frames", preload/sampling/python.h,
 * supervisor/analyze/pyframes.h).
 *
 * tests/progs/py_sites.py holds 50%, 30% and 20% of its heap in three
 * Python functions; py_parent.py starts two of it.  They run under each
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
