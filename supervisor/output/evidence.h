/* evidence.h: the evidence directory and the record memsup keeps in it.
 *
 *   DIR/stdout.log      the command's stdout and stderr (O_APPEND)
 *   DIR/rss.jsonl       one "[elapsed_s, tree_rss_bytes]" line per sample,
 *                       byte for byte what Python's json.dumps([float, int])
 *                       gives, so the seed's readers keep working
 *   DIR/timeline.jsonl  one JSON object per sample: t, rss, processes and
 *                       the traced heap and mapping bytes of the same moment
 *                       (null untraced), "pss" at samples where measured, and
 *                       last "top": [[pid, rss_bytes], ...], the (up to
 *                       EVIDENCE_TL_TOP) members with the largest RSS at that
 *                       sample, largest first (ties: lower pid first), so
 *                       rss = sum(top) + the rest
 *   DIR/resources.json  the record (struct sup_record), pretty JSON (indent
 *                       2), replaced atomically: written to a temporary file,
 *                       renamed over; fsync'd (file and directory) when
 *                       `durable`, i.e. at the start and at the end.
 *
 * Return convention: 0 or -errno.  All JSON goes through jsonw.
 */
#ifndef MEMSUP_EVIDENCE_H
#define MEMSUP_EVIDENCE_H

#include <limits.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "jsonw.h"

#define EVIDENCE_MAX_NOTES 8u

struct finding; /* findings.h */
struct phase_log; /* phases.h */

struct sup_leftover {
	pid_t pid;
	char *argv;      /* NUL-separated, malloc'd; argv_len bytes */
	size_t argv_len;
};

/* A re-parented orphan memsup reaped: its status, Python convention. */
struct sup_reaped {
	pid_t pid;
	int exit_code;             /* status, or -signal */
};

#define EVIDENCE_MAX_REAPED 256u

struct sup_record {
	/* what was asked */
	char *const *command;
	int command_argc;
	double poll_s;
	double rss_budget_mb;      /* 0: none (null) */
	double wall_budget_s;      /* 0: none (null) */
	unsigned max_procs_budget; /* --max-procs; 0: none (null) */
	double grace_s;            /* 0: SIGKILL at once (null) */
	const char *cwd;           /* where the command runs */
	char *const *env;          /* the -e overrides, "KEY=VALUE" */
	size_t n_env;
	char *const *meta;         /* --meta labels, "KEY=VALUE", keys unique */
	size_t n_meta;
	const struct phase_log *phases; /* markers and phases (phases.h); NULL: none */
	const char *discovery;     /* "children" or "scan"; NULL before known */
	const char *started_at;    /* ISO 8601 UTC */
	/* what happened */
	const char *reason;        /* NULL (null), "running", "wall_budget_exceeded",
				      "rss_budget_exceeded", "procs_budget_exceeded",
				      "interrupted",
				      "start_failed", "evidence_failed" */
	const char *error;         /* why it could not start, or which evidence
				      write failed; NULL */
	pid_t pid;                 /* the command's pid; 0 when never forked */
	int have_exit;             /* exit_code / signal known */
	int exit_code;             /* status, or -signal (Python convention) */
	int signal;                /* signal that ended the command, 0: none */
	int exit_status;           /* memsup's own; -1 while running */
	double wall_s;
	uint64_t peak_bytes;
	double peak_at_s;          /* < 0: no sample yet */
	uint64_t samples;
	unsigned max_processes;
	struct sup_leftover *leftovers;
	size_t n_leftovers;
	struct sup_reaped reaped[EVIDENCE_MAX_REAPED]; /* first ones only */
	size_t n_reaped;           /* how many there were (may exceed the array) */
	double rusage_children_maxrss_mb; /* < 0: not known yet */
	double memsup_cpu_s;              /* memsup's own user+system CPU; < 0: unknown */
	double poll_interval_p99_s;       /* < 0: fewer than 2 samples */
	const char *notes[EVIDENCE_MAX_NOTES];
	size_t n_notes;
	/* the merged view (shim + poller) */
	int traced;                       /* the shim was injected */
	unsigned processes_traced;        /* images with a valid record */
	unsigned processes_sampled;       /* images the poller saw */
	double peak_heap_mb;              /* at the peak sample; < 0: null */
	double peak_mapped_mb;
	double peak_pss_mb;               /* < 0: not measured */
	const struct finding *findings;   /* blind_spots (findings.h) */
	size_t n_findings;
};

struct evidence {
	int dirfd;
	int log_fd;                /* stdout.log, handed to the command */
	int rss_fd;                /* rss.jsonl */
	int tl_fd;                 /* timeline.jsonl */
	char path[PATH_MAX];       /* absolute path of the directory */
	struct jsonw rss_w;        /* rss.jsonl lines, buffered (see below) */
	struct jsonw tl_w;         /* timeline.jsonl lines, the same way */
	off_t rss_whole, tl_whole; /* bytes of whole lines in each file */
	/* The first write that failed (evidence_fail_describe() words it):
	 * the step and the file name inside the directory; NULL: none. */
	const char *fail_op, *fail_name;
	int fail_err;              /* its -errno */
};

/* The "scope" and "limitation" strings of the record. */
extern const char evidence_scope[];
extern const char evidence_limitation[];

void evidence_record_init(struct sup_record *r);
void evidence_record_note(struct sup_record *r, const char *note);
void evidence_record_free(struct sup_record *r); /* the leftovers */

/* Create `path` (parents as needed; the last component must be new: -EEXIST
 * otherwise) and its stdout.log and rss.jsonl.  On failure nothing is left
 * open; *failed_at names the step. */
int evidence_create(struct evidence *ev, const char *path, const char **failed_at);
void evidence_close(struct evidence *ev);

/* Buffered: whole lines reach the file when the buffer would overflow, at
 * evidence_flush_samples() (run.c calls it about once a second) and at
 * evidence_close().  One write(2) per sample would be most of memsup's
 * per-sample cost on machines where syscalls are dear.  A flush that fails
 * (ENOSPC, EFBIG, EIO) after writing part of the buffer truncates the file
 * back to its last whole line, so a full disk never leaves half a line; the
 * error is sticky (later lines are dropped) and returned by every later
 * call. */
int evidence_append_sample(struct evidence *ev, double elapsed_s, uint64_t bytes);
int evidence_flush_samples(struct evidence *ev);

/* One timeline.jsonl line, buffered like rss.jsonl.  `traced`: write heap
 * and mapped bytes (null otherwise); `have_pss`: add "pss".  top[0..n_top)
 * is written as "top" in the order given (the caller sorts it); a fixed
 * array, so a sample allocates nothing. */
#define EVIDENCE_TL_TOP 5u
struct evidence_tl {
	double t;
	uint64_t rss;
	unsigned processes;
	int traced;
	uint64_t heap, mapped_anon, mapped_file;
	int have_pss;
	uint64_t pss;
	size_t n_top;              /* <= EVIDENCE_TL_TOP */
	struct evidence_top {
		pid_t pid;
		uint64_t rss;      /* bytes */
	} top[EVIDENCE_TL_TOP];
};
int evidence_append_timeline(struct evidence *ev, const struct evidence_tl *s);
int evidence_write_record(struct evidence *ev, const struct sup_record *r, int durable);

/* The first failed write as "OP DIR/NAME: strerror" into buf (cap bytes);
 * returns 0, or -1 (buf "") when nothing failed. */
int evidence_fail_describe(const struct evidence *ev, char *buf, size_t cap);

/* The record as pretty JSON on fd (resources.json, --json). */
int evidence_record_json(int fd, const struct sup_record *r);

/* The rss.jsonl line for one sample, with '\n'.  Returns the length. */
size_t evidence_format_sample(double elapsed_s, uint64_t bytes, char *buf, size_t cap);

#endif /* MEMSUP_EVIDENCE_H */
