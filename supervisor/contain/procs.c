/* procs.c: --max-procs without a pids cgroup -- RLIMIT_NPROC for the
 * command where it binds, else memsup's own priority raised so that the
 * scan keeps up (see procs.h). */
#include "contain/procs.h"
#include "base/procfs.h"
#include "invariant.h"

#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* capability bits (linux/capability.h) */
#define CAP_BIT_SYS_ADMIN 21
#define CAP_BIT_SYS_RESOURCE 24
/* the nice memsup asks for when no real-time priority can be had */
#define RAISED_NICE (-10)

const char *procs_by_name(enum procs_by by)
{
	switch (by) {
	case PROCS_BY_PIDS_MAX:
		return "pids.max";
	case PROCS_BY_RLIMIT:
		return "rlimit_nproc";
	case PROCS_BY_SCAN:
		return "scan";
	case PROCS_BY_NONE:
		break;
	}
	return NULL;
}

/* The text after "key" at the start of a line of buf, or NULL. */
static const char *field(const char *buf, size_t len, const char *key)
{
	size_t kl = strlen(key);
	for (const char *p = buf; p && (size_t)(p - buf) + kl <= len;) {
		if (memcmp(p, key, kl) == 0)
			return p + kl;
		p = memchr(p, '\n', len - (size_t)(p - buf));
		if (p)
			p++;
	}
	return NULL;
}

unsigned long procs_parse_status_tasks(const char *buf, size_t len, unsigned long uid)
{
	/* the text is NUL-terminated by the reader; strtoul stops at the
	 * line's end either way */
	const char *u = field(buf, len, "Uid:"), *t = field(buf, len, "Threads:");
	if (!u || !t)
		return 0;
	char *end;
	unsigned long ruid = strtoul(u, &end, 10);
	if (end == u || ruid != uid)
		return 0;
	unsigned long n = strtoul(t, &end, 10);
	return end == t ? 0 : n;
}

/* The uid's tasks; with `owned`, only of processes whose /proc directory
 * the uid owns (its effective uid: a stat, cheaper than reading every
 * status file, which misses only the uid's set-uid processes). */
static unsigned long count_tasks(const char *root, unsigned long uid, int owned)
{
	char path[PATH_MAX], buf[4096];
	size_t len;
	unsigned long n = 0;
	root = root ? root : "/proc";
	DIR *d = opendir(root);
	if (!d)
		return 0;
	for (struct dirent *e; (e = readdir(d)) != NULL;) {
		struct stat st;
		if (e->d_name[0] < '1' || e->d_name[0] > '9')
			continue;
		if (owned && (fstatat(dirfd(d), e->d_name, &st, 0) < 0 || st.st_uid != uid))
			continue;
		snprintf(path, sizeof path, "%s/%s/status", root, e->d_name);
		if (procfs_read_file(path, buf, sizeof buf - 1, &len) < 0)
			continue;
		buf[len] = '\0';
		n += procs_parse_status_tasks(buf, len, uid);
	}
	closedir(d);
	return n;
}

unsigned long procs_count_uid_tasks(const char *root, unsigned long uid)
{
	return count_tasks(root, uid, 0);
}

int procs_uid_at_limit(const struct procs_plan *p, const char *root)
{
	if (p->by != PROCS_BY_RLIMIT)
		return 0;
	return count_tasks(root, (unsigned long)getuid(), 1) >= p->limits.nproc.rlim_cur;
}

int procs_rlimit_binds(const char *root)
{
	char path[PATH_MAX], buf[4096];
	size_t len;
	/* the kernel exempts the root user itself, whatever its capabilities */
	if (getuid() == 0)
		return 0;
	snprintf(path, sizeof path, "%s/self/status", root ? root : "/proc");
	if (procfs_read_file(path, buf, sizeof buf - 1, &len) < 0)
		return 1; /* cannot tell: the rlimit costs nothing to set */
	buf[len] = '\0';
	const char *c = field(buf, len, "CapEff:");
	if (!c)
		return 1;
	unsigned long long caps = strtoull(c, NULL, 16);
	return !(caps & (1ull << CAP_BIT_SYS_RESOURCE)) && !(caps & (1ull << CAP_BIT_SYS_ADMIN));
}

/* memsup above the command's processes: SCHED_FIFO 1, else the lowest
 * nice down to RAISED_NICE.  What it took, or NULL. */
static const char *raise_priority(struct spawn_limits *l)
{
	static char took[32];
	l->policy = sched_getscheduler(0);
	if (l->policy < 0 || sched_getparam(0, &l->param) < 0)
		return NULL;
	errno = 0;
	l->nice = getpriority(PRIO_PROCESS, 0);
	if (errno)
		return NULL;
	if (l->policy == SCHED_FIFO || l->policy == SCHED_RR)
		return "real-time already"; /* higher than anything we would take */
	struct sched_param rt = { .sched_priority = 1 };
	/* EPERM without CAP_SYS_NICE (or an RLIMIT_RTPRIO of 0), and where
	 * the cpu cgroup has no real-time budget */
	if (sched_setscheduler(0, SCHED_FIFO, &rt) == 0) {
		l->reset_sched = 1;
		return "SCHED_FIFO 1";
	}
	for (int nice = RAISED_NICE; nice < l->nice; nice++) {
		if (setpriority(PRIO_PROCESS, 0, nice) == 0) {
			l->reset_sched = 1;
			snprintf(took, sizeof took, "nice %d", nice);
			return took;
		}
	}
	return NULL;
}

void procs_plan_make(struct procs_plan *p, unsigned max_procs, int have_pids, const char *root)
{
	memset(p, 0, sizeof *p);
	if (!max_procs)
		return;
	if (have_pids) {
		/* the kernel holds the count; memsup still has to see the
		 * refusal and end the run, which a bomb of runnable tasks on
		 * refused forks can starve it of (1.4-2 s late in a 2-CPU VM) */
		p->by = PROCS_BY_PIDS_MAX;
		p->priority = raise_priority(&p->limits);
		return;
	}
	struct rlimit cur;
	if (procs_rlimit_binds(root) && getrlimit(RLIMIT_NPROC, &cur) == 0) {
		/* the uid's tasks now, memsup and its sentinel among them, plus
		 * N: the command's tree can have N tasks.  Soft and hard both,
		 * or the command could raise it back; never above what the
		 * user had. */
		p->uid_tasks = procs_count_uid_tasks(root, (unsigned long)getuid());
		rlim_t want = (rlim_t)p->uid_tasks + max_procs;
		if (cur.rlim_max != RLIM_INFINITY && cur.rlim_max < want)
			want = cur.rlim_max;
		p->limits.set_nproc = 1;
		p->limits.nproc.rlim_cur = p->limits.nproc.rlim_max = want;
		p->by = PROCS_BY_RLIMIT;
		snprintf(p->note, sizeof p->note, "--max-procs without a pids cgroup: the "
			 "command's RLIMIT_NPROC is %llu (the %lu tasks uid %lu had at the "
			 "start, plus %u; other processes of that uid share it), and no "
			 "per-process view (PSS, argv), whose reads can wait seconds on a "
			 "forking process",
			 (unsigned long long)want, p->uid_tasks, (unsigned long)getuid(),
			 max_procs);
		return;
	}
	p->by = PROCS_BY_SCAN;
	p->priority = raise_priority(&p->limits);
	/* the command never starts above memsup's old priority */
	MT_ASSERT(!p->limits.reset_sched || p->priority != NULL);
	if (p->priority)
		snprintf(p->note, sizeof p->note, "--max-procs without a pids cgroup, and "
			 "RLIMIT_NPROC does not bind uid %lu: the /proc scan holds it, memsup "
			 "at %s (the command at memsup's own priority), without the "
			 "per-process view (PSS, argv), whose reads can wait seconds on a "
			 "forking process", (unsigned long)getuid(), p->priority);
	else
		snprintf(p->note, sizeof p->note, "--max-procs without a pids cgroup, and "
			 "RLIMIT_NPROC does not bind uid %lu: the /proc scan holds it, at "
			 "memsup's normal priority (no real-time priority or lower nice "
			 "could be had: a fork bomb can starve it), without the per-process "
			 "view (PSS, argv)", (unsigned long)getuid());
}
