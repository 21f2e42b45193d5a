/* recordjson.c: an image's record as JSON (see recordjson.h). */
#include <string.h>

#include "jsonw.h"
#include "names.h"
#include "recordjson.h"

static void put_u(struct jsonw *w, const char *key, uint64_t v)
{
	jsonw_key(w, key);
	jsonw_uint(w, v);
}

static void put_name(struct jsonw *w, const char *key, const char *name)
{
	jsonw_key(w, key);
	jsonw_string(w, name ? name : "?");
}

unsigned recordjson_hist_len(const uint64_t *hist)
{
	unsigned n = MT_HIST_BUCKETS;
	while (n > 0 && hist[n - 1] == 0)
		n--;
	return n;
}

static void put_identity(struct jsonw *w, const struct mt_record *r)
{
	put_u(w, "version", r->version);
	jsonw_key(w, "pid");
	jsonw_int(w, r->pid);
	jsonw_key(w, "ppid");
	jsonw_int(w, r->ppid);
	put_u(w, "gen", r->gen);
	put_name(w, "relation", names_relation(r->relation));
	jsonw_key(w, "parent_pid");
	jsonw_int(w, r->parent_pid);
	put_u(w, "parent_gen", r->parent_gen);
	jsonw_key(w, "exe");
	jsonw_string_n(w, r->exe, strnlen(r->exe, MT_EXE_BYTES));
	jsonw_key(w, "argv");
	jsonw_array_begin(w);
	uint32_t used = r->argv_bytes < MT_ARGV_BYTES ? r->argv_bytes : MT_ARGV_BYTES;
	for (uint32_t off = 0; off < used;) {
		size_t len = strnlen(r->argv + off, used - off);
		jsonw_string_n(w, r->argv + off, len);
		off += (uint32_t)len + 1;
	}
	jsonw_array_end(w);
	put_u(w, "argc", r->argc);
}

/* A figure, unless the lean form leaves it out for being 0. */
static void put_fig(struct jsonw *w, int lean, const char *key, uint64_t v)
{
	if (!lean || v)
		put_u(w, key, v);
}

/* Whether any of n figures is not 0: the lean form leaves an object of
 * zeros out whole. */
static int any_set(const uint64_t *v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (v[i])
			return 1;
	return 0;
}

static void put_figures(struct jsonw *w, const struct mt_record *r, int lean)
{
	put_fig(w, lean, "flags", r->flags);
	put_name(w, "state", names_state(r->state));
	if (!lean || r->exit_code) {
		jsonw_key(w, "exit_code");
		jsonw_int(w, r->exit_code);
	}
	if (r->state == MT_STATE_SIGNALED) {
		jsonw_key(w, "exit_signal");
		jsonw_int(w, r->exit_signal);
	} else if (!lean) {
		jsonw_key(w, "exit_signal");
		jsonw_null(w);
	}
	put_fig(w, lean, "start_real_ns", r->start_real_ns);
	put_fig(w, lean, "start_mono_ns", r->start_mono_ns);
	put_fig(w, lean, "end_mono_ns", r->end_mono_ns);

	unsigned nhist = recordjson_hist_len(r->hist);
	const uint64_t heap[] = { r->heap_current, r->heap_peak, r->heap_peak_mono_ns,
				  r->heap_requested_total, r->heap_largest_request, r->heap_at_fork };
	if (!lean || nhist || any_set(heap, sizeof heap / sizeof *heap)) {
		jsonw_key(w, "heap");
		jsonw_object_begin(w);
		put_fig(w, lean, "current", r->heap_current);
		put_fig(w, lean, "peak", r->heap_peak);
		put_fig(w, lean, "peak_mono_ns", r->heap_peak_mono_ns);
		put_fig(w, lean, "requested_total", r->heap_requested_total);
		put_fig(w, lean, "largest_request", r->heap_largest_request);
		put_fig(w, lean, "at_fork", r->heap_at_fork);
		if (!lean || nhist) {
			jsonw_key(w, "hist");
			jsonw_array_begin(w);
			for (unsigned i = 0; i < nhist; i++)
				jsonw_uint(w, r->hist[i]);
			jsonw_array_end(w);
		}
		jsonw_object_end(w);
	}

	if (!lean || any_set(r->calls, MT_CALL_COUNT)) {
		jsonw_key(w, "calls");
		jsonw_object_begin(w);
		for (unsigned c = 0; c < MT_CALL_COUNT; c++)
			if (r->calls[c])
				put_u(w, names_call(c), r->calls[c]);
		jsonw_object_end(w);
	}

	const uint64_t maps[] = { r->map_anon_current, r->map_anon_peak, r->map_anon_at_fork,
				  r->map_file_current, r->map_file_peak, r->map_largest,
				  r->map_untracked_calls, r->map_untracked_bytes };
	if (!lean || any_set(maps, sizeof maps / sizeof *maps)) {
		jsonw_key(w, "maps");
		jsonw_object_begin(w);
		put_fig(w, lean, "anon_current", r->map_anon_current);
		put_fig(w, lean, "anon_peak", r->map_anon_peak);
		put_fig(w, lean, "anon_at_fork", r->map_anon_at_fork);
		put_fig(w, lean, "file_current", r->map_file_current);
		put_fig(w, lean, "file_peak", r->map_file_peak);
		put_fig(w, lean, "largest", r->map_largest);
		put_fig(w, lean, "untracked_calls", r->map_untracked_calls);
		put_fig(w, lean, "untracked_bytes", r->map_untracked_bytes);
		jsonw_object_end(w);
	}

	const uint64_t total[] = { r->total_current, r->total_peak, r->total_peak_mono_ns };
	if (!lean || any_set(total, sizeof total / sizeof *total)) {
		jsonw_key(w, "total");
		jsonw_object_begin(w);
		put_fig(w, lean, "current", r->total_current);
		put_fig(w, lean, "peak", r->total_peak);
		put_fig(w, lean, "peak_mono_ns", r->total_peak_mono_ns);
		jsonw_object_end(w);
	}

	const uint64_t kernel[] = { r->vm_hwm_kb, r->vm_rss_kb, r->vm_peak_kb,
				    r->ru_maxrss_self_kb, r->ru_maxrss_children_kb };
	if (!lean || any_set(kernel, sizeof kernel / sizeof *kernel)) {
		jsonw_key(w, "kernel");
		jsonw_object_begin(w);
		put_fig(w, lean, "vm_hwm_kb", r->vm_hwm_kb);
		put_fig(w, lean, "vm_rss_kb", r->vm_rss_kb);
		put_fig(w, lean, "vm_peak_kb", r->vm_peak_kb);
		put_fig(w, lean, "ru_maxrss_self_kb", r->ru_maxrss_self_kb);
		put_fig(w, lean, "ru_maxrss_children_kb", r->ru_maxrss_children_kb);
		jsonw_object_end(w);
	}

	put_fig(w, lean, "marker_count", r->marker_count);
	uint32_t nmark = r->marker_count < MT_MARKERS ? r->marker_count : MT_MARKERS;
	if (lean && !nmark)
		return;
	jsonw_key(w, "markers");
	jsonw_array_begin(w);
	for (uint32_t i = 0; i < nmark; i++) {
		const struct mt_marker *m = &r->markers[i];
		jsonw_object_begin(w);
		jsonw_key(w, "label");
		jsonw_string_n(w, m->label, strnlen(m->label, MT_LABEL_BYTES));
		put_u(w, "mono_ns", m->mono_ns);
		put_u(w, "heap_current", m->heap_current);
		put_u(w, "map_current", m->map_current);
		put_u(w, "maxrss_self_kb", r->marker_rusage[i].maxrss_self_kb);
		put_u(w, "maxrss_children_kb", r->marker_rusage[i].maxrss_children_kb);
		jsonw_object_end(w);
	}
	jsonw_array_end(w);
}

void recordjson_write(struct jsonw *w, const struct mt_record *r)
{
	jsonw_object_begin(w);
	put_identity(w, r);
	put_figures(w, r, 0);
	jsonw_object_end(w);
}

void recordjson_write_figures(struct jsonw *w, const struct mt_record *r,
			      enum recordjson_form form)
{
	jsonw_object_begin(w);
	put_figures(w, r, form == RECORDJSON_LEAN);
	jsonw_object_end(w);
}
