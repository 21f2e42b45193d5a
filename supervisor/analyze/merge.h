/* merge.h: the merged view of one run -- every process image as the poller
 * (outside, /proc, polling resolution) and the shim (inside, exact, one
 * record per image) saw it -- and the tree's peak sample broken down.
 *
 * This is the interface between the code that collects (run.c, live record
 * reading, the per-process poller table) and the code that explains
 * (findings.c, the processes.json and summary writers).  The collector
 * fills a `struct merged_run` at the end of the run; the explainers only
 * read it and never touch /proc or the record files themselves, so they are
 * pure functions that unit tests can feed with made-up runs.
 *
 * Units: bytes for every *_bytes/rss/heap figure, seconds since the start
 * of the run for every *_s figure, KiB only inside the copied mt_record.
 */
#ifndef MEMSUP_MERGE_H
#define MEMSUP_MERGE_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "collect/pview.h" /* enum untraced_why */
#include "analyze/runrecord.h"
#include "record.h"

/* How an image counts in the tree's heap at its heap peak (heap_peak_view). */
enum heap_peak_take {
	HEAP_PEAK_ABSENT = 0,      /* not counted at that sample */
	HEAP_PEAK_POLLED,          /* as the sample read it (its heap_current) */
	HEAP_PEAK_OWN,             /* at its own exact peak (its record's heap_peak) */
};

/* What the merged view keeps of an image's record: its figures, under the
 * names of struct mt_record, without what a run of 100,000 images cannot
 * afford to hold 8 KiB each for (argv and exe are kept at their length in
 * image_view, markers only for images that set some, the histogram up to
 * its last non-empty bucket).  Filled by merge_keep_record(); given back
 * as a record by merge_record_of(). */
struct image_rec {
	int32_t pid, ppid, parent_pid;
	uint32_t version, gen, relation, parent_gen, flags, argc, state, marker_count;
	uint32_t hist_len;         /* buckets in image_view.hist */
	uint64_t start_mono_ns, start_real_ns, end_mono_ns;
	uint64_t heap_current, heap_peak, heap_peak_mono_ns;
	uint64_t heap_at_fork, map_anon_at_fork;
	uint64_t heap_requested_total, heap_largest_request;
	uint64_t calls[MT_CALL_SLOTS];
	uint64_t map_anon_current, map_anon_peak, map_file_current, map_file_peak, map_largest;
	uint64_t map_untracked_calls, map_untracked_bytes;
	uint64_t total_current, total_peak, total_peak_mono_ns;
	int32_t exit_code, exit_signal;
	uint64_t vm_hwm_kb, vm_rss_kb, vm_peak_kb, ru_maxrss_self_kb, ru_maxrss_children_kb;
};

/* One process image (a pid between two execs).  A pid that exec'd has one
 * image per record generation; the poller's samples of that pid are
 * attributed to the image that was running at the sample's time. */
struct image_view {
	/* identity */
	pid_t pid;
	uint32_t gen;              /* record generation (0 when untraced) */
	pid_t ppid;                /* from the record, else /proc at first sight */
	const char *argv;          /* NUL-separated, argv_len bytes; may be NULL */
	size_t argv_len;
	const char *exe;           /* may be NULL */

	/* the shim's view */
	int traced;                /* a valid record exists for this image */
	int record_error;          /* 0, or a recordfile error: "corrupt record" */
	struct image_rec rec;      /* the record's last figures when traced */
	struct mt_marker *markers; /* its first min(marker_count, MT_MARKERS)
				      markers, and their rusage; NULL: none */
	struct mt_marker_rusage *marker_rusage;
	uint64_t *hist;            /* rec.hist_len buckets; NULL: none */
	char *owned;               /* argv and exe of a traced image (argv,
				      exe point into it); freed with the run */

	/* the poller's view */
	int sampled;               /* seen in at least one sample */
	double first_seen_s;
	double last_seen_s;
	unsigned samples_seen;
	uint64_t polled_peak_rss;  /* max RSS over this image's samples */
	double polled_peak_at_s;
	uint64_t polled_hwm_kb;    /* last VmHWM the poller read, 0 if never */
	pid_t sid;                 /* session at first sight (0 unknown) */
	int escaped;               /* left the command's session (setsid) */
	int leftover_killed;       /* still alive after the main process ended */
	int have_status;           /* reaped by memsup: wait_status is valid */
	int wait_status;
	enum untraced_why untraced_why; /* meaningful when !traced */
	int64_t untraced_uid;           /* OTHER_USER: the uid it ran as */

	/* at the tree's peak sample (peak_view.at_s), if it was alive then */
	int at_peak;
	uint64_t peak_rss;         /* its RSS in that sample */
	uint64_t peak_heap;        /* its heap_current then (traced) */
	uint64_t peak_map;         /* its map_anon + map_file current then */
	int have_smaps;            /* the next five were read at that peak */
	uint64_t peak_pss;
	uint64_t peak_anon;        /* RssAnon */
	uint64_t peak_file;        /* RssFile */
	uint64_t peak_shmem;       /* RssShmem */
	uint64_t peak_swap;

	/* at the tree's heap peak (heap_peak_view) */
	enum heap_peak_take heap_peak_take;
	uint64_t heap_peak_bytes;  /* what it counts for there (0: absent) */
	/* at the tree's peak of heap plus mappings (merged_run.total_peak):
	 * taken the same way, by its record's total_peak */
	enum heap_peak_take total_peak_take;
	uint64_t total_peak_bytes;
};

/* The tree at its peak sample. */
struct peak_view {
	double at_s;               /* < 0: no sample was taken */
	uint64_t rss;              /* summed RSS: the record's peak_tree_rss */
	unsigned nprocs;
	uint64_t heap;             /* summed heap_current of traced images */
	uint64_t map_anon;         /* summed traced mmap bytes, anonymous */
	uint64_t map_file;         /* ... file-backed */
	int have_smaps;            /* the sums below cover every process at the peak */
	uint64_t pss;
	uint64_t anon;
	uint64_t file;
	uint64_t shmem;
	uint64_t swap;
	double smaps_age_s;        /* how long after the peak sample they were read */
};

/* The tree's heap at its peak: the polled sum at the sample of the largest
 * traced heap (peaksites.h), with each image that peaked within that
 * sample's interval taken at its exact peak (the shim's own figure, the
 * record's heap_peak).  The interval is from the sample before to the
 * sample after (without one, the start or the end of the run): what the
 * poll could not see into.  An image that was the only traced one counted
 * at the sample is taken at its own peak wherever that was, so a
 * one-process tree's heap peak is the shim's heap_peak exactly.  The
 * other images keep the sample's figures.  Their call sites are taken at
 * the same moments (callsites.h). */
struct heap_peak_view {
	int have;                  /* 0: no such sample (not tracing, none taken) */
	double at_s;               /* the sample's time */
	double before_s, after_s;  /* the samples around it; < 0: none */
	uint64_t polled;           /* the traced heap the sample summed */
	uint64_t heap;             /* the tree's heap at its peak, as above */
	unsigned counted;          /* traced images the sample counted */
	unsigned own;              /* of them, taken at their own peak */
};

/* A record file put aside: the command's word that memsup did not
 * believe (recordfile_plausible, live_believe).  Its image, when the tree
 * had one (in_tree: a believed record whose figures cannot be true),
 * stays in images[] untraced with record_error RECORDFILE_EIMPLAUSIBLE;
 * one that never was the tree's (not believed by collect/belief.h's rule,
 * or of a pid at or above pid_max whatever its file holds) is not an image
 * at all.  `why`: live_why()'s sentence, or the first figure that could
 * not be true. */
struct merge_aside {
	pid_t pid;
	uint32_t gen;
	int in_tree;
	char why[256];
};

struct merged_run {
	const struct sup_record *rec;  /* the resources.json record */
	int tracing;                   /* the shim was injected (no --no-trace) */
	pid_t command_sid;             /* session of the command as it started */
	struct image_view *images;     /* every image ever seen by either view */
	size_t n_images;
	struct peak_view peak;
	struct heap_peak_view heap_peak;
	/* The same for the traced heap plus mappings (heap, anonymous and file
	 * mappings the programs made: each record's total), at the sample
	 * where that sum was largest (peaksites.h, PEAKSITES_TOTAL); an image
	 * is taken at its own exact total_peak by the same rule, and `heap`
	 * is then the tree's heap plus mappings.  The tree's call sites by
	 * default (callsites.h). */
	struct heap_peak_view total_peak;
	/* appended by the collector (merge.c) */
	uint64_t start_mono_ns;        /* CLOCK_MONOTONIC of the launch: turns
					  the record's *_mono_ns into run seconds */
	struct merge_aside *aside;     /* records not believed */
	size_t n_aside;
};

/* ---- building it (merge.c; the collector side) ------------------------- */
struct live;
struct pview;
struct peaksites;

struct merge_input {
	const struct sup_record *rec;
	int tracing;
	pid_t command_pid;
	pid_t command_sid;             /* its session as it started (memsup's at a
					  terminal); 0: its pid (a session of its own) */
	int main_status;               /* wait status of the command, if have_main */
	int have_main;
	uint64_t start_mono_ns;
	struct live *live;             /* NULL when not tracing */
	const struct pview *pview;     /* must outlive the merged run */
	const struct peaksites *sites; /* the tree's peaks (peaksites.h); NULL:
					  no heap peak view (not tracing) */
	uint64_t end_mono_ns;          /* the end of the run (records' times
					  must lie before it) */
	uint64_t memory_kb;            /* RAM + swap; 0: unknown */
};

/* Fill *m: one image per record file (its final contents, read now) and per
 * image the poller saw without one, the poller's figures on each, the peak
 * sample broken down, and the tree's heap at its peak.  The merged run
 * points into `in->pview` and into itself.  0 or -ENOMEM (then *m is empty
 * but valid). */
int merge_build(struct merged_run *m, const struct merge_input *in);
void merge_free(struct merged_run *m);

/* What the merged view keeps of record r for image iv: the figures, argv and
 * exe at their length, the markers that were set.  0 or -ENOMEM.  (The
 * collector calls it; tests that build a merged run by hand may too.) */
int merge_keep_record(struct image_view *iv, const struct mt_record *r);
/* What iv keeps of its record, as a record again (zeros for what it does
 * not keep: the stacks file's count, the peak stamps), for the one JSON
 * writer (common/recordjson.h).  iv must be traced. */
void merge_record_of(const struct image_view *iv, struct mt_record *out);

/* Seconds since the launch for a record's CLOCK_MONOTONIC time (0: -1). */
double merge_mono_s(const struct merged_run *m, uint64_t mono_ns);

/* The merged view's words, shared by every writer (processes.json, the
 * findings, the summary): "static", "secure", ... for enum untraced_why
 * ("unknown" for 0).  A relation's word is names_relation()'s. */
const char *merge_untraced_name(enum untraced_why why);

/* The image's VmHWM in KiB, one rule for every writer: the shim's reading
 * at the image's end when it got there, else the poller's last reading; 0
 * when neither exists.  *src (if not NULL): "shim", "poller" or NULL. */
uint64_t merge_image_hwm_kb(const struct image_view *iv, const char **src);

#endif /* MEMSUP_MERGE_H */
