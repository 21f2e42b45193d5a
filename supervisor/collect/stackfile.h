/* stackfile.h: reading the shim's stacks files, "<pid>.<gen>.mts" (the
 * reader half of common/stacks.h).
 *
 * A stacks file may be read while its image runs, may still be being made
 * (no magic yet), may be cut short (a full disk, ulimit -f: the shim never
 * publishes an entry the file does not hold, so a short file is only
 * shorter than its layout, not torn), and may be anything at all if someone
 * else wrote it.  Every function validates before it trusts: counts are
 * clamped to the slots and to what the file holds, paths and frame counts
 * to their arrays.  pread(2), never mmap: a truncation under us can only
 * shorten a read, never raise SIGBUS.
 *
 * Return convention: 0, -errno for system errors, or -STACKFILE_E* for
 * files that are not (yet) stacks files.
 */
#ifndef MEMSUP_STACKFILE_H
#define MEMSUP_STACKFILE_H

#include <stddef.h>
#include <stdint.h>

#include "filecheck.h"
#include "stacks.h"

/* The shared check's answers (common/filecheck.h), under this reader's
 * names, then the reader's own.  Every one is at least STACKFILE_ESHORT. */
enum {
	STACKFILE_ESHORT = FILECHECK_ESHORT,       /* shorter than a header: being made, or cut */
	STACKFILE_EMAGIC = FILECHECK_EMAGIC,       /* no magic (being made) or foreign */
	STACKFILE_EVERSION = FILECHECK_EVERSION,   /* version is not MT_STACKS_VERSION */
	STACKFILE_ELAYOUT = FILECHECK_ELAYOUT,     /* entry sizes or slots are not this build's */
	STACKFILE_EIDENTITY = FILECHECK_EIDENTITY, /* pid/gen in the file are not those of its name */
	STACKFILE_ENAME = FILECHECK_ENAME,         /* not a "<pid>.<gen>.mts" name */
};

struct stackfile {
	struct mt_stacks_header h;        /* counts clamped as above */
	struct mt_stacks_module *modules; /* h.module_count, paths terminated */
	struct mt_stack *stacks;          /* h.stack_count, nframes clamped */
	struct mt_stacks_code *codes;     /* h.code_count (Python code objects),
					     names terminated; 0 when the
					     table is not of this layout */
	/* The peak columns were read inside one sequence of the writer's
	 * sequence lock (stacks.h); 0 when the writer kept changing them
	 * (then they may mix two snapshots). */
	int peak_consistent;
};

/* The header alone, checked as stackfile_read_fd checks it: its counts
 * clamped to the slots and to what the file holds.  0 or an error. */
int stackfile_read_header(int fd, int32_t pid, uint32_t gen, struct mt_stacks_header *h);

/* The whole file: header, modules, stacks.  *out is owned by the caller
 * (stackfile_free) on success, empty on failure.  `pid`/`gen` (when pid
 * > 0) must be the header's. */
int stackfile_read_fd(int fd, int32_t pid, uint32_t gen, struct stackfile *out);
int stackfile_read_at(int dirfd, int32_t pid, uint32_t gen, struct stackfile *out);
/* Entries made safe to follow once read (by any path): module paths
 * terminated, counts and frame counts clamped to their arrays
 * (filecheck_stacks_entries). */
void stackfile_clamp_entries(struct stackfile *f);
void stackfile_free(struct stackfile *f);

/* "<pid>.<gen>.mts" of (pid, gen) into buf (>= IMAGENAME_MAX_BYTES). */
void stackfile_name(char *buf, size_t cap, int32_t pid, uint32_t gen);
/* "<pid>.<gen>.mts" -> pid, gen; 0 or -STACKFILE_ENAME. */
int stackfile_parse_name(const char *name, int32_t *pid, uint32_t *gen);

/* The live set of an image now: every stack with sampled blocks live, its
 * estimated bytes, block count and variance (KiB^2), as the live columns
 * say (stacks.h), and its total columns of the same read (what the image
 * itself sampled there: a fork child's start at 0, so live bytes above
 * them are blocks it inherited).  `events` is the header's samples +
 * sampled_frees when it was read: the set cannot have changed while that
 * stays the same. */
struct stackfile_live {
	uint32_t stack;
	uint64_t bytes, count, var;
	uint64_t total_bytes, total_count;
};

struct stackfile_set {
	struct stackfile_live *e;
	size_t n, cap;
	uint64_t events;
	int read;                 /* read at least once */
};

/* Reads the header and, when the events moved since `set` was read (or it
 * never was), the live columns into `set`.  0 (with *changed saying
 * whether it was re-read), or an error (the set is left as it was). */
int stackfile_read_live(int fd, int32_t pid, uint32_t gen, struct stackfile_set *set,
			int *changed);
/* A copy of src into dst (dst's own storage, grown as needed); 0 or
 * -ENOMEM (then dst is empty). */
int stackfile_set_copy(struct stackfile_set *dst, const struct stackfile_set *src);
void stackfile_set_free(struct stackfile_set *s);

/* Text for any error these functions return (also -errno). */
const char *stackfile_strerror(int err);

#endif /* MEMSUP_STACKFILE_H */
