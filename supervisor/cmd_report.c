/* cmd_report.c: `memsup report`, the front end (commands.h); the report
 * itself is view/report.h.  Options are all parsed before anything is
 * printed, so a bad option leaves stdout empty. */
#include "base/cleanup.h"
#include "commands.h"
#include "view/report.h"
#include "subcmd.h"

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>

static const char report_usage[] =
	"Usage: memsup report [OPTIONS] DIR...\n"
	"One row per memsup evidence directory: meta, command, exit status, reason,\n"
	"wall time, the peak (the most the tree held at once, and how it was\n"
	"measured), peak heap, the largest process (by VmHWM), the number of\n"
	"blind-spot findings and the OOM kills (how many, the first victim and\n"
	"whose limit fired), with a status: ok, running, start failed: WHY (the\n"
	"command never ran: no peak) or broken: WHY.\n"
	"\n"
	"Options:\n"
	"      --csv          CSV (RFC 4180), one column per meta key (meta:KEY)\n"
	"      --json         a JSON array of objects\n"
	"      --sort KEY     order the rows by KEY: dir, reason or meta:NAME\n"
	"                     (ascending), peak, heap, wall or exit (descending);\n"
	"                     rows without the value come last; default: the\n"
	"                     order of the DIR arguments\n"
	"      --reverse      reverse the order that --sort gives\n"
	"  -h, --help         show this help and exit\n"
	"\n"
	"Exit status: 0 every row ok or running; 1 some row broken or its command\n"
	"could not start; 125 bad usage.\n"
	"See memsup-report(1).\n";

struct report_args {
	struct report_opts o;
	int csv, json;
};

static int set_sort(const struct subcmd *cmd, void *ctx, const char *v)
{
	struct report_args *a = ctx;
	if (report_parse_sort(&a->o, v) < 0)
		return subcmd_bad(cmd, "--sort: unknown key '%s' (one of dir, peak, heap, wall, exit, "
				  "reason, meta:NAME)", v);
	return 0;
}

static const struct subcmd_opt report_opts[] = {
	{ .name = "--csv", .kind = SUBCMD_FLAG, .offset = offsetof(struct report_args, csv) },
	{ .name = "--json", .kind = SUBCMD_FLAG, .offset = offsetof(struct report_args, json) },
	{ .name = "--reverse", .kind = SUBCMD_FLAG,
	  .offset = offsetof(struct report_args, o.reverse) },
	{ .name = "--sort", .kind = SUBCMD_CALL, .set = set_sort,
	  .missing = "--sort needs a KEY (dir, peak, heap, wall, exit, reason or meta:NAME)" },
	{ .name = NULL },
};

static const struct subcmd report_cmd = {
	.name = "report",
	.usage = report_usage,
	.opts = report_opts,
	.unknown = "unknown option '%s'",
	.extra = NULL, /* room for every word */
	.tail = "Try 'memsup report --help'.\n",
	.flags = SUBCMD_HELP_FLUSHED,
};

int report_main(int argc, char **argv)
{
	struct report_args a = { .o = { .format = REPORT_TABLE, .key = REPORT_KEY_NONE } };
	size_t cap = (size_t)(argc > 0 ? argc : 1), n_dirs;
	char **dirs CLEANUP_FREE = calloc(cap, sizeof *dirs);

	if (!dirs) {
		fputs("memsup report: out of memory\n", stderr);
		return 125;
	}
	int rc = subcmd_parse(&report_cmd, argc, argv, &a, dirs, cap, &n_dirs);
	if (rc != SUBCMD_CONTINUE)
		return rc;
	if (a.csv && a.json)
		return subcmd_bad(&report_cmd, "--csv and --json exclude each other: choose one");
	if (!n_dirs)
		return subcmd_bad(&report_cmd, "no evidence directory given");
	a.o.format = a.csv ? REPORT_CSV : a.json ? REPORT_JSON : REPORT_TABLE;

	char err[256];
	rc = report_write(dirs, n_dirs, &a.o, err, sizeof err);
	if (rc < 0) {
		fprintf(stderr, "memsup report: %s\n", err);
		return 125;
	}
	return rc;
}
