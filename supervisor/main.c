/* main.c: memsup's entry point.  The only place that prints to the user and
 * the only place that may die; everything else returns 0/-errno. */
#include "analyze/findings.h"
#include "analyze/merge.h"
#include "analyze/phases.h"
#include "cli.h"
#include "collect/trace.h"
#include "contain/contain.h"
#include "contain/spawn.h"
#include "output/evidence.h"
#include "output/plot.h"
#include "output/processes.h"
#include "output/report.h"
#include "output/resources.h"
#include "run.h"
#include "version.h"

#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

#define SUMMARY_ROWS 8u

/* The findings of the run; file scope: large, one run per process. */
static struct finding run_findings[FINDINGS_MAX];

/* "memsup: <what>: <strerror(err)>", exit 125.  err is passed in (not read
 * from errno) so that the caller's errno survives whatever ran since. */
static _Noreturn void sup_die_err(int err, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static _Noreturn void sup_die(const char *fmt, ...)
	__attribute__((format(printf, 1, 2)));

static _Noreturn void sup_die_err(int err, const char *fmt, ...)
{
	va_list ap;
	fputs("memsup: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, ": %s\n", strerror(err));
	exit(SUP_EXIT_ERROR);
}

static _Noreturn void sup_die(const char *fmt, ...)
{
	va_list ap;
	fputs("memsup: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(SUP_EXIT_ERROR);
}

static void default_out(char *buf, size_t cap)
{
	time_t now = time(NULL);
	struct tm tm;
	char stamp[32];
	localtime_r(&now, &tm);
	strftime(stamp, sizeof stamp, "%Y%m%d-%H%M%S", &tm);
	snprintf(buf, cap, "memsup-%s-%d", stamp, (int)getpid());
}

static void print_summary(const struct sup_record *rec, const struct evidence *ev,
			  const struct merged_run *m)
{
	fprintf(stderr, "memsup: peak tree RSS %.1f MB", (double)rec->peak_bytes / 1e6);
	if (rec->peak_at_s >= 0)
		fprintf(stderr, " at %.3f s", rec->peak_at_s);
	fprintf(stderr, " (%u processes at most, %llu samples); wall %.3f s\n",
		rec->max_processes, (unsigned long long)rec->samples, rec->wall_s);
	if (rec->rusage_children_maxrss_mb >= 0 && rec->have_exit)
		fprintf(stderr, "memsup: largest single process (getrusage, time -v): %.1f MB\n",
			rec->rusage_children_maxrss_mb);
	const char *reason = resources_reason_name(rec->reason);
	fprintf(stderr, "memsup: reason: %s; ", reason ? reason : "none");
	if (rec->error && rec->reason == SUP_REASON_START_FAILED)
		fprintf(stderr, "could not start: %s; ", rec->error);
	else if (rec->error)
		fprintf(stderr, "%s; ", rec->error);
	else if (rec->have_exit && rec->signal)
		fprintf(stderr, "command killed by signal %d (%s); ", rec->signal,
			strsignal(rec->signal));
	else if (rec->have_exit)
		fprintf(stderr, "command exited %d; ", rec->exit_code);
	fprintf(stderr, "exit status %d\n", rec->exit_status);
	if (rec->n_leftovers)
		fprintf(stderr, "memsup: killed %zu leftover process%s (see resources.json)\n",
			rec->n_leftovers, rec->n_leftovers == 1 ? "" : "es");
	if (rec->peak_heap_mb >= 0)
		fprintf(stderr, "memsup: at the peak: heap %.1f MB, mapped %.1f MB%s",
			rec->peak_heap_mb, rec->peak_mapped_mb,
			rec->peak_pss_mb >= 0 ? "" : "\n");
	if (rec->peak_heap_mb >= 0 && rec->peak_pss_mb >= 0)
		fprintf(stderr, ", Pss %.1f MB\n", rec->peak_pss_mb);
	processes_print_table(stderr, m, SUMMARY_ROWS);
	phases_print(stderr, rec->phases, rec->wall_s);
	findings_print(stderr, rec->findings, rec->n_findings);
	fprintf(stderr, "memsup: evidence: %s\n", ev->path);
}

int main(int argc, char **argv)
{
	struct sup_options opt;
	char err[PATH_MAX + 256];

	/* Subcommands over evidence directories; a command of the same name
	 * runs as `memsup -- plot ...`. */
	if (argc > 1 && strcmp(argv[1], "plot") == 0)
		return plot_main(argc - 1, argv + 1);
	if (argc > 1 && strcmp(argv[1], "report") == 0)
		return report_main(argc - 1, argv + 1);

	if (cli_parse(argc, argv, &opt, err, sizeof err) < 0) {
		cli_free(&opt);
		sup_die("%s", err);
	}
	if (opt.help) {
		fputs(cli_help_text, stdout);
		cli_free(&opt);
		return 0;
	}
	if (opt.version) {
		printf("memsup (memtrace) %s\n", memsup_version());
		cli_free(&opt);
		return 0;
	}
	/* The checks cli_parse cannot make without the kernel: done before
	 * anything is created. */
	struct contain_config cc = { "/proc", getpid(), opt.discovery };
	if (contain_check(&cc, err, sizeof err) < 0)
		sup_die("%s", err);

	/* A closed stdout under --json must not kill memsup before it has
	 * reaped and reported: the write fails with EPIPE instead (exit 125).
	 * The command gets default dispositions back (spawn.c). */
	signal(SIGPIPE, SIG_IGN);
	/* The same for a file size limit (ulimit -f): an evidence write past it
	 * must fail with EFBIG, which memsup reports, not kill memsup silently. */
	signal(SIGXFSZ, SIG_IGN);

	char outbuf[PATH_MAX];
	const char *out = opt.out;
	if (!out) {
		default_out(outbuf, sizeof outbuf);
		out = outbuf;
	}
	char cwd[PATH_MAX];
	if (!opt.cwd[0] && !getcwd(cwd, sizeof cwd))
		sup_die_err(errno, "getcwd");

	struct evidence ev;
	const char *failed_at;
	int rc = evidence_create(&ev, out, &failed_at);
	if (rc == -EEXIST)
		sup_die("--out: '%s' already exists", out);
	if (rc < 0)
		sup_die_err(-rc, "%s '%s'", failed_at, out);

	/* The marker channel (MEMSUP_MARK), before the environment that names
	 * it; an -e MEMSUP_MARK=... of the user's own comes later and wins. */
	struct phase_log *phases;
	if ((rc = phases_open(&phases, ev.dirfd, ev.path)) < 0)
		sup_die_err(-rc, "create %s/marks", ev.path);
	char **overrides = calloc(opt.n_env + 1, sizeof *overrides);
	if (!overrides)
		sup_die_err(ENOMEM, "environment");
	overrides[0] = (char *)phases_env_entry(phases);
	memcpy(overrides + 1, opt.env, opt.n_env * sizeof *overrides);
	char **envp = spawn_build_env(environ, overrides, opt.n_env + 1);
	if (!envp)
		sup_die_err(ENOMEM, "environment");

	struct sup_record rec;
	resources_init(&rec);
	rec.command = opt.command;
	rec.command_argc = opt.command_argc;
	rec.poll_s = opt.poll_ms / 1000.0;
	rec.rss_budget_mb = opt.rss_mb;
	rec.wall_budget_s = opt.wall_s;
	rec.max_procs_budget = opt.max_procs;
	rec.grace_s = opt.grace_s;
	rec.cwd = opt.cwd[0] ? opt.cwd : cwd;
	rec.env = opt.env;
	rec.n_env = opt.n_env;
	rec.meta = opt.meta;
	rec.n_meta = opt.n_meta;
	rec.phases = phases;
	/* resources.json exists from the start ("running"), whatever happens. */
	if ((rc = evidence_write_record(&ev, &rec, 1)) < 0)
		sup_die_err(-rc, "write %s/resources.json", ev.path);

	/* Tracing: the shim appended to the command's LD_PRELOAD, its
	 * records in DIR/records.  A missing shim is not an error: the run
	 * goes on with /proc polling alone and says so. */
	char shim[PATH_MAX], records[PATH_MAX + 16];
	char *env_owned = NULL, **traced_env = NULL;
	const char *records_dir = NULL;
	if (!opt.no_trace) {
		if (trace_find_shim(NULL, NULL, shim, sizeof shim) < 0) {
			static char note[PATH_MAX + 160];
			snprintf(note, sizeof note, "libmemtrace.so was found neither next to memsup "
				 "nor in %s: the run was not traced (/proc polling alone)",
				 trace_pkglibdir());
			resources_note(&rec, note);
			fprintf(stderr, "memsup: note: %s\n", note);
		} else if (mkdirat(ev.dirfd, "records", 0777) < 0) {
			sup_die_err(errno, "create %s/records", ev.path);
		} else {
			snprintf(records, sizeof records, "%s/records", ev.path);
			traced_env = trace_build_env(envp, shim, records, opt.follow_env, &env_owned);
			if (!traced_env)
				sup_die_err(ENOMEM, "environment");
			records_dir = records;
			rec.traced = 1;
			if ((rc = evidence_write_record(&ev, &rec, 0)) < 0)
				sup_die_err(-rc, "write %s/resources.json", ev.path);
		}
	}

	struct run_config cfg = { &opt, traced_env ? traced_env : envp, "/proc", records_dir,
				  phases };
	struct run_views views;
	int status = run_supervise(&cfg, &ev, &rec, &views);
	/* The one memsup error of a run that has no line of its own yet: say
	 * which write failed even under -q. */
	if (rec.reason == SUP_REASON_EVIDENCE_FAILED)
		fprintf(stderr, "memsup: %s\n", rec.error);

	/* The merged view: every image, traced or not, and what it hides. */
	struct merged_run merged;
	struct merge_input in = {
		.rec = &rec, .tracing = records_dir != NULL, .command_pid = rec.pid,
		.main_status = views.main_status, .have_main = views.have_main,
		.start_mono_ns = views.start_ns, .live = views.live, .pview = views.pview,
	};
	if (merge_build(&merged, &in) < 0)
		resources_note(&rec, "out of memory building the per-process view: "
				     "processes.json and blind_spots are incomplete");
	resources_apply_merge(&rec, &merged, run_findings, FINDINGS_MAX);
	if ((rc = processes_write(ev.dirfd, &merged)) < 0) {
		fprintf(stderr, "memsup: write %s/processes.json: %s\n", ev.path, strerror(-rc));
		status = SUP_EXIT_ERROR;
	}

	if ((rc = evidence_write_record(&ev, &rec, 1)) < 0) {
		fprintf(stderr, "memsup: write %s/resources.json: %s\n", ev.path, strerror(-rc));
		status = SUP_EXIT_ERROR;
	}
	/* The picture, drawn from the files just written: `memsup plot` later
	 * draws the same one. */
	char plot_err[PATH_MAX + 256];
	if (plot_write_dir(ev.dirfd, ev.path, 0, 0, plot_err, sizeof plot_err) < 0) {
		fprintf(stderr, "memsup: %s\n", plot_err);
		status = SUP_EXIT_ERROR;
	}
	if (opt.json) {
		fflush(stdout);
		if (resources_write_json(STDOUT_FILENO, &rec) < 0)
			status = SUP_EXIT_ERROR;
	}
	if (!opt.quiet)
		print_summary(&rec, &ev, &merged);
	else if (!opt.out)
		fprintf(stderr, "memsup: evidence: %s\n", ev.path); /* a name we chose */
	evidence_close(&ev);
	merge_free(&merged);
	run_views_free(&views);
	resources_free(&rec);
	free(traced_env);
	free(env_owned);
	free(envp);
	free(overrides);
	phases_close(phases);
	cli_free(&opt);
	return status;
}
