/* run.h: one supervised run, from fork to the last reaped descendant.
 *
 * run_supervise() blocks INT/TERM/HUP/QUIT/CHLD and reads them through a
 * signalfd, becomes a child subreaper, starts the command (spawn.h), then
 * samples the tree (tree.h) on a steady CLOCK_MONOTONIC schedule --
 * deadline k = start + k*period, missed deadlines skipped, no drift -- in
 * one ppoll() loop that also watches a pidfd of the main process for the
 * exact moment it ends.  It enforces the budgets by killing the whole tree,
 * kills and lists what is left when the main process has exited, reaps
 * every child until ECHILD, and fills the record.  The evidence directory
 * must exist; the record is rewritten about once a second while running.
 *
 * Returns memsup's exit status (see memsup(1)): the command's status,
 * 128+N for signal N, 123/124 budgets, 125 memsup error, 126/127 cannot
 * start, 128+N when memsup got signal N.  Never exits.
 */
#ifndef MEMSUP_RUN_H
#define MEMSUP_RUN_H

#include "cli.h"
#include "evidence.h"

struct run_config {
	const struct sup_options *opt;
	char **envp;              /* the command's whole environment */
	const char *proc_root;    /* "/proc" */
};

int run_supervise(const struct run_config *cfg, struct evidence *ev,
		  struct sup_record *rec);

#endif /* MEMSUP_RUN_H */
