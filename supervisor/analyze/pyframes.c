/* pyframes.c: Python frames' lines and their place in a stack (see
 * pyframes.h). */
#include <stdio.h>
#include <string.h>

#include "analyze/pyframes.h"

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
