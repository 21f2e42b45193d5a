/* oomlimit.c: which limit an OOM kill came from (see oomlimit.h). */
#include "contain/oomlimit.h"
#include "contain/cgroup.h"
#include "base/procfs.h"
#include "invariant.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

/* v1's "no limit": PAGE_COUNTER_MAX pages, whatever the page size, is far
 * above any memory a machine has; anything from 2^62 up reads as none. */
#define V1_UNLIMITED (1ull << 62)
/* a v1 level whose peak came this close to its limit reached it */
#define V1_AT_LIMIT_PCT 2u

const char *oomlimit_by_name(enum oom_by by)
{
	static const char *const names[OOM_BY_COUNT] = {
		[OOM_BY_UNKNOWN] = "unknown", [OOM_BY_RUN] = "run", [OOM_BY_INSIDE] = "inside",
		[OOM_BY_ABOVE] = "above", [OOM_BY_MACHINE] = "machine",
	};
	return (unsigned)by < OOM_BY_COUNT ? names[by] : "unknown";
}

static int read_text(const char *dir, const char *name, char *buf, size_t cap, size_t *len)
{
	char path[PATH_MAX + 64];
	if (snprintf(path, sizeof path, "%s/%s", dir, name) >= (int)sizeof path)
		return -ENAMETOOLONG;
	return procfs_read_file(path, buf, cap, len);
}

/* The counter that moves when this level's own limit refuses (oomlimit.h). */
static int read_counter(const struct oomlimit *o, const char *dir, uint64_t *out)
{
	char buf[1024];
	size_t len;
	if (o->v2) {
		if (read_text(dir, "memory.events.local", buf, sizeof buf, &len) < 0 &&
		    read_text(dir, "memory.events", buf, sizeof buf, &len) < 0)
			return -ENOENT;
		return cgroup_parse_key(buf, len, "oom", out);
	}
	uint64_t v = 0, sw = 0;
	if (read_text(dir, "memory.failcnt", buf, sizeof buf, &len) < 0 ||
	    cgroup_parse_u64(buf, len, &v) < 0)
		return -ENOENT;
	if (read_text(dir, "memory.memsw.failcnt", buf, sizeof buf, &len) == 0 &&
	    cgroup_parse_u64(buf, len, &sw) == 0)
		v += sw;
	*out = v;
	return 0;
}

static int read_limit_at(const struct oomlimit *o, const char *dir, uint64_t *limit)
{
	char buf[64];
	size_t len;
	int rc = read_text(dir, o->v2 ? "memory.max" : "memory.limit_in_bytes", buf, sizeof buf,
			   &len);
	if (rc == 0)
		rc = cgroup_parse_u64(buf, len, limit);
	if (rc == 0 && !o->v2 && *limit >= V1_UNLIMITED)
		*limit = UINT64_MAX;
	return rc;
}

static int read_vmstat(const struct oomlimit *o, uint64_t *out)
{
	char buf[16384];
	size_t len;
	if (procfs_read_file(o->vmstat_path, buf, sizeof buf, &len) < 0)
		return -ENOENT;
	return cgroup_parse_key(buf, len, "oom_kill", out);
}

/* The hierarchy's root: the highest directory above `dir` on the same
 * file system (a cgroupfs mount's parent is another file system's). */
static int find_mount(const char *dir, char *out, size_t cap)
{
	struct stat st, up;
	if (stat(dir, &st) < 0)
		return -errno;
	if (snprintf(out, cap, "%s", dir) >= (int)cap)
		return -ENAMETOOLONG;
	for (;;) {
		char *slash = strrchr(out, '/');
		if (!slash || slash == out)
			return 0; /* "/": the whole tree is one file system */
		*slash = '\0';
		if (stat(out, &up) < 0 || up.st_dev != st.st_dev) {
			*slash = '/';
			return 0;
		}
	}
}

int oomlimit_open(struct oomlimit *o, const char *run_dir, int v2, const char *vmstat_path)
{
	memset(o, 0, sizeof *o);
	o->v2 = v2;
	o->vmstat_path = vmstat_path ? vmstat_path : "/proc/vmstat";
	int rc = find_mount(run_dir, o->mount, sizeof o->mount);
	if (rc < 0)
		return rc;
	size_t ml = strlen(o->mount);
	/* the run's level, then each parent up to (not including) the root,
	 * whose limit is the machine's */
	char dir[PATH_MAX];
	snprintf(dir, sizeof dir, "%s", run_dir);
	while (o->n <= OOMLIMIT_LEVELS && strlen(dir) > ml) {
		struct oomlimit_level *l = &o->lvl[o->n++];
		snprintf(l->path, sizeof l->path, "%s", dir);
		l->have = read_counter(o, dir, &l->base) == 0;
		char *slash = strrchr(dir, '/');
		if (!slash || (size_t)(slash - dir) < ml)
			break;
		*slash = '\0';
	}
	o->have_vmstat = read_vmstat(o, &o->vmstat_base) == 0;
	return 0;
}

void oomlimit_which(struct oomlimit *o, struct oomlimit_answer *a)
{
	memset(a, 0, sizeof *a);
	a->by = OOM_BY_UNKNOWN;
	size_t at = 0;
	int n = 0;
	for (size_t i = 0; i < o->n; i++) {
		struct oomlimit_level *l = &o->lvl[i];
		uint64_t now, limit;
		if (!l->have || read_counter(o, l->path, &now) < 0 || now <= l->base)
			continue;
		/* a level whose counter moved without a limit of its own is
		 * counting for one below it (v2 without .local) */
		if (read_limit_at(o, l->path, &limit) < 0 || limit == UINT64_MAX)
			continue;
		a->by = i == 0 ? OOM_BY_RUN : OOM_BY_ABOVE;
		snprintf(a->cgroup, sizeof a->cgroup, "%s", l->path + strlen(o->mount));
		if (!a->cgroup[0])
			snprintf(a->cgroup, sizeof a->cgroup, "/");
		a->have_limit = 1;
		a->limit = limit;
		n = snprintf(a->evidence, sizeof a->evidence, "%s %s rose from %llu to %llu",
			     l->path, o->v2 ? "memory.events \"oom\"" : "memory.failcnt",
			     (unsigned long long)l->base, (unsigned long long)now);
		l->base = now;
		at = i + 1;
		break;
	}
	/* v1 from Linux 6.15 keeps no failcnt for memory+swap, where a
	 * charge at equal limits fails first: no counter moves.  The level
	 * whose usage peaked at its limit (within V1_AT_LIMIT_PCT) is the one
	 * that was reached -- at this kill or before it: weaker evidence,
	 * said as such */
	for (size_t i = 0; !at && !o->v2 && i < o->n; i++) {
		struct oomlimit_level *l = &o->lvl[i];
		char buf[64];
		size_t len;
		uint64_t peak, limit;
		if (read_limit_at(o, l->path, &limit) < 0 || limit == UINT64_MAX ||
		    read_text(l->path, "memory.max_usage_in_bytes", buf, sizeof buf, &len) < 0 ||
		    cgroup_parse_u64(buf, len, &peak) < 0 ||
		    peak < limit - limit / 100 * V1_AT_LIMIT_PCT)
			continue;
		a->by = i == 0 ? OOM_BY_RUN : OOM_BY_ABOVE;
		snprintf(a->cgroup, sizeof a->cgroup, "%s", l->path + strlen(o->mount));
		a->have_limit = 1;
		a->limit = limit;
		n = snprintf(a->evidence, sizeof a->evidence, "no failcnt rose (v1), and %s "
			     "peaked at %llu bytes, at its limit of %llu", l->path,
			     (unsigned long long)peak, (unsigned long long)limit);
		at = i + 1;
	}
	uint64_t vm;
	if (o->have_vmstat && read_vmstat(o, &vm) == 0 && vm > o->vmstat_base) {
		if (!at) {
			a->by = OOM_BY_MACHINE;
			n = snprintf(a->evidence, sizeof a->evidence,
				     "no cgroup's limit counter rose from the run's up; the "
				     "machine's oom_kill (/proc/vmstat) rose from %llu to %llu",
				     (unsigned long long)o->vmstat_base, (unsigned long long)vm);
		}
		o->vmstat_base = vm;
	}
	if (!a->evidence[0])
		snprintf(a->evidence, sizeof a->evidence, "no limit counter rose, from the run's "
			 "cgroup up, nor the machine's oom_kill");
	(void)n;
}

enum oomrel oomlimit_relation(const struct oomlimit *o, const char *kernel_path,
			      const char *task_memcg, char *view_path, size_t cap)
{
	if (view_path && cap)
		view_path[0] = '\0';
	if (!o->n || !kernel_path || !kernel_path[0])
		return OOMREL_UNRELATED;
	const char *view = o->lvl[0].path + strlen(o->mount); /* "/a/b/memsup-1-run" */
	size_t vl = strlen(view);
	if (!vl)
		return OOMREL_UNRELATED;
	/* the namespace's part: task_memcg is prefix + view [+ "/..."] */
	size_t pl = 0;
	const char *t = task_memcg ? task_memcg : kernel_path;
	const char *hit = NULL;
	for (const char *p = strstr(t, view); p; p = strstr(p + 1, view))
		if (p[vl] == '\0' || p[vl] == '/')
			hit = p; /* the last: a prefix may repeat the view's names */
	if (!hit)
		return OOMREL_UNRELATED;
	pl = (size_t)(hit - t);
	if (strncmp(kernel_path, t, pl) != 0) {
		/* above memsup's namespace: only a prefix of it */
		size_t kl = strlen(kernel_path);
		if (kl < pl && strncmp(t, kernel_path, kl) == 0 && (t[kl] == '/' || kl == 1))
			return OOMREL_ABOVE;
		return OOMREL_UNRELATED;
	}
	const char *k = kernel_path + pl; /* memsup's view of it */
	size_t kl = strlen(k);
	if (kl >= vl && memcmp(k, view, vl) == 0 && (k[vl] == '\0' || k[vl] == '/')) {
		if (view_path)
			snprintf(view_path, cap, "%s", k);
		return kl == vl ? OOMREL_RUN : OOMREL_INSIDE;
	}
	if (kl == 0 || (kl < vl && memcmp(k, view, kl) == 0 && view[kl] == '/')) {
		if (view_path)
			snprintf(view_path, cap, "%s", kl ? k : "/");
		return OOMREL_ABOVE;
	}
	return OOMREL_UNRELATED;
}

int oomlimit_read_limit(const struct oomlimit *o, const char *view_path, uint64_t *limit)
{
	char dir[PATH_MAX];
	if (!view_path || view_path[0] != '/' ||
	    snprintf(dir, sizeof dir, "%s%s", o->mount, strcmp(view_path, "/") ? view_path : "") >=
		    (int)sizeof dir)
		return -EINVAL;
	return read_limit_at(o, dir, limit);
}
