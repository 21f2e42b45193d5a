/* test_memsup_slurmjob.c: memsup in a Slurm job, as the job's environment
 * and configuration say (no Slurm here: tests/slurm.sh runs a real one).
 * The real memsup ($MEMSUP) runs under env(1) with SLURM_JOB_ID and a
 * slurm.conf of the test's; the record's "slurm" and the slurm_maxrss
 * finding are read back with python3's json (tests/py/memsup_slurmjob.py).
 * The workload is of known size: steady holds 10 MB for 3 s, and another
 * holds 60 MB for 150 ms in the middle of it -- a spike Slurm's poll every
 * second misses unless a poll falls inside it. */
#include <criterion/criterion.h>

#include "test_memsup_util.h"

/* memsup -o TMP/ev -- sh -c SCRIPT under SLURM_JOB_ID=4242, SLURM_STEP_ID=0
 * and SLURM_CONF=TMP/slurm.conf holding `conf` (NULL: no file there);
 * `extra` one more VAR=VALUE (NULL: none).  Its status. */
static int slurm_run(struct sup_run *r, const char *conf, const char *extra, const char *script)
{
	tmp_make(r);
	const char *path = sup_tmp_path(r, "slurm.conf");
	if (conf) {
		FILE *f = fopen(path, "w");
		cr_assert_not_null(f);
		fputs(conf, f);
		fclose(f);
	}
	char conf_env[PATH_MAX + 16];
	snprintf(conf_env, sizeof conf_env, "SLURM_CONF=%s", path);
	const char *argv[] = { "env", "-u", "SLURM_ACCTG_FREQ", "SLURM_JOB_ID=4242", "SLURM_STEP_ID=0", conf_env,
			       extra ? extra : "MEMSUP_TEST=1", env_or_skip("MEMSUP"), "-q", "-o", r->dir, "--",
			       "sh", "-c", script, NULL };
	sup_spawn(r, NULL, argv);
	return memsup_wait(r);
}

static const char *spike_script(void)
{
	static char s[3 * PATH_MAX];
	snprintf(s, sizeof s, "%s 10 3000 & sleep 1.5; %s 60 150; wait", prog("steady"), prog("steady"));
	return s;
}

#define LINUX_EVERY_1S "ClusterName=t\nJobAcctGatherType=jobacct_gather/linux\nJobAcctGatherFrequency=task=1\n"

Test(memsup_slurmjob, spike_between_polls_is_explained, .timeout = 60)
{
	struct sup_run r;
	cr_assert_eq(slurm_run(&r, LINUX_EVERY_1S, NULL, spike_script()), 0, "%s", r.err);
	sup_py_check(&r, "memsup_slurmjob.py", "spike_between_polls_is_explained", NULL);
	sup_done(&r);
}

Test(memsup_slurmjob, no_accounting_is_said, .timeout = 60)
{
	struct sup_run r;
	cr_assert_eq(slurm_run(&r, "JobAcctGatherType=jobacct_gather/none\n", NULL, "true"), 0, "%s", r.err);
	sup_py_check(&r, "memsup_slurmjob.py", "no_accounting_is_said", NULL);
	sup_done(&r);
}

Test(memsup_slurmjob, unreadable_configuration_is_said, .timeout = 60)
{
	struct sup_run r;
	cr_assert_eq(slurm_run(&r, NULL, NULL, "sleep 0.3"), 0, "%s", r.err);
	sup_py_check(&r, "memsup_slurmjob.py", "unreadable_configuration_is_said", NULL);
	sup_done(&r);
}

Test(memsup_slurmjob, acctg_freq_overrides_the_configuration, .timeout = 60)
{
	struct sup_run r;
	cr_assert_eq(slurm_run(&r, LINUX_EVERY_1S, "SLURM_ACCTG_FREQ=task=7", "true"), 0, "%s", r.err);
	sup_py_check(&r, "memsup_slurmjob.py", "acctg_freq_overrides_the_configuration", NULL);
	sup_done(&r);
}

Test(memsup_slurmjob, periodic_poll_off_is_said, .timeout = 60)
{
	struct sup_run r;
	cr_assert_eq(slurm_run(&r, LINUX_EVERY_1S, "SLURM_ACCTG_FREQ=task=0", "sleep 0.2"), 0, "%s", r.err);
	sup_py_check(&r, "memsup_slurmjob.py", "periodic_poll_off_is_said", NULL);
	sup_done(&r);
}

Test(memsup_slurmjob, outside_slurm_the_record_says_null, .timeout = 60)
{
	struct sup_run r;
	tmp_make(&r);
	const char *argv[] = { "env", "-u", "SLURM_JOB_ID", env_or_skip("MEMSUP"), "-q", "-o", r.dir, "--",
			       "true", NULL };
	sup_spawn(&r, NULL, argv);
	cr_assert_eq(memsup_wait(&r), 0, "%s", r.err);
	rec_load(&r);
	cr_assert_str_eq(rec_str(&r, "slurm"), "null");
	sup_done(&r);
}
