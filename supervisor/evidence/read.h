/* read.h: the one reader of an evidence directory for the subcommands
 * (memsup report, diff and plot): resources.json as a typed run and
 * processes.json as typed process images.  The subcommands ask for a run
 * and get a struct; none of them names a key of either file.
 *
 * What a directory may be, and the rule for each, written here once
 * (scripts/memsup.py's read_run is the twin, and
 * tests/python/test_readers_agree.py holds both to the same verdicts):
 *
 *   ended          memsup finished the record: the answer is peak_mb.
 *   killed         memsup was killed and its sentinel closed the record
 *                  (reason "supervisor_killed"): the record is whole, but
 *                  memsup never reached its answer (peak_mb null) nor wrote
 *                  processes.json.  The answer is the tree's polled RSS
 *                  peak until then, named "polled_rss": a lower bound, the
 *                  command having been killed with memsup.  A run to show,
 *                  as what it is, not one to compare.
 *   running        reason "running": memsup is still running, or it and
 *                  its sentinel were killed.  Its figures are those of the
 *                  last rewrite; not a run to compare.
 *   start failed   the command never ran: no answer, the record's error
 *                  says why.
 *   old            a record of a memsup before the answer (no peak_mb):
 *                  the answer is its polled RSS peak, "polled_rss".
 *   broken         resources.json unreadable or not an object (an error),
 *                  or a record that is not running and lacks its command,
 *                  wall_s or peak_tree_rss_mb, or has a forged "oom"
 *                  (evidence_run.broken says the first such problem).
 *
 * Return convention: 0 or -errno, with err saying what is wrong with which
 * file ("resources.json: line 3 col 7: ...").
 */
#ifndef MEMSUP_EVIDENCE_READ_H
#define MEMSUP_EVIDENCE_READ_H

#include <stddef.h>

#include "evidence/jsonr.h"
#include "evidence/oomkills.h"

/* Evidence files larger than this are refused, so that a stray huge file
 * cannot exhaust memory.  A fork bomb's processes.json with tens of
 * thousands of processes is still far below it. */
#define EVIDENCE_MAX_FILE_BYTES (256u << 20)

enum evidence_state {
	EVIDENCE_ENDED,        /* memsup finished the record */
	EVIDENCE_KILLED,       /* memsup was killed; its sentinel closed the record */
	EVIDENCE_RUNNING,      /* not over, or memsup and its sentinel were killed */
	EVIDENCE_START_FAILED, /* the command never ran */
};

/* "ended", "killed", "running", "start_failed" (the agreement test's words). */
const char *evidence_state_name(enum evidence_state s);

/* A marker or a phase's start, for a picture. */
struct evidence_mark {
	double t;          /* seconds since the start */
	const char *label; /* borrowed from the run; "" when it has none */
};

/* A run as resources.json says it.  Strings and JSON values are borrowed
 * from doc and live as long as the run. */
struct evidence_run {
	struct jsonr_value *doc;          /* the parsed record (owned) */
	enum evidence_state state;
	char broken[320];                 /* "" or the first problem of the record */
	const char *reason;               /* as written; NULL: null or absent */
	const char *error;                /* the record's error; NULL */
	const struct jsonr_value *meta;   /* --meta labels: an object, or NULL */
	const struct jsonr_value *command; /* an array (of strings), or NULL */
	int has_exit;                     /* exit_status is a number */
	long long exit_status;            /* memsup's exit status */
	double exit_code;                 /* the command's exit code; NAN: none */
	int signal;                       /* the signal that ended it; 0: none */
	double wall_s;                    /* NAN: absent */
	double answer_mb;                 /* the answer; NAN: none */
	const char *source;               /* what answer_mb is ("cgroup",
					     "polled_pss", "polled_rss"); NULL: none */
	double rss_mb;                    /* the polled RSS sum's peak; NAN: absent */
	double rss_at_s;                  /* when; NAN: absent */
	long long samples;                /* samples taken; -1: absent */
	double heap_mb;                   /* the traced heap's peak; NAN: absent */
	double pss_mb;                    /* the polled PSS sum's peak; NAN: absent */
	double cgroup_mb;                 /* the run's cgroup's own peak; NAN: absent */
	double rss_budget_mb;             /* --rss-mb; NAN: none */
	double wall_budget_s;             /* --wall-s; NAN: none */
	long long blind_spots;            /* findings; -1: absent */
	struct oomkills oom;              /* its OOM kills (owned); not known
					     when null or forged */
	struct evidence_mark *marks;      /* markers, else the phases' starts (owned) */
	size_t n_marks;
	int has_processes;                /* processes.json is to be expected */
};

/* DIR's resources.json (dirfd) into *out.  0 when the record was read, even
 * a broken one (out->broken says why); -errno with err when it cannot be
 * read or parsed or is not an object (*out then holds nothing to free but
 * is safe to free). */
int evidence_read_run(int dirfd, struct evidence_run *out, char *err, size_t errlen);
/* A run of nothing known (every figure NAN or -1), as evidence_read_run
 * leaves one it could not read: for a row of a directory that is not
 * there. */
void evidence_run_init(struct evidence_run *r);
void evidence_run_free(struct evidence_run *r);

/* Whether a run has an answer to compare: ended, not broken, with a
 * numeric answer. */
int evidence_run_comparable(const struct evidence_run *r);

/* One process image of processes.json, every key its lean form left out
 * put back (processes_fill), and the layouts of older memsups read the
 * same.  Borrowed values live until the callback returns. */
struct evidence_process {
	long long pid, gen;               /* -1, 0 when absent */
	long long parent_pid, parent_gen; /* the lineage's; -1, 0 when absent */
	const struct jsonr_value *argv;   /* an array, or NULL */
	const char *exe;                  /* NULL: unknown */
	double peak_bytes;                /* VmHWM (the kernel's high-water mark,
					     which no interval misses), else the
					     polled peak; -1: neither */
	double polled_peak_bytes;         /* -1: never sampled */
	double polled_peak_at_s;          /* -1: never sampled */
	double live_bytes;                /* its heap still allocated when it
					     ended by exit or _exit; NAN otherwise */
	double first_seen_s, last_seen_s; /* the poller's; NAN: never sampled */
	double start_s, end_s;            /* the shim's when it has them, else the
					     poller's (end: only for an image
					     whose exit was seen); NAN: unknown */
};

typedef int evidence_process_fn(const struct evidence_process *p, void *ctx);

/* Each image of DIR's processes.json, in order, to fn (a nonzero return
 * stops and is returned).  0, fn's value, or -errno with err. */
int evidence_read_processes(int dirfd, evidence_process_fn *fn, void *ctx, char *err,
			    size_t errlen);

#endif /* MEMSUP_EVIDENCE_READ_H */
