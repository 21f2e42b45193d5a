/* wakeslice.h: a short time slice for memsup's own wake-ups.
 *
 * A sample is a few tens of microseconds of CPU every --poll-ms; what
 * makes one late is the wait for a CPU when the machine is busy: with two
 * CPU-bound processes on this project's 2-CPU test VM, a sample woken by
 * the kernel as a spike began ran up to 15 ms later.  Linux's EEVDF
 * scheduler (6.12 and later) lets a task ask for a shorter slice than the
 * default 3 ms (sched_attr.sched_runtime, for a normal task, no privilege
 * needed), and a task woken with a shorter slice is given the CPU sooner:
 * the same CPU time, spent earlier.  memsup asks for WAKESLICE_NS once the
 * command has started, so that neither the command nor the sentinel
 * inherits it; a kernel before 6.12 takes the call and ignores the field.
 * Not for a real-time or idle memsup (procs.h's raised priority, or the
 * user's chrt): those are left as they are.
 */
#ifndef MEMSUP_WAKESLICE_H
#define MEMSUP_WAKESLICE_H

#include <stdint.h>

#define WAKESLICE_NS 100000u       /* the shortest the kernel takes */

/* Ask for a slice of `ns` for the calling thread.  0, or -errno (-ENOSYS:
 * no sched_setattr; -EINVAL: not a normal-policy task, left alone). */
int wakeslice_take(uint64_t ns);

#endif /* MEMSUP_WAKESLICE_H */
