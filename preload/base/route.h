/* route.h: the dispatch mode, which shortest path malloc and free may take,
 * and the one function told whenever it changes.
 *
 * The mode is a word of bits the hooks' paths depend on, read in one load
 * and compared once.  hooks.c registers its router at start
 * (route_register): from then on every change of the word calls it, and
 * the exported malloc, free, calloc and realloc jump through a pointer per
 * mode instead of testing the word on every call.  Before a router is
 * registered the hooks stay on their general paths, which are right in
 * every mode.  Lower modules change the word through the functions below
 * and never name the hooks: boot.c (block sizes from glibc chunk headers,
 * the bootstrap arena), sites.c (a sampled block may be live), the thread
 * switch and the fork child's reset (ordered from the top: hooks.c,
 * life.c).  Async-signal-safe; never allocates, locks or makes a system
 * call.  Every write to the word is an atomic RMW of its own bits. */
#ifndef MEMTRACE_ROUTE_H
#define MEMTRACE_ROUTE_H

#include "base/shim.h"

/* ROUTE_ST while single-threaded *and* block sizes come from glibc chunk
 * headers (boot.h); ROUTE_MT in the same case once multithreaded (the
 * per-thread shard path, counters.h).  ROUTE_SITES: a sampled block may be
 * live, so a free must ask sites.h about its block; set by sites.c before
 * the first block enters its filter, never cleared (a fork child keeps the
 * parent's sampled blocks). */
#define ROUTE_ST 1u
#define ROUTE_SITES 2u
#define ROUTE_MT 4u
extern MT_HIDDEN unsigned route_mode;

/* The router, called with the new mode after every change.  Registering
 * calls it at once with the mode in force; NULL unregisters. */
typedef void route_fn(unsigned mode);
void route_register(route_fn *fn);

/* route_clear returns which of `bits` were set. */
unsigned route_clear(unsigned bits);
void route_set(unsigned bits);
/* Whether block sizes come from glibc chunk headers: ROUTE_ST or ROUTE_MT
 * (whichever the thread mode says) is allowed only then. */
void route_glibc_sizes(int yes);
/* The thread mode: 1 from just before the second thread exists, 0 again
 * in a fork child.  Moves ROUTE_ST to ROUTE_MT and back. */
void route_threads(int mt);

#endif /* MEMTRACE_ROUTE_H */
