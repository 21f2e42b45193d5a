/* store.h: where this image's struct mt_record lives and how it begins and
 * ends.
 *
 * The record always lives at its home, a fixed place in the shim's memory
 * (counters.h).  With MEMTRACE_DIR set the home is a shared file mapping
 * of "<dir>/<pid>.<gen>.mtr" (O_CREAT|O_EXCL, first free gen, no
 * descriptor kept open), mapped over the private pages the counters used
 * from the first hook on; without it, or if the file cannot be made, it
 * stays those pages (then nothing outside the process can see it, but
 * counting and the exit reports still work).  All
 * entry points are async-signal-safe (the fork child and exit paths need it)
 * and never allocate.
 */
#ifndef MEMTRACE_STORE_H
#define MEMTRACE_STORE_H

#include <stddef.h>
#include <stdint.h>

#include "record.h"

/* Constructor, first: this image's identity (pid, times) into the record
 * the counters already use; exe and argv follow in store_publish (argv is
 * kept until then); config_load() has run. */
void store_identify(int argc, char **argv);
/* Constructor, once the lineage is known: the record file is mapped over
 * the home with the counts so far when MEMTRACE_DIR is set (the private
 * pages stay otherwise), exe and argv are filled in, then magic is
 * published (release). */
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
/* 1 when the record is this image's record file (mapped over the home,
 * counters.h), 0 when it is process-private memory. */
int store_has_file(void);

#endif /* MEMTRACE_STORE_H */
