/* test_memsup_lines.c: sampled frames named by function, file and line
 * after a run under memsup: DWARF in the program, in libc6-dbg's build-id
 * debug file, behind a .gnu_debuglink; inlined functions expanded; and the
 * degraded cases (stripped without a debug file, a debug file of another
 * build, no addr2line), each said in stacks.json.
 *
 * tests/progs/lines_sites holds five blocks from five call sites and prints
 * the line of each allocating call (__LINE__) and its usable bytes; every
 * block is sampled (MEMTRACE_SAMPLE_BYTES=1), so each site's bytes are
 * exact.  The checks are python3 (a real JSON parser):
 * tests/py/memsup_lines.py, one per test.
 */
#include "test_memsup_util.h"
#include "test_py.h"

/* memsup's own environment for the next run (set in the child): NAME=VALUE
 * pairs, NULL-terminated. */
static const char *const *run_env;

static void set_run_env(const struct sup_run *r)
{
	(void)r;
	for (size_t i = 0; run_env && run_env[i]; i += 2)
		setenv(run_env[i], run_env[i + 1], 1);
}

/* memsup -o TMP/ev -e MEMTRACE_SAMPLE_BYTES=1 -- program 300: the sites are
 * read at a sample while all five blocks are held, and under a load of
 * dozens a 100 ms hold was seen to get a single sample, too late */
static void run_lines(struct sup_run *r, const char *program, const char *const *env)
{
	const char *argv[] = { env_or_skip("MEMSUP"), "-o", r->dir, "-e", "MEMTRACE_SAMPLE_BYTES=1",
			       "--", program, "300", NULL };
	run_env = env;
	sup_spawn(r, set_run_env, argv);
	cr_assert_eq(memsup_wait(r), 0, "memsup: status %d; stderr: %s", r->status, r->err);
}

/* Run check `name` of tests/py/memsup_lines.py on r->dir (arg may be NULL);
 * 77 from it skips the test with what it printed. */
/* A shell command in r->tmp; the test fails with it when it fails. */
static void shell(const struct sup_run *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void shell(const struct sup_run *r, const char *fmt, ...)
{
	static char cmd[4 * PATH_MAX], full[6 * PATH_MAX];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(cmd, sizeof cmd, fmt, ap);
	va_end(ap);
	snprintf(full, sizeof full, "cd '%.*s' && %s", PATH_MAX, r->tmp, cmd);
	cr_assert_eq(system(full), 0, "failed: %s", full);
}

static void need_objcopy(void)
{
	if (system("command -v objcopy >/dev/null 2>&1") != 0)
		cr_skip_test("objcopy (binutils) is not installed");
}

/* Each of four call sites shows the exact line of its allocating call, in
 * stacks.json, flame.folded (still one "a;b;c BYTES" line per path),
 * flame.svg and the summary. */
Test(memsup_lines, exact_line_for_each_site, .timeout = 120)
{
	struct sup_run r;
	tmp_make(&r);
	run_lines(&r, prog("lines_sites"), NULL);
	sup_py_check(&r, "memsup_lines.py", "exact_line_for_each_site", sup_tmp_path(&r, "memsup.stderr"));
	sup_done(&r);
}

/* An always_inline function inlined at -O2: one return address, two
 * frames, the inlined one (its own line) inside its caller (the line it
 * was called from). */
Test(memsup_lines, inlined_function_shows_both_frames, .timeout = 120)
{
	struct sup_run r;
	tmp_make(&r);
	run_lines(&r, prog("lines_sites"), NULL);
	sup_py_check(&r, "memsup_lines.py", "inlined_function_shows_both_frames", NULL);
	sup_done(&r);
}

/* A block from a thread: libc's start_thread gets pthread_create.c:NNN from
 * the build-id debug file libc6-dbg installs (skipped without it). */
Test(memsup_lines, libc_frame_from_build_id_debug_file, .timeout = 120)
{
	struct sup_run r;
	tmp_make(&r);
	run_lines(&r, prog("lines_sites"), NULL);
	sup_py_check(&r, "memsup_lines.py", "libc_frame_from_build_id_debug_file", NULL);
	sup_done(&r);
}

/* A stripped copy whose DWARF was moved out (objcopy --only-keep-debug) and
 * linked back by .gnu_debuglink: the same exact lines, read from there. */
Test(memsup_lines, stripped_copy_with_debuglink, .timeout = 120)
{
	struct sup_run r;
	need_objcopy();
	tmp_make(&r);
	shell(&r, "objcopy --only-keep-debug '%s' lines_sites.debug && "
		  "objcopy --strip-all --add-gnu-debuglink=lines_sites.debug '%s' lines_sites",
	      prog("lines_sites"), prog("lines_sites"));
	run_lines(&r, sup_tmp_path(&r, "lines_sites"), NULL);
	sup_py_check(&r, "memsup_lines.py", "stripped_copy_with_debuglink", sup_tmp_path(&r, "lines_sites.debug"));
	sup_done(&r);
}

/* The same stripped copy without its debug file: frames in it have no name
 * and no line, and the record says it is stripped. */
Test(memsup_lines, stripped_copy_without_debug_file, .timeout = 120)
{
	struct sup_run r;
	need_objcopy();
	tmp_make(&r);
	shell(&r, "objcopy --strip-all '%s' lines_sites", prog("lines_sites"));
	run_lines(&r, sup_tmp_path(&r, "lines_sites"), NULL);
	sup_py_check(&r, "memsup_lines.py", "stripped_copy_without_debug_file", NULL);
	sup_done(&r);
}

/* A debug file of another build where the debuglink points (its build-id
 * differs) is not believed: no lines, and the record names it. */
Test(memsup_lines, mismatched_debug_file_is_not_used, .timeout = 120)
{
	struct sup_run r;
	need_objcopy();
	tmp_make(&r);
	shell(&r, "objcopy --only-keep-debug '%s' lines_sites.debug && "
		  "objcopy --strip-all --add-gnu-debuglink=lines_sites.debug '%s' lines_sites",
	      prog("sites_532"), prog("lines_sites"));
	run_lines(&r, sup_tmp_path(&r, "lines_sites"), NULL);
	sup_py_check(&r, "memsup_lines.py", "mismatched_debug_file_is_not_used", sup_tmp_path(&r, "lines_sites.debug"));
	sup_done(&r);
}

/* MEMSUP_ADDR2LINE naming no program: the functions of before, no lines,
 * no inlined frames, and the record says why. */
Test(memsup_lines, without_addr2line_names_stay_functions, .timeout = 120)
{
	static const char *const env[] = { "MEMSUP_ADDR2LINE", "/nonexistent/addr2line", NULL };
	struct sup_run r;
	tmp_make(&r);
	run_lines(&r, prog("lines_sites"), env);
	sup_py_check(&r, "memsup_lines.py", "without_addr2line_names_stay_functions", NULL);
	sup_done(&r);
}

/* The same with a PATH that has no addr2line (the program named by its
 * path): memsup runs, and says so. */
Test(memsup_lines, addr2line_not_in_path, .timeout = 120)
{
	static const char *const env[] = { "PATH", "/nonexistent", NULL };
	struct sup_run r;
	tmp_make(&r);
	run_lines(&r, prog("lines_sites"), env);
	sup_py_check(&r, "memsup_lines.py", "without_addr2line_names_stay_functions", NULL);
	sup_done(&r);
}

/* tests/progs/lines_cxx.cc built here with g++ (FLAGS, then AFTER in the
 * same shell, e.g. a strip), run, and judged by CHECK. */
static void run_cxx(const char *flags, const char *after, const char *check)
{
	struct sup_run r;
	char src[PATH_MAX];
	if (system("command -v g++ >/dev/null 2>&1") != 0)
		cr_skip_test("g++ is not installed");
	snprintf(src, sizeof src, "%s/tests/progs/lines_cxx.cc", env_or_skip("MT_SRCDIR"));
	tmp_make(&r);
	shell(&r, "g++ %s -o lines_cxx '%s' %s", flags, src, after);
	run_lines(&r, sup_tmp_path(&r, "lines_cxx"), NULL);
	sup_py_check(&r, "memsup_lines.py", check, NULL);
	sup_done(&r);
}

/* C++: a member function of a class template in a namespace, from its
 * DWARF, and libstdc++'s operator new from its symbols alone, both
 * demangled. */
Test(memsup_lines, cxx_names_are_demangled, .timeout = 120)
{
	run_cxx("-g -O2 -fno-omit-frame-pointer", "", "cxx_names_are_demangled");
}

/* The same program stripped, its functions exported (-rdynamic): grow is
 * named from the dynamic symbol table, demangled; fill, a static function
 * in no symbol table, stays unnamed.  Without debug information addr2line
 * names any address by the nearest symbol below it, even one that ends
 * before it; memsup asks it only to demangle what the symbols named. */
Test(memsup_lines, cxx_stripped_names_only_what_symbols_hold, .timeout = 120)
{
	run_cxx("-O2 -fno-omit-frame-pointer -rdynamic", "&& strip lines_cxx",
		"cxx_stripped_names_only_what_symbols_hold");
}
