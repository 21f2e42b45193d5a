/* test_memsup_oom.c: the OOM autopsy end to end -- a real kernel's
 * OOM killer in the run's memory cgroup, and the evidence naming who it
 * killed, by which limit, and what the tree held then.  The workload is
 * tests/progs/oom_three.c (three children of 20, 40 and 100 MB, a parent
 * that grows until the kernel kills the largest); the checks are
 * tests/py/memsup_oom.py.  A test that finds no memory cgroup for the run
 * skips where the test itself can make none, and fails where it can
 * (test_cgprobe.h). */
#include "test_cgprobe.h"
#include "test_memsup_util.h"

static void require_memory(struct sup_run *r, int st)
{
	if (st == 125 && strstr(r->err, "--mem-max"))
		cgprobe_skip_or_fail("memory", "memsup refused --mem-max: %s", r->err);
}

/* --mem-max 200 over 160 MB held and a parent growing to 50: the kernel
 * kills child c; the record names it from the kernel's log. */
Test(memsup_oom, oom_kill_names_the_largest, .timeout = 90)
{
	struct sup_run r;
	const char *args[] = { "--poll-ms", "20", "--mem-max", "200", "--", prog("oom_three"),
			       "pids", "20", "40", "100", "50", NULL };
	int st = memsup_run(&r, args);
	require_memory(&r, st);
	cr_assert_eq(st, 123, "stderr: %s", r.err);
	cr_expect(strstr(r.err, "memsup: oom_kill: the kernel killed pid"), "%s", r.err);
	/* as root the kernel's log is read; else the victim is inferred */
	sup_py_check(&r, "memsup_oom.py", "oom_kill_names_the_largest",
		     geteuid() == 0 ? NULL : "any");
	sup_done(&r);
}

/* Without the kernel's log (MEMSUP_KMSG empty: what kernel.dmesg_restrict
 * leaves a user): the victim inferred from the counter and the member
 * that left, the limit from the cgroup's own counts. */
Test(memsup_oom, oom_inferred_without_the_log, .timeout = 90)
{
	struct sup_run r;
	setenv("MEMSUP_KMSG", "", 1);
	const char *args[] = { "--poll-ms", "20", "--mem-max", "200", "--", prog("oom_three"),
			       "pids", "20", "40", "100", "50", NULL };
	int st = memsup_run(&r, args);
	unsetenv("MEMSUP_KMSG");
	require_memory(&r, st);
	cr_assert_eq(st, 123, "stderr: %s", r.err);
	sup_py_check(&r, "memsup_oom.py", "oom_inferred_without_the_log", NULL);
	sup_done(&r);
}

/* The shape of a container or a Slurm step: memsup in a cgroup with a
 * memory limit of 190 MB that the test makes (below its own, in the
 * hierarchy with the memory controller), the run's cgroup below memsup's.
 * The limit that fires is the parent's: named, with its limit.  The
 * shell moves itself into the parent and execs memsup; the parent is
 * removed after the run, pass or fail (the test's own cleanup below). */
static const char above_script[] =
	"own=$(sed -n 's/^[0-9]*:memory:\\(.*\\)/\\1/p' /proc/self/cgroup)\n"
	"if [ -n \"$own\" ] && [ -f /sys/fs/cgroup/memory$own/memory.limit_in_bytes ]; then\n"
	"  p=/sys/fs/cgroup/memory$own/mt-oom-above-$$; lim=memory.limit_in_bytes\n"
	"else\n"
	"  own=$(sed -n 's/^0::\\(.*\\)/\\1/p' /proc/self/cgroup)\n"
	"  grep -qw memory /sys/fs/cgroup$own/cgroup.subtree_control 2>/dev/null || exit 77\n"
	"  p=/sys/fs/cgroup$own/mt-oom-above-$$; lim=memory.max\n"
	"fi\n"
	"mkdir \"$p\" || exit 77\n"
	"echo \"$p\" > \"$T/parent\"\n"
	"echo 190000000 > \"$p/$lim\" || exit 77\n"
	"[ -f \"$p/memory.memsw.limit_in_bytes\" ] && echo 190000000 > \"$p/memory.memsw.limit_in_bytes\"\n"
	"[ -f \"$p/memory.swap.max\" ] && echo 0 > \"$p/memory.swap.max\"\n"
	"echo $$ > \"$p/cgroup.procs\" || exit 77\n"
	"exec \"$MEMSUP\" -o \"$T/ev\" --poll-ms 20 -- \"$W\" \"$T/pids\" 20 40 100 50\n";

static void remove_parent(const struct sup_run *r)
{
	char path[PATH_MAX], cmd[PATH_MAX + 128];
	snprintf(path, sizeof path, "%s/parent", r->tmp);
	FILE *f = fopen(path, "r");
	if (!f)
		return;
	if (fgets(path, sizeof path, f)) {
		path[strcspn(path, "\n")] = '\0';
		/* the sentinel leaves memsup's cgroup as the run ends */
		snprintf(cmd, sizeof cmd, "for i in 1 2 3 4 5 6 7 8 9 10; do rmdir '%s' 2>/dev/null "
			 "&& exit 0; sleep 0.2; done; exit 1", path);
		if (system(cmd) != 0)
			cr_log_warn("could not remove %s", path);
	}
	fclose(f);
}

Test(memsup_oom, limit_above_the_run_is_named, .timeout = 90)
{
	struct sup_run r;
	char parent[PATH_MAX] = "";
	tmp_make(&r);
	setenv("T", r.tmp, 1);
	setenv("W", prog("oom_three"), 1);
	const char *argv[] = { "sh", "-c", above_script, NULL };
	sup_spawn(&r, NULL, argv);
	int st = memsup_wait(&r);
	snprintf(r.dir, sizeof r.dir, "%s/ev", r.tmp);
	FILE *f = fopen(sup_tmp_path(&r, "parent"), "r");
	if (f) {
		if (!fgets(parent, sizeof parent, f))
			parent[0] = '\0';
		parent[strcspn(parent, "\n")] = '\0';
		fclose(f);
	}
	remove_parent(&r);
	if (st == 77)
		cgprobe_skip_or_fail("memory", "no cgroup with a memory limit could be made below "
				     "the test's own: %s", r.err);
	cr_assert_eq(st, 0, "stderr: %s", r.err);
	sup_py_check(&r, "memsup_oom.py", "limit_above_the_run_is_named", parent);
	sup_done(&r);
}

/* The command's own kill -9 of a child is no OOM kill, and is never
 * called one. */
Test(memsup_oom, kill_9_is_not_an_oom, .timeout = 60)
{
	struct sup_run r;
	const char *args[] = { "--poll-ms", "20", "--", "sh", "-c",
			       "\"$0\" 4 10 40 & p=$!; sleep 0.5; kill -9 $p; wait $p; exit 0",
			       prog("grower"), NULL };
	int st = memsup_run(&r, args);
	cr_assert_eq(st, 0, "stderr: %s", r.err);
	cr_expect_null(strstr(r.err, "oom_kill"), "%s", r.err);
	sup_py_check(&r, "memsup_oom.py", "kill_9_is_not_an_oom", NULL);
	sup_done(&r);
}
