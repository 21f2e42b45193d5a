/* test_shim_python.c: the shim's table of CPython layouts
 * (preload/python.h) against the interpreter's own headers: each offset
 * the walk reads is what offsetof gives with the installed
 * /usr/include/python3.11 (Debian's python3.11-dev; the test skips, saying
 * so, without them or a C compiler).  A wrong offset would make the walk
 * read the wrong field, end early, or name the wrong function. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "python.h"

#define PY311_INCLUDE "/usr/include/python3.11"

/* Prints "field value" for each field of struct python_layout, from the
 * headers (internal ones with Py_BUILD_CORE). */
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
	"P(\"rt_tss_key\", offsetof(_PyRuntimeState, gilstate.autoTSSkey));\n"
	"P(\"tss_key\", offsetof(Py_tss_t, _key));\n"
	"P(\"ts_thread_id\", offsetof(PyThreadState, thread_id));\n"
	"P(\"ts_cframe\", offsetof(PyThreadState, cframe));\n"
	"P(\"ts_chunk\", offsetof(PyThreadState, datastack_chunk));\n"
	"P(\"chunk_previous\", offsetof(_PyStackChunk, previous));\n"
	"P(\"chunk_size\", offsetof(_PyStackChunk, size));\n"
	"P(\"chunk_data\", offsetof(_PyStackChunk, data));\n"
	"P(\"cframe_frame\", offsetof(_PyCFrame, current_frame));\n"
	"P(\"fr_code\", offsetof(_PyInterpreterFrame, f_code));\n"
	"P(\"fr_previous\", offsetof(_PyInterpreterFrame, previous));\n"
	"P(\"fr_instr\", offsetof(_PyInterpreterFrame, prev_instr));\n"
	"P(\"fr_entry\", offsetof(_PyInterpreterFrame, is_entry));\n"
	"P(\"fr_entry_size\", sizeof(((_PyInterpreterFrame *)0)->is_entry));\n"
	"P(\"fr_end\", offsetof(_PyInterpreterFrame, is_entry) + 1);\n"
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
	"return 0; }\n";

Test(shim_python, layout_311_is_the_headers, .timeout = 60)
{
	char dir[] = "/tmp/mt-pylayout-XXXXXX", path[128], cmd[512], name[64];
	unsigned long v;
	unsigned seen = 0;
	if (access(PY311_INCLUDE "/internal/pycore_frame.h", R_OK) != 0)
		cr_skip_test("%s (python3.11-dev) is not installed", PY311_INCLUDE);
	cr_assert_not_null(mkdtemp(dir));
	snprintf(path, sizeof path, "%s/probe.c", dir);
	FILE *f = fopen(path, "w");
	cr_assert_not_null(f);
	fputs(probe_src, f);
	fclose(f);
	snprintf(cmd, sizeof cmd, "cc -I" PY311_INCLUDE " -o %s/probe %s 2>&1 && %s/probe", dir,
		 path, dir);
	FILE *p = popen(cmd, "r");
	cr_assert_not_null(p);
	const struct python_layout *L = python_layout_find(0x030b07f0);
	cr_assert_not_null(L, "3.11 has a layout");
	while (fscanf(p, "%63s %lu", name, &v) == 2) {
		unsigned long want = 0;
		int skip = 0;
#define F(field)                          \
	else if (strcmp(name, #field) == 0) \
		want = L->field
		if (strcmp(name, "tss_key") == 0) {
			cr_expect_eq(v, 4, "Py_tss_t's key follows its int flag");
			skip = 1;
		} else if (strcmp(name, "fr_entry_size") == 0) {
			cr_expect_eq(v, 1, "is_entry is one byte");
			skip = 1;
		} else if (strcmp(name, "fr_end") == 0) {
			cr_expect_geq(L->fr_bytes, v, "a frame's read covers is_entry");
			skip = 1;
		}
		F(version); F(rt_tss_key); F(ts_thread_id); F(ts_cframe); F(ts_chunk);
		F(chunk_previous); F(chunk_size); F(chunk_data); F(cframe_frame); F(fr_code);
		F(fr_previous); F(fr_instr); F(fr_entry); F(co_type); F(co_size);
		F(co_firstlineno); F(co_filename); F(co_qualname); F(co_linetable); F(co_code);
		F(str_length); F(str_state); F(str_ascii_data); F(str_utf8_length); F(str_utf8);
		F(str_compact_data);
		F(bytes_size); F(bytes_data);
		else
			cr_assert_fail("unknown field %s", name);
#undef F
		if (!skip)
			cr_expect_eq(want, v, "%s: the table says %lu, the headers %lu", name, want, v);
		seen++;
	}
	int st = pclose(p);
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
	(void)!system(cmd);
	cr_assert_eq(st, 0, "the probe did not build or run");
	cr_assert_eq(seen, 31, "every field printed (%u)", seen);
}

/* Versions without an entry have no layout: their images fall back to
 * native frames (the end-to-end side: test_memsup_pyframes.c). */
Test(shim_python, other_versions_have_no_layout)
{
	cr_assert_null(python_layout_find(0x030a0cf0), "3.10");
	cr_assert_null(python_layout_find(0x036300f0), "3.99");
	cr_assert_not_null(python_layout_find(0x030b00a1), "3.11.0a1 is 3.11");
}
