/* test_shim_heap.c: the malloc family under LD_PRELOAD, exact figures.
 * Workloads in tests/progs print the ground truth (malloc_usable_size sums
 * they computed themselves); the records must match it exactly. */
#include <criterion/criterion.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "test_shim_harness.h"

static void run_ok(struct shim_run *r, const char *const *argv, const char *const *env,
		   unsigned flags)
{
	shim_run(r, argv, env, flags);
	cr_assert(WIFEXITED(r->status) && WEXITSTATUS(r->status) == 0,
		  "%s failed: status %#x\nstdout:\n%s\nstderr:\n%s", argv[0], r->status, r->out,
		  r->err);
}

Test(shim_heap, scripted_sequence_is_exact, .timeout = 20)
{
	const char *argv[] = { "alloc_script", NULL };
	struct shim_run r;
	struct mt_record rec;
	run_ok(&r, argv, NULL, 0);
	shim_record(&r, r.pid, 0, &rec);
	cr_expect_eq(rec.state, MT_STATE_EXITED);
	cr_expect_eq(rec.exit_code, 0);
	cr_expect_eq(rec.relation, MT_REL_ROOT);
	cr_expect_eq(rec.heap_current, shim_value(r.out, "heap_current"));
	cr_expect_eq(rec.heap_peak, shim_value(r.out, "heap_peak"));
	cr_expect_eq(rec.heap_requested_total, shim_value(r.out, "requested"));
	cr_expect_eq(rec.heap_largest_request, shim_value(r.out, "largest"));
	cr_expect_eq(rec.calls[MT_CALL_MALLOC], shim_value(r.out, "malloc"));
	cr_expect_eq(rec.calls[MT_CALL_CALLOC], shim_value(r.out, "calloc"));
	cr_expect_eq(rec.calls[MT_CALL_REALLOC], shim_value(r.out, "realloc"));
	cr_expect_eq(rec.calls[MT_CALL_REALLOCARRAY], shim_value(r.out, "reallocarray"));
	cr_expect_eq(rec.calls[MT_CALL_FREE], shim_value(r.out, "free"));
	cr_expect_eq(rec.calls[MT_CALL_POSIX_MEMALIGN], shim_value(r.out, "posix_memalign"));
	cr_expect_eq(rec.calls[MT_CALL_ALIGNED_ALLOC], shim_value(r.out, "aligned_alloc"));
	cr_expect_eq(rec.calls[MT_CALL_MEMALIGN], shim_value(r.out, "memalign"));
	cr_expect_eq(rec.calls[MT_CALL_VALLOC], shim_value(r.out, "valloc"));
	cr_expect_eq(rec.calls[MT_CALL_PVALLOC], shim_value(r.out, "pvalloc"));
	/* No mapping calls: total is the heap. */
	cr_expect_eq(rec.total_peak, rec.heap_peak);
	cr_expect_eq(rec.total_current, rec.heap_current);
	/* 1 MiB request lands in bucket 20 (2^19 < n <= 2^20), 100 in 7. */
	cr_expect_geq(rec.hist[20], 1);
	cr_expect_geq(rec.hist[7], 1);
	for (unsigned b = 0; b < MT_HIST_BUCKETS; b++) {
		char key[16];
		snprintf(key, sizeof key, "hist%u", b);
		cr_expect_eq(rec.hist[b], (uint64_t)shim_value_or(r.out, key, 0), "hist[%u]", b);
	}
	cr_expect_neq(rec.heap_peak_mono_ns, 0);
	cr_expect_geq(rec.heap_peak_mono_ns, rec.start_mono_ns);
	cr_expect_leq(rec.heap_peak_mono_ns, rec.end_mono_ns);
	cr_expect_gt(rec.vm_hwm_kb, 0);
	cr_expect_gt(rec.ru_maxrss_self_kb, 0);
	cr_expect_str_eq(shim_argv(&rec, 0) + strlen(shim_argv(&rec, 0)) - strlen("alloc_script"),
			 "alloc_script");
	shim_done(&r);
}

/* Sampling (on by default) brings its own machinery up in the constructor
 * (libgcc's unwinder, dlopen'ed where it is not linked into the shim):
 * none of its allocations may show as the program's.  The same program,
 * sampling off and on: the same calls and the same bytes (a failed dlopen
 * look once added a malloc and a free). */
Test(shim_heap, sampling_adds_no_call_of_its_own, .timeout = 20)
{
	const char *argv[] = { "alloc_script", NULL };
	const char *off[] = { "MEMTRACE_SAMPLE_BYTES=0", NULL };
	const char *every[] = { "MEMTRACE_SAMPLE_BYTES=1", NULL };
	struct shim_run a, b;
	struct mt_record ra, rb;
	run_ok(&a, argv, off, 0);
	shim_record(&a, a.pid, 0, &ra);
	run_ok(&b, argv, every, 0);
	shim_record(&b, b.pid, 0, &rb);
	for (unsigned c = 0; c < MT_CALL_COUNT; c++)
		cr_expect_eq(ra.calls[c], rb.calls[c], "calls[%u]: %llu off, %llu on", c,
			     (unsigned long long)ra.calls[c], (unsigned long long)rb.calls[c]);
	cr_expect_eq(ra.heap_peak, rb.heap_peak);
	cr_expect_eq(ra.heap_requested_total, rb.heap_requested_total);
	cr_expect_eq(ra.heap_current, rb.heap_current);
	shim_done(&a);
	shim_done(&b);
}

Test(shim_heap, eight_threads_lose_no_update, .timeout = 60)
{
	const char *argv[] = { "alloc_threads", NULL };
	struct shim_run r;
	struct mt_record rec;
	run_ok(&r, argv, NULL, 0);
	shim_record(&r, r.pid, 0, &rec);
	cr_assert_eq(shim_value(r.out, "have_api"), 1, "memtrace_read_stats not found");
	cr_expect_eq(shim_value(r.out, "delta_malloc_family"), shim_value(r.out, "mallocs"));
	cr_expect_eq(shim_value(r.out, "delta_free"), shim_value(r.out, "frees"));
	cr_expect_eq(shim_value(r.out, "mallocs"), shim_value(r.out, "frees"));
	/* Everything the threads allocated was freed: heap back where it was. */
	cr_expect_eq(shim_value(r.out, "heap_after"), shim_value(r.out, "heap_before"));
	cr_expect(rec.flags & MT_FLAG_MULTITHREADED);
	/* Only the workers call malloc (glibc's thread set-up uses calloc). */
	cr_expect_eq(rec.calls[MT_CALL_MALLOC], shim_value(r.out, "mallocs"));
	cr_expect_geq(rec.heap_peak, rec.heap_current);
	shim_done(&r);
}

Test(shim_heap, constructor_allocating_before_the_shim, .timeout = 20)
{
	const char *argv[] = { "shim_tree", "none", NULL };
	char env0[4200];
	const char *env[] = { env0, NULL };
	struct shim_run r;
	struct mt_record rec;
	/* ld.so runs later preloads' constructors first: ours runs second. */
	snprintf(env0, sizeof env0, "LD_PRELOAD=%s %s/.libs/libshimctor.so", getenv("MEMTRACE_SO"),
		 getenv("MT_PROGS"));
	run_ok(&r, argv, env, SHIM_NO_PRELOAD);
	shim_record(&r, r.pid, 0, &rec);
	cr_expect_eq(rec.heap_current, shim_value(r.out, "ctor_usable"));
	cr_expect_eq(rec.calls[MT_CALL_MALLOC], 3);
	cr_expect_eq(rec.calls[MT_CALL_FREE], 1);
	cr_expect_eq(rec.state, MT_STATE_EXITED);
	shim_done(&r);
}

Test(shim_heap, json_out_parses, .timeout = 20)
{
	const char *argv[] = { "alloc_script", NULL };
	char outvar[PATH_MAX + 32], cmd[PATH_MAX * 2 + 300], got[256];
	const char *env[] = { outvar, NULL };
	struct shim_run r;
	FILE *p;
	/* A throwaway run to get a tmp dir for the JSON file. */
	shim_run(&r, (const char *[]){ "shim_tree", "none", NULL }, NULL, SHIM_NO_PRELOAD);
	char base[PATH_MAX];
	snprintf(base, sizeof base, "%s", r.base);
	snprintf(outvar, sizeof outvar, "MEMTRACE_OUT=%s/mt.%%p.json", base);
	struct shim_run j;
	run_ok(&j, argv, env, SHIM_NO_DIR);
	cr_expect_str_eq(j.err, "", "no stderr summary when MEMTRACE_OUT is set: %s", j.err);
	snprintf(cmd, sizeof cmd,
		 "python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); "
		 "print(d[\"pid\"], d[\"heap\"][\"current\"], d[\"heap\"][\"peak\"], "
		 "d[\"calls\"][\"malloc\"], d[\"state\"], d[\"relation\"], len(d[\"heap\"][\"hist\"]))' "
		 "%s/mt.%d.json",
		 base, (int)j.pid);
	p = popen(cmd, "r");
	cr_assert_not_null(p);
	cr_assert_not_null(fgets(got, sizeof got, p));
	cr_assert_eq(pclose(p), 0);
	char want[256];
	snprintf(want, sizeof want, "%d %llu %llu %llu exited root 64\n", (int)j.pid,
		 (unsigned long long)shim_value(j.out, "heap_current"),
		 (unsigned long long)shim_value(j.out, "heap_peak"),
		 (unsigned long long)shim_value(j.out, "malloc"));
	cr_expect_str_eq(got, want);
	shim_done(&j);
	shim_done(&r);
}

Test(shim_heap, stderr_summary_and_quiet, .timeout = 20)
{
	const char *argv[] = { "alloc_script", NULL };
	const char *quiet[] = { "MEMTRACE_QUIET=1", NULL };
	char want[128];
	struct shim_run r;
	run_ok(&r, argv, NULL, SHIM_NO_DIR);
	snprintf(want, sizeof want, "memtrace: pid %d ", (int)r.pid);
	cr_expect_not_null(strstr(r.err, want), "stderr: %s", r.err);
	snprintf(want, sizeof want, "heap peak %llu B,",
		 (unsigned long long)shim_value(r.out, "heap_peak"));
	if (shim_value(r.out, "heap_peak") < 10240)
		cr_expect_not_null(strstr(r.err, want), "stderr: %s", r.err);
	else
		cr_expect_not_null(strstr(r.err, "heap peak "), "stderr: %s", r.err);
	snprintf(want, sizeof want, " malloc=%llu ", (unsigned long long)shim_value(r.out, "malloc"));
	cr_expect_not_null(strstr(r.err, want), "stderr: %s", r.err);
	shim_done(&r);
	run_ok(&r, argv, quiet, SHIM_NO_DIR);
	cr_expect_str_eq(r.err, "");
	shim_done(&r);
}

/* A dlopen'ed library's allocations go through the hooks like any other. */
Test(shim_heap, dlopened_library_is_counted, .timeout = 20)
{
	char lib[PATH_MAX];
	struct shim_run r;
	struct mt_record rec;
	snprintf(lib, sizeof lib, "%s/.libs/libshimctor.so", getenv("MT_PROGS"));
	const char *argv[] = { "shim_tree", "dlopen", lib, NULL };
	run_ok(&r, argv, NULL, 0);
	shim_record(&r, r.pid, 0, &rec);
	/* Its constructor keeps ctor_usable bytes that dlclose does not free. */
	cr_expect_geq(rec.heap_current, shim_value(r.out, "ctor_usable"));
	cr_expect_geq(rec.calls[MT_CALL_MALLOC], 3);
	cr_expect_geq(rec.calls[MT_CALL_FREE], 1);
	cr_expect_eq(rec.state, MT_STATE_EXITED);
	shim_done(&r);
}

/* The shim's start-up (its glibc self-check) must not change how glibc
 * serves the program's blocks: 200000 bytes are still mmapped. */
Test(shim_heap, glibc_mmap_threshold_untouched, .timeout = 20)
{
	const char *argv[] = { "shim_tree", "threshold", NULL };
	struct shim_run bare, r;
	run_ok(&bare, argv, NULL, SHIM_NO_PRELOAD);
	run_ok(&r, argv, NULL, 0);
	cr_expect_eq(shim_value(r.out, "mmapped"), shim_value(bare.out, "mmapped"));
	cr_expect_eq(shim_value(r.out, "mmapped"), 1);
	shim_done(&bare);
	shim_done(&r);
}
