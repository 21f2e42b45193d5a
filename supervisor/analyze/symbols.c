/* symbols.c: naming sampled frames from ELF files (see symbols.h). */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "analyze/addr2line.h"
#include "analyze/symbols.h"
#include "analyze/perfmap.h"
#include "base/clock.h"
#include "elfsym.h"
#include "base/grow.h"

void symbols_init(struct symbols *s)
{
	memset(s, 0, sizeof *s);
}

void symbols_free(struct symbols *s)
{
	for (size_t i = 0; i < s->n_modules; i++)
		free(s->modules[i].path);
	for (size_t i = 0; i < s->n_names; i++)
		free(s->names[i]);
	free(s->modules);
	free(s->frames);
	free(s->index);
	free(s->names);
	memset(s, 0, sizeof *s);
}


int64_t symbols_module(struct symbols *s, const struct mt_stacks_module *m)
{
	size_t len = strnlen(m->path, sizeof m->path);
	for (size_t i = 0; i < s->n_modules; i++) {
		const struct symbols_module *x = &s->modules[i];
		if (x->inode == m->inode && x->dev_major == m->dev_major &&
		    x->dev_minor == m->dev_minor && x->build_id_len == m->build_id_len &&
		    memcmp(x->build_id, m->build_id, m->build_id_len) == 0 &&
		    strlen(x->path) == len && memcmp(x->path, m->path, len) == 0)
			return (int64_t)i;
	}
	if (grow_array((void **)&s->modules, &s->cap_modules, s->n_modules + 1, sizeof *s->modules) < 0)
		return -ENOMEM;
	struct symbols_module *x = &s->modules[s->n_modules];
	memset(x, 0, sizeof *x);
	if (!(x->path = strndup(m->path, len)))
		return -ENOMEM;
	x->inode = m->inode;
	x->dev_major = m->dev_major;
	x->dev_minor = m->dev_minor;
	x->build_id_len = m->build_id_len <= sizeof x->build_id ? m->build_id_len : 0;
	memcpy(x->build_id, m->build_id, x->build_id_len);
	x->vdso = (m->flags & MT_MODULE_VDSO) != 0;
	return (int64_t)s->n_modules++;
}

static const char *symbols_name(struct symbols *s, const char *name);

int64_t symbols_perfmap(struct symbols *s, int pid, int64_t not_before)
{
	char path[64];
	struct stat st;
	if (perfmap_path(pid, path, sizeof path) < 0 || stat(path, &st) < 0 ||
	    !S_ISREG(st.st_mode) || st.st_mtime < not_before)
		return -ENOENT;
	for (size_t i = 0; i < s->n_modules; i++)
		if (s->modules[i].perfmap && s->modules[i].inode == (uint64_t)st.st_ino &&
		    strcmp(s->modules[i].path, path) == 0)
			return (int64_t)i;
	if (grow_array((void **)&s->modules, &s->cap_modules, s->n_modules + 1, sizeof *s->modules) < 0)
		return -ENOMEM;
	struct symbols_module *x = &s->modules[s->n_modules];
	memset(x, 0, sizeof *x);
	if (!(x->path = strdup(path)))
		return -ENOMEM;
	x->inode = (uint64_t)st.st_ino;
	x->perfmap = 1;
	return (int64_t)s->n_modules++;
}

/* A JIT's map names the frames of its module (perfmap.h): each return
 * address looked up at the call, the byte before it. */
static int symbols_read_perfmap(struct symbols *s, uint32_t mi)
{
	struct symbols_module *m = &s->modules[mi];
	struct perfmap pm;
	FILE *f = fopen(m->path, "re");
	if (!f) {
		m->state = SYMBOLS_MISSING;
		return 0;
	}
	int rc = perfmap_read(f, &pm);
	fclose(f);
	if (rc == -ENOMEM)
		return rc;
	m->state = rc < 0 ? SYMBOLS_MISSING : pm.n ? SYMBOLS_NAMED : SYMBOLS_NO_SYMBOLS;
	m->lines = SYMBOLS_LINES_NO_DEBUG; /* generated code has no lines */
	for (size_t i = 0; rc == 0 && i < s->n_frames; i++) {
		struct symbols_frame *fr = &s->frames[i];
		if (fr->module != mi || fr->function || !fr->file_offset)
			continue;
		const char *name = perfmap_find(&pm, fr->file_offset - 1);
		if (name && !(fr->function = symbols_name(s, name)))
			rc = -ENOMEM;
	}
	perfmap_free(&pm);
	return rc < 0 ? rc : 0;
}

static uint64_t symbols_hash(uint32_t module, uint64_t off)
{
	uint64_t h = ((uint64_t)module << 40) ^ off;
	h *= UINT64_C(0x9E3779B97F4A7C15);
	return h ^ (h >> 29);
}

static int symbols_rehash(struct symbols *s)
{
	size_t cap = s->index_cap ? 2 * s->index_cap : 1024;
	uint32_t *idx = calloc(cap, sizeof *idx);
	if (!idx)
		return -ENOMEM;
	for (size_t i = 0; i < s->n_frames; i++) {
		if (s->frames[i].flags & SYMBOLS_FRAME_EXPANDED)
			continue; /* reached through its innermost frame */
		size_t k = symbols_hash(s->frames[i].module, s->frames[i].file_offset) & (cap - 1);
		while (idx[k])
			k = (k + 1) & (cap - 1);
		idx[k] = (uint32_t)i + 1;
	}
	free(s->index);
	s->index = idx;
	s->index_cap = cap;
	return 0;
}

int64_t symbols_frame(struct symbols *s, uint32_t module, uint64_t start, uint64_t file_offset,
		      uint64_t pc)
{
	uint64_t off = module == SYMBOLS_NO_MODULE ? pc : pc - start + file_offset;
	size_t k;
	if ((s->n_frames + 1) * 2 > s->index_cap && symbols_rehash(s) < 0)
		return -ENOMEM;
	for (k = symbols_hash(module, off) & (s->index_cap - 1); s->index[k];
	     k = (k + 1) & (s->index_cap - 1)) {
		const struct symbols_frame *f = &s->frames[s->index[k] - 1];
		if (f->module == module && f->file_offset == off)
			return s->index[k] - 1;
	}
	if (s->n_frames >= UINT32_MAX - 1 ||
	    grow_array((void **)&s->frames, &s->cap_frames, s->n_frames + 1, sizeof *s->frames) < 0)
		return -ENOMEM;
	s->frames[s->n_frames] = (struct symbols_frame){ .module = module, .file_offset = off,
							 .outer = SYMBOLS_NO_FRAME };
	s->index[k] = (uint32_t)s->n_frames + 1;
	return (int64_t)s->n_frames++;
}

static const char *symbols_name(struct symbols *s, const char *name);

static uint64_t symbols_text_hash(uint64_t h, const char *t)
{
	for (; t && *t; t++)
		h = (h ^ (uint8_t)*t) * UINT64_C(0x100000001b3);
	return h;
}

int64_t symbols_pyframe(struct symbols *s, const char *function, const char *file, uint32_t line)
{
	uint64_t key = symbols_text_hash(symbols_text_hash(UINT64_C(0xcbf29ce484222325) ^ line,
							   function), file);
	size_t k;
	if ((s->n_frames + 1) * 2 > s->index_cap && symbols_rehash(s) < 0)
		return -ENOMEM;
	for (k = symbols_hash(SYMBOLS_PYTHON, key) & (s->index_cap - 1); s->index[k];
	     k = (k + 1) & (s->index_cap - 1)) {
		const struct symbols_frame *f = &s->frames[s->index[k] - 1];
		if (f->module == SYMBOLS_PYTHON && f->file_offset == key && f->line == line &&
		    strcmp(f->function, function) == 0 &&
		    (f->file == file || (f->file && file && strcmp(f->file, file) == 0)))
			return s->index[k] - 1;
	}
	if (s->n_frames >= UINT32_MAX - 1 ||
	    grow_array((void **)&s->frames, &s->cap_frames, s->n_frames + 1, sizeof *s->frames) < 0)
		return -ENOMEM;
	const char *fn = symbols_name(s, function), *fl = file ? symbols_name(s, file) : NULL;
	if (!fn || (file && !fl))
		return -ENOMEM;
	s->frames[s->n_frames] = (struct symbols_frame){ .module = SYMBOLS_PYTHON, .file_offset = key,
							 .function = fn, .file = fl, .line = line,
							 .outer = SYMBOLS_NO_FRAME, .python = 1 };
	s->index[k] = (uint32_t)s->n_frames + 1;
	return (int64_t)s->n_frames++;
}

int64_t symbols_pyelided(struct symbols *s, uint32_t frames, uint32_t entries)
{
	char name[96];
	int64_t fi;
	if (entries)
		snprintf(name, sizeof name, "<%" PRIu32 " Python frames elided, %" PRIu32
			 " entered from C>", frames, entries);
	else
		snprintf(name, sizeof name, "<%" PRIu32 " Python frames elided>", frames);
	fi = symbols_pyframe(s, name, NULL, 0);
	if (fi >= 0) {
		s->frames[fi].elided = frames;
		s->frames[fi].elided_entries = (uint8_t)(entries < 255 ? entries : 255);
	}
	return fi;
}

static ssize_t symbols_pread(void *ctx, void *buf, size_t n, uint64_t off)
{
	ssize_t r;
	do
		r = pread(*(int *)ctx, buf, n, (off_t)off);
	while (r < 0 && errno == EINTR);
	return r < 0 ? -errno : r;
}

static int symbols_by_addr(const void *a, const void *b)
{
	const struct elfsym_query *x = a, *y = b;
	return x->addr < y->addr ? -1 : x->addr > y->addr;
}

/* A name, kept once. */
static const char *symbols_name(struct symbols *s, const char *name)
{
	for (size_t i = s->n_names; i-- > 0 && i + 64 >= s->n_names;)
		if (strcmp(s->names[i], name) == 0)
			return s->names[i]; /* neighbours often share a function */
	if (grow_array((void **)&s->names, &s->cap_names, s->n_names + 1, sizeof *s->names) < 0)
		return NULL;
	char *d = strdup(name);
	if (!d)
		return NULL;
	s->names[s->n_names++] = d;
	return d;
}

/* ---- source lines: addr2line over the module's DWARF ------------------------- */

/* A copy of an expanded frame: `outer` of frame `at` becomes a new frame
 * at the same address.  Its index, or -ENOMEM. */
static int64_t symbols_expand(struct symbols *s, uint32_t at)
{
	if (s->n_frames >= UINT32_MAX - 1 ||
	    grow_array((void **)&s->frames, &s->cap_frames, s->n_frames + 1, sizeof *s->frames) < 0)
		return -ENOMEM;
	struct symbols_frame *f = &s->frames[s->n_frames];
	*f = s->frames[at];
	f->function = NULL;
	f->file = NULL;
	f->line = 0;
	f->flags = SYMBOLS_FRAME_EXPANDED;
	f->outer = SYMBOLS_NO_FRAME;
	s->frames[at].outer = (uint32_t)s->n_frames;
	return (int64_t)s->n_frames++;
}

/* Frame fi as the answer's frames a[0..c), innermost first: fi becomes
 * a[0], and the functions it was inlined into follow it through `outer`. */
static int symbols_take_answer(struct symbols *s, uint32_t fi, const struct addr2line_frame *a,
			       uint32_t c)
{
	const char *symtab = s->frames[fi].function; /* the called function's ELF name */
	uint32_t at = fi;
	for (uint32_t k = 0; k < c; k++) {
		const char *fn = a[k].function, *file = a[k].file;
		if (k > 0) {
			int64_t x = symbols_expand(s, at);
			if (x < 0)
				return (int)x;
			s->frames[at].flags |= SYMBOLS_FRAME_INLINED;
			at = (uint32_t)x;
		}
		if (fn && !(fn = symbols_name(s, fn)))
			return -ENOMEM;
		if (file && !(file = symbols_name(s, file)))
			return -ENOMEM;
		/* DWARF's name where it has one (demangled, without the
		 * .constprop/.isra suffix of a clone), else the symbol's for
		 * the function that was called */
		s->frames[at].function = fn ? fn : k == c - 1 ? symtab : NULL;
		s->frames[at].file = file;
		s->frames[at].line = file ? a[k].line : 0;
	}
	return 0;
}

static int symbols_tool(struct symbols *s)
{
	if (!s->tool_looked) {
		s->tool_looked = 1;
		if (!addr2line_tool(s->tool, sizeof s->tool, &s->no_tool))
			s->tool[0] = '\0';
	}
	return s->tool[0] != '\0';
}

/* Runs addr2line on `file` for the call addresses addr[j] of frames
 * which[j]: with inlines, every answer; without, the function names only
 * (demangled).  The module's lines state on failure. */
static int symbols_ask(struct symbols *s, struct symbols_module *m, const char *file,
		       const uint64_t *addr, const size_t *which, size_t n, int inlines)
{
	struct addr2line_result r;
	uint64_t now = clock_mono_ns();
	int rc;
	if (!s->deadline_ns)
		s->deadline_ns = now + SYMBOLS_BUDGET_NS;
	if (!symbols_tool(s)) {
		m->lines = SYMBOLS_LINES_NO_TOOL;
		return 0;
	}
	if (now >= s->deadline_ns) {
		m->lines = SYMBOLS_LINES_TIMEOUT;
		return 0;
	}
	rc = addr2line_run(s->tool, file, addr, n, inlines, s->deadline_ns, &r);
	if (rc == -ENOMEM)
		return rc;
	if (rc < 0) {
		m->lines = rc == -ETIMEDOUT ? SYMBOLS_LINES_TIMEOUT
			   : rc == -ENOENT  ? SYMBOLS_LINES_NO_TOOL
					    : SYMBOLS_LINES_FAILED;
		return 0;
	}
	for (size_t j = 0; j < n && !rc; j++) {
		uint32_t c = r.count[j];
		if (!c)
			continue; /* (frames may be NULL when no answer has one) */
		const struct addr2line_frame *a = &r.frames[r.first[j]];
		if (inlines) {
			rc = symbols_take_answer(s, (uint32_t)which[j], a, c);
		} else if (a[c - 1].function && s->frames[which[j]].function) {
			/* only a name the symbol table gave, demangled: without
			 * debug information addr2line names any address by the
			 * nearest symbol below it, even one whose size ends before
			 * it (V8's builtins in a libnode that keeps only its
			 * exported symbols would be named after whatever precedes
			 * the embedded blob) */
			const char *fn = symbols_name(s, a[c - 1].function);
			if (!fn)
				rc = -ENOMEM;
			s->frames[which[j]].function = fn;
		}
	}
	addr2line_free(&r);
	if (inlines && !rc)
		m->lines = SYMBOLS_LINES_READ;
	return rc;
}

/* The lines of module m's frames which[j], at call addresses addr[j]. */
static int symbols_lines(struct symbols *s, struct symbols_module *m, const struct elfsym *e,
			 const uint64_t *addr, const size_t *which, size_t n)
{
	int mangled = 0;
	if (!n)
		return 0; /* no frame to name: not even looked for (a build maps
			     many modules no sample falls in) */
	if (debugfile_find(m->path, e, m->build_id, m->build_id_len, NULL, &m->debug) < 0) {
		m->lines = SYMBOLS_LINES_NO_DEBUG;
		return 0;
	}
	switch (m->debug.how) {
	case DEBUGFILE_IN_FILE:
	case DEBUGFILE_BUILD_ID:
	case DEBUGFILE_DEBUGLINK:
		return symbols_ask(s, m, m->debug.path, addr, which, n, 1);
	case DEBUGFILE_MISMATCH:
		m->lines = SYMBOLS_LINES_MISMATCH;
		break;
	case DEBUGFILE_NONE:
		m->lines = SYMBOLS_LINES_NO_DEBUG;
		break;
	}
	/* no lines, but C++ names read better demangled */
	for (size_t j = 0; j < n && !mangled; j++) {
		const char *fn = s->frames[which[j]].function;
		mangled = fn && fn[0] == '_' && fn[1] == 'Z';
	}
	if (mangled) {
		enum symbols_lines keep = m->lines;
		int rc = symbols_ask(s, m, m->path, addr, which, n, 0);
		m->lines = keep;
		return rc;
	}
	return 0;
}

/* The frames of module mi, named from its file. */
static int symbols_read_module(struct symbols *s, uint32_t mi)
{
	struct symbols_module *m = &s->modules[mi];
	struct elfsym_query *q = NULL;
	struct elfsym_section symtab;
	size_t *which = NULL, nq = 0, n = 0;
	uint64_t *addr = NULL;
	struct elfsym e;
	uint8_t id[MT_STACKS_BUILD_ID_BYTES];
	int fd, rc = 0, idlen;

	if (m->vdso) {
		m->state = SYMBOLS_NO_FILE;
		return 0;
	}
	fd = open(m->path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		m->state = SYMBOLS_MISSING;
		return 0;
	}
	if (elfsym_open(&e, symbols_pread, &fd) != 0) {
		m->state = SYMBOLS_NOT_ELF;
		goto out;
	}
	idlen = elfsym_build_id(&e, 0, id, sizeof id);
	if (m->build_id_len && (idlen != (int)m->build_id_len ||
				memcmp(id, m->build_id, m->build_id_len) != 0)) {
		m->state = SYMBOLS_CHANGED;
		goto out;
	}
	m->stripped = elfsym_section(&e, ".symtab", &symtab) != 0;
	for (size_t i = 0; i < s->n_frames; i++)
		n += s->frames[i].module == mi;
	q = calloc(n ? n : 1, sizeof *q);
	which = calloc(n ? n : 1, sizeof *which);
	addr = calloc(n ? n : 1, sizeof *addr);
	if (!q || !which || !addr) {
		rc = -ENOMEM;
		goto out;
	}
	for (size_t i = 0; i < s->n_frames; i++) {
		struct symbols_frame *f = &s->frames[i];
		uint64_t va;
		if (f->module != mi || f->file_offset == 0 || (f->flags & SYMBOLS_FRAME_EXPANDED))
			continue;
		/* the call instruction's address: the byte before the return */
		if (elfsym_file_vaddr(&e, f->file_offset - 1, &va) != 0)
			continue;
		f->vaddr = va + 1;
		q[nq].addr = va;
		q[nq].sym_size = i; /* carried through the sort */
		nq++;
	}
	if (nq > 1) /* q may be NULL for none */
		qsort(q, nq, sizeof *q, symbols_by_addr);
	for (size_t j = 0; j < nq; j++) {
		which[j] = (size_t)q[j].sym_size;
		addr[j] = q[j].addr;
	}
	if (elfsym_resolve(&e, q, nq) != 0) {
		m->state = SYMBOLS_NO_SYMBOLS;
	} else {
		char name[512];
		m->state = SYMBOLS_NAMED;
		for (size_t j = 0; j < nq; j++)
			if (q[j].found && elfsym_name(&e, &q[j], name, sizeof name) > 0 &&
			    !(s->frames[which[j]].function = symbols_name(s, name))) {
				rc = -ENOMEM;
				goto out;
			}
	}
	rc = symbols_lines(s, m, &e, addr, which, nq);
out:
	free(q);
	free(which);
	free(addr);
	close(fd);
	return rc;
}

int symbols_resolve(struct symbols *s)
{
	for (uint32_t i = 0; i < s->n_modules; i++)
		if (s->modules[i].state == SYMBOLS_UNREAD) {
			int rc = s->modules[i].perfmap ? symbols_read_perfmap(s, i)
						       : symbols_read_module(s, i);
			if (rc < 0)
				return rc;
		}
	/* what the record says of each module's frames */
	for (uint32_t i = 0; i < s->n_modules; i++) {
		struct symbols_module *m = &s->modules[i];
		m->n_frames = m->n_unnamed = m->n_no_line = 0;
	}
	for (size_t i = 0; i < s->n_frames; i++) {
		const struct symbols_frame *f = &s->frames[i];
		if (f->module == SYMBOLS_NO_MODULE || f->module >= s->n_modules)
			continue;
		struct symbols_module *m = &s->modules[f->module];
		m->n_frames++;
		m->n_unnamed += !f->function;
		m->n_no_line += !f->file || !f->line;
	}
	return 0;
}

const char *symbols_state_name(enum symbols_state st)
{
	static const char *const names[] = { "unread", "named", "missing", "not_elf",
					     "changed", "no_symbols", "no_file" };
	return (unsigned)st < sizeof names / sizeof names[0] ? names[st] : "?";
}

const char *symbols_lines_name(enum symbols_lines l)
{
	static const char *const names[] = { "not_read", "read", "no_debug_info",
					     "debug_file_mismatch", "no_addr2line",
					     "addr2line_failed", "addr2line_timeout" };
	return (unsigned)l < sizeof names / sizeof names[0] ? names[l] : "?";
}

const char *symbols_module_why(const struct symbols_module *m)
{
	if (!m->n_unnamed && !m->n_no_line)
		return NULL;
	if (m->perfmap && m->state == SYMBOLS_NAMED)
		return m->n_unnamed ? "not_in_perf_map" : "jit_code_has_no_lines";
	if (m->state != SYMBOLS_NAMED && m->state != SYMBOLS_NO_SYMBOLS)
		return symbols_state_name(m->state);
	switch (m->lines) {
	case SYMBOLS_LINES_READ:
		/* its DWARF does not cover them (assembly, PLT stubs) */
		return "not_in_debug_info";
	case SYMBOLS_LINES_NO_DEBUG:
		return m->stripped ? "stripped" : "no_debug_info";
	default:
		return symbols_lines_name(m->lines);
	}
}
