/* topsites.c: the top call sites in the standalone summary (see
 * topsites.h). */
#include <fcntl.h>
#include <limits.h>
#include <string.h>

#include "base/errfd.h"
#include "base/sys.h"
#include "textbuf.h"
#include "demangle.h"
#include "elfsym.h"
#include "filecheck.h"
#include "imagename.h"
#include "pyline.h"
#include "report/render.h"
#include "report/topsites.h"
#include "sampling/sites.h"
#include "stacks.h"

#define TOPSITES_NAME_BYTES 80u
/* Stacks named per table before those that read the same are merged. */
#define TOPSITES_CANDIDATES 64u
/* A Python stack's native frames are all named, to find the evaluation
 * loop's among them (below); another stack's first TOPSITES_FRAMES. */
#define TOPSITES_SLOTS (TOPSITES_CANDIDATES * MT_STACKS_FRAMES)
#define TOPSITES_TEXT_BYTES 400u
/* Merged lines kept over a tree's tables; the smallest goes when full. */
#define TOPSITES_LINES 128u

struct topsites_frame {
	uint64_t pc;
	uint64_t vaddr;   /* in the module's ELF */
	int module;       /* table entry, -1: none */
	int named;
	char name[TOPSITES_NAME_BYTES];
};

/* Everything a summary adds up, over one table or a tree's. */
struct topsites_acc {
	uint64_t rate;        /* the tables' interval (0: they differ) */
	uint64_t total, var, samples, heap_peaks;
	int mapped;           /* a table has mmap-kind stacks (stacks.h) */
	unsigned tables, sites, nlines;
	struct {
		uint64_t bytes;
		int unnamed;  /* a frame a person cannot read (topsites_unnamed) */
		char text[TOPSITES_TEXT_BYTES];
	} line[TOPSITES_LINES];
};

/* The exit path runs once per image (store_finish says so), so the work
 * space can be static rather than on a thread's stack, which may be small;
 * the buffer holds one other image's table, read with pread (a file
 * someone truncates under a mapping would kill the program with SIGBUS). */
static struct topsites_acc topsites_acc MT_TABLE;
static struct topsites_frame topsites_fr[TOPSITES_SLOTS] MT_TABLE;
static char topsites_text[TOPSITES_CANDIDATES][TOPSITES_TEXT_BYTES] MT_TABLE;
static uint32_t topsites_id[TOPSITES_CANDIDATES] MT_TABLE;
static uint64_t topsites_bytes[TOPSITES_CANDIDATES] MT_TABLE;
/* Per picked stack: its frames' first slot in topsites_fr and how many,
 * and whether its text leaves a frame unnamed. */
static uint32_t topsites_at[TOPSITES_CANDIDATES] MT_TABLE;
static uint32_t topsites_nat[TOPSITES_CANDIDATES] MT_TABLE;
static uint8_t topsites_unnamed[TOPSITES_CANDIDATES] MT_TABLE;
static struct elfsym_query topsites_q[TOPSITES_SLOTS] MT_TABLE;
static unsigned topsites_qi[TOPSITES_SLOTS] MT_TABLE;
static _Alignas(64) unsigned char topsites_buf[MT_STACKS_SIZE] MT_TABLE;
/* A symbol's whole name, and its demangled form (topsites_set_name). */
static char topsites_sym[1024] MT_TABLE;
static char topsites_dm[512] MT_TABLE;

static ssize_t topsites_pread(void *ctx, void *buf, size_t n, uint64_t off)
{
	return sys_pread(*(int *)ctx, buf, n, (off_t)off);
}

static uint64_t topsites_sqrt(uint64_t v)
{
	uint64_t x = v, y;
	if (v < 2)
		return v;
	y = (x + 1) / 2;
	while (y < x) {
		x = y;
		y = (x + v / x) / 2;
	}
	return x;
}

/* The table's module holding pc: the newest among the first `seen`. */
static int topsites_module(struct mt_stacks_header *h, uint32_t seen, uint64_t pc)
{
	uint32_t n = h->module_count < seen ? h->module_count : seen;
	while (n-- > 0) {
		const struct mt_stacks_module *m = mt_stacks_module(h, n);
		if (pc > m->start && pc <= m->end)
			return (int)n;
	}
	return -1;
}

/* A frame's name from its symbol in topsites_sym: a C++ name demangled
 * where demangle.h reads it (whole: a mangled name cut short is not
 * read), else as the table spells it; cut to the frame's room. */
static void topsites_set_name(struct topsites_frame *f)
{
	const char *name = topsites_sym;
	size_t n;
	if (name[0] == '_' && name[1] == 'Z' &&
	    demangle_short(topsites_sym, topsites_dm, sizeof topsites_dm) > 0)
		name = topsites_dm;
	n = strlen(name);
	if (n >= sizeof f->name)
		n = sizeof f->name - 1;
	memcpy(f->name, name, n);
	f->name[n] = '\0';
	f->named = 1;
}

/* Names the frames of one module, from its file. */
static void topsites_resolve(struct mt_stacks_header *h, int module, struct topsites_frame *f,
			     unsigned nf)
{
	const struct mt_stacks_module *m = mt_stacks_module(h, (uint32_t)module);
	struct elfsym elf;
	unsigned nq = 0;
	int fd;

	if (m->flags & MT_MODULE_VDSO || memchr(m->path, '\0', sizeof m->path) == NULL)
		return;
	fd = sys_open(m->path, O_RDONLY | O_CLOEXEC, 0);
	if (fd < 0)
		return;
	if (elfsym_open(&elf, topsites_pread, &fd) == 0) {
		for (unsigned i = 0; i < nf; i++) {
			uint64_t off, at;
			unsigned j;
			if (f[i].module != module)
				continue;
			/* pc - 1: the call instruction, not the one after it. */
			off = f[i].pc - 1 - m->start + m->file_offset;
			if (elfsym_file_vaddr(&elf, off, &at) != 0)
				continue;
			f[i].vaddr = at + 1;
			/* sorted insertion by address */
			for (j = nq++; j > 0 && topsites_q[j - 1].addr > at; j--) {
				topsites_q[j] = topsites_q[j - 1];
				topsites_qi[j] = topsites_qi[j - 1];
			}
			memset(&topsites_q[j], 0, sizeof topsites_q[j]);
			topsites_q[j].addr = at;
			topsites_qi[j] = i;
		}
		if (nq && elfsym_resolve(&elf, topsites_q, nq) == 0) {
			for (unsigned j = 0; j < nq; j++)
				if (topsites_q[j].found &&
				    elfsym_name(&elf, &topsites_q[j], topsites_sym,
						sizeof topsites_sym) > 0)
					topsites_set_name(&f[topsites_qi[j]]);
		}
	}
	sys_close(fd);
}

/* One native frame: its symbol, else module+0xADDRESS, else "?".
 * Returns 1 when that leaves it unnamed for a person: no symbol, or a
 * C++ name left mangled (a form demangle.h does not read). */
static int topsites_frame_text(struct textbuf *s, struct mt_stacks_header *h,
			       const struct topsites_frame *f)
{
	const char *path, *base;
	char hex[17];
	int n = 0;
	uint64_t v = f->vaddr;
	if (f->named) {
		textbuf_add(s, f->name);
		return f->name[0] == '_' && f->name[1] == 'Z';
	}
	if (f->module < 0) {
		textbuf_add(s, "?");
		return 1;
	}
	path = mt_stacks_module(h, (uint32_t)f->module)->path;
	base = strrchr(path, '/');
	textbuf_add(s, base ? base + 1 : path);
	textbuf_add(s, "+0x");
	do {
		hex[n++] = "0123456789abcdef"[v & 15];
		v >>= 4;
	} while (v && n < 16);
	while (n)
		textbuf_add_n(s, &hex[--n], 1);
	return 1;
}

/* One Python frame as memsup's summary names it: "qualname (file.py:12)"
 * (the file's last component), of code entry mt_pyframe_code(pc) of a
 * table with `codes` entries readable.  Returns 1 when it lacks its name,
 * file or line. */
static int topsites_pyframe_text(struct textbuf *s, struct mt_stacks_header *h, uint32_t codes,
				 uint64_t pc)
{
	uint32_t i = mt_pyframe_code(pc), line = 0;
	const struct mt_stacks_code *c;
	const char *file, *end, *base;
	size_t len;
	if (i >= codes) {
		textbuf_add(s, "<unknown code>");
		return 1;
	}
	c = mt_stacks_code(h, i);
	/* bounded: the live table is not checked in place (filecheck.h) */
	end = memchr(c->name, '\0', sizeof c->name);
	textbuf_add_n(s, c->name, end ? (size_t)(end - c->name) : sizeof c->name);
	end = memchr(c->file, '\0', sizeof c->file);
	len = end ? (size_t)(end - c->file) : sizeof c->file;
	if (!len)
		return 1;
	file = c->file;
	for (base = file + len; base > file && base[-1] != '/'; base--) {
	}
	textbuf_add(s, " (");
	textbuf_add_n(s, base, len - (size_t)(base - file));
	if (pyline_of(h->py_version, c, mt_pyframe_instr(pc), &line) == 0 && line) {
		textbuf_add(s, ":");
		textbuf_add_u64(s, line);
		textbuf_add(s, ")");
		return 0;
	}
	textbuf_add(s, ")");
	return 1;
}

/* One decimal of a share in permille. */
static void topsites_percent(struct textbuf *s, uint64_t part, uint64_t whole)
{
	uint64_t pm = whole ? (uint64_t)((double)part * 1000.0 / (double)whole + 0.5) : 0;
	if (pm < 1000)
		textbuf_add(s, pm < 100 ? "  " : " ");
	textbuf_add_u64(s, pm / 10);
	textbuf_add(s, ".");
	textbuf_add_u64(s, pm % 10);
	textbuf_add(s, "%");
}

/* The table's largest stacks at its image's peak into topsites_id/bytes,
 * and its totals into the accumulator; returns how many. */
static uint32_t topsites_pick(struct topsites_acc *a, struct mt_stacks_header *h, int live,
			      uint32_t count)
{
	uint32_t n = 0;
	for (uint32_t i = 0; i < count; i++) {
		const struct mt_stack *st = mt_stacks_stack(h, i);
		uint64_t b = live ? st->live_bytes : st->peak_bytes;
		uint32_t j;
		if (!b)
			continue;
		a->sites++;
		a->total += b;
		a->var += live ? st->live_var : st->peak_var;
		a->samples += live ? st->live_count : st->peak_count;
		if (n < TOPSITES_CANDIDATES)
			n++;
		else if (b <= topsites_bytes[n - 1])
			continue;
		for (j = n - 1; j > 0 && topsites_bytes[j - 1] < b; j--) {
			topsites_bytes[j] = topsites_bytes[j - 1];
			topsites_id[j] = topsites_id[j - 1];
		}
		topsites_bytes[j] = b;
		topsites_id[j] = i;
	}
	return n;
}

/* How many of a stack's frames are native: its Python frames, when it
 * has them and the table's codes can be read, follow them (stacks.h). */
static uint32_t topsites_natives(const struct mt_stack *st, uint32_t frames, uint32_t codes)
{
	uint32_t n = 0;
	if (!(st->flags & MT_STACK_PYTHON) || !codes)
		return frames;
	while (n < frames && !mt_pyframe_is(st->pc[n]))
		n++;
	return n;
}

/* A Python stack's text, read as memsup's summary reads it (the
 * interleaving of supervisor/analyze/pyframes.h): each native frame of
 * the evaluation loop ran the Python frames from the next one not yet
 * placed up to the one entered from C, and stands for them; the line
 * starts at the innermost Python frame (the interpreter's own C functions
 * inside it say nothing the Python line does not) and shows
 * TOPSITES_FRAMES frames.  Returns 1 when a frame shown is unnamed. */
static int topsites_python_text(struct textbuf *s, struct mt_stacks_header *h, uint32_t codes,
				const struct mt_stack *st, uint32_t frames,
				const struct topsites_frame *f, uint32_t natives)
{
	/* what the line shows, one more to know whether to say "..." after
	 * it: a Python frame's pc (mt_pyframe_is), else a native's index */
	uint64_t item[TOPSITES_FRAMES + 1];
	uint32_t q = natives, n = 0;
	int started = 0, unnamed = 0;
	for (uint32_t j = 0; j < natives && n <= TOPSITES_FRAMES; j++) {
		if (q < frames && f[j].named && strcmp(f[j].name, MT_PY_EVAL_FUNCTION) == 0) {
			started = 1;
			while (q < frames && n <= TOPSITES_FRAMES) {
				uint64_t pc = st->pc[q++];
				item[n++] = pc;
				if (pc & MT_PYFRAME_ENTRY)
					break;
			}
		} else if (started) {
			item[n++] = j;
		}
	}
	/* Python frames whose evaluation loops were cut off the stack */
	while (q < frames && n <= TOPSITES_FRAMES)
		item[n++] = st->pc[q++];
	for (uint32_t i = 0; i < n && i < TOPSITES_FRAMES; i++) {
		if (i)
			textbuf_add(s, " < ");
		unnamed |= mt_pyframe_is(item[i]) ? topsites_pyframe_text(s, h, codes, item[i])
						  : topsites_frame_text(s, h, &f[item[i]]);
	}
	if (n > TOPSITES_FRAMES)
		textbuf_add(s, " < ...");
	return unnamed;
}

/* Names the picked stacks' innermost frames into topsites_text; `codes`
 * is how many of the table's Python code entries may be read. */
static void topsites_name(struct mt_stacks_header *h, uint32_t n, uint32_t codes)
{
	uint32_t nf = 0;
	for (uint32_t k = 0; k < n; k++) {
		const struct mt_stack *st = mt_stacks_stack(h, topsites_id[k]);
		uint32_t frames = st->nframes < MT_STACKS_FRAMES ? st->nframes : MT_STACKS_FRAMES;
		uint32_t natives = topsites_natives(st, frames, codes);
		uint32_t want = natives < frames ? natives : TOPSITES_FRAMES;
		topsites_at[k] = nf;
		topsites_nat[k] = want;
		for (uint32_t j = 0; j < want; j++, nf++) {
			struct topsites_frame *f = &topsites_fr[nf];
			memset(f, 0, sizeof *f);
			f->module = -1;
			if (j >= frames)
				continue;
			f->pc = st->pc[j];
			f->module = topsites_module(h, st->modules_seen, st->pc[j]);
			if (f->module >= 0) {
				const struct mt_stacks_module *m = mt_stacks_module(h, (uint32_t)f->module);
				f->vaddr = st->pc[j] - m->start + m->file_offset;
			}
		}
	}
	for (uint32_t i = 0; i < nf; i++) {
		int seen = 0;
		if (topsites_fr[i].module < 0)
			continue;
		for (uint32_t j = 0; j < i && !seen; j++)
			seen = topsites_fr[j].module == topsites_fr[i].module;
		if (!seen)
			topsites_resolve(h, topsites_fr[i].module, topsites_fr, nf);
	}
	for (uint32_t k = 0; k < n; k++) {
		const struct mt_stack *st = mt_stacks_stack(h, topsites_id[k]);
		uint32_t frames = st->nframes < MT_STACKS_FRAMES ? st->nframes : MT_STACKS_FRAMES;
		const struct topsites_frame *f = &topsites_fr[topsites_at[k]];
		uint32_t natives = topsites_natives(st, frames, codes);
		struct textbuf s;
		int unnamed = 0;
		textbuf_init(&s, topsites_text[k], TOPSITES_TEXT_BYTES);
		if (st->flags & MT_STACK_CATCHALL)
			textbuf_add(&s, "[stack table full, or no stack]");
		/* stacks.h: the kind; a heap site reads as it always did */
		if (st->flags & MT_STACK_MMAP)
			textbuf_add(&s, "[mmap] ");
		if (natives < frames) {
			unnamed = topsites_python_text(&s, h, codes, st, frames, f, natives);
		} else {
			for (uint32_t j = 0; j < frames && j < TOPSITES_FRAMES; j++) {
				if (j)
					textbuf_add(&s, " < ");
				unnamed |= topsites_frame_text(&s, h, &f[j]);
			}
			if (frames > TOPSITES_FRAMES)
				textbuf_add(&s, " < ...");
		}
		topsites_unnamed[k] = (uint8_t)unnamed;
	}
}

/* Adds a line: to the one that reads the same, else a new one (in place
 * of the smallest when all are taken and it is smaller). */
static void topsites_merge(struct topsites_acc *a, const char *text, uint64_t bytes,
			   int unnamed)
{
	unsigned small = 0;
	for (unsigned i = 0; i < a->nlines; i++) {
		if (strcmp(a->line[i].text, text) == 0) {
			a->line[i].bytes += bytes;
			return;
		}
		if (a->line[i].bytes < a->line[small].bytes)
			small = i;
	}
	if (a->nlines < TOPSITES_LINES)
		small = a->nlines++;
	else if (a->line[small].bytes >= bytes)
		return;
	a->line[small].bytes = bytes;
	a->line[small].unnamed = unnamed;
	memcpy(a->line[small].text, text, TOPSITES_TEXT_BYTES);
}

/* One image's table, whose record says heap_peak (and total_peak, 0 when
 * not known), with `codes` Python code entries that may be read. */
static void topsites_add(struct topsites_acc *a, struct mt_stacks_header *h, uint32_t count,
			 uint32_t codes, uint64_t heap_peak, uint64_t total_peak)
{
	/* stacks.h: a peak reached after the last sampled event is the live
	 * set; the peak is the total one in a table that says it saw it */
	int live = total_peak && h->seen_total_peak ? total_peak > h->seen_total_peak
						    : heap_peak > h->seen_heap_peak;
	uint32_t n = topsites_pick(a, h, live, count);
	topsites_name(h, n, codes);
	for (uint32_t k = 0; k < n; k++)
		topsites_merge(a, topsites_text[k], topsites_bytes[k], topsites_unnamed[k]);
	a->rate = a->tables++ && a->rate != h->sample_bytes ? 0 : h->sample_bytes;
	a->heap_peaks += heap_peak;
	for (uint32_t k = 0; k < n && !a->mapped; k++)
		a->mapped = (mt_stacks_stack(h, topsites_id[k])->flags & MT_STACK_MMAP) != 0;
}

/* After lines that leave a frame unnamed (module+0x..., a C++ name left
 * mangled, a Python frame without its file or line): how to get the
 * names.  memsup names frames after the run, with the files' DWARF
 * (file:line) and a whole demangler, and interleaves the Python frames
 * the same way. */
#define TOPSITES_HINT                                                                          \
	"memtrace:   frames above left unnamed (module+0x..., mangled _Z..., no file:line): "     \
	"memsup -- CMD names them in its summary and stacks.json\n"

static void topsites_print(const struct topsites_acc *a, const char *of_what)
{
	char line[TOPSITES_TEXT_BYTES + 64];
	unsigned order[TOPSITES_LINES], shown = 0;
	uint64_t listed = 0;
	int unnamed = 0;
	struct textbuf s;

	textbuf_init(&s, line, sizeof line);
	textbuf_add(&s, a->mapped ? "memtrace:   heap and mappings by call site, "
				  : "memtrace:   heap by call site, ");
	textbuf_add(&s, of_what);
	if (a->rate == 1) {
		textbuf_add(&s, " (every block sampled)");
	} else if (a->rate) {
		textbuf_add(&s, " (sampled every ");
		render_bytes(&s, a->rate);
		textbuf_add(&s, " on average)");
	}
	textbuf_add(&s, ": ");
	textbuf_add_u64(&s, a->samples);
	textbuf_add(&s, " samples, est. ");
	render_bytes(&s, a->total);
	if (a->var) {
		textbuf_add(&s, " +- ");
		render_bytes(&s, topsites_sqrt(a->var) * 1024);
	}
	textbuf_add(&s, " of ");
	render_bytes(&s, a->heap_peaks);
	if (a->mapped)
		textbuf_add(&s, " heap");
	textbuf_add(&s, "\n");
	errfd_write(line, s.len);
	/* the largest lines, largest first */
	for (unsigned i = 0; i < a->nlines; i++) {
		unsigned j = shown < TOPSITES_SITES ? shown++ : shown;
		if (j == TOPSITES_SITES && a->line[i].bytes <= a->line[order[j - 1]].bytes)
			continue;
		if (j == TOPSITES_SITES)
			j--;
		for (; j > 0 && a->line[order[j - 1]].bytes < a->line[i].bytes; j--)
			order[j] = order[j - 1];
		order[j] = i;
	}
	for (unsigned k = 0; k < shown; k++) {
		textbuf_init(&s, line, sizeof line);
		textbuf_add(&s, "memtrace:   ");
		topsites_percent(&s, a->line[order[k]].bytes, a->total);
		textbuf_add(&s, "  ");
		render_bytes(&s, a->line[order[k]].bytes);
		textbuf_add(&s, "  ");
		textbuf_add(&s, a->line[order[k]].text);
		textbuf_add(&s, "\n");
		if (s.truncated)
			line[sizeof line - 2] = '\n';
		errfd_write(line, s.len);
		listed += a->line[order[k]].bytes;
	}
	for (unsigned k = 0; k < shown && !unnamed; k++)
		unnamed = a->line[order[k]].unnamed;
	if (listed < a->total && a->sites > shown) {
		textbuf_init(&s, line, sizeof line);
		textbuf_add(&s, "memtrace:   ");
		topsites_percent(&s, a->total - listed, a->total);
		textbuf_add(&s, "  ");
		render_bytes(&s, a->total - listed);
		textbuf_add(&s, "  (other sites)\n");
		errfd_write(line, s.len);
	}
	if (unnamed)
		errfd_write(TOPSITES_HINT, sizeof TOPSITES_HINT - 1);
}

void topsites_write(const struct mt_record *r)
{
	struct mt_stacks_header *h = sites_table();
	if (!h || __atomic_load_n(&h->magic, __ATOMIC_ACQUIRE) != MT_STACKS_MAGIC)
		return;
	memset(&topsites_acc, 0, sizeof topsites_acc);
	uint32_t codes = mt_stacks_codes_ok(h) ? __atomic_load_n(&h->code_count, __ATOMIC_ACQUIRE)
					       : 0;
	/* this image's own table, mapped: its entries below the count are
	 * whole (the writer published them), and are read bounded */
	if (codes > MT_STACKS_CODE_SLOTS)
		codes = MT_STACKS_CODE_SLOTS;
	topsites_add(&topsites_acc, h, __atomic_load_n(&h->stack_count, __ATOMIC_ACQUIRE), codes,
		     r->heap_peak, r->total_peak);
	/* stacks.h: an image that maps is taken at its heap+mmap peak */
	topsites_print(&topsites_acc, topsites_acc.mapped ? "at the heap+mmap peak"
							  : "at the heap peak");
}

/* Another image's table, read whole; its stack count, 0 if it is none,
 * and in *codes how many of its Python code entries may be read. */
static uint32_t topsites_read(const char *dir, int32_t pid, uint32_t gen, uint32_t *codes)
{
	struct mt_stacks_header *h = (struct mt_stacks_header *)topsites_buf;
	char path[PATH_MAX + 64];
	ssize_t len;
	uint32_t count;
	int fd;
	if (imagename_path(path, sizeof path, dir, pid, gen, MT_STACKS_SUFFIX) < 0 ||
	    (fd = sys_open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW, 0)) < 0)
		return 0;
	len = sys_pread(fd, topsites_buf, sizeof topsites_buf, 0);
	sys_close(fd);
	/* the shared check, counts cut to what was read */
	if (len < 0 || filecheck_stacks_header(h, (uint64_t)len, pid, gen) != 0)
		return 0;
	count = h->stack_count;
	filecheck_stacks_entries(mt_stacks_module(topsites_buf, 0), h->module_count,
				 mt_stacks_stack(topsites_buf, 0), count);
	filecheck_stacks_codes(h, (uint64_t)len);
	*codes = h->code_count;
	filecheck_stacks_code_entries(mt_stacks_code(topsites_buf, 0), *codes);
	return count;
}

void topsites_write_tree(const char *dir, const struct topsites_image *images, unsigned n)
{
	memset(&topsites_acc, 0, sizeof topsites_acc);
	for (unsigned i = 0; i < n; i++) {
		uint32_t codes = 0;
		uint32_t count = topsites_read(dir, images[i].pid, images[i].gen, &codes);
		if (count)
			topsites_add(&topsites_acc, (struct mt_stacks_header *)topsites_buf, count,
				     codes, images[i].heap_peak, 0);
	}
	if (topsites_acc.tables)
		topsites_print(&topsites_acc, "each image above at its own heap peak");
}
