/* cmd_diff.c: `memsup diff`, the front end (commands.h); the gate itself
 * is view/diff.h. */
#include "commands.h"
#include "evidence/files.h"
#include "base/number.h"
#include "view/diff.h"
#include "subcmd.h"

#include <errno.h>
#include <limits.h>
#include <stddef.h>
#include <stdio.h>

static const char diff_usage[] =
	"Usage: memsup diff [OPTIONS] BASE NEW\n"
	"A regression gate: compare the run NEW with the baseline BASE.  Each is an\n"
	"evidence directory, or (BASE) the one-run array of `memsup report --json`,\n"
	"or both are directories of runs (a sweep), matched by their --meta labels.\n"
	"Compared: the answer (peak_mb), each process, matched by its command\n"
	"line, its parent's program and its rank among equal ones, then those left\n"
	"over by their program, the call sites (" EVIDENCE_STACKS "), each process's at\n"
	"its own peak, matched by their symbolized stack and summed, and the\n"
	"heap each process, each site and the tree still held when they ended\n"
	"(a leak that moves no peak).  A sampled site regresses only when its\n"
	"growth is also more than 3 standard errors of the two runs' estimates:\n"
	"what two runs of one program differ by from sampling alone is noise.\n"
	"\n"
	"Options:\n"
	"      --max-increase LIMIT  how much a figure may grow: a percent (5%) or\n"
	"                            a size (20MB, 1GB; decimal, as the evidence);\n"
	"                            default " DIFF_DEFAULT_LIMIT "\n"
	"      --process-max-increase LIMIT  the same for each process and site;\n"
	"                            default: --max-increase\n"
	"      --floor MB            a process regresses only when it also grew by\n"
	"                            at least MB (default 1), so that tiny ones'\n"
	"                            noise never fails the gate\n"
	"      --json                the comparison as one JSON object on stdout\n"
	"      --junit FILE          also write it as JUnit XML to FILE (a failed\n"
	"                            test case per regression)\n"
	"  -h, --help                show this help and exit\n"
	"\n"
	"Exit status: 0 no regression; 1 a regression; 125 bad usage or input (a\n"
	"missing or broken baseline too: never a pass).  See memsup(1), DIFF.\n";

struct diff_args {
	struct diff_opts o;
	int proc_lim_set;          /* --process-max-increase given */
};

/* --max-increase, --process-max-increase */
static int set_limit(const struct subcmd *cmd, const char *opt, const char *v,
		     struct diff_limit *lim)
{
	int rc = diff_limit_parse(v, lim);
	if (rc < 0)
		return subcmd_bad(cmd, "%s: '%s' is %s", opt, v,
				  rc == -ERANGE ? "out of range (at most 1000000% or 1000000000MB)"
						: "not a limit (a percent like 5% or a size like 20MB)");
	return 0;
}

static int set_max(const struct subcmd *cmd, void *ctx, const char *v)
{
	struct diff_args *a = ctx;
	return set_limit(cmd, "--max-increase", v, &a->o.lim);
}

static int set_proc_max(const struct subcmd *cmd, void *ctx, const char *v)
{
	struct diff_args *a = ctx;
	a->proc_lim_set = 1;
	return set_limit(cmd, "--process-max-increase", v, &a->o.proc_lim);
}

static int set_floor(const struct subcmd *cmd, void *ctx, const char *v)
{
	struct diff_args *a = ctx;
	char msg[512];
	int rc = number_real(v, 0, 0, 1e9, &a->o.floor_mb);
	if (rc < 0)
		return subcmd_bad(cmd, "%s", number_message(msg, sizeof msg, "floor", v, rc,
							     "0 to 1000000000 MB"));
	return 0;
}

static int set_junit(const struct subcmd *cmd, void *ctx, const char *v)
{
	struct diff_args *a = ctx;
	if (!*v)
		return subcmd_bad(cmd, "--junit needs a FILE");
	a->o.junit = v;
	return 0;
}

/* A missing value reads as an empty one: each says what it needs. */
static const struct subcmd_opt diff_opts[] = {
	{ .name = "--json", .kind = SUBCMD_FLAG, .offset = offsetof(struct diff_args, o.json) },
	{ .name = "--max-increase", .kind = SUBCMD_CALL, .set = set_max,
	  .missing = SUBCMD_MISSING_EMPTY },
	{ .name = "--process-max-increase", .kind = SUBCMD_CALL, .set = set_proc_max,
	  .missing = SUBCMD_MISSING_EMPTY },
	{ .name = "--floor", .kind = SUBCMD_CALL, .set = set_floor, .missing = SUBCMD_MISSING_EMPTY },
	{ .name = "--junit", .kind = SUBCMD_CALL, .set = set_junit, .missing = SUBCMD_MISSING_EMPTY },
	{ .name = NULL },
};

static const struct subcmd diff_cmd = {
	.name = "diff",
	.usage = diff_usage,
	.opts = diff_opts,
	.unknown = "unknown option '%s' (see memsup diff --help)",
	.extra = "one BASE and one NEW, not also '%s'",
	.flags = SUBCMD_HELP_FLUSHED,
};

int diff_main(int argc, char **argv)
{
	struct diff_args a = { .o = { .floor_mb = DIFF_DEFAULT_FLOOR_MB } };
	char *paths[2];
	size_t n_paths;

	diff_limit_parse(DIFF_DEFAULT_LIMIT, &a.o.lim);
	int rc = subcmd_parse(&diff_cmd, argc, argv, &a, paths, 2, &n_paths);
	if (rc != SUBCMD_CONTINUE)
		return rc;
	if (n_paths != 2)
		return subcmd_bad(&diff_cmd, "needs BASE and NEW (see memsup diff --help)");
	if (!a.proc_lim_set)
		a.o.proc_lim = a.o.lim;

	/* room for the longest line: three paths and a label */
	char err[4 * PATH_MAX];
	rc = diff_gate(paths[0], paths[1], &a.o, err, sizeof err);
	if (rc < 0) {
		fprintf(stderr, "memsup diff: %s\n", err);
		return 125;
	}
	return rc;
}
