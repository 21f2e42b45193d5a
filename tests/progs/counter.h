/* counter.h: counter's byte stream (tests/progs/counter.c), shared with the
 * tests that check it (tests/e2e/test_memsup_logmax.c): the 8-byte
 * little-endian words 0, 1, 2, ... one after the other, so that any piece
 * of it says where in the stream it came from, and making it costs next to
 * nothing (gigabytes of it in a test). */
#ifndef MT_COUNTER_H
#define MT_COUNTER_H

#include <stddef.h>
#include <stdint.h>

static inline unsigned char counter_byte(uint64_t i)
{
	return (unsigned char)((i >> 3) >> (8 * (i & 7)));
}

/* Bytes [from, from + n) of the stream into buf. */
static inline void counter_fill(unsigned char *buf, uint64_t from, size_t n)
{
	size_t k = 0;
	for (; k < n && ((from + k) & 7); k++)
		buf[k] = counter_byte(from + k);
	for (; k + 8 <= n; k += 8) {
		uint64_t w = (from + k) >> 3;
		for (int b = 0; b < 8; b++)
			buf[k + (size_t)b] = (unsigned char)(w >> (8 * b));
	}
	for (; k < n; k++)
		buf[k] = counter_byte(from + k);
}

/* The index of the first byte of buf[0, n) that is not bytes [from,
 * from + n) of the stream; n when all are. */
static inline size_t counter_check(const unsigned char *buf, uint64_t from, size_t n)
{
	for (size_t k = 0; k < n; k++)
		if (buf[k] != counter_byte(from + k))
			return k;
	return n;
}

#endif
