/* contain.c: the containment interface's dispatch -- which backend, and
 * the fallback to the /proc scan with the reasons -- and what every
 * backend shares: the kill loop, and the sentinel's abandon (see
 * contain.h).
 *
 * Killing lists right before every round, so that pids are as fresh as
 * they can be, and repeats until a listing comes back empty: without an
 * atomic kill a member may fork between our listing and its SIGKILL (its
 * orphans then come to memsup, the subreaper, and into the next listing).
 * SIGSTOP first closes that gap: a stopped process forks no more, so
 * stopping until a listing finds no one new, then killing, leaves nothing
 * behind even against a fork bomb. */
#include "contain/contain.h"
#include "base/procfs.h"
#include "contain/cgroup.h"
#include "contain/scope.h"
#include "invariant.h"
#include "base/pidmap.h"
#include "base/clock.h"
#include "base/debug.h"

#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define NS_PER_S 1000000000ull
/* SIGSTOP passes before giving up on a listing that keeps growing (each
 * pass stops everything it lists, so only processes born during the pass
 * can be new) */
#define STOP_PASSES 64

void contain_missing(struct contain_info *info, const char *fmt, ...)
{
	MT_ASSERT(info->n_missing <= CONTAIN_MAX_MISSING);
	if (info->n_missing >= CONTAIN_MAX_MISSING)
		return;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(info->missing[info->n_missing++], CONTAIN_MISSING_BYTES, fmt, ap);
	va_end(ap);
}

/* ---- which backend -------------------------------------------------------- */

/* The cgroup backends to try for a layout, best first. */
static size_t backends_for(enum cg_layout_kind kind, const struct contain_ops **out)
{
	switch (kind) {
	case CG_LAYOUT_V2:
		out[0] = &contain_cgroup2_ops;
		return 1;
	case CG_LAYOUT_HYBRID:
		/* the unified hierarchy may be closed to us where v1 is not */
		out[0] = &contain_hybrid_ops;
		out[1] = &contain_cgroup1_ops;
		return 2;
	case CG_LAYOUT_V1:
		out[0] = &contain_cgroup1_ops;
		return 1;
	case CG_LAYOUT_NONE:
		break;
	}
	return 0;
}

/* What would give a user without root a cgroup of the run's own, for the
 * summary's fallback line: systemd's delegation where systemd runs (it
 * says so by /run/systemd/system, as sd_booted() checks), else what root
 * must do.  `err` is why the cgroup could not be made (0: unknown): a
 * hierarchy mounted read-only (EROFS) is no question of rights, and root
 * is told nothing about becoming root. */
static const char *hint_for(enum cg_layout_kind kind, int err)
{
	if (err == -EROFS)
		return "the cgroup file system is mounted read-only here (a container's usually "
		       "is): mount it read-write, or give the container a cgroup namespace of "
		       "its own with a writable cgroup";
	if (geteuid() == 0 && kind != CG_LAYOUT_NONE)
		return NULL; /* rights are not what is missing: containment.missing says */
	int systemd = access("/run/systemd/system", F_OK) == 0;
	switch (kind) {
	case CG_LAYOUT_V2:
		return systemd ? "systemd-run --user --scope -p Delegate=yes -- memsup ... (a "
				 "delegated cgroup v2 subtree, systemd 244 or later; memory and "
				 "pids as the user manager delegates them)"
			       : "have root delegate a cgroup v2 directory to you (mkdir it; chown "
				 "it, its cgroup.procs, cgroup.subtree_control and cgroup.threads "
				 "to you) and start memsup inside it, or run memsup as root";
	case CG_LAYOUT_HYBRID:
		return systemd ? "systemd-run --user --scope -p Delegate=yes -- memsup ... gives "
				 "a cgroup v2 subtree for membership and killing; the v1 memory "
				 "and pids controllers of this hybrid layout are root's only (sudo "
				 "memsup, or boot with systemd.unified_cgroup_hierarchy=1)"
			       : "run memsup as root: no systemd here to delegate a cgroup, and "
				 "the v1 memory and pids controllers of this hybrid layout are "
				 "root's only";
	case CG_LAYOUT_V1:
		return systemd ? "cgroup v1 is root's only: sudo memsup ..., or boot with "
				 "systemd.unified_cgroup_hierarchy=1 and use systemd-run --user "
				 "--scope -p Delegate=yes -- memsup ..."
			       : "run memsup as root: cgroup v1 is root's only";
	case CG_LAYOUT_NONE:
		break;
	}
	return "mount cgroup2 at /sys/fs/cgroup (a container: run it with a cgroup namespace "
	       "of its own)";
}

/* What asking systemd for a scope did (scope.h), into the record: the
 * unit memsup ran in, or why none was had -- after what the backend found
 * missing, which is the nearer reason.  A run without a memory cgroup gets
 * the hint that would give it one. */
static void copy_str(char *to, const char *from, size_t cap);

static void note_scope(struct contain_info *in, const struct contain_config *cfg,
		       enum cg_layout_kind kind)
{
	const struct scope_outcome *s = cfg->scope;
	if (s && s->moved) {
		copy_str(in->scope, s->unit, sizeof in->scope);
		in->scope_manager = s->manager;
	} else if (s && s->why[0]) {
		contain_missing(in, "systemd scope: %s", s->why);
	}
	if (in->memory || cfg->cgroup != CONTAIN_AUTO)
		return;
	if (s && s->hint)
		in->hint = s->hint;
	else if (!in->hint && kind == CG_LAYOUT_V2 && geteuid() == 0)
		in->hint = "memsup alone in a cgroup whose parent gives it memory and pids: "
			   "systemd-run --scope -p Delegate=yes -- memsup ..., or MEMSUP_DELEGATED=1 "
			   "in a cgroup made for it";
	else if (!in->hint)
		in->hint = hint_for(kind, 0);
}

static int check_mem_max(const struct contain_config *cfg, char *err, size_t errlen)
{
	struct cg_layout l;
	char path[PATH_MAX + 32], buf[1024];
	size_t len;
	if (cfg->cgroup == CONTAIN_OFF) {
		snprintf(err, errlen, "--mem-max: a kernel memory limit needs a cgroup, and "
			 "--cgroup off turns them off");
		return -1;
	}
	int rc = cgroup_layout(cfg->cgroup_root, cfg->proc_root, cfg->self, &l);
	if (rc < 0) {
		snprintf(err, errlen, "--mem-max: cannot tell memsup's cgroups (%s/self/cgroup: "
			 "%s)", cfg->proc_root ? cfg->proc_root : "/proc", strerror(-rc));
		return -1;
	}
	const char *dir = l.kind == CG_LAYOUT_V2 ? l.own[CG_V2] : l.own[CG_MEMORY];
	const struct scope_outcome *s = cfg->scope;
	if (s && !s->moved && s->why[0]) {
		/* memsup's cgroup cannot hold the run's with memory, and no
		 * scope could be had (scope.h) */
		snprintf(err, errlen, "--mem-max: no memory cgroup for the run in %s: %s%s%s; or use "
			 "--rss-mb for a polled budget", dir, s->why, s->hint ? "; try: " : "",
			 s->hint ? s->hint : "");
		return -1;
	}
	if (l.kind == CG_LAYOUT_NONE || !dir[0]) {
		snprintf(err, errlen, "--mem-max: no memory cgroup here (%s); use --rss-mb for "
			 "a polled budget", l.kind == CG_LAYOUT_NONE ? l.why :
			 "no v1 memory controller mounted");
		return -1;
	}
	if (l.kind == CG_LAYOUT_V2) {
		snprintf(path, sizeof path, "%s/cgroup.controllers", dir);
		if (procfs_read_file(path, buf, sizeof buf, &len) < 0 ||
		    !cgroup_has_word(buf, len, "memory")) {
			snprintf(err, errlen, "--mem-max: the memory controller is not available "
				 "to memsup's cgroup %s (its cgroup.controllers); use --rss-mb "
				 "for a polled budget", dir);
			return -1;
		}
	}
	if (!cfg->premade && access(dir, W_OK) < 0) {
		/* saved first: hint_for() looks for systemd, which sets errno */
		int e = errno;
		const char *hint = hint_for(l.kind, -e);
		snprintf(err, errlen, "--mem-max: cannot make a memory cgroup in %s (%s)%s%s; "
			 "or use --rss-mb for a polled budget", dir, strerror(e), hint ? ": " : "",
			 hint ? hint : "");
		return -1;
	}
	return 0;
}

int contain_check(const struct contain_config *cfg, char *err, size_t errlen)
{
	if (contain_procscan_ops.check(cfg, err, errlen) < 0)
		return -1;
	if (cfg->mem_max && check_mem_max(cfg, err, errlen) < 0)
		return -1;
	return 0;
}

/* ---- MEMSUP_DEBUG: the decision said ------------------------------------------ */

/* MEMSUP_DEBUG=1 (or any higher level, debug.h): contain_open says on
 * stderr, one "memsup: debug: containment: ..." line each, which backend it
 * tried, why one was refused, and which it chose (memsup(1), ENVIRONMENT).
 * The record's "containment" keeps only the outcome; these lines are for
 * supporting a run whose choice surprises. */
static void say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void say(const char *fmt, ...)
{
	char line[CONTAIN_MISSING_BYTES + PATH_MAX];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(line, sizeof line, fmt, ap);
	va_end(ap);
	/* one write: lines of a debug run stay whole beside the command's */
	dprintf(2, "memsup: debug: containment: %s\n", line);
}

/* The lines an attempt added to info->missing, from index `from`. */
static void say_missing(const struct contain_info *info, size_t from, const char *who)
{
	for (size_t i = from; i < info->n_missing; i++)
		say("%s: %s", who, info->missing[i]);
}

static const char *backend_name(const struct contain_ops *ops)
{
	return ops == &contain_cgroup2_ops ? "cgroup2"
	       : ops == &contain_hybrid_ops ? "hybrid"
	       : ops == &contain_cgroup1_ops ? "cgroup1" : "procscan";
}

static void say_layout(const struct cg_layout *l)
{
	static const char *const hier[CG_NHIER] = { "v2", "memory", "pids", "freezer" };
	say("layout %s", cgroup_layout_name(l->kind));
	if (l->kind == CG_LAYOUT_NONE)
		say("no cgroup backend for it: %s", l->why);
	for (int h = 0; h < CG_NHIER; h++)
		if (l->own[h][0])
			say("memsup's own %s cgroup: %s%s", hier[h], l->own[h],
			    l->own_is_root[h] ? " (the hierarchy's root)" : "");
}

static void say_chosen(const struct contain *c)
{
	const struct contain_info *in = &c->info;
	say("chose %s (discovery %s): kill by %s, memory cgroup %s, pids cgroup %s", in->mode,
	    contain_name(c), in->kill, in->memory ? "yes" : "no", in->pids ? "yes" : "no");
	for (size_t i = 0; i < in->n_paths; i++)
		say("the run's cgroup: %s", in->paths[i]);
	for (size_t i = 0; i < in->n_missing; i++)
		say("without: %s", in->missing[i]);
	if (in->hint)
		say("hint: %s", in->hint);
}

/* contain.h: an open containment has every operation without a generic
 * stand-in, says what it is for the record, and kept its lists in bounds. */
static void check_opened(const struct contain *c)
{
	MT_ASSERT(c->ops && c->ops->close && c->ops->name && c->ops->start && c->ops->members &&
		  c->ops->sample && c->ops->sampled);
	MT_ASSERT(c->info.mode && c->info.kill && c->info.requested);
	MT_ASSERT(c->info.n_missing <= CONTAIN_MAX_MISSING && c->info.n_paths <= CONTAIN_MAX_PATHS);
	MT_ASSERT(c->n_notes <= CONTAIN_MAX_NOTES && !c->finished);
	(void)c;
}

/* A contain_info is 35 KB, nearly all of it room for paths and reasons of
 * which a run fills a few hundred bytes.  Cleared and copied only as far as
 * its counts say something is there (every reader goes by them), the pages
 * of the rest are never touched: each first touch is a page fault, about
 * 11 us on a VM, and a whole-struct memset and two copies were a tenth of
 * memsup's faults at its start. */
static void info_clear(struct contain_info *in)
{
	in->mode = in->requested = in->kill = in->hint = in->scope_manager = NULL;
	in->scope[0] = '\0';
	in->memory = in->pids = 0;
	in->n_paths = in->n_missing = in->n_left = 0;
	in->memory_path = -1;
	in->memory_v2 = 0;
}

/* A string of at most cap bytes, its NUL included, and nothing past it. */
static void copy_str(char *to, const char *from, size_t cap)
{
	size_t n = strnlen(from, cap - 1);
	memcpy(to, from, n);
	to[n] = '\0';
}

void contain_info_copy(struct contain_info *to, const struct contain_info *from)
{
	to->mode = from->mode;
	to->requested = from->requested;
	to->kill = from->kill;
	to->hint = from->hint;
	copy_str(to->scope, from->scope, sizeof to->scope);
	to->scope_manager = from->scope_manager;
	to->memory = from->memory;
	to->pids = from->pids;
	to->n_paths = from->n_paths;
	to->memory_path = from->memory_path;
	to->memory_v2 = from->memory_v2;
	to->n_missing = from->n_missing;
	to->n_left = from->n_left;
	for (size_t i = 0; i < from->n_paths && i < CONTAIN_MAX_PATHS; i++)
		copy_str(to->paths[i], from->paths[i], PATH_MAX);
	for (size_t i = 0; i < from->n_missing && i < CONTAIN_MAX_MISSING; i++)
		copy_str(to->missing[i], from->missing[i], CONTAIN_MISSING_BYTES);
	for (size_t i = 0; i < from->n_left && i < CONTAIN_MAX_LEFT; i++) {
		copy_str(to->left[i].path, from->left[i].path, PATH_MAX);
		copy_str(to->left[i].why, from->left[i].why, CONTAIN_LEFT_WHY_BYTES);
	}
}

int contain_open(struct contain **out, const struct contain_config *cfg)
{
	struct contain_info info;
	info_clear(&info);
	info.requested = cfg->cgroup == CONTAIN_OFF ? "off" : "auto";
	int debug = memsup_debug_on();
	if (debug)
		say("--cgroup %s%s", info.requested,
		    cfg->cgroup == CONTAIN_OFF ? ": the /proc scan, no cgroup tried" : "");
	if (cfg->cgroup == CONTAIN_AUTO) {
		struct cg_layout l;
		const struct contain_ops *try[2];
		int rc = cgroup_layout(cfg->cgroup_root, cfg->proc_root, cfg->self, &l);
		if (rc < 0)
			contain_missing(&info, "cannot read %s/%d/cgroup: %s",
					cfg->proc_root ? cfg->proc_root : "/proc", (int)cfg->self,
					strerror(-rc));
		else if (l.kind == CG_LAYOUT_NONE)
			contain_missing(&info, "%s", l.why);
		if (debug && rc == 0)
			say_layout(&l);
		else if (debug)
			say_missing(&info, 0, "cannot tell the layout");
		size_t n = rc < 0 ? 0 : backends_for(l.kind, try);
		int why = 0; /* the last backend's error */
		for (size_t i = 0; i < n; i++) {
			struct contain_info attempt;
			contain_info_copy(&attempt, &info);
			size_t before = attempt.n_missing;
			if ((why = try[i]->open(out, cfg, &attempt)) == 0) {
				note_scope(&attempt, cfg, l.kind);
				contain_info_copy(&(*out)->info, &attempt);
				(*out)->proc_root = cfg->proc_root ? cfg->proc_root : "/proc";
				check_opened(*out);
				if (debug)
					say_chosen(*out);
				return 0;
			}
			if (debug) {
				say("%s: refused", backend_name(try[i]));
				say_missing(&attempt, before, backend_name(try[i]));
			}
			/* keep the reasons it failed, for the next or the fallback */
			for (size_t m = info.n_missing; m < attempt.n_missing; m++)
				copy_str(info.missing[m], attempt.missing[m], CONTAIN_MISSING_BYTES);
			info.n_missing = attempt.n_missing;
		}
		info.hint = hint_for(rc < 0 ? CG_LAYOUT_NONE : l.kind, why);
		/* the kernel limit was asked for: no polled stand-in */
		if (cfg->mem_max) {
			if (debug)
				say("no cgroup could be made, and --mem-max needs one: no fallback");
			return -ENOTSUP;
		}
		if (debug)
			say("no cgroup of the run's own: falling back to the /proc scan");
	}
	int rc = contain_procscan_ops.open(out, cfg, &info);
	if (rc < 0) {
		if (debug)
			say("the /proc scan could not start: %s", strerror(-rc));
		return rc;
	}
	info.mode = "procscan";
	info.kill = "stop-and-kill";
	if (cfg->cgroup == CONTAIN_AUTO)
		note_scope(&info, cfg, CG_LAYOUT_NONE);
	contain_info_copy(&(*out)->info, &info);
	(*out)->proc_root = cfg->proc_root ? cfg->proc_root : "/proc";
	check_opened(*out);
	if (debug)
		say_chosen(*out);
	return 0;
}

void contain_close(struct contain *c)
{
	if (!c)
		return;
	if (!c->finished)
		contain_finish(c);
	c->ops->close(c);
}

const char *contain_name(const struct contain *c)
{
	return c->ops->name(c);
}

void contain_note(struct contain *c, const char *note)
{
	MT_ASSERT(c->n_notes <= CONTAIN_MAX_NOTES);
	if (c->n_notes < CONTAIN_MAX_NOTES)
		c->notes[c->n_notes++] = note;
}

size_t contain_notes(const struct contain *c, const char *const **notes)
{
	*notes = c->notes;
	return c->n_notes;
}

const struct contain_info *contain_info(const struct contain *c)
{
	return &c->info;
}

int contain_start(struct contain *c, const struct spawn_request *req, struct spawn_result *res)
{
	return c->ops->start(c, req, res);
}

int contain_members(struct contain *c, const pid_t **pids, size_t *n)
{
	return c->ops->members(c, pids, n);
}

int contain_sample(struct contain *c, uint64_t *rss, unsigned *nprocs)
{
	return c->ops->sample(c, rss, nprocs);
}

size_t contain_sampled(const struct contain *c, const struct tree_member **out)
{
	return c->ops->sampled(c, out);
}

int contain_poll(struct contain *c, struct contain_state *st)
{
	memset(st, 0, sizeof *st);
	return c->ops->poll ? c->ops->poll(c, st) : 0;
}

int contain_event_fd(const struct contain *c, short *events)
{
	*events = 0;
	return c->ops->event_fd ? c->ops->event_fd(c, events) : -1;
}

int contain_watch(struct contain *c, uint64_t low, uint64_t high)
{
	return c->ops->watch ? c->ops->watch(c, low, high) : -ENOTSUP;
}

int contain_below_fd(const struct contain *c)
{
	return c->ops->below_fd ? c->ops->below_fd(c) : -1;
}

void contain_below_told(struct contain *c)
{
	if (c->ops->below_told)
		c->ops->below_told(c);
}

int contain_watch_fd(const struct contain *c)
{
	return c->ops->watch_fd ? c->ops->watch_fd(c) : -1;
}

void contain_unwatch(struct contain *c)
{
	if (c->ops->unwatch)
		c->ops->unwatch(c);
}

const char *contain_unwatchable(const struct contain *c)
{
	if (c->ops->unwatchable)
		return c->ops->unwatchable(c);
	return c->ops->watch ? NULL : "no memory cgroup for the run (the /proc scan): nothing "
				      "tells memsup that the memory moved";
}

int contain_figures(struct contain *c, struct contain_figures *f)
{
	memset(f, 0, sizeof *f);
	return c->ops->figures ? c->ops->figures(c, f) : 0;
}

int contain_finish(struct contain *c)
{
	if (c->finished)
		return 0;
	int rc = c->ops->finish ? c->ops->finish(c) : 0;
	c->finished = rc == 0;
	return rc;
}

/* ---- the generic kill ------------------------------------------------------ */

/* The members now; a listing that fails is an empty one (nothing more can
 * be done about what it would have found). */
static size_t list(struct contain *c, const pid_t **pids)
{
	size_t n;
	return contain_members(c, pids, &n) < 0 ? 0 : n;
}

struct stopped {
	pid_t pid;                 /* first: the pidmap key */
};

struct group {
	pid_t pgrp;                /* first: the pidmap key */
	int own_session;           /* in memsup's session */
};

/* Never a group of memsup's own (or of init's). */
static int group_ok(pid_t g)
{
	return g > 1 && g != getpgrp() && g != getsid(0);
}

/* Without an atomic kill: SIGSTOP every member until a listing finds no
 * one new (a stopped process forks no more), then SIGKILL each of them
 * and each process group they were in -- a group reaches a member that
 * left our listing between two reads.  A group in memsup's own session
 * (the command is a job at memsup's terminal, terminal.h) is killed only
 * when its leader is a member: a member may have joined a group of the
 * shell's there (setpgid), which is not the run's to kill. */
static void stop_and_kill(struct contain *c, const struct contain_waiter *w)
{
	struct pidmap stopped, groups;
	pidmap_init(&stopped, sizeof(struct stopped));
	pidmap_init(&groups, sizeof(struct group));
	for (int pass = 0; pass < STOP_PASSES; pass++) {
		const pid_t *pids;
		size_t n = list(c, &pids), fresh = 0;
		for (size_t i = 0; i < n; i++) {
			int added = 0;
			if (!pidmap_add(&stopped, pids[i], &added) || !added)
				continue;
			fresh++;
			if (w->found)
				w->found(w->ctx, pids[i]);
			kill(pids[i], SIGSTOP);
			struct procfs_stat st;
			struct group *g;
			if (procfs_read_stat(c->proc_root, pids[i], &st) == 0 && group_ok(st.pgrp) &&
			    (g = pidmap_add(&groups, st.pgrp, NULL)) != NULL)
				g->own_session = st.session == getsid(0);
		}
		if (!fresh)
			break;
	}
	for (size_t i = 0; i < stopped.cap; i++) {
		struct stopped *s = pidmap_slot(&stopped, i);
		if (s)
			kill(s->pid, SIGKILL);
	}
	for (size_t i = 0; i < groups.cap; i++) {
		struct group *g = pidmap_slot(&groups, i);
		if (g && (!g->own_session || pidmap_find(&stopped, g->pgrp)))
			kill(-g->pgrp, SIGKILL);
	}
	pidmap_free(&stopped);
	pidmap_free(&groups);
}

/* Can SIGKILL still end this member?  Not while it sleeps in D state (it
 * dies when it wakes), nor when we may not signal it. */
static int killable(const struct contain *c, pid_t pid, char *comm, size_t cap)
{
	struct procfs_stat st;
	if (procfs_read_stat(c->proc_root, pid, &st) < 0)
		return 1; /* gone since the listing */
	snprintf(comm, cap, "%s", st.comm);
	if (st.state == 'D')
		return 0;
	return !(kill(pid, 0) < 0 && errno == EPERM);
}

/* The members left, if none of them can die now: "pid N (comm), ..." into
 * buf, and 1. */
static int all_stuck(struct contain *c, const pid_t *pids, size_t n, char *buf, size_t cap)
{
	size_t o = 0;
	char comm[PROCFS_COMM_BYTES];
	if (buf && cap)
		buf[0] = '\0';
	for (size_t i = 0; i < n; i++) {
		if (killable(c, pids[i], comm, sizeof comm))
			return 0;
		if (buf && o < cap) {
			int k = snprintf(buf + o, cap - o, "%spid %d (%s)", o ? ", " : "",
					 (int)pids[i], comm);
			o += k > 0 ? (size_t)k : 0;
		}
	}
	return 1;
}

int contain_kill(struct contain *c, double grace_s, const struct contain_waiter *w)
{
	const pid_t *pids;
	size_t n;
	if (grace_s > 0) {
		n = list(c, &pids);
		for (size_t i = 0; i < n; i++)
			kill(pids[i], SIGTERM);
		uint64_t end = clock_mono_ns() + (uint64_t)(grace_s * 1e9);
		while (n > 0 && clock_mono_ns() < end && !(w->hurry && w->hurry(w->ctx))) {
			w->wait(w->ctx, 10);
			n = list(c, &pids);
		}
	}
	uint64_t stuck_since = 0;
	while ((n = list(c, &pids)) > 0) {
		int atomic = c->ops->kill_all != NULL;
		if (atomic) {
			for (size_t i = 0; i < n && w->found; i++)
				w->found(w->ctx, pids[i]);
			atomic = c->ops->kill_all(c, pids, n) == 0;
		}
		if (!atomic)
			stop_and_kill(c, w);
		w->wait(w->ctx, 5);
		n = list(c, &pids);
		if (n == 0)
			break;
		/* never give up while one of them can still die */
		if (!all_stuck(c, pids, n, NULL, 0)) {
			stuck_since = 0;
			continue;
		}
		uint64_t now = clock_mono_ns();
		if (!stuck_since)
			stuck_since = now;
		else if (now - stuck_since > KILL_STUCK_S * NS_PER_S) {
			all_stuck(c, pids, n, w->stuck, w->stuck_cap);
			return -EBUSY;
		}
	}
	return 0;
}

/* ---- the sentinel's ---------------------------------------------------------- */

static void sleep_wait(void *ctx, int ms)
{
	(void)ctx;
	struct timespec ts = { 0, (long)ms * 1000000L };
	nanosleep(&ts, NULL);
}

void contain_exclude(struct contain *c, pid_t pid)
{
	if (c->ops->exclude)
		c->ops->exclude(c, pid);
}

int contain_abandon(struct contain *c)
{
	if (c->ops->abandon)
		return c->ops->abandon(c);
	/* the members were memsup's descendants: whoever reaps them now, it
	 * is not us, so the wait only sleeps */
	struct contain_waiter w = { sleep_wait, NULL, NULL, NULL, 0, NULL };
	int rc = contain_kill(c, 0, &w);
	int rf = contain_finish(c);
	return rc < 0 ? rc : rf;
}
