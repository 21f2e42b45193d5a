/* test_jsonw.c: the shared JSON writer -- layout, numbers, and above all
 * string escaping (control characters, invalid UTF-8 kept recoverable). */
#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "jsonw.h"

/* Everything written to a memfd, read back as a NUL-terminated string. */
static char *slurp(int fd)
{
	static char out[1 << 20];
	off_t end = lseek(fd, 0, SEEK_END);
	cr_assert(end >= 0 && (size_t)end < sizeof out);
	cr_assert_eq(pread(fd, out, (size_t)end, 0), end);
	out[end] = '\0';
	return out;
}

static int new_sink(void)
{
	int fd = memfd_create("jsonw", 0);
	cr_assert(fd >= 0, "memfd_create: %s", strerror(errno));
	return fd;
}

Test(jsonw, pretty_nested_layout)
{
	struct jsonw w;
	int fd = new_sink();

	jsonw_init(&w, fd, 2);
	jsonw_object_begin(&w);
	jsonw_key(&w, "a");
	jsonw_uint(&w, 1);
	jsonw_key(&w, "list");
	jsonw_array_begin(&w);
	jsonw_string(&w, "x");
	jsonw_null(&w);
	jsonw_array_end(&w);
	jsonw_key(&w, "empty");
	jsonw_object_begin(&w);
	jsonw_object_end(&w);
	jsonw_object_end(&w);
	cr_assert_eq(jsonw_finish_line(&w), 0);
	cr_assert_str_eq(slurp(fd),
			 "{\n  \"a\": 1,\n  \"list\": [\n    \"x\",\n    null\n  ],\n"
			 "  \"empty\": {}\n}\n");
	close(fd);
}

Test(jsonw, compact_line)
{
	struct jsonw w;
	int fd = new_sink();

	jsonw_init(&w, fd, 0);
	jsonw_array_begin(&w);
	jsonw_double(&w, 0.0125, 6);
	jsonw_uint(&w, 4456448);
	jsonw_array_end(&w);
	cr_assert_eq(jsonw_finish_line(&w), 0);
	cr_assert_str_eq(slurp(fd), "[0.0125,4456448]\n");
	close(fd);
}

/* jsonw_lines(1): compact, one item of the outer array per line (the
 * layout of processes.json), nested containers still on the item's line,
 * and the result still one JSON document. */
Test(jsonw, one_item_per_line)
{
	struct jsonw w;
	int fd = new_sink();

	jsonw_init(&w, fd, 0);
	jsonw_lines(&w, 1);
	jsonw_array_begin(&w);
	for (unsigned i = 1; i <= 2; i++) {
		jsonw_object_begin(&w);
		jsonw_key(&w, "pid");
		jsonw_uint(&w, i);
		jsonw_key(&w, "argv");
		jsonw_array_begin(&w);
		jsonw_string(&w, "a");
		jsonw_array_end(&w);
		jsonw_object_end(&w);
	}
	jsonw_array_end(&w);
	cr_assert_eq(jsonw_finish_line(&w), 0);
	cr_assert_str_eq(slurp(fd),
			 "[\n{\"pid\":1,\"argv\":[\"a\"]},\n"
			 "{\"pid\":2,\"argv\":[\"a\"]}\n]\n");
	close(fd);
}

/* Criterion runs each parameter in a fresh process image (other addresses):
 * parameters must hold their text, not point to it. */
struct num_case { double v; unsigned decimals; char want[32]; };

ParameterizedTestParameters(jsonw, doubles)
{
	static struct num_case cases[] = {
		{ 2.0, 3, "2.0" },     { 0.5, 6, "0.5" },       { 140.0, 0, "140.0" },
		{ -1.25, 2, "-1.25" }, { 1e-9, 6, "0.0" },      { -1e-9, 6, "0.0" },
		{ 123.456789, 3, "123.457" }, { 1e300, 2, "1.0000000000000001e+300" },
	};
	return cr_make_param_array(struct num_case, cases, sizeof cases / sizeof cases[0]);
}

ParameterizedTest(struct num_case *c, jsonw, doubles)
{
	struct jsonw w;
	int fd = new_sink();

	jsonw_init(&w, fd, 0);
	jsonw_double(&w, c->v, c->decimals);
	cr_assert_eq(jsonw_finish(&w), 0);
	cr_assert_str_eq(slurp(fd), c->want, "%g with %u decimals", c->v, c->decimals);
	close(fd);
}

Test(jsonw, non_finite_doubles_are_null)
{
	struct jsonw w;
	int fd = new_sink();

	jsonw_init(&w, fd, 0);
	jsonw_array_begin(&w);
	jsonw_double(&w, 0.0 / 0.0, 3);
	jsonw_double(&w, 1.0 / 0.0, 3);
	jsonw_double(&w, -1.0 / 0.0, 3);
	jsonw_array_end(&w);
	cr_assert_eq(jsonw_finish(&w), 0);
	cr_assert_str_eq(slurp(fd), "[null,null,null]");
	close(fd);
}

Test(jsonw, integer_extremes)
{
	struct jsonw w;
	int fd = new_sink();

	jsonw_init(&w, fd, 0);
	jsonw_array_begin(&w);
	jsonw_int(&w, INT64_MIN);
	jsonw_int(&w, -1);
	jsonw_int(&w, 0);
	jsonw_uint(&w, UINT64_MAX);
	jsonw_bool(&w, 1);
	jsonw_bool(&w, 0);
	jsonw_array_end(&w);
	cr_assert_eq(jsonw_finish(&w), 0);
	cr_assert_str_eq(slurp(fd),
			 "[-9223372036854775808,-1,0,18446744073709551615,true,false]");
	close(fd);
}

Test(jsonw, escapes_controls_quotes_and_backslash)
{
	struct jsonw w;
	int fd = new_sink();
	const char in[] = "a\"b\\c\n\t\r\b\f\x01\x1f\x7f";

	jsonw_init(&w, fd, 0);
	jsonw_string_n(&w, in, sizeof in - 1);
	cr_assert_eq(jsonw_finish(&w), 0);
	cr_assert_str_eq(slurp(fd), "\"a\\\"b\\\\c\\n\\t\\r\\b\\f\\u0001\\u001f\\u007f\"");
	close(fd);
}

Test(jsonw, embedded_nul_is_escaped_not_cut)
{
	struct jsonw w;
	int fd = new_sink();

	jsonw_init(&w, fd, 0);
	jsonw_string_n(&w, "a\0b", 3);
	cr_assert_eq(jsonw_finish(&w), 0);
	cr_assert_str_eq(slurp(fd), "\"a\\u0000b\"");
	close(fd);
}

Test(jsonw, utf8_valid_passes_invalid_becomes_surrogate_escape)
{
	struct jsonw w;
	int fd = new_sink();
	/* é (2 bytes), € (3), 😀 (4); then a lone continuation byte, an
	 * overlong '/', an encoded surrogate, a code point past U+10FFFF, and a
	 * sequence cut short at the end. */
	const char in[] = "\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80"
			  "\x80" "\xc0\xaf" "\xed\xa0\x80" "\xf4\x90\x80\x80" "\xe2\x82";

	jsonw_init(&w, fd, 0);
	jsonw_string_n(&w, in, sizeof in - 1);
	cr_assert_eq(jsonw_finish(&w), 0);
	cr_assert_str_eq(slurp(fd),
			 "\"\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80"
			 "\\udc80" "\\udcc0\\udcaf" "\\udced\\udca0\\udc80"
			 "\\udcf4\\udc90\\udc80\\udc80" "\\udce2\\udc82\"");
	close(fd);
}

/* The promise in jsonw.h: every byte string survives a round trip through
 * Python's json + surrogateescape.  Runs python3 when it is there. */
Test(jsonw, every_byte_round_trips_through_python)
{
	char in[256 + 64];
	size_t n = 0;
	for (int b = 0; b < 256; b++)
		in[n++] = (char)b;
	memcpy(in + n, "\xc3\xa9\xf0\x9f\x98\x80\xed\xbf\xbf", 9);
	n += 9;

	char path[] = "/tmp/jsonw-rt-XXXXXX";
	int fd = mkstemp(path);
	cr_assert(fd >= 0);
	struct jsonw w;
	jsonw_init(&w, fd, 0);
	jsonw_string_n(&w, in, n);
	cr_assert_eq(jsonw_finish(&w), 0);
	close(fd);

	char cmd[512];
	snprintf(cmd, sizeof cmd,
		 "python3 -c 'import json,os,sys; "
		 "sys.stdout.buffer.write(os.fsencode(json.load(open(\"%s\"))))' "
		 "2>/dev/null", path);
	FILE *p = popen(cmd, "r");
	cr_assert_not_null(p);
	char out[sizeof in];
	size_t got = fread(out, 1, sizeof out, p);
	int status = pclose(p);
	unlink(path);
	if (WIFEXITED(status) && WEXITSTATUS(status) == 127)
		cr_skip_test("python3 not available");
	cr_assert_eq(status, 0, "python3 could not parse the writer's output");
	cr_assert_eq(got, n);
	cr_assert_arr_eq(out, in, n);
}

Test(jsonw, output_larger_than_buffer_is_complete)
{
	struct jsonw w;
	int fd = new_sink();
	char chunk[1000];
	memset(chunk, 'q', sizeof chunk);

	jsonw_init(&w, fd, 0);
	jsonw_array_begin(&w);
	for (int i = 0; i < 50; i++)
		jsonw_string_n(&w, chunk, sizeof chunk);
	jsonw_array_end(&w);
	cr_assert_eq(jsonw_finish(&w), 0);
	const char *out = slurp(fd);
	cr_assert_eq(strlen(out), 2 + 50 * 1002 + 49);
	close(fd);
}

Test(jsonw, write_error_is_sticky_and_reported)
{
	struct jsonw w;
	int fds[2];
	cr_assert_eq(pipe(fds), 0);
	close(fds[0]);
	signal(SIGPIPE, SIG_IGN);

	jsonw_init(&w, fds[1], 0);
	jsonw_string(&w, "lost");
	cr_assert_eq(jsonw_finish(&w), -EPIPE);
	jsonw_string(&w, "still lost");
	cr_assert_eq(jsonw_finish(&w), -EPIPE);
	close(fds[1]);
}

Test(jsonw, unbalanced_document_is_an_error)
{
	struct jsonw w;
	int fd = new_sink();

	jsonw_init(&w, fd, 0);
	jsonw_object_begin(&w);
	cr_assert_eq(jsonw_finish(&w), -EINVAL);
	jsonw_init(&w, fd, 0);
	jsonw_array_end(&w);
	cr_assert_eq(jsonw_finish(&w), -EINVAL);
	close(fd);
}
