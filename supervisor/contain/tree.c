/* tree.c: the descendants of memsup, found by children files or a ppid scan
 * of /proc, and their summed RSS.  See tree.h for the contract.
 *
 * Per-sample cost matters (it runs every 10 ms): the scan keeps /proc open
 * and rewinds it, looks each listed pid up in a hash table carried over from
 * the previous listing, reads /proc/PID/stat only for pids it has not seen,
 * and reads RSS with one pread() per member on an fd opened when the member
 * was found.  Memory is allocated only when a table or list has to grow. */
#include "contain/tree.h"
#include "base/procfs.h"
#include "base/pidmap.h"
#include "base/grow.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

enum entry_state {
	ST_NEW = 0, /* listed for the first time; verdict pending */
	ST_OURS,    /* a descendant of self */
	ST_OTHER,   /* not ours (or gone before its stat could be read) */
	ST_GONE,    /* new this listing, but vanished before stat was read */
};

/* Scan: when the last-pid figure moved by at most this much, look only at
 * the new pids instead of listing /proc. */
#define PROBE_MAX 64
#define PENDING_MAX 64
#define PENDING_TRIES 3

/* One pid of a listing, kept in a pidmap (the pid first). */
struct entry {
	pid_t pid;
	pid_t ppid;
	int fd;    /* statm, held open for members; -1 when not (yet) open */
	int state;
	pid_t session;     /* from stat, when start != 0 */
	uint64_t start;    /* starttime; 0: not read */
};

struct tree {
	const char *root;
	pid_t self;
	/* never members, nor their descendants: memsup's sentinel, and the
	 * children memsup already had when it started (a shell's `cmd &
	 * exec memsup ...` leaves them to it) */
	pid_t exclude[TREE_EXCLUDE_MAX];
	size_t nexclude;
	unsigned generation; /* bumped at each change of membership */
	enum tree_method method;
	DIR *dir;           /* the proc root, kept open and rewound */
	int rootfd;         /* dirfd(dir) */
	struct pidmap cur, next; /* struct entry: this listing, the one being made */
	pid_t *members;
	size_t nmembers, members_cap;
	pid_t *fresh;       /* scan: pids new in this listing; children: BFS queue */
	size_t nfresh, fresh_cap;
	int loadavg_fd;     /* root/loadavg: its last field is the last pid
			       allocated in our pid namespace; -1 if absent */
	long last_pid;      /* as read before the last listing or probe */
	long win_from, win_to; /* pids allocated in (from, to] since the
				  previous look: new processes, whatever an
				  old entry with the same number says */
	int dirty;          /* list again at the next sample */
	pid_t pending[PENDING_MAX]; /* allocated pids not yet visible: retried */
	int pending_tries[PENDING_MAX];
	size_t npending;
	struct tree_member *smp; /* the last sample's members, with RSS */
	size_t nsmp, smp_cap;
};

static int excluded(const struct tree *t, pid_t pid)
{
	for (size_t i = 0; i < t->nexclude; i++)
		if (t->exclude[i] == pid)
			return 1;
	return 0;
}

/* ---- the listings' tables ------------------------------------------------ */

static struct entry *table_find(const struct pidmap *tb, pid_t pid)
{
	return pidmap_find(tb, pid);
}

/* Insert e (its pid must not be present).  The returned pointer is valid
 * until the next insertion. */
static struct entry *table_put(struct pidmap *tb, const struct entry *e)
{
	struct entry *ne = pidmap_add(tb, e->pid, NULL);
	if (ne)
		*ne = *e;
	return ne;
}

/* Empty the table, closing the fds it still owns. */
static void table_clear(struct pidmap *tb)
{
	for (size_t i = 0; i < tb->cap; i++) {
		struct entry *e = pidmap_slot(tb, i);
		if (e && e->fd >= 0)
			close(e->fd);
	}
	pidmap_clear(tb);
}

static int pids_push(pid_t **v, size_t *n, size_t *cap, pid_t pid)
{
	if (grow_array((void **)v, cap, *n + 1, sizeof **v) < 0)
		return -ENOMEM;
	(*v)[(*n)++] = pid;
	return 0;
}

/* Carry pid's entry from the previous update into `next`, or create a new
 * one.  Ownership of the statm fd moves with it. */
/* Was pid allocated since the previous look (listing or probe)?  Then an
 * entry under that number belongs to a process that has since died, and the
 * pid was reused.  Unknown window (first listing, no loadavg): no. */
static int in_window(const struct tree *t, pid_t pid)
{
	if (t->win_from < 0 || t->win_to < 0 || t->win_from == t->win_to)
		return 0;
	if (t->win_from < t->win_to)
		return pid > t->win_from && pid <= t->win_to;
	return pid > t->win_from || pid <= t->win_to; /* the counter wrapped */
}

static struct entry *carry(struct tree *t, pid_t pid, int *is_new)
{
	struct entry *old = table_find(&t->cur, pid);
	struct entry e = { pid, 0, -1, ST_NEW, 0, 0 };
	if (old && in_window(t, pid)) {
		/* reused pid: the verdict and the fd were another process's */
		if (old->fd >= 0)
			close(old->fd);
		old->fd = -1;
		old = NULL;
	}
	if (old) {
		e = *old;
		old->fd = -1; /* now owned by next */
	}
	*is_new = !old;
	return table_put(&t->next, &e);
}

/* Swap next into cur, dropping (and closing) what did not carry over, and
 * rebuild the member list. */
static int commit(struct tree *t)
{
	table_clear(&t->cur);
	struct pidmap tmp = t->cur;
	t->cur = t->next;
	t->next = tmp;
	t->nmembers = 0;
	t->generation++;
	for (size_t i = 0; i < t->cur.cap; i++) {
		struct entry *e = pidmap_slot(&t->cur, i);
		if (e && e->state == ST_OURS &&
		    pids_push(&t->members, &t->nmembers, &t->members_cap, e->pid) < 0)
			return -ENOMEM;
	}
	return 0;
}

static int prepare_next(struct tree *t)
{
	table_clear(&t->next);
	if (t->next.cap < t->cur.cap)
		return pidmap_reserve(&t->next, t->cur.cap / 2);
	return 0;
}

static void open_statm(struct tree *t, struct entry *e)
{
	if (e->fd >= 0)
		return;
	/* EMFILE is not fatal: the member is read by path each sample. */
	e->fd = procfs_open_statm(t->rootfd, e->pid);
	if (e->fd < 0)
		e->fd = -1;
}

/* ---- scan ------------------------------------------------------------------ */

static int parse_dir_pid(const char *name, pid_t *pid)
{
	long v = 0;
	if (*name < '1' || *name > '9')
		return -1;
	for (const char *p = name; *p; p++) {
		if (*p < '0' || *p > '9' || v > INT_MAX / 10)
			return -1;
		v = v * 10 + (*p - '0');
	}
	*pid = (pid_t)v;
	return 0;
}

static int read_ppid(struct tree *t, pid_t pid, pid_t *ppid)
{
	struct procfs_stat st;
	int rc = procfs_read_stat(t->root, pid, &st);
	if (rc == 0)
		*ppid = st.ppid;
	return rc;
}

/* A member's session and start time, read once (for the sentinel, which
 * must find the tree again without memsup, and never kill a stranger that
 * got a dead member's number). */
static void read_ident(struct tree *t, struct entry *e)
{
	struct procfs_stat st;
	if (e->start || procfs_read_stat(t->root, e->pid, &st) < 0)
		return;
	e->session = st.session;
	e->start = st.starttime ? st.starttime : 1;
}

/* Is e a descendant of self?  Entries new in this listing may hang below
 * other new entries, so the verdict follows the ppid chain. */
static int resolve(struct tree *t, struct entry *e, int depth)
{
	if (e->state != ST_NEW)
		return e->state;
	int reread = 0;
	if (excluded(t, e->pid)) {
		e->state = ST_OTHER;
		return e->state;
	}
	for (;;) {
		if (e->ppid == t->self) {
			e->state = ST_OURS;
			break;
		}
		struct entry *p = table_find(&t->next, e->ppid);
		int ps = ST_GONE;
		if (p && depth < 4096)
			ps = resolve(t, p, depth + 1);
		if (ps == ST_OURS || ps == ST_OTHER) {
			e->state = ps;
			break;
		}
		/* The parent is gone (reaped, hence exited, hence e was already
		 * re-parented -- to us if it was ours): the stat we read predates
		 * that.  Read it again, once. */
		pid_t np = 0;
		if (reread || read_ppid(t, e->pid, &np) < 0) {
			e->state = ST_OTHER;
			break;
		}
		reread = 1;
		if (np == e->ppid) {
			e->state = ST_OTHER;
			break;
		}
		e->ppid = np;
	}
	return e->state;
}

static int scan_update(struct tree *t)
{
	int rc = prepare_next(t);
	if (rc < 0)
		return rc;
	t->nfresh = 0;
	rewinddir(t->dir);
	errno = 0;
	for (struct dirent *d; (d = readdir(t->dir)) != NULL; errno = 0) {
		pid_t pid;
		if (parse_dir_pid(d->d_name, &pid) < 0 || pid == t->self || excluded(t, pid))
			continue;
		int is_new;
		if (!carry(t, pid, &is_new))
			return -ENOMEM;
		if (is_new && pids_push(&t->fresh, &t->nfresh, &t->fresh_cap, pid) < 0)
			return -ENOMEM;
	}
	if (errno)
		return -errno;
	for (size_t i = 0; i < t->nfresh; i++) {
		struct entry *e = table_find(&t->next, t->fresh[i]);
		if (read_ppid(t, e->pid, &e->ppid) < 0)
			e->state = ST_GONE;
	}
	for (size_t i = 0; i < t->nfresh; i++) {
		struct entry *e = table_find(&t->next, t->fresh[i]);
		if (resolve(t, e, 0) == ST_OURS) {
			open_statm(t, e);
			read_ident(t, e);
		} else if (e->state == ST_GONE)
			e->state = ST_OTHER;
	}
	return commit(t);
}

/* ---- children files ------------------------------------------------------ */

static int children_of(struct tree *t, pid_t pid)
{
	char path[PATH_MAX];
	pid_t kids[1024];
	snprintf(path, sizeof path, "%s/%d/task", t->root, (int)pid);
	DIR *d = opendir(path);
	if (!d)
		return (errno == ENOENT || errno == ESRCH) ? 0 : -errno; /* gone */
	int rc = 0;
	for (struct dirent *de; rc == 0 && (de = readdir(d)) != NULL;) {
		pid_t tid;
		size_t n;
		if (parse_dir_pid(de->d_name, &tid) < 0)
			continue;
		int r = procfs_read_children(t->root, pid, tid, kids,
					     sizeof kids / sizeof kids[0], &n);
		if (r == PROCFS_GONE)
			continue; /* the thread or process exited meanwhile */
		if (r < 0) {
			rc = r;
			break;
		}
		for (size_t i = 0; i < n && rc == 0; i++) {
			if (excluded(t, kids[i]) || table_find(&t->next, kids[i]))
				continue;
			int is_new;
			struct entry *e = carry(t, kids[i], &is_new);
			if (!e) {
				rc = -ENOMEM;
				break;
			}
			e->state = ST_OURS;
			e->ppid = pid;
			open_statm(t, e);
			read_ident(t, e);
			rc = pids_push(&t->fresh, &t->nfresh, &t->fresh_cap, kids[i]);
		}
	}
	closedir(d);
	return rc;
}

static int children_update(struct tree *t)
{
	int rc = prepare_next(t);
	if (rc < 0)
		return rc;
	t->nfresh = 0;
	rc = children_of(t, t->self);
	for (size_t i = 0; rc == 0 && i < t->nfresh; i++)
		rc = children_of(t, t->fresh[i]);
	if (rc < 0)
		return rc;
	return commit(t);
}

/* ---- public ---------------------------------------------------------------- */

const char *tree_method_name(enum tree_method m)
{
	switch (m) {
	case TREE_CHILDREN:
		return "children";
	case TREE_SCAN:
		return "scan";
	case TREE_AUTO:
		break;
	}
	return "auto";
}

enum tree_method tree_probe(const char *root, pid_t self)
{
	char path[PATH_MAX];
	snprintf(path, sizeof path, "%s/%d/task/%d/children", root ? root : "/proc",
		 (int)self, (int)self);
	return access(path, R_OK) == 0 ? TREE_CHILDREN : TREE_SCAN;
}

int tree_open(struct tree **out, const char *root, pid_t self, enum tree_method m)
{
	if (!root)
		root = "/proc";
	/* auto is the scan: with the last-pid gate and new-pid probing it
	 * costs a few syscalls per new process anywhere on the system, where a
	 * children-file walk re-reads every member's task directory whenever
	 * any process was created -- often, on a busy machine. */
	if (m == TREE_AUTO)
		m = TREE_SCAN;
	else if (m == TREE_CHILDREN && tree_probe(root, self) != TREE_CHILDREN)
		return -ENOTSUP;
	struct tree *t = calloc(1, sizeof *t);
	if (!t)
		return -ENOMEM;
	t->root = root;
	t->self = self;
	t->method = m;
	t->dir = opendir(root);
	if (!t->dir) {
		int rc = -errno;
		free(t);
		return rc;
	}
	t->rootfd = dirfd(t->dir);
	t->loadavg_fd = openat(t->rootfd, "loadavg", O_RDONLY | O_CLOEXEC);
	t->last_pid = -1;
	t->win_from = t->win_to = -1;
	t->dirty = 1;
	pidmap_init(&t->cur, sizeof(struct entry));
	pidmap_init(&t->next, sizeof(struct entry));
	int rc = pidmap_reserve(&t->cur, 128);
	if (rc == 0)
		rc = pidmap_reserve(&t->next, 128);
	if (rc < 0) {
		tree_close(t);
		return rc;
	}
	*out = t;
	return 0;
}

void tree_close(struct tree *t)
{
	if (!t)
		return;
	table_clear(&t->cur);
	table_clear(&t->next);
	pidmap_free(&t->cur);
	pidmap_free(&t->next);
	free(t->members);
	free(t->fresh);
	free(t->smp);
	if (t->loadavg_fd >= 0)
		close(t->loadavg_fd);
	if (t->dir)
		closedir(t->dir);
	free(t);
}

enum tree_method tree_method_used(const struct tree *t)
{
	return t->method;
}

/* The last pid allocated in our pid namespace (/proc/loadavg's last field),
 * or -1 when it cannot be read. */
static long last_pid(const struct tree *t)
{
	char buf[128];
	size_t len;
	if (t->loadavg_fd < 0 || procfs_pread_fd(t->loadavg_fd, buf, sizeof buf, &len) < 0)
		return -1;
	while (len > 0 && (buf[len - 1] == '\n' || buf[len - 1] == ' '))
		len--;
	size_t i = len;
	while (i > 0 && buf[i - 1] >= '0' && buf[i - 1] <= '9')
		i--;
	if (i == len)
		return -1;
	return strtol(buf + i, NULL, 10);
}

static void drop_member(struct tree *t, size_t i)
{
	struct entry *e = table_find(&t->cur, t->members[i]);
	if (e) {
		if (e->fd >= 0)
			close(e->fd);
		e->fd = -1;
		e->state = ST_OTHER;
	}
	t->members[i] = t->members[--t->nmembers];
	t->generation++;
}

/* Scan, between listings: look at one newly allocated pid.  0 when decided
 * (or a thread), 1 when it is not visible (yet): a fork in progress has its
 * pid before /proc shows it, so the caller retries it later. */
static int probe_pid(struct tree *t, pid_t pid)
{
	struct procfs_status st;
	if (pid == t->self || excluded(t, pid))
		return 0;
	int rc = procfs_read_status(t->root, pid, &st);
	if (rc == PROCFS_GONE)
		return 1;
	if (rc < 0 || !(st.have & PROCFS_HAVE_TGID) || st.tgid != pid)
		return 0; /* unreadable, or a thread: threads are not processes */
	/* A parent's pid is always older than its child's, so in allocation
	 * order the parent's verdict is already known; an orphan's ppid is
	 * already ours (the subreaper) when its parent's entry is gone. */
	struct entry *p = table_find(&t->cur, st.ppid);
	int ours = st.ppid == t->self || (p && p->state == ST_OURS);
	struct entry *e = table_find(&t->cur, pid);
	if (!e) {
		struct entry ne = { pid, st.ppid, -1, ours ? ST_OURS : ST_OTHER, 0, 0 };
		if (!(e = table_put(&t->cur, &ne))) {
			t->dirty = 1;
			return 0;
		}
	} else {
		/* The pid is newly allocated, so this entry is a dead process's
		 * whose number was reused: forget it, fd and membership. */
		if (e->fd >= 0)
			close(e->fd);
		e->fd = -1;
		for (size_t i = 0; e->state == ST_OURS && i < t->nmembers; i++) {
			if (t->members[i] == pid) {
				t->members[i] = t->members[--t->nmembers];
				break;
			}
		}
		e->ppid = st.ppid;
		e->state = ours ? ST_OURS : ST_OTHER;
		e->start = 0;
	}
	if (ours) {
		open_statm(t, e);
		read_ident(t, e);
		t->generation++;
		if (pids_push(&t->members, &t->nmembers, &t->members_cap, pid) < 0)
			t->dirty = 1;
	}
	return 0;
}

static void pending_add(struct tree *t, pid_t pid, int tries)
{
	if (tries >= PENDING_TRIES)
		return; /* it exited before we could see it: nothing to measure */
	if (t->npending == PENDING_MAX) {
		t->dirty = 1; /* too many to track: list instead */
		return;
	}
	t->pending[t->npending] = pid;
	t->pending_tries[t->npending] = tries;
	t->npending++;
}

/* Look at the pids allocated in (from, to] and retry the pending ones. */
static void probe_range(struct tree *t, long from, long to)
{
	pid_t old[PENDING_MAX];
	int tries[PENDING_MAX];
	size_t n = t->npending;
	memcpy(old, t->pending, n * sizeof old[0]);
	memcpy(tries, t->pending_tries, n * sizeof tries[0]);
	t->npending = 0;
	for (size_t i = 0; i < n; i++)
		if (probe_pid(t, old[i]))
			pending_add(t, old[i], tries[i] + 1);
	for (long pid = from + 1; pid <= to; pid++)
		if (probe_pid(t, (pid_t)pid))
			pending_add(t, (pid_t)pid, 1);
}

int tree_update(struct tree *t)
{
	/* Read before listing: a pid allocated during the listing then shows
	 * up as a change next time. */
	long now = last_pid(t);
	t->win_from = t->last_pid;
	t->win_to = now;
	t->npending = 0;
	int rc = t->method == TREE_CHILDREN ? children_update(t) : scan_update(t);
	if (rc < 0) {
		t->dirty = 1; /* list again; the window still starts where it did */
	} else {
		t->last_pid = now;
		t->dirty = 0;
	}
	return rc;
}

/* Bring membership up to date for a sample, as cheaply as it can be done.
 * Membership only grows through new processes, and every new process takes
 * a new pid, which moves the last-pid figure.  So:
 *  - figure unchanged: the tree is what it was, apart from members that
 *    died, which the sample itself drops (their statm reads say gone);
 *  - figure moved by a little (scan method): only the pids allocated since
 *    are looked at, in allocation order, instead of listing all of /proc;
 *  - otherwise (first time, wrap-around, a burst, children method): list.
 * (clone3 with set_tid, which needs CAP_CHECKPOINT_RESTORE, can take a pid
 * without moving the figure; such a process is found at the next listing.) */
static int tree_refresh(struct tree *t)
{
	long now = last_pid(t);
	if (t->dirty || t->last_pid < 0 || now < 0)
		return tree_update(t);
	if (now == t->last_pid) {
		if (t->npending)
			probe_range(t, 0, -1);
		return 0;
	}
	if (t->method == TREE_SCAN && now > t->last_pid && now - t->last_pid <= PROBE_MAX) {
		long from = t->last_pid;
		t->last_pid = now;
		probe_range(t, from, now);
		return t->dirty ? tree_update(t) : 0;
	}
	return tree_update(t);
}

static int member_read(struct tree *t, struct entry *e, uint64_t *rss, uint64_t *text_pages)
{
	if (e->fd >= 0)
		return procfs_pread_statm(e->fd, rss, text_pages);
	int fd = procfs_open_statm(t->rootfd, e->pid);
	if (fd < 0)
		return fd;
	int rc = procfs_pread_statm(fd, rss, text_pages);
	close(fd);
	return rc;
}

int tree_sample(struct tree *t, uint64_t *rss_bytes, unsigned *nprocs)
{
	int rc = tree_refresh(t);
	if (rc < 0)
		return rc;
	uint64_t sum = 0;
	unsigned n = 0;
	/* room for every member, so that the loop below never allocates */
	if (t->smp_cap < t->nmembers) {
		size_t nc = t->nmembers * 2;
		struct tree_member *ns = realloc(t->smp, nc * sizeof *ns);
		if (ns) {
			t->smp = ns;
			t->smp_cap = nc;
		}
	}
	t->nsmp = 0;
	for (size_t i = 0; i < t->nmembers;) {
		struct entry *e = table_find(&t->cur, t->members[i]);
		uint64_t b, text;
		/* Gone (exited and reaped since the listing) or unreadable: skip
		 * it; a vanished process holds no memory, and a zero would only
		 * look like a crash in the series. */
		rc = e ? member_read(t, e, &b, &text) : PROCFS_GONE;
		if (rc == PROCFS_GONE) {
			drop_member(t, i); /* swaps the last one in: same i again */
			continue;
		}
		if (rc == 0) {
			sum += b;
			n++;
			if (t->nsmp < t->smp_cap) {
				t->smp[t->nsmp].pid = t->members[i];
				t->smp[t->nsmp].rss = b;
				t->smp[t->nsmp].text_pages = text;
				t->nsmp++;
			}
		}
		i++;
	}
	*rss_bytes = sum;
	*nprocs = n;
	return 0;
}

size_t tree_sampled(const struct tree *t, const struct tree_member **out)
{
	*out = t->smp;
	return t->nsmp;
}

int tree_exclude(struct tree *t, pid_t pid)
{
	if (excluded(t, pid))
		return 0;
	if (t->nexclude == TREE_EXCLUDE_MAX)
		return -ENOSPC;
	t->exclude[t->nexclude++] = pid;
	t->dirty = 1; /* a listing made before may hold it */
	return 0;
}

unsigned tree_generation(const struct tree *t)
{
	return t->generation;
}

size_t tree_idents(const struct tree *t, struct tree_ident *out, size_t cap)
{
	for (size_t i = 0; i < t->nmembers && i < cap; i++) {
		const struct entry *e = table_find(&t->cur, t->members[i]);
		out[i].pid = t->members[i];
		out[i].session = e ? e->session : 0;
		out[i].start = e ? e->start : 0;
	}
	return t->nmembers;
}

size_t tree_pids(const struct tree *t, pid_t *out, size_t cap)
{
	for (size_t i = 0; i < t->nmembers && i < cap; i++)
		out[i] = t->members[i];
	return t->nmembers;
}
