/* test_shim_exit.c: how images end (SIGKILL, _exit) and phase markers. */
#include <criterion/criterion.h>
#include <signal.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "test_shim_harness.h"

Test(shim_exit, sigkill_leaves_last_counters, .timeout = 20)
{
	const char *argv[] = { "shim_tree", "hold", "3000000", NULL };
	struct shim_run r;
	struct mt_record rec;
	struct timespec nap = { 0, 10 * 1000 * 1000 };
	shim_run(&r, argv, NULL, SHIM_ASYNC);
	for (int i = 0; i < 1500; i++) {
		shim_reload(&r);
		if (strstr(r.out, "ready\n"))
			break;
		nanosleep(&nap, NULL);
	}
	cr_assert_not_null(strstr(r.out, "ready\n"), "workload never got ready");
	kill(r.pid, SIGKILL);
	shim_wait(&r);
	cr_assert(WIFSIGNALED(r.status) && WTERMSIG(r.status) == SIGKILL);
	shim_record(&r, r.pid, 0, &rec);
	cr_expect_eq(rec.state, MT_STATE_RUNNING);
	cr_expect_eq(rec.end_mono_ns, 0);
	cr_expect_eq(rec.heap_current, shim_value(r.out, "usable"));
	cr_expect_eq(rec.heap_peak, shim_value(r.out, "usable"));
	cr_expect_eq(rec.calls[MT_CALL_MALLOC], 1);
	shim_done(&r);
}

Test(shim_exit, underscore_exit, .timeout = 20)
{
	const char *argv[] = { "shim_tree", "uexit", "5000", NULL };
	struct shim_run r;
	struct mt_record rec;
	shim_run(&r, argv, NULL, 0);
	cr_assert(WIFEXITED(r.status) && WEXITSTATUS(r.status) == 7);
	shim_record(&r, r.pid, 0, &rec);
	cr_expect_eq(rec.state, MT_STATE_UNDERSCORE_EXIT);
	cr_expect_eq(rec.exit_code, 7);
	cr_expect_eq(rec.heap_current, shim_value(r.out, "usable"));
	cr_expect_gt(rec.vm_hwm_kb, 0);
	cr_expect_gt(rec.vm_peak_kb, 0);
	cr_expect_geq(rec.end_mono_ns, rec.start_mono_ns);
	shim_done(&r);
}

Test(shim_exit, exit_code_from_main, .timeout = 20)
{
	const char *argv[] = { "shim_tree", "no-such-mode", NULL };
	struct shim_run r;
	struct mt_record rec;
	shim_run(&r, argv, NULL, 0);
	cr_assert(WIFEXITED(r.status) && WEXITSTATUS(r.status) == 2);
	shim_record(&r, r.pid, 0, &rec);
	cr_expect_eq(rec.state, MT_STATE_EXITED);
	cr_expect_eq(rec.exit_code, 2);
	shim_done(&r);
}

Test(shim_exit, markers, .timeout = 20)
{
	const char *argv[] = { "shim_tree", "mark", NULL };
	struct shim_run r;
	struct mt_record rec;
	shim_run(&r, argv, NULL, 0);
	cr_assert(WIFEXITED(r.status) && WEXITSTATUS(r.status) == 0, "%s%s", r.out, r.err);
	shim_record(&r, r.pid, 0, &rec);
	cr_assert_eq(rec.marker_count, 3);
	cr_expect_str_eq(rec.markers[0].label, "start");
	cr_expect_str_eq(rec.markers[1].label, "big block held");
	cr_expect_eq(strlen(rec.markers[2].label), MT_LABEL_BYTES - 1);
	cr_expect_eq(strncmp(rec.markers[2].label, "end: a label", 12), 0);
	cr_expect_eq(rec.markers[1].heap_current - rec.markers[0].heap_current,
		     shim_value(r.out, "usable"));
	cr_expect_eq(rec.markers[2].heap_current, rec.markers[0].heap_current);
	cr_expect_leq(rec.markers[0].mono_ns, rec.markers[1].mono_ns);
	cr_expect_leq(rec.markers[1].mono_ns, rec.markers[2].mono_ns);
	shim_done(&r);
}

/* A failed exec leaves the image RUNNING (then EXITED), errno intact. */
Test(shim_exit, failed_exec_restores_running, .timeout = 20)
{
	const char *argv[] = { "shim_tree", "execfail", NULL };
	struct shim_run r;
	struct mt_record rec;
	shim_run(&r, argv, NULL, 0);
	cr_assert(WIFEXITED(r.status) && WEXITSTATUS(r.status) == 0, "%s%s", r.out, r.err);
	cr_expect_eq(shim_value(r.out, "errno"), 2);
	shim_record(&r, r.pid, 0, &rec);
	cr_expect_eq(rec.state, MT_STATE_EXITED);
	cr_expect_eq(rec.exit_code, 0);
	cr_expect_geq(rec.end_mono_ns, rec.start_mono_ns);
	shim_done(&r);
}

Test(shim_exit, quick_exit_ends_the_image, .timeout = 20)
{
	const char *argv[] = { "shim_tree", "quick", NULL };
	struct shim_run r;
	struct mt_record rec;
	shim_run(&r, argv, NULL, 0);
	cr_assert(WIFEXITED(r.status) && WEXITSTATUS(r.status) == 5, "%s%s", r.out, r.err);
	shim_record(&r, r.pid, 0, &rec);
	cr_expect_eq(rec.state, MT_STATE_EXITED);
	cr_expect_eq(rec.exit_code, 5);
	cr_expect_eq(rec.heap_current, shim_value(r.out, "usable"));
	shim_done(&r);
}
