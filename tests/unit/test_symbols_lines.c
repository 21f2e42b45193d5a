/* test_symbols_lines.c: the parts of file:line naming that need no run:
 * addr2line's answers parsed (inline chains, discriminators, unknowns, an
 * answer to what was not asked), the runner against tools that fail, hang
 * or are missing, and the debug-file finder on files made here with
 * objcopy (the build-id layout under a root of the test's own, a
 * .gnu_debuglink in each place debuggers look, a stale debug file). */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "analyze/addr2line.h"
#include "analyze/debugfile.h"
#include "base/clock.h"
#include "elfsym.h"
#include "test_tmp.h"

/* ---- addr2line's answers -------------------------------------------------- */

Test(symbols_lines, parse_inline_chains_and_unknowns)
{
	/* what `addr2line -a -f -i -C` printed for three addresses of libc */
	char text[] = "0x0000000000088ff0\n"
		      "internal_signal_restore_set\n"
		      "./nptl/../sysdeps/unix/sysv/linux/internal-signals.h:89 (discriminator 4)\n"
		      "start_thread\n"
		      "./nptl/./nptl/pthread_create.c:426 (discriminator 4)\n"
		      "0x00000000000891f4\n"
		      "start_thread\n"
		      "./nptl/./nptl/pthread_create.c:442\n"
		      "0x0000000000000010\n"
		      "??\n"
		      "??:0\n";
	const uint64_t addrs[] = { 0x88ff0, 0x891f4, 0x10 };
	struct addr2line_result r;
	cr_assert_eq(addr2line_parse(text, addrs, 3, &r), 0);
	cr_assert_eq(r.n, 3);
	cr_assert_eq(r.count[0], 2);
	cr_assert_eq(r.count[1], 1);
	cr_assert_eq(r.count[2], 1);
	const struct addr2line_frame *a = &r.frames[r.first[0]];
	cr_assert_str_eq(a[0].function, "internal_signal_restore_set");
	cr_assert_str_eq(a[0].file, "./nptl/../sysdeps/unix/sysv/linux/internal-signals.h");
	cr_assert_eq(a[0].line, 89);
	cr_assert_str_eq(a[1].function, "start_thread");
	cr_assert_eq(a[1].line, 426);
	a = &r.frames[r.first[1]];
	cr_assert_str_eq(a[0].file, "./nptl/./nptl/pthread_create.c");
	cr_assert_eq(a[0].line, 442);
	a = &r.frames[r.first[2]];
	cr_assert_null(a[0].function);
	cr_assert_null(a[0].file);
	cr_assert_eq(a[0].line, 0);
	addr2line_free(&r);
}

Test(symbols_lines, parse_rejects_answers_not_asked)
{
	const uint64_t addrs[] = { 0x1000, 0x2000 };
	struct addr2line_result r;
	char other[] = "0x0000000000001000\nf\na.c:1\n0x0000000000003000\ng\nb.c:2\n";
	cr_expect_eq(addr2line_parse(other, addrs, 2, &r), -EPROTO);
	char short_[] = "0x0000000000001000\nf\na.c:1\n";
	cr_expect_eq(addr2line_parse(short_, addrs, 2, &r), -EPROTO);
	char torn[] = "0x0000000000001000\nf\na.c:1\n0x0000000000002000\ng\n";
	cr_expect_eq(addr2line_parse(torn, addrs, 2, &r), -EPROTO);
	char noise[] = "addr2line: warning\n0x0000000000001000\nf\na.c:1\n";
	cr_expect_eq(addr2line_parse(noise, addrs, 1, &r), -EPROTO);
	/* "file:?" is a file without a line */
	char q[] = "0x1000\nf\na.c:?\n0x2000\ng\nb.c:7\n";
	cr_assert_eq(addr2line_parse(q, addrs, 2, &r), 0);
	cr_expect_str_eq(r.frames[0].file, "a.c");
	cr_expect_eq(r.frames[0].line, 0);
	cr_expect_eq(r.frames[1].line, 7);
	addr2line_free(&r);
}

/* ---- the runner against bad tools ---------------------------------------- */

static char dir[PATH_MAX];

static void tmp_dir(void)
{
	snprintf(dir, sizeof dir, "/tmp/test-symlines-XXXXXX");
	cr_assert_not_null(mkdtemp(dir));
	tmp_adopt(dir);
}

static const char *script(const char *name, const char *body)
{
	static char path[4][PATH_MAX + 64];
	static unsigned slot;
	char *p = path[slot++ % 4];
	snprintf(p, PATH_MAX + 64, "%s/%s", dir, name);
	FILE *f = fopen(p, "w");
	cr_assert_not_null(f);
	fprintf(f, "#!/bin/sh\n%s\n", body);
	fclose(f);
	chmod(p, 0755);
	return p;
}

Test(symbols_lines, runner_says_missing_failed_and_hung_tools, .timeout = 30)
{
	const uint64_t addrs[] = { 0x1000 };
	struct addr2line_result r;
	tmp_dir();
	cr_expect_eq(addr2line_run("/nonexistent/addr2line", "/bin/sh", addrs, 1, 1,
				   clock_mono_ns() + 5000000000u, &r),
		     -ENOENT);
	cr_expect_eq(addr2line_run(script("fails", "exit 1"), "/bin/sh", addrs, 1, 1,
				   clock_mono_ns() + 5000000000u, &r),
		     -EPROTO);
	/* answers, but for an address not asked */
	cr_expect_eq(addr2line_run(script("wrong", "echo 0x2000; echo f; echo a.c:1"), "/bin/sh",
				   addrs, 1, 1, clock_mono_ns() + 5000000000u, &r),
		     -EPROTO);
	/* never answers: killed at the deadline (a short one: no wall-time
	 * assertion, the call returning at all is the test) */
	cr_expect_eq(addr2line_run(script("hangs", "exec sleep 600"), "/bin/sh", addrs, 1, 1,
				   clock_mono_ns() + 300000000u, &r),
		     -ETIMEDOUT);
	/* closes its output at once and never exits: killed all the same */
	cr_expect_eq(addr2line_run(script("lingers", "exec >&-; exec sleep 600"), "/bin/sh", addrs,
				   1, 1, clock_mono_ns() + 300000000u, &r),
		     -ETIMEDOUT);
	/* a well-behaved fake: reads the addresses from stdin, in order */
	const char *echo = script("echoes", "while read a; do echo $a; echo fn_$a; echo f.c:12; done");
	const uint64_t two[] = { 0x10, 0xabc };
	cr_assert_eq(addr2line_run(echo, "/bin/sh", two, 2, 1, clock_mono_ns() + 5000000000u, &r), 0);
	cr_expect_str_eq(r.frames[r.first[1]].function, "fn_0xabc");
	cr_expect_eq(r.frames[r.first[1]].line, 12);
	addr2line_free(&r);
}

Test(symbols_lines, tool_from_environment)
{
	char buf[PATH_MAX];
	const char *why = NULL;
	setenv("MEMSUP_ADDR2LINE", "", 1);
	cr_expect_eq(addr2line_tool(buf, sizeof buf, &why), 0);
	cr_expect_not_null(strstr(why, "empty"), "%s", why);
	setenv("MEMSUP_ADDR2LINE", "/nonexistent/a2l", 1);
	cr_expect_eq(addr2line_tool(buf, sizeof buf, &why), 0);
	setenv("MEMSUP_ADDR2LINE", "sh", 1);
	setenv("PATH", "/nonexistent:/bin", 1);
	cr_expect_eq(addr2line_tool(buf, sizeof buf, &why), 1);
	cr_expect_str_eq(buf, "/bin/sh");
	unsetenv("MEMSUP_ADDR2LINE");
	setenv("PATH", "/nonexistent", 1);
	cr_expect_eq(addr2line_tool(buf, sizeof buf, &why), 0);
	cr_expect_not_null(strstr(why, "PATH"), "%s", why);
}

/* ---- the debug-file finder ------------------------------------------------- */

static ssize_t fd_pread(void *ctx, void *buf, size_t n, uint64_t off)
{
	ssize_t r = pread(*(int *)ctx, buf, n, (off_t)off);
	return r < 0 ? -errno : r;
}

/* debugfile_find on `path`, with the root `root`: its verdict into *out. */
static void find(const char *path, const char *root, struct debugfile *out)
{
	struct elfsym e;
	uint8_t id[64];
	int fd = open(path, O_RDONLY);
	cr_assert_geq(fd, 0, "%s", path);
	cr_assert_eq(elfsym_open(&e, fd_pread, &fd), 0);
	int n = elfsym_build_id(&e, 0, id, sizeof id);
	cr_assert_gt(n, 0, "%s has a build-id", path);
	cr_assert_eq(debugfile_find(path, &e, id, (size_t)n, root, out), 0);
	close(fd);
}

static void sh(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void sh(const char *fmt, ...)
{
	static char cmd[4 * PATH_MAX], full[6 * PATH_MAX];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(cmd, sizeof cmd, fmt, ap);
	va_end(ap);
	snprintf(full, sizeof full, "cd '%s' && %s", dir, cmd);
	cr_assert_eq(system(full), 0, "failed: %s", full);
}

static const char *in_dir(const char *name)
{
	static char p[4][PATH_MAX + 64];
	static unsigned slot;
	char *x = p[slot++ % 4];
	snprintf(x, PATH_MAX + 64, "%s/%s", dir, name);
	return x;
}

static const char *progpath(const char *name)
{
	static char p[PATH_MAX];
	const char *progs = getenv("MT_PROGS");
	if (!progs || !*progs)
		cr_skip_test("MT_PROGS is not set (run through make check)");
	if (system("command -v objcopy >/dev/null 2>&1") != 0)
		cr_skip_test("objcopy (binutils) is not installed");
	snprintf(p, sizeof p, "%s/%s", progs, name);
	return p;
}

Test(symbols_lines, finder_in_file_and_by_build_id, .timeout = 30)
{
	struct debugfile d;
	const char *prog = progpath("lines_sites");
	tmp_dir();
	find(prog, in_dir("root"), &d);
	cr_expect_eq(d.how, DEBUGFILE_IN_FILE);
	cr_expect_str_eq(d.path, prog);

	/* stripped, its DWARF at ROOT/.build-id/xx/yyyy.debug */
	sh("objcopy --only-keep-debug '%s' full.debug && objcopy --strip-all '%s' stripped",
	   prog, prog);
	find(in_dir("stripped"), in_dir("root"), &d);
	cr_expect_eq(d.how, DEBUGFILE_NONE);
	sh("id=$(readelf -n stripped | sed -n 's/.*Build ID: //p') && "
	   "mkdir -p root/.build-id/$(echo $id | cut -c1-2) && "
	   "cp full.debug root/.build-id/$(echo $id | cut -c1-2)/$(echo $id | cut -c3-).debug");
	find(in_dir("stripped"), in_dir("root"), &d);
	cr_expect_eq(d.how, DEBUGFILE_BUILD_ID);
	cr_expect(strstr(d.path, "/root/.build-id/") != NULL, "%s", d.path);
}

Test(symbols_lines, finder_follows_debuglink_where_debuggers_look, .timeout = 30)
{
	struct debugfile d;
	const char *prog = progpath("lines_sites");
	char want[2 * PATH_MAX + 64];
	tmp_dir();
	sh("objcopy --only-keep-debug '%s' x.debug && "
	   "objcopy --strip-all --add-gnu-debuglink=x.debug '%s' x && mkdir -p bin .debug",
	   prog, prog);
	/* next to the file */
	find(in_dir("x"), in_dir("root"), &d);
	cr_expect_eq(d.how, DEBUGFILE_DEBUGLINK);
	cr_expect_str_eq(d.path, in_dir("x.debug"));
	/* in .debug/ beside it */
	sh("mv x.debug .debug/x.debug");
	find(in_dir("x"), in_dir("root"), &d);
	cr_expect_eq(d.how, DEBUGFILE_DEBUGLINK);
	cr_expect_str_eq(d.path, in_dir(".debug/x.debug"));
	/* under ROOT/<the file's directory> */
	snprintf(want, sizeof want, "%s/root%s/x.debug", dir, dir);
	sh("mkdir -p root%s && mv .debug/x.debug root%s/", dir, dir);
	find(in_dir("x"), in_dir("root"), &d);
	cr_expect_eq(d.how, DEBUGFILE_DEBUGLINK);
	cr_expect_str_eq(d.path, want);
}

Test(symbols_lines, finder_refuses_another_builds_debug_file, .timeout = 30)
{
	struct debugfile d;
	char prog[PATH_MAX], other[PATH_MAX];
	snprintf(prog, sizeof prog, "%s", progpath("lines_sites"));
	snprintf(other, sizeof other, "%s", progpath("sites_532"));
	tmp_dir();
	/* by build-id: another program's debug info under this debuglink */
	sh("objcopy --only-keep-debug '%s' x.debug && "
	   "objcopy --strip-all --add-gnu-debuglink=x.debug '%s' x",
	   other, prog);
	find(in_dir("x"), in_dir("root"), &d);
	cr_expect_eq(d.how, DEBUGFILE_MISMATCH);
	cr_expect_str_eq(d.path, in_dir("x.debug"));
	/* without build-ids, by the CRC: the right file, then one changed
	 * after the link was made */
	sh("objcopy --remove-section=.note.gnu.build-id '%s' y.full && "
	   "objcopy --only-keep-debug y.full y.debug && "
	   "objcopy --strip-all --add-gnu-debuglink=y.debug y.full y",
	   prog);
	struct elfsym e;
	uint8_t id[8];
	int fd = open(in_dir("y"), O_RDONLY);
	cr_assert_geq(fd, 0);
	cr_assert_eq(elfsym_open(&e, fd_pread, &fd), 0);
	cr_assert_eq(elfsym_build_id(&e, 0, id, sizeof id), 0, "the build-id is gone");
	cr_assert_eq(debugfile_find(in_dir("y"), &e, NULL, 0, in_dir("root"), &d), 0);
	cr_expect_eq(d.how, DEBUGFILE_DEBUGLINK);
	sh("printf x >> y.debug");
	cr_assert_eq(debugfile_find(in_dir("y"), &e, NULL, 0, in_dir("root"), &d), 0);
	cr_expect_eq(d.how, DEBUGFILE_MISMATCH);
	close(fd);
}

Test(symbols_lines, crc32_is_zlibs)
{
	char path[PATH_MAX + 8];
	uint32_t crc;
	tmp_dir();
	snprintf(path, sizeof path, "%s/c", dir);
	int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
	cr_assert_geq(fd, 0);
	cr_assert_eq(write(fd, "123456789", 9), 9);
	cr_assert_eq(debugfile_crc32(fd, &crc), 0);
	cr_expect_eq(crc, 0xCBF43926u); /* the CRC-32 check value */
	close(fd);
}
