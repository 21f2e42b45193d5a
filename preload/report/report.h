/* report.h: what the shim says about one image when it ends (exit/_exit;
 * nothing when it execs):
 *  - MEMTRACE_OUT with %p: that image's JSON, at the pattern with %p
 *    replaced by the pid;
 *  - MEMTRACE_SUMMARY=each (and no MEMTRACE_DIR of the user's): its short
 *    human block on the original stderr (errfd.h);
 *  - the root of a standalone tree: the tree's summary (summary.h).
 * Async-signal-safe: raw write(2), stack buffers, integers only.
 */
#ifndef MEMTRACE_REPORT_H
#define MEMTRACE_REPORT_H

#include <stddef.h>

#include "record.h"

void report_end(const struct mt_record *r);
/* 1 if report_end(r) will write to stderr (so stderr must be kept). */
int report_will_speak(const struct mt_record *r);
/* MEMTRACE_OUT pattern with %p replaced by pid (%% -> %); 0 or -ENAMETOOLONG. */
int report_expand_path(const char *pattern, int pid, char *out, size_t cap);

#endif /* MEMTRACE_REPORT_H */
