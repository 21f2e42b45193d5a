/* recordjson.h: an image's record (record.h) as JSON, the one layout.
 *
 * Both halves write a record through here: the shim's MEMTRACE_OUT (an
 * object per image, or the tree's "records" array) and memsup's
 * processes.json (each traced image's "record").  So an image reads the
 * same wherever it was written, and a key added to the record is added to
 * both at once.
 *
 * The object is the record's two parts:
 *   identity  version, pid, ppid, gen, relation, parent_pid, parent_gen,
 *             exe, argv (an array of strings, as the record keeps it), argc
 *   figures   flags, state, exit_code, exit_signal (null unless
 *             "signaled"), start_real_ns, start_mono_ns, end_mono_ns,
 *             heap {current, peak, peak_mono_ns, requested_total,
 *             largest_request, at_fork, hist},
 *             calls {name: count, for each function called at least once},
 *             maps {anon_current, anon_peak, anon_at_fork, file_current,
 *             file_peak, largest, untracked_calls, untracked_bytes},
 *             total {current, peak, peak_mono_ns},
 *             kernel {vm_hwm_kb, vm_rss_kb, vm_peak_kb, ru_maxrss_self_kb,
 *             ru_maxrss_children_kb},
 *             marker_count, markers [{label, mono_ns, heap_current,
 *             map_current, maxrss_self_kb, maxrss_children_kb}]
 * The shim writes both parts as one object.  processes.json writes the
 * figures alone as "record": the identity is the image's own keys there
 * (pid, gen, ppid, lineage, argv, exe), which memsup completes from /proc.
 *
 * Units are the record's own: bytes; KiB where the key ends in _kb; times
 * in nanoseconds, CLOCK_MONOTONIC (*_mono_ns) or CLOCK_REALTIME
 * (start_real_ns).  processes.json gives each traced image's start and end
 * in seconds since the run's launch beside its record (start_s, end_s).
 *
 * Left out, to keep a line per image short in a run of 100,000: calls
 * never made, and the histogram's buckets after its last non-empty one
 * (hist[b] counts requests of 2^(b-1) < n <= 2^b bytes; a missing bucket
 * is 0).
 *
 * The lean form (processes.json's) also leaves out what has nothing to
 * tell: a figure that is 0, exit_signal when null, an object whose figures
 * are all 0 (heap, calls, maps, total, kernel), hist and markers when
 * empty.  A reader puts them back as those defaults (processes.h,
 * processes_fill) and reads what the whole form would have said.
 *
 * Integers only: async-signal-safe, as the shim's exit paths need.
 */
#ifndef MEMTRACE_RECORDJSON_H
#define MEMTRACE_RECORDJSON_H

#include "record.h"

struct jsonw;

/* The whole record: { identity..., figures... }. */
void recordjson_write(struct jsonw *w, const struct mt_record *r);
enum recordjson_form {
	RECORDJSON_ALL,  /* every key */
	RECORDJSON_LEAN, /* no key whose value is its default (above) */
};
/* The figures alone, as one object. */
void recordjson_write_figures(struct jsonw *w, const struct mt_record *r,
			      enum recordjson_form form);
/* How many of hist[] the object writes: up to the last non-empty bucket. */
unsigned recordjson_hist_len(const uint64_t *hist);

#endif /* MEMTRACE_RECORDJSON_H */
