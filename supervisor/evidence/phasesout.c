/* phasesout.c: the markers and phases as the record's JSON and as the
 * summary's table (see phasesout.h). */
#include "evidence/phasesout.h"
#include "analyze/phases.h"
#include "units.h"

/* Microseconds: the finest any marker or sample time means. */
static void put_double(struct jsonw *w, double v)
{
	jsonw_double(w, v, 6);
}

static void put_kb(struct jsonw *w, const char *key, int have, uint64_t kb)
{
	jsonw_key(w, key);
	if (have)
		jsonw_uint(w, kb);
	else
		jsonw_null(w);
}

static void put_phase(struct jsonw *w, const char *label, double start, double end, int ended,
		      const struct phase_peak *p)
{
	jsonw_object_begin(w);
	jsonw_key(w, "label");
	jsonw_string(w, label);
	jsonw_key(w, "start_s");
	put_double(w, start);
	jsonw_key(w, "end_s");
	if (ended)
		put_double(w, end);
	else
		jsonw_null(w);
	jsonw_key(w, "samples");
	jsonw_uint(w, p->samples);
	int known = p->samples || p->seeded;
	jsonw_key(w, "peak_tree_rss");
	if (known)
		jsonw_uint(w, p->rss);
	else
		jsonw_null(w);
	jsonw_key(w, "peak_tree_rss_mb");
	if (known)
		put_double(w, (double)p->rss / UNITS_MB);
	else
		jsonw_null(w);
	jsonw_key(w, "peak_at_s");
	if (known)
		put_double(w, p->rss_at_s);
	else
		jsonw_null(w);
	jsonw_key(w, "peak_heap");
	if (p->have_heap)
		jsonw_uint(w, p->heap);
	else
		jsonw_null(w);
	jsonw_key(w, "peak_source");
	jsonw_string(w, p->samples ? "samples" : p->seeded ? "boundary_sample" : "none");
	jsonw_object_end(w);
}

void phasesout_json(struct jsonw *w, const struct phase_log *pl, double end_s, int ended)
{
	size_t n;
	const struct phase_marker *m = phases_markers(pl, &n);
	jsonw_key(w, "markers");
	jsonw_array_begin(w);
	for (size_t i = 0; i < n; i++) {
		const struct phase_marker *mk = &m[i];
		jsonw_object_begin(w);
		jsonw_key(w, "t");
		put_double(w, mk->t);
		jsonw_key(w, "label");
		jsonw_string(w, mk->label);
		jsonw_key(w, "label_truncated");
		jsonw_bool(w, mk->label_cut);
		jsonw_key(w, "source");
		jsonw_string(w, mk->source == PHASE_FROM_SHIM ? "shim" : "file");
		jsonw_key(w, "pid_in_tree");
		jsonw_bool(w, mk->pid_in_tree);
		jsonw_key(w, "pid");
		if (mk->pid > 0)
			jsonw_int(w, mk->pid);
		else
			jsonw_null(w);
		jsonw_key(w, "sample_t");
		if (mk->sample_t >= 0)
			put_double(w, mk->sample_t);
		else
			jsonw_null(w);
		jsonw_key(w, "tree_rss");
		if (mk->sample_t >= 0)
			jsonw_uint(w, mk->tree_rss);
		else
			jsonw_null(w);
		jsonw_key(w, "processes");
		jsonw_uint(w, mk->processes);
		jsonw_key(w, "tree_heap");
		if (mk->sample_t >= 0 && mk->traced)
			jsonw_uint(w, mk->tree_heap);
		else
			jsonw_null(w);
		jsonw_key(w, "heaps");
		jsonw_array_begin(w);
		for (unsigned k = 0; k < mk->n_heaps; k++) {
			jsonw_object_begin(w);
			jsonw_key(w, "pid");
			jsonw_int(w, mk->heaps[k].pid);
			jsonw_key(w, "heap");
			jsonw_uint(w, mk->heaps[k].heap);
			jsonw_object_end(w);
		}
		jsonw_array_end(w);
		jsonw_key(w, "heaps_omitted");
		jsonw_uint(w, mk->n_heaps_total - mk->n_heaps);
		jsonw_key(w, "snapshot");
		jsonw_object_begin(w);
		put_kb(w, "vm_rss_kb", mk->have_status, mk->vm_rss_kb);
		put_kb(w, "vm_peak_kb", mk->have_status, mk->vm_peak_kb);
		put_kb(w, "vm_hwm_kb", mk->have_status, mk->vm_hwm_kb);
		put_kb(w, "maxrss_kb", mk->maxrss_kb >= 0, (uint64_t)mk->maxrss_kb);
		put_kb(w, "maxrss_children_kb", mk->maxrss_children_kb >= 0,
		       (uint64_t)mk->maxrss_children_kb);
		/* where the maxrss figures come from: the shim's getrusage, or
		 * what the line's writer says of itself */
		jsonw_key(w, "maxrss_from");
		if (mk->maxrss_kb < 0 && mk->maxrss_children_kb < 0)
			jsonw_null(w);
		else
			jsonw_string(w, mk->source == PHASE_FROM_SHIM ? "shim" : "self_reported");
		jsonw_key(w, "heap_current");
		if (mk->have_shim_figures)
			jsonw_uint(w, mk->heap_current);
		else
			jsonw_null(w);
		jsonw_key(w, "mapped_current");
		if (mk->have_shim_figures)
			jsonw_uint(w, mk->map_current);
		else
			jsonw_null(w);
		jsonw_object_end(w);
		jsonw_object_end(w);
	}
	jsonw_array_end(w);
	jsonw_key(w, "markers_dropped");
	jsonw_uint(w, phases_dropped(pl));

	jsonw_key(w, "phases");
	jsonw_array_begin(w);
	if (n) {
		put_phase(w, "(start)", 0.0, m[0].t, 1, phases_before(pl));
		for (size_t i = 0; i < n; i++) {
			int last = i + 1 == n;
			put_phase(w, m[i].label, m[i].t, last ? end_s : m[i + 1].t,
				  last ? ended : 1, &m[i].phase);
		}
	}
	jsonw_array_end(w);
}

static void print_row(FILE *f, const char *label, double start, double end,
		      const struct phase_peak *p)
{
	fprintf(f, "memsup:   %-24.24s %9.3f %9.3f", label, start, end);
	if (p->samples || p->seeded)
		fprintf(f, " %10.1f %9.3f", (double)p->rss / UNITS_MB, p->rss_at_s);
	else
		fprintf(f, " %10s %9s", "-", "-");
	if (p->have_heap)
		fprintf(f, " %10.1f\n", (double)p->heap / UNITS_MB);
	else
		fprintf(f, " %10s\n", "-");
}

void phasesout_print(FILE *f, const struct phase_log *pl, double end_s)
{
	size_t n;
	const struct phase_marker *m = phases_markers(pl, &n);
	if (!n)
		return;
	/* the summed RSS of the samples, named as such: the run's answer is
	 * the cgroup's, which has no per-phase peak */
	fprintf(f, "memsup: phases (the largest summed RSS and heap of the samples inside each):\n");
	fprintf(f, "memsup:   %-24s %9s %9s %10s %9s %10s\n", "phase", "start_s", "end_s",
		"rss_MB", "at_s", "heap_MB");
	print_row(f, "(start)", 0.0, m[0].t, phases_before(pl));
	for (size_t i = 0; i < n; i++)
		print_row(f, m[i].label, m[i].t, i + 1 < n ? m[i + 1].t : end_s, &m[i].phase);
	if (phases_dropped(pl))
		fprintf(f, "memsup:   (%zu later markers dropped)\n", phases_dropped(pl));
}
