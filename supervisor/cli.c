/* cli.c: option parsing and validation for memsup (pure; see cli.h). */
#include "cli.h"
#include "evidence/files.h"
#include "base/number.h"

#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

const char cli_help_text[] =
	"Usage: memsup [OPTIONS] [--] COMMAND [ARG...]\n"
	"       memsup plot DIR [--width N] [--height N] [-o FILE|-]\n"
	"       memsup flame DIR [--at total|heap|rss] [--width N] [-o FILE|-]\n"
	"                        [--folded FILE|-]\n"
	"       memsup report [--csv|--json] [--sort KEY] [--reverse] DIR...\n"
	"       memsup diff [OPTIONS] BASE NEW\n"
	"Run COMMAND (in a cgroup of its own where memsup can make one), poll the RSS\n"
	"of its whole process tree, enforce budgets by killing the whole tree, and\n"
	"write an evidence directory (with " EVIDENCE_TIMELINE_SVG ", and " EVIDENCE_FLAME_SVG ": the heap and\n"
	"mappings by call site at the tree's peak of heap plus mappings, the sample\n"
	"where the traced heap and mappings summed largest; the summary's sites are\n"
	"of that moment too).  At a terminal COMMAND is a foreground job\n"
	"there, as a shell runs it; elsewhere it runs in a session of its own and its\n"
	"output passes through memsup and into DIR/" EVIDENCE_STDOUT_LOG ".  `memsup plot` and\n"
	"`memsup flame` redraw a directory's pictures, `memsup report` compares\n"
	"directories and `memsup diff` fails a run that grew past its baseline (see\n"
	"memsup-plot(1), memsup-flame(1), memsup-report(1), memsup(1) DIFF); a\n"
	"COMMAND named plot, flame, report or diff runs as `memsup -- plot ...`.\n"
	"\n"
	"Options:\n"
	"  -o, --out DIR          evidence directory to create (must not exist;\n"
	"                         default ./memsup-YYYYmmdd-HHMMSS-PID)\n"
	"      --wall-s SECONDS   wall-time budget (exit 124 when exceeded)\n"
	"      --rss-mb MB        tree RSS budget in decimal megabytes, polled (exit 123)\n"
	"      --mem-max MB       hard kernel limit on the run's cgroup memory, decimal\n"
	"                         MB: the OOM killer ends the run (exit 123); needs a\n"
	"                         memory cgroup (exit 125 without one)\n"
	"      --max-procs N      process budget: pids.max=N in the run's cgroup (a fork\n"
	"                         refused, or N reached, kills the tree); without one,\n"
	"                         more than N at a sample (exit 122)\n"
	"      --cgroup MODE      auto (default: a cgroup of the run's own where memsup\n"
	"                         can make one -- on cgroup v2 under systemd, in a\n"
	"                         delegated scope it asks systemd for when its own\n"
	"                         cgroup cannot hold the run's -- else the /proc\n"
	"                         scan) or off\n"
	"      --poll-ms MS       sampling period in milliseconds (default 10)\n"
	"      --sparse-ms MS     while the tree's memory is flat, sample every MS\n"
	"                         instead (default 100), doubling up to 1 s while\n"
	"                         it stays flat, waking when the kernel says it\n"
	"                         moved (cgroup v1); 0: every --poll-ms\n"
	"      --grace-s SECONDS  on a budget breach send SIGTERM first and SIGKILL\n"
	"                         after SECONDS (default: SIGKILL at once)\n"
	"  -C, --cwd DIR          run COMMAND in DIR\n"
	"  -e, --env KEY=VALUE    set KEY in COMMAND's environment (repeatable)\n"
	"      --meta KEY=VALUE   store a label in the record (\"meta\"), e.g. a sweep's\n"
	"                         parameters for memsup report (repeatable)\n"
	"      --output MODE      where COMMAND's stdout and stderr go.  Not given, at a\n"
	"                         terminal (memsup's stdin or stdout is one): memsup's\n"
	"                         stdin, stdout and stderr and the terminal, as a\n"
	"                         foreground job (^C, ^Z, window size reach COMMAND);\n"
	"                         not logged; elsewhere tee.  MODE is one of\n"
	"                         tee: to memsup's stdout and stderr, unmerged,\n"
	"                           and into DIR/" EVIDENCE_STDOUT_LOG " (for pipelines, CI logs);\n"
	"                         log: into DIR/" EVIDENCE_STDOUT_LOG " only, exactly interleaved\n"
	"                           (batch runs, sweeps; the Python drop-in's choice);\n"
	"                         inherit: memsup's own stdout and stderr, in a session\n"
	"                           of its own (no controlling terminal); not logged;\n"
	"                         transcript: at a terminal, a pseudo-terminal of its\n"
	"                           own relayed to memsup's (as script(1) does) and\n"
	"                           copied into DIR/" EVIDENCE_STDOUT_LOG " (as --log-max says)\n"
	"      --log-max SIZE     keep at most SIZE bytes of the output in " EVIDENCE_STDOUT_LOG ":\n"
	"                         its first and last half, with a line that says how\n"
	"                         many bytes were left out between them; K, M, G, T\n"
	"                         are 1024-based; 0 keeps none, unlimited all\n"
	"                         (default: 2M with tee and transcript, unlimited\n"
	"                         with log; at a terminal without --output, refused:\n"
	"                         nothing is logged there)\n"
	"      --json             print the record (" EVIDENCE_RESOURCES ") on stdout, after\n"
	"                         what COMMAND wrote there\n"
	"  -q, --quiet            no summary on stderr\n"
	"      --discovery MODE   how descendants are found: scan (ppid scan of /proc),\n"
	"                         children (/proc/PID/task/TID/children files) or\n"
	"                         auto (the default: scan, the cheaper one)\n"
	"      --no-trace         do not inject libmemtrace.so: /proc polling alone\n"
	"                         (default: trace every process image from inside)\n"
	"      --follow-env       MEMTRACE_FOLLOW=1: put the shim back into environments\n"
	"                         the command scrubs (env -i, execve with a new envp)\n"
	"  -h, --help             show this help and exit\n"
	"  -V, --version          show the version and exit\n"
	"\n"
	"Environment: MEMSUP_STAGING_DIR=DIR|off: where the shim's files are made\n"
	"while the run goes on (default: a directory of memsup's own in /dev/shm\n"
	"when it is a tmpfs and the evidence is not on one; off: DIR/records).\n"
	"MEMSUP_DELEGATED=1: the cgroup memsup is in is the one to use; ask systemd\n"
	"for no scope.\n"
	"\n"
	"Exit status: COMMAND's own status; 128+N when signal N ended it;\n"
	"122 process budget exceeded; 123 RSS budget or memory limit exceeded;\n"
	"124 wall budget exceeded; 125 memsup error;\n"
	"126 COMMAND cannot be executed; 127 COMMAND not found;\n"
	"128+N when memsup itself got signal N (INT, TERM, HUP, QUIT; INT and QUIT\n"
	"not while COMMAND has memsup's terminal);\n"
	"137 in the record (supervisor_killed) when memsup was killed outright.\n"
	"See memsup(1).\n";

enum {
	OPT_WALL = 256,
	OPT_RSS,
	OPT_POLL,
	OPT_GRACE,
	OPT_JSON,
	OPT_DISCOVERY,
	OPT_NO_TRACE,
	OPT_FOLLOW_ENV,
	OPT_MAX_PROCS,
	OPT_META,
	OPT_OUTPUT,
	OPT_MEM_MAX,
	OPT_CGROUP,
	OPT_LOG_MAX,
	OPT_SPARSE,
};

static const struct option long_opts[] = {
	{ "out", required_argument, NULL, 'o' },
	{ "wall-s", required_argument, NULL, OPT_WALL },
	{ "rss-mb", required_argument, NULL, OPT_RSS },
	{ "mem-max", required_argument, NULL, OPT_MEM_MAX },
	{ "cgroup", required_argument, NULL, OPT_CGROUP },
	{ "poll-ms", required_argument, NULL, OPT_POLL },
	{ "sparse-ms", required_argument, NULL, OPT_SPARSE },
	{ "max-procs", required_argument, NULL, OPT_MAX_PROCS },
	{ "grace-s", required_argument, NULL, OPT_GRACE },
	{ "cwd", required_argument, NULL, 'C' },
	{ "env", required_argument, NULL, 'e' },
	{ "meta", required_argument, NULL, OPT_META },
	{ "output", required_argument, NULL, OPT_OUTPUT },
	{ "log-max", required_argument, NULL, OPT_LOG_MAX },
	{ "json", no_argument, NULL, OPT_JSON },
	{ "quiet", no_argument, NULL, 'q' },
	{ "discovery", required_argument, NULL, OPT_DISCOVERY },
	{ "no-trace", no_argument, NULL, OPT_NO_TRACE },
	{ "follow-env", no_argument, NULL, OPT_FOLLOW_ENV },
	{ "help", no_argument, NULL, 'h' },
	{ "version", no_argument, NULL, 'V' },
	{ NULL, 0, NULL, 0 },
};

__attribute__((format(printf, 3, 4)))
static int fail(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
	return -1;
}

static const char *long_name(int c)
{
	for (const struct option *o = long_opts; o->name; o++)
		if (o->val == c)
			return o->name;
	return "?";
}

/* The numeric options and their ranges (man/memsup.1 says the same).  The
 * bounds are what the clock and the machine can mean: a wall budget stays
 * far inside the nanosecond clock, a poll period inside what a sample
 * costs and a budget check needs, a process budget inside pid_max. */
static const struct cli_range {
	int opt;
	int whole;            /* a count, not a real number */
	double lo, hi;
	int lo_open;          /* lo itself excluded */
	const char *words;    /* for the error line */
} cli_ranges[] = {
	{ OPT_WALL, 0, 0, 1e8, 1, "more than 0, at most 100000000 seconds" },
	{ OPT_RSS, 0, 0, 1e9, 1, "more than 0, at most 1000000000 MB" },
	/* a limit in bytes, of at least a page */
	{ OPT_MEM_MAX, 0, 0.1, 1e9, 0, "from 0.1 to 1000000000 MB" },
	{ OPT_POLL, 0, 0.1, 60000, 0, "from 0.1 to 60000 milliseconds" },
	{ OPT_SPARSE, 0, 0, 60000, 0, "from 0 (every --poll-ms) to 60000 milliseconds" },
	{ OPT_GRACE, 0, 0, 86400, 1, "more than 0, at most 86400 seconds" },
	{ OPT_MAX_PROCS, 1, 1, 4194304, 0, "a whole number from 1 to 4194304" },
};

/* --wall-s, --rss-mb, --mem-max, --poll-ms, --sparse-ms, --grace-s,
 * --max-procs (number.h). */
static int parse_number(int c, const char *arg, struct sup_options *o, char *err, size_t errlen)
{
	const struct cli_range *r = NULL;
	char name[32];
	uint64_t n = 0;
	double v = 0;
	int rc;
	for (size_t i = 0; i < sizeof cli_ranges / sizeof cli_ranges[0]; i++)
		if (cli_ranges[i].opt == c)
			r = &cli_ranges[i];
	if (!r)
		return fail(err, errlen, "internal: --%s has no range", long_name(c));
	if (r->whole)
		rc = number_count(arg, (uint64_t)r->lo, (uint64_t)r->hi, &n);
	else
		rc = number_real(arg, r->lo, r->lo_open, r->hi, &v);
	snprintf(name, sizeof name, "--%s", long_name(c));
	if (rc < 0) {
		number_message(err, errlen, name, arg, rc, r->words);
		return -1;
	}
	if (c == OPT_WALL)
		o->wall_s = v;
	else if (c == OPT_RSS)
		o->rss_mb = v;
	else if (c == OPT_MEM_MAX)
		o->mem_max_mb = v;
	else if (c == OPT_POLL)
		o->poll_ms = v;
	else if (c == OPT_SPARSE)
		o->sparse_ms = v;
	else if (c == OPT_GRACE)
		o->grace_s = v;
	else
		o->max_procs = (unsigned)n;
	return 0;
}

/* -C: an existing directory, resolved now. */
static int parse_cwd(const char *arg, struct sup_options *o, char *err, size_t errlen)
{
	struct stat st;
	if (!*arg)
		return fail(err, errlen, "--cwd: the directory name is empty");
	if (!realpath(arg, o->cwd))
		return fail(err, errlen, "--cwd: '%s': %s", arg, strerror(errno));
	if (stat(o->cwd, &st) < 0)
		return fail(err, errlen, "--cwd: '%s': %s", arg, strerror(errno));
	if (!S_ISDIR(st.st_mode))
		return fail(err, errlen, "--cwd: '%s' is not a directory", arg);
	return 0;
}

/* The '=' of a KEY=VALUE argument of --`opt` with a non-empty KEY, or NULL
 * with the message in err. */
static const char *key_value(const char *opt, const char *arg, char *err, size_t errlen)
{
	const char *eq = strchr(arg, '=');
	if (!eq)
		fail(err, errlen, "--%s: '%s' is not KEY=VALUE (no '=')", opt, arg);
	else if (eq == arg)
		fail(err, errlen, "--%s: '%s' has an empty KEY", opt, arg);
	return eq && eq != arg ? eq : NULL;
}

/* -e KEY=VALUE */
static int parse_env(char *arg, struct sup_options *o, char *err, size_t errlen)
{
	if (!key_value("env", arg, err, errlen))
		return -1;
	o->env[o->n_env++] = arg;
	return 0;
}

/* --meta KEY=VALUE: the key names a column in memsup report, so it must be
 * there, once, and printable. */
static int parse_meta(char *arg, struct sup_options *o, char *err, size_t errlen)
{
	const char *eq = key_value("meta", arg, err, errlen);
	if (!eq)
		return -1;
	for (const char *k = arg; k < eq; k++)
		if ((unsigned char)*k < 0x20 || *k == 0x7f)
			return fail(err, errlen, "--meta: '%.*s' has a control character in its KEY",
				    (int)(eq - arg), arg);
	for (size_t i = 0; i < o->n_meta; i++)
		if (strncmp(o->meta[i], arg, (size_t)(eq - arg) + 1) == 0)
			return fail(err, errlen, "--meta: KEY '%.*s' is given twice", (int)(eq - arg),
				    arg);
	o->meta[o->n_meta++] = arg;
	return 0;
}

static int parse_cgroup(const char *arg, struct sup_options *o, char *err, size_t errlen)
{
	if (strcmp(arg, "auto") == 0)
		o->cgroup = CONTAIN_AUTO;
	else if (strcmp(arg, "off") == 0)
		o->cgroup = CONTAIN_OFF;
	else
		return fail(err, errlen, "--cgroup: '%s' is not one of auto, off", arg);
	return 0;
}

static int parse_discovery(const char *arg, struct sup_options *o, char *err, size_t errlen)
{
	if (strcmp(arg, "auto") == 0)
		o->discovery = TREE_AUTO;
	else if (strcmp(arg, "children") == 0)
		o->discovery = TREE_CHILDREN;
	else if (strcmp(arg, "scan") == 0)
		o->discovery = TREE_SCAN;
	else
		return fail(err, errlen, "--discovery: '%s' is not one of auto, children, scan", arg);
	return 0;
}

static int parse_output(const char *arg, struct sup_options *o, char *err, size_t errlen)
{
	if (terminal_mode_parse(arg, &o->terminal) == 0) {
		o->output = RELAY_INHERIT; /* no pipe: the transcript has the output */
		return 0;
	}
	if (relay_mode_parse(arg, &o->output) < 0)
		return fail(err, errlen, "--output: '%s' is not one of tee, log, inherit, "
			    "transcript", arg);
	return 0;
}

/* --log-max: a size (number.h) or "unlimited".  The tail's half of it is a
 * ring in memsup's memory, hence the bound. */
#define CLI_LOG_MAX_HI (1ull << 40)

static int parse_log_max(const char *arg, struct sup_options *o, char *err, size_t errlen)
{
	o->log_max_given = 1;
	if (strcmp(arg, "unlimited") == 0) {
		o->log_max = RELAY_LOG_UNLIMITED;
		return 0;
	}
	int rc = number_size(arg, CLI_LOG_MAX_HI, &o->log_max);
	if (rc < 0) {
		number_message(err, errlen, "--log-max", arg, rc,
			       "a size from 0 to 1T, in bytes or with K, M, G, T, or unlimited");
		return -1;
	}
	return 0;
}

/* getopt's ':' (a value is missing) and '?' (an unknown option).  A short
 * option is named by optopt alone: inside a cluster ("-xq") glibc has not
 * advanced optind yet, so argv[optind - 1] is the word BEFORE it (found by
 * tests/fuzz/fuzz_cli).  A long option (optopt 0, or its val >= 256) has
 * been stepped over, so the word the user typed is argv[optind - 1]. */
static int bad_option(int c, char **argv, char *err, size_t errlen)
{
	int named = optopt > 0 && optopt < 256;
	if (c == ':')
		return named ? fail(err, errlen, "option '-%c' needs a value", optopt)
			     : fail(err, errlen, "option '%s' needs a value", argv[optind - 1]);
	return named ? fail(err, errlen, "unknown option '-%c' (see memsup --help)", optopt)
		     : fail(err, errlen, "unknown option '%s' (see memsup --help)", argv[optind - 1]);
}

/* An option that takes one value may be given once: a second one is an
 * error, not a silent override (-e and --meta add, and flags may repeat).
 * given[i] is the value long_opts[i] had. */
static int once_only(int c, const char **given, char *err, size_t errlen)
{
	if (c == 'e' || c == OPT_META)
		return 0;
	for (size_t i = 0; long_opts[i].name; i++) {
		if (long_opts[i].val != c || long_opts[i].has_arg != required_argument)
			continue;
		if (given[i])
			return fail(err, errlen, "--%s is given twice ('%s', then '%s')",
				    long_opts[i].name, given[i], optarg);
		given[i] = optarg;
	}
	return 0;
}

/* One option getopt returned: 0, 1 for -h/-V (parsing stops there), -1 on
 * error. */
static int parse_option(int c, char **argv, struct sup_options *o, char *err, size_t errlen)
{
	switch (c) {
	case 'o':
		if (!*optarg)
			return fail(err, errlen, "--out: the directory name is empty");
		o->out = optarg;
		return 0;
	case OPT_WALL:
	case OPT_RSS:
	case OPT_MEM_MAX:
	case OPT_POLL:
	case OPT_SPARSE:
	case OPT_GRACE:
	case OPT_MAX_PROCS:
		return parse_number(c, optarg, o, err, errlen);
	case 'C':
		return parse_cwd(optarg, o, err, errlen);
	case 'e':
		return parse_env(optarg, o, err, errlen);
	case OPT_META:
		return parse_meta(optarg, o, err, errlen);
	case OPT_JSON:
		o->json = 1;
		return 0;
	case 'q':
		o->quiet = 1;
		return 0;
	case OPT_NO_TRACE:
		o->no_trace = 1;
		return 0;
	case OPT_FOLLOW_ENV:
		o->follow_env = 1;
		return 0;
	case OPT_DISCOVERY:
		return parse_discovery(optarg, o, err, errlen);
	case OPT_OUTPUT:
		o->output_given = 1;
		return parse_output(optarg, o, err, errlen);
	case OPT_LOG_MAX:
		return parse_log_max(optarg, o, err, errlen);
	case OPT_CGROUP:
		return parse_cgroup(optarg, o, err, errlen);
	case 'h':
		o->help = 1;
		return 1;
	case 'V':
		o->version = 1;
		return 1;
	default: /* ':' or '?' */
		return bad_option(c, argv, err, errlen);
	}
}

/* After the options: the command, and what the options say together. */
static int check_rest(int argc, char **argv, struct sup_options *o, char *err, size_t errlen)
{
	if (o->follow_env && o->no_trace)
		return fail(err, errlen, "--follow-env needs tracing: it cannot go with --no-trace");
	if (o->mem_max_mb > 0 && o->cgroup == CONTAIN_OFF)
		return fail(err, errlen, "--mem-max needs a memory cgroup: it cannot go with "
			    "--cgroup off (--rss-mb is the polled budget)");
	if (o->log_max_given && o->output == RELAY_INHERIT && o->terminal != TERMINAL_TRANSCRIPT)
		return fail(err, errlen, "--log-max bounds " EVIDENCE_STDOUT_LOG ": it cannot go with "
			    "--output inherit, which has none");
	/* log mode's output is the log alone: it keeps everything unless told
	 * otherwise; tee and transcript pass everything on, and keep a
	 * bounded copy */
	if (!o->log_max_given)
		o->log_max = o->output == RELAY_TEE || o->terminal == TERMINAL_TRANSCRIPT
				     ? RELAY_LOG_MAX_DEFAULT
				     : RELAY_LOG_UNLIMITED;
	if (optind >= argc)
		return fail(err, errlen, "no command given (usage: memsup [OPTIONS] -- COMMAND [ARG...])");
	if (!argv[optind][0])
		return fail(err, errlen, "the command's executable name is empty");
	o->command = argv + optind;
	o->command_argc = argc - optind;
	if (o->out) {
		struct stat st;
		if (lstat(o->out, &st) == 0)
			return fail(err, errlen, "--out: '%s' already exists", o->out);
		if (errno != ENOENT)
			return fail(err, errlen, "--out: '%s': %s", o->out, strerror(errno));
	}
	return 0;
}

int cli_parse(int argc, char **argv, struct sup_options *o, char *err,
	      size_t errlen)
{
	memset(o, 0, sizeof *o);
	o->poll_ms = 10;
	o->sparse_ms = 100;
	o->discovery = TREE_AUTO;
	o->output = RELAY_TEE;
	if (errlen)
		err[0] = '\0';
	o->env = calloc((size_t)(argc > 0 ? argc : 1), sizeof *o->env);
	o->meta = calloc((size_t)(argc > 0 ? argc : 1), sizeof *o->meta);
	if (!o->env || !o->meta)
		return fail(err, errlen, "out of memory");

	/* getopt keeps state in globals: optind = 0 makes glibc start over, so
	 * the parser can run more than once (the unit tests do). */
	optind = 0;
	opterr = 0;
	int c;
	const char *given[sizeof long_opts / sizeof long_opts[0]] = { 0 };
	while ((c = getopt_long(argc, argv, "+:o:C:e:qhV", long_opts, NULL)) != -1) {
		if (c != ':' && c != '?' && once_only(c, given, err, errlen) < 0)
			return -1;
		int rc = parse_option(c, argv, o, err, errlen);
		if (rc != 0)
			return rc < 0 ? -1 : 0;
	}
	return check_rest(argc, argv, o, err, errlen);
}

int cli_at_terminal(struct sup_options *o, int in_tty, int out_tty, char *err, size_t errlen)
{
	if (o->terminal == TERMINAL_TRANSCRIPT)
		return in_tty ? 0 : fail(err, errlen, "--output transcript: memsup's standard input "
					 "is not a terminal (the transcript is of one)");
	o->terminal = terminal_choose(o->output_given, in_tty, out_tty);
	if (o->terminal == TERMINAL_JOB && o->log_max_given)
		return fail(err, errlen, "--log-max bounds " EVIDENCE_STDOUT_LOG ", and at a terminal there is "
			    "none: the command has the terminal itself (--output transcript "
			    "keeps a copy of what it shows, --output tee pipes it)");
	if (o->terminal == TERMINAL_JOB)
		o->output = RELAY_INHERIT;
	return 0;
}

void cli_free(struct sup_options *o)
{
	free(o->env);
	free(o->meta);
	o->env = NULL;
	o->meta = NULL;
	o->n_env = 0;
	o->n_meta = 0;
}
