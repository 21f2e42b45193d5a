/* timeline.h: the evidence directory's two per-sample line formats, written
 * and read here and nowhere else.
 *
 *   rss.jsonl       "[elapsed_s, tree_rss_bytes]", byte for byte what
 *                   Python's json.dumps([float, int]) gives, so readers of
 *                   measure_command's file keep working
 *   timeline.jsonl  {"t": s, "rss": n, "processes": n, "heap": n|null,
 *                   "mapped_anon": n|null, "mapped_file": n|null[, "pss": n]
 *                   [, "cgroup": n], "top": [[pid, rss], ...]}: the traced
 *                   heap and mapping bytes of the same moment (null
 *                   untraced), "pss" at samples where it was measured,
 *                   "cgroup" the run's cgroup memory usage where there is a
 *                   memory cgroup (memory.current), then its memory.stat
 *                   split (as last read: contain/cgroup.c reads it when
 *                   the usage moves, and every tenth sample) into four
 *                   parts that stack to about it,
 *                   "cgroup_anon", "cgroup_page_cache" (file pages but
 *                   shared memory), "cgroup_shmem" (tmpfs, shm_open, shared
 *                   anonymous) and "cgroup_kernel", and its limit events
 *                   so far, "cgroup_limit_hits" (v2 memory.events "max",
 *                   v1 memory.failcnt, and memory.memsw.failcnt under
 *                   --mem-max) and "cgroup_oom_kills" (counts
 *                   since the run began: a rise between two samples is an
 *                   event), each where the kernel gave it, and last "top", the (up
 *                   to TIMELINE_TOP) members with the largest RSS, largest
 *                   first (ties: lower pid first), so rss = sum(top) + the
 *                   rest
 * Every line ends in '\n'; t is seconds since the launch as pyfloat.h
 * writes it, every other number an integer.
 *
 * Writing formats one line into the caller's buffer (evidence.c appends it
 * to its file).  Reading (memsup plot) takes a line of exactly the written
 * form with a strict scanner of that form -- an hour at 100 samples/s is
 * 360,000 lines of each file, and jsonr_parse() on every line cost seconds
 * -- and any other valid JSON (other spacing or key order, an older memsup,
 * a hand-made file) with jsonr; a line that is neither is not a sample.
 *
 * Pure but for timeline_read_file().  Return convention: 0 or -errno.
 */
#ifndef MEMSUP_TIMELINE_H
#define MEMSUP_TIMELINE_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define TIMELINE_TOP 5u
#define TIMELINE_RSS_LINE_MAX 96u     /* rss.jsonl: the longest line, '\n' included */
#define TIMELINE_LINE_MAX 768u        /* timeline.jsonl: about 420 bytes at most */

/* ---- writing ------------------------------------------------------------- */

/* One sample as timeline.jsonl says it.  `traced`: heap and mapped bytes
 * are known (null otherwise); `have_pss`: "pss" is written.  top[0..n_top)
 * is written in the order given (the caller sorts it); a fixed array, so a
 * sample allocates nothing. */
struct timeline_sample {
	double t;                  /* seconds since the launch */
	uint64_t rss;              /* tree RSS, bytes */
	unsigned processes;
	int traced;
	uint64_t heap, mapped_anon, mapped_file;
	int have_pss;
	uint64_t pss;
	int have_cgroup;
	uint64_t cgroup;           /* the cgroup's memory usage, bytes */
	int have_split;            /* memory.stat read: the next four */
	uint64_t cgroup_anon, cgroup_page_cache, cgroup_shmem, cgroup_kernel;
	int have_events;           /* the limit's event counters: the next two */
	uint64_t cgroup_limit_hits, cgroup_oom_kills;
	size_t n_top;              /* <= TIMELINE_TOP */
	struct timeline_top {
		pid_t pid;
		uint64_t rss;      /* bytes */
	} top[TIMELINE_TOP];
};

/* The rss.jsonl line of one sample, '\n' included, into buf (cap >=
 * TIMELINE_RSS_LINE_MAX).  Returns its length. */
size_t timeline_format_rss(double t, uint64_t bytes, char *buf, size_t cap);

/* The timeline.jsonl line of one sample, '\n' included, into buf (cap >=
 * TIMELINE_LINE_MAX).  Returns its length. */
size_t timeline_format_sample(const struct timeline_sample *s, char *buf, size_t cap);

/* ---- reading ------------------------------------------------------------- */

/* What a reader takes from a timeline.jsonl line.  Numbers are doubles: a
 * hand-made line may hold any JSON number. */
struct timeline_point {
	double t;                  /* finite */
	double rss;                /* < 0: absent */
	double heap;               /* < 0: null or absent (untraced) */
	double cgroup;             /* < 0: absent (no memory cgroup) */
	double pss;                /* < 0: absent (smaps not read then) */
	/* memory.stat's split and the limit's event counters: < 0 absent */
	double cgroup_anon, cgroup_page_cache, cgroup_shmem, cgroup_kernel;
	double cgroup_limit_hits, cgroup_oom_kills;
	int has_top;               /* the line had "top" (older ones do not) */
	size_t n_top;              /* the first TIMELINE_TOP entries that are a
				      positive int pid and bytes >= 0 */
	int pid[TIMELINE_TOP];
	double bytes[TIMELINE_TOP];
};

/* One line, without its '\n' (`whole`: it had one; a last line without it
 * is torn unless it is whole JSON, so it only goes to jsonr).  0 when the
 * line is a sample, -EINVAL when not. */
int timeline_parse_rss(const char *p, size_t len, int whole, double *t, double *bytes);
int timeline_parse_sample(const char *p, size_t len, int whole, struct timeline_point *out);

/* The strict scanners alone: 0 only for a line of exactly the written form
 * (the tests hold the writer to it). */
int timeline_scan_rss(const char *p, size_t len, double *t, double *bytes);
int timeline_scan_sample(const char *p, size_t len, struct timeline_point *out);

/* Each line of dirfd/name, in order, to fn(ctx, line, len, whole) (the
 * line without its '\n'; whole: it had one -- only the last may not).
 * Streamed through a small buffer; a line over 64 MB is -E2BIG.  A
 * non-zero return of fn stops and is returned.  *found: the file exists
 * (a missing file is 0, nothing read). */
typedef int (*timeline_line_fn)(void *ctx, const char *line, size_t len, int whole);
int timeline_read_file(int dirfd, const char *name, timeline_line_fn fn, void *ctx, int *found);

#endif /* MEMSUP_TIMELINE_H */
