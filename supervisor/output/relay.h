/* output/relay.h: moved to stdio/relay.h with the rest of the command's stdio.
 * Kept only so that code still including this path (run.c, being split
 * elsewhere) builds; include "stdio/relay.h" instead. */
#include "stdio/relay.h"
