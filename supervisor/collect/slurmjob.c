/* slurmjob.c: the Slurm job memsup runs in and its accounting poll
 * (slurmjob.h). */
#include "collect/slurmjob.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "contain/spawn.h"
#include "invariant.h"

/* src into dst[cap], cut at cap - 1 bytes. */
static void copy_cut(char *dst, size_t cap, const char *src, size_t n)
{
	if (n >= cap)
		n = cap - 1;
	memcpy(dst, src, n);
	dst[n] = '\0';
}

int slurmjob_parse_freq(const char *value, double *poll_s)
{
	const char *p = value;
	*poll_s = SLURMJOB_DEFAULT_POLL_S;
	if (!*p)
		return 0;
	/* a bare number is the task poll's period */
	if (!strchr(p, '=')) {
		char *end;
		errno = 0;
		double v = strtod(p, &end);
		if (errno || end == p || *end || !(v >= 0) || !isfinite(v))
			return -EINVAL;
		*poll_s = v;
		return 0;
	}
	while (*p) {
		size_t n = strcspn(p, ",");
		if (n >= 5 && strncasecmp(p, "task=", 5) == 0) {
			char num[32], *end;
			if (n - 5 >= sizeof num)
				return -EINVAL;
			memcpy(num, p + 5, n - 5);
			num[n - 5] = '\0';
			errno = 0;
			double v = strtod(num, &end);
			if (errno || end == num || *end || !(v >= 0) || !isfinite(v))
				return -EINVAL;
			*poll_s = v;
		} else if (!memchr(p, '=', n)) {
			return -EINVAL; /* "task=1,5": a list item without a kind */
		}
		p += n;
		if (*p == ',')
			p++;
	}
	return 0;
}

/* key[0..kl) is `name`, in any case, as Slurm reads its keys. */
static int key_is(const char *key, size_t kl, const char *name)
{
	return kl == strlen(name) && strncasecmp(key, name, kl) == 0;
}

/* One KEY=VALUE of slurm.conf. */
static void conf_pair(const char *key, size_t kl, const char *val, size_t vl, struct slurm_job *out,
		      int *freq_seen)
{
	/* quotes around a value are Slurm's too */
	if (vl >= 2 && val[0] == '"' && val[vl - 1] == '"') {
		val++;
		vl -= 2;
	}
	if (key_is(key, kl, "JobAcctGatherType")) {
		/* "jobacct_gather/cgroup": the plugin's own name */
		const char *slash = memchr(val, '/', vl);
		if (slash) {
			vl -= (size_t)(slash + 1 - val);
			val = slash + 1;
		}
		copy_cut(out->gather, sizeof out->gather, val, vl);
	} else if (key_is(key, kl, "JobAcctGatherFrequency")) {
		char v[128];
		double s;
		copy_cut(v, sizeof v, val, vl);
		if (vl < sizeof v && slurmjob_parse_freq(v, &s) == 0) {
			out->poll_s = s;
			*freq_seen = 1;
		}
	}
}

void slurmjob_parse_conf(const char *text, size_t len, struct slurm_job *out)
{
	const char *p = text, *end = text + len;
	int freq_seen = 0;
	strcpy(out->gather, "none");
	out->poll_s = SLURMJOB_DEFAULT_POLL_S;
	while (p < end) {
		const char *eol = memchr(p, '\n', (size_t)(end - p));
		if (!eol)
			eol = end;
		const char *hash = memchr(p, '#', (size_t)(eol - p));
		const char *stop = hash ? hash : eol;
		/* the line's words, each KEY=VALUE */
		while (p < stop) {
			while (p < stop && (*p == ' ' || *p == '\t' || *p == '\r'))
				p++;
			const char *w = p;
			while (p < stop && *p != ' ' && *p != '\t' && *p != '\r')
				p++;
			const char *eq = memchr(w, '=', (size_t)(p - w));
			if (eq && eq > w)
				conf_pair(w, (size_t)(eq - w), eq + 1, (size_t)(p - eq - 1), out, &freq_seen);
		}
		p = eol + 1;
	}
	out->poll_from = freq_seen ? "slurm.conf" : "default";
}

/* The whole of `path` into a new buffer (NUL-terminated), at most
 * SLURMJOB_MAX_CONF_BYTES.  0 or -errno (-EFBIG: too large). */
static int read_conf(const char *path, char **text, size_t *len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	if (fd < 0)
		return -errno;
	struct stat st;
	int e = fstat(fd, &st) < 0 ? errno : S_ISDIR(st.st_mode) ? EISDIR : !S_ISREG(st.st_mode) ? EINVAL
		: st.st_size > (off_t)SLURMJOB_MAX_CONF_BYTES ? EFBIG : 0;
	if (e) {
		close(fd);
		return -e;
	}
	/* a byte more than it says: a file that grew past the bound is seen */
	size_t cap = (size_t)st.st_size + 1, n = 0;
	char *buf = malloc(cap + 1);
	if (!buf) {
		close(fd);
		return -ENOMEM;
	}
	for (;;) {
		ssize_t r = read(fd, buf + n, cap - n);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			e = errno;
			free(buf);
			close(fd);
			return -e;
		}
		if (r == 0)
			break;
		n += (size_t)r;
		if (n == cap) { /* it grew as it was read: read no more of it */
			free(buf);
			close(fd);
			return -EAGAIN;
		}
	}
	close(fd);
	buf[n] = '\0';
	*text = buf;
	*len = n;
	return 0;
}

int slurmjob_detect(struct slurm_job *out, char *const *envp)
{
	memset(out, 0, sizeof *out);
	const char *job = spawn_env_get(envp, "SLURM_JOB_ID");
	if (!job || !*job)
		return 0;
	copy_cut(out->job_id, sizeof out->job_id, job, strlen(job));
	const char *step = spawn_env_get(envp, "SLURM_STEP_ID");
	if (step)
		copy_cut(out->step_id, sizeof out->step_id, step, strlen(step));
	const char *conf = spawn_env_get(envp, "SLURM_CONF");
	if (!conf || !*conf)
		conf = SLURMJOB_DEFAULT_CONF;
	copy_cut(out->conf, sizeof out->conf, conf, strlen(conf));
	char *text = NULL;
	size_t len = 0;
	int rc = read_conf(out->conf, &text, &len);
	if (rc == 0) {
		slurmjob_parse_conf(text, len, out);
		free(text);
	} else {
		out->conf_error = -rc;
		out->gather[0] = '\0';
		out->poll_s = SLURMJOB_DEFAULT_POLL_S;
		out->poll_from = "default";
	}
	/* srun --acctg-freq and sbatch's: the job's own period */
	const char *freq = spawn_env_get(envp, "SLURM_ACCTG_FREQ");
	double s;
	if (freq && *freq && slurmjob_parse_freq(freq, &s) == 0) {
		out->poll_s = s;
		out->poll_from = "SLURM_ACCTG_FREQ";
	}
	MT_ASSERT(out->poll_from != NULL);
	return 0;
}
