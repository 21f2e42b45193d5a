/* api.h: the shim-internal side of api.c (memtrace.h is the public side). */
#ifndef MEMTRACE_API_H
#define MEMTRACE_API_H

/* Fork handlers: no marker is half-written across fork(). */
void api_fork_prepare(void);
void api_fork_release(void);

#endif /* MEMTRACE_API_H */
