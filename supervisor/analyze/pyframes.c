/* pyframes.c: Python frames' lines and their place in a stack (see
 * pyframes.h). */
#include <stdio.h>
#include <string.h>

#include "analyze/pyframes.h"

/* 3.11's varints: 6 bits a byte, bit 6 says another follows. */
static int pyframes_varint(const uint8_t *t, size_t len, size_t *i, uint32_t *out)
{
	uint32_t v = 0;
	unsigned shift = 0;
	for (;;) {
		if (*i >= len || shift > 30)
			return -1;
		uint8_t b = t[(*i)++];
		v |= (uint32_t)(b & 63) << shift;
		shift += 6;
		if (!(b & 64))
			break;
	}
	*out = v;
	return 0;
}

static int pyframes_svarint(const uint8_t *t, size_t len, size_t *i, int32_t *out)
{
	uint32_t u;
	if (pyframes_varint(t, len, i, &u) < 0)
		return -1;
	*out = (u & 1) ? -(int32_t)(u >> 1) : (int32_t)(u >> 1);
	return 0;
}

int pyframes_line_311(const uint8_t *t, size_t len, uint32_t firstlineno, uint32_t instr,
		      uint32_t *line)
{
	int64_t cur = firstlineno;
	uint64_t at = 0;
	size_t i = 0;
	while (i < len) {
		uint8_t first = t[i++];
		unsigned code = (first >> 3) & 15, units = (first & 7u) + 1;
		int32_t delta = 0;
		uint32_t skip;
		int none = 0;
		if (!(first & 128))
			return -1; /* not the start of an entry: a damaged copy */
		switch (code) {
		case 15: /* no location */
			none = 1;
			break;
		case 14: /* long form: line delta, end line delta, columns */
			if (pyframes_svarint(t, len, &i, &delta) < 0 ||
			    pyframes_varint(t, len, &i, &skip) < 0 ||
			    pyframes_varint(t, len, &i, &skip) < 0 ||
			    pyframes_varint(t, len, &i, &skip) < 0)
				return -1;
			break;
		case 13: /* no columns */
			if (pyframes_svarint(t, len, &i, &delta) < 0)
				return -1;
			break;
		case 10:
		case 11:
		case 12: /* one line: the delta is in the code, two column bytes */
			delta = (int32_t)code - 10;
			i += 2;
			break;
		default: /* short form: the same line, one column byte */
			i += 1;
			break;
		}
		if (i > len)
			return -1;
		cur += delta;
		if (instr < at + units) {
			if (none || cur < 0 || cur > UINT32_MAX)
				return -1;
			*line = (uint32_t)cur;
			return 0;
		}
		at += units;
	}
	return -1;
}

int pyframes_line(uint64_t py_version, const struct mt_stacks_code *c, uint32_t instr,
		  uint32_t *line)
{
	switch (py_version >> 16) {
	case 0x030b: /* 3.12 and 3.13 kept 3.11's location table */
	case 0x030c:
	case 0x030d:
		return pyframes_line_311(c->lines, c->lines_len, c->firstlineno, instr, line);
	default:
		return -1;
	}
}

uint32_t pyframes_interleave(uint32_t *list, uint32_t n, const struct symbols *s)
{
	uint32_t out[MT_STACKS_FRAMES], natives = 0, k = 0, q, skip = 0;
	if (n > MT_STACKS_FRAMES)
		n = MT_STACKS_FRAMES;
	while (natives < n && !s->frames[list[natives] & ~PYFRAMES_ENTRY_BIT].python)
		natives++;
	if (natives == n)
		return n; /* no Python frame */
	q = natives;
	for (uint32_t j = 0; j < natives; j++) {
		const struct symbols_frame *f = &s->frames[list[j]];
		if (q < n && f->function && strcmp(f->function, PYFRAMES_EVAL_FUNCTION) == 0) {
			if (skip) {
				/* it ran frames the marker stands for */
				skip--;
				out[k++] = list[j];
				continue;
			}
			/* this evaluation loop's run: up to the frame entered
			 * from C, or into an elision whose frames hold such an
			 * entry (the runs those entries end are the next
			 * evaluation frames' but one) */
			while (q < n) {
				uint32_t v = list[q++];
				const struct symbols_frame *p = &s->frames[v & ~PYFRAMES_ENTRY_BIT];
				out[k++] = v & ~PYFRAMES_ENTRY_BIT;
				if (v & PYFRAMES_ENTRY_BIT)
					break;
				if (p->elided && p->elided_entries) {
					skip = p->elided_entries - 1u;
					break;
				}
			}
			continue;
		}
		out[k++] = list[j];
	}
	while (q < n)
		out[k++] = list[q++] & ~PYFRAMES_ENTRY_BIT;
	memcpy(list, out, k * sizeof *out);
	return k;
}

void pyframes_version_text(uint64_t v, char *buf, size_t cap)
{
	static const char *const level[] = { "a", "a", "a", "a", "a", "a", "a", "a", "a", "a",
					     "a", "b", "rc", "", "", "" };
	unsigned rel = (unsigned)(v >> 4) & 15, serial = (unsigned)v & 15;
	if (rel == 15)
		snprintf(buf, cap, "%u.%u.%u", (unsigned)(v >> 24) & 255, (unsigned)(v >> 16) & 255,
			 (unsigned)(v >> 8) & 255);
	else
		snprintf(buf, cap, "%u.%u.%u%s%u", (unsigned)(v >> 24) & 255,
			 (unsigned)(v >> 16) & 255, (unsigned)(v >> 8) & 255, level[rel], serial);
}
