/* fuzz_jsonw.c: libFuzzer harness for the JSON string escaping of
 * common/jsonw.h: every byte value in argv and env must reach the evidence
 * escaped so that it comes back exactly.
 *
 * The input bytes go through jsonw_string_n into a memfd (compact mode, so
 * the output is the quoted string alone; long inputs cross the writer's
 * buffer flushes).  The output is then decoded by a small strict decoder
 * here, which accepts only what jsonw may write:
 *   - raw bytes: no control character (< 0x20), no DEL, and bytes >= 0x80
 *     only as well-formed UTF-8 (no overlong forms, no surrogates, nothing
 *     above U+10FFFF);
 *   - escapes: \" \\ \/ \b \f \n \r \t, \u00XX for other control bytes
 *     and DEL, and \udcXX with XX >= 0x80 for a byte that was not part of
 *     valid UTF-8 (Python's surrogateescape); no other \u escape, in
 *     particular no high surrogate that a JSON parser would pair with the
 *     next escape.
 * The decoded bytes must equal the input exactly: that is
 * os.fsencode(json.loads(text)) == input, and the text is valid JSON.
 * The same is checked for jsonw_string (NUL-terminated: up to the first NUL)
 * used as an object key.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "jsonw.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CHECK(cond)                                                              \
	do {                                                                     \
		if (!(cond)) {                                                   \
			fprintf(stderr, "fuzz_jsonw: %s:%d: invariant broken: %s\n", \
				__FILE__, __LINE__, #cond);                      \
			abort();                                                 \
		}                                                                \
	} while (0)

static int memfd = -1;

/* Length of the well-formed UTF-8 sequence at s (RFC 3629 table 3-7), 0 if
 * none.  Written apart from jsonw.c's on purpose: a shared bug would hide. */
static size_t utf8_len(const unsigned char *s, size_t n)
{
	uint32_t cp;
	size_t len;
	if (s[0] < 0x80)
		return 1;
	if ((s[0] & 0xe0) == 0xc0) {
		len = 2;
		cp = s[0] & 0x1f;
	} else if ((s[0] & 0xf0) == 0xe0) {
		len = 3;
		cp = s[0] & 0x0f;
	} else if ((s[0] & 0xf8) == 0xf0) {
		len = 4;
		cp = s[0] & 0x07;
	} else {
		return 0;
	}
	if (n < len)
		return 0;
	for (size_t i = 1; i < len; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		cp = cp << 6 | (s[i] & 0x3f);
	}
	static const uint32_t min_cp[5] = { 0, 0, 0x80, 0x800, 0x10000 };
	if (cp < min_cp[len] || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
		return 0;
	return len;
}

static int hex_val(unsigned char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* Decode one JSON string starting at text[*pos] (the opening quote) into
 * out (capacity >= the text length); returns the decoded length, aborts on
 * anything jsonw must not write.  *pos ends after the closing quote. */
static size_t json_decode_string(const unsigned char *text, size_t len, size_t *pos,
				 unsigned char *out)
{
	size_t i = *pos, o = 0;
	CHECK(i < len && text[i] == '"');
	i++;
	for (;;) {
		CHECK(i < len); /* unterminated string */
		unsigned char c = text[i];
		if (c == '"') {
			i++;
			break;
		}
		CHECK(c >= 0x20 && c != 0x7f); /* raw control byte */
		if (c != '\\') {
			size_t run = utf8_len(text + i, len - i);
			CHECK(run > 0); /* raw invalid UTF-8 */
			memcpy(out + o, text + i, run);
			o += run;
			i += run;
			continue;
		}
		CHECK(i + 1 < len);
		c = text[i + 1];
		i += 2;
		switch (c) {
		case '"': out[o++] = '"'; continue;
		case '\\': out[o++] = '\\'; continue;
		case '/': out[o++] = '/'; continue;
		case 'b': out[o++] = '\b'; continue;
		case 'f': out[o++] = '\f'; continue;
		case 'n': out[o++] = '\n'; continue;
		case 'r': out[o++] = '\r'; continue;
		case 't': out[o++] = '\t'; continue;
		case 'u': break;
		default: CHECK(!"unknown escape");
		}
		CHECK(i + 4 <= len);
		unsigned v = 0;
		for (int k = 0; k < 4; k++) {
			int h = hex_val(text[i + k]);
			CHECK(h >= 0);
			v = v << 4 | (unsigned)h;
		}
		i += 4;
		if (v >= 0xdc80 && v <= 0xdcff) { /* surrogateescape'd byte */
			out[o++] = (unsigned char)(v & 0xff);
		} else {
			/* jsonw escapes only control bytes and DEL this way. */
			CHECK(v < 0x20 || v == 0x7f);
			out[o++] = (unsigned char)v;
		}
	}
	*pos = i;
	return o;
}

static size_t memfd_take(unsigned char **text)
{
	off_t end = lseek(memfd, 0, SEEK_END);
	CHECK(end >= 0);
	*text = malloc((size_t)end + 1);
	CHECK(*text != NULL);
	CHECK(pread(memfd, *text, (size_t)end, 0) == (ssize_t)end);
	return (size_t)end;
}

static void memfd_reset(void)
{
	CHECK(ftruncate(memfd, 0) == 0);
	CHECK(lseek(memfd, 0, SEEK_SET) == 0);
}

static void fuzz_value(const uint8_t *data, size_t size)
{
	struct jsonw *w = malloc(sizeof *w);
	CHECK(w != NULL);
	memfd_reset();
	jsonw_init(w, memfd, 0);
	jsonw_string_n(w, (const char *)data, size);
	CHECK(jsonw_finish(w) == 0);
	free(w);

	unsigned char *text, *dec;
	size_t len = memfd_take(&text), pos = 0;
	dec = malloc(len + 1);
	CHECK(dec != NULL);
	size_t n = json_decode_string(text, len, &pos, dec);
	CHECK(pos == len); /* nothing after the string */
	CHECK(n == size);
	CHECK(size == 0 || memcmp(dec, data, size) == 0);
	/* Escaping is as tight as the contract allows: at most 6 bytes out
	 * per byte in (\udcXX, \u00XX), plus the quotes. */
	CHECK(len <= 6 * size + 2);
	free(dec);
	free(text);
}

/* The NUL-terminated entry points (jsonw_key, jsonw_string) on the bytes up
 * to the first NUL, inside an object, pretty-printed. */
static void fuzz_key(const uint8_t *data, size_t size)
{
	const uint8_t *nul = memchr(data, '\0', size);
	size_t klen = nul ? (size_t)(nul - data) : size;
	char *key = malloc(klen + 1);
	CHECK(key != NULL);
	memcpy(key, data, klen);
	key[klen] = '\0';

	struct jsonw *w = malloc(sizeof *w);
	CHECK(w != NULL);
	memfd_reset();
	jsonw_init(w, memfd, 2);
	jsonw_object_begin(w);
	jsonw_key(w, key);
	jsonw_string(w, key);
	jsonw_object_end(w);
	CHECK(jsonw_finish(w) == 0);
	free(w);

	unsigned char *text, *dec;
	size_t len = memfd_take(&text), pos = 0;
	dec = malloc(len + 1);
	CHECK(dec != NULL);
	/* {\n  "key": "value"\n} */
	CHECK(len >= 4 && memcmp(text, "{\n  ", 4) == 0);
	pos = 4;
	size_t n = json_decode_string(text, len, &pos, dec);
	CHECK(n == klen && memcmp(dec, key, klen) == 0);
	CHECK(pos + 2 <= len && memcmp(text + pos, ": ", 2) == 0);
	pos += 2;
	n = json_decode_string(text, len, &pos, dec);
	CHECK(n == klen && memcmp(dec, key, klen) == 0);
	CHECK(len - pos == 2 && memcmp(text + pos, "\n}", 2) == 0);
	free(dec);
	free(text);
	free(key);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (memfd < 0) {
		memfd = memfd_create("fuzz_jsonw", MFD_CLOEXEC);
		CHECK(memfd >= 0);
	}
	fuzz_value(data, size);
	fuzz_key(data, size);
	return 0;
}
