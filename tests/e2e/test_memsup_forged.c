/* test_memsup_forged.c: records forged into a run's records directory
 * while memsup runs a real command, end to end.
 *
 * The command (a shell) says where its MEMTRACE_DIR is and waits; the test
 * then writes record files there with valid headers and plausible figures
 * -- a fork child of the command's own record whose pid is a `sleep` the
 * test started outside the tree (1 GiB heap peak, status 0), and 20
 * children whose pids are at or above pid_max -- and lets the shell run 40
 * `/bin/true`, each too short for the poller, whose real records must all
 * still be believed through their lineage.  python3
 * (tests/py/memsup_forged.py) judges processes.json, resources.json and
 * `memsup report`: the forged ones are named, with why, in
 * records_not_believed and nowhere else. */
#include "test_memsup_util.h"
#include "test_py.h"
#include "record.h"

#include <sys/prctl.h>
#include <time.h>

#define FORGED_ABOVE 20

/* A whole record file for image pid.gen, come from parent.parent_gen by
 * `relation`, that started now and ended a microsecond later having held
 * `heap` bytes (VmHWM: that and 2 MiB). */
static void forge_image(const char *dir, int32_t pid, uint32_t gen, uint32_t relation,
			int32_t parent, uint32_t parent_gen, uint64_t heap)
{
	static struct {
		struct mt_record r;
		char pad[MT_RECORD_SIZE - sizeof(struct mt_record)];
	} f;
	struct timespec ts;
	char path[PATH_MAX + 64];
	static const char argv[] = "sleep\0" "30";
	clock_gettime(CLOCK_MONOTONIC, &ts);
	memset(&f, 0, sizeof f);
	f.r.magic = MT_RECORD_MAGIC;
	f.r.version = MT_RECORD_VERSION;
	f.r.record_size = MT_RECORD_SIZE;
	f.r.pid = pid;
	f.r.gen = gen;
	f.r.ppid = parent;
	f.r.relation = relation;
	f.r.parent_pid = parent;
	f.r.parent_gen = parent_gen;
	f.r.start_mono_ns = (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
	f.r.end_mono_ns = f.r.start_mono_ns + 1000;
	f.r.state = MT_STATE_EXITED;
	f.r.heap_peak = heap;
	f.r.heap_peak_mono_ns = f.r.start_mono_ns + 500;
	f.r.total_peak = heap;
	f.r.calls[MT_CALL_MALLOC] = 1;
	f.r.calls[MT_CALL_FREE] = 1;
	f.r.vm_hwm_kb = heap / 1024 + 2048;
	f.r.vm_peak_kb = f.r.vm_hwm_kb + 4096;
	f.r.argc = 2;
	memcpy(f.r.argv, argv, sizeof argv);
	f.r.argv_bytes = sizeof argv;
	memcpy(f.r.exe, "/bin/sleep", 11);
	snprintf(path, sizeof path, "%s/%d.%u%s", dir, (int)pid, (unsigned)gen, MT_RECORD_SUFFIX);
	int fd = open(path, O_WRONLY | O_CREAT | O_EXCL, 0644);
	cr_assert_geq(fd, 0, "%s: %s", path, strerror(errno));
	cr_assert_eq(write(fd, &f, sizeof f), (ssize_t)sizeof f);
	close(fd);
}

/* A fork child of parent.0 (forge_image). */
static void forge(const char *dir, int32_t pid, int32_t parent, uint64_t heap)
{
	forge_image(dir, pid, 0, MT_REL_FORK, parent, 0, heap);
}

/* The first pid this machine cannot have (pid_max), at least 3,000,000:
 * as high as the forged pids memsup once believed. */
static long first_impossible_pid(void)
{
	char buf[32];
	slurp("/proc/sys/kernel/pid_max", buf, sizeof buf);
	long v = atol(buf);
	cr_assert_gt(v, 0, "pid_max: %s", buf);
	return v > 3000000 ? v : 3000000;
}

static pid_t start_outsider(void)
{
	pid_t pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		/* gone with the test process, should an assertion end it first */
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		execl("/bin/sleep", "sleep", "30", (char *)NULL);
		_exit(127);
	}
	return pid;
}

static void end_outsider(pid_t pid)
{
	kill(pid, SIGKILL);
	while (waitpid(pid, NULL, 0) < 0 && errno == EINTR) {
	}
}

/* Run the check named `name` of tests/py/memsup_forged.py with the
 * evidence directory, memsup (for `memsup report`) and the test's facts;
 * fail the test with its output if it raises. */
static void py_check(const struct sup_run *r, const char *name, pid_t outsider, long above)
{
	char cmd[3 * PATH_MAX + 160], out[16384];
	snprintf(cmd, sizeof cmd, "python3 '%s' '%s' '%s' '%s' %d %ld %d 2>&1",
		 py_script("memsup_forged.py"), name, r->dir, env_or_skip("MEMSUP"), (int)outsider,
		 above, FORGED_ABOVE);
	int st = py_output(cmd, out, sizeof out);
	cr_assert_eq(st, 0, "check %s failed:\n%s\nmemsup stderr:\n%s", name, out, r->err);
}

Test(memsup_forged, outside_pid_and_impossible_pids_not_believed, .timeout = 60)
{
	struct sup_run r;
	char script[4 * PATH_MAX], dir[PATH_MAX], pidtext[32];
	long above = first_impossible_pid();
	pid_t outsider = start_outsider();
	tmp_make(&r);
	const char *dirfile = sup_tmp_path(&r, "dir"), *pidfile = sup_tmp_path(&r, "pid");
	const char *go = sup_tmp_path(&r, "go");
	/* the directory and pid, each written whole before it is named */
	snprintf(script, sizeof script,
		 "echo \"$MEMTRACE_DIR\" > '%s.t' && mv '%s.t' '%s'; "
		 "echo $$ > '%s.t' && mv '%s.t' '%s'; "
		 "while [ ! -e '%s' ]; do sleep 0.05; done; "
		 "i=0; while [ $i -lt 40 ]; do /bin/true; i=$((i+1)); done; sleep 0.3",
		 dirfile, dirfile, dirfile, pidfile, pidfile, pidfile, go);
	/* a slow poll: most of the `true`s live between two samples */
	const char *args[] = { "--poll-ms", "200", "--", "/bin/sh", "-c", script, NULL };
	memsup_start(&r, 1, args);
	cr_assert(wait_for_file(dirfile), "the command never said where its records go");
	cr_assert(wait_for_file(pidfile), "the command never said its pid");
	slurp(dirfile, dir, sizeof dir);
	slurp(pidfile, pidtext, sizeof pidtext);
	dir[strcspn(dir, "\n")] = '\0';
	cr_assert_neq(dir[0], '\0', "MEMTRACE_DIR was empty");
	pid_t command = (pid_t)atoi(pidtext);
	cr_assert_gt(command, 0);
	/* a child of the command's record, whose pid lives outside the tree */
	forge(dir, outsider, command, UINT64_C(1) << 30);
	/* and 20 that no process here can have */
	for (int i = 0; i < FORGED_ABOVE; i++)
		forge(dir, (int32_t)(above + i), command, UINT64_C(64) << 20);
	int fd = open(go, O_WRONLY | O_CREAT, 0644);
	cr_assert_geq(fd, 0);
	close(fd);
	int st = memsup_wait(&r);
	end_outsider(outsider);
	cr_assert_eq(st, 0, "stderr: %s", r.err);
	py_check(&r, "outside_pid_and_impossible_pids_not_believed", outsider, above);
}

/* The first exec generation of pid that has no record file in dir: the
 * image pid runs now when its last traced image exec'd an untraced one. */
static uint32_t next_gen(const char *dir, pid_t pid)
{
	char path[PATH_MAX + 64];
	uint32_t gen = 0;
	for (;;) {
		snprintf(path, sizeof path, "%s/%d.%u%s", dir, (int)pid, (unsigned)gen,
			 MT_RECORD_SUFFIX);
		if (access(path, F_OK) != 0)
			return gen;
		gen++;
	}
}

/* A live member of the tree -- a `sleep` the command started without the
 * shim, which the poller sees for 1.5 s -- gets a forged record while it
 * runs: the exec of its own traced image, 2,000 MB of heap and a VmHWM to
 * match.  Its pid, times and lineage all fit; the kernel's figures do
 * not: no process of the tree held more than a few MB (getrusage children
 * maxrss, the cgroup's peak).  Not believed, named with why, and no
 * 2,000 MB in any figure or in `memsup report`'s LARGEST. */
Test(memsup_forged, live_member_far_above_the_kernels_figures_not_believed, .timeout = 60)
{
	struct sup_run r;
	char script[4 * PATH_MAX], dir[PATH_MAX], pidtext[32];
	tmp_make(&r);
	const char *dirfile = sup_tmp_path(&r, "dir"), *pidfile = sup_tmp_path(&r, "pid");
	const char *go = sup_tmp_path(&r, "go");
	snprintf(script, sizeof script,
		 "( unset LD_PRELOAD; exec /bin/sleep 1.5 ) & "
		 "echo \"$MEMTRACE_DIR\" > '%s.t' && mv '%s.t' '%s'; "
		 "echo $! > '%s.t' && mv '%s.t' '%s'; "
		 "while [ ! -e '%s' ]; do sleep 0.05; done; wait",
		 dirfile, dirfile, dirfile, pidfile, pidfile, pidfile, go);
	const char *args[] = { "--", "/bin/sh", "-c", script, NULL };
	memsup_start(&r, 1, args);
	cr_assert(wait_for_file(dirfile), "the command never said where its records go");
	cr_assert(wait_for_file(pidfile), "the command never said its child's pid");
	slurp(dirfile, dir, sizeof dir);
	slurp(pidfile, pidtext, sizeof pidtext);
	dir[strcspn(dir, "\n")] = '\0';
	pid_t sleeper = (pid_t)atoi(pidtext);
	cr_assert_gt(sleeper, 0);
	/* the sleep is the image after its fork child's record: wait until
	 * the exec is done (its comm says so), then take the next free gen */
	char comm[64] = "", path[64];
	snprintf(path, sizeof path, "/proc/%d/comm", (int)sleeper);
	for (int i = 0; i < 200 && strncmp(comm, "sleep", 5) != 0; i++) {
		usleep(10000);
		slurp(path, comm, sizeof comm);
	}
	cr_assert_eq(strncmp(comm, "sleep", 5), 0, "pid %d never became sleep: %s", (int)sleeper,
		     comm);
	uint32_t gen = next_gen(dir, sleeper);
	cr_assert_gt(gen, 0, "the sleep's fork child left no record of its own");
	forge_image(dir, sleeper, gen, MT_REL_EXEC, sleeper, gen - 1, UINT64_C(2000) * 1000000);
	int fd = open(go, O_WRONLY | O_CREAT, 0644);
	cr_assert_geq(fd, 0);
	close(fd);
	cr_assert_eq(memsup_wait(&r), 0, "stderr: %s", r.err);
	py_check(&r, "live_member_far_above_the_kernels_figures_not_believed", sleeper, (long)gen);
}
