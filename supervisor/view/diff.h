/* diff.h: `memsup diff BASE NEW`, a regression gate between two runs (see
 * man/memsup.1, DIFF).
 *
 * Reads only: the run and its processes through the evidence reader
 * (evidence/read.h, whose rules decide which runs can be compared),
 * stacks.json of an evidence directory, or the one-run array that `memsup
 * report --json` writes (report_read_baseline: the answer only, it has no
 * processes); or, for a sweep, two directories of runs paired by --meta.
 * Comparing is pure (diff_compare) so that tests can drive it with runs
 * built in memory; diff_gate does the whole gate for the front end
 * (commands.h).
 *
 * Sizes are MB as the evidence writes them (bytes / UNITS_MB). */
#ifndef MEMSUP_DIFF_H
#define MEMSUP_DIFF_H

#include <stddef.h>

#include "evidence/oomkills.h"

/* How much a figure may grow: a percent of its base, or an absolute MB. */
struct diff_limit {
	int percent;  /* 1: value is a percent of the base; 0: value is MB */
	double value; /* >= 0 */
};

/* "5%", "20MB", "1.5GB", "500KB" (decimal units, as every _mb figure).
 * 0, -EINVAL (not of that form) or -ERANGE (over 1e6 % or 1e9 MB). */
int diff_limit_parse(const char *s, struct diff_limit *out);

/* Whether new_mb grew past the limit over base_mb, and by at least
 * floor_mb (so that the noise of tiny figures never fails a gate). */
int diff_exceeds(const struct diff_limit *lim, double floor_mb, double base_mb, double new_mb);

/* One process image of a run: key matches it to the other run's. */
struct diff_proc {
	char *key;   /* parent's program \x1f command line \x1f rank among equal ones (owned) */
	char *key2;  /* parent's program \x1f program \x1f rank: the second pass (owned) */
	char *name;  /* the command as people read it, "#N" for the Nth equal one (owned) */
	double mb;   /* its peak RSS: VmHWM, else the polled peak */
	double live_mb; /* its heap still allocated when it ended by exit or
			   _exit (record.heap_current); NAN otherwise.  A
			   site's: its bytes still live as its images ended */
	double se_mb, live_se_mb; /* a site's standard errors of mb and
			   live_mb (stacks.json's se_bytes, summed over its
			   images in quadrature); 0: exact, or not said */
};

struct diff_run {
	double peak_mb;          /* the answer */
	struct diff_proc *procs; /* owned; none when the run came from a report */
	size_t n_procs;
	int has_procs;           /* 0: a report baseline, or a run whose memsup was
				    killed before it wrote its processes: processes
				    not compared */
	struct diff_proc *sites; /* call sites at each image's own peak, summed by symbolized stack (owned) */
	size_t n_sites;
	int has_sites;           /* 0: no stacks.json (an untraced run), sites not compared */
	double live_mb;          /* live_mb summed over processes; NAN: none had it */
	struct oomkills oom;    /* its OOM kills (owned); from a report
				    baseline, its count and first victim */
	int from_dir;            /* read from an evidence directory, not a report */
};

/* Read DIR (an evidence directory) or FILE (memsup report --json with one
 * run).  0, or -errno with err saying what is wrong with which file
 * ("base/resources.json: line 3 col 7: ..."); *out is then empty. */
int diff_run_read(const char *path, struct diff_run *out, char *err, size_t errlen);
void diff_run_free(struct diff_run *r);

/* What a row compares. */
enum diff_kind {
	DIFF_PROCESS = 0, /* a process image's peak RSS */
	DIFF_SITE,        /* a call site's bytes at its images' own peaks */
	DIFF_LIVE,        /* a process image's heap live at its exit */
	DIFF_SITE_LIVE,   /* a call site's bytes live as its images ended */
};

/* The runs' OOM kills compared.  A run the kernel's OOM killer cut short
 * where its baseline ran whole is a regression, whatever its peak (a kill
 * can lower the peak): NEW.  A baseline that could not see OOM kills (no
 * memory cgroup) is taken as one that had none. */
enum diff_oom_change {
	DIFF_OOM_NONE = 0, /* no kill on either side (or neither can tell) */
	DIFF_OOM_NEW,      /* NEW has kills, BASE had none: a regression */
	DIFF_OOM_GONE,     /* BASE had kills, NEW has none */
	DIFF_OOM_BOTH,     /* both have kills */
	DIFF_OOM_UNSEEN,   /* BASE had kills, NEW could not see OOM kills */
	DIFF_OOM_COUNT
};

/* "none", "new", "gone", "both", "unseen" (the JSON verdict's words). */
const char *diff_oom_change_name(enum diff_oom_change c);

struct diff_oom {
	enum diff_oom_change change;
	int regressed;
	const struct oomkills *base, *nw; /* borrowed from the runs */
};

/* One compared figure: the answer, the tree's live heap at exit, a
 * process, a site. */
struct diff_row {
	const char *name;   /* borrowed from the runs; "peak" for the answer */
	double base_mb;     /* NAN: only in NEW */
	double new_mb;      /* NAN: only in BASE */
	int regressed;
	enum diff_kind kind; /* DIFF_SITE, DIFF_SITE_LIVE: name is its stack,
				innermost first */
	double sigmas;      /* a sampled site's change in standard errors of
			       the difference; NAN: exact, or not a site */
};

/* A sampled site regresses only when its growth passes the limits and is
 * more than this many standard errors of the difference (both runs' errors
 * in quadrature): one-sided, about 1 identical pair in 740 per site passes
 * by chance (bench/RESULTS.md, run DG, chose it). */
#define DIFF_SITE_SIGMAS 3.0

struct diff_result {
	struct diff_row peak;  /* the answer */
	struct diff_row live;  /* the tree's live heap at exit (NAN: a side without it) */
	struct diff_row *rows; /* processes whose size changed, largest change first (owned) */
	size_t n_rows;
	struct diff_oom oom;   /* the OOM kills */
	size_t n_regressed;    /* the answer, processes and a new OOM together */
};

/* Compare: the OOM kills (a new one regresses); the answer against lim;
 * the tree's live heap at exit against lim and floor_mb; each process
 * (matched by key, then those left over by key2), its live heap at exit
 * and each site against proc_lim and, as well, floor_mb; a change under
 * 0.1 MB (or floor_mb) is not a row.  0 or -ENOMEM.  Borrowed names live
 * as long as the runs. */
int diff_compare(const struct diff_run *base, const struct diff_run *nw, const struct diff_limit *lim,
		 const struct diff_limit *proc_lim, double floor_mb, struct diff_result *out);
void diff_result_free(struct diff_result *r);

/* The gate's settings: memsup diff's options and their defaults. */
#define DIFF_DEFAULT_LIMIT "10%"
#define DIFF_DEFAULT_FLOOR_MB 1.0

struct diff_opts {
	struct diff_limit lim;      /* --max-increase */
	struct diff_limit proc_lim; /* --process-max-increase */
	double floor_mb;            /* --floor */
	int json;                   /* --json: the verdict as JSON */
	const char *junit;          /* --junit FILE, or NULL */
};

/* The gate: BASE and NEW read (two runs, or two directories of runs paired
 * by their --meta labels), compared, and the verdict written on stdout
 * (and to o->junit).  0 (no regression) or 1 (a regression); -errno with a
 * message in err when the input is bad or missing (-EINVAL), or nothing
 * could be written -- then nothing was written on stdout and no --junit
 * file made, unless writing stdout itself failed. */
int diff_gate(const char *base, const char *nw, const struct diff_opts *o, char *err,
	      size_t errlen);

#endif /* MEMSUP_DIFF_H */
