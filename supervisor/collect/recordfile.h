/* recordfile.h: reading the shim's per-process record files (the reader
 * half of common/record.h).
 *
 * A record file may be read while its writer runs, may still be being
 * created (short or without magic), and may be anything at all if someone
 * else wrote it: every function here validates before it trusts, never
 * crashes on what it reads, and returns a distinct error per failure.
 * Return convention: 0, -errno for system errors, or -RECORDFILE_E* for
 * files that are not (yet) valid records.
 */
#ifndef MEMSUP_RECORDFILE_H
#define MEMSUP_RECORDFILE_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "filecheck.h"
#include "record.h"

/* The shared check's answers (common/filecheck.h), under this reader's
 * names, then the reader's own. */
enum {
	RECORDFILE_ESHORT = FILECHECK_ESHORT,     /* shorter than MT_RECORD_SIZE: truncated or being created */
	RECORDFILE_ELONG = FILECHECK_ELONG,       /* longer than MT_RECORD_SIZE */
	RECORDFILE_EMAGIC = FILECHECK_EMAGIC,     /* magic not set (being created) or foreign */
	RECORDFILE_EVERSION = FILECHECK_EVERSION, /* version is not MT_RECORD_VERSION */
	RECORDFILE_ESIZE = FILECHECK_ELAYOUT,     /* record_size field is not MT_RECORD_SIZE */
	RECORDFILE_ECORRUPT = FILECHECK_ECORRUPT, /* fields out of range (pid, state, relation, ...) */
	RECORDFILE_EIDENTITY = FILECHECK_EIDENTITY, /* of another image than its name says */
	RECORDFILE_ENAME = FILECHECK_ENAME,       /* not a "<pid>.<gen>.mtr" name */
	RECORDFILE_EIMPLAUSIBLE,  /* a valid layout whose figures cannot be true */
};

/* Copies the record in an open file into *out, consistently with the rules
 * of record.h: magic is checked first, then `state` and `marker_count` are
 * read, then the whole record; the state and count read first are the ones
 * returned, so a non-RUNNING state comes with a complete exit block and
 * every marker below marker_count is complete.  Strings in *out are
 * NUL-terminated and argv_bytes is clamped whatever the file says. */
int recordfile_read_fd(int fd, struct mt_record *out);
/* A record already copied out of its file (a mapping, a fold entry) is
 * checked as recordfile_read_fd() checks it: filecheck_record() (or
 * filecheck_record_of() against its name), the one check of every reader. */
/* A record file is the traced command's word, not a fact: a program can
 * write one with a valid header.  What a record may claim and still be
 * believed, for one run: */
struct recordfile_bounds {
	uint64_t run_start_ns;   /* CLOCK_MONOTONIC of the launch */
	uint64_t now_ns;         /* the end of the run (or now) */
	uint64_t memory_kb;      /* RAM + swap of the machine; 0: unknown */
};
/* 0 when r's times lie inside the run and its figures inside what the
 * machine can hold (kernel figures within RAM + swap, heap and mapping
 * figures within a 64-bit address space -- not the requests, which are
 * whatever sizes the program asked for, failed ones included --, at most
 * 2^31 markers, peaks not below what is current); else -RECORDFILE_EIMPLAUSIBLE and, in why, the
 * first thing that cannot be true ("VmHWM 9444732965739290 kB is more than
 * the machine's 25165824 kB of RAM and swap").  Pure. */
int recordfile_plausible(const struct mt_record *r, const struct recordfile_bounds *b,
			 char *why, size_t cap);
/* The same by path, or by name relative to an open directory. */
int recordfile_read(const char *path, struct mt_record *out);
int recordfile_read_at(int dirfd, const char *name, struct mt_record *out);

/* "<pid>.<gen>.mtr" -> pid, gen, by the one name rule of
 * common/imagename.h; 0 or -RECORDFILE_ENAME. */
int recordfile_parse_name(const char *name, int32_t *pid, uint32_t *gen);
/* pread until n bytes or the end of the file, EINTR retried: the bytes
 * read (fewer only at the end of the file), or -errno.  For every reader
 * of the evidence directory's files (records, records.fold, stacks). */
ssize_t recordfile_pread_full(int fd, void *buf, size_t n, off_t off);

struct recordfile_entry {
	int32_t pid;
	uint32_t gen;
};

/* Names of the records in dir, sorted by (pid, gen), in a malloc'd array
 * the caller frees (NULL when empty).  Other files are ignored. */
int recordfile_list(const char *dir, struct recordfile_entry **out, size_t *count);
/* The order of that list, by (pid, gen), for qsort. */
int recordfile_entry_cmp(const void *a, const void *b);

/* Text for any error these functions return (also -errno). */
const char *recordfile_strerror(int err);

#endif /* MEMSUP_RECORDFILE_H */
