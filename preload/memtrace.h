/* memtrace.h: what a program may call when libmemtrace.so is preloaded.
 *
 * The functions live in the shim only.  Look them up at run time, so the
 * program runs unchanged (and links without -lmemtrace) when the shim is
 * absent:
 *
 *     #define _GNU_SOURCE
 *     #include <dlfcn.h>
 *     #include <memtrace.h>
 *
 *     static void phase(const char *label)
 *     {
 *             memtrace_mark_fn *mark =
 *                     (memtrace_mark_fn *)dlsym(RTLD_DEFAULT, "memtrace_mark");
 *             if (mark)
 *                     mark(label);
 *     }
 *
 *     struct memtrace_stats st;
 *     memtrace_read_stats_fn *rd =
 *             (memtrace_read_stats_fn *)dlsym(RTLD_DEFAULT, "memtrace_read_stats");
 *     if (rd && rd(&st, sizeof st) == 0)
 *             printf("heap now %llu, peak %llu\n",
 *                    (unsigned long long)st.heap_current,
 *                    (unsigned long long)st.heap_peak);
 *
 * (link with -ldl on glibc older than 2.34).  Both functions are
 * thread-safe and async-signal-safe, and never allocate.
 */
#ifndef MEMTRACE_H
#define MEMTRACE_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The calling process's own figures, as its record holds them (see
 * libmemtrace(7)): heap bytes are malloc_usable_size() bytes. */
struct memtrace_stats {
	uint64_t heap_current, heap_peak;
	uint64_t map_anon_current, map_anon_peak;
	uint64_t map_file_current, map_file_peak;
	uint64_t total_current, total_peak; /* heap + mappings; its own peak */
	uint64_t calls_malloc_family;       /* every malloc-family call but free */
	uint64_t calls_free;
};

/* Copies min(size, sizeof *st) bytes of the figures into st (pass
 * sizeof *st: fields are only ever appended).  Returns 0, or -EINVAL if st
 * is NULL. */
int memtrace_read_stats(struct memtrace_stats *st, size_t size);
typedef int memtrace_read_stats_fn(struct memtrace_stats *, size_t);

/* Records a phase marker: `label` (truncated to 47 bytes) with the time and
 * the current heap and mapping figures, in the record's markers.  The first
 * 32 are kept; later ones are only counted.  Returns 0, -EINVAL for a NULL
 * label, or -EBUSY when it could not take the marker slot (another thread
 * held it too long, or a signal handler called it while its thread was
 * inside the shim); that marker is lost and the record gets
 * MT_FLAG_MARKERS_DROPPED. */
int memtrace_mark(const char *label);
typedef int memtrace_mark_fn(const char *);

#ifdef __cplusplus
}
#endif

#endif /* MEMTRACE_H */
