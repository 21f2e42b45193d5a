/* test_memsup_refusals.c: ordinary records memsup refused, end to end.
 *
 * Each test runs the built memsup ($MEMSUP) on an ordinary command whose
 * records memsup once did not believe, or whose images it listed as
 * untraced for a reason that was not true, and judges processes.json and
 * resources.json with python3 (tests/py/memsup_refusals.py, one check per
 * test):
 *  - `mv` links libselinux, whose constructor allocates before the shim's:
 *    the record's start must not come after the peak times it states;
 *  - a command run as root that drops to another user (setpriv) cannot
 *    create its record in the records directory, memsup's own: it is
 *    untraced, and said to be for that reason, with the uid;
 *  - a command in a PID namespace of its own (unshare -p): its shims name
 *    their records by their pids there (1, 2), which memsup sees as other
 *    processes (init, kthreadd).  Those records are not believed, and not
 *    as "alive outside the tree": as the namespace's pids of the members
 *    they are, and those members are untraced for that reason.
 * Forged records are still refused: tests/e2e/test_memsup_forged.c. */
#include "test_memsup_util.h"
#include "test_py.h"

/* 100 rounds of two `mv` in the run's directory: 200 images that allocate
 * before the shim's constructor runs, each a record that says so. */
Test(memsup_refusals, mv_records_start_before_their_peaks, .timeout = 120)
{
	struct sup_run r;
	const char *args[] = { "--", "/bin/sh", "-c",
			       "touch a && i=0; while [ $i -lt 100 ]; do mv a b; mv b a; "
			       "i=$((i+1)); done",
			       NULL };
	cr_assert_eq(memsup_run(&r, args), 0, "stderr: %s", r.err);
	sup_py_check(&r, "memsup_refusals.py", "mv_records_start_before_their_peaks", "200");
	sup_done(&r);
}

/* python3 run through setpriv as uid 65534, holding a 30 MB bytearray: its
 * shim may not create a file in the records directory (memsup's, 0700), so
 * it is untraced, "other_user", uid 65534 -- not "unknown". */
Test(memsup_refusals, a_command_that_drops_to_another_user_is_said_so, .timeout = 60)
{
	struct sup_run r;
	if (geteuid() != 0)
		cr_skip_test("setpriv --reuid needs root");
	if (access("/usr/bin/setpriv", X_OK) != 0 || access("/usr/bin/python3", X_OK) != 0)
		cr_skip_test("no /usr/bin/setpriv or /usr/bin/python3");
	const char *args[] = { "--", "/usr/bin/setpriv", "--reuid=65534", "--regid=65534",
			       "--clear-groups", "/usr/bin/python3", "-c",
			       "import time; b = bytearray(30 * 1000 * 1000); time.sleep(1)",
			       NULL };
	cr_assert_eq(memsup_run(&r, args), 0, "stderr: %s", r.err);
	sup_py_check(&r, "memsup_refusals.py", "a_command_that_drops_to_another_user_is_said_so",
		     "65534");
	sup_done(&r);
}

/* unshare -p -f --mount-proc sh -c 'python3 holding 30 MB': the records
 * 1.0, 1.1 (sh) and 2.0 (python3) are named by the namespace's pids. */
Test(memsup_refusals, a_pid_namespace_is_named_not_called_outside, .timeout = 60)
{
	struct sup_run r;
	if (access("/usr/bin/unshare", X_OK) != 0 || access("/usr/bin/python3", X_OK) != 0)
		cr_skip_test("no /usr/bin/unshare or /usr/bin/python3");
	if (system("/usr/bin/unshare -p -f --mount-proc /bin/true >/dev/null 2>&1") != 0)
		cr_skip_test("unshare -p -f --mount-proc is not permitted here");
	const char *args[] = { "--", "/usr/bin/unshare", "-p", "-f", "--mount-proc", "/bin/sh", "-c",
			       "/usr/bin/python3 -c 'import time; b = bytearray(30 * 1000 * 1000); "
			       "time.sleep(1)'",
			       NULL };
	cr_assert_eq(memsup_run(&r, args), 0, "stderr: %s", r.err);
	sup_py_check(&r, "memsup_refusals.py", "a_pid_namespace_is_named_not_called_outside", NULL);
	sup_done(&r);
}
