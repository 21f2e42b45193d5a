/* pview.h: the poller's view of each process, sample by sample.
 *
 * tree.c sums the tree; pview keeps, per pid ever sampled, what the merged
 * view needs from outside: first/last seen, samples, polled peak RSS and
 * when, session, argv and exe at first sight, why it has no record -- with
 * each sample attributed to the image (record generation) that was running
 * then (live_image_at()).  It also keeps the members of the tree's peak
 * sample with their RSS, heap and mapping figures, and what smaps_rollup
 * and status said of each at a peak.
 *
 * Cost bound: per member and sample, two hash lookups and three atomic
 * loads (one more for the exec mark; until an image's text pages are
 * learnt, three more; within an exec window, a look at the old image's
 * text); /proc is read only at a pid's first sight (stat, cmdline, exe;
 * at most PVIEW_LOOK_BUDGET_MS of such looks per sample, and four times
 * that for a peak's smaps),
 * once more at its third sample (stat: did it setsid?), once to explain a
 * missing record, and at new tree peaks for smaps_rollup and status -- not
 * more often than every PVIEW_SMAPS_MIN_MS unless the peak grew by
 * PVIEW_SMAPS_GROWTH_PCT percent since the last read (or every
 * PVIEW_SMAPS_RETRY_MS when the last read missed a process; then also at
 * a later sample where the tree holds about the peak again, for the
 * members still without figures).  Where those reads are due, a process
 * whose anonymous pages were all its own at its last smaps_rollup has its
 * Pss from its status instead (below): one rollup, not one a peak, of a
 * single process that grows (sort: its rollup walks every page, a few
 * milliseconds for 350 MB, more than half of memsup's CPU).
 *
 * Pss without the walk.  smaps_rollup's Pss adds each present page's size
 * divided by its map count (fs/proc/task_mmu.c, smaps_account: a page, or
 * a large folio, mapped once counts whole); status's RssAnon, RssFile and
 * RssShmem are the mm's counters (statm's resident - shared, and shared).
 * An anonymous page gets a second mapping only through a fork of the mm
 * that holds it (copy-on-write until either side writes), or KSM merging
 * it with an equal page; a swap entry shared by two mms comes from such a
 * fork too.  So when the last rollup of an image found Pss_Anon equal to
 * Anonymous (every anonymous page mapped once) and no swap, and no process
 * has appeared in the tree since (a fork child is in the tree while it
 * lives: the cgroup, or the /proc scan of descendants), and KSM is not
 * running, its Pss_Anon now is its RssAnon, exactly (up to the per-CPU
 * slack of the kernel's RSS counters where it sums them approximately: at
 * most 32 pages a CPU on a machine of up to 16).  The rest, Pss_File +
 * Pss_Shmem, depends on who else maps those pages (libc: the whole
 * machine); it lies between 0 and RssFile + RssShmem, so it is carried
 * from that rollup (capped at RssFile + RssShmem) only while RssFile +
 * RssShmem is at most PVIEW_DERIVE_FILE_PCT percent of the process's RSS
 * or PVIEW_SMAPS_AGREE_BYTES: the derived Pss is within that of the
 * rollup's at the same moment -- no more than a rollup's own Rss may
 * differ from its sample's and still be taken (PVIEW_SMAPS_AGREE_*).  The
 * anonymous part is taken at the peak sample's moment: its resident pages
 * less the file and shared memory status shows.
 * Processes that share anonymous pages with each other (a parent and its
 * fork children: the readers of a parent's 300 MB) or hold much file or
 * shared memory are read as before.  Not covered: a process that left the
 * tree (an escape) keeping a fork child's share, and a pid reused between
 * two samples (a new process then looks like the old one).
 *
 * Times are CLOCK_MONOTONIC nanoseconds.  Return convention: 0 or -errno.
 */
#ifndef MEMSUP_PVIEW_H
#define MEMSUP_PVIEW_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "collect/live.h"
#include "contain/contain.h"

/* Why a sampled process has no shim record, as far as memsup could tell
 * (inspected while it was alive). */
enum untraced_why {
	UNTRACED_UNKNOWN = 0,   /* not inspected, or nothing conclusive */
	UNTRACED_STATIC,        /* its executable has no ELF interpreter */
	UNTRACED_SECURE,        /* setuid/setgid/capabilities: loader drops LD_PRELOAD */
	UNTRACED_NO_PRELOAD,    /* its environment lacks the shim (env -i, execve envp) */
	UNTRACED_NOT_REQUESTED, /* memsup ran with --no-trace: nothing is traced */
	UNTRACED_NO_SHIM,       /* memsup found no libmemtrace.so: nothing is traced */
	UNTRACED_OTHER_USER,    /* it runs as a user who may not write the records
				   directory (setpriv, su): the shim made no record */
	UNTRACED_PID_NAMESPACE, /* it runs in a PID namespace below memsup's: its
				   record names it by a pid memsup cannot join */
};
#define UNTRACED_COUNT (UNTRACED_PID_NAMESPACE + 1)

#define PVIEW_SMAPS_MIN_MS 250u
#define PVIEW_SMAPS_GROWTH_PCT 10u
#define PVIEW_SMAPS_RETRY_MS 50u   /* after a read that missed a process */
/* smaps_rollup's own Rss must agree with the RSS the sample read of that
 * process (within 10%, and 4 MB for small ones): otherwise the two were
 * taken at different moments (the process freed or grew in between) and
 * the Pss is not this sample's -- it is dropped, never mixed in. */
/* Pss from status (above) while RssFile + RssShmem is at most this
 * percent of the process's RSS, or PVIEW_SMAPS_AGREE_BYTES: the bound on
 * the derived Pss's error. */
#define PVIEW_DERIVE_FILE_PCT 2u
/* Whether KSM merges pages now (any value but 0: it may); absent without
 * CONFIG_KSM, then nothing merges. */
#define PVIEW_KSM_RUN "/sys/kernel/mm/ksm/run"
#define PVIEW_SMAPS_AGREE_PCT 10u
#define PVIEW_SMAPS_AGREE_BYTES (4u << 20)
/* A sample stops looking at newcomers (cmdline, exe, environ) after this
 * long; the rest are looked at the next sample.  Those reads wait for the
 * process's memory map lock, which a process that forks without pause
 * holds nearly all the time: a fork bomb at its limit made one sample
 * last seconds, and the kill waited for it. */
#define PVIEW_LOOK_BUDGET_MS 5u
/* The poller's samples of one image of a pid: generation `gen` is the
 * image live_image_at() named, whether or not its record exists. */
struct pview_img {
	uint32_t gen;
	unsigned samples;
	uint64_t first_ns, last_ns;
	uint64_t peak_rss, peak_ns;
	uint64_t text_pages;       /* statm's, from a reading surely of this
				      image: tells its readings from the next
				      image's around an exec; 0 unknown */
	int inspected;             /* looked at while alive: no record by its
				      2nd sample */
	enum untraced_why why;
	unsigned inspect_tries;    /* postponed or inconclusive looks so far
				      (the exec had not happened yet) */
	char *argv;                /* at inspection (the image's own), or NULL */
	size_t argv_len;
	char *exe;
	int64_t uid;               /* OTHER_USER: the effective uid it ran as */
};

struct pview_proc {
	pid_t pid;
	pid_t ppid;                /* at first sight */
	pid_t sid;                 /* at first sight, re-read at the 3rd sample */
	unsigned samples;
	char *argv;                /* each argument NUL-terminated, malloc'd; may be NULL */
	size_t argv_len;
	char *exe;                 /* malloc'd; may be NULL */
	uint64_t hwm_kb;           /* last VmHWM read (at peaks), 0 if never */
	uint32_t hwm_gen;          /* the image it was read from */
	uint64_t last_sample;      /* the view's sample count at its last one */
	/* its last smaps_rollup, the basis of a Pss from status (above) */
	int basis_alone;           /* its anonymous pages each mapped once, no swap */
	uint32_t basis_gen;        /* the image read */
	uint64_t basis_joins;      /* the view's joins then */
	uint64_t basis_pss_fs;     /* Pss - Pss_Anon, bytes */
	struct pview_img *imgs;
	size_t nimgs;
};

/* One member of the tree's peak sample. */
struct pview_peak_member {
	pid_t pid;
	uint32_t gen;              /* image then */
	uint64_t rss, heap, map;
	int heap_counted;          /* a record: heap and map are its */
	int have_smaps;
	int carried;               /* the figures are an earlier peak
				      sample's (its RSS agreed; its Pss need
				      not: a page shared since then counts
				      less) */
	int derived;               /* the Pss is from status (above), not a
				      rollup: within file + shmem of it */
	uint64_t pss, anon, file, shmem, swap; /* bytes */
};

struct pview_peak {
	uint64_t t_ns;             /* 0: no sample yet */
	uint64_t rss;
	uint64_t heap, map_anon, map_file;
	struct pview_peak_member *m;
	size_t n;
	int have_smaps;            /* every member has smaps figures */
	int carried;               /* some member's are carried: read again
				      at a sample that holds about the peak */
	uint64_t smaps_ns;         /* when they were read (may be an earlier
				      peak sample: within the growth bound) */
	uint64_t smaps_rss;        /* tree RSS of the sample they were read at */
};

/* What one sample adds up to. */
struct pview_sums {
	uint64_t heap, map_anon, map_file; /* over members with a record, in any state */
	unsigned traced;           /* members attributed to a record */
	int have_pss;              /* smaps were read at this sample */
	uint64_t pss;
};

struct pview;

/* `tracing`: the shim was injected (else every process is NOT_REQUESTED). */
int pview_open(struct pview **out, const char *proc_root, int tracing);
/* A sample's look budget, ms (PVIEW_LOOK_BUDGET_MS unless set): tests
 * that read fixture trees set a generous one, so that a sanitizer build on
 * a loaded machine does not postpone the looks they check. */
void pview_set_look_budget(struct pview *pv, unsigned ms);
/* Who may create files in the records directory (its owner, group and
 * mode, as stat(2) gave them), so that a process whose shim could not make
 * its record there for want of permission is said to be OTHER_USER: a
 * command run as root that drops to another user (setpriv, su) keeps the
 * shim in its environment, but the directory memsup made is its own, 0700.
 * Not set: nobody is judged that way. */
void pview_set_records_owner(struct pview *pv, uid_t uid, gid_t gid, mode_t mode);
/* Tests: where KSM's run switch is read (PVIEW_KSM_RUN unless set). */
void pview_set_ksm_path(struct pview *pv, const char *path);
/* MEMSUP_DEBUG=1: says on stderr how many smaps_rollup reads the run made
 * and how many Pss figures came from status instead. */
void pview_close(struct pview *pv);

/* Account one sample of the members `m` (contain_sampled()) read between
 * t_ns and read_end_ns (a pid's image: the one current at t_ns, else one
 * started by read_end_ns).
 * `live` may be NULL (not tracing).  When the sample is a new tree peak
 * (`new_peak`), the peak members are kept and smaps may be read. */
void pview_sample(struct pview *pv, const struct live *live, uint64_t t_ns, uint64_t read_end_ns,
		  const struct tree_member *m, size_t n, int new_peak, uint64_t tree_rss,
		  struct pview_sums *out);

/* The members of the last pview_sample() that it could attribute, each
 * with the image it chose (gen) and what it counted of it: the images
 * behind the sample's pview_sums, for whoever needs exactly those
 * (peaksites.h).  Valid until the next pview_sample(). */
size_t pview_current(const struct pview *pv, const struct pview_peak_member **m);

size_t pview_count(const struct pview *pv);
const struct pview_proc *pview_get(const struct pview *pv, size_t i);
const struct pview_proc *pview_find(const struct pview *pv, pid_t pid);
const struct pview_peak *pview_peak(const struct pview *pv);
/* smaps_rollup reads so far, and Pss figures had from status instead. */
void pview_read_counts(const struct pview *pv, unsigned *rollups, unsigned *derived);

#endif /* MEMSUP_PVIEW_H */
