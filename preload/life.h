/* life.h: what hooks.c tells life.c (both only in the .so). */
#ifndef MEMTRACE_LIFE_H
#define MEMTRACE_LIFE_H

#include "base/shim.h"

/* quick_exit()'s status: at_quick_exit handlers are not given it. */
extern MT_HIDDEN int life_quick_status;

#endif /* MEMTRACE_LIFE_H */
