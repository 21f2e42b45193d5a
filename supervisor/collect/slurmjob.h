/* slurmjob.h: the Slurm job memsup runs in, if any, and how Slurm measures
 * its memory: which jobacct_gather plugin and how often it polls.
 *
 * Slurm's MaxRSS (sstat, sacct, seff) is the largest RSS its
 * jobacct_gather plugin read at one poll, every JobAcctGatherFrequency
 * seconds (slurm.conf; srun --acctg-freq, SLURM_ACCTG_FREQ, overrides
 * it): linux sums the step's processes' RSS from /proc, cgroup reads the
 * task's memory cgroup, none keeps no figure.  memsup runs inside the
 * step, so its own environment says the job (SLURM_JOB_ID, SLURM_STEP_ID)
 * and where the configuration is (SLURM_CONF, else /etc/slurm/slurm.conf),
 * whose two keys are read here and nothing else of it.  Slurm's defaults
 * where the file does not say: jobacct_gather/none, every 30 s.
 *
 * Return convention: 0 or -errno. */
#ifndef MEMSUP_SLURMJOB_H
#define MEMSUP_SLURMJOB_H

#include <limits.h>
#include <stddef.h>

#define SLURMJOB_DEFAULT_CONF "/etc/slurm/slurm.conf"
#define SLURMJOB_DEFAULT_POLL_S 30.0
/* A configuration larger than this is not read (Slurm's are a few kB). */
#define SLURMJOB_MAX_CONF_BYTES (4u << 20)

struct slurm_job {
	char job_id[64];          /* SLURM_JOB_ID; "" outside a job */
	char step_id[32];         /* SLURM_STEP_ID; "" in a batch script */
	char gather[32];          /* JobAcctGatherType's plugin: "linux",
				     "cgroup", "none", another name as
				     written, or "" when the file could not
				     be read */
	double poll_s;            /* the task poll's period; 0: Slurm polls
				     only as each task ends */
	const char *poll_from;    /* "SLURM_ACCTG_FREQ", "slurm.conf" or
				     "default" */
	char conf[PATH_MAX];      /* the configuration read, or looked for */
	int conf_error;           /* 0, or why it could not be read (errno) */
};

/* The job memsup runs in, from the environment `envp` (NULL-terminated
 * "KEY=VALUE") and the configuration it names.  0 and out->job_id set
 * when in a job; 0 and job_id "" outside one (nothing else read).  A
 * configuration that cannot be read is no error: out->conf_error says
 * why, and gather is "". */
int slurmjob_detect(struct slurm_job *out, char *const *envp);

/* slurm.conf text: JobAcctGatherType and JobAcctGatherFrequency into out
 * (keys case-blind, '#' to the end of a line a comment, several KEY=VALUE
 * on a line), the defaults for those it lacks.  Pure. */
void slurmjob_parse_conf(const char *text, size_t len, struct slurm_job *out);

/* A JobAcctGatherFrequency or --acctg-freq value: "30", or a list
 * "task=30,energy=0,...", of which task= counts; "" or no task= in a
 * list: the default.  *poll_s, or -EINVAL for a value that is none. */
int slurmjob_parse_freq(const char *value, double *poll_s);

#endif /* MEMSUP_SLURMJOB_H */
