/* test_subcmd.c: the subcommands' option parser (subcmd.h) on a table of
 * its own: each form of an option, "--", operands, and each usage error
 * with its line on stderr and status 125 (stderr read back from a file). */
#include <criterion/criterion.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "subcmd.h"

struct ctx {
	int quiet;
	const char *out;
	int width;
};

static int set_width(const struct subcmd *cmd, void *c, const char *v)
{
	char *end;
	long w = strtol(v, &end, 10);
	if (!*v || *end || w < 1)
		return subcmd_bad(cmd, "--width: '%s' is not a positive number", v);
	((struct ctx *)c)->width = (int)w;
	return 0;
}

static const struct subcmd_opt opts[] = {
	{ "--quiet", SUBCMD_FLAG, offsetof(struct ctx, quiet), NULL, NULL },
	{ "-o", SUBCMD_STRING, offsetof(struct ctx, out), NULL, NULL },
	{ "--width", SUBCMD_CALL, 0, set_width, NULL },
	{ NULL, 0, 0, NULL, NULL },
};

static const struct subcmd cmd = {
	"try", "Usage: memsup try [--quiet] [-o FILE] [--width N] DIR\n", opts,
	"unknown option '%s'", "one DIR only ('%s' is extra)", NULL, 0,
};

/* Parse argv (NULL-terminated, argv[0] "try") with stderr into a file;
 * the status, the context, the operands and what stderr said. */
struct parsed {
	int status;
	struct ctx c;
	char *ops[4];
	size_t n;
	char err[512];
};

static struct parsed parse(const char *const *argv)
{
	struct parsed p;
	memset(&p, 0, sizeof p);
	int argc = 0;
	while (argv[argc])
		argc++;
	char path[] = "/tmp/test_subcmd.XXXXXX";
	int fd = mkstemp(path);
	cr_assert(fd >= 0);
	fflush(stderr);
	int saved = dup(2);
	dup2(fd, 2);
	p.status = subcmd_parse(&cmd, argc, (char **)argv, &p.c, p.ops, 1, &p.n);
	fflush(stderr);
	dup2(saved, 2);
	close(saved);
	ssize_t got = pread(fd, p.err, sizeof p.err - 1, 0);
	p.err[got > 0 ? got : 0] = '\0';
	close(fd);
	unlink(path);
	return p;
}

Test(subcmd, forms_of_an_option)
{
	const char *a[] = { "try", "--width=80", "-o", "x.svg", "--quiet", "dir", NULL };
	struct parsed p = parse(a);
	cr_assert_eq(p.status, SUBCMD_CONTINUE, "%d: %s", p.status, p.err);
	cr_assert_eq(p.c.width, 80);
	cr_assert_str_eq(p.c.out, "x.svg");
	cr_assert_eq(p.c.quiet, 1);
	cr_assert_eq(p.n, 1);
	cr_assert_str_eq(p.ops[0], "dir");
	cr_assert_str_eq(p.err, "");
	/* --NAME VALUE; the last one wins; options after an operand */
	const char *b[] = { "try", "dir", "--width", "10", "--width", "12", NULL };
	p = parse(b);
	cr_assert_eq(p.status, SUBCMD_CONTINUE, "%s", p.err);
	cr_assert_eq(p.c.width, 12);
	cr_assert_str_eq(p.ops[0], "dir");
}

Test(subcmd, after_dashdash_every_word_is_an_operand)
{
	const char *a[] = { "try", "--", "--quiet", NULL };
	struct parsed p = parse(a);
	cr_assert_eq(p.status, SUBCMD_CONTINUE, "%s", p.err);
	cr_assert_eq(p.c.quiet, 0);
	cr_assert_eq(p.n, 1);
	cr_assert_str_eq(p.ops[0], "--quiet");
	const char *b[] = { "try", "-", NULL };
	p = parse(b);
	cr_assert_eq(p.status, SUBCMD_CONTINUE);
	cr_assert_str_eq(p.ops[0], "-", "'-' is an operand");
}

Test(subcmd, usage_errors_name_the_word_and_exit_125)
{
	static const struct {
		const char *argv[5];
		const char *says;
	} bad[] = {
		{ { "try", "--bogus", NULL }, "memsup try: unknown option '--bogus'\n" },
		{ { "try", "--width", NULL }, "memsup try: --width needs a value\n" },
		{ { "try", "--width=-3", NULL }, "memsup try: --width: '-3' is not a positive number\n" },
		{ { "try", "a", "b", NULL }, "memsup try: one DIR only ('b' is extra)\n" },
		{ { "try", "-o", NULL }, "memsup try: -o needs a value\n" },
	};
	for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
		struct parsed p = parse(bad[i].argv);
		cr_assert_eq(p.status, SUBCMD_EXIT_USAGE, "%s: %d", bad[i].argv[1], p.status);
		cr_assert_str_eq(p.err, bad[i].says, "%s", bad[i].argv[1]);
	}
}

Test(subcmd, help_stops_with_0)
{
	const char *a[] = { "try", "--help", "--bogus", NULL };
	fflush(stdout);
	int saved = dup(1), null = open("/dev/null", O_WRONLY);
	dup2(null, 1);
	struct parsed p = parse(a);
	fflush(stdout);
	dup2(saved, 1);
	close(saved);
	close(null);
	cr_assert_eq(p.status, 0);
	cr_assert_str_eq(p.err, "", "nothing after --help is looked at");
}
