/* fuzz_selfmaps.c: libFuzzer harness for selfmaps_parse_line (preload/
 * selfmaps.h), the shim's parser of /proc/self/maps lines.  The kernel
 * writes that text, but the parser runs inside every traced program on
 * every thread's first sample: it must never read past the line it is
 * given, whatever the line.
 *
 * The input is cut at newlines, as selfmaps_scan cuts the file, and each
 * line is handed over in a buffer of exactly its length (ASan sees any read
 * beyond).  After a successful parse the harness checks the promises: the
 * range is ordered, the permission bits are the documented ones, and the
 * path lies inside the line.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/selfmaps.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CHECK(cond)                                                              \
	do {                                                                     \
		if (!(cond)) {                                                   \
			fprintf(stderr, "fuzz_selfmaps: %s:%d: invariant broken: %s\n", \
				__FILE__, __LINE__, #cond);                      \
			abort();                                                 \
		}                                                                \
	} while (0)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	size_t at = 0;
	while (at < size) {
		const uint8_t *nl = memchr(data + at, '\n', size - at);
		size_t len = nl ? (size_t)(nl - (data + at)) : size - at;
		char *line = malloc(len ? len : 1);
		struct selfmaps_entry e;
		if (!line)
			abort();
		memcpy(line, data + at, len);
		if (selfmaps_parse_line(line, len, &e) == 0) {
			const unsigned known =
				SELFMAPS_R | SELFMAPS_W | SELFMAPS_X | SELFMAPS_SHARED;
			CHECK(e.start <= e.end);
			CHECK((e.perms & ~known) == 0);
			CHECK(e.path >= line && e.path + e.path_len == line + len);
		}
		free(line);
		at += len + 1;
	}
	return 0;
}
