/* flame.c: flame.svg and flame.folded (see flame.h; `memsup flame` itself
 * is cmd_flame.c). */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "evidence/files.h"
#include "base/grow.h"
#include "view/flame.h"
#include "evidence/jsonr.h"

/* stacks.json may be large: every site of every image; this much at most. */
#define FLAME_MAX_JSON (512u << 20)
#define FLAME_ROW 16.0
#define FLAME_TOP 58.0
#define FLAME_SIDE 10.0

static void set_err(char *err, size_t errlen, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static void set_err(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;
	if (!err || !errlen)
		return;
	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
}

void flame_free(struct flame *f)
{
	for (size_t i = 0; i < f->n_strings; i++)
		free(f->strings[i]);
	free(f->strings);
	free(f->nodes);
	memset(f, 0, sizeof *f);
}

static const char *flame_keep(struct flame *f, char *s)
{
	if (!s)
		return NULL;
	if (grow_array((void **)&f->strings, &f->cap_strings, f->n_strings + 1,
		       sizeof *f->strings) < 0) {
		free(s);
		return NULL;
	}
	return f->strings[f->n_strings++] = s;
}

/* The child of `parent` named `name` (made if new, with a copy of the
 * name when `copy`); FLAME_NONE if out of memory. */
static uint32_t flame_child(struct flame *f, uint32_t parent, const char *name,
			    enum flame_kind kind, int copy)
{
	uint32_t c;
	for (c = f->nodes[parent].first; c != FLAME_NONE; c = f->nodes[c].next)
		if (strcmp(f->nodes[c].name, name) == 0)
			return c;
	if (f->n == f->cap) {
		size_t cap = 2 * f->cap;
		struct flame_node *p = cap < FLAME_NONE ? realloc(f->nodes, cap * sizeof *p) : NULL;
		if (!p)
			return FLAME_NONE;
		f->nodes = p;
		f->cap = cap;
	}
	if (copy && !(name = flame_keep(f, strdup(name))))
		return FLAME_NONE;
	c = (uint32_t)f->n++;
	f->nodes[c] = (struct flame_node){ name, 0, FLAME_NONE, f->nodes[parent].first,
					   f->nodes[parent].depth + 1, kind };
	f->nodes[parent].first = c;
	if (f->nodes[c].depth > f->max_depth)
		f->max_depth = f->nodes[c].depth;
	return c;
}

/* A frame's name: its function with its source line, "f (file.c:12)" (the
 * file's last component), its function alone, else module+0xOFFSET, else
 * its address. */
static char *flame_frame_name(const struct jsonr_value *frame, const struct jsonr_value *modules)
{
	const char *fn = jsonr_str(jsonr_get(frame, "function"), NULL);
	const char *file = jsonr_str(jsonr_get(frame, "file"), NULL);
	double line = jsonr_num(jsonr_get(frame, "line"), 0);
	const struct jsonr_value *mod = jsonr_get(frame, "module");
	double off = jsonr_num(jsonr_get(frame, "offset"), -1);
	char buf[512];
	if (fn && *fn && file && *file && line >= 1 && line <= 4294967295.0) {
		const char *base = strrchr(file, '/');
		snprintf(buf, sizeof buf, "%s (%s:%" PRIu32 ")", fn, base ? base + 1 : file,
			 (uint32_t)line);
		return strdup(buf);
	}
	if (fn && *fn)
		return strdup(fn);
	if (mod && mod->type == JSONR_NUMBER) {
		const char *path = jsonr_str(jsonr_get(jsonr_at(modules, (size_t)mod->number), "path"),
					     "?");
		const char *base = strrchr(path, '/');
		if (off < 0)
			off = jsonr_num(jsonr_get(frame, "file_offset"), 0);
		snprintf(buf, sizeof buf, "%s+0x%" PRIx64, base ? base + 1 : path, (uint64_t)off);
	} else {
		snprintf(buf, sizeof buf, "0x%" PRIx64,
			 (uint64_t)jsonr_num(jsonr_get(frame, "file_offset"), 0));
	}
	return strdup(buf);
}

/* stacks.json's images, as the flame needs them: read an image at a time
 * (jsonr_read_file_streaming) and looked up by (pid, gen), so that a run
 * of 100,000 images costs neither their tree nor a scan per call site. */
struct flame_image {
	double pid, gen;
	char *command; /* NULL: none recorded */
};

struct flame_images {
	struct flame_image *v;
	size_t n, cap;
};

static int flame_keep_image(const struct jsonr_value *im, void *ctx)
{
	struct flame_images *all = ctx;
	const char *cmd = jsonr_str(jsonr_get(im, "command"), NULL);
	if (grow_array((void **)&all->v, &all->cap, all->n + 1, sizeof *all->v) < 0)
		return -ENOMEM;
	all->v[all->n] = (struct flame_image){ jsonr_num(jsonr_get(im, "pid"), -1),
					       jsonr_num(jsonr_get(im, "gen"), -1), NULL };
	if (cmd && !(all->v[all->n].command = strdup(cmd)))
		return -ENOMEM;
	all->n++;
	return 0;
}

static int flame_image_cmp(const void *a, const void *b)
{
	const struct flame_image *x = a, *y = b;
	if (x->pid != y->pid)
		return x->pid < y->pid ? -1 : 1;
	return (x->gen > y->gen) - (x->gen < y->gen);
}

static void flame_images_free(struct flame_images *all)
{
	for (size_t i = 0; i < all->n; i++)
		free(all->v[i].command);
	free(all->v);
	memset(all, 0, sizeof *all);
}

/* "pid 123 command" of the image (pid, gen); `all` is sorted. */
static void flame_process_name(const struct flame_images *all, double pid, double gen,
			       char *buf, size_t cap)
{
	struct flame_image key = { pid, gen, NULL };
	const struct flame_image *im =
		all->n ? bsearch(&key, all->v, all->n, sizeof *all->v, flame_image_cmp) : NULL;
	const char *cmd = im ? im->command : NULL;
	snprintf(buf, cap, "pid %" PRId64 " %s", (int64_t)pid, cmd ? cmd : "?");
}

/* Children largest first, ties by name: the layout never depends on the
 * order stacks.json listed them in. */
static int flame_before(const struct flame *f, uint32_t a, uint32_t b)
{
	const struct flame_node *x = &f->nodes[a], *y = &f->nodes[b];
	if (x->bytes != y->bytes)
		return x->bytes > y->bytes;
	return strcmp(x->name, y->name) < 0;
}

static void flame_sort(struct flame *f)
{
	for (size_t p = 0; p < f->n; p++) {
		uint32_t sorted = FLAME_NONE, c = f->nodes[p].first;
		while (c != FLAME_NONE) {
			uint32_t next = f->nodes[c].next, *at = &sorted;
			while (*at != FLAME_NONE && flame_before(f, *at, c))
				at = &f->nodes[*at].next;
			f->nodes[c].next = *at;
			*at = c;
			c = next;
		}
		f->nodes[p].first = sorted;
	}
}

static int flame_build(struct flame *f, const struct jsonr_value *doc,
		       const struct flame_images *images)
{
	const struct jsonr_value *tree = jsonr_get(doc, "tree");
	const struct jsonr_value *moment =
		jsonr_get(tree, f->at == FLAME_AT_RSS    ? "rss_peak"
				: f->at == FLAME_AT_HEAP ? "heap_peak"
							 : "total_peak");
	/* a stacks.json of a memsup before the total peak: its heap peak */
	if (f->at == FLAME_AT_TOTAL && !jsonr_get(tree, "total_peak")) {
		moment = jsonr_get(tree, "heap_peak");
		f->at_heap_instead = 1;
	}
	const struct jsonr_value *frames = jsonr_get(doc, "frames");
	const struct jsonr_value *modules = jsonr_get(doc, "modules");
	const struct jsonr_value *sites = jsonr_get(moment, "sites");
	const char **names;
	size_t nframes = frames && frames->type == JSONR_ARRAY ? frames->n : 0;

	f->nodes = calloc(256, sizeof *f->nodes);
	if (!f->nodes)
		return -ENOMEM;
	f->cap = 256;
	f->n = 1;
	f->nodes[0] = (struct flame_node){ "all", 0, FLAME_NONE, FLAME_NONE, 0, FLAME_ROOT };
	f->sample_bytes = (uint64_t)jsonr_num(jsonr_get(doc, "sample_bytes"), 0);
	if (!moment || moment->type != JSONR_OBJECT)
		return 0;
	f->have = 1;
	f->at_s = jsonr_num(jsonr_get(moment, "at_s"), -1);
	f->traced_heap = (uint64_t)jsonr_num(
		jsonr_get(moment, f->at == FLAME_AT_TOTAL && !f->at_heap_instead ? "traced_total"
										   : "traced_heap"),
		0);
	f->rss = (uint64_t)jsonr_num(jsonr_get(moment, "rss"), 0);
	f->se = (uint64_t)jsonr_num(jsonr_get(moment, "se_bytes"), 0);
	f->inherited = (uint64_t)jsonr_num(jsonr_get(moment, "inherited_bytes"), 0);
	/* every frame's name once */
	names = calloc(nframes ? nframes : 1, sizeof *names);
	if (!names)
		return -ENOMEM;
	for (size_t i = 0; i < nframes; i++)
		if (!(names[i] = flame_keep(f, flame_frame_name(&frames->items[i], modules)))) {
			free(names);
			return -ENOMEM;
		}
	for (size_t s = 0; sites && s < sites->n; s++) {
		const struct jsonr_value *site = &sites->items[s];
		const struct jsonr_value *fr = jsonr_get(site, "frames");
		double pid = jsonr_num(jsonr_get(site, "pid"), 0), gen = jsonr_num(jsonr_get(site, "gen"), 0);
		double bytes = jsonr_num(jsonr_get(site, "bytes"), 0);
		uint32_t at;
		char label[160];
		if (!(bytes > 0) || bytes > 1e19)
			continue;
		/* counted where the image that holds them too is (stacksjson.h) */
		const struct jsonr_value *inh = jsonr_get(site, "inherited");
		if (inh && inh->type == JSONR_BOOL && inh->boolean)
			continue;
		/* the process: one node per image */
		flame_process_name(images, pid, gen, label, sizeof label);
		if ((at = flame_child(f, 0, label, FLAME_PROCESS, 1)) == FLAME_NONE) {
			free(names);
			return -ENOMEM;
		}
		f->nodes[0].bytes += (uint64_t)bytes;
		f->nodes[at].bytes += (uint64_t)bytes;
		/* stacks.h: anonymous mappings the program made itself stand on
		 * a root of their own in their process ("kind": "mmap"); heap
		 * sites ("heap", or no kind in an older stacks.json) as before */
		const char *kind = jsonr_str(jsonr_get(site, "kind"), NULL);
		if (kind && strcmp(kind, "mmap") == 0) {
			if ((at = flame_child(f, at, "[mmap]", FLAME_FRAME, 0)) == FLAME_NONE) {
				free(names);
				return -ENOMEM;
			}
			f->nodes[at].bytes += (uint64_t)bytes;
		}
		if (!fr || fr->type != JSONR_ARRAY || fr->n == 0) {
			at = flame_child(f, at, "[no stack: table full]", FLAME_FRAME, 0);
			if (at == FLAME_NONE) {
				free(names);
				return -ENOMEM;
			}
			f->nodes[at].bytes += (uint64_t)bytes;
			continue;
		}
		/* outermost first: frames are listed innermost first */
		for (size_t j = fr->n; j-- > 0;) {
			double k = jsonr_num(&fr->items[j], -1);
			const char *name = k >= 0 && k < (double)nframes ? names[(size_t)k] : "?";
			if ((at = flame_child(f, at, name, FLAME_FRAME, 0)) == FLAME_NONE) {
				free(names);
				return -ENOMEM;
			}
			f->nodes[at].bytes += (uint64_t)bytes;
		}
	}
	free(names);
	flame_sort(f);
	return 0;
}

int flame_load(int dirfd, enum flame_at at, struct flame *f, char *err, size_t errlen)
{
	struct jsonr_value *doc;
	int rc;
	memset(f, 0, sizeof *f);
	f->at = at;
	f->at_s = -1;
	struct flame_images images = { 0 };
	rc = jsonr_read_file_streaming(dirfd, EVIDENCE_STACKS, FLAME_MAX_JSON, "images",
				       flame_keep_image, &images, &doc, err, errlen);
	if (rc < 0) {
		flame_images_free(&images);
		return rc;
	}
	if (images.n)
		qsort(images.v, images.n, sizeof *images.v, flame_image_cmp);
	rc = flame_build(f, doc, &images);
	jsonr_free(doc);
	flame_images_free(&images);
	if (rc < 0) {
		set_err(err, errlen, EVIDENCE_STACKS ": %s", strerror(-rc));
		flame_free(f);
	}
	return rc;
}

/* ---- the picture ---------------------------------------------------------------- */

static uint32_t flame_hash(const char *s)
{
	uint32_t h = 2166136261u;
	while (*s)
		h = (h ^ (unsigned char)*s++) * 16777619u;
	return h;
}

/* Warm colours for frames, blue for processes, grey for the tree: the
 * colour follows the name, so one function looks the same everywhere. */
static void flame_color(const struct flame_node *n, char *buf, size_t cap)
{
	uint32_t h = flame_hash(n->name);
	if (n->kind == FLAME_ROOT)
		snprintf(buf, cap, "#c8c8c8");
	else if (n->kind == FLAME_PROCESS)
		snprintf(buf, cap, "#%02x%02x%02x", 110 + (h & 31), 150 + (h >> 5 & 31),
			 205 + (h >> 10 & 31));
	else
		snprintf(buf, cap, "#%02x%02x%02x", 205 + (h % 50), 90 + (h >> 8) % 130,
			 40 + (h >> 16) % 40);
}

static void flame_node_svg(const struct flame *f, uint32_t i, double x, double scale,
			   const struct svg_axis *ax, struct svg_buf *b)
{
	const struct flame_node *n = &f->nodes[i];
	double w = (double)n->bytes * scale, y = FLAME_TOP + n->depth * FLAME_ROW;
	char color[16], value[64], num[64];
	uint64_t pm;
	if (w < 0.3)
		return; /* narrower than a pixel's third: nor its children */
	flame_color(n, color, sizeof color);
	svg_format_value(ax, (double)n->bytes, value, sizeof value);
	/* per mille, in integers: no locale's decimal mark */
	pm = f->nodes[0].bytes
		     ? (uint64_t)((double)n->bytes * 1000.0 / (double)f->nodes[0].bytes + 0.5)
		     : 0;
	snprintf(num, sizeof num, "%" PRIu64 ".%" PRIu64, pm / 10, pm % 10);
	svg_put(b, "<g><title>");
	svg_put_text(b, n->name, strlen(n->name), 0);
	svg_put(b, "\n");
	svg_put(b, value);
	svg_put(b, " (");
	svg_put(b, num);
	svg_put(b, "%)</title><rect x=\"");
	svg_put_coord(b, x);
	svg_put(b, "\" y=\"");
	svg_put_coord(b, y);
	svg_put(b, "\" width=\"");
	svg_put_coord(b, w);
	svg_put(b, "\" height=\"");
	svg_put_coord(b, FLAME_ROW - 1);
	svg_put(b, "\" fill=\"");
	svg_put(b, color);
	svg_put(b, "\" rx=\"2\"/>");
	if (w >= 24) {
		svg_put(b, "<text x=\"");
		svg_put_coord(b, x + 3);
		svg_put(b, "\" y=\"");
		svg_put_coord(b, y + FLAME_ROW - 4.5);
		svg_put(b, "\">");
		svg_put_text(b, n->name, strlen(n->name), (size_t)((w - 6) / 6.4));
		svg_put(b, "</text>");
	}
	svg_put(b, "</g>\n");
	for (uint32_t c = n->first; c != FLAME_NONE; c = f->nodes[c].next) {
		flame_node_svg(f, c, x, scale, ax, b);
		x += (double)f->nodes[c].bytes * scale;
	}
}

int flame_render(const struct flame *f, unsigned width, struct svg_buf *b)
{
	unsigned W = width ? width : FLAME_DEFAULT_WIDTH, H;
	const struct flame_node *root = &f->nodes[0];
	struct svg_axis ax;
	char title[256], sub[512], est[64], se[64], heap[64], rate[64];
	int total = f->at == FLAME_AT_TOTAL && !f->at_heap_instead;
	if (W < SVG_MIN_WIDTH)
		W = SVG_MIN_WIDTH;
	if (W > SVG_MAX_WIDTH)
		W = SVG_MAX_WIDTH;
	H = (unsigned)(FLAME_TOP + (f->max_depth + 1) * FLAME_ROW + 24);
	svg_axis_bytes((double)(root->bytes > f->traced_heap ? root->bytes : f->traced_heap), 5,
		       &ax);
	svg_format_value(&ax, (double)root->bytes, est, sizeof est);
	svg_format_value(&ax, (double)f->se, se, sizeof se);
	svg_format_value(&ax, (double)f->traced_heap, heap, sizeof heap);
	if (f->sample_bytes == 1)
		snprintf(rate, sizeof rate, "every block sampled");
	else if (f->sample_bytes)
		snprintf(rate, sizeof rate, "sampled every %" PRIu64 " KiB on average",
			 f->sample_bytes / 1024);
	else
		snprintf(rate, sizeof rate, "sampled");
	{
		char when[48];
		svg_axis_time(f->at_s > 0 ? f->at_s : 1, 5, &ax);
		svg_format_value(&ax, f->at_s > 0 ? f->at_s : 0, when, sizeof when);
		snprintf(title, sizeof title, "%s by call site at the tree's %s%s%s",
			 total ? "Heap and mappings" : "Heap",
			 f->at == FLAME_AT_RSS ? "RSS peak"
			 : total	       ? "peak of heap plus mappings"
					       : "heap peak",
			 f->have && f->at_s >= 0 ? ", " : "", f->have && f->at_s >= 0 ? when : "");
		svg_axis_bytes((double)(root->bytes > f->traced_heap ? root->bytes : f->traced_heap), 5,
			       &ax);
	}
	if (!f->have)
		snprintf(sub, sizeof sub, "no sample of the tree was taken");
	else if (!root->bytes)
		snprintf(sub, sizeof sub, "no sampled block was live then (%s; traced %s %s)",
			 rate, total ? "heap and mappings" : "heap", heap);
	else if (!f->inherited)
		snprintf(sub, sizeof sub,
			 "estimated %s \u00b1 %s (one standard error) of the %s traced %s; %s", est,
			 se, heap, total ? "heap and mappings" : "heap", rate);
	else {
		/* the traced figure counts a fork child's inherited blocks once
		 * more per child; the picture does not */
		char inh[64];
		svg_format_value(&ax, (double)f->inherited, inh, sizeof inh);
		snprintf(sub, sizeof sub,
			 "estimated %s \u00b1 %s (one standard error) of the %s traced %s, %s of "
			 "it blocks fork children inherited that another image holds too (drawn "
			 "once); %s",
			 est, se, heap, total ? "heap and mappings" : "heap", inh, rate);
	}

	svg_put(b, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
	{
		char head[512];
		snprintf(head, sizeof head,
			 "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%u\" height=\"%u\" "
			 "viewBox=\"0 0 %u %u\" font-family=\"DejaVu Sans, Helvetica, Arial, "
			 "sans-serif\" font-size=\"11\">\n",
			 W, H, W, H);
		svg_put(b, head);
	}
	svg_put(b, "<title>");
	svg_put_text(b, title, strlen(title), 0);
	svg_put(b, "</title>\n<rect width=\"100%\" height=\"100%\" fill=\"#ffffff\"/>\n");
	svg_put(b, "<text class=\"title\" x=\"10\" y=\"24\" font-size=\"14\" font-weight=\"bold\">");
	svg_put_text(b, title, strlen(title), 0);
	svg_put(b, "</text>\n<text class=\"subtitle\" x=\"10\" y=\"42\" fill=\"#444\">");
	svg_put_text(b, sub, strlen(sub), (size_t)((W - 20) / 6.2));
	svg_put(b, "</text>\n<g class=\"boxes\">\n");
	if (root->bytes)
		flame_node_svg(f, 0, FLAME_SIDE, (W - 2 * FLAME_SIDE) / (double)root->bytes, &ax, b);
	svg_put(b, "</g>\n<text x=\"10\" y=\"");
	svg_put_coord(b, H - 8);
	svg_put(b, "\" fill=\"#666\" font-size=\"10\">a box is as wide as the estimated bytes "
		   "under it; point at one for its figures</text>\n</svg>\n");
	return b->err;
}

/* ---- the folded lines ---------------------------------------------------------- */

/* A name in a folded line: no ';' (the separator) and no newline. */
static void flame_folded_name(struct svg_buf *b, const char *s)
{
	char one[2] = { 0, 0 };
	for (; *s; s++) {
		one[0] = *s == ';' ? ':' : (*s == '\n' || *s == '\r') ? ' ' : *s;
		svg_put(b, one);
	}
}

static void flame_folded_node(const struct flame *f, uint32_t i, uint32_t *path,
			      struct svg_buf *b)
{
	const struct flame_node *n = &f->nodes[i];
	uint64_t below = 0;
	path[n->depth] = i;
	for (uint32_t c = n->first; c != FLAME_NONE; c = f->nodes[c].next) {
		below += f->nodes[c].bytes;
		flame_folded_node(f, c, path, b);
	}
	if (n->depth > 0 && n->bytes > below) {
		char num[32];
		for (uint32_t d = 1; d <= n->depth; d++) {
			if (d > 1)
				svg_put(b, ";");
			flame_folded_name(b, f->nodes[path[d]].name);
		}
		snprintf(num, sizeof num, " %" PRIu64 "\n", n->bytes - below);
		svg_put(b, num);
	}
}

int flame_folded(const struct flame *f, struct svg_buf *b)
{
	uint32_t *path = calloc(f->max_depth + 1, sizeof *path);
	if (!path)
		return -ENOMEM;
	flame_folded_node(f, 0, path, b);
	free(path);
	return b->err;
}

/* ---- files ------------------------------------------------------------------ */

int flame_render_both(int dirfd, enum flame_at at, unsigned width, struct svg_buf *svg,
		      struct svg_buf *folded, char *err, size_t errlen)
{
	struct flame f;
	int rc = flame_load(dirfd, at, &f, err, errlen);
	if (rc < 0)
		return rc;
	rc = flame_render(&f, width, svg);
	if (!rc)
		rc = flame_folded(&f, folded);
	flame_free(&f);
	if (rc < 0)
		set_err(err, errlen, "%s", strerror(-rc));
	return rc;
}

int flame_write_dir(int dirfd, const char *dirpath, char *err, size_t errlen)
{
	struct svg_buf svg = { 0 }, folded = { 0 };
	char why[256] = "";
	int rc = flame_render_both(dirfd, FLAME_AT_TOTAL, 0, &svg, &folded, why, sizeof why);
	if (rc == 0 && (rc = svg_write_atomic(dirfd, EVIDENCE_FLAME_SVG, &svg)) < 0)
		snprintf(why, sizeof why, EVIDENCE_FLAME_SVG ": %s", strerror(-rc));
	if (rc == 0 && (rc = svg_write_atomic(dirfd, EVIDENCE_FLAME_FOLDED, &folded)) < 0)
		snprintf(why, sizeof why, EVIDENCE_FLAME_FOLDED ": %s", strerror(-rc));
	if (rc < 0)
		set_err(err, errlen, "%s: %s", dirpath ? dirpath : ".", why);
	svg_buf_free(&svg);
	svg_buf_free(&folded);
	return rc;
}
