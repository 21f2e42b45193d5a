/* main.c: memsup's entry point.  The only place of a run that prints to
 * the user and the only place that may die; everything else returns
 * 0/-errno.  Two others speak for themselves, by design: the subcommands'
 * front ends (commands.h: plot_main, flame_main, report_main, diff_main,
 * each in its cmd_*.c: their own usage errors and output, then an exit
 * status returned here), and the sentinel, a process of its own that
 * outlives a killed memsup (one line, then _exit). */
#include "analyze/callsites.h"
#include "analyze/answer.h"
#include "analyze/findings.h"
#include "analyze/merge.h"
#include "analyze/phases.h"
#include "cli.h"
#include "commands.h"
#include "collect/marks.h"
#include "base/procfs.h"
#include "collect/slurmjob.h"
#include "collect/stackfold.h"
#include "collect/staging.h"
#include "collect/trace.h"
#include "contain/contain.h"
#include "contain/scope.h"
#include "contain/spawn.h"
#include "evidence/files.h"
#include "view/diff.h"
#include "evidence/evidence.h"
#include "view/flame.h"
#include "evidence/phasesout.h"
#include "view/plot.h"
#include "evidence/processes.h"
#include "stdio/relay.h"
#include "view/report.h"
#include "evidence/resources.h"
#include "evidence/stacksjson.h"
#include "collect/oomwatch.h"
#include "stdio/transcript.h"
#include "run.h"
#include "base/version.h"
#include "units.h"
#include "base/clock.h"

#include <errno.h>
#include <fcntl.h>
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
#define SITE_ROWS 5u

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

/* One line when memsup wanted a cgroup and the run has no memory cgroup:
 * the answer is then polled, and the line says why and what would give
 * the kernel's exact peak. */
static void print_fallback(const struct contain_info *c)
{
	if (!c || strcmp(c->requested, "auto") != 0 || c->memory)
		return;
	/* the backend's reason first; a refused systemd scope after it */
	const char *scope = "";
	for (size_t i = 1; i < c->n_missing && i < CONTAIN_MAX_MISSING; i++)
		if (strncmp(c->missing[i], "systemd scope: ", 15) == 0)
			scope = c->missing[i];
	/* the hint says what would give one; root is given none when rights
	 * are not what is missing (contain.c) */
	fprintf(stderr, "memsup: no %s for this run (%s%s%s): %s%s%s\n",
		strcmp(c->mode, "procscan") == 0 ? "cgroup" : "memory cgroup",
		c->n_missing ? c->missing[0] : "none could be made", scope[0] ? "; " : "", scope,
		strcmp(c->mode, "procscan") == 0 ? "the tree was found by /proc scans, the budgets "
		"polled" : "the peak is polled, a lower bound", c->hint ? "; try: " : "",
		c->hint ? c->hint : "");
}

/* The answer first, in plain words, then what it was made of. */
static void print_answer(const struct sup_record *rec)
{
	if (rec->peak_mb < 0) {
		fprintf(stderr, "memsup: peak unknown: no sample of the tree was taken\n");
		return;
	}
	fprintf(stderr, "memsup: peak %.1f MB: %s\n", rec->peak_mb, answer_words(rec));
	const struct contain_state *k = &rec->kernel_at_peak;
	if (rec->peak_source == SUP_PEAK_CGROUP && k->have_split && rec->kernel_peak_at_s >= 0)
		fprintf(stderr, "memsup:   made of, at its largest sample (%.3f s, %.1f MB): anon "
			"%.1f MB, page cache %.1f MB, shmem %.1f MB, kernel %.1f MB\n",
			rec->kernel_peak_at_s, (double)k->usage / UNITS_MB,
			(double)k->anon / UNITS_MB, (double)k->page_cache / UNITS_MB,
			(double)k->shmem / UNITS_MB, (double)k->kernel / UNITS_MB);
}

/* The figures other tools give, each named for what it is; the findings
 * say why each differs from the answer. */
static void print_other_figures(const struct sup_record *rec)
{
	fprintf(stderr, "memsup: other figures: summed RSS %.1f MB", (double)rec->peak_bytes / UNITS_MB);
	if (rec->peak_at_s >= 0)
		fprintf(stderr, " at %.3f s", rec->peak_at_s);
	fprintf(stderr, " (polled; shared pages once per process)");
	if (rec->peak_pss_mb >= 0 && rec->peak_source != SUP_PEAK_POLLED_PSS)
		fprintf(stderr, ", Pss %.1f MB", rec->peak_pss_mb);
	if (rec->peak_heap_mb >= 0)
		/* the heap in malloc's usable bytes (libmemtrace(7)): above
		 * what heaptrack, massif or memusage print, which count the
		 * bytes asked for */
		fprintf(stderr, ", heap peak %.1f MB (usable sizes), mapped %.1f MB at the RSS peak",
			rec->peak_heap_mb, rec->peak_mapped_mb);
	if (rec->rusage_children_maxrss_mb >= 0 && rec->have_exit)
		fprintf(stderr, "; largest single process %.1f MB (getrusage, time -v)",
			rec->rusage_children_maxrss_mb);
	fprintf(stderr, "\n");
}

/* A command that never ran: the one line that says so and why, even
 * under -q (a silent 127 reads as a command that ran and failed). */
static void print_start_failed(const struct sup_record *rec)
{
	fprintf(stderr, "memsup: could not start '%s': %s; exit status %d\n",
		rec->command && rec->command[0] ? rec->command[0] : "",
		rec->error ? rec->error : "no reason known", rec->exit_status);
}

static void print_summary(const struct sup_record *rec, const struct evidence *ev,
			  const struct merged_run *m, const struct callsite_view *cv)
{
	/* no sample of a tree that never was: its figures would read as a
	 * run that held nothing */
	if (rec->reason == SUP_REASON_START_FAILED) {
		print_start_failed(rec);
	} else {
		print_answer(rec);
		print_other_figures(rec);
	}
	fprintf(stderr, "memsup: wall %.3f s, %u processes at most, %llu samples; ", rec->wall_s,
		rec->max_processes, (unsigned long long)rec->samples);
	const char *reason = runrecord_reason_name(rec->reason);
	fprintf(stderr, "reason: %s; ", reason ? reason : "none");
	if (rec->reason == SUP_REASON_START_FAILED)
		; /* the first line said why */
	else if (rec->error)
		fprintf(stderr, "%s; ", rec->error);
	else if (rec->have_exit && rec->signal)
		fprintf(stderr, "command killed by signal %d (%s); ", rec->signal,
			strsignal(rec->signal));
	else if (rec->have_exit)
		fprintf(stderr, "command exited %d; ", rec->exit_code);
	fprintf(stderr, "exit status %d\n", rec->exit_status);
	if (rec->n_leftovers)
		fprintf(stderr, "memsup: killed %zu leftover process%s (see " EVIDENCE_RESOURCES ")\n",
			rec->n_leftovers, rec->n_leftovers == 1 ? "" : "es");
	print_fallback(rec->containment);
	processes_print_table(stderr, m, SUMMARY_ROWS);
	stacksjson_print(stderr, cv, SITE_ROWS);
	phasesout_print(stderr, rec->phases, rec->wall_s);
	findings_print(stderr, rec->findings, rec->n_findings);
	fprintf(stderr, "memsup: evidence: %s\n", ev->path);
}

/* One run, from the evidence directory to the merged view; file scope:
 * large, one run per process. */
static struct sup_run {
	struct sup_options opt;
	char out[PATH_MAX];        /* the directory memsup chose, without -o */
	char cwd[PATH_MAX];        /* memsup's own, without -C */
	struct evidence ev;
	struct relay *relay;       /* the command's stdout and stderr */
	struct transcript *transcript; /* --output transcript; NULL */
	struct marks_file *marks;
	struct phase_log *phases;
	char **overrides;          /* MEMSUP_MARK, then the -e values */
	char **envp;               /* the command's environment */
	char **traced_env;         /* envp with the shim (NULL: not tracing) */
	char *env_owned;           /* traced_env's strings */
	struct staging records;    /* the shim's directory (staging.h) */
	const char *records_dir;   /* NULL: not tracing */
	struct sup_record rec;
	struct run_views views;
	struct merged_run merged;
	struct callsite_view sites;
	struct slurm_job slurm;    /* the Slurm job memsup runs in, if any */
	struct scope_outcome scope; /* the systemd scope asked for (scope.h) */
	sigset_t start_mask;       /* the signal mask memsup was started with */
} this_run;

/* The evidence directory (-o, or a fresh name) and its marker channel. */
static void create_evidence(struct sup_run *s)
{
	const char *out = s->opt.out;
	if (!out) {
		default_out(s->out, sizeof s->out);
		out = s->out;
	}
	if (!s->opt.cwd[0] && !getcwd(s->cwd, sizeof s->cwd))
		sup_die_err(errno, "getcwd");
	const char *failed_at;
	int rc = evidence_create(&s->ev, out, s->opt.output != RELAY_INHERIT ||
				 s->opt.terminal == TERMINAL_TRANSCRIPT, &failed_at);
	if (rc == -EEXIST)
		sup_die("--out: '%s' already exists", out);
	if (rc < 0)
		sup_die_err(-rc, "%s '%s'", failed_at, out);
	if ((rc = relay_set_log(s->relay, s->ev.log_fd)) < 0)
		sup_die_err(-rc, "open %s/" EVIDENCE_STDOUT_LOG, s->ev.path);
	if (s->opt.terminal == TERMINAL_TRANSCRIPT &&
	    (rc = transcript_open(&s->transcript, s->ev.log_fd, s->opt.log_max)) < 0)
		sup_die_err(-rc, "transcript");
	if ((rc = marks_open(&s->marks, s->ev.dirfd, s->ev.path)) < 0)
		sup_die_err(-rc, "create %s/" EVIDENCE_MARKS, s->ev.path);
	if ((rc = phases_open(&s->phases, s->marks)) < 0)
		sup_die_err(-rc, "phases");
}

/* The command's environment: memsup's, MEMSUP_MARK (which names the marker
 * channel), then -e: a MEMSUP_MARK=... of the user's own comes later and
 * wins. */
static void build_env(struct sup_run *s)
{
	s->overrides = calloc(s->opt.n_env + 1, sizeof *s->overrides);
	if (!s->overrides)
		sup_die_err(ENOMEM, "environment");
	s->overrides[0] = (char *)marks_env_entry(s->marks);
	memcpy(s->overrides + 1, s->opt.env, s->opt.n_env * sizeof *s->overrides);
	s->envp = spawn_build_env(environ, s->overrides, s->opt.n_env + 1);
	if (!s->envp)
		sup_die_err(ENOMEM, "environment");
}

/* The record of what was asked, in resources.json from the start
 * ("running"), whatever happens. */
static void start_record(struct sup_run *s)
{
	const struct sup_options *o = &s->opt;
	struct sup_record *rec = &s->rec;
	runrecord_init(rec);
	rec->command = o->command;
	rec->command_argc = o->command_argc;
	rec->poll_s = o->poll_ms / 1000.0;
	rec->rss_budget_mb = o->rss_mb;
	rec->mem_max_mb = o->mem_max_mb;
	rec->wall_budget_s = o->wall_s;
	rec->max_procs_budget = o->max_procs;
	rec->grace_s = o->grace_s;
	rec->cwd = o->cwd[0] ? o->cwd : s->cwd;
	rec->env = o->env;
	rec->n_env = o->n_env;
	rec->meta = o->meta;
	rec->n_meta = o->n_meta;
	if (s->transcript)
		transcript_report(s->transcript, &rec->output);
	else
		relay_report(s->relay, &rec->output);
	rec->terminal = o->terminal;
	rec->phases = s->phases;
	int rc = evidence_write_record(&s->ev, rec, 1);
	if (rc < 0)
		sup_die_err(-rc, "write %s/" EVIDENCE_RESOURCES, s->ev.path);
}

/* Tracing: the shim appended to the command's LD_PRELOAD, its records in
 * a staging directory on a tmpfs while the run goes on, then in DIR
 * (staging.h), else in DIR/records from the start.  A missing shim is not
 * an error: the run goes on with /proc polling alone and says so. */
static void set_up_tracing(struct sup_run *s)
{
	char shim[PATH_MAX];
	int rc;
	if (s->opt.no_trace)
		return;
	if (trace_find_shim(NULL, NULL, shim, sizeof shim) < 0) {
		static char where[3 * PATH_MAX + 128], note[sizeof where + 160];
		trace_describe_search(where, sizeof where);
		snprintf(note, sizeof note, "libmemtrace.so was not found (memsup looked %s): "
			 "the run was not traced (/proc polling alone)", where);
		s->rec.shim_searched = where;
		runrecord_note(&s->rec, note);
		fprintf(stderr, "memsup: note: %s\n", note);
		return;
	}
	if (mkdirat(s->ev.dirfd, EVIDENCE_RECORDS_DIR, 0777) < 0)
		sup_die_err(errno, "create %s/" EVIDENCE_RECORDS_DIR, s->ev.path);
	if ((rc = staging_open(&s->records, s->ev.path, NULL)) < 0)
		sup_die_err(-rc, "%s/" EVIDENCE_RECORDS_DIR, s->ev.path);
	if (s->records.refused) {
		static char note[2 * PATH_MAX + 160];
		snprintf(note, sizeof note, "%s=%s: no staging directory could be made there (%s): "
			 "the shim writes into %s", STAGING_ENV, s->records.root,
			 strerror(-s->records.refused), s->records.dir);
		runrecord_note(&s->rec, note);
		fprintf(stderr, "memsup: note: %s\n", note);
	}
	s->traced_env = trace_build_env(s->envp, shim, s->records.dir, s->opt.follow_env,
					&s->env_owned);
	if (!s->traced_env)
		sup_die_err(ENOMEM, "environment");
	s->records_dir = s->records.dir;
	s->rec.traced = 1;
	if ((rc = evidence_write_record(&s->ev, &s->rec, 0)) < 0)
		sup_die_err(-rc, "write %s/" EVIDENCE_RESOURCES, s->ev.path);
}

/* A write of the evidence failed after the run (what: the step and path;
 * rc: -errno, or 0 when `what` already says why).  The first failure of the
 * run is the one line memsup prints (later ones on the same disk are its
 * consequences); the record says it (reason evidence_failed if the run had
 * no other end to tell, error, exit_status 125) wherever it can still be
 * written. */
static char write_failure[PATH_MAX + 128];

static int write_failed(struct sup_run *s, const char *what, int rc)
{
	struct sup_record *rec = &s->rec;
	if (!rec->error) {
		if (rc)
			snprintf(write_failure, sizeof write_failure, "%s: %s", what, strerror(-rc));
		else
			snprintf(write_failure, sizeof write_failure, "%s", what);
		fprintf(stderr, "memsup: %s\n", write_failure);
		rec->error = write_failure;
	}
	if (rec->reason == SUP_REASON_NONE)
		rec->reason = SUP_REASON_EVIDENCE_FAILED;
	rec->exit_status = SUP_EXIT_ERROR;
	return SUP_EXIT_ERROR;
}

/* The records directory's stacks files into stacks.fold (stackfold.h).  A
 * failure loses nothing (the files not packed stay) and is said. */
static void pack_stacks(struct sup_run *s, int records_dirfd)
{
	static char note[PATH_MAX + 160];
	size_t packed = 0, left = 0;
	int rc = stackfold_pack(records_dirfd, s->ev.dirfd, &packed, &left);
	if (rc < 0)
		snprintf(note, sizeof note, "packing the stacks files into %s/%s stopped after "
			 "%zu: %s; the rest stay in " EVIDENCE_RECORDS_DIR "/", s->ev.path, EVIDENCE_STACKS_FOLD, packed,
			 strerror(-rc));
	else if (left)
		snprintf(note, sizeof note, "%zu stacks file%s of " EVIDENCE_RECORDS_DIR "/ could not be read as "
			 "such and stay there, not packed into %s", left, left == 1 ? "" : "s",
			 EVIDENCE_STACKS_FOLD);
	else
		return;
	runrecord_note(&s->rec, note);
}

/* The sampled call sites (tracing only): named and gathered from the
 * stacks files and the tree's peaks, stacks.json, then flame.svg and
 * flame.folded drawn from it (`memsup flame` draws the same). */
static int write_call_sites(struct sup_run *s, int status)
{
	const char *dir = s->ev.path;
	char what[PATH_MAX + 256];
	struct stackfold_index packed;
	int rc, dfd = openat(s->ev.dirfd, EVIDENCE_RECORDS_DIR, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if ((rc = stackfold_index_open(&packed, s->ev.dirfd)) < 0)
		runrecord_note(&s->rec, EVIDENCE_STACKS_FOLD " could not be read back: " EVIDENCE_STACKS " lacks "
			       "the images that ended during the run");
	if (callsites_build(&s->sites, &s->merged, s->views.sites, dfd, &packed) < 0)
		runrecord_note(&s->rec, "out of memory gathering the sampled call sites: "
			       EVIDENCE_STACKS " is incomplete");
	stackfold_index_close(&packed);
	if ((rc = stacksjson_write(s->ev.dirfd, &s->sites)) < 0) {
		if (dfd >= 0)
			close(dfd);
		snprintf(what, sizeof what, "write %s/" EVIDENCE_STACKS, dir);
		return write_failed(s, what, rc);
	}
	/* read and named: the sparse stacks files become one packed file */
	if (dfd >= 0) {
		pack_stacks(s, dfd);
		close(dfd);
	}
	if (flame_write_dir(s->ev.dirfd, dir, what, sizeof what) < 0)
		return write_failed(s, what, 0);
	return status;
}

/* An OOM victim's largest sites as it died (oomwatch_name_sites). */
static size_t name_victim_sites(void *ctx, pid_t pid, uint32_t gen, struct oom_site *sites,
				size_t cap)
{
	struct stacksjson_named named[OOM_MAX_SITES];
	size_t n = stacksjson_image_sites(ctx, pid, gen, named,
					  cap < OOM_MAX_SITES ? cap : OOM_MAX_SITES);
	for (size_t i = 0; i < n; i++) {
		_Static_assert(sizeof sites[i].name == sizeof named[i].name, "one site name size");
		memcpy(sites[i].name, named[i].name, sizeof sites[i].name);
		sites[i].bytes = named[i].bytes;
	}
	return n;
}

/* An OOM victim's command line from the merged view (oomwatch_name_images):
 * the image of that generation, else the pid's last. */
static int name_victim_image(void *ctx, pid_t pid, uint32_t gen, int have_gen, const char **argv,
			     size_t *argv_len, const char **exe)
{
	const struct merged_run *m = ctx;
	const struct image_view *found = NULL;
	for (size_t i = 0; i < m->n_images; i++)
		if (m->images[i].pid == pid && (!have_gen || m->images[i].gen == gen))
			found = &m->images[i];
	if (!found)
		return -ENOENT;
	*argv = found->argv;
	*argv_len = found->argv_len;
	*exe = found->exe;
	return 0;
}

/* Each OOM kill is the summary's first finding, "oom_kill": the
 * moment a user most needs said, where they look first.  The rest move
 * down (past FINDINGS_MAX the last are dropped, as findings_apply drops
 * them). */
static void add_oom_findings(struct sup_run *s)
{
	struct sup_record *rec = &s->rec;
	if (!s->views.oom)
		return;
	if (s->records_dir)
		oomwatch_name_sites(s->views.oom, name_victim_sites, &s->sites);
	oomwatch_name_images(s->views.oom, name_victim_image, &s->merged);
	const struct oom_log *o = oomwatch_log(s->views.oom);
	size_t add = o->n < FINDINGS_MAX ? o->n : FINDINGS_MAX;
	if (!add)
		return;
	size_t keep = rec->n_findings + add <= FINDINGS_MAX ? rec->n_findings : FINDINGS_MAX - add;
	memmove(run_findings + add, run_findings, keep * sizeof *run_findings);
	for (size_t i = 0; i < add; i++) {
		const struct oom_kill *k = &o->kills[i];
		struct finding *f = &run_findings[i];
		memset(f, 0, sizeof *f);
		f->kind = "oom_kill";
		oomwatch_sentence(k, f->sentence, sizeof f->sentence);
		f->figures[f->n_figures++] = (struct finding_figure){ "at_s", k->at_s, 3 };
		if (k->pid > 0)
			f->figures[f->n_figures++] = (struct finding_figure){ "victim_pid",
									      k->pid, 0 };
		if (k->have_rss)
			f->figures[f->n_figures++] = (struct finding_figure){
				"victim_rss_mb", (double)k->rss / UNITS_MB, 1 };
		if (k->have_limit)
			f->figures[f->n_figures++] = (struct finding_figure){
				"limit_mb", (double)k->limit / UNITS_MB, 1 };
	}
	rec->findings = run_findings;
	rec->n_findings = keep + add;
}

/* After the run: the merged view (every image, traced or not, and what it
 * hides), processes.json, the final record and the picture, and --json.
 * Returns `status`, or 125 when one of them could not be written. */
static int write_results(struct sup_run *s, int status)
{
	struct sup_record *rec = &s->rec;
	const char *dir = s->ev.path;
	char what[PATH_MAX + 32];
	int rc;
	struct merge_input in = {
		.rec = rec, .tracing = s->records_dir != NULL, .command_pid = rec->pid,
		.command_sid = s->views.command_sid,
		.main_status = s->views.main_status, .have_main = s->views.have_main,
		.start_mono_ns = s->views.start_ns, .live = s->views.live, .pview = s->views.pview,
		.sites = s->views.sites,
		.end_mono_ns = clock_mono_ns(),
	};
	if (procfs_read_meminfo("/proc", &in.memory_kb) < 0)
		in.memory_kb = 0; /* unknown: the kernel figures go unchecked */
	if (merge_build(&s->merged, &in) < 0)
		runrecord_note(rec, "out of memory building the per-process view: "
			       EVIDENCE_PROCESSES " and blind_spots are incomplete");
	/* the records not believed, named in the record (resources.c) */
	rec->not_believed = s->merged.aside;
	rec->n_not_believed = s->merged.n_aside;
	findings_apply(rec, &s->merged, run_findings, FINDINGS_MAX);
	if ((rc = processes_write(s->ev.dirfd, &s->merged)) < 0) {
		snprintf(what, sizeof what, "write %s/" EVIDENCE_PROCESSES, dir);
		status = write_failed(s, what, rc);
	}
	if (s->records_dir)
		status = write_call_sites(s, status);
	add_oom_findings(s);
	/* The picture, drawn from the files: `memsup plot` later draws the
	 * same one.  The record is written before it (the picture shows the
	 * record's end) and again if the picture fails, so that it says so. */
	if ((rc = evidence_write_record(&s->ev, rec, 1)) < 0) {
		snprintf(what, sizeof what, "write %s/" EVIDENCE_RESOURCES, dir);
		status = write_failed(s, what, rc);
	}
	char plot_err[PATH_MAX + 256];
	if (plot_write_dir(s->ev.dirfd, dir, 0, 0, plot_err, sizeof plot_err) < 0) {
		int first = rec->error == NULL;
		status = write_failed(s, plot_err, 0);
		if (first) /* the record does not say it yet */
			evidence_write_record(&s->ev, rec, 1);
	}
	if (s->opt.json) {
		fflush(stdout);
		if (resources_write_json(STDOUT_FILENO, rec) < 0)
			status = SUP_EXIT_ERROR;
	}
	return status;
}

static void release(struct sup_run *s)
{
	callsites_free(&s->sites);
	evidence_close(&s->ev);
	relay_close(s->relay);
	transcript_close(s->transcript);
	merge_free(&s->merged);
	run_views_free(&s->views);
	runrecord_free(&s->rec);
	free(s->traced_env);
	free(s->env_owned);
	free(s->envp);
	free(s->overrides);
	phases_close(s->phases);
	marks_close(s->marks);
	cli_free(&s->opt);
}

int main(int argc, char **argv)
{
	struct sup_run *s = &this_run;
	char err[PATH_MAX + 256];

	/* Subcommands over evidence directories; a command of the same name
	 * runs as `memsup -- plot ...`. */
	if (argc > 1 && strcmp(argv[1], "plot") == 0)
		return plot_main(argc - 1, argv + 1);
	if (argc > 1 && strcmp(argv[1], "report") == 0)
		return report_main(argc - 1, argv + 1);
	if (argc > 1 && strcmp(argv[1], "diff") == 0)
		return diff_main(argc - 1, argv + 1);
	if (argc > 1 && strcmp(argv[1], "flame") == 0)
		return flame_main(argc - 1, argv + 1);

	if (cli_parse(argc, argv, &s->opt, err, sizeof err) < 0) {
		cli_free(&s->opt);
		sup_die("%s", err);
	}
	if (s->opt.help || s->opt.version) {
		if (s->opt.help)
			fputs(cli_help_text, stdout);
		else
			printf("memsup (memtrace) %s\n", memsup_version());
		cli_free(&s->opt);
		return 0;
	}
	/* The checks cli_parse cannot make without the kernel: done before
	 * anything is created. */
	if (cli_at_terminal(&s->opt, isatty(STDIN_FILENO), isatty(STDOUT_FILENO), err,
			    sizeof err) < 0)
		sup_die("%s", err);
	struct contain_config cc = {
		.proc_root = "/proc", .self = getpid(), .discovery = s->opt.discovery,
		.cgroup = s->opt.cgroup, .max_procs = s->opt.max_procs,
		.mem_max = (uint64_t)(s->opt.mem_max_mb * UNITS_MB), .scope = &s->scope,
	};
	/* A cgroup memsup can hold the run's in, from systemd where the one it
	 * was started in cannot: the only thing made before the checks, and
	 * gone with memsup (scope.h). */
	scope_seek(&cc, s->opt.command[0], &s->scope);
	if (contain_check(&cc, err, sizeof err) < 0)
		sup_die("%s", err);

	/* A closed stdout under --json must not kill memsup before it has
	 * reaped and reported: the write fails with EPIPE instead (exit 125).
	 * The command gets default dispositions back (spawn.c). */
	signal(SIGPIPE, SIG_IGN);
	/* The same for a file size limit (ulimit -f): an evidence write past it
	 * must fail with EFBIG, which memsup reports, not kill memsup silently. */
	signal(SIGXFSZ, SIG_IGN);

	/* From here memsup makes files: an INT, TERM, HUP or QUIT now waits,
	 * blocked, for the run's signalfd, so that the run ends with a record
	 * that says it was interrupted -- not an evidence directory cut off
	 * half made, or a record left saying "running" (the default action
	 * killed memsup in its first milliseconds).  The command gets the
	 * mask memsup started with. */
	sigset_t early;
	sigemptyset(&early);
	sigaddset(&early, SIGINT);
	sigaddset(&early, SIGTERM);
	sigaddset(&early, SIGHUP);
	sigaddset(&early, SIGQUIT);
	sigprocmask(SIG_BLOCK, &early, &s->start_mask);

	/* First of all that opens files: a closed fd 1 or 2 must not be taken
	 * by the evidence and written to as stdout. */
	int rc = relay_open(&s->relay, s->opt.output, s->opt.log_max);
	if (rc < 0)
		sup_die_err(-rc, "pipes for the command's output, and the tail of --log-max");
	create_evidence(s);
	build_env(s);
	start_record(s);
	set_up_tracing(s);
	/* memsup's own environment: the Slurm step it was started in */
	slurmjob_detect(&s->slurm, environ);
	if (s->slurm.job_id[0])
		s->rec.slurm = &s->slurm;

	struct run_config cfg = {
		.opt = &s->opt, .envp = s->traced_env ? s->traced_env : s->envp,
		.proc_root = "/proc", .start_mask = &s->start_mask, .scope = &s->scope,
		.records_dir = s->records_dir,
		.staging = s->records_dir ? &s->records : NULL, .phases = s->phases,
		.relay = s->relay, .transcript = s->transcript,
		/* tests: another file for the kernel's log ("" none) */
		.kmsg_path = getenv("MEMSUP_KMSG"),
	};
	int status = run_supervise(&cfg, &s->ev, &s->rec, &s->views);
	/* The one memsup error of a run that has no line of its own yet: say
	 * which write failed even under -q. */
	if (s->rec.reason == SUP_REASON_EVIDENCE_FAILED)
		fprintf(stderr, "memsup: %s\n", s->rec.error);
	status = write_results(s, status);

	if (!s->opt.quiet)
		print_summary(&s->rec, &s->ev, &s->merged, &s->sites);
	else if (s->rec.reason == SUP_REASON_START_FAILED)
		print_start_failed(&s->rec);
	if (s->opt.quiet && !s->opt.out)
		fprintf(stderr, "memsup: evidence: %s\n", s->ev.path); /* a name we chose */
	release(s);
	return status;
}
