/* perfmap.h: the symbol maps that JIT runtimes publish for profilers,
 * /tmp/perf-PID.map (node --perf-basic-prof, Java agents, CPython 3.12+
 * -X perf): one line per piece of generated code, "START SIZE NAME", START
 * and SIZE in hexadecimal (with or without 0x), NAME to the end of the line.
 *
 * memsup reads a process's map after the run, when its frames lie in no
 * mapped file (symbols.h), and names them by the entry that holds the
 * call.  A runtime may reuse an address for new code: the later line wins,
 * as perf(1) takes it.  Lines that do not parse are skipped and counted.
 *
 * Return convention: 0 or -errno. */
#ifndef MEMSUP_PERFMAP_H
#define MEMSUP_PERFMAP_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* A map larger than this is read up to it (a long-running JIT can write
 * millions of lines; the bound keeps memsup's end bounded). */
#define PERFMAP_MAX_BYTES (256u << 20)

struct perfmap_entry {
	uint64_t start, end;  /* [start, end) */
	uint32_t name;        /* offset into names */
	uint32_t order;       /* line number: the later line wins */
};

struct perfmap {
	struct perfmap_entry *e;
	size_t n, cap;
	char *names;
	size_t names_len, names_cap;
	size_t bad_lines;
	int truncated;        /* PERFMAP_MAX_BYTES reached */
};

/* The map's path for pid, into buf; -ENAMETOOLONG. */
int perfmap_path(int pid, char *buf, size_t len);
/* Read a map from f (any stream, for tests).  0, -ENOMEM or -EIO. */
int perfmap_read(FILE *f, struct perfmap *pm);
/* The name of the code holding addr, or NULL. */
const char *perfmap_find(const struct perfmap *pm, uint64_t addr);
void perfmap_free(struct perfmap *pm);

#endif /* MEMSUP_PERFMAP_H */
