/* test_shim_harness.h: running workload programs under the shim from
 * Criterion tests, and reading what they left behind.
 *
 * The Criterion runner itself is never preloaded: each run forks, and only
 * the child's environment gets LD_PRELOAD=$MEMTRACE_SO and
 * MEMTRACE_DIR=<a fresh directory>.  Programs named without a '/' are
 * taken from $MT_PROGS.  stdout and stderr go to files next to the record
 * directory and are read back whole.
 */
#ifndef TEST_SHIM_HARNESS_H
#define TEST_SHIM_HARNESS_H

#include <limits.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "record.h"

enum {
	SHIM_NO_DIR = 1 << 0,     /* do not set MEMTRACE_DIR */
	SHIM_NO_PRELOAD = 1 << 1, /* run bare */
	SHIM_ASYNC = 1 << 2,      /* start and return; see shim_wait */
	SHIM_RELATIVE_DIR = 1 << 3, /* run in base/ with MEMTRACE_DIR=rec (relative) */
};

struct shim_run {
	char base[PATH_MAX]; /* fresh tmp dir */
	char dir[PATH_MAX + 8]; /* base/rec: MEMTRACE_DIR */
	pid_t pid;
	int status;          /* wait status */
	char *out, *err;     /* whole stdout/stderr, NUL-terminated (malloc'd) */
};

/* Runs argv (NULL-terminated) with the extra "NAME=value" entries of env
 * (NULL-terminated, may be NULL).  Aborts the test on harness failure. */
void shim_run(struct shim_run *r, const char *const *argv, const char *const *env,
	      unsigned flags);
/* For SHIM_ASYNC runs: waits, then reads the output files. */
void shim_wait(struct shim_run *r);
/* Re-reads the output files (for async runs still going). */
void shim_reload(struct shim_run *r);
/* Removes the tmp dir and frees the buffers. */
void shim_done(struct shim_run *r);

/* The record <pid>.<gen>; asserts it exists and is valid. */
void shim_record(const struct shim_run *r, pid_t pid, uint32_t gen, struct mt_record *out);
/* All records, sorted by (pid, gen), into a malloc'd array; returns count. */
size_t shim_records(const struct shim_run *r, struct mt_record **out);

/* The value of "key=<number>" in text (first match after an optional
 * prefix word); asserts it is there. */
uint64_t shim_value(const char *text, const char *key);
/* Like shim_value, -1 if absent. */
long long shim_value_or(const char *text, const char *key, long long dflt);

/* argv[i] of a record, or NULL. */
const char *shim_argv(const struct mt_record *rec, unsigned i);

#endif /* TEST_SHIM_HARNESS_H */
