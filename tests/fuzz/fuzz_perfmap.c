/* fuzz_perfmap.c: libFuzzer harness for the JIT map reader of
 * supervisor/analyze/perfmap.h: any bytes a process left in
 * /tmp/perf-PID.map are read without a crash, every entry kept is a
 * non-empty [start, end) with a name inside the names buffer, and a
 * lookup returns either no name or the name of an entry that holds the
 * address. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analyze/perfmap.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (!size)
		return 0;
	FILE *f = fmemopen((void *)data, size, "r");
	if (!f)
		return 0;
	struct perfmap pm;
	int rc = perfmap_read(f, &pm);
	fclose(f);
	if (rc < 0)
		return 0;
	for (size_t i = 0; i < pm.n; i++) {
		const struct perfmap_entry *e = &pm.e[i];
		if (e->start >= e->end || e->name >= pm.names_len)
			abort();
		if (i && pm.e[i - 1].start > e->start)
			abort(); /* sorted by start */
	}
	/* look up each entry's first and last byte, and the bytes around */
	for (size_t i = 0; i < pm.n && i < 64; i++) {
		uint64_t probes[] = { pm.e[i].start, pm.e[i].end - 1, pm.e[i].end, pm.e[i].start - 1 };
		for (size_t k = 0; k < 4; k++) {
			const char *name = perfmap_find(&pm, probes[k]);
			if (!name)
				continue;
			if (name < pm.names || name >= pm.names + pm.names_len)
				abort();
			int held = 0;
			for (size_t j = 0; j < pm.n && !held; j++)
				held = pm.names + pm.e[j].name == name && pm.e[j].start <= probes[k] &&
				       probes[k] < pm.e[j].end;
			if (!held)
				abort();
		}
	}
	perfmap_free(&pm);
	return 0;
}
