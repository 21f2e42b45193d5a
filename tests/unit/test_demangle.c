/* test_demangle.c: common/demangle.h against c++filt.
 *
 * Each name of tests/data/demangle/corpus.txt (the common cases, then a
 * slice of libstdc++'s function symbols) that demangle_short names must
 * read as c++filt's name for it does once cut as demangle.h says: the
 * template arguments folded to <> by memsup's own rule (shortname_fold),
 * the parameters and qualifiers after them and a function template's
 * return type dropped, clone suffixes kept.  The common cases must all be
 * named, and most of the library's.  Without c++filt the comparison
 * skips, saying so. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analyze/shortname.h"
#include "demangle.h"

#define NAMES 1024
#define COMMON_CASES 40 /* the corpus's first names, each one a must */

static char mangled[NAMES][1024], full[NAMES][1024];
static size_t count;

static void corpus_load(void)
{
	char path[4096], line[1024];
	const char *data = getenv("MT_DATA");
	cr_assert_not_null(data, "MT_DATA is not set");
	snprintf(path, sizeof path, "%s/demangle/corpus.txt", data);
	FILE *f = fopen(path, "r");
	cr_assert_not_null(f, "%s", path);
	count = 0;
	while (fgets(line, sizeof line, f) && count < NAMES) {
		line[strcspn(line, "\n")] = '\0';
		if (line[0] == '#' || !line[0])
			continue;
		snprintf(mangled[count++], sizeof mangled[0], "%s", line);
	}
	fclose(f);
}

/* c++filt's name of every corpus name, in order. */
static void corpus_filt(void)
{
	char cmd[4096];
	snprintf(cmd, sizeof cmd, "c++filt < '%s/demangle/corpus.txt' | grep -v '^#'",
		 getenv("MT_DATA"));
	FILE *p = popen(cmd, "r");
	cr_assert_not_null(p);
	size_t i = 0;
	while (i < count && fgets(full[i], sizeof full[0], p)) {
		full[i][strcspn(full[i], "\n")] = '\0';
		i++;
	}
	pclose(p);
	cr_assert_eq(i, count, "c++filt gave %zu names for %zu", i, count);
}

/* c++filt's text cut as demangle.h says (see the top). */
static void reference_of(const char *filt, int is_template_fn, char *out, size_t cap)
{
	char base[1024], folded[1024];
	const char *clone = strstr(filt, " [clone ");
	size_t n = clone ? (size_t)(clone - filt) : strlen(filt);
	snprintf(base, sizeof base, "%.*s", (int)n, filt);
	shortname_fold(base, folded, sizeof folded);
	/* the parameters: the last (...) group and what follows it */
	char *close = strrchr(folded, ')');
	if (close && strchr(folded, '(')) {
		int depth = 0;
		for (char *q = close; q >= folded; q--) {
			if (*q == ')')
				depth++;
			else if (*q == '(' && --depth == 0) {
				*q = '\0';
				break;
			}
		}
	}
	/* a function template's return type: up to the last space outside
	 * brackets that is not an operator's ("operator new", "operator< <>") */
	char *name = folded;
	if (is_template_fn) {
		int depth = 0;
		for (char *q = folded; *q; q++) {
			if (*q == '<' || *q == '(')
				depth++;
			else if ((*q == '>' || *q == ')') && depth > 0)
				depth--;
			else if (*q == ' ' && depth == 0) {
				/* "operator new", "operator< <>": the
				 * space right after an operator's name */
				char *op = strstr(folded, "operator");
				if (op && op < q && q - op <= 12)
					continue;
				name = q + 1;
			}
		}
	}
	snprintf(out, cap, "%s%s", name, clone ? clone : "");
}

/* A function template: its name ends in template arguments, so c++filt
 * writes its return type first. */
static int template_fn(const char *ours)
{
	const char *clone = strstr(ours, " [clone ");
	size_t n = clone ? (size_t)(clone - ours) : strlen(ours);
	return n >= 2 && ours[n - 2] == '<' && ours[n - 1] == '>';
}

Test(demangle, names_as_cxxfilt_cut, .timeout = 30)
{
	char ours[512], want[1024];
	size_t named = 0, lib_named = 0;
	if (system("command -v c++filt >/dev/null 2>&1") != 0)
		cr_skip_test("no c++filt (binutils) to compare with");
	corpus_load();
	corpus_filt();
	cr_assert_gt(count, COMMON_CASES);
	for (size_t i = 0; i < count; i++) {
		ssize_t n = demangle_short(mangled[i], ours, sizeof ours);
		if (i < COMMON_CASES)
			cr_expect_geq(n, 0, "a common case refused: %s (%s)", mangled[i], full[i]);
		if (n < 0)
			continue;
		named++;
		lib_named += i >= COMMON_CASES;
		cr_expect_eq((size_t)n, strlen(ours));
		reference_of(full[i], template_fn(ours), want, sizeof want);
		cr_expect_str_eq(ours, want, "%s: c++filt says %s", mangled[i], full[i]);
	}
	/* measured: see the commit; refusals are the forms demangle.h names */
	cr_expect_geq(lib_named * 10, (count - COMMON_CASES) * 8,
		      "%zu of %zu library names named", lib_named, count - COMMON_CASES);
	cr_log_info("%zu of %zu named", named, count);
}

Test(demangle, refuses_rather_than_guesses)
{
	char out[256];
	cr_expect_eq(demangle_short("main", out, sizeof out), -1, "not mangled");
	cr_expect_eq(demangle_short("_ZNK3foocviEv", out, sizeof out), -1, "conversion");
	cr_expect_eq(demangle_short("_ZZ4mainENKUlvE_clEv", out, sizeof out), -1, "a lambda");
	cr_expect_eq(demangle_short("_ZN3fooIiE3barE", out, sizeof out) >= 0, 1);
	cr_expect_eq(demangle_short("_ZN3foo", out, sizeof out), -1, "cut short");
	cr_expect_eq(demangle_short("_ZN9999999999foo3barEv", out, sizeof out), -1, "length");
	cr_expect_eq(demangle_short("_ZN3foo3barIiEEv", out, 8), -1, "no room: refused");
	cr_expect_eq(demangle_short("_ZN3foo3barEv", out, 9), 8);
	cr_expect_str_eq(out, "foo::bar");
}
