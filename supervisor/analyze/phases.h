/* phases.h: phase markers, and the phases they open.
 *
 * Two channels bring markers:
 *  - the marks file (collect/marks.h): one line per marker from any program
 *    of the tree.  Its fields are the writer's word: pid= is honoured only
 *    for a member of the tree, and maxrss from a line is marked as
 *    self-reported.  A marker is stamped when memsup sees the line, or at
 *    the line's mono_ns.
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

#define PHASES_MAX_MARKERS 1024u /* later ones are counted, not kept */
#define PHASES_LABEL_BYTES 128u  /* labels longer than this are cut, and say so */
#define PHASES_HEAPS 16u         /* largest traced heaps kept per marker */

struct phase_log;
struct live;
struct marks_file;

enum phase_source { PHASE_FROM_FILE, PHASE_FROM_SHIM };

struct phase_heap {
	int32_t pid;
	uint64_t heap;
};

/* The phase a marker opens: its peaks, from the samples inside it. */
struct phase_peak {
	uint64_t samples;
	uint64_t rss;
	double rss_at_s;
	uint64_t heap;
	int have_heap;
	int seeded;               /* no sample yet: rss is the boundary's */
};

struct phase_marker {
	double t;                 /* seconds since the launch */
	enum phase_source source;
	int32_t pid;              /* 0: not known */
	char label[PHASES_LABEL_BYTES];
	int label_cut;
	/* the newest sample when the marker was seen */
	double sample_t;          /* < 0: no sample yet */
	uint64_t tree_rss;
	unsigned processes;
	int traced;
	uint64_t tree_heap;
	struct phase_heap heaps[PHASES_HEAPS];
	unsigned n_heaps, n_heaps_total;
	/* the marking process */
	int have_status;
	int pid_in_tree;          /* pid was a member of the tree at a sample */
	uint64_t vm_rss_kb, vm_peak_kb, vm_hwm_kb;
	int64_t maxrss_kb, maxrss_children_kb;   /* < 0: not known */
	int have_shim_figures;
	uint64_t heap_current, map_current;
	struct phase_peak phase;
};

/* A log fed by `file`'s lines (NULL: the shim's markers only), which the
 * caller opened and closes after phases_close. */
int phases_open(struct phase_log **out, struct marks_file *file);
void phases_close(struct phase_log *pl);

/* The launch's CLOCK_MONOTONIC time (a line's mono_ns field is placed
 * against it) and the poll period (how long samples wait for markers). */
void phases_start(struct phase_log *pl, uint64_t start_ns, double poll_s);

/* The end of the run: every sample held back goes to its phase. */
void phases_finish(struct phase_log *pl);

/* The fd to poll for POLLIN (inotify on the marks file), or -1: then
 * phases_on_sample() reads the file at every sample. */
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

size_t phases_count(const struct phase_log *pl);

/* What the log holds, for evidence/phasesout.h: the markers in time order,
 * the phase before the first ("(start)"), and how many were dropped. */
const struct phase_marker *phases_markers(const struct phase_log *pl, size_t *n);
const struct phase_peak *phases_before(const struct phase_log *pl);
size_t phases_dropped(const struct phase_log *pl);

#endif /* MEMSUP_PHASES_H */
