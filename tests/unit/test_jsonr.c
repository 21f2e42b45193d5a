/* test_jsonr.c: the strict JSON reader -- what common/jsonw.c writes comes
 * back exactly (every byte value, \udcXX, extreme numbers), and everything
 * RFC 8259 forbids is refused with an error that names line and column. */
#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "evidence/jsonr.h"
#include "jsonw.h"
#include "test_tmp.h"

/* Whatever was written to fd, as a malloc'd NUL-terminated buffer. */
static char *slurp_fd(int fd, size_t *len)
{
	off_t end = lseek(fd, 0, SEEK_END);
	cr_assert(end >= 0);
	char *out = malloc((size_t)end + 1);
	cr_assert_not_null(out);
	cr_assert_eq(pread(fd, out, (size_t)end, 0), end);
	out[end] = '\0';
	*len = (size_t)end;
	return out;
}

static int new_sink(void)
{
	int fd = memfd_create("jsonr", 0);
	cr_assert(fd >= 0, "memfd_create: %s", strerror(errno));
	return fd;
}

static struct jsonr_value *parse_ok(const char *text)
{
	struct jsonr_value *v = NULL;
	char err[200];
	int rc = jsonr_parse(text, strlen(text), &v, err, sizeof err);
	cr_assert_eq(rc, 0, "parse of '%s' failed: %s", text, err);
	cr_assert_not_null(v);
	return v;
}

Test(jsonr, scalars_and_containers)
{
	struct jsonr_value *v = parse_ok(
		" {\"a\": 1, \"b\": [true, false, null, \"x\"], \"c\": {}, \"d\": [],\n"
		"  \"e\": -2.5e3, \"f\": \"\"}\r\n\t");
	cr_assert_eq(v->type, JSONR_OBJECT);
	cr_assert_eq(v->n, 6);
	cr_assert_eq(jsonr_num(jsonr_get(v, "a"), -1), 1.0);
	const struct jsonr_value *b = jsonr_get(v, "b");
	cr_assert_eq(b->type, JSONR_ARRAY);
	cr_assert_null(b->keys);
	cr_assert_eq(b->n, 4);
	cr_assert_eq(jsonr_at(b, 0)->type, JSONR_BOOL);
	cr_assert_eq(jsonr_at(b, 0)->boolean, 1);
	cr_assert_eq(jsonr_at(b, 1)->boolean, 0);
	cr_assert_eq(jsonr_at(b, 2)->type, JSONR_NULL);
	cr_assert_str_eq(jsonr_str(jsonr_at(b, 3), NULL), "x");
	cr_assert_null(jsonr_at(b, 4));
	cr_assert_eq(jsonr_get(v, "c")->type, JSONR_OBJECT);
	cr_assert_eq(jsonr_get(v, "c")->n, 0);
	cr_assert_null(jsonr_get(jsonr_get(v, "c"), "x"));
	cr_assert_eq(jsonr_get(v, "d")->n, 0);
	cr_assert_eq(jsonr_num(jsonr_get(v, "e"), 0), -2500.0);
	cr_assert_str_eq(jsonr_str(jsonr_get(v, "f"), NULL), "");
	cr_assert_eq(jsonr_get(v, "f")->len, 0);
	/* Defaults when absent or of another type. */
	cr_assert_null(jsonr_get(v, "missing"));
	cr_assert_null(jsonr_get(b, "a"));
	cr_assert_eq(jsonr_num(jsonr_get(v, "f"), 7.0), 7.0);
	cr_assert_eq(jsonr_num(NULL, 7.0), 7.0);
	cr_assert_str_eq(jsonr_str(jsonr_get(v, "a"), "dflt"), "dflt");
	cr_assert_str_eq(jsonr_str(NULL, "dflt"), "dflt");
	jsonr_free(v);
	jsonr_free(NULL);
}

/* Every byte value 0..255, in one string and each alone, as jsonw writes
 * it: the reader gives the same bytes back. */
Test(jsonr, every_byte_round_trips_through_jsonw)
{
	unsigned char all[256];
	for (int i = 0; i < 256; i++)
		all[i] = (unsigned char)i;

	for (int single = -1; single < 256; single++) {
		const char *in = single < 0 ? (const char *)all : (const char *)all + single;
		size_t n = single < 0 ? sizeof all : 1;
		int fd = new_sink();
		struct jsonw w;
		jsonw_init(&w, fd, 0);
		jsonw_array_begin(&w);
		jsonw_string_n(&w, in, n);
		jsonw_array_end(&w);
		cr_assert_eq(jsonw_finish(&w), 0);
		size_t len;
		char *text = slurp_fd(fd, &len);
		close(fd);

		struct jsonr_value *v = NULL;
		char err[200];
		cr_assert_eq(jsonr_parse(text, len, &v, err, sizeof err), 0, "%s: %s", text, err);
		const struct jsonr_value *s = jsonr_at(v, 0);
		cr_assert_eq(s->type, JSONR_STRING);
		cr_assert_eq(s->len, n, "byte %d: len %zu", single, s->len);
		cr_assert(memcmp(s->string, in, n) == 0, "byte %d differs after %s", single, text);
		cr_assert_eq(s->string[n], '\0');
		jsonr_free(v);
		free(text);
	}
}

/* Valid multi-byte UTF-8 mixed with invalid bytes next to it: the split
 * jsonw makes (raw run vs \udcXX) is undone exactly. */
Test(jsonr, mixed_utf8_and_invalid_bytes_round_trip)
{
	static const char in[] = "h\xc3\xa9 \xe2\x82\xac\xf0\x9f\x98\x80 \xc3 \xed\xa0\x80 \xf8\xff\xc0\xaf";
	int fd = new_sink();
	struct jsonw w;
	jsonw_init(&w, fd, 2);
	jsonw_object_begin(&w);
	jsonw_key(&w, "k\xe9y");
	jsonw_string_n(&w, in, sizeof in - 1);
	jsonw_object_end(&w);
	cr_assert_eq(jsonw_finish_line(&w), 0);
	size_t len;
	char *text = slurp_fd(fd, &len);
	close(fd);
	cr_assert(strstr(text, "\\udcc3") != NULL, "expected a surrogate escape in %s", text);

	struct jsonr_value *v = NULL;
	cr_assert_eq(jsonr_parse(text, len, &v, NULL, 0), 0);
	cr_assert_str_eq(v->keys[0], "k\xe9y");
	const struct jsonr_value *s = jsonr_get(v, "k\xe9y");
	cr_assert_not_null(s);
	cr_assert_eq(s->len, sizeof in - 1);
	cr_assert(memcmp(s->string, in, sizeof in - 1) == 0);
	jsonr_free(v);
	free(text);
}

Test(jsonr, escapes_and_surrogate_pairs)
{
	struct jsonr_value *v = parse_ok(
		"[\"\\\"\\\\\\/\\b\\f\\n\\r\\t\", \"\\u0041\\u00e9\\u20AC\\ud83d\\ude00\", \"a\\u0000b\", \"\\udc80\\udcff\"]");
	cr_assert_str_eq(jsonr_at(v, 0)->string, "\"\\/\b\f\n\r\t");
	cr_assert_str_eq(jsonr_at(v, 1)->string, "A\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80");
	cr_assert_eq(jsonr_at(v, 2)->len, 3);
	cr_assert(memcmp(jsonr_at(v, 2)->string, "a\0b", 4) == 0);
	cr_assert_eq(jsonr_at(v, 3)->len, 2);
	cr_assert(memcmp(jsonr_at(v, 3)->string, "\x80\xff", 3) == 0);
	jsonr_free(v);
}

/* Criterion runs each parameter in a fresh process image (other addresses):
 * parameters must hold their text, not point to it. */
struct num_case {
	char text[64];
	double want;
};

ParameterizedTestParameters(jsonr, numbers)
{
	static struct num_case cases[] = {
		{ "0", 0.0 },
		{ "-0", -0.0 },
		{ "-0.0", -0.0 },
		{ "1e-05", 1e-05 },
		{ "1E+2", 100.0 },
		{ "0.5", 0.5 },
		{ "123456789012345678", 123456789012345678.0 },
		{ "1.7976931348623157e308", 1.7976931348623157e308 },
		{ "-1.7976931348623157e+308", -1.7976931348623157e308 },
		{ "4.9406564584124654e-324", 4.9406564584124654e-324 },
		{ "1e-400", 0.0 }, /* underflow reads as zero, not an error */
		{ "0.1000000000000000055511151231257827021181583404541015625", 0.1 },
	};
	return cr_make_param_array(struct num_case, cases, sizeof cases / sizeof cases[0]);
}

ParameterizedTest(struct num_case *c, jsonr, numbers)
{
	struct jsonr_value *v = parse_ok(c->text);
	cr_assert_eq(v->type, JSONR_NUMBER);
	cr_assert(v->number == c->want, "%s read as %.17g", c->text, v->number);
	cr_assert_eq(signbit(v->number) != 0, signbit(c->want) != 0, "%s: sign", c->text);
	jsonr_free(v);
}

/* jsonw's numbers (fixed-point, %.17g beyond 1e45) read back. */
Test(jsonr, jsonw_numbers_round_trip)
{
	static const double vals[] = { 0.0, -0.0, 1e-05, 0.25, -3.5, 1e300, 1.7976931348623157e308,
				       -1.7976931348623157e308, 12345.678 };
	int fd = new_sink();
	struct jsonw w;
	jsonw_init(&w, fd, 0);
	jsonw_array_begin(&w);
	for (size_t i = 0; i < sizeof vals / sizeof vals[0]; i++)
		jsonw_double(&w, vals[i], 17);
	jsonw_int(&w, INT64_MIN);
	jsonw_uint(&w, UINT64_MAX);
	jsonw_double(&w, NAN, 3); /* written as null */
	jsonw_array_end(&w);
	cr_assert_eq(jsonw_finish(&w), 0);
	size_t len;
	char *text = slurp_fd(fd, &len);
	close(fd);
	struct jsonr_value *v = NULL;
	char err[200];
	cr_assert_eq(jsonr_parse(text, len, &v, err, sizeof err), 0, "%s: %s", text, err);
	size_t n = sizeof vals / sizeof vals[0];
	cr_assert_eq(v->n, n + 3);
	for (size_t i = 0; i < n; i++) {
		double got = jsonr_at(v, i)->number, want = vals[i];
		/* %.17f keeps 17 decimals: exact for these except rounding of the tiny one. */
		cr_assert(fabs(got - want) <= fabs(want) * 1e-15, "%zu: %.17g vs %.17g in %s", i, got, want, text);
	}
	cr_assert_eq(jsonr_at(v, n)->number, (double)INT64_MIN);
	cr_assert_eq(jsonr_at(v, n + 1)->number, (double)UINT64_MAX);
	cr_assert_eq(jsonr_at(v, n + 2)->type, JSONR_NULL);
	jsonr_free(v);
	free(text);
}

struct bad_case {
	char text[32];
	size_t len;    /* 0: strlen */
	char err[96];  /* the whole expected message */
};

ParameterizedTestParameters(jsonr, rejected)
{
	static struct bad_case cases[] = {
		{ "", 0, "line 1 col 1: expected a value, got end of input" },
		{ "   \n  ", 0, "line 2 col 3: expected a value, got end of input" },
		{ "{} x", 0, "line 1 col 4: trailing garbage after the value: 'x'" },
		{ "[1] [2]", 0, "line 1 col 5: trailing garbage after the value: '['" },
		{ "[1,\n 2,\n 3", 0, "line 3 col 3: expected ',' or ']', got end of input" },
		{ "{\"a\": \"abc", 0, "line 1 col 7: unterminated string" },
		{ "\"ab\\", 0, "line 1 col 1: unterminated string" },
		{ "[1,]", 0, "line 1 col 4: trailing comma before ']'" },
		{ "{\"a\":1,}", 0, "line 1 col 8: trailing comma before '}'" },
		{ "{\"a\" 1}", 0, "line 1 col 6: expected ':' after a key, got '1'" },
		{ "{1:2}", 0, "line 1 col 2: expected a key string, got '1'" },
		{ "{\"a\":1,\n\"a\":2}", 0, "line 2 col 1: duplicate key \"a\"" },
		{ "01", 0, "line 1 col 1: leading zero in a number" },
		{ "[-01]", 0, "line 1 col 2: leading zero in a number" },
		{ "1.", 0, "line 1 col 3: digit expected after '.'" },
		{ ".5", 0, "line 1 col 1: expected a value, got '.'" },
		{ "1e", 0, "line 1 col 3: digit expected in an exponent" },
		{ "-", 0, "line 1 col 2: digit expected in a number" },
		{ "+1", 0, "line 1 col 1: expected a value, got '+'" },
		{ "NaN", 0, "line 1 col 1: expected a value, got 'N'" },
		{ "[Infinity]", 0, "line 1 col 2: expected a value, got 'I'" },
		{ "-Infinity", 0, "line 1 col 2: digit expected in a number" },
		{ "1e999", 0, "line 1 col 1: number out of range" },
		{ "nul", 0, "line 1 col 1: expected a value, got 'n'" },
		{ "truex", 0, "line 1 col 5: trailing garbage after the value: 'x'" },
		{ "\"\\x\"", 0, "line 1 col 2: bad escape '\\x'" },
		{ "\"\\u12g4\"", 0, "line 1 col 2: bad \\u escape (four hex digits expected)" },
		{ "\"\\u12", 0, "line 1 col 2: bad \\u escape (four hex digits expected)" },
		{ "\"\\ud800\"", 0, "line 1 col 2: high surrogate \\ud800 without a low one" },
		{ "\"\\ud800\\u0041\"", 0, "line 1 col 2: high surrogate \\ud800 without a low one" },
		{ "\"x\\udc41\"", 0, "line 1 col 3: lone surrogate \\udc41" },
		{ "\"\\udfff\"", 0, "line 1 col 2: lone surrogate \\udfff" },
		{ "\"a\tb\"", 0, "line 1 col 3: control character 0x09 in a string (must be escaped)" },
		{ "\"a\nb\"", 0, "line 1 col 3: control character 0x0a in a string (must be escaped)" },
		{ "\"\xff\"", 0, "line 1 col 2: invalid UTF-8 byte 0xff in a string" },
		{ "\"\xc0\xaf\"", 0, "line 1 col 2: invalid UTF-8 byte 0xc0 in a string" },
		{ "\"\xed\xa0\x80\"", 0, "line 1 col 2: invalid UTF-8 byte 0xed in a string" },
		{ "[1]\0", 4, "line 1 col 4: trailing garbage after the value: byte 0x00" },
		{ "\xef\xbb\xbf{}", 0, "line 1 col 1: expected a value, got byte 0xef" },
		{ "// c\n{}", 0, "line 1 col 1: expected a value, got '/'" },
		{ "{\"a\":1 /* c */}", 0, "line 1 col 8: expected ',' or '}', got '/'" },
		{ "[1\n,\n2 3]", 0, "line 3 col 3: expected ',' or ']', got '3'" },
	};
	return cr_make_param_array(struct bad_case, cases, sizeof cases / sizeof cases[0]);
}

ParameterizedTest(struct bad_case *c, jsonr, rejected)
{
	struct jsonr_value *v = (struct jsonr_value *)1;
	char err[200];
	size_t len = c->len ? c->len : strlen(c->text);
	int rc = jsonr_parse(c->text, len, &v, err, sizeof err);
	cr_assert_eq(rc, -EINVAL, "'%s' gave %d", c->text, rc);
	cr_assert_null(v);
	cr_assert_str_eq(err, c->err, "for '%s'", c->text);
}

static char *nested(int depth, const char *inner)
{
	size_t n = strlen(inner);
	char *s = malloc(2 * (size_t)depth + n + 1);
	cr_assert_not_null(s);
	memset(s, '[', (size_t)depth);
	memcpy(s + depth, inner, n);
	memset(s + depth + n, ']', (size_t)depth);
	s[2 * depth + n] = '\0';
	return s;
}

Test(jsonr, depth_limit_is_64)
{
	char err[200];
	struct jsonr_value *v = NULL;
	char *ok = nested(64, "1");
	cr_assert_eq(jsonr_parse(ok, strlen(ok), &v, err, sizeof err), 0, "%s", err);
	const struct jsonr_value *in = v;
	for (int i = 0; i < 64; i++)
		in = jsonr_at(in, 0);
	cr_assert_eq(jsonr_num(in, 0), 1.0);
	jsonr_free(v);
	free(ok);

	char *bad = nested(65, "1");
	cr_assert_eq(jsonr_parse(bad, strlen(bad), &v, err, sizeof err), -EINVAL);
	cr_assert_str_eq(err, "line 1 col 65: nested deeper than 64");
	free(bad);

	/* Objects count too, and a very deep input fails fast, no stack blowup. */
	char *deep = nested(100000, "");
	cr_assert_eq(jsonr_parse(deep, strlen(deep), &v, err, sizeof err), -EINVAL);
	free(deep);
	const char *objs = "{\"a\":{\"a\":{\"a\":{\"a\":1}}}}";
	cr_assert_eq(jsonr_parse(objs, strlen(objs), &v, err, sizeof err), 0);
	jsonr_free(v);
}

/* A long error is cut to errlen, still NUL-terminated; err may be NULL. */
Test(jsonr, small_error_buffer)
{
	char err[12];
	struct jsonr_value *v;
	memset(err, 'x', sizeof err);
	cr_assert_eq(jsonr_parse("[1,,]", 5, &v, err, sizeof err), -EINVAL);
	cr_assert_eq(strlen(err), sizeof err - 1);
	cr_assert_eq(jsonr_parse("[1,,]", 5, &v, NULL, 0), -EINVAL);
}

/* Many keys: the duplicate check stays correct past the small-object path. */
Test(jsonr, many_keys_and_duplicates)
{
	char *text = malloc(200000);
	cr_assert_not_null(text);
	size_t len = 0;
	text[len++] = '{';
	for (int i = 0; i < 5000; i++)
		len += (size_t)sprintf(text + len, "%s\"k%d\":%d", i ? "," : "", i, i);
	text[len++] = '}';
	struct jsonr_value *v;
	char err[200];
	cr_assert_eq(jsonr_parse(text, len, &v, err, sizeof err), 0, "%s", err);
	cr_assert_eq(v->n, 5000);
	cr_assert_eq(jsonr_num(jsonr_get(v, "k4999"), -1), 4999.0);
	jsonr_free(v);
	/* Now make key 3000 repeat key 17. */
	char *p = strstr(text, "\"k3000\"");
	memcpy(p, "\"k17\"", 5);
	memmove(p + 5, p + 7, len - (size_t)(p + 7 - text));
	len -= 2;
	cr_assert_eq(jsonr_parse(text, len, &v, err, sizeof err), -EINVAL);
	cr_assert(strstr(err, "duplicate key \"k17\"") != NULL, "%s", err);
	/* Keys are C strings: a NUL in one is refused (it would make
	 * "a\0b" and "a\0c" the same key for jsonr_get); values may hold it. */
	const char *nul = "{\"v\":\"a\\u0000b\",\n \"a\\u0000c\":2}";
	cr_assert_eq(jsonr_parse(nul, strlen(nul), &v, err, sizeof err), -EINVAL);
	cr_assert_str_eq(err, "line 2 col 2: \\u0000 in a key");
	free(text);
}

/* Counts the items of an array walk, keeps the last, and stops at item
 * `stop` (1-based; 0 never) with -ECANCELED. */
struct each_count {
	size_t n, stop;
	double last;
};

static int each_count(const struct jsonr_value *item, void *ctx)
{
	struct each_count *c = ctx;
	if (c->stop && c->n + 1 == c->stop)
		return -ECANCELED;
	c->n++;
	c->last = jsonr_num(item, -1);
	return 0;
}

/* dfd/name := [0,1,...,n-1]; returns its size. */
static off_t write_counting_array(int dfd, const char *name, int n)
{
	int fd = openat(dfd, name, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	cr_assert(fd >= 0);
	dprintf(fd, "[");
	for (int i = 0; i < n; i++)
		dprintf(fd, "%s%d", i ? "," : "", i);
	dprintf(fd, "]");
	off_t size = lseek(fd, 0, SEEK_END);
	close(fd);
	return size;
}

Test(jsonr, read_file)
{
	char dir[] = "/tmp/test_jsonr.XXXXXX";
	cr_assert_not_null(mkdtemp(dir));
	tmp_adopt(dir);
	int dfd = open(dir, O_RDONLY | O_DIRECTORY);
	cr_assert(dfd >= 0);
	int fd = openat(dfd, "ok.json", O_WRONLY | O_CREAT | O_TRUNC, 0644);
	cr_assert(fd >= 0);
	cr_assert_eq(write(fd, "{\"x\": [1, 2]}\n", 14), 14);
	close(fd);
	fd = openat(dfd, "bad.json", O_WRONLY | O_CREAT | O_TRUNC, 0644);
	cr_assert(fd >= 0);
	cr_assert_eq(write(fd, "{\"x\": [1,\n", 10), 10); /* half-written */
	close(fd);
	cr_assert_eq(mkdirat(dfd, "sub", 0755), 0);

	struct jsonr_value *v;
	char err[200];
	cr_assert_eq(jsonr_read_file(dfd, "ok.json", 1 << 20, &v, err, sizeof err), 0, "%s", err);
	cr_assert_eq(jsonr_at(jsonr_get(v, "x"), 1)->number, 2.0);
	jsonr_free(v);
	/* Exactly at the limit is fine; one byte under is too big. */
	cr_assert_eq(jsonr_read_file(dfd, "ok.json", 14, &v, err, sizeof err), 0, "%s", err);
	jsonr_free(v);
	cr_assert_eq(jsonr_read_file(dfd, "ok.json", 13, &v, err, sizeof err), -EFBIG);
	cr_assert_null(v);
	cr_assert_str_eq(err, "ok.json: larger than 13 bytes");

	cr_assert_eq(jsonr_read_file(dfd, "bad.json", 1 << 20, &v, err, sizeof err), -EINVAL);
	cr_assert_str_eq(err, "bad.json: line 2 col 1: expected a value, got end of input");
	cr_assert_eq(jsonr_read_file(dfd, "missing.json", 1 << 20, &v, err, sizeof err), -ENOENT);
	cr_assert_str_eq(err, "missing.json: No such file or directory");
	cr_assert_eq(jsonr_read_file(dfd, "sub", 1 << 20, &v, err, sizeof err), -EINVAL);
	cr_assert_str_eq(err, "sub: not a regular file");
	/* An absolute name ignores dirfd (openat). */
	char abs[128];
	snprintf(abs, sizeof abs, "%s/ok.json", dir);
	cr_assert_eq(jsonr_read_file(AT_FDCWD, abs, 1 << 20, &v, err, sizeof err), 0, "%s", err);
	jsonr_free(v);
	/* A large file crosses the reader's growth steps. */
	write_counting_array(dfd, "big.json", 100000);
	cr_assert_eq(jsonr_read_file(dfd, "big.json", 1 << 20, &v, err, sizeof err), 0, "%s", err);
	cr_assert_eq(v->n, 100000);
	cr_assert_eq(jsonr_at(v, 99999)->number, 99999.0);
	jsonr_free(v);

	/* The same files an item at a time (jsonr_read_file_each). */
	struct each_count c = { 0 };
	cr_assert_eq(jsonr_read_file_each(dfd, "big.json", 1 << 20, each_count, &c, err, sizeof err),
		     0, "%s", err);
	cr_assert_eq(c.n, 100000);
	cr_assert_eq(c.last, 99999.0);
	c = (struct each_count){ .stop = 3 };
	cr_assert_eq(jsonr_read_file_each(dfd, "big.json", 1 << 20, each_count, &c, err, sizeof err),
		     -ECANCELED);
	cr_assert_eq(c.n, 2);
	cr_assert_str_eq(err, "big.json: Operation canceled");
	cr_assert_eq(jsonr_read_file_each(dfd, "big.json", 1000, each_count, &c, err, sizeof err),
		     -EFBIG);
	cr_assert_str_eq(err, "big.json: larger than 1000 bytes");
	/* Past 2 MiB the file goes into huge-page-sized memory: read whole,
	 * exactly at its limit, and one byte over it refused. */
	off_t huge = write_counting_array(dfd, "huge.json", 700000);
	cr_assert_gt(huge, 4 << 20);
	c = (struct each_count){ 0 };
	cr_assert_eq(jsonr_read_file_each(dfd, "huge.json", (size_t)huge, each_count, &c, err,
					  sizeof err), 0, "%s", err);
	cr_assert_eq(c.n, 700000);
	cr_assert_eq(c.last, 699999.0);
	cr_assert_eq(jsonr_read_file_each(dfd, "huge.json", (size_t)huge - 1, each_count, &c, err,
					  sizeof err), -EFBIG);
	cr_assert_eq(jsonr_read_file_each(dfd, "ok.json", 1 << 20, each_count, &c, err, sizeof err),
		     -EINVAL);
	cr_assert_str_eq(err, "ok.json: line 1 col 1: expected an array, got '{'");
	cr_assert_eq(jsonr_read_file_each(dfd, "missing.json", 1 << 20, each_count, &c, err,
					  sizeof err), -ENOENT);
	cr_assert_str_eq(err, "missing.json: No such file or directory");

	close(dfd); /* tmp_adopt removes the directory */
}

/* What the item walk saw: each item's "i" member, and a stop on request. */
struct each_seen {
	double got[8];
	size_t n;
	size_t stop_at; /* 1 + the index at which fn says -ECANCELED; 0 never */
};

static int each_note(const struct jsonr_value *item, void *ctx)
{
	struct each_seen *s = ctx;
	if (s->stop_at && s->n + 1 == s->stop_at)
		return -ECANCELED;
	cr_assert_lt(s->n, 8);
	s->got[s->n++] = jsonr_num(jsonr_get(item, "i"), -1);
	return 0;
}

/* jsonr_each_item: an array's items one at a time, under jsonr_parse's
 * grammar, its errors where it finds them, and fn's stop passed back. */
Test(jsonr, each_item_walks_an_array)
{
	char err[200];
	struct each_seen s = { 0 };
	const char *ok = " [ {\"i\": 1}, {\"i\": 2, \"a\": [[]]} ,{\"i\":3} ]\n";
	cr_assert_eq(jsonr_each_item(ok, strlen(ok), each_note, &s, err, sizeof err), 0, "%s", err);
	cr_assert_eq(s.n, 3);
	cr_assert_eq(s.got[0], 1.0);
	cr_assert_eq(s.got[2], 3.0);

	s = (struct each_seen){ 0 };
	cr_assert_eq(jsonr_each_item("[]", 2, each_note, &s, err, sizeof err), 0, "%s", err);
	cr_assert_eq(s.n, 0);

	/* a torn file: the items before the tear were handed over */
	s = (struct each_seen){ 0 };
	const char *torn = "[{\"i\": 1},\n{\"i\": 2},\n{\"i\"";
	cr_assert_eq(jsonr_each_item(torn, strlen(torn), each_note, &s, err, sizeof err), -EINVAL);
	cr_assert_eq(s.n, 2);
	cr_assert_str_eq(err, "line 3 col 5: expected ':' after a key, got end of input");

	const char *not_array = "{\"i\": 1}";
	cr_assert_eq(jsonr_each_item(not_array, strlen(not_array), each_note, &s, err, sizeof err),
		     -EINVAL);
	cr_assert_str_eq(err, "line 1 col 1: expected an array, got '{'");
	const char *trailing = "[1] x";
	cr_assert_eq(jsonr_each_item(trailing, strlen(trailing), each_note, &s, err, sizeof err),
		     -EINVAL);
	cr_assert_str_eq(err, "line 1 col 5: trailing garbage after the value: 'x'");
	const char *no_comma = "[1 2]";
	cr_assert_eq(jsonr_each_item(no_comma, strlen(no_comma), each_note, &s, err, sizeof err),
		     -EINVAL);
	cr_assert_str_eq(err, "line 1 col 4: expected ',' or ']', got '2'");
	cr_assert_eq(jsonr_each_item("[1,]", 4, each_note, &s, err, sizeof err), -EINVAL);
	cr_assert_str_eq(err, "line 1 col 4: trailing comma before ']'");

	/* the items nest from the array: 63 more levels are the limit */
	char *deep = nested(64, "1"), *deeper = nested(65, "1");
	cr_assert_eq(jsonr_each_item(deep, strlen(deep), each_note, &s, err, sizeof err), 0,
		     "%s", err);
	cr_assert_eq(jsonr_each_item(deeper, strlen(deeper), each_note, &s, err, sizeof err),
		     -EINVAL);
	cr_assert_str_eq(err, "line 1 col 65: nested deeper than 64");
	free(deep);
	free(deeper);

	/* fn's own stop: its value back, no message */
	s = (struct each_seen){ .stop_at = 2 };
	cr_assert_eq(jsonr_each_item(ok, strlen(ok), each_note, &s, err, sizeof err), -ECANCELED);
	cr_assert_eq(s.n, 1);
	cr_assert_str_eq(err, "");
}

/* jsonr_parse_streaming: the top-level object whole but for one array
 * member, whose items go to fn; the same member name deeper down, or a
 * member that is not an array, stays in the tree. */
Test(jsonr, streaming_hands_over_one_member)
{
	char err[200];
	struct each_seen s = { 0 };
	struct jsonr_value *doc;
	const char *text = "{\"tree\": {\"images\": [7]}, \"images\": [{\"i\": 1}, {\"i\": 2}],"
			   " \"frames\": [1, 2, 3]}";
	cr_assert_eq(jsonr_parse_streaming(text, strlen(text), "images", each_note, &s, &doc, err,
					   sizeof err),
		     0, "%s", err);
	cr_assert_eq(s.n, 2);
	cr_assert_eq(s.got[1], 2.0);
	const struct jsonr_value *images = jsonr_get(doc, "images");
	cr_assert_not_null(images);
	cr_assert_eq(images->type, JSONR_ARRAY);
	cr_assert_eq(images->n, 0, "the streamed member is left empty");
	cr_assert_eq(jsonr_get(jsonr_get(doc, "tree"), "images")->n, 1, "only the top level streams");
	cr_assert_eq(jsonr_get(doc, "frames")->n, 3);
	jsonr_free(doc);

	/* not an array: parsed into the tree, fn never called */
	s = (struct each_seen){ 0 };
	const char *scalar = "{\"images\": 5}";
	cr_assert_eq(jsonr_parse_streaming(scalar, strlen(scalar), "images", each_note, &s, &doc,
					   err, sizeof err),
		     0, "%s", err);
	cr_assert_eq(s.n, 0);
	cr_assert_eq(jsonr_num(jsonr_get(doc, "images"), 0), 5.0);
	jsonr_free(doc);

	/* fn's stop, and a syntax error inside the streamed items: no tree */
	s = (struct each_seen){ .stop_at = 2 };
	cr_assert_eq(jsonr_parse_streaming(text, strlen(text), "images", each_note, &s, &doc, err,
					   sizeof err),
		     -ECANCELED);
	cr_assert_null(doc);
	cr_assert_str_eq(err, "");
	s = (struct each_seen){ 0 };
	const char *torn = "{\"images\": [{\"i\": 1}, {\"i\" 2}]}";
	cr_assert_eq(jsonr_parse_streaming(torn, strlen(torn), "images", each_note, &s, &doc, err,
					   sizeof err),
		     -EINVAL);
	cr_assert_null(doc);
	cr_assert_eq(s.n, 1);
	cr_assert_str_eq(err, "line 1 col 28: expected ':' after a key, got '2'");

	/* a duplicate key is refused as jsonr_parse refuses it */
	const char *dup = "{\"images\": [], \"images\": []}";
	cr_assert_eq(jsonr_parse_streaming(dup, strlen(dup), "images", each_note, &s, &doc, err,
					   sizeof err),
		     -EINVAL);
}

/* jsonr_fill: an absent member copied whole from the defaults, a present
 * object filled key by key, a present member of another type (null where
 * the default is an object) left as it is; jsonr_put keeps keys unique. */
Test(jsonr, fill_puts_back_what_is_absent)
{
	static const char dflt_text[] =
		"{\"a\": 0, \"s\": \"x\", \"o\": {\"k\": [], \"n\": null}, \"r\": {\"f\": 1}, \"e\": {}}";
	static const char text[] = "{\"a\": 5, \"o\": {\"k\": [1]}, \"r\": null}";
	struct jsonr_value *dflt, *v;
	cr_assert_eq(jsonr_parse(dflt_text, sizeof dflt_text - 1, &dflt, NULL, 0), 0);
	cr_assert_eq(jsonr_parse(text, sizeof text - 1, &v, NULL, 0), 0);
	cr_assert_eq(jsonr_fill(v, dflt), 0);
	cr_expect_eq(v->n, 5);
	cr_expect_eq(jsonr_num(jsonr_get(v, "a"), -1), 5);
	cr_expect_str_eq(jsonr_str(jsonr_get(v, "s"), ""), "x");
	const struct jsonr_value *o = jsonr_get(v, "o");
	cr_assert_not_null(o);
	cr_expect_eq(o->n, 2);
	cr_expect_eq(jsonr_get(o, "k")->n, 1);
	cr_expect_eq(jsonr_get(o, "n")->type, JSONR_NULL);
	cr_expect_eq(jsonr_get(v, "r")->type, JSONR_NULL, "a null filled as if an object");
	cr_expect_eq(jsonr_get(v, "e")->type, JSONR_OBJECT);
	/* the copies are the tree's own: the defaults can go first */
	jsonr_free(dflt);
	cr_expect_str_eq(jsonr_str(jsonr_get(v, "s"), ""), "x");
	const struct jsonr_value one = { .type = JSONR_NUMBER, .number = 1 };
	cr_expect_eq(jsonr_put(v, "a", &one), -EINVAL, "a second \"a\"");
	cr_expect_eq(jsonr_put((struct jsonr_value *)jsonr_get(v, "r"), "f", &one), -EINVAL);
	cr_expect_eq(jsonr_put(v, "b", &one), 0);
	cr_expect_eq(jsonr_num(jsonr_get(v, "b"), -1), 1);
	jsonr_free(v);
}
