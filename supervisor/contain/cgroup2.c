/* cgroup2.c: the pure cgroup v2 backend (see contain.h): the run's cgroup
 * made in memsup's own, which must be writable -- memsup runs as root, or
 * in a delegated subtree (systemd-run --user --scope -p Delegate=yes).
 *
 * The memory and pids controllers reach the run's cgroup only when memsup's
 * own cgroup enables them for its children (cgroup.subtree_control).  When
 * they are available but not enabled, memsup enables them -- which cgroup
 * v2 refuses (EBUSY) while that cgroup holds processes, its "no internal
 * processes" rule.  In a delegated scope memsup is usually the only one:
 * then memsup moves itself into a leaf of its own, memsup-PID-sup, beside
 * the run's memsup-PID-run, and enables them.  Everything is undone at the
 * end (contain_close): the controllers disabled again, memsup moved back,
 * the leaf removed.  When other processes share memsup's cgroup the run
 * goes without those controllers, and the record says why. */
#include "contain/cgroup.h"
#include "base/procfs.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static const char *const wanted[] = { "memory", "pids" };

/* Does own/cgroup.procs hold memsup alone? */
static int alone_in(int ownfd, pid_t self)
{
	char buf[256];
	size_t len;
	pid_t p[2];
	if (cgroup_read(ownfd, "cgroup.procs", buf, sizeof buf, &len) < 0)
		return 0;
	return cgroup_parse_procs(buf, len, p, 2) == 1 && p[0] == self;
}

/* Enable what the run needs of memory and pids in own's subtree_control,
 * moving memsup into its own leaf when that is the only way. */
static void enable_controllers(struct cgrun *r, int ownfd, struct contain_info *info)
{
	char avail[1024], enabled[1024], text[64] = "";
	size_t alen = 0, elen = 0;
	if (cgroup_read(ownfd, "cgroup.controllers", avail, sizeof avail, &alen) < 0)
		alen = 0;
	if (cgroup_read(ownfd, "cgroup.subtree_control", enabled, sizeof enabled, &elen) < 0)
		elen = 0;
	for (size_t i = 0; i < sizeof wanted / sizeof wanted[0]; i++) {
		if (cgroup_has_word(enabled, elen, wanted[i]))
			continue;
		if (!cgroup_has_word(avail, alen, wanted[i])) {
			contain_missing(info, "%s controller: not available to %s (not in its "
					"cgroup.controllers: the parent does not delegate it)",
					wanted[i], r->layout.own[CG_V2]);
			continue;
		}
		snprintf(text + strlen(text), sizeof text - strlen(text), "%s+%s", text[0] ? " " : "",
			 wanted[i]);
	}
	if (!text[0])
		return;
	int rc = cgroup_write(ownfd, "cgroup.subtree_control", text);
	if (rc == -EBUSY && !r->layout.own_is_root[CG_V2] && alone_in(ownfd, r->self) &&
	    cgroup_make(r, r->layout.own[CG_V2], "sup", &r->sup) == 0) {
		char pid[32];
		snprintf(pid, sizeof pid, "%d", (int)r->self);
		if (cgroup_write(r->sup.fd, "cgroup.procs", pid) == 0)
			rc = cgroup_write(ownfd, "cgroup.subtree_control", text);
		if (rc < 0) /* back where it was; the leaf goes at close */
			cgroup_write(ownfd, "cgroup.procs", "0");
	}
	if (rc == 0) {
		snprintf(r->enabled, sizeof r->enabled, "%s", text);
		return;
	}
	contain_missing(info, "%s: cannot enable them for the run in %s/cgroup.subtree_control: "
			"%s%s", text, r->layout.own[CG_V2], strerror(-rc),
			rc == -EBUSY ? " (other processes share memsup's cgroup: cgroup v2 enables "
				       "controllers only for a cgroup without processes of its own)"
				     : "");
}

/* Undo enable_controllers: the caller (memsup, or its sentinel) back in
 * memsup's own cgroup, the controllers as they were, the leaf removed. */
static void undo_controllers(struct cgrun *r)
{
	int ownfd = open(r->layout.own[CG_V2], O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (ownfd < 0)
		return;
	if (r->enabled[0]) {
		/* "+memory +pids" becomes "-memory -pids" */
		char off[64];
		snprintf(off, sizeof off, "%s", r->enabled);
		for (char *p = off; *p; p++)
			if (*p == '+')
				*p = '-';
		if (cgroup_write(ownfd, "cgroup.subtree_control", off) == 0)
			r->enabled[0] = '\0';
	}
	if (r->sup.made) {
		cgroup_write(ownfd, "cgroup.procs", "0");
		if (rmdir(r->sup.path) == 0)
			r->sup.made = 0;
	}
	close(ownfd);
}

static void cgroup2_close(struct contain *c)
{
	struct cgrun *r = (struct cgrun *)c;
	if (!r->premade)
		undo_controllers(r);
	cgroup_run_close(c);
}

static int cgroup2_open(struct contain **out, const struct contain_config *cfg,
			struct contain_info *info)
{
	struct cgrun *r;
	int rc = cgroup_run_begin(&r, &contain_cgroup2_ops, cfg, 1u << CG_LAYOUT_V2);
	if (rc < 0)
		return rc;
	r->v2_files = 1;
	info->mode = "cgroup2";
	const char *own = r->layout.own[CG_V2];
	int ownfd = open(own, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (ownfd < 0 || (!cfg->premade && access(own, W_OK) < 0)) {
		rc = -errno;
		contain_missing(info, "cgroup v2: cannot make a cgroup in %s: %s", own,
				strerror(-rc));
		if (ownfd >= 0)
			close(ownfd);
		cgroup_run_close(&r->base);
		return rc;
	}
	if (!cfg->premade)
		cgroup_sweep_stale(own, cfg->self);
	enable_controllers(r, ownfd, info);
	close(ownfd);
	rc = cgroup_make(r, own, "run", &r->dir[CG_V2]);
	if (rc < 0) {
		contain_missing(info, "cgroup v2: cannot make a cgroup in %s: %s", own,
				strerror(-rc));
		cgroup2_close(&r->base);
		return rc;
	}
	return cgroup_run_end(r, cfg, info, out);
}

const struct contain_ops contain_cgroup2_ops = CGROUP_RUN_OPS(cgroup2_open, cgroup2_close);
