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

static void put_figures(struct jsonw *w, const struct mt_record *r)
{
	put_u(w, "flags", r->flags);
	put_name(w, "state", names_state(r->state));
	jsonw_key(w, "exit_code");
	jsonw_int(w, r->exit_code);
	jsonw_key(w, "exit_signal");
	if (r->state == MT_STATE_SIGNALED)
		jsonw_int(w, r->exit_signal);
	else
		jsonw_null(w);
	put_u(w, "start_real_ns", r->start_real_ns);
	put_u(w, "start_mono_ns", r->start_mono_ns);
	put_u(w, "end_mono_ns", r->end_mono_ns);

	jsonw_key(w, "heap");
	jsonw_object_begin(w);
	put_u(w, "current", r->heap_current);
	put_u(w, "peak", r->heap_peak);
	put_u(w, "peak_mono_ns", r->heap_peak_mono_ns);
	put_u(w, "requested_total", r->heap_requested_total);
	put_u(w, "largest_request", r->heap_largest_request);
	put_u(w, "at_fork", r->heap_at_fork);
	jsonw_key(w, "hist");
	jsonw_array_begin(w);
	for (unsigned i = 0, n = recordjson_hist_len(r->hist); i < n; i++)
		jsonw_uint(w, r->hist[i]);
	jsonw_array_end(w);
	jsonw_object_end(w);

	jsonw_key(w, "calls");
	jsonw_object_begin(w);
	for (unsigned c = 0; c < MT_CALL_COUNT; c++)
		if (r->calls[c])
			put_u(w, names_call(c), r->calls[c]);
	jsonw_object_end(w);

	jsonw_key(w, "maps");
	jsonw_object_begin(w);
	put_u(w, "anon_current", r->map_anon_current);
	put_u(w, "anon_peak", r->map_anon_peak);
	put_u(w, "anon_at_fork", r->map_anon_at_fork);
	put_u(w, "file_current", r->map_file_current);
	put_u(w, "file_peak", r->map_file_peak);
	put_u(w, "largest", r->map_largest);
	put_u(w, "untracked_calls", r->map_untracked_calls);
	put_u(w, "untracked_bytes", r->map_untracked_bytes);
	jsonw_object_end(w);

	jsonw_key(w, "total");
	jsonw_object_begin(w);
	put_u(w, "current", r->total_current);
	put_u(w, "peak", r->total_peak);
	put_u(w, "peak_mono_ns", r->total_peak_mono_ns);
	jsonw_object_end(w);

	jsonw_key(w, "kernel");
	jsonw_object_begin(w);
	put_u(w, "vm_hwm_kb", r->vm_hwm_kb);
	put_u(w, "vm_rss_kb", r->vm_rss_kb);
	put_u(w, "vm_peak_kb", r->vm_peak_kb);
	put_u(w, "ru_maxrss_self_kb", r->ru_maxrss_self_kb);
	put_u(w, "ru_maxrss_children_kb", r->ru_maxrss_children_kb);
	jsonw_object_end(w);

	put_u(w, "marker_count", r->marker_count);
	jsonw_key(w, "markers");
	jsonw_array_begin(w);
	uint32_t nmark = r->marker_count < MT_MARKERS ? r->marker_count : MT_MARKERS;
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
	put_figures(w, r);
	jsonw_object_end(w);
}

void recordjson_write_figures(struct jsonw *w, const struct mt_record *r)
{
	jsonw_object_begin(w);
	put_figures(w, r);
	jsonw_object_end(w);
}
