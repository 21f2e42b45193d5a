/* report.h: what the shim says about an image when it ends (exit/_exit):
 * JSON to MEMTRACE_OUT ("%p" replaced by the pid) through jsonw, else, when
 * there is no MEMTRACE_DIR (nobody reads the record file) and MEMTRACE_QUIET
 * is not 1, a short human summary on stderr.  Nothing when the image execs.
 * Async-signal-safe: raw write(2), stack buffers, integers only.
 */
#ifndef MEMTRACE_REPORT_H
#define MEMTRACE_REPORT_H

#include "record.h"

void report_end(const struct mt_record *r);

/* Summary text into buf (NUL-terminated); returns its length. */
size_t report_format_summary(const struct mt_record *r, char *buf, size_t cap);
/* The record as one JSON document on fd; 0 or -errno. */
int report_write_json(const struct mt_record *r, int fd);
/* MEMTRACE_OUT pattern with %p replaced by pid (%% -> %); 0 or -ENAMETOOLONG. */
int report_expand_path(const char *pattern, int pid, char *out, size_t cap);

#endif /* MEMTRACE_REPORT_H */
