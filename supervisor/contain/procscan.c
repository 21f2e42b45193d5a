/* procscan.c: the /proc scan, the containment backend that needs nothing
 * but /proc (see contain.h).
 *
 * The tree is memsup's descendants, found by tree.c (a ppid scan of /proc,
 * or the children files with --discovery children).  memsup must be a
 * child subreaper (run.c makes it one) so that orphans and setsid()
 * escapees stay in the tree.  The command is simply forked: being memsup's
 * child is all it takes to be inside. */
#include "contain/contain.h"
#include "contain/spawn.h"
#include "contain/tree.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

struct procscan {
	struct contain base;       /* first: a struct contain * is one of these */
	struct tree *tree;
	pid_t *pids;               /* the last listing (contain_members) */
	size_t pids_cap;
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

static int procscan_open(struct contain **out, const struct contain_config *cfg)
{
	struct procscan *p = calloc(1, sizeof *p);
	if (!p)
		return -ENOMEM;
	p->base.ops = &contain_procscan_ops;
	int rc = tree_open(&p->tree, cfg->proc_root, cfg->self, cfg->discovery);
	if (rc < 0) {
		free(p);
		return rc;
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

/* A fresh listing.  Out of memory for a longer one, the first pids_cap are
 * given: the rest are killed on a later round. */
static int procscan_members(struct contain *c, const pid_t **pids, size_t *n)
{
	struct procscan *p = of(c);
	int rc = tree_update(p->tree);
	if (rc < 0)
		return rc;
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
	return tree_sample(of(c)->tree, rss, nprocs);
}

static size_t procscan_sampled(const struct contain *c, const struct tree_member **out)
{
	return tree_sampled(of_const(c)->tree, out);
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
	.kill = NULL, /* the generic one: list, kill, until empty */
};
