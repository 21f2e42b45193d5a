/* test_shim_nospace.c: a record that cannot be written never breaks the
 * program: on a full file system (a one-page tmpfs, filled) and under a
 * file-size limit below a record, a traced program runs and exits as it
 * would bare, and leaves no record file behind. */
#include <criterion/criterion.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char *so_or_skip(void)
{
	const char *so = getenv("MEMTRACE_SO");
	if (!so || !*so)
		cr_skip_test("MEMTRACE_SO is not set (run through make check)");
	return so;
}

/* Runs `script` under sh with $1 = the shim; returns what it printed. */
static const char *run_sh(const char *script, const char *so)
{
	static char out[4096];
	char cmd[PATH_MAX + 64];
	setenv("MT_NOSPACE_SCRIPT", script, 1);
	snprintf(cmd, sizeof cmd, "sh -c \"$MT_NOSPACE_SCRIPT\" sh '%s' 2>&1", so);
	FILE *f = popen(cmd, "r");
	cr_assert_not_null(f);
	size_t n = fread(out, 1, sizeof out - 1, f);
	out[n] = '\0';
	pclose(f);
	return out;
}

Test(shim_nospace, full_file_system, .timeout = 60)
{
	const char *so = so_or_skip();
	char dir[] = "/tmp/mt-nospace-XXXXXX";
	cr_assert_not_null(mkdtemp(dir));
	char probe[PATH_MAX + 160];
	snprintf(probe, sizeof probe, "unshare -rm sh -c 'mount -t tmpfs -o size=4k tmpfs %s' "
		 ">/dev/null 2>&1", dir);
	if (system(probe) != 0) {
		rmdir(dir);
		cr_skip_test("cannot mount a tmpfs here (unshare -rm refused); "
			     "file_size_limit covers the same path");
	}
	/* In the namespace: a one-page tmpfs, filled; then the shim must fail
	 * to write a record, run echo all the same and leave no file. */
	char script[PATH_MAX * 2];
	snprintf(script, sizeof script,
		 "unshare -rm sh -c '"
		 "mount -t tmpfs -o size=4k tmpfs %s || exit 90; "
		 "dd if=/dev/zero of=%s/fill bs=4096 count=4 2>/dev/null; "
		 "LD_PRELOAD=\"$1\" MEMTRACE_DIR=%s MEMTRACE_QUIET=1 /bin/echo hello; "
		 "echo rc=$?; ls %s | grep -c mtr' sh \"$1\"",
		 dir, dir, dir, dir);
	const char *out = run_sh(script, so);
	cr_expect_str_eq(out, "hello\nrc=0\n0\n", "got: %s", out);
	rmdir(dir);
}

Test(shim_nospace, file_size_limit, .timeout = 60)
{
	const char *so = so_or_skip();
	char dir[] = "/tmp/mt-nospace-XXXXXX";
	cr_assert_not_null(mkdtemp(dir));
	/* ulimit -f counts 512-byte blocks in dash and bash: 4 KiB, half a
	 * record; writing past it would be SIGXFSZ */
	char script[PATH_MAX * 2];
	snprintf(script, sizeof script,
		 "ulimit -f 8; LD_PRELOAD=\"$1\" MEMTRACE_DIR=%s MEMTRACE_QUIET=1 /bin/echo hello; "
		 "echo rc=$?; ls %s | grep -c mtr", dir, dir);
	const char *out = run_sh(script, so);
	cr_expect_str_eq(out, "hello\nrc=0\n0\n", "got: %s", out);
	/* and with room, the same command leaves its record: the test can fail */
	snprintf(script, sizeof script,
		 "LD_PRELOAD=\"$1\" MEMTRACE_DIR=%s MEMTRACE_QUIET=1 /bin/echo hello; "
		 "echo rc=$?; ls %s | grep -c mtr", dir, dir);
	out = run_sh(script, so);
	cr_expect_str_eq(out, "hello\nrc=0\n1\n", "got: %s", out);
	char rm[PATH_MAX + 16];
	snprintf(rm, sizeof rm, "rm -rf '%s'", dir);
	cr_expect_eq(system(rm), 0);
}
