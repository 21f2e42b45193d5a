/* kmsg.h: the kernel's own account of an OOM kill, read from /dev/kmsg --
 * which process the OOM killer killed, and which limit fired.
 *
 * The kernel (mm/oom_kill.c, Linux 4.19 to 6.x) prints two lines a kill:
 *
 *   oom-kill:constraint=CONSTRAINT_MEMCG,nodemask=(null),cpuset=/,
 *     mems_allowed=0,oom_memcg=/a/b,task_memcg=/a/b/c,task=grower,pid=2479,uid=0
 *   Memory cgroup out of memory: Killed process 2479 (grower) total-vm:125232kB,
 *     anon-rss:97384kB, file-rss:1084kB, shmem-rss:0kB, UID:0 pgtables:228kB
 *     oom_score_adj:0
 *
 * (each one line; a global OOM says ",global_oom" for the oom_memcg part and
 * "Out of memory:" before "Killed").  The summary comes first, before the
 * kernel raises the cgroup's oom_kill counter, and the "Killed process" line
 * just after it: a reader woken by the counter may find the first alone and
 * the second at its next read.  With memory.oom.group every task of the group
 * gets a "Killed process" line of its own under the one summary.
 *
 * Parsing is pure (kmsg_parse_*, over a buffer, no allocation) and kept apart
 * from the reader (kmsg_open ... kmsg_close), which tests feed from a file or
 * a FIFO.  Text is kept as the kernel gave it: /dev/kmsg writes a byte below
 * ' ', above '~' or a '\' as "\xNN", so a comm (15 bytes at most) takes up to
 * 60 characters here, and nothing is unescaped.
 *
 * A comm may hold any byte but NUL, ',', ')', '(' and spaces included, and a
 * cgroup name anything but '/': fields are found from the ends the kernel
 * fixes (the last ",pid=", the last ") " before "total-vm:") and, where two
 * readings remain, by what the kernel guarantees (a comm of 15 bytes at
 * most; task_memcg at or below oom_memcg; a path starting with '/').
 *
 * Return convention: 0 or -errno; the line parsers return 1 for a line they
 * took in.  Parsers return -EINVAL on text that claims to be what they parse
 * but is not (cut short, numbers out of range).
 */
#ifndef MEMSUP_KMSG_H
#define MEMSUP_KMSG_H

#include <limits.h>
#include <stddef.h>
#include <stdint.h>

#define KMSG_DEFAULT_PATH "/dev/kmsg"
/* The kernel formats a record for /dev/kmsg into 8192 bytes
 * (CONSOLE_EXT_LOG_MAX) and fails a read into less with EINVAL. */
#define KMSG_RECORD_MAX 8192u
/* Kills kept; older ones are dropped (and counted) past it. */
#define KMSG_KILLS_MAX 32u
/* pid_max is at most 4194304 (PID_MAX_LIMIT) and pids stay below it. */
#define KMSG_PID_LIMIT 4194304
/* TASK_COMM_LEN - 1: the bytes of a comm, before /dev/kmsg escapes them. */
#define KMSG_COMM_BYTES 15u
/* Room for a why text from kmsg_open. */
#define KMSG_WHY_BYTES 256u

/* One OOM kill, from its one or two lines.  Numbers the lines did not carry
 * are UINT64_MAX (sizes), -1 (uid) or have_* 0. */
struct kmsg_oom {
	uint64_t seq;              /* the kernel's sequence number of the summary
				      line, or of the killed line without one */
	uint64_t ts_us;            /* kernel time of that line, microseconds of
				      local_clock (about CLOCK_MONOTONIC) */
	int have_summary;          /* the "oom-kill:" line */
	char constraint[32];       /* "CONSTRAINT_MEMCG", "CONSTRAINT_NONE",
				      "CONSTRAINT_CPUSET", ...; "" unknown */
	int global;                /* no memory cgroup's limit fired (a constraint
				      other than CONSTRAINT_MEMCG; the kernel
				      says ",global_oom"): the machine, a cpuset
				      or a memory policy ran out */
	char oom_memcg[PATH_MAX];  /* the cgroup whose limit fired; "" none */
	char task_memcg[PATH_MAX]; /* the victim's memory cgroup; "" unknown */
	char comm[64];             /* as printed, escapes kept; "" unknown */
	int32_t pid;               /* in the initial pid namespace; 0 unknown */
	int64_t uid;               /* in the initial user namespace; -1 unknown */
	int have_killed;           /* the "Killed process" line */
	char reason[48];           /* what that line began with: "Memory cgroup
				      out of memory", "Out of memory", ...; ""
				      (older kernels print none) */
	uint64_t total_vm_kb, anon_rss_kb, file_rss_kb, shmem_rss_kb, pgtables_kb;
	int oom_score_adj;
	int have_score_adj;
};

/* One /dev/kmsg record: "PRI,SEQ,TS_USEC,FLAGS[,...];MESSAGE\n", then any
 * number of dictionary lines " KEY=VALUE\n". */
struct kmsg_record {
	unsigned pri;              /* facility << 3 | level */
	uint64_t seq;
	uint64_t ts_us;
	const char *msg;           /* into the record's text: not NUL-terminated */
	size_t msg_len;            /* without the '\n' */
};

/* Records of the kernel facility (0), the only ones a process cannot write:
 * the kernel gives a line written to /dev/kmsg facility LOG_USER when its
 * writer names none or names 0, so an OOM line anyone forged is not one of
 * these. */
#define KMSG_FROM_KERNEL(pri) (((pri) >> 3) == 0)

/* Pure parsers; `len` bytes of text are used, no NUL needed. */

/* Splits one record.  The header line must end with '\n' (a record cut
 * short is -EINVAL); what follows it (the dictionary) is not looked at. */
int kmsg_parse_record(const char *rec, size_t len, struct kmsg_record *out);

/* `o` is reset (kmsg_oom_init) first.  A message (the text after ';') that
 * is an "oom-kill:" summary (kmsg_parse_summary) or a "Killed process" line
 * (kmsg_parse_killed): 1 with the fields it carries; 0 when it is another
 * line (oom_reaper's "reaped process" included); -EINVAL when it is such a
 * line but malformed -- cut short, a pid outside 1..KMSG_PID_LIMIT-1, a comm
 * longer than a comm, a number that overflows.  The message must be whole,
 * as kmsg_parse_record gives it: a number cut at its end ("uid=10" of
 * "uid=1000") cannot be told from a shorter one. */
int kmsg_parse_summary(const char *msg, size_t len, struct kmsg_oom *o);
int kmsg_parse_killed(const char *msg, size_t len, struct kmsg_oom *o);

/* Everything unknown. */
void kmsg_oom_init(struct kmsg_oom *o);

/* Why opening failed, in words, for the evidence and the log: `err` is
 * kmsg_open's -errno; `dmesg_restrict` is kernel.dmesg_restrict (0 or 1),
 * or -1 when it could not be read.  Pure. */
void kmsg_explain(int err, int dmesg_restrict, char *why, size_t cap);

/* ---- the reader --------------------------------------------------------- */

struct kmsg;

struct kmsg_stats {
	uint64_t overruns;         /* reads that failed with EPIPE: records were
				      overwritten before memsup read them */
	uint64_t dropped;          /* kills pushed out of the table */
	uint64_t bad;              /* OOM lines that did not parse, and lines
				      longer than a record */
	uint64_t forged;           /* OOM lines not of the kernel facility */
};

/* Opens `path` (NULL: /dev/kmsg) with O_RDONLY|O_NONBLOCK|O_CLOEXEC and skips
 * to its end, so that only records the kernel logs from now on are read (a
 * FIFO, which cannot seek, has no past to skip).  0 and *out, or -errno and
 * the reason in words in why[cap] (EPERM: kernel.dmesg_restrict=1 and no
 * CAP_SYSLOG; ENOENT: no /dev/kmsg, as in many containers). */
int kmsg_open(struct kmsg **out, const char *path, char *why, size_t cap);

/* A reader over an open fd (a test's file or FIFO); seek_end as kmsg_open.
 * The fd is made non-blocking.  On success the reader owns it (kmsg_close
 * closes it); on failure the caller still does.  0 or -errno. */
int kmsg_open_fd(struct kmsg **out, int fd, int seek_end);

/* Reads every record there is now, without blocking (until EAGAIN, or end
 * of file), and takes in the kernel facility's OOM lines: a summary starts
 * a kill; a killed line completes the latest kill of its pid if that has a
 * summary, no killed line yet and a sequence number a little below its own
 * (its comm, fixed at both ends, then replaces the summary's), or else
 * starts a kill of its own.  A line cut off by the end of what a file or
 * FIFO holds waits for the rest.  Returns how many kills were added or
 * completed (>= 0; a kill whose two lines came in one call counts once),
 * or -errno. */
int kmsg_read_new(struct kmsg *k);

/* The kills seen since opening, oldest first (at most KMSG_KILLS_MAX; valid
 * until the next kmsg_read_new or kmsg_close).  Returns how many. */
size_t kmsg_kills(const struct kmsg *k, const struct kmsg_oom **out);

void kmsg_stats(const struct kmsg *k, struct kmsg_stats *out);

/* Closes the fd and frees the reader; NULL is fine. */
void kmsg_close(struct kmsg *k);

#endif /* MEMSUP_KMSG_H */
