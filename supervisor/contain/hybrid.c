/* hybrid.c: the hybrid layout's backend (see contain.h): cgroup v2's
 * unified hierarchy at /sys/fs/cgroup/unified -- with no controller, but
 * with cgroup.procs, cgroup.kill, cgroup.freeze and cgroup.events -- beside
 * the v1 memory, pids and freezer hierarchies, as systemd sets up older
 * hosts (and this project's test machines).
 *
 * The run gets a cgroup in each: the v2 one lists the members, holds the
 * command from its start (spawn.c) and kills the tree at once
 * (cgroup.kill); the v1 memory one gives the kernel's figures and
 * --mem-max; the v1 pids one --max-procs; the v1 freezer kills where
 * cgroup.kill is missing.  Only the v2 one is required: without it the v1
 * backend (cgroup1.c) is tried. */
#include "contain/cgroup.h"

#include <errno.h>
#include <string.h>

static int hybrid_open(struct contain **out, const struct contain_config *cfg,
		       struct contain_info *info)
{
	struct cgrun *r;
	int rc = cgroup_run_begin(&r, &contain_hybrid_ops, cfg, 1u << CG_LAYOUT_HYBRID);
	if (rc < 0)
		return rc;
	const char *own = r->layout.own[CG_V2];
	info->mode = "hybrid";
	if (!cfg->premade)
		cgroup_sweep_stale(own, cfg->self);
	rc = cgroup_make(r, own, "run", &r->dir[CG_V2]);
	if (rc < 0) {
		contain_missing(info, "cgroup v2 (the unified hierarchy): cannot make a cgroup "
				"in %s: %s", own, strerror(-rc));
		cgroup_run_close(&r->base);
		return rc;
	}
	cgroup_make_v1(r, info);
	return cgroup_run_end(r, cfg, info, out);
}

const struct contain_ops contain_hybrid_ops = CGROUP_RUN_OPS(hybrid_open, cgroup_run_close);
