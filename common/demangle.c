/* demangle.c: Itanium C++ names, folded, for a summary line (see
 * demangle.h). */
#include "demangle.h"

#include <string.h>

struct dm {
	const char *p;  /* the next character of the mangled name */
	char *out;
	size_t cap, len;
	int bad;        /* a form refused, or no room */
	const char *id; /* the last identifier of the name, for a
			   constructor's or destructor's */
	size_t id_len;
};

static void dm_add_n(struct dm *d, const char *s, size_t n)
{
	if (d->len + n >= d->cap) {
		d->bad = 1;
		return;
	}
	memcpy(d->out + d->len, s, n);
	d->len += n;
}

static void dm_add(struct dm *d, const char *s)
{
	dm_add_n(d, s, strlen(s));
}

static int dm_digit(char c)
{
	return c >= '0' && c <= '9';
}

/* A <source-name>'s length prefix and the name after it; 0 on none. */
static size_t dm_source(struct dm *d, const char **name)
{
	size_t n = 0;
	if (!dm_digit(*d->p))
		return 0;
	while (dm_digit(*d->p)) {
		n = n * 10 + (size_t)(*d->p++ - '0');
		if (n > 4096)
			return 0;
	}
	/* never past the string's end */
	for (size_t i = 0; i < n; i++)
		if (!d->p[i])
			return 0;
	*name = d->p;
	d->p += n;
	return n;
}

/* Skips one <template-args>, "I ... E", without naming what it holds:
 * opening and closing constructs are counted, length-prefixed names and
 * literals stepped over; anything not known here is refused. */
static void dm_skip_args(struct dm *d)
{
	unsigned depth = 0;
	const char *name;
	do {
		char c = *d->p;
		if (!c) {
			d->bad = 1;
			return;
		}
		if (c == 'I' || c == 'N' || c == 'J') {
			depth++;
			d->p++;
		} else if (c == 'F') {
			depth++;
			d->p++;
			if (*d->p == 'Y')
				d->p++;
		} else if (c == 'E') {
			depth--;
			d->p++;
		} else if (dm_digit(c)) {
			if (!dm_source(d, &name)) {
				d->bad = 1;
				return;
			}
		} else if (c == 'L') {
			/* a literal: its type (builtin, or an enum's name) and
			 * its value, up to E */
			d->p++;
			if (*d->p >= 'a' && *d->p <= 'z') {
				d->p++;
			} else if (dm_digit(*d->p)) {
				if (!dm_source(d, &name)) {
					d->bad = 1;
					return;
				}
			} else if (*d->p == 'N') {
				d->p++;
				while (dm_digit(*d->p))
					if (!dm_source(d, &name)) {
						d->bad = 1;
						return;
					}
				if (*d->p != 'E') {
					d->bad = 1;
					return;
				}
				d->p++;
			} else {
				d->bad = 1;
				return;
			}
			while (*d->p == 'n' || dm_digit(*d->p))
				d->p++;
			if (*d->p != 'E') {
				d->bad = 1;
				return;
			}
			d->p++;
		} else if (c == 'S') {
			d->p++;
			if (strchr("tabsiod_", *d->p) && *d->p) {
				d->p++;
			} else {
				while ((dm_digit(*d->p) || (*d->p >= 'A' && *d->p <= 'Z')))
					d->p++;
				if (*d->p != '_') {
					d->bad = 1;
					return;
				}
				d->p++;
			}
		} else if (c == 'T') {
			d->p++;
			while (dm_digit(*d->p))
				d->p++;
			if (*d->p != '_') {
				d->bad = 1;
				return;
			}
			d->p++;
		} else if (c == 'D') {
			d->p++;
			if (*d->p && strchr("pnacisufdeh", *d->p)) {
				d->p++;
			} else {
				d->bad = 1;
				return;
			}
		} else if (c == 'A') {
			d->p++;
			while (dm_digit(*d->p))
				d->p++;
			if (*d->p != '_') {
				d->bad = 1;
				return;
			}
			d->p++;
		} else if (c == 'B' || c == 'u') {
			d->p++;
			if (!dm_source(d, &name)) {
				d->bad = 1;
				return;
			}
		} else if (strchr("PROKVrCGM", c)) {
			d->p++; /* qualifiers and compounds: the type follows */
		} else if (strchr("vwbcahstijlmxynofdegz", c)) {
			d->p++; /* builtin types */
		} else {
			d->bad = 1; /* expressions, local names, ...: refused */
			return;
		}
	} while (depth > 0 && !d->bad);
}

/* Template arguments after a name: "<>" (with the space c++filt puts
 * after an operator that ends in '<' or '>'). */
static void dm_args(struct dm *d)
{
	if (d->len && (d->out[d->len - 1] == '<' || d->out[d->len - 1] == '>'))
		dm_add(d, " ");
	dm_add(d, "<>");
	dm_skip_args(d);
}

static const struct {
	char code[3];
	const char *text;
} dm_ops[] = {
	{ "nw", " new" }, { "na", " new[]" }, { "dl", " delete" }, { "da", " delete[]" },
	{ "ps", "+" },    { "ng", "-" },      { "ad", "&" },       { "de", "*" },
	{ "co", "~" },    { "pl", "+" },      { "mi", "-" },       { "ml", "*" },
	{ "dv", "/" },    { "rm", "%" },      { "an", "&" },       { "or", "|" },
	{ "eo", "^" },    { "aS", "=" },      { "pL", "+=" },      { "mI", "-=" },
	{ "mL", "*=" },   { "dV", "/=" },     { "rM", "%=" },      { "aN", "&=" },
	{ "oR", "|=" },   { "eO", "^=" },     { "ls", "<<" },      { "rs", ">>" },
	{ "lS", "<<=" },  { "rS", ">>=" },    { "eq", "==" },      { "ne", "!=" },
	{ "lt", "<" },    { "gt", ">" },      { "le", "<=" },      { "ge", ">=" },
	{ "ss", "<=>" },  { "nt", "!" },      { "aa", "&&" },      { "oo", "||" },
	{ "pp", "++" },   { "mm", "--" },     { "cm", "," },       { "pm", "->*" },
	{ "pt", "->" },   { "cl", "()" },     { "ix", "[]" },      { "qu", "?" },
};

/* One <unqualified-name>: an identifier, an operator, a constructor or a
 * destructor, with its ABI tags. */
static void dm_unqualified(struct dm *d)
{
	const char *name;
	size_t n;
	char c = *d->p;
	if (dm_digit(c)) {
		n = dm_source(d, &name);
		if (!n) {
			d->bad = 1;
			return;
		}
		if (n >= 10 && strncmp(name, "_GLOBAL__N", 10) == 0) {
			dm_add(d, "(anonymous namespace)");
		} else {
			dm_add_n(d, name, n);
			d->id = name;
			d->id_len = n;
		}
	} else if (c == 'C' && (d->p[1] == '1' || d->p[1] == '2' || d->p[1] == '3')) {
		if (!d->id) {
			d->bad = 1;
			return;
		}
		dm_add_n(d, d->id, d->id_len);
		d->p += 2;
	} else if (c == 'D' && (d->p[1] == '0' || d->p[1] == '1' || d->p[1] == '2')) {
		if (!d->id) {
			d->bad = 1;
			return;
		}
		dm_add(d, "~");
		dm_add_n(d, d->id, d->id_len);
		d->p += 2;
	} else if (c >= 'a' && c <= 'z' && d->p[1]) {
		size_t i;
		for (i = 0; i < sizeof dm_ops / sizeof *dm_ops; i++)
			if (dm_ops[i].code[0] == c && dm_ops[i].code[1] == d->p[1])
				break;
		if (i == sizeof dm_ops / sizeof *dm_ops) {
			d->bad = 1; /* cv (conversion), li (literal), v (vendor) */
			return;
		}
		dm_add(d, "operator");
		dm_add(d, dm_ops[i].text);
		d->p += 2;
	} else {
		d->bad = 1;
		return;
	}
	while (*d->p == 'B' && !d->bad) {
		d->p++;
		n = dm_source(d, &name);
		if (!n) {
			d->bad = 1;
			return;
		}
		dm_add(d, "[abi:");
		dm_add_n(d, name, n);
		dm_add(d, "]");
	}
}

/* The std:: abbreviations: St alone is the namespace; the others name a
 * class (and its identifier, for a constructor's name).  Returns 0 when
 * the S... at p is none of them. */
static int dm_std(struct dm *d)
{
	static const struct {
		char c;
		const char *text, *id;
	} ab[] = {
		{ 'a', "std::allocator", "allocator" },
		{ 'b', "std::basic_string", "basic_string" },
		{ 's', "std::basic_string<>", "basic_string" },
		{ 'i', "std::basic_istream<>", "basic_istream" },
		{ 'o', "std::basic_ostream<>", "basic_ostream" },
		{ 'd', "std::basic_iostream<>", "basic_iostream" },
	};
	if (d->p[0] != 'S')
		return 0;
	for (size_t i = 0; i < sizeof ab / sizeof *ab; i++)
		if (d->p[1] == ab[i].c) {
			dm_add(d, ab[i].text);
			d->id = ab[i].id;
			d->id_len = strlen(ab[i].id);
			d->p += 2;
			return 1;
		}
	return 0;
}

/* <nested-name>: N [cv] [ref] components E. */
static void dm_nested(struct dm *d)
{
	int first = 1;
	d->p++;
	while (*d->p == 'r' || *d->p == 'V' || *d->p == 'K')
		d->p++;
	if (*d->p == 'R' || *d->p == 'O')
		d->p++;
	if (d->p[0] == 'S' && d->p[1] == 't') {
		dm_add(d, "std");
		d->p += 2;
		first = 0;
	} else if (dm_std(d)) {
		first = 0;
	}
	while (!d->bad && *d->p != 'E') {
		if (!*d->p) {
			d->bad = 1;
			return;
		}
		if (*d->p == 'I') {
			if (first) {
				d->bad = 1;
				return;
			}
			dm_args(d);
			continue;
		}
		if (!first)
			dm_add(d, "::");
		first = 0;
		dm_unqualified(d);
	}
	d->p++;
}

/* A compiler's clone suffix, ".constprop.0.isra.0", as c++filt writes
 * it: " [clone .constprop.0] [clone .isra.0]". */
static void dm_clones(struct dm *d)
{
	while (*d->p == '.' && !d->bad) {
		const char *s = d->p++;
		while ((*d->p >= 'a' && *d->p <= 'z') || (*d->p >= 'A' && *d->p <= 'Z') ||
		       *d->p == '_')
			d->p++;
		while (d->p[0] == '.' && dm_digit(d->p[1])) {
			d->p++;
			while (dm_digit(*d->p))
				d->p++;
		}
		if (d->p == s + 1) {
			d->bad = 1;
			return;
		}
		dm_add(d, " [clone ");
		dm_add_n(d, s, (size_t)(d->p - s));
		dm_add(d, "]");
	}
}

ssize_t demangle_short(const char *mangled, char *out, size_t cap)
{
	struct dm d = { .p = mangled, .out = out, .cap = cap };
	if (!cap || strncmp(mangled, "_Z", 2) != 0)
		return -1;
	d.p += 2;
	if (*d.p == 'L') /* internal linkage (GCC's static functions) */
		d.p++;
	if (*d.p == 'N') {
		dm_nested(&d);
	} else if (d.p[0] == 'S' && d.p[1] == 't') {
		dm_add(&d, "std::");
		d.p += 2;
		dm_unqualified(&d);
	} else if (!dm_std(&d)) {
		dm_unqualified(&d);
	}
	if (!d.bad && *d.p == 'I')
		dm_args(&d);
	/* the parameters (and a template's return type) are not named: step
	 * to a clone suffix, which a mangled name never holds before it */
	if (!d.bad) {
		const char *dot = strchr(d.p, '.');
		d.p = dot ? dot : d.p + strlen(d.p);
		dm_clones(&d);
	}
	if (d.bad || *d.p)
		return -1;
	out[d.len] = '\0';
	return (ssize_t)d.len;
}
