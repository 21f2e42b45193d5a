/* test_memsup_pyframes.c: Python frames in the sampled call sites of a
 * run under memsup (common/stacks.h "Python frames", preload/python.h,
 * supervisor/analyze/pyframes.h).
 *
 * tests/progs/py_sites.py holds 50%, 30% and 20% of its heap in three
 * Python functions; py_parent.py starts two of it.  They run under the
 * Debian interpreter this project's CPython layout table was made from,
 * /usr/bin/python3.11 (the test skips, saying so, without it).  The
 * checks are python3: tests/py/memsup_pyframes.py, one per test.
 */
#include "test_memsup_util.h"
#include "test_py.h"

#define PYFRAMES_PYTHON "/usr/bin/python3.11"

static const char *python_or_skip(void)
{
	if (access(PYFRAMES_PYTHON, X_OK) != 0)
		cr_skip_test("%s is not installed", PYFRAMES_PYTHON);
	return PYFRAMES_PYTHON;
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

/* At the default interval: the three functions, each at its allocation
 * line in its file, hold their shares of the image's heap at its peak
 * within 5 points, in the image's set and the tree's; the Python frames
 * stand where the interpreter's evaluation loop ran them, between native
 * frames, and the image says which Python it is. */
Test(memsup_pyframes, python_functions_and_lines, .timeout = 120)
{
	struct sup_run r;
	const char *args[] = { "-q", "--", python_or_skip(), py_prog("py_sites.py"), "200", NULL };
	cr_assert_eq(memsup_run(&r, args), 0, "stderr: %s", r.err);
	sup_py_check(&r, "memsup_pyframes.py", "python_functions_and_lines", getenv("MT_SRCDIR"));
	sup_done(&r);
}

/* A Python parent that starts Python children: every image of the tree
 * has its own Python frames, the children's shares as above, the
 * parent's own function and line too. */
Test(memsup_pyframes, python_children_too, .timeout = 180)
{
	struct sup_run r;
	const char *args[] = { "-q", "--", python_or_skip(), py_prog("py_parent.py"), "80", NULL };
	cr_assert_eq(memsup_run(&r, args), 0, "stderr: %s", r.err);
	sup_py_check(&r, "memsup_pyframes.py", "python_children_too", getenv("MT_SRCDIR"));
	sup_done(&r);
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

/* A program that is not Python: no image says Python, no frame is one. */
Test(memsup_pyframes, native_program_has_none, .timeout = 120)
{
	struct sup_run r;
	const char *args[] = { "-q", "--", prog("site_shares"), "60", "2", "0", "200", NULL };
	cr_assert_eq(memsup_run(&r, args), 0, "stderr: %s", r.err);
	sup_py_check(&r, "memsup_pyframes.py", "native_program_has_none", getenv("MT_SRCDIR"));
	sup_done(&r);
}
