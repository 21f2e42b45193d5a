/* oomwatch.h: the OOM autopsy -- for every OOM kill of a process
 * of the tree, who the kernel killed, by which limit, and what the tree
 * held at that moment: the record's "oom" list (memsup(1) documents it).
 *
 * What tells a kill, each said in the entry as what it is:
 *   - the run's cgroup's counter of OOM kills (v2 memory.events
 *     "oom_kill", v1 memory.oom_control), read at every sample, whose
 *     event file wakes memsup at once (cgroup.c, watch_oom): a rise of N
 *     is N kills, the trigger of an entry;
 *   - the kernel's log (kmsg.h): its "oom-kill:" line, printed before the
 *     counter rises, names the victim's pid, comm and cgroup and the
 *     cgroup whose limit fired (or the global OOM killer); its "Killed
 *     process" line, printed just after, the victim's RSS.  Read only
 *     when a counter rose, while an entry waits for its second line, and
 *     at the end; a line is taken when its victim's cgroup is the run's
 *     or below it, or its pid was a member;
 *   - without the log (kernel.dmesg_restrict without CAP_SYSLOG): the
 *     member that left between the sample before the rise and the one
 *     after, the largest such, is the victim "inferred", and the limit
 *     is the lowest cgroup whose own limit counter rose (oomlimit.h).
 * A kill without a counter's rise (no memory cgroup: the /proc scan) is
 * found in the log at the end alone.  A SIGKILL that is not the OOM
 * killer's moves no counter and prints no such line: never an entry.
 *
 * The tree at the kill: the members of the sample the event woke, and
 * those of the sample before it that had gone since (the kill came
 * between the two; the victim with the RSS it had then, or the kernel's
 * figure), with their heap from their records, and the cgroup's
 * memory.stat split of the woken sample.  The victim's call sites are added after the run, from its
 * stacks file (which outlives it), by oomwatch_name_sites().
 *
 * Cost: nothing at a sample without a rise but one comparison; at a rise,
 * a copy of the previous sample's members and a few file reads.
 * Return convention: 0 or -errno. */
#ifndef MEMSUP_OOMWATCH_H
#define MEMSUP_OOMWATCH_H

#include <limits.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "contain/contain.h"
#include "contain/oomlimit.h"

#define OOM_MAX_KILLS 16u        /* entries kept; oom_kills counts them all */
#define OOM_MAX_PROCS 16u        /* members listed per kill, largest first */
#define OOM_MAX_SITES 3u
#define OOM_MAX_LINEAGE 16u
#define OOM_ARGV_BYTES 1024u
#define OOM_SITE_BYTES 256u

enum oom_woken {
	OOM_WOKEN_EVENT = 0,      /* the cgroup's event file woke memsup */
	OOM_WOKEN_SAMPLE,         /* a scheduled sample saw the counter rise */
	OOM_WOKEN_END,            /* seen as the run ended */
};
/* "kernel_event", "sample", "end". */
const char *oomwatch_woken_name(enum oom_woken w);

struct oom_proc {
	pid_t pid;
	char comm[64];            /* argv[0]'s base name, or the log's comm */
	uint64_t rss;
	int have_heap;
	uint64_t heap;
	int victim;
};

struct oom_site {
	char name[OOM_SITE_BYTES]; /* "load_table (io.py:88)" */
	uint64_t bytes;
};

struct oom_kill {
	double at_s;              /* the sample that saw it */
	enum oom_woken woken;
	double after_event_ms;    /* wake-up to reading; < 0: null */
	double kernel_at_s;       /* the log's time on the run's clock; < 0: null */
	int from_log;             /* "source": kernel_log, else inferred */
	char evidence[1024];
	/* the victim; pid 0: none found */
	pid_t pid;
	int have_gen;
	uint32_t gen;
	char comm[64];
	char exe[PATH_MAX];       /* "": unknown */
	char argv[OOM_ARGV_BYTES]; /* NUL-separated, argv_len bytes; 0: unknown */
	size_t argv_len;
	pid_t lineage[OOM_MAX_LINEAGE]; /* the command first, the victim last */
	size_t n_lineage;
	int have_rss;             /* the log's anon+file+shmem, else its last sample */
	uint64_t rss;
	int have_kernel_rss;
	uint64_t anon_rss, file_rss, shmem_rss;
	int have_heap;
	uint64_t heap;
	struct oom_site sites[OOM_MAX_SITES];
	size_t n_sites;
	/* the limit */
	enum oom_by by;
	char cgroup[PATH_MAX];    /* "": null */
	int have_limit;
	uint64_t limit;
	char constraint[32];      /* "": null */
	/* the tree */
	double tree_at_s;
	int have_cgroup, have_split;
	uint64_t cgroup_usage, anon, page_cache, shmem, kernel;
	struct oom_proc procs[OOM_MAX_PROCS];
	size_t n_procs, procs_total;
	/* kept for the log's second line */
	uint64_t log_seq;
	int waits_killed_line;
};

struct oom_log {
	int watching;             /* some source could tell a kill: else the
				     record's "oom" is null */
	const char *log_why;      /* the kernel's log unread: why; NULL read */
	struct oom_kill *kills;   /* n of them (at most OOM_MAX_KILLS) */
	size_t n;
	uint64_t unlisted;        /* kills past OOM_MAX_KILLS */
	int memsup_protected;     /* memsup and its sentinel are out of the
				     OOM killer's reach (oomadj.h) */
};

struct oomwatch;
struct live;
struct pview;
struct pview_peak_member;
struct tree_member;

struct oomwatch_config {
	const struct contain_info *containment; /* the run's cgroups */
	const char *kmsg_path;    /* NULL: /dev/kmsg ("" none: tests) */
	const char *vmstat_path;  /* NULL: /proc/vmstat */
};

/* Before the command starts: the kernel's log is read from its end on. */
int oomwatch_open(struct oomwatch **out, const struct oomwatch_config *cfg);
/* The command started at start_ns (CLOCK_MONOTONIC) as pid `command`: the
 * run's clock, and the root of every victim's lineage. */
void oomwatch_launched(struct oomwatch *w, uint64_t start_ns, pid_t command);
void oomwatch_close(struct oomwatch *w);

/* At each sample, after the kernel's counters were read (st) and before
 * the per-process view takes this sample (prev: its members of the last
 * one, pview_current()).  1 when a kill is being looked at (call
 * oomwatch_after at this sample), else 0. */
int oomwatch_before(struct oomwatch *w, const struct contain_state *st,
		    const struct pview_peak_member *prev, size_t n_prev, double prev_at_s);

/* The same sample, after the view took it: now the members present
 * (`cur`, the view's pview_current()), the sample's time, and the wake-up
 * by the kernel's event (0: none) with the moment the reading began. */
void oomwatch_after(struct oomwatch *w, const struct contain_state *st,
		    const struct pview_peak_member *cur, size_t n_cur, const struct pview *pv,
		    const struct live *live, double at_s, uint64_t woke_ns, uint64_t read_ns);

/* As the run ends, after the tree was killed: the log read once more,
 * and the counter's last value (figures) for kills no sample saw. */
void oomwatch_end(struct oomwatch *w, const struct contain_figures *f, const struct pview *pv,
		  const struct live *live, double at_s);

/* memsup's oom_score_adj is -1000 (1) or as it was (0). */
void oomwatch_protected(struct oomwatch *w, int protected);

/* What the record shows; valid until oomwatch_close(). */
const struct oom_log *oomwatch_log(const struct oomwatch *w);

/* The victims' sampled call sites, after the run: name(ctx, pid, gen,
 * sites, cap) fills up to cap sites of that image, largest first, and
 * returns how many. */
typedef size_t (*oomwatch_site_fn)(void *ctx, pid_t pid, uint32_t gen, struct oom_site *sites,
				   size_t cap);
void oomwatch_name_sites(struct oomwatch *w, oomwatch_site_fn name, void *ctx);

/* The victims' command lines where the view had none (a traced process
 * is named by its record, read after the run): image(ctx, pid, gen,
 * have_gen, &argv, &argv_len, &exe) gives them, 0 when it knows the
 * image. */
typedef int (*oomwatch_image_fn)(void *ctx, pid_t pid, uint32_t gen, int have_gen,
				 const char **argv, size_t *argv_len, const char **exe);
void oomwatch_name_images(struct oomwatch *w, oomwatch_image_fn image, void *ctx);

/* The summary's sentence for kill k (the finding "oom_kill"). */
void oomwatch_sentence(const struct oom_kill *k, char *buf, size_t cap);

#endif /* MEMSUP_OOMWATCH_H */
