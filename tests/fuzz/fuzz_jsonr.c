/* fuzz_jsonr.c: libFuzzer harness for supervisor/evidence/jsonr.c, the strict
 * JSON reader of evidence files (memsup report, memsup plot).
 *
 * For every input:
 *   - jsonr_parse returns 0 or -EINVAL (never -ENOMEM at these sizes, never
 *     a crash, leak or overread: ASan/UBSan watch);
 *   - on failure *out is NULL and the message is "line L col C: ..." with L
 *     at most 1 + the input's newlines and C >= 1;
 *   - on success the tree is sound (strings NUL-terminated at len, keys
 *     unique and found by jsonr_get, arrays without keys), and writing it
 *     back with preload/jsonw (strings byte for byte, numbers with %.17g)
 *     and reading that again gives an equal tree: number bits, string bytes
 *     (every byte value, via \udcXX) and order.  Trees deeper than jsonw's
 *     limit (32) skip the write-back;
 *   - jsonr_parse_streaming with the key "images" agrees: the same result
 *     and message, its callback gets the items of the top-level member
 *     "images" (when an array) in order, equal to the parsed ones, and its
 *     tree is the parsed one with that member emptied.
 */
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "evidence/jsonr.h"
#include "jsonw.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CHECK(cond)                                                              \
	do {                                                                     \
		if (!(cond)) {                                                   \
			fprintf(stderr, "fuzz_jsonr: %s:%d: invariant broken: %s\n", \
				__FILE__, __LINE__, #cond);                      \
			abort();                                                 \
		}                                                                \
	} while (0)

static int memfd = -1;

static unsigned tree_depth(const struct jsonr_value *v)
{
	unsigned d = 0;
	if (v->type != JSONR_ARRAY && v->type != JSONR_OBJECT)
		return 0;
	for (size_t i = 0; i < v->n; i++) {
		unsigned c = tree_depth(&v->items[i]);
		if (c > d)
			d = c;
	}
	return d + 1;
}

static void check_sound(const struct jsonr_value *v)
{
	switch (v->type) {
	case JSONR_NULL:
		break;
	case JSONR_BOOL:
		CHECK(v->boolean == 0 || v->boolean == 1);
		break;
	case JSONR_NUMBER:
		CHECK(isfinite(v->number));
		break;
	case JSONR_STRING:
		CHECK(v->string != NULL);
		CHECK(v->string[v->len] == '\0');
		break;
	case JSONR_ARRAY:
		CHECK(v->keys == NULL);
		CHECK(v->n == 0 || v->items != NULL);
		for (size_t i = 0; i < v->n; i++) {
			CHECK(jsonr_at(v, i) == &v->items[i]);
			check_sound(&v->items[i]);
		}
		CHECK(jsonr_at(v, v->n) == NULL);
		break;
	case JSONR_OBJECT:
		for (size_t i = 0; i < v->n; i++) {
			/* Unique keys: the lookup finds this very member. */
			CHECK(jsonr_get(v, v->keys[i]) == &v->items[i]);
			check_sound(&v->items[i]);
		}
		break;
	default:
		CHECK(!"bad type");
	}
}

static void write_back(struct jsonw *w, const struct jsonr_value *v)
{
	char num[40];
	int n;

	switch (v->type) {
	case JSONR_NULL:
		jsonw_null(w);
		break;
	case JSONR_BOOL:
		jsonw_bool(w, v->boolean);
		break;
	case JSONR_NUMBER:
		/* %.17g is exact for a double and valid JSON for finite ones. */
		n = snprintf(num, sizeof num, "%.17g", v->number);
		CHECK(n > 0 && (size_t)n < sizeof num);
		jsonw_raw(w, num, (size_t)n);
		break;
	case JSONR_STRING:
		jsonw_string_n(w, v->string, v->len);
		break;
	case JSONR_ARRAY:
		jsonw_array_begin(w);
		for (size_t i = 0; i < v->n; i++)
			write_back(w, &v->items[i]);
		jsonw_array_end(w);
		break;
	case JSONR_OBJECT:
		jsonw_object_begin(w);
		for (size_t i = 0; i < v->n; i++) {
			jsonw_key(w, v->keys[i]);
			write_back(w, &v->items[i]);
		}
		jsonw_object_end(w);
		break;
	}
}

static void check_equal(const struct jsonr_value *a, const struct jsonr_value *b)
{
	CHECK(a->type == b->type);
	switch (a->type) {
	case JSONR_NULL:
		break;
	case JSONR_BOOL:
		CHECK(a->boolean == b->boolean);
		break;
	case JSONR_NUMBER:
		CHECK(memcmp(&a->number, &b->number, sizeof a->number) == 0);
		break;
	case JSONR_STRING:
		CHECK(a->len == b->len);
		CHECK(memcmp(a->string, b->string, a->len) == 0);
		break;
	case JSONR_ARRAY:
	case JSONR_OBJECT:
		CHECK(a->n == b->n);
		for (size_t i = 0; i < a->n; i++) {
			if (a->type == JSONR_OBJECT)
				CHECK(strcmp(a->keys[i], b->keys[i]) == 0);
			check_equal(&a->items[i], &b->items[i]);
		}
		break;
	}
}

static void check_error(const uint8_t *data, size_t size, const char *err)
{
	size_t lines = 1, line = 0, col = 0;
	int used = 0;

	for (size_t i = 0; i < size; i++)
		lines += data[i] == '\n';
	CHECK(sscanf(err, "line %zu col %zu: %n", &line, &col, &used) == 2);
	CHECK(used > 0 && err[used] != '\0'); /* a message follows */
	CHECK(line >= 1 && line <= lines);
	CHECK(col >= 1 && col <= size + 1);
}

/* The streamed items against the parsed tree's (NULL: the parse failed,
 * only count them). */
struct stream_check {
	const struct jsonr_value *want;
	size_t n;
};

static int stream_item(const struct jsonr_value *item, void *ctx)
{
	struct stream_check *c = ctx;
	if (c->want) {
		CHECK(c->n < c->want->n);
		check_equal(item, &c->want->items[c->n]);
	}
	c->n++;
	return 0;
}

static void check_streaming(const uint8_t *data, size_t size, int rc, const char *err,
			    const struct jsonr_value *v)
{
	const struct jsonr_value *want = v ? jsonr_get(v, "images") : NULL;
	struct stream_check c = { want && want->type == JSONR_ARRAY ? want : NULL, 0 };
	struct jsonr_value *s = (struct jsonr_value *)&memfd; /* must be reset */
	char serr[256];
	int src = jsonr_parse_streaming((const char *)data, size, "images", stream_item, &c, &s,
					serr, sizeof serr);
	CHECK(src == rc);
	if (rc != 0) {
		CHECK(s == NULL);
		CHECK(strcmp(serr, err) == 0);
		return;
	}
	CHECK(c.n == (c.want ? c.want->n : 0));
	CHECK(s->type == v->type && s->n == v->n);
	for (size_t i = 0; i < v->n; i++) {
		if (v->type == JSONR_OBJECT && c.want && &v->items[i] == c.want) {
			CHECK(s->items[i].type == JSONR_ARRAY && s->items[i].n == 0);
			continue;
		}
		if (v->type == JSONR_OBJECT)
			CHECK(strcmp(s->keys[i], v->keys[i]) == 0);
		check_equal(&s->items[i], &v->items[i]);
	}
	jsonr_free(s);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct jsonr_value *v = (struct jsonr_value *)&memfd; /* must be reset */
	char err[256];

	if (memfd < 0) {
		memfd = memfd_create("fuzz_jsonr", 0);
		CHECK(memfd >= 0);
	}
	int rc = jsonr_parse((const char *)data, size, &v, err, sizeof err);
	if (rc != 0) {
		CHECK(rc == -EINVAL);
		CHECK(v == NULL);
		check_error(data, size, err);
		check_streaming(data, size, rc, err, NULL);
		return 0;
	}
	CHECK(v != NULL);
	check_sound(v);
	check_streaming(data, size, rc, err, v);
	if (tree_depth(v) <= JSONW_MAX_DEPTH) {
		struct jsonw *w = malloc(sizeof *w);
		CHECK(w != NULL);
		CHECK(ftruncate(memfd, 0) == 0);
		CHECK(lseek(memfd, 0, SEEK_SET) == 0);
		jsonw_init(w, memfd, (unsigned)(size & 3)); /* compact and pretty */
		write_back(w, v);
		CHECK(jsonw_finish(w) == 0);
		free(w);
		off_t end = lseek(memfd, 0, SEEK_END);
		CHECK(end >= 0);
		char *text = malloc((size_t)end + 1);
		CHECK(text != NULL);
		CHECK(pread(memfd, text, (size_t)end, 0) == (ssize_t)end);
		struct jsonr_value *again = NULL;
		rc = jsonr_parse(text, (size_t)end, &again, err, sizeof err);
		if (rc != 0)
			fprintf(stderr, "fuzz_jsonr: written back: %.*s\nfuzz_jsonr: %s\n",
				(int)end, text, err);
		CHECK(rc == 0);
		check_equal(v, again);
		jsonr_free(again);
		free(text);
	}
	jsonr_free(v);
	return 0;
}
