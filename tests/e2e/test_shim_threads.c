/* test_shim_threads.c: threads living and dying every way a program makes
 * them (tests/progs/thr_torture.c), run bare and under libmemtrace.so.
 *
 * What must hold for every mode: the same stdout, stderr and exit status
 * as the bare run (the shim changes nothing the program can see, and never
 * crashes it), a root record that is final with the program's exit code,
 * and, where the program's allocation count is known, a histogram whose
 * MARK_SIZE bucket holds exactly the requests the program made: no count
 * lost or counted twice as threads come, go, and end unannounced.  Some
 * modes run under memsup too.  Tests that make thousands of threads need
 * the pids-limited cgroup of scripts/pids-guard.sh (test_guard.h).
 */
#include <criterion/criterion.h>
#include <dirent.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "test_guard.h"
#include "test_memsup_util.h"
#include "test_repeat.h"
#include "test_shim_harness.h"

#define MARK_BUCKET 16 /* thr_torture's MARK_SIZE, 40000: 2^15 < n <= 2^16 */
#define CHURN_MARKS 30 /* per churning thread */

struct pair {
	struct shim_run bare, shim;
};

static const char *status_text(int st)
{
	static char buf[64];
	if (WIFEXITED(st))
		snprintf(buf, sizeof buf, "exit %d", WEXITSTATUS(st));
	else if (WIFSIGNALED(st))
		snprintf(buf, sizeof buf, "signal %d", WTERMSIG(st));
	else
		snprintf(buf, sizeof buf, "status %#x", st);
	return buf;
}

/* Runs argv bare, then under the shim (env: extra NAME=value entries for
 * both; preload: the LD_PRELOAD value of the traced run, NULL for the
 * shim alone), and asserts the two are indistinguishable. */
static void run_pair_with(struct pair *p, const char *const *argv, const char *const *env,
			  const char *preload)
{
	char pre[PATH_MAX * 2];
	const char *tenv[16];
	size_t n = 0;
	for (; env && env[n] && n < 14; n++)
		tenv[n] = env[n];
	if (preload) {
		snprintf(pre, sizeof pre, "LD_PRELOAD=%s", preload);
		tenv[n++] = pre;
	}
	tenv[n] = NULL;
	shim_run(&p->bare, argv, env, SHIM_NO_PRELOAD | SHIM_NO_DIR);
	shim_run(&p->shim, argv, tenv, preload ? SHIM_NO_PRELOAD : 0);
	char bs[64];
	snprintf(bs, sizeof bs, "%s", status_text(p->bare.status));
	cr_assert_eq(p->shim.status, p->bare.status,
		     "%s %s: %s bare, %s traced\ntraced stdout:\n%s\ntraced stderr:\n%s", argv[0],
		     argv[1], bs, status_text(p->shim.status), p->shim.out, p->shim.err);
	cr_assert_str_eq(p->shim.out, p->bare.out, "%s %s: stdout differs", argv[0], argv[1]);
	cr_assert_str_eq(p->shim.err, p->bare.err, "%s %s: stderr differs", argv[0], argv[1]);
}

static void run_pair(struct pair *p, const char *const *argv)
{
	run_pair_with(p, argv, NULL, NULL);
}

static void done(struct pair *p)
{
	shim_done(&p->bare);
	shim_done(&p->shim);
}

/* The traced run's root record: final, with the program's exit code. */
static void root_record(const struct pair *p, struct mt_record *rec)
{
	shim_record(&p->shim, p->shim.pid, 0, rec);
	cr_expect_eq(rec->state, MT_STATE_EXITED, "root record state %u", rec->state);
	if (WIFEXITED(p->shim.status))
		cr_expect_eq(rec->exit_code, WEXITSTATUS(p->shim.status));
	cr_expect_eq(rec->heap_peak >= rec->heap_current, 1);
}

static void expect_marked(const struct mt_record *rec, uint64_t want, const char *what)
{
	cr_expect_eq(rec->hist[MARK_BUCKET], want,
		     "%s: the record counts %llu requests of the marked size, the program made %llu",
		     what, (unsigned long long)rec->hist[MARK_BUCKET], (unsigned long long)want);
}

static void check_marked_mode(const char *const *argv)
{
	struct pair p;
	struct mt_record rec;
	run_pair(&p, argv);
	cr_assert(WIFEXITED(p.shim.status) && WEXITSTATUS(p.shim.status) == 0, "%s %s: %s",
		  argv[1], argv[2], p.shim.err);
	root_record(&p, &rec);
	expect_marked(&rec, shim_value(p.shim.out, "marked"), argv[1]);
	done(&p);
}

/* ---- threads alive at once -------------------------------------------- */

/* Every count from 1 to 64 in CI's thorough check (test_repeat.h); the
 * README's test command takes 1 to 16 and the counts about powers of two. */
static int concurrent_count_quick(int n)
{
	return n <= 16 || n == 24 || n == 31 || n == 32 || n == 33 || n == 48 || n == 63 ||
	       n == 64;
}

Test(shim_threads, concurrent_1_to_64, .timeout = 240)
{
	for (int n = 1; n <= 64; n++) {
		if (!test_thorough() && !concurrent_count_quick(n))
			continue;
		char arg[16];
		snprintf(arg, sizeof arg, "%d", n);
		const char *argv[] = { "thr_torture", "concurrent", arg, NULL };
		check_marked_mode(argv);
	}
}

/* More threads than the shim has shards: the rest count directly. */
Test(shim_threads, concurrent_2000, .timeout = 240)
{
	guard_require();
	const char *argv[] = { "thr_torture", "concurrent", "2000", NULL };
	check_marked_mode(argv);
}

/* A crash once seen: threads that never allocate, five or more alive
 * at once (glibc's stack cache then unmaps ended threads' stacks and TLS),
 * then the exit path. */
Test(shim_threads, never_allocating_threads, .timeout = 120)
{
	static const char *const counts[] = { "1", "4", "5", "8", "50", "300" };
	for (size_t i = 0; i < sizeof counts / sizeof counts[0]; i++) {
		const char *argv[] = { "thr_torture", "noalloc", counts[i], NULL };
		struct pair p;
		struct mt_record rec;
		run_pair(&p, argv);
		root_record(&p, &rec);
		done(&p);
	}
}

Test(shim_threads, never_allocating_2000, .timeout = 240)
{
	guard_require();
	const char *argv[] = { "thr_torture", "noalloc", "2000", NULL };
	struct pair p;
	struct mt_record rec;
	run_pair(&p, argv);
	root_record(&p, &rec);
	done(&p);
}

/* ---- threads that come and go ----------------------------------------- */

Test(shim_threads, pools_in_waves, .timeout = 240)
{
	const char *argv[] = { "thr_torture", "waves", "40", "24", NULL };
	check_marked_mode(argv);
}

Test(shim_threads, detached_threads_ending_at_exit, .timeout = 120)
{
	const char *argv[] = { "thr_torture", "detached", "64", NULL };
	for (int round = 0; round < 5; round++)
		check_marked_mode(argv);
}

Test(shim_threads, main_pthread_exit_while_others_run, .timeout = 120)
{
	const char *argv[] = { "thr_torture", "mainexit", "16", NULL };
	struct pair p;
	struct mt_record rec;
	run_pair(&p, argv);
	cr_assert(WIFEXITED(p.shim.status) && WEXITSTATUS(p.shim.status) == 0);
	root_record(&p, &rec);
	expect_marked(&rec, 16 * CHURN_MARKS, "mainexit");
	done(&p);
}

Test(shim_threads, exit_while_threads_allocate, .timeout = 120)
{
	const char *argv[] = { "thr_torture", "exitbusy", "8", NULL };
	for (int round = 0; round < 5; round++) {
		struct pair p;
		struct mt_record rec;
		run_pair(&p, argv);
		cr_assert(WIFEXITED(p.shim.status) && WEXITSTATUS(p.shim.status) == 7, "%s",
			  status_text(p.shim.status));
		root_record(&p, &rec);
		done(&p);
	}
}

/* ---- threads glibc starts past pthread_create ------------------------- */

Test(shim_threads, timer_sigev_thread_callbacks, .timeout = 120)
{
	const char *argv[] = { "thr_torture", "timer", "200", NULL };
	check_marked_mode(argv);
}

Test(shim_threads, aio_helper_threads, .timeout = 120)
{
	const char *argv[] = { "thr_torture", "aio", "60", NULL };
	check_marked_mode(argv);
}

/* ---- fork and exec from a thread -------------------------------------- */

Test(shim_threads, fork_from_a_thread, .timeout = 120)
{
	const char *argv[] = { "thr_torture", "forkthread", "4", NULL };
	struct pair p;
	struct mt_record rec, *all;
	run_pair(&p, argv);
	cr_assert(WIFEXITED(p.shim.status) && WEXITSTATUS(p.shim.status) == 0);
	root_record(&p, &rec);
	size_t n = shim_records(&p.shim, &all), children = 0;
	for (size_t i = 0; i < n; i++) {
		if (all[i].relation != MT_REL_FORK)
			continue;
		children++;
		cr_expect_eq(all[i].state, MT_STATE_EXITED);
		cr_expect_eq(all[i].exit_code, 5);
		cr_expect_eq(all[i].parent_pid, p.shim.pid);
		expect_marked(&all[i], 10, "fork child");
	}
	cr_expect_eq(children, 1, "%zu fork children's records", children);
	free(all);
	done(&p);
}

Test(shim_threads, exec_from_a_thread, .timeout = 120)
{
	const char *argv[] = { "thr_torture", "execthread", "4", NULL };
	struct pair p;
	struct mt_record old, next;
	run_pair(&p, argv);
	cr_assert(WIFEXITED(p.shim.status) && WEXITSTATUS(p.shim.status) == 0);
	shim_record(&p.shim, p.shim.pid, 0, &old);
	shim_record(&p.shim, p.shim.pid, 1, &next);
	cr_expect_eq(old.state, MT_STATE_EXECED);
	cr_expect_eq(next.relation, MT_REL_EXEC);
	cr_expect_eq(next.state, MT_STATE_EXITED);
	done(&p);
}

/* ---- a library with threads of its own, loaded and unloaded ----------- */

Test(shim_threads, dlopen_dlclose_library_with_threads, .timeout = 120)
{
	char lib[PATH_MAX];
	snprintf(lib, sizeof lib, "%s/.libs/libthrlib.so", getenv("MT_PROGS"));
	if (access(lib, R_OK) != 0)
		cr_skip_test("%s not built", lib);
	const char *argv[] = { "thr_torture", "dlopen", lib, "8", NULL };
	check_marked_mode(argv);
}

/* ---- every block sampled ------------------------------------------------ */

/* The sampler's own paths (stack walks in every kind of thread, the
 * sites table's lock, threads ending with samples live, fork and exec from
 * a thread, a library unloaded under its samples) with every block
 * sampled: bare and traced still indistinguishable, counts still exact. */
Test(shim_threads, every_block_sampled, .timeout = 300)
{
	char lib[PATH_MAX];
	const char *env[] = { "MEMTRACE_SAMPLE_BYTES=1", NULL };
	snprintf(lib, sizeof lib, "%s/.libs/libthrlib.so", getenv("MT_PROGS"));
	const char *const modes[][5] = {
		{ "thr_torture", "concurrent", "16", NULL },
		{ "thr_torture", "waves", "6", "16", NULL },
		{ "thr_torture", "detached", "16", NULL },
		{ "thr_torture", "mainexit", "8", NULL },
		{ "thr_torture", "exitbusy", "4", NULL },
		{ "thr_torture", "timer", "100", NULL },
		{ "thr_torture", "forkthread", "4", NULL },
		{ "thr_torture", "execthread", "4", NULL },
		{ "thr_torture", "dlopen", lib, "8", NULL },
	};
	guard_require();
	for (size_t m = 0; m < sizeof modes / sizeof modes[0]; m++) {
		struct pair p;
		struct mt_record rec;
		run_pair_with(&p, modes[m], env, NULL);
		if (strcmp(modes[m][1], "execthread") != 0) /* that root record ends EXECED */
			root_record(&p, &rec);
		else
			shim_record(&p.shim, p.shim.pid, 0, &rec);
		if (shim_value_or(p.shim.out, "marked", -1) >= 0)
			expect_marked(&rec, shim_value(p.shim.out, "marked"), modes[m][1]);
		done(&p);
	}
}

/* ---- another allocator, before and after the shim --------------------- */

static const char *jemalloc_path(void)
{
	static const char *const where[] = {
		"/usr/lib/x86_64-linux-gnu/libjemalloc.so.2",
		"/usr/lib/aarch64-linux-gnu/libjemalloc.so.2",
		"/usr/lib64/libjemalloc.so.2",
		"/usr/lib/libjemalloc.so.2",
	};
	for (size_t i = 0; i < sizeof where / sizeof where[0]; i++)
		if (access(where[i], R_OK) == 0)
			return where[i];
	return NULL;
}

Test(shim_threads, jemalloc_preloaded_in_both_orders, .timeout = 240)
{
	const char *je = jemalloc_path(), *so = getenv("MEMTRACE_SO");
	char order[2][PATH_MAX * 2 + 2];
	if (!je)
		cr_skip_test("libjemalloc.so.2 not installed (Debian: libjemalloc2)");
	snprintf(order[0], sizeof order[0], "%s:%s", so, je); /* the shim wraps jemalloc */
	snprintf(order[1], sizeof order[1], "%s:%s", je, so); /* jemalloc serves the program */
	static const char *const modes[][5] = {
		{ "thr_torture", "concurrent", "16", NULL },
		{ "thr_torture", "waves", "10", "16", NULL },
		{ "thr_torture", "noalloc", "8", NULL },
		{ "thr_torture", "exitbusy", "4", NULL },
	};
	for (int o = 0; o < 2; o++) {
		for (size_t m = 0; m < sizeof modes / sizeof modes[0]; m++) {
			struct pair p;
			struct mt_record rec;
			run_pair_with(&p, (const char *const *)modes[m], NULL, order[o]);
			root_record(&p, &rec);
			/* Only when the shim comes first does the program's malloc
			 * pass through it. */
			if (o == 0 && shim_value_or(p.shim.out, "marked", -1) >= 0)
				expect_marked(&rec, shim_value(p.shim.out, "marked"), modes[m][1]);
			done(&p);
		}
	}
}

/* ---- the same under memsup (tracing on by default) -------------------- */

Test(shim_threads, under_memsup, .timeout = 300)
{
	static const char *const modes[][4] = {
		{ "concurrent", "32", NULL, NULL },
		{ "noalloc", "50", NULL, NULL },
		{ "waves", "10", "16", NULL },
		{ "exitbusy", "8", NULL, NULL },
		{ "detached", "32", NULL, NULL },
	};
	for (size_t m = 0; m < sizeof modes / sizeof modes[0]; m++) {
		struct sup_run r;
		const char *args[] = { "-q", "--wall-s", "200", "--", prog("thr_torture"),
				       modes[m][0], modes[m][1], modes[m][2], NULL };
		int want = strcmp(modes[m][0], "exitbusy") ? 0 : 7;
		int rc = memsup_run(&r, args);
		cr_assert_eq(rc, want, "memsup -- thr_torture %s: exit %d, want %d\n%s", modes[m][0],
			     rc, want, r.err);
		rec_load(&r);
		cr_expect_str_eq(rec_str(&r, "reason"), "null");
		cr_expect_eq(rec_num(&r, "exit_code"), want);
	}
}
