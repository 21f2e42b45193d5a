/* cmd_plot.c: `memsup plot`, the front end (commands.h); the drawing is
 * view/plot.h. */
#include "commands.h"
#include "evidence/files.h"
#include "base/number.h"
#include "view/plot.h"
#include "view/svg.h"
#include "subcmd.h"

#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static const char plot_usage[] =
	"usage: memsup plot DIR [--width N] [--height N] [-o FILE|-]\n"
	"Draw the evidence directory DIR as an SVG memory timeline: DIR/" EVIDENCE_TIMELINE_SVG "\n"
	"(replaced), or FILE, or stdout with -o -.\n"
	"  --width N    picture width in pixels (320..8192, default 960)\n"
	"  --height N   picture height in pixels (240..8192, default 540)\n"
	"  -o FILE      write FILE instead of DIR/" EVIDENCE_TIMELINE_SVG "; - for stdout\n"
	"  -h, --help   this help\n";

struct plot_args {
	unsigned width, height;    /* 0: the default */
	const char *out;           /* -o; NULL: DIR/timeline.svg */
};

static int parse_dim(const struct subcmd *cmd, const char *opt, const char *val, unsigned lo,
		     unsigned hi, unsigned *out)
{
	char msg[512], range[64];
	uint64_t v;
	int rc = number_count(val, lo, hi, &v);
	if (rc < 0) {
		snprintf(range, sizeof range, "a whole number from %u to %u", lo, hi);
		return subcmd_bad(cmd, "%s", number_message(msg, sizeof msg, opt, val, rc, range));
	}
	*out = (unsigned)v;
	return 0;
}

static int set_width(const struct subcmd *cmd, void *ctx, const char *v)
{
	struct plot_args *a = ctx;
	return parse_dim(cmd, "--width", v, SVG_MIN_WIDTH, SVG_MAX_WIDTH, &a->width);
}

static int set_height(const struct subcmd *cmd, void *ctx, const char *v)
{
	struct plot_args *a = ctx;
	return parse_dim(cmd, "--height", v, SVG_MIN_HEIGHT, SVG_MAX_HEIGHT, &a->height);
}

static int set_out(const struct subcmd *cmd, void *ctx, const char *v)
{
	struct plot_args *a = ctx;
	if (!*v)
		return subcmd_bad(cmd, "-o: the file name is empty");
	a->out = v;
	return 0;
}

static const struct subcmd_opt plot_opts[] = {
	{ .name = "--width", .kind = SUBCMD_CALL, .set = set_width },
	{ .name = "--height", .kind = SUBCMD_CALL, .set = set_height },
	{ .name = "-o", .kind = SUBCMD_CALL, .set = set_out,
	  .missing = "-o needs a FILE (or - for stdout)" },
	{ .name = NULL },
};

static const struct subcmd plot_cmd = {
	.name = "plot",
	.usage = plot_usage,
	.opts = plot_opts,
	.unknown = "unknown option '%s'",
	.extra = "one DIR only ('%s' is extra)",
	.flags = SUBCMD_USAGE_ON_UNKNOWN,
};

int plot_main(int argc, char **argv)
{
	struct plot_args a = { 0 };
	char *dir = NULL;
	size_t n;
	int rc = subcmd_parse(&plot_cmd, argc, argv, &a, &dir, 1, &n);
	if (rc != SUBCMD_CONTINUE)
		return rc;
	if (!dir)
		return subcmd_bad_usage(&plot_cmd, "which evidence directory?");
	char err[512];
	if (!a.out) {
		if (plot_write_dir(-1, dir, a.width, a.height, err, sizeof err) < 0) {
			fprintf(stderr, "memsup plot: %s\n", err);
			return 125;
		}
		return 0;
	}
	int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0) {
		fprintf(stderr, "memsup plot: %s: %s\n", dir, strerror(errno));
		return 125;
	}
	struct svg_buf b = { 0 };
	rc = plot_render(dfd, a.width, a.height, &b, err, sizeof err);
	close(dfd);
	if (rc < 0) {
		fprintf(stderr, "memsup plot: %s: %s\n", dir, err);
		svg_buf_free(&b);
		return 125;
	}
	rc = svg_write_path(a.out, &b);
	svg_buf_free(&b);
	if (rc < 0) {
		fprintf(stderr, "memsup plot: %s: %s\n", a.out, strerror(-rc));
		return 125;
	}
	return 0;
}
