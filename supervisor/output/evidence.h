/* output/evidence.h: moved to evidence/evidence.h with the rest of the evidence
 * directory's writers.  Kept only so that code still including this path
 * (run.c and run.h, being split elsewhere) builds; include
 * "evidence/evidence.h" instead. */
#include "evidence/evidence.h"
