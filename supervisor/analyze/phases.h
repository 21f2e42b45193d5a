/* phases.h: phase markers, and the phases they open.
 *
 * Two channels bring markers:
 *  - the marks file: memsup creates DIR/marks and exports its absolute path
 *    to the command as MEMSUP_MARK.  Any program appends one line per
 *    marker: the label, then optionally TAB-separated key=value fields the
 *    writer knows and memsup cannot read from /proc (pid=N, maxrss_kb=N,
 *    maxrss_children_kb=N, mono_ns=N: its CLOCK_MONOTONIC time).  They
 *    are the writer's word: pid= is honoured only for a member of the
 *    tree, and maxrss from a line is marked as self-reported.  memsup
 *    watches the file with inotify (or reads it at every sample without
 *    inotify) and stamps a marker when it sees the line, or at mono_ns.  A regular file, not a FIFO: a writer never blocks, even
 *    after memsup is gone.
 *  - the shim: memtrace_mark() fills a slot of the image's record
 *    (record.h) with the exact time; memsup finds new slots at each sample.
 *
 * At each marker memsup keeps the moment: the tree RSS and process count of
 * the newest sample, the traced heap of each running traced image, and the
 * layered snapshot of the marking process (VmRSS, VmPeak and VmHWM from
 * /proc/PID/status when memsup knows the pid; maxrss of the process and its
 * children from the shim or the line).
 *
 * Phases: markers are kept in time order; each opens a phase that the next
 * one closes, and the time before the first is the phase "(start)".  A
 * phase's peaks (tree RSS, traced heap) are the largest SAMPLES inside it,
 * by the sample's time (samples wait max(0.25 s, 2 periods) for markers
 * that are seen late, then go to their phase): the kernel could
 * reset VmHWM through /proc/PID/clear_refs, but that would change what the
 * program reads from getrusage() and /proc, so memsup does not.
 *
 * Not thread-safe.  Return convention: 0 or -errno.
 */
#ifndef MEMSUP_PHASES_H
#define MEMSUP_PHASES_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "jsonw.h"

#define PHASES_MAX_MARKERS 1024u /* later ones are counted, not kept */

struct phase_log;
struct live;

/* Create DIR/marks (dirfd; it must not exist) and remember `dirpath` for
 * the environment variable.  No inotify is not an error. */
int phases_open(struct phase_log **out, int dirfd, const char *dirpath);
void phases_close(struct phase_log *pl);

/* The launch's CLOCK_MONOTONIC time (a line's mono_ns field is placed
 * against it) and the poll period (how long samples wait for markers). */
void phases_start(struct phase_log *pl, uint64_t start_ns, double poll_s);

/* The end of the run: every sample held back goes to its phase. */
void phases_finish(struct phase_log *pl);

/* "MEMSUP_MARK=<absolute path of DIR/marks>", for the command's environment. */
const char *phases_env_entry(const struct phase_log *pl);

/* The fd to poll for POLLIN (inotify on the marks file), or -1: then call
 * phases_read_file() at every sample. */
int phases_fd(const struct phase_log *pl);

/* What a sample saw, for the open phase and for markers set now. */
struct tree_member;
struct phases_sample {
	double t;                  /* seconds since the launch */
	uint64_t rss;              /* tree RSS */
	unsigned processes;
	int traced;                /* heap is meaningful */
	uint64_t heap;             /* traced heap of the tree */
	/* the members at this sample: a marks line's pid= is the writer's
	 * word, honoured (its /proc figures read) only for a pid that was a
	 * member of the tree at some sample */
	const struct tree_member *members;
	size_t n_members;
};

/* One sample: the open phase's peaks, then the shim markers set since the
 * last call (`live` may be NULL; start_ns is the launch's CLOCK_MONOTONIC
 * time, to place their exact stamps). */
void phases_on_sample(struct phase_log *pl, const struct phases_sample *s,
		      const struct live *live, uint64_t start_ns, const char *proc_root);

/* The shim markers set since the last call (also part of
 * phases_on_sample(); called once more at the end of the run). */
void phases_scan_shim(struct phase_log *pl, const struct live *live, uint64_t start_ns,
		      const char *proc_root);

/* New whole lines of the marks file, each a marker at `t`.  `final`: the end
 * of the run, a last line without its newline counts too. */
void phases_read_file(struct phase_log *pl, double t, int final, const char *proc_root,
		      const struct live *live);

/* The "markers" and "phases" members of the record; `end_s` closes the last
 * phase when `ended`, else it is null (still running). */
void phases_write_json(struct jsonw *w, const struct phase_log *pl, double end_s, int ended);

size_t phases_count(const struct phase_log *pl);

/* The phases as a short table for the end-of-run summary (nothing without
 * markers). */
void phases_print(FILE *f, const struct phase_log *pl, double end_s);

#endif /* MEMSUP_PHASES_H */
