/* x_names.c: call sites whose names the shim's standalone summary can
 * give in full (test_shim_summary.c, "names"), and many small blocks for
 * the heap's usable bytes against the bytes requested.  Built with -g.
 *
 * Usage: x_names deep           holds 8 blocks of 8 MB, each from malloc in
 *                               level3 < level2 < level1 < main: the four
 *                               innermost frames are the program's own
 *        x_names small N SIZE   holds N blocks of SIZE bytes (malloc)
 *
 * Prints nothing on stdout, frees nothing (the heap at exit is the peak),
 * exits 0, or 2 when an allocation fails or the arguments are wrong.
 */
#include <stdlib.h>
#include <string.h>

static void *volatile kept;

__attribute__((noinline, noclone)) static void *level3(size_t n)
{
	void *p = malloc(n);
	if (p)
		memset(p, 1, 64);
	__asm__ volatile(""); /* not a tail call: each level keeps its frame */
	return p;
}

__attribute__((noinline, noclone)) static void *level2(size_t n)
{
	void *p = level3(n);
	__asm__ volatile("");
	return p;
}

__attribute__((noinline, noclone)) static void *level1(size_t n)
{
	void *p = level2(n);
	__asm__ volatile("");
	return p;
}

int main(int argc, char **argv)
{
	if (argc == 2 && strcmp(argv[1], "deep") == 0) {
		for (int i = 0; i < 8; i++)
			if (!(kept = level1(8u << 20)))
				return 2;
		return 0;
	}
	if (argc == 4 && strcmp(argv[1], "small") == 0) {
		long n = strtol(argv[2], NULL, 10), size = strtol(argv[3], NULL, 10);
		if (n <= 0 || size <= 0)
			return 2;
		for (long i = 0; i < n; i++)
			if (!(kept = malloc((size_t)size)))
				return 2;
		return 0;
	}
	return 2;
}
