/* hybrid.c: the hybrid layout's backend (see contain.h): cgroup v2's
 * unified hierarchy at /sys/fs/cgroup/unified -- with no controller, but
 * with cgroup.procs, cgroup.kill, cgroup.freeze and cgroup.events -- beside
 * the v1 memory, pids and freezer hierarchies, as systemd sets up older
 * hosts (and this project's test machines).
 *
 * The run gets a cgroup in each: the v2 one lists the members, starts the
 * command (clone3 into it) and kills the tree at once (cgroup.kill); the
 * v1 memory one gives the kernel's figures and --mem-max; the v1 pids one
 * --max-procs; the v1 freezer kills where cgroup.kill is missing.  Only
 * the v2 one is required: without it the v1 backend (cgroup1.c) is tried. */
#include "contain/cgroup.h"

#include <errno.h>
#include <string.h>

static int hybrid_open(struct contain **out, const struct contain_config *cfg,
		       struct contain_info *info)
{
	struct cg_layout l;
	int rc = cgroup_layout(cfg->cgroup_root, cfg->proc_root, cfg->self, &l);
	if (rc < 0)
		return rc;
	if (l.kind != CG_LAYOUT_HYBRID)
		return -ENOTSUP;
	struct cgrun *r = cgroup_run_new(&contain_hybrid_ops, cfg, &l);
	if (!r)
		return -ENOMEM;
	info->mode = "hybrid";
	if (!cfg->premade)
		cgroup_sweep_stale(l.own[CG_V2], cfg->self);
	rc = cgroup_make(r, l.own[CG_V2], "run", &r->dir[CG_V2]);
	if (rc < 0) {
		contain_missing(info, "cgroup v2 (the unified hierarchy): cannot make a cgroup "
				"in %s: %s", l.own[CG_V2], strerror(-rc));
		cgroup_run_close(&r->base);
		return rc;
	}
	cgroup_make_v1(r, info);
	if ((rc = cgroup_setup(r, cfg, info)) < 0) {
		cgroup_run_finish(&r->base);
		cgroup_run_close(&r->base);
		return rc;
	}
	*out = &r->base;
	return 0;
}

const struct contain_ops contain_hybrid_ops = {
	.open = hybrid_open,
	.close = cgroup_run_close,
	.name = cgroup_run_name,
	.start = cgroup_run_start,
	.members = cgroup_run_members,
	.sample = cgroup_run_sample,
	.sampled = cgroup_run_sampled,
	.poll = cgroup_run_poll,
	.event_fd = cgroup_run_event_fd,
	.figures = cgroup_run_figures,
	.kill_all = cgroup_run_kill_all,
	.finish = cgroup_run_finish,
};
