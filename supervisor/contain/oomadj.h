/* oomadj.h: memsup out of the OOM killer's reach: memsup survives
 * what it watches.
 *
 * A machine-wide OOM picks the process with the largest badness, and
 * memsup (its maps of every record, its evidence buffers) can be that
 * process, or be picked inside a job's cgroup that holds it and the tree
 * (a Slurm step).  memsup, and the sentinel it forks (which inherits it),
 * set their oom_score_adj to -1000 (never chosen); the command gets the
 * value memsup had back in its child before exec, so the tree is judged
 * exactly as without memsup.  Lowering the value needs CAP_SYS_RESOURCE:
 * without it nothing changes and oomadj_protect() says so (0 returned,
 * *protected 0); raising it back, in the child, needs nothing. */
#ifndef MEMSUP_OOMADJ_H
#define MEMSUP_OOMADJ_H

#define OOMADJ_TEXT_BYTES 12

struct oomadj {
	int protected;                  /* memsup's is -1000 now */
	char before[OOMADJ_TEXT_BYTES]; /* memsup's value before, as text */
};

/* `path`: NULL for /proc/self/oom_score_adj.  0, or -errno when even the
 * value could not be read. */
int oomadj_protect(struct oomadj *a, const char *path);

#endif /* MEMSUP_OOMADJ_H */
