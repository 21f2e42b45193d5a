/* render.c: an image's record as people and programs read it (see
 * render.h). */
#include <string.h>

#include "jsonw.h"
#include "names.h"
#include "render.h"
#include "sys.h"
#include "units.h"

/* Bytes as "12345 B" below 10 KiB, else with one decimal (truncated) in the
 * largest of KiB/MiB/GiB/TiB that keeps the whole part at or above 1. */
void render_bytes(struct sys_str *s, uint64_t v)
{
	char buf[UNITS_BYTES_MAX];
	units_format_bytes(buf, sizeof buf, v);
	sys_str_add(s, buf);
}

size_t render_summary(const struct mt_record *r, char *buf, size_t cap)
{
	struct sys_str s;
	sys_str_init(&s, buf, cap);
	sys_str_add(&s, "memtrace: pid ");
	sys_str_add_u64(&s, (uint64_t)(uint32_t)r->pid);
	sys_str_add(&s, " ");
	sys_str_add(&s, r->argv_bytes ? r->argv : r->exe);
	sys_str_add(&s, "\nmemtrace:   heap peak ");
	render_bytes(&s, r->heap_peak);
	sys_str_add(&s, ", at exit ");
	render_bytes(&s, r->heap_current);
	sys_str_add(&s, ", requested ");
	render_bytes(&s, r->heap_requested_total);
	sys_str_add(&s, ", largest ");
	render_bytes(&s, r->heap_largest_request);
	sys_str_add(&s, "\nmemtrace:   mmap peak anon ");
	render_bytes(&s, r->map_anon_peak);
	sys_str_add(&s, ", file ");
	render_bytes(&s, r->map_file_peak);
	sys_str_add(&s, "; heap+mmap peak ");
	render_bytes(&s, r->total_peak);
	sys_str_add(&s, "; VmHWM ");
	render_bytes(&s, r->vm_hwm_kb * 1024); /* the kernel's kB are KiB */
	sys_str_add(&s, "\nmemtrace:   calls");
	for (unsigned i = 0; i < MT_CALL_COUNT; i++) {
		if (!r->calls[i])
			continue;
		sys_str_add(&s, " ");
		sys_str_add(&s, names_call(i));
		sys_str_add(&s, "=");
		sys_str_add_u64(&s, r->calls[i]);
	}
	sys_str_add(&s, "\n");
	if (s.truncated && cap > 1)
		buf[cap - 2] = '\n';
	return s.len;
}

static void render_json_u(struct jsonw *w, const char *key, uint64_t v)
{
	jsonw_key(w, key);
	jsonw_uint(w, v);
}

int render_json(const struct mt_record *r, int fd)
{
	struct jsonw w;
	jsonw_init(&w, fd, 0);
	render_json_record(&w, r);
	return jsonw_finish_line(&w);
}

void render_json_record(struct jsonw *w, const struct mt_record *r)
{
	uint32_t nmark = r->marker_count < MT_MARKERS ? r->marker_count : MT_MARKERS;
	jsonw_object_begin(w);
	render_json_u(w, "version", r->version);
	jsonw_key(w, "pid");
	jsonw_int(w, r->pid);
	jsonw_key(w, "ppid");
	jsonw_int(w, r->ppid);
	render_json_u(w, "gen", r->gen);
	jsonw_key(w, "relation");
	jsonw_string(w, names_relation(r->relation) ? names_relation(r->relation) : "?");
	jsonw_key(w, "parent_pid");
	jsonw_int(w, r->parent_pid);
	render_json_u(w, "parent_gen", r->parent_gen);
	render_json_u(w, "flags", r->flags);
	jsonw_key(w, "state");
	jsonw_string(w, names_state(r->state) ? names_state(r->state) : "?");
	jsonw_key(w, "exit_code");
	jsonw_int(w, r->exit_code);
	jsonw_key(w, "exe");
	jsonw_string(w, r->exe);
	jsonw_key(w, "argv");
	jsonw_array_begin(w);
	for (uint32_t off = 0; off < r->argv_bytes && off < MT_ARGV_BYTES;) {
		size_t len = strnlen(r->argv + off, MT_ARGV_BYTES - off);
		jsonw_string_n(w, r->argv + off, len);
		off += (uint32_t)len + 1;
	}
	jsonw_array_end(w);
	render_json_u(w, "argc", r->argc);
	render_json_u(w, "start_real_ns", r->start_real_ns);
	render_json_u(w, "start_mono_ns", r->start_mono_ns);
	render_json_u(w, "end_mono_ns", r->end_mono_ns);
	jsonw_key(w, "heap");
	jsonw_object_begin(w);
	render_json_u(w, "current", r->heap_current);
	render_json_u(w, "peak", r->heap_peak);
	render_json_u(w, "peak_mono_ns", r->heap_peak_mono_ns);
	render_json_u(w, "requested_total", r->heap_requested_total);
	render_json_u(w, "largest_request", r->heap_largest_request);
	jsonw_key(w, "hist");
	jsonw_array_begin(w);
	for (unsigned i = 0; i < MT_HIST_BUCKETS; i++)
		jsonw_uint(w, r->hist[i]);
	jsonw_array_end(w);
	jsonw_object_end(w);
	jsonw_key(w, "calls");
	jsonw_object_begin(w);
	for (unsigned i = 0; i < MT_CALL_COUNT; i++)
		render_json_u(w, names_call(i), r->calls[i]);
	jsonw_object_end(w);
	jsonw_key(w, "maps");
	jsonw_object_begin(w);
	render_json_u(w, "anon_current", r->map_anon_current);
	render_json_u(w, "anon_peak", r->map_anon_peak);
	render_json_u(w, "file_current", r->map_file_current);
	render_json_u(w, "file_peak", r->map_file_peak);
	render_json_u(w, "largest", r->map_largest);
	render_json_u(w, "untracked_calls", r->map_untracked_calls);
	render_json_u(w, "untracked_bytes", r->map_untracked_bytes);
	jsonw_object_end(w);
	jsonw_key(w, "total");
	jsonw_object_begin(w);
	render_json_u(w, "current", r->total_current);
	render_json_u(w, "peak", r->total_peak);
	render_json_u(w, "peak_mono_ns", r->total_peak_mono_ns);
	jsonw_object_end(w);
	jsonw_key(w, "kernel");
	jsonw_object_begin(w);
	render_json_u(w, "vm_hwm_kb", r->vm_hwm_kb);
	render_json_u(w, "vm_rss_kb", r->vm_rss_kb);
	render_json_u(w, "vm_peak_kb", r->vm_peak_kb);
	render_json_u(w, "ru_maxrss_self_kb", r->ru_maxrss_self_kb);
	render_json_u(w, "ru_maxrss_children_kb", r->ru_maxrss_children_kb);
	jsonw_object_end(w);
	render_json_u(w, "marker_count", r->marker_count);
	jsonw_key(w, "markers");
	jsonw_array_begin(w);
	for (uint32_t i = 0; i < nmark; i++) {
		const struct mt_marker *m = &r->markers[i];
		jsonw_object_begin(w);
		jsonw_key(w, "label");
		jsonw_string_n(w, m->label, strnlen(m->label, MT_LABEL_BYTES));
		render_json_u(w, "mono_ns", m->mono_ns);
		render_json_u(w, "heap_current", m->heap_current);
		render_json_u(w, "map_current", m->map_current);
		jsonw_object_end(w);
	}
	jsonw_array_end(w);
	jsonw_object_end(w);
}
