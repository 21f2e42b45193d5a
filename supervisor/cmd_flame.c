/* cmd_flame.c: `memsup flame`, the front end (commands.h); the drawing is
 * view/flame.h. */
#include "commands.h"
#include "evidence/files.h"
#include "base/number.h"
#include "view/flame.h"
#include "view/svg.h"
#include "subcmd.h"

#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static const char flame_usage[] =
	"usage: memsup flame DIR [--at total|heap|rss] [--width N] [-o FILE|-] [--folded FILE|-]\n"
	"Draw the tree's heap and mappings at its peak by call site, from DIR/" EVIDENCE_STACKS ":\n"
	"an icicle graph in DIR/" EVIDENCE_FLAME_SVG " and the folded stacks (\"frame;frame;frame\n"
	"bytes\", for flamegraph.pl and the like) in DIR/" EVIDENCE_FLAME_FOLDED " (both replaced), or\n"
	"FILE.\n"
	"  --at total    the tree's peak of heap plus mappings, what the answer counts: the\n"
	"                sample with the largest traced heap and mappings summed, each\n"
	"                process that peaked next to it at its exact peak (default)\n"
	"  --at heap     the tree's heap peak: the sample with the largest traced heap,\n"
	"                each process that peaked next to it at its exact peak\n"
	"  --at rss      the sample of the tree's RSS peak\n"
	"  --width N     picture width in pixels (320..8192, default 1200)\n"
	"  -o FILE       write the picture to FILE instead; - for stdout\n"
	"  --folded FILE write the folded stacks to FILE instead; - for stdout\n"
	"  -h, --help    this help\n";

struct flame_args {
	enum flame_at at;          /* --at */
	unsigned width;            /* 0: the default */
	const char *out;           /* -o; NULL: DIR/flame.svg */
	const char *fold;          /* --folded; NULL: DIR/flame.folded */
};

static int set_at(const struct subcmd *cmd, void *ctx, const char *v)
{
	struct flame_args *a = ctx;
	if (strcmp(v, "total") == 0)
		a->at = FLAME_AT_TOTAL;
	else if (strcmp(v, "heap") == 0)
		a->at = FLAME_AT_HEAP;
	else if (strcmp(v, "rss") == 0)
		a->at = FLAME_AT_RSS;
	else
		return subcmd_bad(cmd, "--at: '%s' is none of total, heap and rss", v);
	return 0;
}

static int set_width(const struct subcmd *cmd, void *ctx, const char *v)
{
	struct flame_args *a = ctx;
	char msg[512];
	uint64_t n;
	int e = number_count(v, SVG_MIN_WIDTH, SVG_MAX_WIDTH, &n);
	if (e < 0)
		return subcmd_bad(cmd, "%s", number_message(msg, sizeof msg, "--width", v, e,
							     "a whole number from 320 to 8192"));
	a->width = (unsigned)n;
	return 0;
}

#define FLAME_NO_OUT "-o needs a FILE (or - for stdout)"

static int set_out(const struct subcmd *cmd, void *ctx, const char *v)
{
	struct flame_args *a = ctx;
	if (!*v)
		return subcmd_bad(cmd, FLAME_NO_OUT);
	a->out = v;
	return 0;
}

static const struct subcmd_opt flame_opts[] = {
	{ .name = "--at", .kind = SUBCMD_CALL, .set = set_at },
	{ .name = "--width", .kind = SUBCMD_CALL, .set = set_width },
	{ .name = "--folded", .kind = SUBCMD_STRING, .offset = offsetof(struct flame_args, fold) },
	{ .name = "-o", .kind = SUBCMD_CALL, .set = set_out, .missing = FLAME_NO_OUT },
	{ .name = NULL },
};

static const struct subcmd flame_cmd = {
	.name = "flame",
	.usage = flame_usage,
	.opts = flame_opts,
	.unknown = "unknown option '%s'",
	.extra = "one DIR only ('%s' is extra)",
	.flags = SUBCMD_USAGE_ON_UNKNOWN,
};

int flame_main(int argc, char **argv)
{
	struct flame_args a = { 0 };
	char *dir = NULL;
	size_t n;
	int rc = subcmd_parse(&flame_cmd, argc, argv, &a, &dir, 1, &n);
	if (rc != SUBCMD_CONTINUE)
		return rc;
	if (!dir)
		return subcmd_bad_usage(&flame_cmd, "which evidence directory?");
	if (a.fold && !*a.fold)
		return subcmd_bad(&flame_cmd, "--folded: the file name is empty");
	int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0) {
		fprintf(stderr, "memsup flame: %s: %s\n", dir, strerror(errno));
		return 125;
	}
	struct svg_buf svg = { 0 }, folded = { 0 };
	char err[512];
	rc = flame_render_both(dfd, a.at, a.width, &svg, &folded, err, sizeof err);
	if (rc < 0) {
		fprintf(stderr, "memsup flame: %s: %s\n", dir, err);
	} else {
		const char *what = a.out ? a.out : EVIDENCE_FLAME_SVG;
		rc = a.out ? svg_write_path(a.out, &svg) : svg_write_atomic(dfd, what, &svg);
		if (rc == 0) {
			what = a.fold ? a.fold : EVIDENCE_FLAME_FOLDED;
			rc = a.fold ? svg_write_path(a.fold, &folded)
				    : svg_write_atomic(dfd, what, &folded);
		}
		if (rc < 0)
			fprintf(stderr, "memsup flame: %s: %s\n", what, strerror(-rc));
	}
	close(dfd);
	svg_buf_free(&svg);
	svg_buf_free(&folded);
	return rc < 0 ? 125 : 0;
}
