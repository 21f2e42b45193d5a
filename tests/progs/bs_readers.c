/* bs_readers.c: the parent holds MB (default 300), then N readers (default
 * 3) fork and read every page of it without writing, and all hold together
 * for HOLD_MS (default 500).  Usage: bs_readers [MB [N [HOLD_MS]]].
 * Summed RSS counts the block N+1 times; Pss counts it once: the tree's
 * polled peak is about (N+1) x MB while the memory in use is about MB. */
#include "workload.h"

struct block {
	const char *p;
	size_t len;
};

/* read every page, write none: shared with the parent, counted again */
static void read_block(long i, void *arg)
{
	const struct block *b = arg;
	volatile unsigned long sum = 0;
	(void)i;
	for (size_t off = 0; off < b->len; off += 4096)
		sum += (unsigned char)b->p[off];
}

int main(int argc, char **argv)
{
	long mb = wl_arg(argc, argv, 1, 300), n = wl_arg(argc, argv, 2, 3);
	long ms = wl_arg(argc, argv, 3, 500);
	struct block b = { NULL, (size_t)mb * WL_MB };
	b.p = wl_hold(b.len);
	struct wl_gate gate;
	wl_fork_gated(&gate, n, read_block, &b);
	printf("bs_readers: %ld readers share %ld MB\n", n, mb);
	fflush(stdout);
	wl_sleep_ms(ms);
	wl_gate_release(&gate);
	return 0;
}
