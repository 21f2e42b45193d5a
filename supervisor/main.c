/* main.c: memsup entry point (placeholder until the supervisor lands). */
#include <stdio.h>
#include <string.h>
#include "version.h"

int main(int argc, char **argv)
{
	if (argc > 1 && strcmp(argv[1], "--version") == 0) {
		printf("memsup (memtrace) %s\n", memsup_version());
		return 0;
	}
	fprintf(stderr, "memsup: not implemented yet\n");
	return 125;
}
