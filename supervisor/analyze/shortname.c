/* shortname.c: C++ names with their template arguments folded (see
 * shortname.h). */
#include "analyze/shortname.h"

#include <string.h>

/* After "operator" at `p`: how many characters of an operator's own name
 * made of '<' and '>' follow ("<", "<<", "<=", "<=>", "<<=", "->", "->*",
 * ">", ">>", ">=", ">>="); 0 when none. */
static size_t operator_len(const char *p)
{
	static const char *const ops[] = { "<=>", "<<=", ">>=", "->*", "<<", "<=", ">>", ">=",
					   "->",  "<",   ">" };
	for (size_t i = 0; i < sizeof ops / sizeof *ops; i++) {
		size_t n = strlen(ops[i]);
		if (strncmp(p, ops[i], n) == 0)
			return n;
	}
	return 0;
}

/* The '>' that closes the '<' at name[i], or 0 when none does. */
static size_t closing(const char *name, size_t i)
{
	int depth = 0;
	for (size_t j = i; name[j]; j++) {
		if (name[j] == '<')
			depth++;
		else if (name[j] == '>' && --depth == 0)
			return j;
	}
	return 0;
}

size_t shortname_fold(const char *name, char *out, size_t cap)
{
	size_t o = 0;
	if (!cap)
		return 0;
	for (size_t i = 0; name[i] && o + 1 < cap;) {
		if (i >= 8 && strncmp(name + i - 8, "operator", 8) == 0) {
			size_t n = operator_len(name + i);
			for (size_t k = 0; k < n && o + 1 < cap; k++)
				out[o++] = name[i + k];
			if (n) {
				i += n;
				continue;
			}
		}
		size_t end;
		if (name[i] == '<' && (end = closing(name, i)) != 0) {
			if (o + 2 < cap) {
				out[o++] = '<';
				out[o++] = '>';
			} else {
				break;
			}
			i = end + 1;
			continue;
		}
		out[o++] = name[i++];
	}
	out[o] = '\0';
	return o;
}
