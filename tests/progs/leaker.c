/* leaker.c: allocate LEAK_MB + FREE_MB (decimal) with malloc in 1 MB
 * blocks, touch them, free the FREE_MB part and exit without freeing the
 * LEAK_MB part.  Usage: leaker LEAK_MB FREE_MB.  Its heap peak is
 * LEAK_MB + FREE_MB, its heap live at exit (record.heap_current) LEAK_MB
 * plus stdio's buffer: two runs of equal peaks whose leaks differ. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "workload.h"

#define BLOCK 1000000

int main(int argc, char **argv)
{
	long leak = wl_arg(argc, argv, 1, 10), freed = wl_arg(argc, argv, 2, 10);
	char **blocks = malloc((size_t)(leak + freed + 1) * sizeof *blocks);
	if (!blocks)
		wl_die("malloc");
	for (long i = 0; i < leak + freed; i++) {
		if (!(blocks[i] = malloc(BLOCK)))
			wl_die("malloc");
		memset(blocks[i], 0x3c, BLOCK);
	}
	for (long i = leak; i < leak + freed; i++)
		free(blocks[i]);
	printf("leaker: %ld MB left allocated, %ld MB freed\n", leak, freed);
	return 0; /* blocks[0..leak) and the table itself are never freed */
}
