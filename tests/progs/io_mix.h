/* io_mix.h: io_mix's byte stream (tests/progs/io_mix.c), shared with the
 * test that checks it (tests/e2e/test_memsup_output.c): byte i of the
 * stream of `seed`, every byte value, a pure function, so that a bare run
 * and a run under memsup compare without a copy kept. */
#ifndef MT_IO_MIX_H
#define MT_IO_MIX_H

#include <stdint.h>

static inline unsigned char io_mix_byte(uint64_t seed, uint64_t i)
{
	uint64_t x = (i >> 3) * 0x9e3779b97f4a7c15ull + seed * 0xbf58476d1ce4e5b9ull + 1;
	x ^= x >> 31;
	x *= 0x94d049bb133111ebull;
	x ^= x >> 29;
	return (unsigned char)(x >> (8 * (i & 7)));
}

#endif
