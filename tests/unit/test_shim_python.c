/* test_shim_python.c: the shim's table of CPython layouts
 * (preload/sampling/python.h) against each interpreter's own headers: every offset
 * the walk reads is what offsetof gives with that version's headers, and
 * the entry's flags say what its structs have (a cframe or not, is_entry
 * or shim frames).  3.11 with Debian's /usr/include/python3.11
 * (python3.11-dev), 3.12 and 3.13 with the include directory beside the
 * interpreter tests/common/test_pythons.h finds; 3.13's table also against
 * the _Py_DebugOffsets its libpython publishes in _PyRuntime, which the
 * probe checks too (python_debug_offsets_agree).  Each test
 * skips, saying so, without its headers or a C compiler.  A wrong offset
 * would make the walk read the wrong field, end early, or name the wrong
 * function. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sampling/python.h"
#include "../common/test_pythons.h" /* libmtcore tests have no -I tests/common */

/* Prints "field value" for each field of struct python_layout, from the
 * headers (internal ones with Py_BUILD_CORE), whichever version they are. */
static const char probe_src[] =
	"#define Py_BUILD_CORE 1\n"
	"#include <Python.h>\n"
	"#include <internal/pycore_runtime.h>\n"
	"#include <internal/pycore_frame.h>\n"
	"#include <stddef.h>\n"
	"#include <stdio.h>\n"
	"#define P(name, v) printf(\"%s %zu\\n\", name, (size_t)(v))\n"
	"int main(void) {\n"
	"P(\"version\", PY_VERSION_HEX >> 16);\n"
	"#if PY_VERSION_HEX >= 0x030c0000\n"
	"P(\"rt_tss_key\", offsetof(_PyRuntimeState, autoTSSkey));\n"
	"#else\n"
	"P(\"rt_tss_key\", offsetof(_PyRuntimeState, gilstate.autoTSSkey));\n"
	"#endif\n"
	"P(\"tss_key\", offsetof(Py_tss_t, _key));\n"
	"P(\"ts_thread_id\", offsetof(PyThreadState, thread_id));\n"
	"#if PY_VERSION_HEX >= 0x030d0000\n"
	"P(\"no_cframe\", 1);\n"
	"P(\"ts_cframe\", offsetof(PyThreadState, current_frame));\n"
	"P(\"cframe_frame\", 0);\n"
	"#else\n"
	"P(\"no_cframe\", 0);\n"
	"P(\"ts_cframe\", offsetof(PyThreadState, cframe));\n"
	"P(\"cframe_frame\", offsetof(_PyCFrame, current_frame));\n"
	"#endif\n"
	"P(\"ts_chunk\", offsetof(PyThreadState, datastack_chunk));\n"
	"P(\"chunk_previous\", offsetof(_PyStackChunk, previous));\n"
	"P(\"chunk_size\", offsetof(_PyStackChunk, size));\n"
	"P(\"chunk_data\", offsetof(_PyStackChunk, data));\n"
	"#if PY_VERSION_HEX >= 0x030d0000\n"
	"P(\"fr_code\", offsetof(_PyInterpreterFrame, f_executable));\n"
	"P(\"fr_instr\", offsetof(_PyInterpreterFrame, instr_ptr));\n"
	"#else\n"
	"P(\"fr_code\", offsetof(_PyInterpreterFrame, f_code));\n"
	"P(\"fr_instr\", offsetof(_PyInterpreterFrame, prev_instr));\n"
	"#endif\n"
	"P(\"fr_previous\", offsetof(_PyInterpreterFrame, previous));\n"
	"#if PY_VERSION_HEX >= 0x030c0000\n"
	"P(\"shim_entry\", 1);\n"
	"P(\"fr_entry\", offsetof(_PyInterpreterFrame, owner));\n"
	"P(\"fr_entry_size\", sizeof(((_PyInterpreterFrame *)0)->owner));\n"
	"P(\"fr_end\", offsetof(_PyInterpreterFrame, owner) + 1);\n"
	"P(\"owner_cstack\", FRAME_OWNED_BY_CSTACK);\n"
	"#else\n"
	"P(\"shim_entry\", 0);\n"
	"P(\"fr_entry\", offsetof(_PyInterpreterFrame, is_entry));\n"
	"P(\"fr_entry_size\", sizeof(((_PyInterpreterFrame *)0)->is_entry));\n"
	"P(\"fr_end\", offsetof(_PyInterpreterFrame, is_entry) + 1);\n"
	"P(\"owner_cstack\", 0);\n"
	"#endif\n"
	"P(\"co_type\", offsetof(PyObject, ob_type));\n"
	"P(\"co_size\", offsetof(PyVarObject, ob_size));\n"
	"P(\"co_firstlineno\", offsetof(PyCodeObject, co_firstlineno));\n"
	"P(\"co_filename\", offsetof(PyCodeObject, co_filename));\n"
	"P(\"co_qualname\", offsetof(PyCodeObject, co_qualname));\n"
	"P(\"co_linetable\", offsetof(PyCodeObject, co_linetable));\n"
	"P(\"co_code\", offsetof(PyCodeObject, co_code_adaptive));\n"
	"P(\"str_length\", offsetof(PyASCIIObject, length));\n"
	"P(\"str_state\", offsetof(PyASCIIObject, state));\n"
	"P(\"str_ascii_data\", sizeof(PyASCIIObject));\n"
	"P(\"str_utf8_length\", offsetof(PyCompactUnicodeObject, utf8_length));\n"
	"P(\"str_utf8\", offsetof(PyCompactUnicodeObject, utf8));\n"
	"P(\"str_compact_data\", sizeof(PyCompactUnicodeObject));\n"
	"P(\"bytes_size\", offsetof(PyVarObject, ob_size));\n"
	"P(\"bytes_data\", offsetof(PyBytesObject, ob_sval));\n"
	/* python.c reads the state bits where 3.11 has them */
	"{ PyASCIIObject o; unsigned w;\n"
	"  memset(&o, 0, sizeof o); o.state.kind = 7; memcpy(&w, &o.state, 4);\n"
	"  P(\"state_kind\", w);\n"
	"  memset(&o, 0, sizeof o); o.state.compact = 1; o.state.ascii = 1;\n"
	"  memcpy(&w, &o.state, 4); P(\"state_compact_ascii\", w); }\n"
	"return 0; }\n";

/* Builds `src` in a temporary directory with `flags` and runs it; calls
 * line() for each "name value" it prints; the count of lines. */
static unsigned run_probe(const char *src, const char *flags,
			  void (*line)(const struct python_layout *, const char *, unsigned long),
			  const struct python_layout *L)
{
	char dir[] = "/tmp/mt-pylayout-XXXXXX", path[128], cmd[2048], name[64];
	unsigned long v;
	unsigned seen = 0;
	cr_assert_not_null(mkdtemp(dir));
	snprintf(path, sizeof path, "%s/probe.c", dir);
	FILE *f = fopen(path, "w");
	cr_assert_not_null(f);
	fputs(src, f);
	fclose(f);
	snprintf(cmd, sizeof cmd, "cc -o %s/probe %s %s 2>&1 && %s/probe", dir, path, flags, dir);
	FILE *p = popen(cmd, "r");
	cr_assert_not_null(p);
	while (fscanf(p, "%63s %lu", name, &v) == 2) {
		line(L, name, v);
		seen++;
	}
	int st = pclose(p);
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
	(void)!system(cmd);
	cr_assert_eq(st, 0, "the probe did not build or run (%s)", flags);
	return seen;
}

static void header_line(const struct python_layout *L, const char *name, unsigned long v)
{
	unsigned long want = 0;
	int skip = 0;
#define F(field)                          \
	else if (strcmp(name, #field) == 0) \
		want = L->field
	if (strcmp(name, "tss_key") == 0) {
		cr_expect_eq(v, 4, "Py_tss_t's key follows its int flag");
		skip = 1;
	} else if (strcmp(name, "fr_entry_size") == 0) {
		cr_expect_eq(v, 1, "is_entry / owner is one byte");
		skip = 1;
	} else if (strcmp(name, "fr_end") == 0) {
		cr_expect_geq(L->fr_bytes, v, "a frame's read covers is_entry / owner");
		skip = 1;
	} else if (strcmp(name, "no_cframe") == 0) {
		want = !!(L->flags & PYTHON_NO_CFRAME);
	} else if (strcmp(name, "shim_entry") == 0) {
		want = !!(L->flags & PYTHON_SHIM_ENTRY);
	} else if (strcmp(name, "state_kind") == 0) {
		want = 7u << 2;
	} else if (strcmp(name, "state_compact_ascii") == 0) {
		want = 3u << 5;
	}
	F(version); F(rt_tss_key); F(ts_thread_id); F(ts_cframe); F(ts_chunk);
	F(chunk_previous); F(chunk_size); F(chunk_data); F(cframe_frame); F(fr_code);
	F(fr_previous); F(fr_instr); F(fr_entry); F(owner_cstack); F(co_type); F(co_size);
	F(co_firstlineno); F(co_filename); F(co_qualname); F(co_linetable); F(co_code);
	F(str_length); F(str_state); F(str_ascii_data); F(str_utf8_length); F(str_utf8);
	F(str_compact_data);
	F(bytes_size); F(bytes_data);
	else
		cr_assert_fail("unknown field %s", name);
#undef F
	if (!skip)
		cr_expect_eq(want, v, "3.%u %s: the table says %lu, the headers %lu",
			     L->version & 255, name, want, v);
	/* the walk's buffers hold what it reads */
	cr_expect_leq(L->co_code, 256, "python.c's PYTHON_CODE_READ");
	cr_expect_leq(L->fr_bytes, 128, "python.c's PYTHON_FRAME_READ");
}

static void layout_is_the_headers(unsigned minor)
{
	char interp[PATH_MAX], inc[PATH_MAX], flags[PATH_MAX + 8], frame_h[PATH_MAX + 32];
	const struct python_layout *L = python_layout_find(0x03000000u | minor << 16 | 0xf0);
	cr_assert_not_null(L, "3.%u has a layout", minor);
	if (py_interp(minor, interp, sizeof interp) != 0)
		snprintf(interp, sizeof interp, "/usr/bin/python3.%u", minor);
	py_include(minor, interp, inc, sizeof inc);
	snprintf(frame_h, sizeof frame_h, "%s/internal/pycore_frame.h", inc);
	if (access(frame_h, R_OK) != 0)
		cr_skip_test("%s is not there: no CPython 3.%u headers (3.11: python3.11-dev; "
			     "others: MT_PYTHON3%u or a pyenv build)",
			     frame_h, minor, minor);
	snprintf(flags, sizeof flags, "-I%s", inc);
	unsigned seen = run_probe(probe_src, flags, header_line, L);
	cr_assert_eq(seen, 36, "every field printed (%u)", seen);
}

Test(shim_python, layout_311_is_the_headers, .timeout = 60)
{
	layout_is_the_headers(11);
}

Test(shim_python, layout_312_is_the_headers, .timeout = 60)
{
	layout_is_the_headers(12);
}

Test(shim_python, layout_313_is_the_headers, .timeout = 60)
{
	layout_is_the_headers(13);
}

/* 3.13's libpython says where its fields are in _PyRuntime.debug_offsets
 * (for debuggers and profilers): the figures compiled into the library,
 * read by a program linked with it (no interpreter started). */
#define PY_STR2(x) #x
#define PY_STR(x) PY_STR2(x)
static const char debug_src[] =
	"#define Py_BUILD_CORE 1\n"
	"#include <Python.h>\n"
	"#include <internal/pycore_runtime.h>\n"
	"#include <stdio.h>\n"
	"#define P(name, v) printf(\"%s %llu\\n\", name, (unsigned long long)(v))\n"
	"int main(void) {\n"
	"const _Py_DebugOffsets *d = &_PyRuntime.debug_offsets;\n"
	"if (memcmp(d->cookie, \"xdebugpy\", 8) != 0) return 2;\n"
	"P(\"version\", d->version >> 16);\n"
	"P(\"free_threaded\", d->free_threaded);\n"
	"P(\"ts_cframe\", d->thread_state.current_frame);\n"
	"P(\"ts_thread_id\", d->thread_state.thread_id);\n"
	"P(\"ts_chunk\", d->thread_state.datastack_chunk);\n"
	"P(\"fr_previous\", d->interpreter_frame.previous);\n"
	"P(\"fr_code\", d->interpreter_frame.executable);\n"
	"P(\"fr_instr\", d->interpreter_frame.instr_ptr);\n"
	"P(\"fr_entry\", d->interpreter_frame.owner);\n"
	"P(\"co_filename\", d->code_object.filename);\n"
	"P(\"co_qualname\", d->code_object.qualname);\n"
	"P(\"co_linetable\", d->code_object.linetable);\n"
	"P(\"co_firstlineno\", d->code_object.firstlineno);\n"
	"P(\"co_code\", d->code_object.co_code_adaptive);\n"
	"P(\"co_type\", d->pyobject.ob_type);\n"
	"P(\"bytes_size\", d->bytes_object.ob_size);\n"
	"P(\"bytes_data\", d->bytes_object.ob_sval);\n"
	"P(\"str_state\", d->unicode_object.state);\n"
	"P(\"str_length\", d->unicode_object.length);\n"
	"P(\"str_ascii_data\", d->unicode_object.asciiobject_size);\n"
	"for (unsigned i = 0; i < " PY_STR(PYTHON_DEBUG_BYTES) "; i++)\n"
	"  printf(\"byte %u\\n\", ((const unsigned char *)d)[i]);\n"
	"return 0; }\n";

static uint8_t debug_bytes[PYTHON_DEBUG_BYTES];
static unsigned debug_n;

static void debug_line(const struct python_layout *L, const char *name, unsigned long v)
{
	unsigned long want;
	if (strcmp(name, "byte") == 0) {
		if (debug_n < sizeof debug_bytes)
			debug_bytes[debug_n++] = (uint8_t)v;
		return;
	}
	if (strcmp(name, "free_threaded") == 0) {
		cr_expect_eq(v, 0, "a free-threaded build has another layout");
		return;
	}
#define F(field) strcmp(name, #field) == 0 ? L->field:
	want = F(version) F(ts_cframe) F(ts_thread_id) F(ts_chunk) F(fr_previous) F(fr_code)
		F(fr_instr) F(fr_entry) F(co_filename) F(co_qualname) F(co_linetable)
		F(co_firstlineno) F(co_code) F(co_type) F(bytes_size) F(bytes_data) F(str_state)
		F(str_length) F(str_ascii_data) ~0ul;
#undef F
	cr_expect_eq(want, v, "3.13 %s: the table says %lu, _Py_DebugOffsets %lu", name, want, v);
}

Test(shim_python, layout_313_is_its_debug_offsets, .timeout = 60)
{
	char interp[PATH_MAX], inc[PATH_MAX], lib[PATH_MAX], flags[3 * PATH_MAX + 64];
	char so[PATH_MAX + 32];
	const struct python_layout *L = python_layout_find(0x030d00f0);
	cr_assert_not_null(L);
	py_interp_or_skip(13);
	cr_assert_eq(py_interp(13, interp, sizeof interp), 0);
	py_include(13, interp, inc, sizeof inc);
	snprintf(lib, sizeof lib, "%s", inc);
	char *cut = strstr(lib, "/include/python3.13");
	cr_assert_not_null(cut);
	strcpy(cut, "/lib");
	snprintf(so, sizeof so, "%s/libpython3.13.so", lib);
	if (access(so, R_OK) != 0)
		cr_skip_test("%s is not there: this 3.13 is linked statically", so);
	snprintf(flags, sizeof flags, "-I%s -L%s -Wl,-rpath,%s -lpython3.13", inc, lib, lib);
	unsigned seen = run_probe(debug_src, flags, debug_line, L);
	cr_assert_eq(seen, 20 + PYTHON_DEBUG_BYTES, "every offset printed (%u)", seen);
	/* the probe's own check (python_probe) on the library's real bytes,
	 * and each thing it refuses */
	cr_assert_eq(debug_n, PYTHON_DEBUG_BYTES);
	cr_assert(python_debug_offsets_agree(L, debug_bytes), "3.13's own offsets agree");
	cr_assert_not(python_debug_offsets_agree(python_layout_find(0x030c01f0), debug_bytes),
		      "not 3.12's layout");
	debug_bytes[16] = 1;
	cr_assert_not(python_debug_offsets_agree(L, debug_bytes), "a free-threaded build");
	debug_bytes[16] = 0;
	debug_bytes[264] ^= 1; /* interpreter_frame.owner */
	cr_assert_not(python_debug_offsets_agree(L, debug_bytes), "another frame layout");
	debug_bytes[264] ^= 1;
	debug_bytes[0] = 'X';
	cr_assert_not(python_debug_offsets_agree(L, debug_bytes), "no cookie");
}

/* Versions without an entry have no layout: their images fall back to
 * native frames (the end-to-end side: test_memsup_pyframes.c). */
Test(shim_python, other_versions_have_no_layout)
{
	cr_assert_null(python_layout_find(0x030a0cf0), "3.10");
	cr_assert_null(python_layout_find(0x030e00f0), "3.14");
	cr_assert_null(python_layout_find(0x036300f0), "3.99");
	cr_assert_not_null(python_layout_find(0x030b00a1), "3.11.0a1 is 3.11");
	cr_assert_not_null(python_layout_find(0x030c01f0), "3.12.1");
	cr_assert_not_null(python_layout_find(0x030d00f0), "3.13.0");
}
