/* memtrace.h: what a program may call when libmemtrace.so is preloaded.
 * (placeholder until the shim lands) */
#ifndef MEMTRACE_H
#define MEMTRACE_H
#endif
