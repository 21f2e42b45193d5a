/* pyline.c: a Python instruction's line (see pyline.h). */
#include "pyline.h"

/* 3.11's varints: 6 bits a byte, bit 6 says another follows. */
static int pyline_varint(const uint8_t *t, size_t len, size_t *i, uint32_t *out)
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

static int pyline_svarint(const uint8_t *t, size_t len, size_t *i, int32_t *out)
{
	uint32_t u;
	if (pyline_varint(t, len, i, &u) < 0)
		return -1;
	*out = (u & 1) ? -(int32_t)(u >> 1) : (int32_t)(u >> 1);
	return 0;
}

int pyline_311(const uint8_t *t, size_t len, uint32_t firstlineno, uint32_t instr,
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
			if (pyline_svarint(t, len, &i, &delta) < 0 ||
			    pyline_varint(t, len, &i, &skip) < 0 ||
			    pyline_varint(t, len, &i, &skip) < 0 ||
			    pyline_varint(t, len, &i, &skip) < 0)
				return -1;
			break;
		case 13: /* no columns */
			if (pyline_svarint(t, len, &i, &delta) < 0)
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

int pyline_of(uint64_t py_version, const struct mt_stacks_code *c, uint32_t instr,
	      uint32_t *line)
{
	switch (py_version >> 16) {
	case 0x030b: /* 3.12 and 3.13 kept 3.11's location table */
	case 0x030c:
	case 0x030d:
		if (c->lines_len > MT_STACKS_CODE_LINES_BYTES)
			return -1; /* an unchecked entry: never read past the copy */
		return pyline_311(c->lines, c->lines_len, c->firstlineno, instr, line);
	default:
		return -1;
	}
}
