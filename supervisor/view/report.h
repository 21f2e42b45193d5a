/* report.h: the report of `memsup report DIR...` (its front end is
 * commands.h), one row per evidence directory, to compare the runs of a
 * sweep (see man/memsup-report.1).
 *
 * Reads only: each DIR through the evidence reader (evidence/read.h),
 * whose rules say what a missing, half-written, running, killed or old
 * directory is.  A directory that is missing, half-written, still running
 * or unreadable is a row whose status says so; it never stops the other
 * rows.  The report's own JSON is written here and read back here too
 * (report_read_baseline, for memsup diff).
 */
#ifndef MEMSUP_REPORT_H
#define MEMSUP_REPORT_H

#include <stddef.h>

enum report_format { REPORT_TABLE, REPORT_CSV, REPORT_JSON };

enum report_key {
	REPORT_KEY_NONE, REPORT_KEY_DIR, REPORT_KEY_PEAK, REPORT_KEY_HEAP, REPORT_KEY_WALL,
	REPORT_KEY_EXIT, REPORT_KEY_REASON, REPORT_KEY_META,
};

/* How the report is written: the front end's options. */
struct report_opts {
	enum report_format format;
	enum report_key key;   /* --sort; REPORT_KEY_NONE: the order of the DIRs */
	const char *meta_key;  /* REPORT_KEY_META: the NAME of meta:NAME */
	int reverse;           /* --reverse */
};

/* --sort KEY into o: dir, peak, heap, wall, exit, reason or meta:NAME
 * (meta_key then points into key).  0 or -EINVAL. */
int report_parse_sort(struct report_opts *o, const char *key);

/* One row per dirs[i] (n_dirs > 0), written on stdout as o says.  1 when
 * at least one row is broken or its command could not start (status
 * "start failed: WHY", no peak), else 0; -errno with a message in err when
 * memory ran out or stdout could not be written. */
int report_write(char *const *dirs, size_t n_dirs, const struct report_opts *o, char *err,
		 size_t errlen);

/* The one run of a `memsup report --json` file at path, as memsup diff's
 * baseline: its answer into *peak_mb and its OOM kills into *oom (the
 * count, and the first victim when the row names one; oomkills_free it,
 * also after an error).  The row's status must be "ok".  0; -EINVAL with
 * err ("PATH: holds 2 runs; a baseline is one run"); -ENOMEM; or the
 * file's -errno with err. */
struct oomkills;
int report_read_baseline(const char *path, double *peak_mb, struct oomkills *oom, char *err,
			 size_t errlen);

#endif /* MEMSUP_REPORT_H */
