/* stacksjson.c: DIR/stacks.json (see stacksjson.h). */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "analyze/pyframes.h"
#include "jsonw.h"
#include "output/evidence.h"
#include "output/stacksjson.h"
#include "units.h"

static void put_u(struct jsonw *w, const char *key, uint64_t v)
{
	jsonw_key(w, key);
	jsonw_uint(w, v);
}

/* A site list; with_pid: the tree's (each site names its process). */
static void put_set(struct jsonw *w, const struct callsite_set *s, int with_pid)
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
		jsonw_array_begin(w);
		for (uint32_t j = 0; j < c->nframes; j++)
			jsonw_uint(w, c->frames[j]);
		jsonw_array_end(w);
		put_u(w, "bytes", c->bytes);
		put_u(w, "samples", c->count);
		if (c->flags & MT_STACK_CATCHALL) {
			jsonw_key(w, "catchall");
			jsonw_bool(w, 1);
		}
		jsonw_object_end(w);
	}
	jsonw_array_end(w);
}

static void put_tree(struct jsonw *w, const struct callsite_tree *t)
{
	if (t->at_s < 0) {
		jsonw_null(w);
		return;
	}
	jsonw_object_begin(w);
	jsonw_key(w, "at_s");
	jsonw_double(w, t->at_s, 6);
	put_u(w, "traced_heap", t->heap);
	put_u(w, "polled_heap", t->polled);
	put_u(w, "rss", t->rss);
	put_set(w, &t->set, 1);
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

static void put_image(struct jsonw *w, const struct callsite_image *ci)
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
		put_set(w, &ci->at_peak, 0);
		jsonw_object_end(w);
		jsonw_key(w, "at_exit");
		jsonw_object_begin(w);
		put_set(w, &ci->at_exit, 0);
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
		if (f->python) {
			jsonw_key(w, "file");
			jsonw_string(w, f->file);
			jsonw_key(w, "line");
			if (f->line)
				jsonw_uint(w, f->line);
			else
				jsonw_null(w);
			jsonw_key(w, "python");
			jsonw_bool(w, 1);
		}
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
	jsonw_key(w, "heap_peak");
	put_tree(w, &v->tree[PEAKSITES_HEAP]);
	jsonw_key(w, "rss_peak");
	put_tree(w, &v->tree[PEAKSITES_RSS]);
	jsonw_object_end(w);
	jsonw_key(w, "images");
	jsonw_array_begin(w);
	for (size_t i = 0; i < v->n_images; i++)
		put_image(w, &v->images[i]);
	jsonw_array_end(w);
	jsonw_key(w, "frames");
	put_frames(w, &v->sym);
	jsonw_key(w, "modules");
	put_modules(w, &v->sym);
	jsonw_object_end(w);
}

int stacksjson_write(int dirfd, const struct callsite_view *v)
{
	return evidence_write_json(dirfd, STACKS_JSON, 1, 0, put_document, v);
}

/* ---- the summary's lines --------------------------------------------------------- */

#define STACKSJSON_LINES 256u

struct stacksjson_line {
	char text[256];
	uint64_t bytes;
};

static void stacksjson_label(const struct callsite_view *v, const struct callsite *c, char *buf,
			     size_t cap)
{
	size_t o = (size_t)snprintf(buf, cap, "pid %d:", (int)c->pid);
	if (c->nframes == 0)
		snprintf(buf + o, cap - o, " [no stack: table full]");
	/* a Python site by its Python frames: the interpreter's own C
	 * functions inside them say nothing the Python line does not */
	uint32_t from = 0;
	while (from < c->nframes && !v->sym.frames[c->frames[from]].python)
		from++;
	if (from == c->nframes)
		from = 0;
	for (uint32_t j = from; j < c->nframes && j < from + 3 && o < cap; j++) {
		const struct symbols_frame *f = &v->sym.frames[c->frames[j]];
		const char *sep = j > from ? " < " : " ";
		if (f->python && f->file) {
			const char *base = strrchr(f->file, '/');
			o += (size_t)snprintf(buf + o, cap - o, "%s%s (%s:%u)", sep, f->function,
					      base ? base + 1 : f->file, f->line);
		} else if (f->function) {
			o += (size_t)snprintf(buf + o, cap - o, "%s%s", sep, f->function);
		} else if (f->module != SYMBOLS_NO_MODULE && !f->python) {
			/* as flame.svg and the shim name it: module+0xOFFSET */
			const char *path = v->sym.modules[f->module].path, *base = strrchr(path, '/');
			o += (size_t)snprintf(buf + o, cap - o, "%s%s+0x%llx", sep,
					      base ? base + 1 : path,
					      (unsigned long long)(f->vaddr ? f->vaddr
									    : f->file_offset));
		} else {
			o += (size_t)snprintf(buf + o, cap - o, "%s0x%llx", sep,
					      (unsigned long long)f->file_offset);
		}
	}
}

void stacksjson_print(FILE *out, const struct callsite_view *v, size_t rows)
{
	const struct callsite_tree *t = &v->tree[PEAKSITES_HEAP];
	struct stacksjson_line *lines;
	size_t n = 0;
	if (!t->set.n || !t->set.bytes)
		return;
	lines = calloc(STACKSJSON_LINES, sizeof *lines);
	if (!lines)
		return;
	/* sites come largest first: the first few hundred decide the top */
	for (size_t i = 0; i < t->set.n && i < 4 * STACKSJSON_LINES; i++) {
		char text[256];
		size_t k;
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
	fprintf(out, "memsup: heap at the tree's heap peak (%.3f s) by call site: est. %.1f MB +- "
		"%.1f MB of %.1f MB traced:\n",
		t->at_s, (double)t->set.bytes / UNITS_MB, callsites_se(&t->set) / UNITS_MB,
		(double)t->heap / UNITS_MB);
	for (size_t k = 0; k < n && k < rows; k++)
		fprintf(out, "memsup: %6.1f%% %9.1f  %s\n",
			100.0 * (double)lines[k].bytes / (double)t->set.bytes,
			(double)lines[k].bytes / UNITS_MB, lines[k].text);
	free(lines);
}
