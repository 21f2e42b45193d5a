/* summary.h: one summary for a whole tree, when the shim runs without
 * memsup (`LD_PRELOAD=libmemtrace.so cmd`).
 *
 * A tree would otherwise drown its answer: a wrapper chain (pyenv's shims,
 * make -j8) printed one block per image, hundreds, interleaved.  Instead
 * the first traced image (the root) makes a private directory, exports it
 * as MEMTRACE_DIR with MEMTRACE_TREE=<its pid>.<the directory's inode>
 * (a MEMTRACE_TREE that does not name that very directory, mode 0700 and
 * ours, is ignored: a root never removes what it did not make), and every
 * traced descendant
 * leaves its record there (record.h) and says nothing.  When the root's
 * process ends (not when it execs: the image after the exec has the same
 * pid and is the root still), it reads every record, prints one table on
 * its original stderr (errfd.h) -- largest heap+mmap peak first, ten rows,
 * the rest counted, then the tree's totals -- or, for a tree of one image,
 * that image's own block; writes the tree's JSON when MEMTRACE_OUT has no
 * %p; and removes the directory.  A root that died without running its
 * exit handlers leaves its directory behind; the next root to start
 * removes those of roots that are gone.
 *
 * The root starts a tree when MEMTRACE_DIR is not set (a user's own record
 * directory is the user's output: then nothing is printed, as before) and
 * there is something to say: a stderr summary (not MEMTRACE_QUIET=1, not
 * MEMTRACE_SUMMARY=each, no MEMTRACE_OUT: JSON replaces the text, as
 * before) or a tree JSON (MEMTRACE_OUT without %p).  Never in secure mode.
 * Everything here is raw system calls and stack buffers: no allocation
 * but the two setenv() calls of the constructor (config_export), whose
 * blocks come from the bootstrap arena and never count.
 */
#ifndef MEMTRACE_SUMMARY_H
#define MEMTRACE_SUMMARY_H

#include <stddef.h>
#include <stdint.h>

#include "record.h"

/* Constructor, after config_load and before the record is published: make
 * the tree's directory if this image starts one. */
void summary_start(int32_t pid);

/* 1 if r is (an image of) the root process of a standalone tree. */
int summary_is_root(const struct mt_record *r);

/* The root's end: the table or block (unless quiet), the tree JSON (if
 * asked), then the directory removed. */
void summary_end(const struct mt_record *root);

/* ---- the table, apart from the I/O (unit-tested) ---------------------- */
#define SUMMARY_ROWS 10
#define SUMMARY_CMD_BYTES 64

struct summary_row {
	int32_t pid, parent_pid;
	uint32_t gen, relation, state;
	uint64_t total_peak, heap_peak, anon_peak, file_peak, vm_hwm_kb;
	char cmd[SUMMARY_CMD_BYTES]; /* argv joined by spaces; "..." if cut */
};

struct summary_tree {
	int32_t root_pid;
	uint64_t images, processes, running;
	uint64_t sum_total_peaks;    /* each image's heap+mmap peak, added */
	uint64_t rest_max_total;     /* the largest peak not in top[] */
	unsigned ntop;
	struct summary_row top[SUMMARY_ROWS]; /* largest total_peak first */
};

/* The record file `name` of the records directory open at dirfd into *r,
 * as every reader takes one (common/filecheck.h): a "<pid>.<gen>.mtr" name,
 * MT_RECORD_SIZE bytes, filecheck_record_of() its name's image.  0, or
 * -FILECHECK_E*, or -errno.  Async-signal-safe, no allocation. */
int summary_read_record(int dirfd, const char *name, struct mt_record *r);

void summary_tree_init(struct summary_tree *t, int32_t root_pid);
/* Counts r and keeps it in top[] if it is among the largest. */
void summary_tree_add(struct summary_tree *t, const struct mt_record *r);
/* The table as text into buf (NUL-terminated, cut with a last "\n" when it
 * does not fit); returns its length. */
size_t summary_format(const struct summary_tree *t, char *buf, size_t cap);

#endif /* MEMTRACE_SUMMARY_H */
