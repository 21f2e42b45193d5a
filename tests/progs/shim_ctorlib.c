/* shim_ctorlib.c: a helper library whose constructor allocates before the
 * shim's constructor has run (it is listed after libmemtrace.so in
 * LD_PRELOAD, and ld.so initialises later preloads first).  It keeps two
 * blocks, frees a third, and prints (write(2)) their usable size:
 * "ctor_usable=<n>".  The program it is loaded into allocates nothing, so
 * the record must end with exactly this heap_current, 3 mallocs, 1 free.
 */
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

void *shim_ctorlib_keep[2];

__attribute__((constructor)) static void shim_ctorlib_init(void)
{
	char buf[64];
	void *volatile tmp; /* volatile: GCC may drop an unused malloc+free pair */
	int n;
	shim_ctorlib_keep[0] = malloc(1000);
	tmp = malloc(2000);
	shim_ctorlib_keep[1] = malloc(3000);
	free(tmp);
	n = snprintf(buf, sizeof buf, "ctor_usable=%zu\n",
		     malloc_usable_size(shim_ctorlib_keep[0]) +
			     malloc_usable_size(shim_ctorlib_keep[1]));
	if (write(1, buf, (size_t)n) != n)
		_exit(3);
}
