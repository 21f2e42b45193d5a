/* cgroup1.c: the cgroup v1 backend (see contain.h): the run's cgroups in
 * the v1 memory, pids and freezer hierarchies, whichever of them memsup
 * may write -- a pure v1 host, or a hybrid one whose unified hierarchy is
 * closed to memsup.
 *
 * The command writes itself into each cgroup.procs before it execs
 * (spawn.c), so it is inside before its first instruction.  Members are
 * listed from the first hierarchy of pids, memory, freezer; killing
 * freezes the freezer cgroup, SIGKILLs every member and thaws it (without
 * a freezer: the SIGSTOP sweeps). */
#include "contain/cgroup.h"

#include <errno.h>

static int cgroup1_open(struct contain **out, const struct contain_config *cfg,
			struct contain_info *info)
{
	struct cgrun *r;
	int rc = cgroup_run_begin(&r, &contain_cgroup1_ops, cfg,
				  1u << CG_LAYOUT_V1 | 1u << CG_LAYOUT_HYBRID);
	if (rc < 0)
		return rc;
	info->mode = "cgroup1";
	rc = cgroup_make_v1(r, info);
	if (rc <= 0) {
		cgroup_run_close(&r->base);
		return rc < 0 ? rc : -ENOENT; /* 0: no v1 hierarchy holds memsup */
	}
	return cgroup_run_end(r, cfg, info, out);
}

const struct contain_ops contain_cgroup1_ops = CGROUP_RUN_OPS(cgroup1_open, cgroup_run_close);
