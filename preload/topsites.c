/* topsites.c: the top call sites in the standalone summary (see
 * topsites.h). */
#include <fcntl.h>
#include <string.h>

#include "elfsym.h"
#include "errfd.h"
#include "modules.h"
#include "report.h"
#include "sites.h"
#include "stacks.h"
#include "sys.h"
#include "topsites.h"

#define TOPSITES_NAME_BYTES 80u
/* Stacks named before merging those that read the same. */
#define TOPSITES_CANDIDATES 64u
#define TOPSITES_SLOTS (TOPSITES_CANDIDATES * TOPSITES_FRAMES)
#define TOPSITES_TEXT_BYTES 400u

struct topsites_frame {
	uint64_t pc;
	uint64_t vaddr;   /* in the module's ELF */
	int module;       /* table entry, -1: none */
	int named;
	char name[TOPSITES_NAME_BYTES];
};

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

/* Names the frames of one module, from its file. */
static void topsites_resolve(struct mt_stacks_header *h, int module,
			     struct topsites_frame *f, unsigned nf)
{
	const struct mt_stacks_module *m = mt_stacks_module(h, (uint32_t)module);
	static struct elfsym_query q[TOPSITES_SLOTS];
	static unsigned idx[TOPSITES_SLOTS];
	unsigned nq = 0;
	struct elfsym elf;
	int fd;

	if (m->flags & MT_MODULE_VDSO)
		return;
	fd = sys_open(m->path, O_RDONLY | O_CLOEXEC, 0);
	if (fd < 0)
		return;
	if (elfsym_open(&elf, topsites_pread, &fd) == 0) {
		for (unsigned i = 0; i < nf; i++) {
			uint64_t off;
			if (f[i].module != module)
				continue;
			/* pc - 1: the call instruction, not the one after it. */
			off = f[i].pc - 1 - m->start + m->file_offset;
			if (elfsym_file_vaddr(&elf, off, &f[i].vaddr) != 0)
				continue;
			f[i].vaddr++;
			/* sorted insertion by address */
			unsigned j = nq++;
			while (j > 0 && q[j - 1].addr > f[i].vaddr - 1) {
				q[j] = q[j - 1];
				idx[j] = idx[j - 1];
				j--;
			}
			memset(&q[j], 0, sizeof q[j]);
			q[j].addr = f[i].vaddr - 1;
			idx[j] = i;
		}
		if (nq && elfsym_resolve(&elf, q, nq) == 0) {
			for (unsigned j = 0; j < nq; j++)
				if (q[j].found &&
				    elfsym_name(&elf, &q[j], f[idx[j]].name, TOPSITES_NAME_BYTES) > 0)
					f[idx[j]].named = 1;
		}
	}
	sys_close(fd);
}

static void topsites_frame_text(struct sys_str *s, struct mt_stacks_header *h,
				const struct topsites_frame *f)
{
	const char *base;
	if (f->named) {
		sys_str_add(s, f->name);
		return;
	}
	if (f->module < 0) {
		sys_str_add(s, "?");
		return;
	}
	base = strrchr(mt_stacks_module(h, (uint32_t)f->module)->path, '/');
	sys_str_add(s, base ? base + 1 : mt_stacks_module(h, (uint32_t)f->module)->path);
	sys_str_add(s, "+");
	{
		char hex[17];
		int n = 0;
		uint64_t v = f->vaddr;
		do {
			hex[n++] = "0123456789abcdef"[v & 15];
			v >>= 4;
		} while (v && n < 16);
		sys_str_add(s, "0x");
		while (n)
			sys_str_add_n(s, &hex[--n], 1);
	}
}

/* One decimal of a share in permille. */
static void topsites_percent(struct sys_str *s, uint64_t part, uint64_t whole)
{
	uint64_t pm = whole ? (uint64_t)((double)part * 1000.0 / (double)whole + 0.5) : 0;
	if (pm < 1000)
		sys_str_add(s, pm < 100 ? "  " : " ");
	sys_str_add_u64(s, pm / 10);
	sys_str_add(s, ".");
	sys_str_add_u64(s, pm % 10);
	sys_str_add(s, "%");
}

/* The exit path runs once per image (store_finish says so), so the work
 * space can be static rather than on a thread's stack, which may be small. */
static struct topsites_frame topsites_fr[TOPSITES_CANDIDATES * TOPSITES_FRAMES];
static char topsites_text[TOPSITES_CANDIDATES][TOPSITES_TEXT_BYTES];
static uint32_t topsites_id[TOPSITES_CANDIDATES];
static uint64_t topsites_bytes[TOPSITES_CANDIDATES];

/* The largest stacks by bytes into topsites_id/bytes; returns how many. */
static uint32_t topsites_pick(struct mt_stacks_header *h, int live, uint64_t *total, uint64_t *var,
			      uint64_t *samples, uint32_t *sites)
{
	uint32_t count = __atomic_load_n(&h->stack_count, __ATOMIC_ACQUIRE), n = 0;
	for (uint32_t i = 0; i < count; i++) {
		const struct mt_stack *st = mt_stacks_stack(h, i);
		uint64_t b = live ? st->live_bytes : st->peak_bytes;
		uint32_t j;
		if (!b)
			continue;
		(*sites)++;
		*total += b;
		*var += live ? st->live_var : st->peak_var;
		*samples += live ? st->live_count : st->peak_count;
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

/* Names the candidates' innermost frames into topsites_text. */
static void topsites_name(struct mt_stacks_header *h, uint32_t n)
{
	uint32_t nf = 0;
	for (uint32_t k = 0; k < n; k++) {
		const struct mt_stack *st = mt_stacks_stack(h, topsites_id[k]);
		for (uint32_t j = 0; j < TOPSITES_FRAMES; j++, nf++) {
			struct topsites_frame *f = &topsites_fr[nf];
			memset(f, 0, sizeof *f);
			f->module = -1;
			if (j >= st->nframes)
				continue;
			f->pc = st->pc[j];
			f->module = modules_find((uintptr_t)st->pc[j]);
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
		struct sys_str s;
		sys_str_init(&s, topsites_text[k], TOPSITES_TEXT_BYTES);
		if (st->flags & MT_STACK_CATCHALL)
			sys_str_add(&s, "[stack table full, or no stack]");
		for (uint32_t j = 0; j < st->nframes && j < TOPSITES_FRAMES; j++) {
			if (j)
				sys_str_add(&s, " < ");
			topsites_frame_text(&s, h, &topsites_fr[k * TOPSITES_FRAMES + j]);
		}
		if (st->nframes > TOPSITES_FRAMES)
			sys_str_add(&s, " < ...");
	}
}

void topsites_write(const struct mt_record *r)
{
	struct mt_stacks_header *h = sites_table();
	uint64_t total = 0, var = 0, samples = 0;
	uint32_t n, sites = 0, merged = 0;
	char line[TOPSITES_TEXT_BYTES + 64];
	struct sys_str s;

	if (!h || __atomic_load_n(&h->magic, __ATOMIC_ACQUIRE) != MT_STACKS_MAGIC)
		return;
	/* stacks.h: a peak reached after the last sampled event is the live set */
	n = topsites_pick(h, r->heap_peak > h->seen_heap_peak, &total, &var, &samples, &sites);
	topsites_name(h, n);
	/* Stacks that differ only beyond the named frames, or in the call's
	 * place inside one function, are one line. */
	for (uint32_t k = 0; k < n; k++) {
		uint32_t j;
		for (j = 0; j < merged && strcmp(topsites_text[j], topsites_text[k]) != 0; j++) {
		}
		if (j < merged) {
			topsites_bytes[j] += topsites_bytes[k];
		} else {
			if (j != k)
				memcpy(topsites_text[j], topsites_text[k], TOPSITES_TEXT_BYTES);
			topsites_bytes[j] = topsites_bytes[k];
			merged++;
		}
		while (j > 0 && topsites_bytes[j - 1] < topsites_bytes[j]) {
			uint64_t b = topsites_bytes[j];
			char t[TOPSITES_TEXT_BYTES];
			memcpy(t, topsites_text[j], sizeof t);
			topsites_bytes[j] = topsites_bytes[j - 1];
			memcpy(topsites_text[j], topsites_text[j - 1], sizeof t);
			topsites_bytes[j - 1] = b;
			memcpy(topsites_text[j - 1], t, sizeof t);
			j--;
		}
	}

	sys_str_init(&s, line, sizeof line);
	sys_str_add(&s, "memtrace:   heap peak by call site (");
	if (h->sample_bytes == 1) {
		sys_str_add(&s, "every block sampled");
	} else {
		sys_str_add(&s, "sampled every ");
		report_add_bytes(&s, h->sample_bytes);
		sys_str_add(&s, " on average");
	}
	sys_str_add(&s, "): ");
	sys_str_add_u64(&s, samples);
	sys_str_add(&s, " samples, est. ");
	report_add_bytes(&s, total);
	if (var) {
		sys_str_add(&s, " +- ");
		report_add_bytes(&s, topsites_sqrt(var) * 1024);
	}
	sys_str_add(&s, " of ");
	report_add_bytes(&s, r->heap_peak);
	sys_str_add(&s, "\n");
	errfd_write(line, s.len);
	for (uint32_t k = 0; k < merged && k < TOPSITES_SITES; k++) {
		sys_str_init(&s, line, sizeof line);
		sys_str_add(&s, "memtrace:   ");
		topsites_percent(&s, topsites_bytes[k], total);
		sys_str_add(&s, "  ");
		report_add_bytes(&s, topsites_bytes[k]);
		sys_str_add(&s, "  ");
		sys_str_add(&s, topsites_text[k]);
		sys_str_add(&s, "\n");
		if (s.truncated)
			line[sizeof line - 2] = '\n';
		errfd_write(line, s.len);
	}
	if (sites > n || merged > TOPSITES_SITES) {
		uint64_t rest = total;
		for (uint32_t k = 0; k < merged && k < TOPSITES_SITES; k++)
			rest -= topsites_bytes[k];
		sys_str_init(&s, line, sizeof line);
		sys_str_add(&s, "memtrace:   ");
		topsites_percent(&s, rest, total);
		sys_str_add(&s, "  ");
		report_add_bytes(&s, rest);
		sys_str_add(&s, "  (other sites)\n");
		errfd_write(line, s.len);
	}
}
