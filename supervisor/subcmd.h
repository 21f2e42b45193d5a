/* subcmd.h: the command line of memsup's subcommands (plot, flame, report,
 * diff), parsed from a table that each one declares.
 *
 * subcmd_parse() walks argv[1..] in order and does what they all share:
 *
 *   -h, --help            the command's usage on stdout; parsing stops
 *   --                    every later word is an operand
 *   --NAME VALUE, --NAME=VALUE
 *                         a long option's value; a short one ("-o") takes
 *                         only "-o VALUE"; the value is the next word
 *                         whatever it is ("--sort --csv" sorts by "--csv")
 *   -WORD                 an option no entry names: "unknown option"
 *   -, and any word not starting with '-'
 *                         an operand
 *   a value missing at the end of argv: "NAME needs a value", or the
 *   entry's own words
 *   an operand past the caller's room for them: the command's "extra" line
 *
 * Options may come anywhere before "--", between operands; the last of a
 * repeated option wins.  Every usage error is one line on stderr,
 * "memsup NAME: WHAT", then the command's tail (see struct subcmd), and
 * exit status 125.  What a combination of options means, and how many
 * operands are too few, is the front end's to check after parsing (it
 * knows which error should win), with subcmd_bad() for the same form.
 *
 * Nothing here opens, creates or exits; the only side effects are the
 * entries' targets, their handlers' and the messages.
 */
#ifndef MEMSUP_SUBCMD_H
#define MEMSUP_SUBCMD_H

#include <stddef.h>

/* Bad usage (and, by memsup's convention, any memsup error). */
#define SUBCMD_EXIT_USAGE 125
/* subcmd_parse(): the operands are in, go on. */
#define SUBCMD_CONTINUE (-1)

struct subcmd;

enum subcmd_kind {
	SUBCMD_FLAG,   /* no value: sets the int at offset to 1 */
	SUBCMD_STRING, /* a value: stored as the const char * at offset */
	SUBCMD_CALL,   /* a value: handed to set() */
};

/* What a missing value (the option is argv's last word) says:
 * SUBCMD_MISSING_EMPTY hands set() "" instead, so that the handler's own
 * words for an empty value serve for both. */
#define SUBCMD_MISSING_EMPTY ((const char *)1)

struct subcmd_opt {
	const char *name;          /* "--width", "-o" */
	enum subcmd_kind kind;
	size_t offset;             /* FLAG, STRING: the target within ctx */
	/* CALL: 0, or an exit status after a message (subcmd_bad). */
	int (*set)(const struct subcmd *cmd, void *ctx, const char *value);
	const char *missing;       /* NULL: "NAME needs a value"; else the
				      line itself, or SUBCMD_MISSING_EMPTY */
};

/* subcmd flags */
#define SUBCMD_USAGE_ON_UNKNOWN 1u /* the usage follows an unknown option's line */
#define SUBCMD_HELP_FLUSHED     2u /* --help: 125 when stdout cannot take it */

struct subcmd {
	const char *name;          /* "plot": lines start "memsup plot: " */
	const char *usage;         /* for --help (and SUBCMD_USAGE_ON_UNKNOWN) */
	const struct subcmd_opt *opts; /* ends with a NULL name */
	const char *unknown;       /* the unknown-option line; "%s" stands for
				      the word (the only thing expanded) */
	const char *extra;         /* the line for one operand too many; "%s";
				      NULL when the caller has room for all */
	const char *tail;          /* after every usage error's line, or NULL */
	unsigned flags;
};

/* Parse argv[1..] (argv[0] is the subcommand's name) into ctx and
 * operands[0..*n_operands), at most cap of them (pointers into argv).
 * Returns SUBCMD_CONTINUE, or the exit status the front end returns at
 * once: 0 after --help, 125 after a usage error's message. */
int subcmd_parse(const struct subcmd *cmd, int argc, char **argv, void *ctx,
		 char **operands, size_t cap, size_t *n_operands);

/* A usage error: "memsup NAME: " WHAT "\n", the tail; returns 125. */
int subcmd_bad(const struct subcmd *cmd, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* The same line followed by the command's usage (no tail); returns 125. */
int subcmd_bad_usage(const struct subcmd *cmd, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

#endif /* MEMSUP_SUBCMD_H */
