/* test_shim_hostile.c: the shim under threads, fork, exec and signal
 * handlers that allocate (tests/progs/x_stress.c), run through the real
 * memsup with tracing on.
 *
 * What must hold: memsup ends on the program's own exit (no wall budget: a
 * deadlock in the shim would hit it), the program's self-checks pass, every
 * record file is valid and final, each record's counters are consistent by
 * the rules of common/record.h, and the root record's markers agree to the
 * byte with what the program says it holds.  No wall time is asserted.
 */
#include "test_memsup_util.h"

#include <dirent.h>

#include "collect/fold.h"
#include "collect/recordfile.h"

/* Runs x_stress under memsup, checks the run, and loads every record. */
struct stress_run {
	struct sup_run r;
	struct mt_record *rec;
	size_t n;
};

static void stress_run(struct stress_run *s, const char *threads, const char *iters,
		       const char *forks)
{
	/* a wall budget far above any honest run on this machine: hitting it
	 * means a deadlock, not a slow page fault */
	const char *args[] = { "-q", "--wall-s", "600", "--", prog("x_stress"), threads,
			       iters, forks, NULL };
	memsup_run(&s->r, args);
	cr_assert_neq(s->r.status, 124, "memsup hit its 600 s wall budget: deadlock? %s", s->r.err);
	rec_load(&s->r);
	char log[PATH_MAX + 16], out[4096];
	snprintf(log, sizeof log, "%s/stdout.log", s->r.dir);
	slurp(log, out, sizeof out);
	cr_assert_eq(s->r.status, 0, "x_stress failed (status %d): stdout: %s memsup: %s",
		     s->r.status, out, s->r.err);
	cr_assert_str_eq(rec_str(&s->r, "reason"), "null");
	cr_assert_not_null(strstr(out, ": ok\n"), "x_stress did not say ok: %s", out);

	struct recordfile_entry *e = NULL;
	size_t n = 0;
	/* the records of ended images were folded into records.fold
	 * (collect/fold.h); records/ keeps what could not be */
	int dfd = open(s->r.dir, O_RDONLY | O_DIRECTORY);
	cr_assert_geq(dfd, 0);
	cr_assert_eq(fold_list_images(dfd, &e, &n), 0);
	s->rec = calloc(n ? n : 1, sizeof *s->rec);
	s->n = n;
	for (size_t i = 0; i < n; i++) {
		int rc = fold_read_record(dfd, e[i].pid, e[i].gen, &s->rec[i]);
		cr_assert_eq(rc, 0, "record %d.%u: %s", (int)e[i].pid, e[i].gen,
			     recordfile_strerror(rc));
	}
	close(dfd);
	free(e);
}

static void stress_done(struct stress_run *s)
{
	char cmd[400];
	free(s->rec);
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", s->r.tmp);
	if (system(cmd) != 0)
		cr_log_warn("could not remove %s", s->r.tmp);
}

/* The figures of one finished record agree with each other. */
static void check_consistent(const struct mt_record *m)
{
	cr_assert_neq(m->state, MT_STATE_RUNNING, "record %d.%u still running", m->pid, m->gen);
	cr_assert_geq(m->heap_peak, m->heap_current, "%d.%u", m->pid, m->gen);
	cr_assert_geq(m->map_anon_peak, m->map_anon_current, "%d.%u", m->pid, m->gen);
	cr_assert_geq(m->map_file_peak, m->map_file_current, "%d.%u", m->pid, m->gen);
	/* exact at the end (state != RUNNING) */
	cr_assert_eq(m->total_current, m->heap_current + m->map_anon_current + m->map_file_current,
		     "%d.%u: total %llu != heap %llu + maps %llu + %llu", m->pid, m->gen,
		     (unsigned long long)m->total_current, (unsigned long long)m->heap_current,
		     (unsigned long long)m->map_anon_current,
		     (unsigned long long)m->map_file_current);
	cr_assert_geq(m->total_peak, m->total_current, "%d.%u", m->pid, m->gen);
	cr_assert_geq(m->total_peak, m->heap_peak, "%d.%u", m->pid, m->gen);
	/* A fork child cannot know whether a mapping call another thread had
	 * under way at the fork happened before it (core/maps.h): it counts
	 * each such call as untracked, one a thread at most; any other image
	 * is exact.  (The shim before the fork queue counted none, and the
	 * child's table silently missed such a mapping.) */
	if (m->relation == MT_REL_FORK)
		cr_assert_leq(m->map_untracked_calls, 3, "%d.%u: %llu untracked", m->pid, m->gen,
			      (unsigned long long)m->map_untracked_calls);
	else
		cr_assert_eq(m->map_untracked_calls, 0, "%d.%u: %llu untracked", m->pid, m->gen,
			     (unsigned long long)m->map_untracked_calls);
	uint64_t hist = 0, allocs = 0;
	for (unsigned b = 0; b < MT_HIST_BUCKETS; b++)
		hist += m->hist[b];
	for (unsigned c = 0; c < MT_CALL_COUNT; c++)
		if (c != MT_CALL_FREE && c != MT_CALL_MMAP && c != MT_CALL_MUNMAP &&
		    c != MT_CALL_MREMAP)
			allocs += m->calls[c];
	/* one histogram entry per malloc-family request (end: shards settled) */
	cr_assert_eq(hist, allocs, "%d.%u: hist %llu, calls %llu", m->pid, m->gen,
		     (unsigned long long)hist, (unsigned long long)allocs);
}

static const struct mt_record *find(const struct stress_run *s, int32_t pid, uint32_t gen)
{
	for (size_t i = 0; i < s->n; i++)
		if (s->rec[i].pid == pid && s->rec[i].gen == gen)
			return &s->rec[i];
	return NULL;
}

static void check_stress(struct stress_run *s, int threads, int forks)
{
	const struct mt_record *root = NULL;
	int fork_children = 0;
	for (size_t i = 0; i < s->n; i++) {
		const struct mt_record *m = &s->rec[i];
		check_consistent(m);
		if (m->relation == MT_REL_ROOT) {
			cr_assert_null(root, "two root records");
			root = m;
		}
	}
	cr_assert_not_null(root, "no root record");
	cr_assert_eq(root->state, MT_STATE_EXITED);
	cr_assert_eq(root->exit_code, 0);
	cr_assert(root->flags & MT_FLAG_MULTITHREADED);
	cr_assert_gt(root->calls[MT_CALL_MMAP], 0);
	cr_assert_gt(root->calls[MT_CALL_MUNMAP], 0);
	cr_assert_gt(root->calls[MT_CALL_REALLOC], 0);
	cr_assert_gt(root->calls[MT_CALL_CALLOC], 0);
	/* each fork child: a FORK record that exec'd /bin/true, whose record
	 * (gen 1) exited 0 */
	for (size_t i = 0; i < s->n; i++) {
		const struct mt_record *m = &s->rec[i];
		if (m->relation != MT_REL_FORK)
			continue;
		fork_children++;
		cr_assert_eq(m->parent_pid, root->pid);
		cr_assert_eq(m->state, MT_STATE_EXECED, "fork child %d state %u", m->pid, m->state);
		cr_assert_geq(m->calls[MT_CALL_MALLOC], 10000, "fork child %d: %llu mallocs", m->pid,
			      (unsigned long long)m->calls[MT_CALL_MALLOC]);
		const struct mt_record *t = find(s, m->pid, 1);
		cr_assert_not_null(t, "fork child %d has no exec record", m->pid);
		cr_assert_eq(t->relation, MT_REL_EXEC);
		cr_assert_eq(t->state, MT_STATE_EXITED);
		cr_assert_eq(t->exit_code, 0);
		cr_assert_str_eq(t->argv, "true");
	}
	cr_assert_eq(fork_children, forks);
	cr_assert_eq(s->n, 1 + 2 * (size_t)forks, "%zu records", s->n);

	/* the markers against the program's own figures */
	cr_assert_eq(root->marker_count, 3, "markers: %u", root->marker_count);
	const struct mt_marker *base = &root->markers[0], *hold = &root->markers[1],
			       *end = &root->markers[2];
	cr_assert_str_eq(base->label, "base");
	cr_assert_str_eq(end->label, "end");
	unsigned long long h, mp;
	cr_assert_eq(sscanf(hold->label, "hold %llu %llu", &h, &mp), 2, "%s", hold->label);
	cr_assert_gt(h, 0);
	cr_assert_gt(mp, 0);
	cr_assert_eq(hold->heap_current - base->heap_current, h,
		     "heap at hold: record +%llu, program holds %llu",
		     (unsigned long long)(hold->heap_current - base->heap_current), h);
	cr_assert_eq(hold->map_current - base->map_current, mp,
		     "maps at hold: record +%llu, program holds %llu",
		     (unsigned long long)(hold->map_current - base->map_current), mp);
	/* all of ours freed and the threads joined: back to the base figure
	 * (glibc keeps the exited threads' stacks and their TLS in its cache,
	 * allocated before "base" and not through malloc) */
	cr_assert_eq(end->heap_current, base->heap_current, "end %llu, base %llu",
		     (unsigned long long)end->heap_current,
		     (unsigned long long)base->heap_current);
	cr_assert_eq(end->map_current, base->map_current);
	cr_assert_leq(root->heap_current, root->heap_peak);
	(void)threads;
}

/* Three workers and sixteen fork+exec children, signals throughout. */
Test(shim_hostile, stress_threads_fork_signals_under_memsup, .timeout = 700)
{
	struct stress_run s;
	stress_run(&s, "3", "20000", "16");
	check_stress(&s, 3, 16);
	stress_done(&s);
}

/* Many short children: the single-threaded fast path under a 50 us timer
 * whose handler allocates (each child checks its own figure came back). */
Test(shim_hostile, many_signalled_fork_children, .timeout = 700)
{
	struct stress_run s;
	stress_run(&s, "1", "2000", "60");
	check_stress(&s, 1, 60);
	stress_done(&s);
}

/* Without the shim the program's own checks pass too: a failure above is
 * the shim's, not the workload's. */
Test(shim_hostile, stress_passes_bare, .timeout = 300)
{
	const char *path = prog("x_stress");
	pid_t pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		int null = open("/dev/null", O_WRONLY);
		if (null >= 0)
			dup2(null, 1);
		unsetenv("LD_PRELOAD");
		execl(path, "x_stress", "2", "5000", "8", (char *)NULL);
		_exit(98);
	}
	int st;
	cr_assert_eq(waitpid(pid, &st, 0), pid);
	cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "status 0x%x", st);
}
