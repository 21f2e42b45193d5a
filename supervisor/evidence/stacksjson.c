/* stacksjson.c: DIR/stacks.json (see stacksjson.h). */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "analyze/pyframes.h"
#include "evidence/files.h"
#include "jsonw.h"
#include "evidence/evidence.h"
#include "evidence/stacksjson.h"
#include "analyze/shortname.h"
#include "units.h"

static void put_u(struct jsonw *w, const char *key, uint64_t v)
{
	jsonw_key(w, key);
	jsonw_uint(w, v);
}

/* A site's frames, innermost first, each inlined chain expanded (symbols.h). */
static void put_frame_list(struct jsonw *w, const struct symbols *sym, const struct callsite *c)
{
	jsonw_array_begin(w);
	for (uint32_t j = 0; j < c->nframes; j++)
		for (uint32_t f = c->frames[j]; f != SYMBOLS_NO_FRAME; f = symbols_outer(sym, f))
			jsonw_uint(w, f);
	jsonw_array_end(w);
}

/* A site list; with_pid: the tree's (each site names its process). */
static void put_set(struct jsonw *w, const struct symbols *sym, const struct callsite_set *s,
		    int with_pid)
{
	put_u(w, "estimated_bytes", s->bytes);
	jsonw_key(w, "se_bytes");
	jsonw_uint(w, (uint64_t)(callsites_se(s) + 0.5));
	put_u(w, "samples", s->count);
	jsonw_key(w, "sites");
	jsonw_array_begin(w);
	for (size_t i = 0; i < s->n; i++) {
		const struct callsite *c = &s->v[i];
		jsonw_object_begin(w);
		if (with_pid) {
			jsonw_key(w, "pid");
			jsonw_int(w, c->pid);
			put_u(w, "gen", c->gen);
		}
		jsonw_key(w, "frames");
		put_frame_list(w, sym, c);
		put_u(w, "bytes", c->bytes);
		/* the site's own standard error: what a reader (memsup diff,
		 * a test) judges its estimate by */
		jsonw_key(w, "se_bytes");
		jsonw_uint(w, (uint64_t)(callsite_se(c) + 0.5));
		put_u(w, "samples", c->count);
		/* stacks.h: anonymous mappings the program made, or heap */
		jsonw_key(w, "kind");
		jsonw_string(w, (c->flags & MT_STACK_MMAP) ? "mmap" : "heap");
		if (c->flags & MT_STACK_CATCHALL) {
			jsonw_key(w, "catchall");
			jsonw_bool(w, 1);
		}
		/* callsites.h: blocks a fork child holds that the image it
		 * inherited them from (or a sibling) held too, counted there */
		if (c->inherited) {
			jsonw_key(w, "inherited");
			jsonw_bool(w, 1);
		}
		jsonw_object_end(w);
	}
	jsonw_array_end(w);
}

static void put_tree(struct jsonw *w, const struct symbols *sym, const struct callsite_tree *t,
		     int total)
{
	if (t->at_s < 0) {
		jsonw_null(w);
		return;
	}
	jsonw_object_begin(w);
	jsonw_key(w, "at_s");
	jsonw_double(w, t->at_s, 6);
	put_u(w, total ? "traced_total" : "traced_heap", t->heap);
	put_u(w, total ? "polled_total" : "polled_heap", t->polled);
	put_u(w, "rss", t->rss);
	put_u(w, "inherited_bytes", t->set.inherited_bytes);
	put_set(w, sym, &t->set, 1);
	jsonw_object_end(w);
}

/* argv joined by spaces (the image's command). */
static void put_command(struct jsonw *w, const struct image_view *iv)
{
	char buf[512];
	size_t o = 0;
	for (size_t s = 0; iv->argv && s < iv->argv_len && o + 1 < sizeof buf; s++)
		buf[o++] = iv->argv[s] ? iv->argv[s] : ' ';
	while (o && buf[o - 1] == ' ')
		o--;
	jsonw_key(w, "command");
	if (o)
		jsonw_string_n(w, buf, o);
	else
		jsonw_string(w, iv->exe);
}

/* What the shim found of a CPython in the image: null when none. */
static void put_python(struct jsonw *w, const struct mt_stacks_header *h)
{
	char version[32];
	jsonw_key(w, "python");
	if (h->py_state == MT_PY_NONE) {
		jsonw_null(w);
		return;
	}
	jsonw_object_begin(w);
	pyframes_version_text(h->py_version, version, sizeof version);
	jsonw_key(w, "version");
	jsonw_string(w, version);
	jsonw_key(w, "frames");
	/* stacks.h: an unknown version is walked not at all, and says so */
	jsonw_string(w, h->py_state == MT_PY_WALKED ? "python" : "native_only_unknown_version");
	put_u(w, "python_samples", h->py_samples);
	put_u(w, "python_frames", h->py_frames);
	put_u(w, "truncated_samples", h->py_truncated);
	put_u(w, "code_objects", h->code_count);
	jsonw_object_end(w);
}

static void put_image(struct jsonw *w, const struct symbols *sym, const struct callsite_image *ci)
{
	const struct mt_stacks_header *h = &ci->h;
	jsonw_object_begin(w);
	jsonw_key(w, "pid");
	jsonw_int(w, ci->iv->pid);
	put_u(w, "gen", ci->iv->gen);
	put_command(w, ci->iv);
	jsonw_key(w, "error");
	jsonw_string(w, ci->error ? stackfile_strerror(ci->error) : NULL);
	if (!ci->error) {
		put_u(w, "sample_bytes", h->sample_bytes);
		put_u(w, "heap_peak", ci->iv->rec.heap_peak);
		jsonw_key(w, "finished");
		jsonw_bool(w, h->state == MT_STACKS_FINISHED);
		jsonw_key(w, "inherited");
		jsonw_bool(w, (h->flags & MT_STACKS_FLAG_INHERITED) != 0);
		jsonw_key(w, "cfi_fallback");
		jsonw_bool(w, (h->flags & MT_STACKS_FLAG_CFI_OFF) != 0);
		put_u(w, "samples", h->samples);
		put_u(w, "sampled_frees", h->sampled_frees);
		put_u(w, "fp_stacks", h->fp_samples);
		put_u(w, "dwarf_stacks", h->backtrace_samples);
		put_u(w, "untracked_samples", h->untracked_samples);
		put_u(w, "untracked_bytes", h->untracked_bytes);
		put_u(w, "catchall_samples", h->catchall_samples);
		put_u(w, "skipped_samples", h->skipped_samples);
		put_u(w, "lost_frees", h->lost_frees);
		put_u(w, "sample_ns", h->sample_ns);
		put_u(w, "stacks", h->stack_count);
		put_python(w, h);
		jsonw_key(w, "at_peak");
		jsonw_object_begin(w);
		jsonw_key(w, "from");
		/* stacks.h: the peak columns, or the live set when the heap
		 * peaked after the last sampled event */
		jsonw_string(w, ci->peak_from_live ? "live" : "peak");
		jsonw_key(w, "consistent");
		jsonw_bool(w, ci->peak_consistent);
		put_set(w, sym, &ci->at_peak, 0);
		jsonw_object_end(w);
		jsonw_key(w, "at_exit");
		jsonw_object_begin(w);
		put_set(w, sym, &ci->at_exit, 0);
		jsonw_object_end(w);
	}
	jsonw_object_end(w);
}

static void put_frames(struct jsonw *w, const struct symbols *s)
{
	jsonw_array_begin(w);
	for (size_t i = 0; i < s->n_frames; i++) {
		const struct symbols_frame *f = &s->frames[i];
		jsonw_object_begin(w);
		jsonw_key(w, "module");
		if (f->module == SYMBOLS_NO_MODULE || f->python)
			jsonw_null(w);
		else
			jsonw_uint(w, f->module);
		jsonw_key(w, "offset");
		if (f->vaddr)
			jsonw_uint(w, f->vaddr);
		else
			jsonw_null(w);
		put_u(w, "file_offset", f->python ? 0 : f->file_offset);
		jsonw_key(w, "function");
		jsonw_string(w, f->function);
		/* source lines: from the module's DWARF (symbols.h), or a
		 * Python frame's code object (pyframes.h) */
		jsonw_key(w, "file");
		jsonw_string(w, f->file);
		jsonw_key(w, "line");
		if (f->file && f->line)
			jsonw_uint(w, f->line);
		else
			jsonw_null(w);
		jsonw_key(w, "inlined");
		jsonw_bool(w, (f->flags & SYMBOLS_FRAME_INLINED) != 0);
		if (f->python) {
			jsonw_key(w, "python");
			jsonw_bool(w, 1);
		}
		if (f->elided) /* a deep chain's marker (pyframes.h) */
			put_u(w, "elided", f->elided);
		jsonw_object_end(w);
	}
	jsonw_array_end(w);
}

static void put_modules(struct jsonw *w, const struct symbols *s)
{
	jsonw_array_begin(w);
	for (size_t i = 0; i < s->n_modules; i++) {
		const struct symbols_module *m = &s->modules[i];
		char hex[2 * MT_STACKS_BUILD_ID_BYTES + 1];
		jsonw_object_begin(w);
		jsonw_key(w, "path");
		jsonw_string(w, m->path);
		jsonw_key(w, "build_id");
		if (m->build_id_len) {
			for (uint32_t k = 0; k < m->build_id_len; k++) {
				hex[2 * k] = "0123456789abcdef"[m->build_id[k] >> 4];
				hex[2 * k + 1] = "0123456789abcdef"[m->build_id[k] & 15];
			}
			jsonw_string_n(w, hex, 2 * m->build_id_len);
		} else {
			jsonw_null(w);
		}
		jsonw_key(w, "symbols");
		jsonw_string(w, symbols_state_name(m->state));
		/* source lines: where its DWARF was found and what came of it */
		jsonw_key(w, "stripped");
		jsonw_bool(w, m->stripped);
		jsonw_key(w, "debug");
		jsonw_string(w, debugfile_how_name(m->debug.how));
		jsonw_key(w, "debug_file");
		jsonw_string(w, m->debug.how != DEBUGFILE_NONE ? m->debug.path : NULL);
		jsonw_key(w, "lines");
		jsonw_string(w, symbols_lines_name(m->lines));
		put_u(w, "frames", m->n_frames);
		put_u(w, "frames_unnamed", m->n_unnamed);
		put_u(w, "frames_without_line", m->n_no_line);
		jsonw_key(w, "unnamed_why");
		jsonw_string(w, symbols_module_why(m));
		jsonw_object_end(w);
	}
	jsonw_array_end(w);
}

static void put_document(struct jsonw *w, const void *ctx)
{
	const struct callsite_view *v = ctx;
	jsonw_object_begin(w);
	put_u(w, "version", 1);
	jsonw_key(w, "sample_bytes");
	if (v->sample_bytes)
		jsonw_uint(w, v->sample_bytes);
	else
		jsonw_null(w);
	jsonw_key(w, "tree");
	jsonw_object_begin(w);
	jsonw_key(w, "total_peak");
	put_tree(w, &v->sym, &v->tree[PEAKSITES_TOTAL], 1);
	jsonw_key(w, "heap_peak");
	put_tree(w, &v->sym, &v->tree[PEAKSITES_HEAP], 0);
	jsonw_key(w, "rss_peak");
	put_tree(w, &v->sym, &v->tree[PEAKSITES_RSS], 0);
	jsonw_object_end(w);
	jsonw_key(w, "images");
	jsonw_array_begin(w);
	for (size_t i = 0; i < v->n_images; i++)
		put_image(w, &v->sym, &v->images[i]);
	jsonw_array_end(w);
	jsonw_key(w, "frames");
	put_frames(w, &v->sym);
	jsonw_key(w, "modules");
	put_modules(w, &v->sym);
	jsonw_object_end(w);
}

int stacksjson_write(int dirfd, const struct callsite_view *v)
{
	return evidence_write_json(dirfd, EVIDENCE_STACKS, 1, 0, put_document, v);
}

/* ---- the summary's lines --------------------------------------------------------- */

#define STACKSJSON_LINES 256u

struct stacksjson_line {
	char text[384];
	uint64_t bytes;
};

/* One frame as the summary names it: "function (file.c:12)", the function
 * alone without a line, else module+0xOFFSET as flame.svg and the shim
 * name it, else its address. */
static size_t stacksjson_frame(const struct symbols *sym, const struct symbols_frame *f,
			       const char *sep, char *buf, size_t cap)
{
	int n;
	/* C++'s template arguments folded: the summary's line shows the
	 * frames, stacks.json the whole names.  Never a Python name, whose
	 * brackets are its own (<module>, <listcomp>), not C++'s. */
	char fn[256];
	if (f->function && f->python)
		snprintf(fn, sizeof fn, "%s", f->function);
	else if (f->function)
		shortname_fold(f->function, fn, sizeof fn);
	if (f->function && f->file && f->line) {
		const char *base = strrchr(f->file, '/');
		n = snprintf(buf, cap, "%s%s (%s:%u)", sep, fn, base ? base + 1 : f->file,
			     (unsigned)f->line);
	} else if (f->function) {
		n = snprintf(buf, cap, "%s%s", sep, fn);
	} else if (f->module < sym->n_modules) {
		const char *path = sym->modules[f->module].path, *base = strrchr(path, '/');
		n = snprintf(buf, cap, "%s%s+0x%llx", sep, base ? base + 1 : path,
			     (unsigned long long)(f->vaddr ? f->vaddr : f->file_offset));
	} else {
		n = snprintf(buf, cap, "%s0x%llx", sep, (unsigned long long)f->file_offset);
	}
	return n < 0 ? 0 : (size_t)n < cap ? (size_t)n : cap - 1;
}

size_t stacksjson_site_name(const struct callsite_view *v, const struct callsite *c, char *buf,
			    size_t cap)
{
	size_t o = 0;
	unsigned shown = 0;
	if (!cap)
		return 0;
	buf[0] = '\0';
	if (c->nframes == 0)
		return (size_t)snprintf(buf, cap, "[no stack: table full]");
	/* a Python site by its Python frames: the interpreter's own C
	 * functions inside them say nothing the Python line does not */
	uint32_t from = 0;
	while (from < c->nframes && !v->sym.frames[c->frames[from]].python)
		from++;
	if (from == c->nframes)
		from = 0;
	/* the three innermost frames, inlined ones counted */
	for (uint32_t j = from; j < c->nframes && shown < 3 && o + 1 < cap; j++)
		for (uint32_t f = c->frames[j]; f != SYMBOLS_NO_FRAME && shown < 3 && o + 1 < cap;
		     f = symbols_outer(&v->sym, f))
			o += stacksjson_frame(&v->sym, &v->sym.frames[f], shown++ ? " < " : "",
					      buf + o, cap - o);
	return o < cap ? o : cap - 1;
}

static void stacksjson_label(const struct callsite_view *v, const struct callsite *c, char *buf,
			     size_t cap)
{
	int o = snprintf(buf, cap, "pid %d:%s ", (int)c->pid,
			 (c->flags & MT_STACK_MMAP) ? " [mmap]" : "");
	if (o > 0 && (size_t)o < cap)
		stacksjson_site_name(v, c, buf + o, cap - (size_t)o);
}

size_t stacksjson_image_sites(const struct callsite_view *v, pid_t pid, uint32_t gen,
			      struct stacksjson_named *out, size_t cap)
{
	const struct callsite_set *set = NULL;
	for (size_t i = 0; i < v->n_images && !set; i++)
		if (v->images[i].iv && v->images[i].iv->pid == pid && v->images[i].iv->gen == gen)
			set = &v->images[i].at_exit;
	size_t n = 0;
	/* sites of the same name (two stacks through one line) are one */
	for (size_t i = 0; set && i < set->n && i < 4 * STACKSJSON_LINES; i++) {
		char text[sizeof out->name];
		size_t k;
		stacksjson_site_name(v, &set->v[i], text, sizeof text);
		for (k = 0; k < n && strcmp(out[k].name, text) != 0; k++) {
		}
		if (k == n) {
			if (n == cap)
				continue;
			memcpy(out[n].name, text, sizeof text);
			out[n++].bytes = 0;
		}
		out[k].bytes += set->v[i].bytes;
		while (k > 0 && out[k - 1].bytes < out[k].bytes) {
			struct stacksjson_named tmp = out[k];
			out[k] = out[k - 1];
			out[k - 1] = tmp;
			k--;
		}
	}
	return n;
}

void stacksjson_print(FILE *out, const struct callsite_view *v, size_t rows)
{
	const struct callsite_tree *t = &v->tree[PEAKSITES_TOTAL];
	struct stacksjson_line *lines;
	size_t n = 0;
	int mapped = 0;
	if (!t->set.n || !t->set.bytes)
		return;
	for (size_t i = 0; i < t->set.n && !mapped; i++)
		mapped = (t->set.v[i].flags & MT_STACK_MMAP) != 0;
	lines = calloc(STACKSJSON_LINES, sizeof *lines);
	if (!lines)
		return;
	/* sites come largest first: the first few hundred decide the top */
	for (size_t i = 0; i < t->set.n && i < 4 * STACKSJSON_LINES; i++) {
		char text[384];
		size_t k;
		if (t->set.v[i].inherited)
			continue; /* counted where the image holding them too is */
		stacksjson_label(v, &t->set.v[i], text, sizeof text);
		for (k = 0; k < n && strcmp(lines[k].text, text) != 0; k++) {
		}
		if (k == n) {
			if (n == STACKSJSON_LINES)
				continue;
			memcpy(lines[n++].text, text, sizeof text);
		}
		lines[k].bytes += t->set.v[i].bytes;
		/* keep the list sorted, largest first */
		while (k > 0 && lines[k - 1].bytes < lines[k].bytes) {
			struct stacksjson_line tmp = lines[k];
			lines[k] = lines[k - 1];
			lines[k - 1] = tmp;
			k--;
		}
	}
	fprintf(out, "memsup: heap%s at the tree's peak of heap plus mappings (%.3f s) by call site: "
		"est. %.1f MB +- %.1f MB of %.1f MB traced",
		mapped ? " and mapped memory" : "", t->at_s, (double)t->set.bytes / UNITS_MB,
		callsites_se(&t->set) / UNITS_MB, (double)t->heap / UNITS_MB);
	if (t->set.inherited_bytes)
		fprintf(out, ", of which est. %.1f MB are blocks fork children inherited and another "
			"image held too (counted once, there)", (double)t->set.inherited_bytes / UNITS_MB);
	fputs(":\n", out);
	for (size_t k = 0; k < n && k < rows; k++)
		fprintf(out, "memsup: %6.1f%% %9.1f  %s\n",
			100.0 * (double)lines[k].bytes / (double)t->set.bytes,
			(double)lines[k].bytes / UNITS_MB, lines[k].text);
	free(lines);
}
