/* record.h: THE contract between libmemtrace.so (writer) and memsup (reader).
 *
 * Every process image that runs with the shim and MEMTRACE_DIR set creates one
 * file in that directory, writes its MT_RECORD_SIZE bytes, maps it shared and
 * updates `struct mt_record` in place.  Nothing else crosses between the two
 * halves: no sockets, no pipes, no text.  The environment variable names live
 * here too.
 *
 * File name: "<pid>.<gen>.mtr", where <gen> counts exec images of the same pid
 * (0 for the first image a pid runs under the shim, 1 after its first exec,
 * ...).  The writer creates it with O_CREAT|O_EXCL, so the first free <gen> is
 * taken; a reader sorts by (pid, gen).  Under memsup the file of an image
 * that has ended is emptied once its record is copied into records.fold
 * (supervisor/collect/fold.h): the name stays while the run goes on, so the
 * first free <gen> is the same.  memsup's MEMTRACE_DIR is a staging
 * directory on a tmpfs where it can (supervisor/collect/staging.h): the
 * evidence directory then keeps records.fold and, in records/, only what
 * could not be folded; readers of an evidence directory read both.
 *
 * Consistency rules (what a reader may rely on while the writer runs):
 *  - The file is created, sized and filled (identity, argv, exe) *before*
 *    `magic` is stored with release order.  A reader that sees magic ==
 *    MT_RECORD_MAGIC (acquire load) sees a complete identity block.  A file
 *    shorter than MT_RECORD_SIZE, or with another magic, version or
 *    `record_size`, is not a record ("corrupt record" for memsup).
 *  - Every counter is a naturally aligned 64-bit field written with a single
 *    store or atomic RMW, so each one read alone is a value the counter really
 *    had (total_current, and in a multithreaded image the activity counters,
 *    may lag, as their comments below say; all are exact at the end).  Counters are *not* a snapshot across fields: `heap_peak >=
 *    heap_current` holds in the writer, but a reader may see a fresh current
 *    with a stale peak.  Readers that need a coherent pair take max().
 *  - Markers: slot i is filled completely, then `marker_count` is raised to
 *    i+1 with release order; read the count (acquire) then the slots below it.
 *  - End of image: the exit block (`exit_*`, `end_*`, kernel figures) is
 *    filled, then `state` is stored with release order.  A record whose state
 *    is still MT_STATE_RUNNING after its process died was killed (SIGKILL) or
 *    crashed where no handler could run (the shim installs no signal
 *    handlers); its counters are the last ones.  An exec that fails stores
 *    RUNNING again (end_mono_ns back to 0), so EXECED is final only once the
 *    <pid>.<gen+1> record exists or the process is gone.  Counters may still
 *    move after `state` is final: a library destructor that runs after the
 *    shim's exit handler may still free memory.
 *
 * What the figures mean:
 *  - Heap bytes are the next allocator's malloc_usable_size() of each block,
 *    counted at allocation and again at free, so they cancel exactly.
 *  - Mapping bytes are whole pages of regions mapped through the interposed
 *    mmap/mmap64/mremap (not the allocator's or the loader's own mappings).
 *  - A fork child gets its own record (relation FORK): current figures are
 *    the parent's at fork (the memory it inherited, kept in *_at_fork too),
 *    peaks equal them, and calls, histogram, requested and largest start
 *    at zero.
 *  - The shim writes these files with O_CREAT|O_EXCL|O_NOFOLLOW, mode 0644,
 *    and keeps no descriptor open (the mapping is enough).
 *
 * All byte counts are bytes; all *_kb fields are KiB as the kernel prints
 * them; times are nanoseconds, *_mono_ns on CLOCK_MONOTONIC (comparable with
 * memsup's own clock, same boot) and *_real_ns on CLOCK_REALTIME.
 */
#ifndef MEMTRACE_RECORD_H
#define MEMTRACE_RECORD_H

#include <stdint.h>

/* ---- environment: the only other thing both halves agree on ------------ */
#define MT_ENV_DIR    "MEMTRACE_DIR"    /* directory for record files          */
#define MT_ENV_OUT    "MEMTRACE_OUT"    /* JSON summary path, %p = pid         */
#define MT_ENV_QUIET  "MEMTRACE_QUIET"  /* "1": no stderr summary at exit      */
#define MT_ENV_FOLLOW "MEMTRACE_FOLLOW" /* "1": re-inject into scrubbed envps  */
#define MT_ENV_PARENT "MEMTRACE_PARENT" /* lineage hand-off across exec/spawn:
                                           "<pid>.<gen>:<relation-number>"     */
#define MT_ENV_SUMMARY "MEMTRACE_SUMMARY" /* stderr summary without
                                           MEMTRACE_DIR: "tree" (default, one
                                           table from the root image) or "each"
                                           (a block from every image)          */
#define MT_ENV_TREE   "MEMTRACE_TREE"   /* set by a standalone root image with
                                           MEMTRACE_DIR=<its private directory>:
                                           "PID.INODE", the root's pid and the
                                           directory's inode; the image of that
                                           pid prints the table and removes the
                                           directory, only if MEMTRACE_DIR is
                                           still that one (summary.h); the
                                           others stay silent                   */
#define MT_ENV_SAMPLE "MEMTRACE_SAMPLE_BYTES" /* mean bytes between sampled
                                           allocations (stacks.h); 0 = off  */
#define MT_ENV_DEBUG  "MEMTRACE_DEBUG"  /* "1": each image says on stderr the
                                           decisions it made (lineage, record
                                           file, standalone tree)           */

#define MT_RECORD_SUFFIX ".mtr"

/* ---- layout constants ---------------------------------------------------- */
#define MT_RECORD_MAGIC   UINT64_C(0x3130304345524d54) /* "MTREC001" little-endian */
#define MT_RECORD_VERSION 1u
#define MT_RECORD_SIZE    8192u /* file size; the struct is padded to it */

#define MT_ARGV_BYTES   2048u /* argv, NUL-separated, truncated (see argv_*) */
#define MT_EXE_BYTES    256u  /* readlink(/proc/self/exe), truncated         */
#define MT_MARKERS      32u   /* phase markers kept; later ones are counted  */
#define MT_LABEL_BYTES  48u   /* marker label, NUL-terminated, truncated      */
#define MT_MAP_SLOTS    16384u /* mapped regions tracked at once per process */
#define MT_HIST_BUCKETS 64u   /* bucket b: requests with 2^(b-1) < n <= 2^b;
                                 bucket 0 holds n == 0 and n == 1            */

/* How this image came to be, relative to `parent_pid`.`parent_gen`. */
enum mt_relation {
	MT_REL_ROOT = 0,    /* no traced parent: the first traced process        */
	MT_REL_FORK = 1,    /* fork()/clone child of a traced image               */
	MT_REL_VFORK = 2,   /* image exec'd by a vfork() child (or by any child
	                       that shares its parent's memory and execs without
	                       a fork handler running): the vfork child itself
	                       has no record, parent_* names the vforking image  */
	MT_REL_EXEC = 3,    /* replaced image parent_pid.parent_gen by exec       */
	MT_REL_SPAWN = 4,   /* posix_spawn/posix_spawnp child                     */
	MT_REL_SYSTEM = 5,  /* system() child                                     */
	MT_REL_POPEN = 6,   /* popen() child                                      */
	MT_REL_UNKNOWN = 7, /* a traced parent exists, route unknown (raw clone)  */
};
#define MT_REL_COUNT 8u /* relations: every valid value is below it */
/* A child image that starts without a valid MEMTRACE_PARENT (glibc's system()
 * and popen() spawn through an internal clone, past every hook) looks for the
 * newest record of getppid() in MEMTRACE_DIR; if there is one, parent_* names
 * it and the relation is that record's `spawn_relation` when non-zero (the
 * parent was inside system()/popen()), MT_REL_UNKNOWN otherwise. */

/* How the image ended.  Stored last, with release order. */
enum mt_state {
	MT_STATE_RUNNING = 0, /* still running, or died without running a hook   */
	MT_STATE_EXITED = 1,  /* exit()/return from main (atexit/destructor ran)  */
	MT_STATE_UNDERSCORE_EXIT = 2, /* _exit()/_Exit()                          */
	MT_STATE_EXECED = 3,  /* replaced by exec; see the <pid>.<gen+1> record   */
	MT_STATE_SIGNALED = 4,/* a fatal signal was on its way (exit_signal)      */
};
#define MT_STATE_COUNT 5u /* states: every valid value is below it */

/* Indices into `calls`. */
enum mt_call {
	MT_CALL_MALLOC,
	MT_CALL_CALLOC,
	MT_CALL_REALLOC,
	MT_CALL_REALLOCARRAY,
	MT_CALL_FREE,
	MT_CALL_POSIX_MEMALIGN,
	MT_CALL_ALIGNED_ALLOC,
	MT_CALL_MEMALIGN,
	MT_CALL_VALLOC,
	MT_CALL_PVALLOC,
	MT_CALL_MMAP,   /* mmap and mmap64 (the same symbol's two names) */
	MT_CALL_MUNMAP,
	MT_CALL_MREMAP,
	MT_CALL_COUNT,
};
#define MT_CALL_SLOTS 16u /* room for MT_CALL_COUNT, kept fixed for the layout */

/* Flags (bit set, written at record creation or once later). */
#define MT_FLAG_ARGV_TRUNCATED  (1u << 0) /* argv did not fit MT_ARGV_BYTES */
#define MT_FLAG_EXE_TRUNCATED   (1u << 1)
#define MT_FLAG_MULTITHREADED   (1u << 2) /* counters switched to atomics    */
#define MT_FLAG_FOLLOWED        (1u << 3) /* this image put the preload back
                                             into a scrubbed envp it exec'd
                                             or spawned (MEMTRACE_FOLLOW=1)  */
#define MT_FLAG_SECURE          (1u << 4) /* AT_SECURE image (MEMTRACE_OUT and
                                             MEMTRACE_FOLLOW ignored)        */
#define MT_FLAG_MARKERS_DROPPED (1u << 5) /* more than MT_MARKERS markers    */
#define MT_FLAG_MAP_OVERFLOW    (1u << 6) /* map table full: see map_untracked_* */
#define MT_FLAG_HEAP_UNSIZED    (1u << 7) /* the next malloc_usable_size is not
                                             the next malloc's: heap byte
                                             figures stay 0, calls still count */
#define MT_FLAG_LINEAGE_GUESSED (1u << 8) /* parent_* came from the newest
                                             record of getppid(), not from
                                             MEMTRACE_PARENT                 */
#define MT_FLAG_HEAP_FOREIGN    (1u << 9) /* the program's malloc is not the
                                             shim's (another allocator first
                                             in LD_PRELOAD, or the program's
                                             own): the shim sees none of its
                                             heap, heap figures stay 0, and
                                             that allocator's own mmaps are
                                             in the mapping figures          */
#define MT_FLAG_HUGETLB         (1u << 10) /* a mapping made through the hooks
                                             had MAP_HUGETLB: pages of the
                                             huge page pool, in the mapping
                                             figures but in no RSS, VmHWM or
                                             memory-cgroup figure            */

struct mt_marker {
	uint64_t mono_ns;
	uint64_t heap_current;  /* heap_current when the marker was set */
	uint64_t map_current;   /* map_anon_current + map_file_current  */
	char label[MT_LABEL_BYTES];
};

struct mt_record {
	/* -- header: magic is written last at creation (release) -------------- */
	uint64_t magic;
	uint32_t version;
	uint32_t record_size;   /* == MT_RECORD_SIZE */

	/* -- identity: written before magic, constant afterwards -------------- */
	int32_t pid;
	int32_t ppid;
	uint32_t gen;           /* exec generation of this pid (file name) */
	uint32_t relation;      /* enum mt_relation */
	int32_t parent_pid;     /* record this image came from; 0 when ROOT */
	uint32_t parent_gen;
	uint32_t flags;         /* MT_FLAG_* (may gain bits later, atomic OR) */
	uint32_t argc;          /* real argc, even when argv was truncated */
	/* The image's start: when the shim's constructor ran, or a fork's
	 * child handler; in a new image, the earliest peak stamp when that
	 * is sooner (other libraries' constructors that ran before the
	 * shim's and allocated), so that no peak time precedes it.
	 * start_real_ns is the same moment on CLOCK_REALTIME. */
	uint64_t start_mono_ns;
	uint64_t start_real_ns;

	/* -- heap (malloc family), counted in malloc_usable_size() bytes ------ */
	/* Once multithreaded, every heap figure first gathers in per-thread
	 * shards and reaches the record whenever a thread has made 1024 calls
	 * of one kind since it last did, whenever the thread's not yet added
	 * live bytes pass +-64 KiB, when it exits, and at the end of the
	 * image.  Live, calls[], hist[], heap_requested_total and
	 * heap_largest_request may lag by up to 1023 calls of each kind per
	 * running thread, and heap_current by less than 64 KiB per
	 * running thread (the bound memsup's live figures carry); heap_current may
	 * then even read below zero as an int64_t (one thread freed blocks whose
	 * allocation another thread has not added yet): readers clamp it at 0.
	 * heap_peak is exact to within 64 KiB per running thread (a thread tests
	 * the peaks only when its own bytes leave a room it last computed from
	 * the shared figures, and other threads' additions make that room
	 * stale).  At the end of the image (state != RUNNING) every figure is
	 * exact. */
	uint64_t heap_current;
	uint64_t heap_peak;
	uint64_t heap_peak_mono_ns;  /* see heap_peak_stamp (end of struct) */
	/* Requests count whether or not they were served: malloc(SIZE_MAX)
	 * fails and is still the largest request, and the sum wraps modulo
	 * 2^64 as it passes. */
	uint64_t heap_requested_total; /* sum of requested sizes, not usable */
	uint64_t heap_largest_request;
	uint64_t calls[MT_CALL_SLOTS];
	uint64_t hist[MT_HIST_BUCKETS]; /* requested sizes, see MT_HIST_BUCKETS */

	/* -- mappings made through mmap/mremap (not the heap's own) ----------- */
	uint64_t map_anon_current;
	uint64_t map_anon_peak;
	uint64_t map_file_current;
	uint64_t map_file_peak;
	uint64_t map_largest;        /* largest single mapping, bytes */

	/* -- heap + mappings together: its own peak, not a sum of peaks ------- */
	/* total_current is stored only when total_peak rises, on mapping calls
	 * and at the end (so that an ordinary malloc or free writes one live
	 * figure, not two): live, heap_current + map_anon_current +
	 * map_file_current is the current total; at the end (state !=
	 * RUNNING) it is exact. */
	uint64_t total_current;
	uint64_t total_peak;
	uint64_t total_peak_mono_ns; /* see total_peak_stamp */

	/* -- end of image: filled, then `state` stored (release) -------------- */
	uint64_t end_mono_ns;
	int32_t exit_code;           /* argument of exit()/_exit(), if known */
	int32_t exit_signal;         /* fatal signal number, MT_STATE_SIGNALED */
	uint64_t vm_hwm_kb;          /* /proc/self/status at the end */
	uint64_t vm_rss_kb;
	uint64_t vm_peak_kb;
	uint64_t ru_maxrss_self_kb;  /* getrusage(RUSAGE_SELF) */
	uint64_t ru_maxrss_children_kb; /* getrusage(RUSAGE_CHILDREN) */
	uint32_t state;              /* enum mt_state, stored last */
	uint32_t marker_count;       /* markers set, may exceed MT_MARKERS */

	struct mt_marker markers[MT_MARKERS];

	char exe[MT_EXE_BYTES];      /* NUL-terminated */
	char argv[MT_ARGV_BYTES];    /* argv[0] NUL argv[1] NUL ... (argv_bytes) */
	uint32_t argv_bytes;         /* bytes used in argv, including NULs */

	/* -- appended fields (still version 1: nothing had shipped) ---------- */
	/* Peak times without a clock read per allocation: the clock is read when
	 * the peak first reaches next = stamp + max(64 KiB, stamp / 64) (stamp
	 * starts at 0, so the first allocation is stamped).  *_peak_stamp is the
	 * peak value at that moment and *_peak_mono_ns its time, so the final
	 * peak P satisfies stamp <= P < stamp + max(64 KiB, stamp / 64): the time
	 * is when the figure first came that close to its final peak. */
	uint64_t heap_peak_stamp;
	uint64_t total_peak_stamp;
	/* mmap/mremap results not tracked because the shim's map table
	 * (MT_MAP_SLOTS regions) was full; their bytes are in no map figure.
	 * A region split by a partial munmap when the table is full loses its
	 * tail the same way (counted here, MT_FLAG_MAP_OVERFLOW set). */
	uint64_t map_untracked_calls;
	uint64_t map_untracked_bytes;
	/* MT_REL_SYSTEM / MT_REL_POPEN while this image is inside system() (set
	 * before, cleared after) or has a popen() stream open (set before popen,
	 * cleared by the pclose of the last one); 0 otherwise.  Read by children
	 * that arrive without MEMTRACE_PARENT (see enum mt_relation). */
	uint32_t spawn_relation;
	uint32_t reserved0;
	/* The layered snapshot of markers[i] that only the marking process can
	 * take: getrusage() ru_maxrss of itself and of its reaped children, in
	 * KiB, filled with markers[i] before marker_count is raised.  0: not
	 * known (a record of an older build). */
	struct mt_marker_rusage {
		uint64_t maxrss_self_kb;
		uint64_t maxrss_children_kb;
	} marker_rusage[MT_MARKERS];
	/* The image's stacks file (stacks.h, "<pid>.<gen>.mts"): a count the
	 * shim raises (release) after each change of the file's live columns
	 * (a sampled block allocated or freed) and when it makes the file; 0:
	 * no stacks file yet.  A reader that saw the same value before has
	 * nothing new to read in the live columns (memsup reads them at the
	 * tree's peaks).  A fork child starts at 0 (no file of its own yet). */
	uint64_t stacks_changes;
	/* A fork child's heap_current and map_anon_current as the fork left
	 * them: the parent's blocks and regions, which the child holds too
	 * (the same addresses, pages shared until written) until it frees
	 * them.  0 for an image that did not start by fork.  A tree's heap
	 * summed over its images counts these bytes once per child; memsup
	 * names that (heap_inherited). */
	uint64_t heap_at_fork;
	uint64_t map_anon_at_fork;
};

_Static_assert(sizeof(struct mt_record) <= MT_RECORD_SIZE,
	       "struct mt_record must fit its fixed file size");
_Static_assert(MT_CALL_COUNT <= MT_CALL_SLOTS, "calls[] too small");
_Static_assert(MT_REL_COUNT == MT_REL_UNKNOWN + 1, "MT_REL_COUNT follows the last relation");
_Static_assert(MT_STATE_COUNT == MT_STATE_SIGNALED + 1, "MT_STATE_COUNT follows the last state");

#endif /* MEMTRACE_RECORD_H */
