/* procscan.c: the /proc scan, the containment backend that needs nothing
 * but /proc (see contain.h): --cgroup off, and the fallback wherever no
 * cgroup of the run's own can be made.
 *
 * The tree is memsup's descendants, found by tree.c (a ppid scan of /proc,
 * or the children files with --discovery children).  memsup must be a
 * child subreaper (run.c makes it one) so that orphans and setsid()
 * escapees stay in the tree.  The command is simply forked: being memsup's
 * child is all it takes to be inside.
 *
 * Without a cgroup nothing holds the tree together once memsup is gone:
 * its orphans go to init.  So that memsup's sentinel can still find them,
 * each listing is mirrored into a page shared with it (MAP_SHARED, made
 * before the sentinel forks): every member's pid, session and start time.
 * The sentinel then takes as the tree every process that is one of those
 * (same pid AND start time: never a stranger with a recycled number), is
 * in one of their sessions, or descends from one of those. */
#include "contain/contain.h"
#include "base/procfs.h"
#include "contain/spawn.h"
#include "contain/tree.h"
#include "base/pidmap.h"

#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#define KNOWN_MAX 8192u

/* The members as the sentinel will need them (shared with it). */
struct known {
	pid_t memsup_pgrp, memsup_sid; /* never the tree's */
	uint32_t n;                /* valid entries in m[] */
	uint32_t more;             /* members that did not fit */
	struct tree_ident m[KNOWN_MAX];
};

struct procscan {
	struct contain base;       /* first: a struct contain * is one of these */
	struct tree *tree;
	pid_t *pids;               /* the last listing (contain_members) */
	size_t pids_cap;
	const char *proc_root;
	struct known *known;       /* shared; NULL when mmap failed */
	unsigned known_gen;        /* the tree generation mirrored */
};

static struct procscan *of(struct contain *c)
{
	return (struct procscan *)c;
}

static const struct procscan *of_const(const struct contain *c)
{
	return (const struct procscan *)c;
}

static int procscan_check(const struct contain_config *cfg, char *err, size_t errlen)
{
	if (cfg->discovery == TREE_CHILDREN && tree_probe(cfg->proc_root, cfg->self) != TREE_CHILDREN) {
		snprintf(err, errlen, "--discovery: 'children': this kernel has no "
			 "/proc/PID/task/TID/children files (CONFIG_PROC_CHILDREN)");
		return -1;
	}
	return 0;
}

static int procscan_open(struct contain **out, const struct contain_config *cfg,
			 struct contain_info *info)
{
	(void)info;
	struct procscan *p = calloc(1, sizeof *p);
	if (!p)
		return -ENOMEM;
	p->base.ops = &contain_procscan_ops;
	p->proc_root = cfg->proc_root ? cfg->proc_root : "/proc";
	int rc = tree_open(&p->tree, cfg->proc_root, cfg->self, cfg->discovery);
	if (rc < 0) {
		free(p);
		return rc;
	}
	void *k = mmap(NULL, sizeof *p->known, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS,
		       -1, 0);
	if (k == MAP_FAILED) {
		contain_note(&p->base, "no page could be shared with the sentinel: if memsup is "
			     "killed, only the command's own process group is ended");
	} else {
		p->known = k;
		p->known->memsup_pgrp = getpgrp();
		p->known->memsup_sid = getsid(0);
	}
	if (cfg->discovery != TREE_CHILDREN &&
	    tree_probe(cfg->proc_root, cfg->self) != TREE_CHILDREN)
		contain_note(&p->base, "no /proc/PID/task/TID/children files (kernel built "
			     "without CONFIG_PROC_CHILDREN): --discovery children is "
			     "unavailable; the ppid scan ran");
	*out = &p->base;
	return 0;
}

static void procscan_close(struct contain *c)
{
	struct procscan *p = of(c);
	tree_close(p->tree);
	if (p->known)
		munmap(p->known, sizeof *p->known);
	free(p->pids);
	free(p);
}

static const char *procscan_name(const struct contain *c)
{
	return tree_method_name(tree_method_used(of_const(c)->tree));
}

static int procscan_start(struct contain *c, const struct spawn_request *req,
			  struct spawn_result *res)
{
	(void)c;
	return spawn_start(req, res);
}

/* The sentinel's copy of the membership, when it changed. */
static void publish(struct procscan *p)
{
	unsigned gen = tree_generation(p->tree);
	if (!p->known || gen == p->known_gen)
		return;
	size_t n = tree_idents(p->tree, p->known->m, KNOWN_MAX);
	p->known->n = (uint32_t)(n < KNOWN_MAX ? n : KNOWN_MAX);
	p->known->more = (uint32_t)(n - p->known->n);
	p->known_gen = gen;
}

/* A fresh listing.  Out of memory for a longer one, the first pids_cap are
 * given: the rest are killed on a later round. */
static int procscan_members(struct contain *c, const pid_t **pids, size_t *n)
{
	struct procscan *p = of(c);
	int rc = tree_update(p->tree);
	if (rc < 0)
		return rc;
	publish(p);
	size_t m = tree_pids(p->tree, p->pids, p->pids_cap);
	if (m > p->pids_cap) {
		pid_t *np = realloc(p->pids, m * sizeof *np);
		if (np) {
			p->pids = np;
			p->pids_cap = m;
		}
		m = tree_pids(p->tree, p->pids, p->pids_cap);
		if (m > p->pids_cap)
			m = p->pids_cap;
	}
	*pids = p->pids;
	*n = m;
	return 0;
}

static int procscan_sample(struct contain *c, uint64_t *rss, unsigned *nprocs)
{
	struct procscan *p = of(c);
	int rc = tree_sample(p->tree, rss, nprocs);
	publish(p);
	return rc;
}

static size_t procscan_sampled(const struct contain *c, const struct tree_member **out)
{
	return tree_sampled(of_const(c)->tree, out);
}

static void procscan_exclude(struct contain *c, pid_t pid)
{
	tree_exclude(of(c)->tree, pid);
}

/* ---- the sentinel's search ------------------------------------------------- */

struct node {
	pid_t pid;                 /* first: the pidmap key */
	pid_t ppid, pgrp, session;
	int in;                    /* of the tree */
	char state;                /* /proc/PID/stat's */
};

struct mark {
	pid_t pid;                 /* first: the pidmap key (a pid, or a session) */
	uint64_t start;
};

static int dir_pid(const char *name, pid_t *pid)
{
	long v = 0;
	if (*name < '1' || *name > '9')
		return -1;
	for (; *name; name++) {
		if (*name < '0' || *name > '9' || v > 1 << 22)
			return -1;
		v = v * 10 + (*name - '0');
	}
	*pid = (pid_t)v;
	return 0;
}

/* Every live process of the tree now, into *nodes (in = 1): the known
 * members (pid and start time), their sessions, and their descendants. */
static int find_tree(const struct procscan *p, const struct pidmap *members,
		     const struct pidmap *sessions, struct pidmap *nodes)
{
	pidmap_clear(nodes);
	DIR *d = opendir(p->proc_root);
	if (!d)
		return -errno;
	pid_t self = getpid();
	for (struct dirent *e; (e = readdir(d)) != NULL;) {
		pid_t pid;
		struct procfs_stat st;
		if (dir_pid(e->d_name, &pid) < 0 || pid == self || pid == 1 ||
		    procfs_read_stat(p->proc_root, pid, &st) < 0 || st.state == 'Z' || st.state == 'X')
			continue;
		struct node *n = pidmap_add(nodes, pid, NULL);
		if (!n)
			break;
		const struct mark *m = pidmap_find(members, pid);
		n->ppid = st.ppid;
		n->pgrp = st.pgrp;
		n->session = st.session;
		n->state = st.state;
		n->in = (m && m->start == (st.starttime ? st.starttime : 1)) ||
			pidmap_find(sessions, st.session) != NULL;
	}
	closedir(d);
	/* descendants: a child is listed after its parent in most scans, but
	 * not always (pid wrap-around): repeat until nothing changes */
	for (int changed = 1; changed;) {
		changed = 0;
		for (size_t i = 0; i < nodes->cap; i++) {
			struct node *n = pidmap_slot(nodes, i);
			if (!n || n->in)
				continue;
			const struct node *parent = pidmap_find(nodes, n->ppid);
			if (parent && parent->in)
				n->in = changed = 1;
		}
	}
	return 0;
}

static void sleep_ms(int ms)
{
	struct timespec ts = { 0, (long)ms * 1000000L };
	nanosleep(&ts, NULL);
}

/* Without memsup and without a cgroup: stop what can be found of the tree
 * until a search finds no one new, kill it all and its process groups,
 * and search again until nothing is left (or only the unkillable, for
 * KILL_STUCK_S seconds). */
static int procscan_abandon(struct contain *c)
{
	struct procscan *p = of(c);
	struct pidmap members, sessions, nodes, stopped;
	if (!p->known)
		return -ENOENT; /* the command's parent-death signal is all there is */
	pidmap_init(&members, sizeof(struct mark));
	pidmap_init(&sessions, sizeof(struct mark));
	pidmap_init(&nodes, sizeof(struct node));
	pidmap_init(&stopped, sizeof(struct node));
	for (uint32_t i = 0; p->known && i < p->known->n && i < KNOWN_MAX; i++) {
		const struct tree_ident *t = &p->known->m[i];
		struct mark *m = t->start ? pidmap_add(&members, t->pid, NULL) : NULL;
		if (m)
			m->start = t->start;
		if (t->session > 1 && t->session != p->known->memsup_sid)
			pidmap_add(&sessions, t->session, NULL);
	}
	int rc = 0;
	time_t give_up = 0;
	for (;;) {
		if ((rc = find_tree(p, &members, &sessions, &nodes)) < 0)
			break;
		size_t live = 0, fresh = 0, stuck = 0;
		for (size_t i = 0; i < nodes.cap; i++) {
			const struct node *n = pidmap_slot(&nodes, i);
			int added = 0;
			if (!n || !n->in)
				continue;
			live++;
			stuck += n->state == 'D';
			struct node *s = pidmap_add(&stopped, n->pid, &added);
			if (!s)
				continue;
			if (added) {
				*s = *n;
				fresh++;
				kill(n->pid, SIGSTOP);
			}
		}
		if (!live)
			break;
		if (fresh) /* search again: a child may have been born meanwhile */
			continue;
		for (size_t i = 0; i < stopped.cap; i++) {
			const struct node *s = pidmap_slot(&stopped, i);
			if (!s)
				continue;
			kill(s->pid, SIGKILL);
			/* in memsup's session (a job at its terminal), only a
			 * group a member leads: the others there are the shell's */
			if (s->pgrp > 1 && s->pgrp != getpgrp() && s->pgrp != p->known->memsup_pgrp &&
			    s->pgrp != p->known->memsup_sid &&
			    (s->session != p->known->memsup_sid || pidmap_find(&stopped, s->pgrp)))
				kill(-s->pgrp, SIGKILL);
		}
		pidmap_clear(&stopped);
		sleep_ms(5);
		/* never give up while one of them can still die: only when all
		 * that is left has slept in D state for KILL_STUCK_S */
		time_t now = time(NULL);
		if (stuck < live)
			give_up = 0;
		else if (!give_up)
			give_up = now + KILL_STUCK_S;
		else if (now > give_up) {
			rc = -EBUSY;
			break;
		}
	}
	pidmap_free(&members);
	pidmap_free(&sessions);
	pidmap_free(&nodes);
	pidmap_free(&stopped);
	return rc;
}

const struct contain_ops contain_procscan_ops = {
	.check = procscan_check,
	.open = procscan_open,
	.close = procscan_close,
	.name = procscan_name,
	.start = procscan_start,
	.members = procscan_members,
	.sample = procscan_sample,
	.sampled = procscan_sampled,
	.kill_all = NULL, /* no atomic kill: the SIGSTOP sweeps */
	.abandon = procscan_abandon,
	.exclude = procscan_exclude,
};
