/* scope.h: a cgroup memsup can use, asked of systemd where the one memsup
 * was started in cannot hold the run's.
 *
 * On pure cgroup v2 the run's cgroup gets the memory and pids controllers
 * only from a parent without processes of its own (the "no internal
 * processes" rule), and only where memsup may write.  Started from a shell
 * in a login session, a CI job's service or a user's terminal, memsup's
 * cgroup is a systemd unit's that holds other processes, or one memsup may
 * not write to; the run then has no memory cgroup, and the answer is
 * polled.  systemd's rule for a program that manages cgroups is to ask for
 * a unit with delegation (Delegate=yes) and work inside it.  So, before
 * anything is created, memsup asks the manager that owns its cgroup (the
 * system manager as root, the user's manager otherwise) for a transient
 * scope holding memsup alone, memsup-PID.scope, in the slice it was in.
 * memsup stays the same process, so the command's terminal, environment,
 * working directory, exit status and signals are what they were; the
 * scope ends when memsup and its sentinel have left it, and systemd
 * collects it (CollectMode=inactive-or-failed).
 *
 * It is asked only where it helps and escapes nothing it should not:
 * pure v2 under systemd (/run/systemd/system), --cgroup auto, memsup's
 * cgroup a unit's (*.service, *.scope) whose memory.max sets no limit (a
 * scope elsewhere would leave it), not a memsup run's (a
 * memsup inside memsup stays in the outer run, which counts it), not the
 * root of a cgroup namespace (a container), and only when the cgroup as it
 * is would not do.  MEMSUP_DELEGATED=1 says the cgroup memsup is in is
 * already the one to use.  Why nothing was asked, or why the manager
 * refused, goes into the record's containment.missing and the summary's
 * line, with what would give the exact peak. */
#ifndef MEMSUP_SCOPE_H
#define MEMSUP_SCOPE_H

#include "contain/contain.h"

#define SCOPE_ENV "MEMSUP_DELEGATED"
/* How long the manager may take to answer, and then to move memsup. */
#define SCOPE_CALL_TIMEOUT_MS 5000
#define SCOPE_MOVE_TIMEOUT_MS 10000

struct scope_outcome {
	int moved;                 /* memsup is in a scope of its own now */
	const char *manager;       /* "system" or "user"; NULL: none asked */
	char unit[64];             /* "memsup-PID.scope" */
	char why[CONTAIN_MISSING_BYTES]; /* a scope would have helped and none
				      was had: why; "" otherwise */
	const char *hint;          /* with why: what would give one; NULL */
};

/* Ask for a scope where memsup's cgroup cannot hold the run's with the
 * memory and pids controllers, and move memsup into it (see above).
 * `what` is the command, for the unit's description.  Never fails: out
 * says what happened. */
void scope_seek(const struct contain_config *cfg, const char *what, struct scope_outcome *out);

#endif /* MEMSUP_SCOPE_H */
