/* cgroup1.c: the cgroup v1 backend (see contain.h): the run's cgroups in
 * the v1 memory, pids and freezer hierarchies, whichever of them memsup
 * may write -- a pure v1 host, or a hybrid one whose unified hierarchy is
 * closed to memsup.
 *
 * There is no clone3 into a v1 cgroup: the command writes itself into each
 * cgroup.procs before it execs (spawn.c), so it is inside before its first
 * instruction all the same.  Members are listed from the first hierarchy
 * of pids, memory, freezer; killing freezes the freezer cgroup, SIGKILLs
 * every member and thaws it (without a freezer: the SIGSTOP sweeps). */
#include "contain/cgroup.h"

#include <errno.h>

static int cgroup1_open(struct contain **out, const struct contain_config *cfg,
			struct contain_info *info)
{
	struct cg_layout l;
	int rc = cgroup_layout(cfg->cgroup_root, cfg->proc_root, cfg->self, &l);
	if (rc < 0)
		return rc;
	if (l.kind != CG_LAYOUT_V1 && l.kind != CG_LAYOUT_HYBRID)
		return -ENOTSUP;
	struct cgrun *r = cgroup_run_new(&contain_cgroup1_ops, cfg, &l);
	if (!r)
		return -ENOMEM;
	info->mode = "cgroup1";
	if (cgroup_make_v1(r, info) == 0) {
		cgroup_run_close(&r->base);
		return -ENOENT;
	}
	if ((rc = cgroup_setup(r, cfg, info)) < 0) {
		cgroup_run_finish(&r->base);
		cgroup_run_close(&r->base);
		return rc;
	}
	*out = &r->base;
	return 0;
}

const struct contain_ops contain_cgroup1_ops = {
	.open = cgroup1_open,
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
