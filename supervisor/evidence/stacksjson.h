/* stacksjson.h: DIR/stacks.json, the sampled call sites of
 * a run (callsites.h) as evidence:
 *
 *   version, sample_bytes     the images' sampling interval (null if they
 *                             differed; 1: every block sampled)
 *   tree.total_peak           the sites of every image counted in the
 *   tree.heap_peak            tree's traced heap at the sample where its
 *   tree.rss_peak             heap plus mappings were largest (the
 *                             summary's and flame.svg's moment) / where
 *                             its heap was / where its RSS was (at_s,
 *                             traced_heap, polled_heap -- traced_total and
 *                             polled_total at the total peak -- rss,
 *                             inherited_bytes, estimated_bytes, se_bytes,
 *                             samples, sites: pid, gen, frames, bytes,
 *                             samples, kind, inherited when true); at the
 *                             total and heap peaks an image that peaked
 *                             within the sample's interval (or the only
 *                             one counted) is taken at its exact peak, in
 *                             traced_* and in the sites (callsites.h);
 *                             polled_* is the sample's own sum.  A site
 *                             marked inherited (callsites.h) is in no sum
 *                             and not in the summary
 *   images[]                  per traced image that sampled: pid, gen,
 *                             command, its record's heap_peak, the shim's
 *                             counts (samples, frees, untracked, catch-all,
 *                             skipped, lost, stacks by frame pointers or
 *                             DWARF, sample_ns), and its sites at_peak (its
 *                             own heap peak) and at_exit
 *   frames[]                  what the sites' "frames" (innermost first)
 *                             index: module (index or null), offset (the
 *                             return address as an ELF virtual address of
 *                             the module; null when its file could not be
 *                             read), file_offset (or the address itself,
 *                             without a module), function (or null), file
 *                             and line (of the call, from DWARF; or null),
 *                             inlined (a function inlined into the frame
 *                             after it at the same address: sites list
 *                             every inlined frame, innermost first)
 *   modules[]                 path, build_id (hex or null), symbols (what
 *                             became of its file: named, missing, changed
 *                             since the run, ...), stripped, debug and
 *                             debug_file (where its DWARF was found),
 *                             lines (read, or why not), its frames,
 *                             frames_unnamed, frames_without_line and
 *                             unnamed_why (symbols.h)
 *
 * The same module prints the summary's few lines (as processes.h does for
 * its table).
 *
 * Bytes are estimates (each sampled block of S bytes counts for
 * S / (1 - exp(-S/R)), common/stacks.h); se_bytes is one standard error.
 * Written to a temporary file and renamed over, like processes.json.
 *
 * Return convention: 0 or -errno.
 */
#ifndef MEMSUP_STACKSJSON_H
#define MEMSUP_STACKSJSON_H

#include <stdio.h>

#include "analyze/callsites.h"

int stacksjson_write(int dirfd, const struct callsite_view *v);

/* A site's name as the summary prints it: its three innermost frames (a
 * Python site's Python frames), "function (file:line) < caller ...".
 * Returns the length written. */
size_t stacksjson_site_name(const struct callsite_view *v, const struct callsite *c, char *buf,
			    size_t cap);

/* The largest sites of one image (pid, gen) as it ended, by name, largest
 * first: up to cap of them; how many.  (The OOM autopsy's victim sites.) */
struct stacksjson_named {
	char name[256];
	uint64_t bytes;
};
size_t stacksjson_image_sites(const struct callsite_view *v, pid_t pid, uint32_t gen,
			      struct stacksjson_named *out, size_t cap);

/* The end-of-run summary's lines: the tree's heap and mappings at its peak
 * of heap plus mappings by call site (inherited sites left out), the `rows`
 * largest first, each a process and its three innermost
 * frames, "function (file.c:12)" where the line is known (sites that read
 * the same are one line).  Nothing when no
 * site was sampled then. */
void stacksjson_print(FILE *out, const struct callsite_view *v, size_t rows);

#endif /* MEMSUP_STACKSJSON_H */
