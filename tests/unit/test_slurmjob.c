/* test_slurmjob.c: the Slurm job memsup runs in (slurmjob.h) and what a
 * slow poller reads of a run (slowpoll.h), over known values, known series
 * and forged configurations: comments, cases, quotes, junk, a directory, a
 * FIFO (which must not block), a file too large to be one. */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "collect/slowpoll.h"
#include "collect/slurmjob.h"
#include "test_tmp.h"

/* ---- JobAcctGatherFrequency ---- */

Test(slurmjob, freq_values)
{
	static const struct {
		const char *v;
		double want;
	} ok[] = {
		{ "30", 30 }, { "1", 1 }, { "0", 0 }, { "0.5", 0.5 }, { "task=5", 5 },
		{ "task=5,energy=0,network=0", 5 }, { "energy=10,task=2", 2 }, { "TASK=7", 7 },
		{ "energy=10", SLURMJOB_DEFAULT_POLL_S }, { "", SLURMJOB_DEFAULT_POLL_S },
	};
	for (size_t i = 0; i < sizeof ok / sizeof *ok; i++) {
		double s = -1;
		cr_assert_eq(slurmjob_parse_freq(ok[i].v, &s), 0, "%s", ok[i].v);
		cr_assert_float_eq(s, ok[i].want, 1e-9, "%s: %g", ok[i].v, s);
	}
	static const char *const bad[] = { "abc", "-1", "1e999", "nan", "task=", "task=x", "task=-3",
					   "5s", "task=1,5", "task=99999999999999999999999999999999x" };
	for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
		double s;
		cr_assert_eq(slurmjob_parse_freq(bad[i], &s), -EINVAL, "%s", bad[i]);
	}
}

/* ---- slurm.conf ---- */

static struct slurm_job conf_of(const char *text)
{
	struct slurm_job j;
	memset(&j, 0, sizeof j);
	slurmjob_parse_conf(text, strlen(text), &j);
	return j;
}

Test(slurmjob, conf_keys_as_slurm_reads_them)
{
	struct slurm_job j = conf_of("ClusterName=t\n"
				     "# JobAcctGatherType=jobacct_gather/cgroup\n"
				     "jobacctgathertype=jobacct_gather/linux  JobAcctGatherFrequency=task=3,energy=0\n"
				     "NodeName=n CPUs=2 # JobAcctGatherFrequency=99\n");
	cr_assert_str_eq(j.gather, "linux");
	cr_assert_float_eq(j.poll_s, 3, 1e-9);
	cr_assert_str_eq(j.poll_from, "slurm.conf");
	/* quoted, CRLF, the last one written wins */
	j = conf_of("JobAcctGatherType=\"jobacct_gather/cgroup\"\r\nJobAcctGatherFrequency=9\r\n"
		    "JobAcctGatherFrequency=4\r\n");
	cr_assert_str_eq(j.gather, "cgroup");
	cr_assert_float_eq(j.poll_s, 4, 1e-9);
}

Test(slurmjob, conf_without_the_keys_is_slurms_defaults)
{
	struct slurm_job j = conf_of("ClusterName=t\nSlurmctldPort=6817\n");
	cr_assert_str_eq(j.gather, "none");
	cr_assert_float_eq(j.poll_s, SLURMJOB_DEFAULT_POLL_S, 1e-9);
	cr_assert_str_eq(j.poll_from, "default");
	/* junk: a key without a value, a bad frequency, an empty file */
	j = conf_of("=x\nJobAcctGatherFrequency=often\nJobAcctGatherType\n\n");
	cr_assert_str_eq(j.gather, "none");
	cr_assert_float_eq(j.poll_s, SLURMJOB_DEFAULT_POLL_S, 1e-9);
	cr_assert_str_eq(j.poll_from, "default");
	j = conf_of("");
	cr_assert_str_eq(j.gather, "none");
	/* a plugin name longer than its field is cut, never overrun */
	char big[512] = "JobAcctGatherType=jobacct_gather/";
	memset(big + strlen(big), 'x', 300);
	j = conf_of(big);
	cr_assert_eq(strlen(j.gather), sizeof j.gather - 1);
}

/* ---- the environment and the file ---- */

static char tmpdir[] = "/tmp/test_slurmjob.XXXXXX";

static const char *tmp_file(const char *name, const char *text)
{
	static char path[4][512];
	static int slot;
	char *p = path[slot++ % 4];
	if (strstr(tmpdir, "XXXXXX")) {
		cr_assert_not_null(mkdtemp(tmpdir));
		tmp_adopt(tmpdir);
	}
	snprintf(p, 512, "%s/%s", tmpdir, name);
	if (text) {
		FILE *f = fopen(p, "w");
		cr_assert_not_null(f);
		fputs(text, f);
		fclose(f);
	}
	return p;
}

Test(slurmjob, outside_a_job_nothing_is_read)
{
	char *env[] = { "PATH=/bin", "SLURM_CONF=/nonexistent", NULL };
	struct slurm_job j;
	cr_assert_eq(slurmjob_detect(&j, env), 0);
	cr_assert_str_eq(j.job_id, "");
	cr_assert_eq(j.conf_error, 0);
	char *empty[] = { "SLURM_JOB_ID=", NULL };
	cr_assert_eq(slurmjob_detect(&j, empty), 0);
	cr_assert_str_eq(j.job_id, "");
}

Test(slurmjob, job_and_its_configuration)
{
	char conf[600], *env[6];
	snprintf(conf, sizeof conf, "SLURM_CONF=%s",
		 tmp_file("slurm.conf", "JobAcctGatherType=jobacct_gather/cgroup\nJobAcctGatherFrequency=task=2\n"));
	env[0] = "SLURM_JOB_ID=77";
	env[1] = "SLURM_STEP_ID=3";
	env[2] = conf;
	env[3] = NULL;
	struct slurm_job j;
	cr_assert_eq(slurmjob_detect(&j, env), 0);
	cr_assert_str_eq(j.job_id, "77");
	cr_assert_str_eq(j.step_id, "3");
	cr_assert_str_eq(j.gather, "cgroup");
	cr_assert_float_eq(j.poll_s, 2, 1e-9);
	cr_assert_str_eq(j.poll_from, "slurm.conf");
	cr_assert_eq(j.conf_error, 0);
	/* srun --acctg-freq's value wins; a bad one is not taken */
	env[3] = "SLURM_ACCTG_FREQ=task=5";
	env[4] = NULL;
	cr_assert_eq(slurmjob_detect(&j, env), 0);
	cr_assert_float_eq(j.poll_s, 5, 1e-9);
	cr_assert_str_eq(j.poll_from, "SLURM_ACCTG_FREQ");
	env[3] = "SLURM_ACCTG_FREQ=soon";
	cr_assert_eq(slurmjob_detect(&j, env), 0);
	cr_assert_float_eq(j.poll_s, 2, 1e-9);
	cr_assert_str_eq(j.poll_from, "slurm.conf");
}

/* A configuration that cannot be read: the job still, its plugin unknown,
 * the period Slurm's default, and why. */
static void unreadable(const char *path, int want_errno)
{
	char conf[600];
	snprintf(conf, sizeof conf, "SLURM_CONF=%s", path);
	char *env[] = { "SLURM_JOB_ID=8", conf, NULL };
	struct slurm_job j;
	cr_assert_eq(slurmjob_detect(&j, env), 0);
	cr_assert_str_eq(j.job_id, "8");
	cr_assert_eq(j.conf_error, want_errno, "%s: %s, not %s", path, strerror(j.conf_error),
		     strerror(want_errno));
	cr_assert_str_eq(j.gather, "");
	cr_assert_float_eq(j.poll_s, SLURMJOB_DEFAULT_POLL_S, 1e-9);
	cr_assert_str_eq(j.poll_from, "default");
	cr_assert_str_eq(j.conf, path);
}

Test(slurmjob, forged_configurations_are_refused_with_why, .timeout = 10)
{
	unreadable("/nonexistent/slurm.conf", ENOENT);
	const char *dir = tmp_file("", NULL);
	unreadable(dir, EISDIR);
	/* a FIFO nobody writes: refused at once, never waited on */
	const char *fifo = tmp_file("fifo", NULL);
	cr_assert_eq(mkfifo(fifo, 0600), 0);
	unreadable(fifo, EINVAL);
	/* 5 MB of configuration is no Slurm's */
	const char *big = tmp_file("big.conf", "JobAcctGatherType=jobacct_gather/linux\n");
	cr_assert_eq(truncate(big, 5 << 20), 0);
	unreadable(big, EFBIG);
	/* no default file here: the default path is looked for and said */
	char *env[] = { "SLURM_JOB_ID=9", NULL };
	struct slurm_job j;
	cr_assert_eq(slurmjob_detect(&j, env), 0);
	cr_assert_str_eq(j.conf, SLURMJOB_DEFAULT_CONF);
	if (access(SLURMJOB_DEFAULT_CONF, R_OK) != 0)
		cr_assert_neq(j.conf_error, 0);
}

/* ---- a slow poller's view ---- */

/* samples every 10 ms from t=0.01 to t=end: base, and `spike` bytes over
 * [from, to) */
static void feed(struct slowpoll *p, double end, uint64_t base, double from, double to, uint64_t spike)
{
	for (int i = 1; i * 0.01 <= end + 1e-9; i++) {
		double t = i * 0.01;
		slowpoll_sample(p, t, t >= from && t < to ? spike : base);
	}
}

Test(slowpoll, flat_reads_the_same_whenever_it_polls)
{
	struct slowpoll p;
	slowpoll_init(&p, 1.0);
	feed(&p, 5.0, 100, 0, 0, 0);
	uint64_t lo, hi;
	slowpoll_range(&p, &lo, &hi);
	cr_assert_eq(lo, 100);
	cr_assert_eq(hi, 100);
}

Test(slowpoll, a_spike_shorter_than_the_period_may_be_missed)
{
	struct slowpoll p;
	slowpoll_init(&p, 1.0);
	/* 150 ms at 2 s: a poll every second catches it only if one falls in
	 * it -- 3 of 16 schedules (62.5 ms apart) do */
	feed(&p, 5.0, 100, 2.0, 2.15, 900);
	uint64_t lo, hi;
	slowpoll_range(&p, &lo, &hi);
	cr_assert_eq(lo, 100);
	cr_assert_eq(hi, 900);
	unsigned caught = 0;
	for (unsigned k = 0; k < SLOWPOLL_PHASES; k++)
		caught += p.max[k] == 900;
	cr_assert(caught >= 2 && caught <= 3, "%u schedules caught it", caught);
	/* one longer than the period: every schedule reads it */
	slowpoll_init(&p, 1.0);
	feed(&p, 5.0, 100, 2.0, 3.05, 900);
	slowpoll_range(&p, &lo, &hi);
	cr_assert_eq(lo, 900);
}

/* Sparse samples (the pace: a flat tree sampled every 0.1 s, then 0.2 s,
 * then 0.4 s, and 0.8 s apart before the kernel's wake at a spike): a poll
 * in a long gap reads the level that held, not the spike that ended the
 * gap, so a spike of 150 ms is still missed by most schedules.  Read at
 * the first sample after each poll, all 16 read it (CI saw the unluckiest
 * at 26.7 MB of a 10 MB tree). */
Test(slowpoll, a_poll_in_a_sparse_gap_reads_the_level_that_held)
{
	struct slowpoll p;
	slowpoll_init(&p, 1.0);
	const double sparse[] = { 0.1, 0.3, 0.7 };
	for (unsigned i = 0; i < 3; i++)
		slowpoll_sample(&p, sparse[i], 100);
	/* woken at 1.5 s: dense through the spike and after it */
	for (int i = 150; i <= 500; i++) {
		double t = i * 0.01;
		slowpoll_sample(&p, t, t < 1.65 ? 900 : 100);
	}
	uint64_t lo, hi;
	slowpoll_range(&p, &lo, &hi);
	cr_assert_eq(lo, 100);
	cr_assert_eq(hi, 900);
	unsigned caught = 0;
	for (unsigned k = 0; k < SLOWPOLL_PHASES; k++)
		caught += p.max[k] == 900;
	cr_assert(caught >= 2 && caught <= 3, "%u schedules caught it", caught);
}

Test(slowpoll, a_run_shorter_than_the_period_can_read_nothing)
{
	struct slowpoll p;
	slowpoll_init(&p, 30.0);
	feed(&p, 2.0, 500, 0, 0, 0);
	uint64_t lo, hi;
	slowpoll_range(&p, &lo, &hi);
	cr_assert_eq(lo, 0, "a schedule whose first poll is after the run reads 0");
	cr_assert_eq(hi, 500);
	cr_assert_eq(p.max[0], 500, "one polling at the start reads the first sample");
}

Test(slowpoll, off_and_empty)
{
	struct slowpoll p;
	uint64_t lo = 1, hi = 1;
	slowpoll_init(&p, 0);
	feed(&p, 1.0, 100, 0, 0, 0);
	slowpoll_range(&p, &lo, &hi);
	cr_assert_eq(p.samples, 0);
	cr_assert(lo == 0 && hi == 0);
	slowpoll_init(&p, -1);
	cr_assert_eq(p.period_s, 0);
	slowpoll_init(&p, 1.0);
	slowpoll_range(&p, &lo, &hi);
	cr_assert(lo == 0 && hi == 0, "no sample: nothing read");
	/* a gap of many periods between two samples: the next poll is after it */
	slowpoll_sample(&p, 0.5, 10);
	slowpoll_sample(&p, 100.25, 20);
	for (unsigned k = 0; k < SLOWPOLL_PHASES; k++)
		cr_assert(p.next_s[k] > 100.25 && p.next_s[k] <= 101.25, "%u: %g", k, p.next_s[k]);
}
