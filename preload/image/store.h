/* store.h: where this image's struct mt_record lives and how it begins and
 * ends.
 *
 * With MEMTRACE_DIR set the record is a shared file mapping
 * "<dir>/<pid>.<gen>.mtr" (O_CREAT|O_EXCL, first free gen, no descriptor
 * kept open); without it, or if the file cannot be made, it is the static
 * record the counters used from the first hook on (then nothing outside the
 * process can see it, but counting and the exit reports still work).  All
 * entry points are async-signal-safe (the fork child and exit paths need it)
 * and never allocate.
 */
#ifndef MEMTRACE_STORE_H
#define MEMTRACE_STORE_H

#include <stddef.h>
#include <stdint.h>

#include "record.h"

/* Constructor, first: this image's identity (pid, times, exe, argv) into
 * the local record the counters already use; config_load() has run. */
void store_identify(int argc, char **argv);
/* Constructor, once the lineage is known: the counting moves from the
 * local record into the record file when MEMTRACE_DIR is set (the local
 * record stays otherwise), then magic is published (release). */
void store_publish(void);
/* pthread_atfork prepare and parent handlers: snapshot the record the
 * child will start from, and drop the snapshot. */
void store_fork_prepare(void);
void store_fork_parent(void);
/* pthread_atfork child handler: a fresh record for the child, relation FORK,
 * parent = the record of the image that forked, figures as at the fork. */
void store_fork_child(void);
/* Fills the end-of-image block and release-stores `state`, once, only for
 * the owning process.  Returns 1 if it did. */
int store_finish(unsigned state, int exit_code, int exit_signal);
/* An exec marked the record EXECED and then failed: RUNNING again. */
void store_unfinish(void);

#endif /* MEMTRACE_STORE_H */
