/* scope.c: when to ask systemd for a scope of memsup's own, the asking,
 * and the wait until memsup is in it (scope.h). */
#include "contain/scope.h"
#include "base/procfs.h"
#include "contain/cgroup.h"
#include "contain/sdbus.h"
#include "base/debug.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static void why(struct scope_outcome *out, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static void why(struct scope_outcome *out, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(out->why, sizeof out->why, fmt, ap);
	va_end(ap);
	if (memsup_debug_on())
		dprintf(2, "memsup: debug: containment: no scope: %s\n", out->why);
}

static int ends_with(const char *s, const char *tail)
{
	size_t n = strlen(s), k = strlen(tail);
	return n >= k && strcmp(s + n - k, tail) == 0;
}

/* The last component of a path, and the one before it (into parent). */
static const char *last_component(const char *path, char *parent, size_t cap)
{
	const char *slash = strrchr(path, '/');
	const char *last = slash ? slash + 1 : path;
	parent[0] = '\0';
	if (slash && slash > path) {
		const char *p = slash;
		while (p > path && p[-1] != '/')
			p--;
		snprintf(parent, cap, "%.*s", (int)(slash - p), p);
	}
	return last;
}

/* Is a component of the path a memsup run's cgroup (memsup-PID-...)? */
static int inside_memsup(const char *path)
{
	for (const char *p = strstr(path, "/memsup-"); p; p = strstr(p + 1, "/memsup-"))
		if (p[8] >= '0' && p[8] <= '9')
			return 1;
	return 0;
}

/* Could the cgroup2 backend make the run's cgroup with memory and pids in
 * ownfd as it is?  The rules it goes by (cgroup2.c): writable, both
 * controllers available, and either enabled for children already or
 * enabled by memsup -- the root cgroup, or one memsup holds alone. */
static int usable_as_is(const struct cg_layout *l, int ownfd, pid_t self)
{
	char avail[1024], on[1024], procs[256];
	size_t alen, olen, plen;
	if (faccessat(ownfd, ".", W_OK, AT_EACCESS) < 0)
		return 0;
	if (cgroup_read(ownfd, "cgroup.controllers", avail, sizeof avail, &alen) < 0 ||
	    !cgroup_has_word(avail, alen, "memory") || !cgroup_has_word(avail, alen, "pids"))
		return 0;
	if (l->own_is_root[CG_V2])
		return 1;
	if (cgroup_read(ownfd, "cgroup.subtree_control", on, sizeof on, &olen) == 0 &&
	    cgroup_has_word(on, olen, "memory") && cgroup_has_word(on, olen, "pids"))
		return 1;
	pid_t p[2];
	return cgroup_read(ownfd, "cgroup.procs", procs, sizeof procs, &plen) == 0 &&
	       cgroup_parse_procs(procs, plen, p, 2) == 1 && p[0] == self;
}

/* A memory limit memsup's unit sets on itself (MemoryMax=), which a scope
 * elsewhere would leave: "memory.max 500000000", or "" for none.  Not
 * pids.max: systemd gives every unit one (TasksMax=, 15% of the kernel's
 * limit by default), the scope gets its own, and refusing for it refused
 * every service. */
static void own_limit(int ownfd, char *out, size_t cap)
{
	char buf[64];
	size_t len;
	uint64_t v;
	out[0] = '\0';
	if (cgroup_read(ownfd, "memory.max", buf, sizeof buf, &len) == 0 &&
	    cgroup_parse_u64(buf, len, &v) == 0 && v != UINT64_MAX)
		snprintf(out, cap, "memory.max %llu", (unsigned long long)v);
}

/* Wait until /proc/self/cgroup puts memsup in the unit: the manager moves
 * the scope's processes as it starts it, which is after the call returned
 * the job.  1 when it did, 0 when not within the timeout. */
static int wait_moved(const char *proc_root, const char *unit)
{
	char file[64], text[4096];
	size_t len;
	snprintf(file, sizeof file, "%s/self/cgroup", proc_root);
	struct timespec nap = { 0, 500000 };
	for (long waited_us = 0; waited_us < SCOPE_MOVE_TIMEOUT_MS * 1000L;) {
		if (procfs_read_file(file, text, sizeof text, &len) == 0) {
			char *line = strstr(text, "0::");
			char *end = line ? strchr(line, '\n') : NULL;
			if (end)
				*end = '\0';
			if (line && ends_with(line, unit) && line[strlen(line) - strlen(unit) - 1] == '/')
				return 1;
		}
		nanosleep(&nap, NULL);
		waited_us += nap.tv_nsec / 1000;
		if (nap.tv_nsec < 16000000)
			nap.tv_nsec *= 2;
	}
	return 0;
}

/* The manager's private socket: the system manager's for root, else the
 * user's own manager's, where $XDG_RUNTIME_DIR says or where logind makes
 * it (/run/user/UID). */
static void socket_path(uid_t uid, char *out, size_t cap)
{
	if (uid == 0) {
		snprintf(out, cap, "/run/systemd/private");
		return;
	}
	/* $XDG_RUNTIME_DIR first; an inherited one of another user's (sudo,
	 * runuser) holds no socket of ours, and logind's place is tried */
	const char *rt = getenv("XDG_RUNTIME_DIR");
	if (rt && rt[0] == '/') {
		snprintf(out, cap, "%s/systemd/private", rt);
		if (access(out, R_OK | W_OK) == 0)
			return;
	}
	snprintf(out, cap, "/run/user/%u/systemd/private", (unsigned)uid);
}

/* The StartTransientUnit call: name, mode, properties, no auxiliary
 * units. */
static void build_call(struct sdbus_msg *m, const char *unit, const char *slice, pid_t self,
		       const char *what)
{
	char desc[160];
	snprintf(desc, sizeof desc, "memsup %d: %.120s", (int)self, what);
	/* D-Bus strings must be UTF-8, and the manager drops a connection that
	 * sends anything else: a command's name may be any bytes */
	for (char *c = desc; *c; c++)
		if ((unsigned char)*c < 0x20 || (unsigned char)*c >= 0x7f)
			*c = '?';
	sdbus_call(m, "org.freedesktop.systemd1", "/org/freedesktop/systemd1",
		   "org.freedesktop.systemd1.Manager", "StartTransientUnit", "ssa(sv)a(sa(sv))");
	sdbus_put_str(m, unit);
	sdbus_put_str(m, "fail");
	sdbus_array_begin(m, 8);
	sdbus_struct(m);
	sdbus_put_str(m, "PIDs");
	sdbus_variant(m, "au");
	sdbus_array_begin(m, 4);
	sdbus_put_u32(m, (uint32_t)self);
	sdbus_array_end(m);
	sdbus_struct(m);
	sdbus_put_str(m, "Delegate");
	sdbus_variant(m, "b");
	sdbus_put_bool(m, 1);
	sdbus_struct(m);
	sdbus_put_str(m, "CollectMode");
	sdbus_variant(m, "s");
	sdbus_put_str(m, "inactive-or-failed");
	sdbus_struct(m);
	sdbus_put_str(m, "Description");
	sdbus_variant(m, "s");
	sdbus_put_str(m, desc);
	if (slice[0]) {
		sdbus_struct(m);
		sdbus_put_str(m, "Slice");
		sdbus_variant(m, "s");
		sdbus_put_str(m, slice);
	}
	sdbus_array_end(m);
	sdbus_array_begin(m, 8);
	sdbus_array_end(m);
}

/* The slice to put the scope in: the one memsup's unit is in, so that the
 * slice's limits and accounting still hold -- for the user manager only a
 * slice of its own tree (below user@UID.service). */
static void pick_slice(const char *path, uid_t uid, char *slice, size_t cap)
{
	char parent[256];
	last_component(path, parent, sizeof parent);
	slice[0] = '\0';
	if (!ends_with(parent, ".slice"))
		return;
	if (uid != 0) {
		char mine[64];
		snprintf(mine, sizeof mine, "/user@%u.service/", (unsigned)uid);
		if (!strstr(path, mine))
			return;
	}
	snprintf(slice, cap, "%s", parent);
}

void scope_seek(const struct contain_config *cfg, const char *what, struct scope_outcome *out)
{
	memset(out, 0, sizeof *out);
	const char *env = getenv(SCOPE_ENV);
	if (cfg->cgroup != CONTAIN_AUTO || cfg->cgroup_root || cfg->premade ||
	    (env && env[0] && strcmp(env, "0") != 0))
		return;
	const char *proc_root = cfg->proc_root ? cfg->proc_root : "/proc";
	struct cg_layout l;
	if (cgroup_layout(NULL, proc_root, cfg->self, &l) < 0 || l.kind != CG_LAYOUT_V2)
		return;
	const char *own = l.own[CG_V2];
	const char *path = own + strlen(CGROUP_ROOT);
	int ownfd = open(own, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (ownfd < 0)
		return; /* cgroup2.c says why, as it always did */
	int usable = usable_as_is(&l, ownfd, cfg->self);
	int ro = faccessat(ownfd, ".", W_OK, AT_EACCESS) < 0 && errno == EROFS;
	char limit[96], parent[256];
	own_limit(ownfd, limit, sizeof limit);
	close(ownfd);
	const char *last = last_component(path, parent, sizeof parent);
	if (usable || ro || l.own_is_root[CG_V2])
		return; /* fine as it is; or a container's, said by cgroup2.c */
	if (inside_memsup(path)) {
		why(out, "memsup's cgroup %.120s is a memsup run's: memsup stays in it, so that the "
		    "outer run goes on counting it", path);
		return;
	}
	if (!ends_with(last, ".service") && !ends_with(last, ".scope")) {
		why(out, "memsup's cgroup %.120s is no systemd unit's (a job scheduler's?): memsup "
		    "stays in it, as whatever made it expects", path);
		return;
	}
	if (limit[0]) {
		why(out, "memsup's unit %.120s sets %s: a scope of memsup's own would leave that "
		    "limit, so memsup stays in it", last, limit);
		out->hint = "systemd-run --scope -p Delegate=yes -p MemoryMax=... -- memsup ... "
			    "(a unit of the run's own, with the limit wanted)";
		return;
	}
	if (access("/run/systemd/system", F_OK) < 0) {
		why(out, "systemd does not manage this machine's cgroups (no /run/systemd/system), "
		    "so no manager can delegate one");
		return;
	}
	uid_t uid = geteuid();
	char sock[PATH_MAX];
	socket_path(uid, sock, sizeof sock);
	out->manager = uid == 0 ? "system" : "user";
	if (uid != 0 && access(sock, F_OK) < 0) {
		why(out, "no systemd user manager runs for uid %u (no %.100s), and only it can "
		    "delegate a cgroup to a user", (unsigned)uid, sock);
		out->hint = "loginctl enable-linger USER (or a login session), so that systemd runs "
			    "a user manager that delegates memory and pids; or run memsup as root";
		return;
	}
	snprintf(out->unit, sizeof out->unit, "memsup-%d.scope", (int)cfg->self);
	char slice[256];
	pick_slice(path, uid, slice, sizeof slice);
	int fd = sdbus_connect(sock, (unsigned)uid, SCOPE_CALL_TIMEOUT_MS);
	if (fd < 0) {
		why(out, "cannot reach the systemd %s manager at %.100s: %s", out->manager, sock,
		    strerror(-fd));
		out->hint = "systemd-run --scope -p Delegate=yes -- memsup ... (add --user as a user)";
		return;
	}
	static struct sdbus_msg m; /* 4 KB: off the stack, touched only here */
	struct sdbus_reply reply;
	build_call(&m, out->unit, slice, cfg->self, what);
	int rc = sdbus_roundtrip(fd, &m, 1, &reply);
	close(fd);
	if (rc < 0 || reply.type != 2) {
		if (rc < 0)
			why(out, "the systemd %s manager did not answer the request for %s: %s",
			    out->manager, out->unit, strerror(-rc));
		else
			why(out, "the systemd %s manager refused %s: %.60s: %.120s", out->manager,
			    out->unit, reply.error_name, reply.text);
		out->hint = "systemd-run --scope -p Delegate=yes -- memsup ... (add --user as a user)";
		return;
	}
	if (!wait_moved(proc_root, out->unit)) {
		why(out, "the systemd %s manager took the job for %s (%.100s) but did not move "
		    "memsup into it within %d s", out->manager, out->unit, reply.text,
		    SCOPE_MOVE_TIMEOUT_MS / 1000);
		return;
	}
	out->moved = 1;
	if (memsup_debug_on())
		dprintf(2, "memsup: debug: containment: moved into %s by the %s manager%s%s\n",
			out->unit, out->manager, slice[0] ? ", in " : "", slice);
}
