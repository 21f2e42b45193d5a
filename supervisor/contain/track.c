/* track.c: the run's processes held by pidfd, and the end's sweep of
 * those that left the run's cgroups (see track.h).
 *
 * An entry is made at first sight: pidfd_open(pid) first, then
 * /proc/PID/stat for the start time, then one more liveness check through
 * the pidfd -- had the pid died and been reused between the listing and
 * the open, the check would still hold the new process, but the start
 * time then belongs to the process the pidfd names, never to a third one.
 * Every signal after that goes through pidfd_send_signal(); an entry
 * without a pidfd (no pidfd_open, or memsup's fd budget spent) compares
 * the start time right before kill(). */
#include "contain/track.h"
#include "base/procfs.h"
#include "contain/tree.h"
#include "invariant.h"
#include "base/pidmap.h"

#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

/* the hierarchies a /proc/PID/cgroup names (v2 and the v1 ones) */
#define HOME_MAX 16
/* SIGSTOP passes before giving up on a search that keeps finding more
 * (as contain.c's: each pass stops all it finds) */
#define SWEEP_PASSES 64
/* pidfds the registry may hold at most, whatever RLIMIT_NOFILE allows */
#define TRACK_FD_CEILING 4096

struct entry {
	pid_t pid;                 /* first: the pidmap key */
	int fd;                    /* pidfd, or -1 (start time only) */
	uint64_t start;            /* /proc/PID/stat starttime */
	unsigned gen;              /* the last listing that gave it */
	unsigned char dead;        /* found gone: the slot waits for reuse */
	unsigned char stopped;     /* the sweep stopped it */
};

/* One hierarchy of the run: its /proc/PID/cgroup key ("0:" for v2,
 * "4:memory" for a v1 one) and the run's path there. */
struct home {
	char key[64];
	char name[32];
	char path[PATH_MAX];
};

struct track {
	const char *proc_root;
	pid_t self;
	struct pidmap map;         /* struct entry */
	unsigned gen;
	size_t live;               /* entries not dead */
	size_t nfds, fd_cap;
	struct home home[HOME_MAX];
	size_t nhome;
	pid_t exclude[TREE_EXCLUDE_MAX];
	size_t nexclude;
};

static int pidfd_open_pid(pid_t pid)
{
#ifdef SYS_pidfd_open
	return (int)syscall(SYS_pidfd_open, pid, 0);
#else
	(void)pid;
	errno = ENOSYS;
	return -1;
#endif
}

static int pidfd_signal(int fd, int sig)
{
#ifdef SYS_pidfd_send_signal
	return (int)syscall(SYS_pidfd_send_signal, fd, sig, NULL, 0);
#else
	(void)fd;
	(void)sig;
	errno = ENOSYS;
	return -1;
#endif
}

int track_open(struct track **out, const char *proc_root, pid_t self)
{
	struct track *t = calloc(1, sizeof *t);
	if (!t)
		return -ENOMEM;
	t->proc_root = proc_root ? proc_root : "/proc";
	t->self = self;
	pidmap_init(&t->map, sizeof(struct entry));
	/* a quarter of memsup's fds at most: the relay, the records and the
	 * evidence need the rest; past it, entries keep their start time */
	struct rlimit rl;
	t->fd_cap = 256;
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY)
		t->fd_cap = (size_t)rl.rlim_cur / 4;
	if (t->fd_cap > TRACK_FD_CEILING)
		t->fd_cap = TRACK_FD_CEILING;
	*out = t;
	return 0;
}

static void forget(struct track *t, struct entry *e)
{
	if (e->fd >= 0) {
		close(e->fd);
		MT_ASSERT(t->nfds > 0);
		t->nfds--;
	}
	e->fd = -1;
	if (!e->dead) {
		MT_ASSERT(t->live > 0);
		t->live--;
	}
	e->dead = 1;
	e->stopped = 0;
}

void track_close(struct track *t)
{
	if (!t)
		return;
	for (size_t i = 0; i < t->map.cap; i++) {
		struct entry *e = pidmap_slot(&t->map, i);
		if (e && !e->dead)
			forget(t, e);
	}
	MT_ASSERT(t->nfds == 0);
	pidmap_free(&t->map);
	free(t);
}

void track_exclude(struct track *t, pid_t pid)
{
	if (t->nexclude < TREE_EXCLUDE_MAX)
		t->exclude[t->nexclude++] = pid;
}

/* Hold `pid` in e (a new or a dead slot).  0, or -errno when it is gone
 * already (the slot stays dead). */
static int hold(struct track *t, struct entry *e, pid_t pid)
{
	struct procfs_stat st;
	e->pid = pid;
	e->fd = -1;
	e->dead = 1;
	e->stopped = 0;
	errno = 0;
	int fd = t->nfds < t->fd_cap ? pidfd_open_pid(pid) : -1;
	if (fd < 0 && errno == ESRCH)
		return -ESRCH;
	int rc = procfs_read_stat(t->proc_root, pid, &st);
	/* the stat read is of the pidfd's process only if that one is still
	 * there after it (a pid's next owner would have had to wait for the
	 * first to be reaped) */
	if (rc < 0 || st.state == 'Z' || st.state == 'X' || (fd >= 0 && pidfd_signal(fd, 0) < 0)) {
		if (fd >= 0)
			close(fd);
		return rc < 0 ? rc : -ESRCH;
	}
	e->fd = fd;
	e->start = st.starttime;
	e->dead = 0;
	t->live++;
	t->nfds += fd >= 0;
	return 0;
}

/* Still the process first seen, and not yet reaped. */
static int alive(const struct track *t, const struct entry *e)
{
	if (e->fd >= 0)
		return pidfd_signal(e->fd, 0) == 0;
	struct procfs_stat st;
	return procfs_read_stat(t->proc_root, e->pid, &st) == 0 && st.starttime == e->start;
}

static int send(const struct track *t, const struct entry *e, int sig)
{
	if (e->fd >= 0)
		return pidfd_signal(e->fd, sig) < 0 ? -errno : 0;
	/* no pidfd: the start time right before, the window as small as kill
	 * by pid allows */
	struct procfs_stat st;
	if (procfs_read_stat(t->proc_root, e->pid, &st) < 0 || st.starttime != e->start)
		return -ESRCH;
	return kill(e->pid, sig) < 0 ? -errno : 0;
}

/* Add or refresh `pid`; the entry, or NULL when it could not be held.
 * *seen counts the entries this listing gave, each once. */
static struct entry *note_one(struct track *t, pid_t pid, size_t *seen)
{
	int added = 0;
	struct entry *e = pidmap_add(&t->map, pid, &added);
	if (!e)
		return NULL;
	if ((added || e->dead) && hold(t, e, pid) < 0)
		return NULL;
	if (added || e->gen != t->gen)
		(*seen)++;
	e->gen = t->gen;
	return e;
}

/* The live entries into a new table when the dead ones outnumber them
 * well: a long churn on a machine whose pid_max is 4M would otherwise keep
 * an entry for every pid it ever used, and prune() walks them all each
 * sample.  Out of memory, the old table stays. */
static void compact(struct track *t, size_t live)
{
	struct pidmap m;
	pidmap_init(&m, sizeof(struct entry));
	if (pidmap_reserve(&m, live) < 0)
		return;
	for (size_t i = 0; i < t->map.cap; i++) {
		const struct entry *e = pidmap_slot(&t->map, i);
		struct entry *n;
		if (!e || e->dead)
			continue;
		n = pidmap_add(&m, e->pid, NULL);
		MT_ASSERT(n != NULL); /* reserved */
		if (n)
			*n = *e;
	}
	pidmap_free(&t->map);
	t->map = m;
}

/* not in this listing: ended, or left the cgroups; only the first are
 * forgotten (their fds closed) */
static void prune(struct track *t, size_t seen)
{
	/* every live entry in this listing: none to look for (a dense
	 * sample's case, where walking the table was most of the cost) */
	MT_ASSERT(seen <= t->live);
	if (seen == t->live)
		return;
	size_t live = 0;
	for (size_t i = 0; i < t->map.cap; i++) {
		struct entry *e = pidmap_slot(&t->map, i);
		if (e && !e->dead && e->gen != t->gen && !alive(t, e))
			forget(t, e);
		live += e && !e->dead;
	}
	MT_ASSERT(live == t->live);
	if (t->map.used > 4 * live + 1024)
		compact(t, live);
}

void track_note(struct track *t, const pid_t *pids, size_t n)
{
	size_t seen = 0;
	t->gen++;
	for (size_t i = 0; i < n; i++)
		note_one(t, pids[i], &seen);
	prune(t, seen);
}

void track_note_members(struct track *t, const struct tree_member *m, size_t n)
{
	size_t seen = 0;
	t->gen++;
	for (size_t i = 0; i < n; i++)
		note_one(t, m[i].pid, &seen);
	prune(t, seen);
}

size_t track_count(const struct track *t)
{
	size_t n = 0;
	for (size_t i = 0; i < t->map.cap; i++) {
		const struct entry *e = pidmap_slot(&t->map, i);
		n += e && !e->dead;
	}
	return n;
}

/* ---- the run's cgroups ------------------------------------------------------ */

/* One /proc/PID/cgroup line "ID:CONTROLLERS:PATH" split: key "ID:CONTROLLERS"
 * (the hierarchy), path.  0, or -1 for a line without two colons. */
static int split_line(const char *line, size_t len, char *key, size_t kcap, const char **path,
		      size_t *plen)
{
	const char *c1 = memchr(line, ':', len);
	const char *c2 = c1 ? memchr(c1 + 1, ':', len - (size_t)(c1 + 1 - line)) : NULL;
	if (!c2 || (size_t)(c2 - line) >= kcap)
		return -1;
	memcpy(key, line, (size_t)(c2 - line));
	key[c2 - line] = '\0';
	*path = c2 + 1;
	*plen = len - (size_t)(c2 + 1 - line);
	return 0;
}

/* For each line of a cgroup file's text: fn(ctx, key, path, plen). */
static void each_line(const char *buf, size_t len,
		      void (*fn)(void *ctx, const char *key, const char *path, size_t plen),
		      void *ctx)
{
	char key[64];
	for (size_t at = 0; at < len;) {
		const char *nl = memchr(buf + at, '\n', len - at);
		size_t ll = nl ? (size_t)(nl - (buf + at)) : len - at;
		const char *path;
		size_t plen;
		if (split_line(buf + at, ll, key, sizeof key, &path, &plen) == 0)
			fn(ctx, key, path, plen);
		at += ll + 1;
	}
}

static int read_cgroup_file(const struct track *t, pid_t pid, char *buf, size_t cap,
			    size_t *len)
{
	char path[PATH_MAX];
	if (pid)
		snprintf(path, sizeof path, "%s/%d/cgroup", t->proc_root, (int)pid);
	else
		snprintf(path, sizeof path, "%s/self/cgroup", t->proc_root);
	return procfs_read_file(path, buf, cap, len);
}

struct home_ctx {
	struct track *t;
	const char *own;           /* memsup's own file's text */
	size_t own_len;
};

/* Does the text of a cgroup file hold `key` at exactly `path`? */
static int holds(const char *buf, size_t len, const char *key, const char *path, size_t plen)
{
	char line[PATH_MAX + 80];
	int n = snprintf(line, sizeof line, "%s:%.*s\n", key, (int)plen, path);
	if (n <= 0 || (size_t)n >= sizeof line)
		return 0;
	/* at the start of the text, or after a newline */
	for (const char *p = buf; (p = memmem(p, len - (size_t)(p - buf), line, (size_t)n)) != NULL;
	     p++)
		if (p == buf || p[-1] == '\n')
			return 1;
	return 0;
}

static void add_home(void *ctx, const char *key, const char *path, size_t plen)
{
	struct home_ctx *h = ctx;
	struct track *t = h->t;
	/* a hierarchy where the command sits where memsup does is not the
	 * run's: leaving it leaves nothing */
	if (t->nhome >= HOME_MAX || plen >= PATH_MAX || holds(h->own, h->own_len, key, path, plen))
		return;
	struct home *m = &t->home[t->nhome++];
	snprintf(m->key, sizeof m->key, "%s", key);
	memcpy(m->path, path, plen);
	m->path[plen] = '\0';
	/* "0:" is v2; a v1 key's controllers, '+' between them (the list
	 * of names is itself comma-separated) */
	const char *ctl = strchr(key, ':') + 1;
	snprintf(m->name, sizeof m->name, "%s", *ctl ? ctl : "v2");
	for (char *c = m->name; *c; c++)
		if (*c == ',')
			*c = '+';
}

void track_set_home(struct track *t, pid_t pid)
{
	char own[4096], cmd[4096];
	size_t olen, clen;
	t->nhome = 0;
	if (read_cgroup_file(t, 0, own, sizeof own, &olen) < 0 ||
	    read_cgroup_file(t, pid, cmd, sizeof cmd, &clen) < 0)
		return;
	struct home_ctx h = { t, own, olen };
	each_line(cmd, clen, add_home, &h);
}

struct left_ctx {
	const struct track *t;
	char *out;
	size_t cap, at;
	unsigned inside;           /* bit i: home[i] still holds it */
};

static void check_home(void *ctx, const char *key, const char *path, size_t plen)
{
	struct left_ctx *l = ctx;
	for (size_t i = 0; i < l->t->nhome; i++) {
		const struct home *h = &l->t->home[i];
		size_t hl = strlen(h->path);
		if (strcmp(h->key, key) != 0)
			continue;
		/* the run's cgroup or one below it */
		if (plen >= hl && memcmp(path, h->path, hl) == 0 && (plen == hl || path[hl] == '/'))
			l->inside |= 1u << i;
	}
}

/* Which of the run's hierarchies `pid` is no longer in, into out; "" for
 * none (or when its file cannot be read: it is gone). */
static void left_of(const struct track *t, pid_t pid, char *out, size_t cap)
{
	char buf[4096];
	size_t len;
	out[0] = '\0';
	if (!t->nhome || read_cgroup_file(t, pid, buf, sizeof buf, &len) < 0)
		return;
	struct left_ctx l = { t, out, cap, 0, 0 };
	each_line(buf, len, check_home, &l);
	for (size_t i = 0; i < t->nhome; i++) {
		if (l.inside & (1u << i))
			continue;
		int k = snprintf(out + l.at, cap - l.at, "%s%s", l.at ? "," : "", t->home[i].name);
		if (k < 0 || (size_t)k >= cap - l.at)
			break;
		l.at += (size_t)k;
	}
}

void track_left(const struct track *t, pid_t pid, char *out, size_t cap)
{
	left_of(t, pid, out, cap);
}

/* ---- the end ----------------------------------------------------------------- */

/* memsup's descendants now, held (the run's, memsup's own excluded). */
static int hold_descendants(struct track *t, struct tree *desc)
{
	int rc = tree_update(desc);
	if (rc < 0)
		return rc;
	pid_t buf[512];
	size_t n = tree_pids(desc, NULL, 0);
	pid_t *pids = n <= sizeof buf / sizeof buf[0] ? buf : malloc(n * sizeof *pids);
	if (!pids)
		return -ENOMEM;
	n = tree_pids(desc, pids, n);
	size_t seen = 0;
	t->gen++;
	for (size_t i = 0; i < n; i++)
		note_one(t, pids[i], &seen);
	if (pids != buf)
		free(pids);
	return 0;
}

/* Stop every held process still alive until a search finds no one new;
 * report those outside the run's cgroups.  How many were stopped. */
static size_t stop_all(struct track *t, struct tree *desc, const struct track_waiter *w,
		       int *err)
{
	size_t stopped = 0;
	*err = 0;
	for (int pass = 0; pass < SWEEP_PASSES; pass++) {
		int rc = hold_descendants(t, desc);
		if (rc < 0 && !*err)
			*err = rc;
		size_t fresh = 0;
		for (size_t i = 0; i < t->map.cap; i++) {
			struct entry *e = pidmap_slot(&t->map, i);
			struct procfs_stat st;
			char left[TRACK_LEFT_BYTES];
			if (!e || e->dead || e->stopped)
				continue;
			if (!alive(t, e)) {
				forget(t, e);
				continue;
			}
			/* a zombie forks no more and needs only reaping */
			if (procfs_read_stat(t->proc_root, e->pid, &st) == 0 &&
			    (st.state == 'Z' || st.state == 'X'))
				continue;
			if (send(t, e, SIGSTOP) < 0)
				continue;
			e->stopped = 1;
			fresh++;
			left_of(t, e->pid, left, sizeof left);
			if (left[0] && w->found)
				w->found(w->ctx, e->pid, left);
		}
		stopped += fresh;
		if (!fresh)
			break;
	}
	return stopped;
}

/* Wait up to ms for every stopped-and-killed entry to be gone (its pidfd
 * readable: it has exited). */
static void wait_dead(struct track *t, const struct track_waiter *w, int ms)
{
	for (int waited = 0;; waited += 5) {
		size_t left = 0;
		for (size_t i = 0; i < t->map.cap; i++) {
			struct entry *e = pidmap_slot(&t->map, i);
			if (!e || e->dead || !e->stopped)
				continue;
			struct pollfd p = { e->fd, POLLIN, 0 };
			int gone = e->fd >= 0 ? poll(&p, 1, 0) > 0 : !alive(t, e);
			if (gone)
				forget(t, e);
			else
				left++;
		}
		if (!left || waited >= ms)
			return;
		w->wait(w->ctx, 5);
	}
}

int track_sweep(struct track *t, const struct track_waiter *w, int wait_ms)
{
	/* memsup's descendants by its children files where the kernel has
	 * them (tree.h: the same set as the scan): a walk of the few left at
	 * the end, where the scan reads the stat file of every process on the
	 * machine -- 1.3 to 2.6 ms of a short run's CPU with a hundred of
	 * them, more on a busy node */
	struct tree *desc;
	int rc = tree_open(&desc, t->proc_root, t->self, tree_probe(t->proc_root, t->self));
	if (rc < 0)
		return rc;
	for (size_t i = 0; i < t->nexclude; i++)
		tree_exclude(desc, t->exclude[i]);
	int err;
	size_t n = stop_all(t, desc, w, &err);
	tree_close(desc);
	/* SIGKILL reaches a stopped process: no SIGCONT needed */
	for (size_t i = 0; i < t->map.cap; i++) {
		struct entry *e = pidmap_slot(&t->map, i);
		if (e && !e->dead && e->stopped)
			send(t, e, SIGKILL);
	}
	if (n)
		wait_dead(t, w, wait_ms);
	return err < 0 && !n ? err : (int)n;
}
