/* cli.h: memsup's command line, parsed and validated without side effects.
 *
 * cli_parse() never creates, opens or starts anything: it only reads argv,
 * and stat()s --cwd and --out to reject a missing directory or an existing
 * evidence directory before main creates anything.  On error it writes one
 * line (without the "memsup: " prefix and newline) to `err` and returns -1;
 * the caller exits 125.
 */
#ifndef MEMSUP_CLI_H
#define MEMSUP_CLI_H

#include <limits.h>
#include <stddef.h>
#include <stdint.h>

#include "contain/contain.h"
#include "contain/terminal.h"
#include "stdio/relay.h"

struct sup_options {
	const char *out;          /* -o; NULL: a fresh name chosen by main */
	double wall_s;            /* --wall-s; 0: no wall budget */
	double rss_mb;            /* --rss-mb (decimal MB); 0: no RSS budget */
	double mem_max_mb;        /* --mem-max (decimal MB): the kernel's limit; 0: none */
	unsigned max_procs;       /* --max-procs; 0: no process budget */
	double poll_ms;           /* --poll-ms, default 10 */
	double sparse_ms;         /* --sparse-ms: a flat tree's interval, default
				     100; 0 samples every poll_ms throughout */
	double grace_s;           /* --grace-s; 0: SIGKILL at once */
	char cwd[PATH_MAX];       /* -C, resolved; "" when not given */
	char **env;               /* -e KEY=VALUE, in order, pointers into argv */
	size_t n_env;
	char **meta;              /* --meta KEY=VALUE, in order, pointers into argv;
				     keys unique */
	size_t n_meta;
	int json;                 /* --json */
	int quiet;                /* -q */
	int no_trace;             /* --no-trace: /proc polling alone */
	int follow_env;           /* --follow-env: MEMTRACE_FOLLOW=1 */
	enum tree_method discovery; /* --discovery */
	enum relay_mode output;   /* --output: tee (default), log, inherit */
	int output_given;         /* --output was given */
	enum terminal_mode terminal; /* --output transcript; at a terminal:
				     cli_at_terminal() */
	uint64_t log_max;         /* --log-max in bytes, RELAY_LOG_UNLIMITED: all;
				     when not given, RELAY_LOG_MAX_DEFAULT for
				     tee and unlimited for log */
	int log_max_given;
	enum contain_request cgroup; /* --cgroup */
	int help, version;        /* -h, -V: print and exit 0, nothing else */
	char **command;           /* argv of the command, NULL-terminated */
	int command_argc;
};

/* Parse argv into *out.  0 on success, -1 with a message in err.  On success
 * out->env and out->meta point to allocated arrays: release it with cli_free(). */
int cli_parse(int argc, char **argv, struct sup_options *out, char *err,
	      size_t errlen);
void cli_free(struct sup_options *o);

/* Where memsup's stdin or stdout is a terminal (isatty of fd 0 and 1) and
 * --output was not given, the command is a job at that terminal
 * (terminal.h): o->terminal TERMINAL_JOB, o->output RELAY_INHERIT (no pipe,
 * no log), and --log-max is refused there (it would bound nothing).
 * --output transcript needs stdin to be a terminal: -1 with the message in
 * err when it is not.  Pure: main asks the terminal, tests pass
 * what they like. */
int cli_at_terminal(struct sup_options *o, int in_tty, int out_tty, char *err, size_t errlen);

/* The --help text (matches man/memsup.1 and the README). */
extern const char cli_help_text[];

#endif /* MEMSUP_CLI_H */
