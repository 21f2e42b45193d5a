/* output/timeline.h: moved to evidence/timeline.h with the rest of the evidence
 * directory's writers.  Kept only so that code still including this path
 * (run.c and run.h, being split elsewhere) builds; include
 * "evidence/timeline.h" instead. */
#include "evidence/timeline.h"
