/* forktree.c: N children (default 4) each hold MB (default 30) at the same
 * time for HOLD_MS (default 400); the parent holds nothing big.
 * Usage: forktree [N [MB [HOLD_MS]]].
 * Every child touches its block and reports on a pipe; only when all N have
 * done so does the parent start the hold, then it releases them together,
 * so the tree's peak is about N x MB -- the SUM -- while the largest single
 * process (and getrusage(RUSAGE_CHILDREN)) is about MB. */
#include "workload.h"

static void hold(long i, void *mb)
{
	(void)i;
	wl_hold((size_t)*(long *)mb * WL_MB);
}

int main(int argc, char **argv)
{
	long n = wl_arg(argc, argv, 1, 4), mb = wl_arg(argc, argv, 2, 30);
	long ms = wl_arg(argc, argv, 3, 400);
	struct wl_gate gate;
	wl_fork_gated(&gate, n, hold, &mb);
	printf("forktree: %ld children hold %ld MB each\n", n, mb);
	fflush(stdout);
	wl_sleep_ms(ms);
	wl_gate_release(&gate);
	return 0;
}
