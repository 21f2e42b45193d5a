/* subcmd.c: the subcommands' table-driven option parser (see subcmd.h). */
#include "subcmd.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "invariant.h"

static void bad_line(const struct subcmd *cmd, const char *fmt, va_list ap)
{
	fprintf(stderr, "memsup %s: ", cmd->name);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
}

int subcmd_bad(const struct subcmd *cmd, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	bad_line(cmd, fmt, ap);
	va_end(ap);
	if (cmd->tail)
		fputs(cmd->tail, stderr);
	return SUBCMD_EXIT_USAGE;
}

int subcmd_bad_usage(const struct subcmd *cmd, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	bad_line(cmd, fmt, ap);
	va_end(ap);
	fputs(cmd->usage, stderr);
	return SUBCMD_EXIT_USAGE;
}

/* A line of the command's (unknown, extra): its "%s" is the word.  The
 * template is data, not a format: nothing else in it is expanded.  usage:
 * the command's usage follows, instead of its tail. */
static int bad_word(const struct subcmd *cmd, const char *tmpl, const char *word, int usage)
{
	/* a command that promised room for every operand, and had none */
	MT_ASSERT_MSG(tmpl != NULL, "a line for every usage error the table allows");
	if (!tmpl)
		tmpl = "'%s' is one operand too many";
	const char *at = strstr(tmpl, "%s");
	if (!at)
		at = tmpl + strlen(tmpl);
	int len = (int)(at - tmpl);
	const char *rest = *at ? at + 2 : at;
	return usage ? subcmd_bad_usage(cmd, "%.*s%s%s", len, tmpl, word, rest)
		     : subcmd_bad(cmd, "%.*s%s%s", len, tmpl, word, rest);
}

/* The entry word names, and where its value is: *value NULL for a flag or
 * a value in the next word, else the text after "--NAME=".  NULL: none. */
static const struct subcmd_opt *find(const struct subcmd *cmd, const char *word,
				     const char **value)
{
	*value = NULL;
	for (const struct subcmd_opt *o = cmd->opts; o->name; o++) {
		size_t n = strlen(o->name);
		if (strncmp(word, o->name, n) != 0)
			continue;
		if (word[n] == '\0')
			return o;
		/* --NAME=VALUE: long options that take a value only */
		if (word[n] == '=' && o->kind != SUBCMD_FLAG && o->name[1] == '-') {
			*value = word + n + 1;
			return o;
		}
	}
	return NULL;
}

/* One option and its value (NULL: missing); 0 or an exit status. */
static int apply(const struct subcmd *cmd, const struct subcmd_opt *o, void *ctx,
		 const char *value)
{
	if (o->kind == SUBCMD_FLAG) {
		*(int *)((char *)ctx + o->offset) = 1;
		return 0;
	}
	if (!value && o->missing != SUBCMD_MISSING_EMPTY)
		return o->missing ? subcmd_bad(cmd, "%s", o->missing)
				  : subcmd_bad(cmd, "%s needs a value", o->name);
	if (!value)
		value = "";
	if (o->kind == SUBCMD_STRING) {
		*(const char **)(void *)((char *)ctx + o->offset) = value;
		return 0;
	}
	return o->set(cmd, ctx, value);
}

int subcmd_parse(const struct subcmd *cmd, int argc, char **argv, void *ctx,
		 char **operands, size_t cap, size_t *n_operands)
{
	*n_operands = 0;
	for (int i = 1, opts = 1; i < argc; i++) {
		const char *a = argv[i], *value;
		const struct subcmd_opt *o;
		if (!opts || a[0] != '-' || !a[1]) {
			if (*n_operands == cap)
				return bad_word(cmd, cmd->extra, a, 0);
			operands[(*n_operands)++] = argv[i];
		} else if (strcmp(a, "--") == 0) {
			opts = 0;
		} else if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
			fputs(cmd->usage, stdout);
			if (cmd->flags & SUBCMD_HELP_FLUSHED)
				return fflush(stdout) == 0 ? 0 : SUBCMD_EXIT_USAGE;
			return 0;
		} else if ((o = find(cmd, a, &value))) {
			if (!value && o->kind != SUBCMD_FLAG && i + 1 < argc)
				value = argv[++i];
			int rc = apply(cmd, o, ctx, value);
			if (rc)
				return rc;
		} else {
			return bad_word(cmd, cmd->unknown, a,
					(cmd->flags & SUBCMD_USAGE_ON_UNKNOWN) != 0);
		}
	}
	return SUBCMD_CONTINUE;
}
