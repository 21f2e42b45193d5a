/* output/transcript.h: moved to stdio/transcript.h with the rest of the command's stdio.
 * Kept only so that code still including this path (run.c, being split
 * elsewhere) builds; include "stdio/transcript.h" instead. */
#include "stdio/transcript.h"
