/* cfi.c: unwind rules from .eh_frame (see cfi.h).  The format is the
 * LSB's .eh_frame / .eh_frame_hdr (DWARF call frame information with GNU
 * pointer encodings); only what x86-64 compilers emit is read, and every
 * read stays inside the CIE or FDE whose length it was given. */
#include <dlfcn.h>
#include <stddef.h>
#include <string.h>

#include "sampling/cfi.h"
#include "sampling/modules.h"
#include "base/shim.h"

#if defined(__x86_64__) && defined(HAVE__DL_FIND_OBJECT)

/* DWARF register numbers on x86-64. */
#define CFI_REG_RBP 6
#define CFI_REG_RSP 7
#define CFI_REG_RA 16

/* Pointer encodings (DW_EH_PE_*). */
#define PE_OMIT 0xff
#define PE_FORMAT 0x0f
#define PE_APPLY 0x70
#define PE_INDIRECT 0x80
#define PE_PCREL 0x10
#define PE_DATAREL 0x30
#define PE_SDATA4_DATAREL 0x3b /* the only table encoding linkers write */

/* A span of bytes being read; a read past `end` fails the span for good. */
struct cfi_span {
	const uint8_t *p, *end;
	int bad;
};

static uint64_t span_bytes(struct cfi_span *s, unsigned n)
{
	uint64_t v = 0;
	if (s->bad || (size_t)(s->end - s->p) < n) {
		s->bad = 1;
		return 0;
	}
	memcpy(&v, s->p, n); /* little-endian: the low n bytes */
	s->p += n;
	return v;
}

static uint64_t span_uleb(struct cfi_span *s)
{
	uint64_t v = 0;
	unsigned shift = 0;
	for (;;) {
		uint8_t b = (uint8_t)span_bytes(s, 1);
		if (s->bad)
			return 0;
		if (shift < 64)
			v |= (uint64_t)(b & 0x7f) << shift;
		shift += 7;
		if (!(b & 0x80))
			return v;
	}
}

static int64_t span_sleb(struct cfi_span *s)
{
	uint64_t v = 0;
	unsigned shift = 0;
	uint8_t b;
	do {
		b = (uint8_t)span_bytes(s, 1);
		if (s->bad)
			return 0;
		if (shift < 64)
			v |= (uint64_t)(b & 0x7f) << shift;
		shift += 7;
	} while (b & 0x80);
	if (shift < 64 && (b & 0x40))
		v |= ~UINT64_C(0) << shift;
	return (int64_t)v;
}

static void span_skip(struct cfi_span *s, uint64_t n)
{
	if (s->bad || (uint64_t)(s->end - s->p) < n)
		s->bad = 1;
	else
		s->p += n;
}

/* An encoded pointer; `datarel` is the base of DW_EH_PE_datarel. */
static uint64_t span_encoded(struct cfi_span *s, uint8_t enc, uintptr_t datarel)
{
	uintptr_t at = (uintptr_t)s->p;
	uint64_t v;
	switch (enc & PE_FORMAT) {
	case 0x00: v = span_bytes(s, 8); break;                     /* absptr */
	case 0x01: v = span_uleb(s); break;                         /* uleb128 */
	case 0x02: v = span_bytes(s, 2); break;                     /* udata2 */
	case 0x03: v = span_bytes(s, 4); break;                     /* udata4 */
	case 0x04: v = span_bytes(s, 8); break;                     /* udata8 */
	case 0x09: v = (uint64_t)span_sleb(s); break;               /* sleb128 */
	case 0x0a: v = (uint64_t)(int64_t)(int16_t)span_bytes(s, 2); break;
	case 0x0b: v = (uint64_t)(int64_t)(int32_t)span_bytes(s, 4); break;
	case 0x0c: v = span_bytes(s, 8); break;                     /* sdata8 */
	default: s->bad = 1; return 0;
	}
	if (enc & PE_INDIRECT) {
		s->bad = 1;
		return 0;
	}
	switch (enc & PE_APPLY) {
	case 0x00: return v;
	case PE_PCREL: return v + at;
	case PE_DATAREL: return v + datarel;
	default: s->bad = 1; return 0; /* textrel, funcrel, aligned: never on x86-64 */
	}
}

/* What a CIE says about its FDEs. */
struct cfi_cie {
	uint64_t code_align;
	int64_t data_align;
	uint8_t fde_enc;
	int has_z;
	struct cfi_span init; /* the initial instructions */
};

/* 0, or -1 if the CIE is one this file does not read (foreign). */
static int cie_parse(const uint8_t *cie, struct cfi_cie *c)
{
	struct cfi_span s = {cie, cie + 4, 0};
	uint32_t len = (uint32_t)span_bytes(&s, 4);
	const char *aug;
	uint8_t version;
	if (len == 0 || len == 0xffffffffu) /* a terminator, or 64-bit DWARF */
		return -1;
	s.end = cie + 4 + len;
	if (span_bytes(&s, 4) != 0) /* the CIE id */
		return -1;
	version = (uint8_t)span_bytes(&s, 1);
	if (version != 1 && version != 3)
		return -1;
	aug = (const char *)s.p;
	while (!s.bad && span_bytes(&s, 1) != 0)
		;
	c->code_align = span_uleb(&s);
	c->data_align = span_sleb(&s);
	if ((version == 1 ? span_bytes(&s, 1) : span_uleb(&s)) != CFI_REG_RA)
		return -1;
	c->fde_enc = 0; /* absptr */
	c->has_z = aug[0] == 'z';
	if (c->has_z) {
		uint64_t n = span_uleb(&s);
		const uint8_t *data_end = s.p + n;
		for (const char *a = aug + 1; *a && !s.bad; a++) {
			switch (*a) {
			case 'R':
				c->fde_enc = (uint8_t)span_bytes(&s, 1);
				break;
			case 'L':
				span_bytes(&s, 1);
				break;
			case 'P': {
				uint8_t enc = (uint8_t)span_bytes(&s, 1);
				if ((enc & PE_APPLY) == 0x50) /* aligned */
					return -1;
				(void)span_encoded(&s, (uint8_t)(enc & ~PE_INDIRECT), 0);
				break;
			}
			default: /* 'S' (a signal frame) and anything newer */
				return -1;
			}
		}
		if (s.bad || s.p > data_end || data_end > s.end)
			return -1;
		s.p = data_end;
	} else if (aug[0] != '\0') {
		return -1;
	}
	if (s.bad)
		return -1;
	c->init = s;
	return 0;
}

/* How a register is recovered in the caller. */
/* HOW_AT_RBP: saved at the address %rbp holds (a realigned frame's %rbp). */
enum { HOW_SAME = 0, HOW_SAVED, HOW_UNDEFINED, HOW_AT_RBP, HOW_OTHER };

/* The rule of one register: HOW_SAVED means at CFA + off. */
struct cfi_reg_rule {
	unsigned how;
	int64_t off;
};

/* The registers a step needs: %rbp and the return address. */
enum { TRACK_RBP = 0, TRACK_RA, TRACK_N };

/* cfa_expr: the CFA is a DWARF expression, CFA_EXPR_AT_RBP the one of a
 * realigned frame (the CFA is saved at %rbp + cfa_offset). */
enum { CFA_EXPR_NONE = 0, CFA_EXPR_AT_RBP, CFA_EXPR_OTHER };

struct cfi_regs {
	int64_t cfa_offset;
	unsigned cfa_reg, cfa_expr;
	struct cfi_reg_rule reg[TRACK_N];
};

#define CFI_STATE_DEPTH 8

struct cfi_machine {
	struct cfi_regs now, initial;
	struct cfi_regs stack[CFI_STATE_DEPTH];
	unsigned depth;
	uint64_t loc, target;
	const struct cfi_cie *cie;
	int foreign;
};

/* Which tracked register DWARF register `reg` is, or -1 (one not needed). */
static int machine_track(uint64_t reg)
{
	return reg == CFI_REG_RBP ? TRACK_RBP : reg == CFI_REG_RA ? TRACK_RA : -1;
}

static void machine_set(struct cfi_machine *m, uint64_t reg, unsigned how, int64_t off)
{
	int t = machine_track(reg);
	if (t >= 0) {
		m->now.reg[t].how = how;
		m->now.reg[t].off = off;
	}
}

static void machine_restore(struct cfi_machine *m, uint64_t reg)
{
	int t = machine_track(reg);
	if (t >= 0)
		m->now.reg[t] = m->initial.reg[t];
}

/* A DWARF expression of `len` bytes at s, and the offset k when it is
 * exactly DW_OP_breg6 k (the address %rbp + k), followed by DW_OP_deref
 * when `deref`: the two GCC writes for a frame that realigns its stack.
 * 1 when it is, 0 for any other expression (skipped either way). */
static int expr_rbp_offset(struct cfi_span *s, uint64_t len, int deref, int64_t *k)
{
	struct cfi_span e = {s->p, s->p, 0};
	span_skip(s, len);
	if (s->bad)
		return 0;
	e.end = s->p;
	if (span_bytes(&e, 1) != 0x76) /* DW_OP_breg6 */
		return 0;
	*k = span_sleb(&e);
	if (deref && span_bytes(&e, 1) != 0x06) /* DW_OP_deref */
		return 0;
	return !e.bad && e.p == e.end;
}

/* Runs the instructions of s until the location passes the target (or
 * they end); 1 when the target was passed (stop), 0 at their end. */
/* The instructions that define the CFA rule (DW_CFA_def_cfa*). */
static void machine_cfa(struct cfi_machine *m, struct cfi_span *s, uint8_t op)
{
	const int64_t da = m->cie->data_align;
	switch (op) {
	case 0x0c: /* def_cfa */
		m->now.cfa_reg = (unsigned)span_uleb(s);
		m->now.cfa_offset = (int64_t)span_uleb(s);
		m->now.cfa_expr = 0;
		break;
	case 0x0d: /* def_cfa_register */
		m->now.cfa_reg = (unsigned)span_uleb(s);
		m->now.cfa_expr = 0;
		break;
	case 0x0e: /* def_cfa_offset */
		m->now.cfa_offset = (int64_t)span_uleb(s);
		break;
	case 0x0f: { /* def_cfa_expression */
		int64_t k = 0;
		m->now.cfa_expr = expr_rbp_offset(s, span_uleb(s), 1, &k) ? CFA_EXPR_AT_RBP
									  : CFA_EXPR_OTHER;
		m->now.cfa_offset = k;
		break;
	}
	case 0x12: /* def_cfa_sf */
		m->now.cfa_reg = (unsigned)span_uleb(s);
		m->now.cfa_offset = span_sleb(s) * da;
		m->now.cfa_expr = 0;
		break;
	case 0x13: /* def_cfa_offset_sf */
		m->now.cfa_offset = span_sleb(s) * da;
		break;
	}
}

static int machine_run(struct cfi_machine *m, struct cfi_span *s)
{
	const int64_t da = m->cie->data_align;
	while (s->p < s->end && !s->bad && !m->foreign) {
		uint8_t op = (uint8_t)span_bytes(s, 1);
		uint64_t reg, advance = 0;
		switch (op & 0xc0) {
		case 0x40:
			advance = op & 0x3f;
			goto advance;
		case 0x80:
			reg = op & 0x3f;
			machine_set(m, reg, HOW_SAVED, (int64_t)span_uleb(s) * da);
			continue;
		case 0xc0:
			machine_restore(m, op & 0x3f);
			continue;
		}
		switch (op) {
		case 0x00: /* nop */
			continue;
		case 0x01: /* set_loc */
			m->loc = span_encoded(s, m->cie->fde_enc, 0);
			if (m->loc > m->target)
				return 1;
			continue;
		case 0x02: advance = span_bytes(s, 1); goto advance;
		case 0x03: advance = span_bytes(s, 2); goto advance;
		case 0x04: advance = span_bytes(s, 4); goto advance;
		case 0x05: /* offset_extended */
			reg = span_uleb(s);
			machine_set(m, reg, HOW_SAVED, (int64_t)span_uleb(s) * da);
			continue;
		case 0x06: /* restore_extended */
			machine_restore(m, span_uleb(s));
			continue;
		case 0x07: /* undefined */
			machine_set(m, span_uleb(s), HOW_UNDEFINED, 0);
			continue;
		case 0x08: /* same_value */
			machine_set(m, span_uleb(s), HOW_SAME, 0);
			continue;
		case 0x09: /* register */
		case 0x14: /* val_offset */
		case 0x15: /* val_offset_sf */
			reg = span_uleb(s);
			span_uleb(s); /* skips a signed LEB128 as well */
			machine_set(m, reg, HOW_OTHER, 0);
			continue;
		case 0x0a: /* remember_state: the CFA rule too, as libgcc keeps it */
			if (m->depth == CFI_STATE_DEPTH) {
				m->foreign = 1;
				return 1;
			}
			m->stack[m->depth++] = m->now;
			continue;
		case 0x0b: /* restore_state */
			if (m->depth == 0) {
				m->foreign = 1;
				return 1;
			}
			m->now = m->stack[--m->depth];
			continue;
		case 0x0c: /* def_cfa */
		case 0x0d: /* def_cfa_register */
		case 0x0e: /* def_cfa_offset */
		case 0x0f: /* def_cfa_expression */
		case 0x12: /* def_cfa_sf */
		case 0x13: /* def_cfa_offset_sf */
			machine_cfa(m, s, op);
			continue;
		case 0x10: { /* expression */
			int64_t k = -1;
			reg = span_uleb(s);
			machine_set(m, reg,
				    expr_rbp_offset(s, span_uleb(s), 0, &k) && k == 0 ? HOW_AT_RBP
										 : HOW_OTHER,
				    0);
			continue;
		}
		case 0x16: /* val_expression */
			reg = span_uleb(s);
			span_skip(s, span_uleb(s));
			machine_set(m, reg, HOW_OTHER, 0);
			continue;
		case 0x11: /* offset_extended_sf */
			reg = span_uleb(s);
			machine_set(m, reg, HOW_SAVED, span_sleb(s) * da);
			continue;
		case 0x2e: /* GNU_args_size */
			span_uleb(s);
			continue;
		case 0x2f: /* GNU_negative_offset_extended */
			reg = span_uleb(s);
			machine_set(m, reg, HOW_SAVED, -(int64_t)span_uleb(s) * da);
			continue;
		default:
			m->foreign = 1;
			return 1;
		}
	advance:
		m->loc += advance * m->cie->code_align;
		if (m->loc > m->target)
			return 1;
	}
	return 0;
}

/* The FDE covering pc in the object whose .eh_frame_hdr is at hdr, or NULL
 * (*foreign set when the header is of a kind this file does not search). */
static const uint8_t *fde_find(const uint8_t *hdr, uintptr_t pc, int *foreign)
{
	struct cfi_span s = {hdr, hdr + 4, 0};
	const int32_t *table;
	uint64_t count, lo = 0, hi;
	uint8_t ptr_enc, count_enc, table_enc;
	if (span_bytes(&s, 1) != 1) {
		*foreign = 1;
		return NULL;
	}
	ptr_enc = (uint8_t)span_bytes(&s, 1);
	count_enc = (uint8_t)span_bytes(&s, 1);
	table_enc = (uint8_t)span_bytes(&s, 1);
	s.end = hdr + 4 + 16; /* room for the two encoded fields */
	if (ptr_enc == PE_OMIT || count_enc == PE_OMIT || table_enc != PE_SDATA4_DATAREL) {
		*foreign = 1;
		return NULL;
	}
	(void)span_encoded(&s, ptr_enc, (uintptr_t)hdr);
	count = span_encoded(&s, count_enc, (uintptr_t)hdr);
	if (s.bad || count == 0 || count > (UINT64_C(1) << 32)) {
		*foreign = 1;
		return NULL;
	}
	table = (const int32_t *)s.p; /* pairs (initial location, FDE), sorted */
	hi = count;
	while (lo < hi) { /* the first entry that starts after pc */
		uint64_t mid = lo + (hi - lo) / 2;
		if ((uintptr_t)hdr + (intptr_t)table[2 * mid] <= pc)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == 0)
		return NULL;
	return hdr + (intptr_t)table[2 * (lo - 1) + 1];
}

void cfi_rule_uncached(uintptr_t pc, struct cfi_rule *r)
{
	struct dl_find_object obj;
	struct cfi_cie cie;
	struct cfi_machine m;
	struct cfi_reg_rule ra, rbp;
	struct cfi_span s, init;
	const uint8_t *fde;
	uint64_t begin, range;
	uint32_t len;
	int foreign = 0;

	memset(r, 0, sizeof *r);
	r->kind = CFI_NONE;
	if (_dl_find_object((void *)pc, &obj) != 0 || !obj.dlfo_eh_frame)
		return;
	fde = fde_find(obj.dlfo_eh_frame, pc, &foreign);
	r->kind = CFI_FOREIGN;
	if (foreign)
		return;
	r->kind = CFI_NONE;
	if (!fde)
		return;
	r->kind = CFI_FOREIGN;
	memcpy(&len, fde, 4);
	if (len == 0 || len == 0xffffffffu)
		return;
	s.p = fde + 4;
	s.end = fde + 4 + len;
	s.bad = 0;
	{
		uint32_t back = (uint32_t)span_bytes(&s, 4);
		if (back == 0 || cie_parse(fde + 4 - back, &cie) != 0)
			return;
	}
	if ((cie.fde_enc & PE_APPLY) == PE_DATAREL) /* no base known for it */
		return;
	begin = span_encoded(&s, cie.fde_enc, 0);
	range = span_encoded(&s, (uint8_t)(cie.fde_enc & PE_FORMAT), 0);
	if (cie.has_z)
		span_skip(&s, span_uleb(&s));
	if (s.bad)
		return;
	if (pc < begin || pc - begin >= range) {
		r->kind = CFI_NONE; /* in a gap between functions */
		return;
	}

	memset(&m, 0, sizeof m);
	m.cie = &cie;
	m.loc = begin;
	m.target = pc;
	m.now.cfa_reg = CFI_REG_RSP;
	m.now.reg[TRACK_RA].how = HOW_SAME; /* unsaid: not a rule this file follows */
	init = cie.init;
	(void)machine_run(&m, &init); /* the CIE's program has no advances */
	if (init.bad || m.foreign)
		return;
	m.initial = m.now;
	m.depth = 0;
	m.loc = begin;
	(void)machine_run(&m, &s);
	if (s.bad || m.foreign)
		return;

	ra = m.now.reg[TRACK_RA];
	rbp = m.now.reg[TRACK_RBP];
	if (ra.how == HOW_UNDEFINED) {
		r->kind = CFI_OUTERMOST;
		return;
	}
	if (ra.how == HOW_SAVED && ra.off == -8 && m.now.cfa_expr == CFA_EXPR_AT_RBP) {
		/* a realigned frame: GCC saves %rbp at %rbp as well */
		if (rbp.how != HOW_AT_RBP || m.now.cfa_offset >= 0 ||
		    -m.now.cfa_offset > UINT32_MAX)
			return;
		r->kind = CFI_STEP;
		r->cfa_from_rbp = r->cfa_deref = 1;
		r->cfa_offset = (uint32_t)-m.now.cfa_offset;
		return;
	}
	if (ra.how != HOW_SAVED || ra.off != -8 || m.now.cfa_expr ||
	    (m.now.cfa_reg != CFI_REG_RSP && m.now.cfa_reg != CFI_REG_RBP) ||
	    m.now.cfa_offset < 8 || m.now.cfa_offset > UINT32_MAX)
		return;
	if (rbp.how == HOW_SAVED) {
		if (rbp.off >= 0 || -rbp.off > UINT32_MAX)
			return;
		r->rbp_slot = (uint32_t)-rbp.off;
	} else if (rbp.how != HOW_SAME) {
		return;
	}
	r->kind = CFI_STEP;
	r->cfa_from_rbp = m.now.cfa_reg == CFI_REG_RBP;
	r->cfa_offset = (uint32_t)m.now.cfa_offset;
}

/* ---- the cache ----------------------------------------------------------- */

/* A word: pc >> CFI_CACHE_BITS in the top 38 bits (user pcs are below
 * 2^47), then the rule: kind (2 bits), CFA from %rbp (1), CFA saved at
 * %rbp - offset (1), CFA offset in 8-byte units (12), %rbp slot in 8-byte
 * units (10).  Rules that do not fit are not cached. */
#define CFI_CACHE_BITS 9u
#define CFI_RULE_BITS 26u
#define CFI_PC_LIMIT (UINT64_C(1) << (CFI_CACHE_BITS + 64 - CFI_RULE_BITS))
/* One page exactly, on a page of its own: it is touched at the first sample. */
_Static_assert(sizeof(uint64_t) << CFI_CACHE_BITS == 4096, "the cache is one page");
static _Alignas(4096) uint64_t cfi_cache[1u << CFI_CACHE_BITS] MT_TABLE;

static uint64_t cfi_pack(const struct cfi_rule *r)
{
	if (r->cfa_offset % 8 || r->cfa_offset / 8 >= (1u << 12) || r->rbp_slot % 8 ||
	    r->rbp_slot / 8 >= (1u << 10))
		return 0;
	return (uint64_t)r->kind | (uint64_t)r->cfa_from_rbp << 2 | (uint64_t)r->cfa_deref << 3 |
	       (uint64_t)(r->cfa_offset / 8) << 4 | (uint64_t)(r->rbp_slot / 8) << 16;
}

static void cfi_unpack(uint64_t w, struct cfi_rule *r)
{
	r->kind = (unsigned)(w & 3);
	r->cfa_from_rbp = (unsigned)(w >> 2) & 1;
	r->cfa_deref = (unsigned)(w >> 3) & 1;
	r->cfa_offset = (uint32_t)((w >> 4) & 0xfff) * 8;
	r->rbp_slot = (uint32_t)((w >> 16) & 0x3ff) * 8;
}

void cfi_rule_at(uintptr_t pc, struct cfi_rule *r)
{
	uint64_t *slot = &cfi_cache[pc & ((1u << CFI_CACHE_BITS) - 1)];
	uint64_t tag = (uint64_t)(pc >> CFI_CACHE_BITS) << CFI_RULE_BITS;
	uint64_t w, rule;
	if (pc < CFI_PC_LIMIT) {
		w = __atomic_load_n(slot, __ATOMIC_RELAXED);
		if (w != 0 && (w & ~((UINT64_C(1) << CFI_RULE_BITS) - 1)) == tag) {
			cfi_unpack(w, r);
			return;
		}
	}
	cfi_rule_uncached(pc, r);
	if (r->kind == CFI_NONE || pc >= CFI_PC_LIMIT)
		return;
	rule = cfi_pack(r);
	if (rule != 0)
		__atomic_store_n(slot, tag | rule, __ATOMIC_RELAXED);
}

/* ---- frames without unwind information ------------------------------- */

int cfi_step_fp(struct cfi_frame *f, uintptr_t hi)
{
	const uintptr_t fp = f->rbp;
	uintptr_t next;
	/* the frame's saved %rbp and return address, [fp, fp + 16): inside
	 * the thread's stack, at or above this frame's stack pointer (so the
	 * caller's is above it: the walk only goes up), aligned */
	if (!modules_code(f->pc) || fp < f->sp || hi < 16 || fp > hi - 16 || (fp & 7))
		return 0;
	next = ((const uintptr_t *)fp)[1];
	if (!modules_code(next))
		return 0;
	f->pc = next;
	f->sp = fp + 16;
	f->rbp = ((const uintptr_t *)fp)[0];
	return 1;
}

#else /* no _dl_find_object, or not x86-64: libgcc does every stack */

int cfi_step_fp(struct cfi_frame *f, uintptr_t hi)
{
	(void)f;
	(void)hi;
	return 0;
}

void cfi_rule_uncached(uintptr_t pc, struct cfi_rule *r)
{
	(void)pc;
	memset(r, 0, sizeof *r);
	r->kind = CFI_FOREIGN;
}

void cfi_rule_at(uintptr_t pc, struct cfi_rule *r)
{
	cfi_rule_uncached(pc, r);
}

#endif
