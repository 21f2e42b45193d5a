/* procfs.h: /proc text parsers (pure, over a buffer) and their readers.
 *
 * Parsing is kept apart from I/O so that the parsers can be tested on
 * captured text (tests/data/proc/).  Every reader takes the proc root
 * directory ("/proc" on a live system, a fixture tree in tests), reads the
 * file with read(2) into a stack buffer and hands it to the parser.
 *
 * Return convention: 0 or -errno.  A process that is gone (the file or the
 * directory vanished, or the kernel says ESRCH because the task exited between
 * open and read) is reported as PROCFS_GONE (-ESRCH) whatever the underlying
 * errno was, so callers can skip it instead of counting a zero.  Parsers
 * return -EINVAL on text they cannot use (truncated, garbage).
 */
#ifndef MEMSUP_PROCFS_H
#define MEMSUP_PROCFS_H

#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define PROCFS_GONE (-ESRCH)
#define PROCFS_COMM_BYTES 64u

/* Bits of procfs_status.have: which fields the text contained. */
enum {
	PROCFS_HAVE_RSS = 1u << 0,
	PROCFS_HAVE_HWM = 1u << 1,
	PROCFS_HAVE_PEAK = 1u << 2,
	PROCFS_HAVE_SIZE = 1u << 3,
	PROCFS_HAVE_PPID = 1u << 4,
	PROCFS_HAVE_NAME = 1u << 5,
	PROCFS_HAVE_TGID = 1u << 6,
	PROCFS_HAVE_RSS_PARTS = 1u << 7, /* RssAnon, RssFile and RssShmem */
	PROCFS_HAVE_IDS = 1u << 8,       /* Uid and Gid (real, effective) */
	PROCFS_HAVE_SWAP = 1u << 9,      /* VmSwap */
	PROCFS_HAVE_NSPID = 1u << 10,    /* NSpid (Linux 4.1) */
};

/* /proc/PID/status: sizes in KiB as the kernel prints them.  Kernel threads
 * and zombies have no Vm* lines; `have` says what was found. */
struct procfs_status {
	uint64_t vm_rss_kb, vm_hwm_kb, vm_peak_kb, vm_size_kb;
	uint64_t rss_anon_kb, rss_file_kb, rss_shmem_kb; /* all three or none */
	uint64_t vm_swap_kb;        /* the process's swap entries (MM_SWAPENTS) */
	uint64_t ruid, euid, rgid, egid; /* real and effective ids */
	pid_t ppid;
	pid_t tgid;                 /* != the pid read: that pid is a thread */
	unsigned nspid_levels;      /* NSpid: its pids, from the reader's PID
				       namespace (/proc's) to its own */
	pid_t nspid_inner;          /* the last: its pid in its own namespace */
	unsigned have;
	char name[PROCFS_COMM_BYTES];
};

/* /proc/PID/stat: the fields memsup uses. */
struct procfs_stat {
	pid_t pid;
	pid_t ppid;
	pid_t pgrp;                 /* field 5 */
	pid_t session;              /* field 6 */
	char state;                 /* 'R', 'S', 'Z', ... */
	uint64_t starttime;         /* clock ticks after boot (field 22) */
	char comm[PROCFS_COMM_BYTES];
};

/* Pure parsers.  `buf` need not be NUL-terminated; `len` bytes are used. */
int procfs_parse_status(const char *buf, size_t len, struct procfs_status *out);
/* comm may hold spaces and ')': the fields after it are found from the LAST
 * ')' in the text. */
int procfs_parse_stat(const char *buf, size_t len, struct procfs_stat *out);
/* statm's second and fourth fields, from one memory map (read at once):
 * resident pages, and the executable's code in pages -- fixed for an
 * image's life and, between the images of different programs, different:
 * it tells which side of an exec a reading saw (pview.c). */
struct procfs_statm {
	uint64_t resident_pages;
	uint64_t text_pages;
};
int procfs_parse_statm(const char *buf, size_t len, struct procfs_statm *out);
/* A children file: space-separated pids.  Stores at most `cap` in `out`, sets
 * *n to how many the text held (may exceed cap: then -ENOSPC is returned and
 * the first cap are stored). */
int procfs_parse_children(const char *buf, size_t len, pid_t *out, size_t cap,
			  size_t *n);

/* /proc/PID/smaps_rollup: the whole address space summed, KiB. */
enum {
	PROCFS_ROLLUP_RSS = 1u << 0,
	PROCFS_ROLLUP_PSS = 1u << 1,
	PROCFS_ROLLUP_SWAP = 1u << 2,
	PROCFS_ROLLUP_ANON = 1u << 3,
	PROCFS_ROLLUP_PSS_PARTS = 1u << 4, /* Pss_Anon/File/Shmem (Linux 5.10+) */
};
struct procfs_rollup {
	uint64_t rss_kb, pss_kb, swap_kb, anon_kb;
	uint64_t pss_anon_kb, pss_file_kb, pss_shmem_kb;
	uint64_t shared_kb;         /* Shared_Clean + Shared_Dirty */
	uint64_t private_kb;        /* Private_Clean + Private_Dirty */
	unsigned have;
};
/* Needs the Rss and Pss lines (-EINVAL otherwise); lines cut off by a short
 * read are not trusted. */
int procfs_parse_rollup(const char *buf, size_t len, struct procfs_rollup *out);

/* Does an ELF image (its first bytes) name a program interpreter, i.e. is
 * it dynamically linked?  1 yes, 0 no (static), -EINVAL when `buf` is not
 * an ELF header with its program headers inside `len`. */
int procfs_parse_elf_interp(const unsigned char *buf, size_t len);

/* /proc/meminfo: MemTotal + SwapTotal in KiB (what the machine can hold at
 * once); -EINVAL without MemTotal. */
int procfs_parse_meminfo(const char *buf, size_t len, uint64_t *ram_swap_kb);

/* Readers.  `root` is the proc root ("/proc"); NULL means "/proc". */
int procfs_read_meminfo(const char *root, uint64_t *ram_swap_kb);
int procfs_read_status(const char *root, pid_t pid, struct procfs_status *out);
int procfs_read_stat(const char *root, pid_t pid, struct procfs_stat *out);
/* PID/statm opened below an open proc root (`proc_fd`, a directory fd), for
 * procfs_pread_statm: the fd, PROCFS_GONE when there is no such process, or
 * -errno (EMFILE, say). */
int procfs_open_statm(int proc_fd, pid_t pid);
/* RSS (statm resident pages x page size) and statm's text pages through an
 * fd held open on PID/statm (PROCFS_GONE once that process is dead,
 * whatever now has its number). */
int procfs_pread_statm(int fd, uint64_t *rss_bytes, uint64_t *text_pages);
int procfs_read_children(const char *root, pid_t pid, pid_t tid, pid_t *out,
			 size_t cap, size_t *n);

int procfs_read_rollup(const char *root, pid_t pid, struct procfs_rollup *out);

/* Is "KEY=" + a value containing `needle` in pid's initial environment
 * (/proc/PID/environ)?  1, 0, or -errno (EACCES for another user's;
 * ENODATA when the file is empty: an empty environment, or an exec in
 * progress, whose new environment the kernel has not placed yet). */
int procfs_environ_has(const char *root, pid_t pid, const char *key,
		       const char *needle);

/* argv of pid, NUL-separated (no trailing NUL), truncated at cap-1 bytes.
 * Empty for kernel threads and zombies. */
int procfs_read_cmdline(const char *root, pid_t pid, char *buf, size_t cap,
			size_t *len);

/* argv of pid with every argument NUL-terminated (so an empty last argument
 * survives), into buf of PROCFS_ARGV_BYTES; *len bytes, 0 for kernel threads
 * and zombies.  A command line that fills the buffer may go on: callers
 * count *len >= PROCFS_ARGV_BYTES - 1 as cut (the last argument ends where
 * the buffer did). */
#define PROCFS_ARGV_BYTES 4096u
int procfs_read_argv(const char *root, pid_t pid, char buf[PROCFS_ARGV_BYTES], size_t *len);

/* Read a whole (small) file, at most cap-1 bytes, NUL-terminated; *len gets
 * the byte count.  0 or -errno; ENOENT and ESRCH become PROCFS_GONE. */
int procfs_read_file(const char *path, char *buf, size_t cap, size_t *len);
/* Same through an fd kept open on a proc file (pread at offset 0). */
int procfs_pread_fd(int fd, char *buf, size_t cap, size_t *len);
/* The same for a kernel list of one record a line (cgroup.procs,
 * /proc/PID/task/TID/children): the kernel hands a list out about a page
 * a read, so these read until a read returns 0, where the two above stop
 * at the first short read (the end of a file made whole at once). */
int procfs_read_list(const char *path, char *buf, size_t cap, size_t *len);
int procfs_pread_list(int fd, char *buf, size_t cap, size_t *len);

/* Bytes per page for statm figures. */
uint64_t procfs_page_size(void);

#endif /* MEMSUP_PROCFS_H */
