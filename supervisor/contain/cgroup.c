/* cgroup.c: the machinery the cgroup backends share (see cgroup.h).
 *
 * Every file a sample reads (cgroup.procs, memory.current, memory.stat,
 * memory.events or v1's failcnt, oom_control and kmem usage, pids.events,
 * each member's statm) is opened once and read with pread() at offset 0
 * into a buffer on the stack, so a sample costs one system call per file,
 * none to look a path up, and no allocation.  Setting a limit or killing
 * writes a file once.
 *
 * The cgroups a command makes below the run's are found by walking the
 * directory (cgroup_walk_below): at every listing on v1, only when
 * cgroup.stat counts descendants on v2, and at the kill and the end. */
#include "contain/cgroup.h"
#include "base/procfs.h"
#include "base/clock.h"
#include "invariant.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/inotify.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* The v1 controller of each hierarchy ("" for v2). */
static const char *const hier_controller[CG_NHIER] = { "", "memory", "pids", "freezer" };

/* ---- parsers ------------------------------------------------------------------ */

int cgroup_parse_u64(const char *buf, size_t len, uint64_t *out)
{
	size_t i = 0;
	uint64_t v = 0;
	if (len >= 3 && memcmp(buf, "max", 3) == 0 && (len == 3 || buf[3] == '\n')) {
		*out = UINT64_MAX;
		return 0;
	}
	for (; i < len && buf[i] >= '0' && buf[i] <= '9'; i++) {
		if (v > (UINT64_MAX - 9) / 10)
			return -EINVAL;
		v = v * 10 + (uint64_t)(buf[i] - '0');
	}
	if (i == 0 || (i < len && buf[i] != '\n'))
		return -EINVAL;
	*out = v;
	return 0;
}

int cgroup_parse_key(const char *buf, size_t len, const char *key, uint64_t *out)
{
	size_t kl = strlen(key);
	for (size_t i = 0; i < len;) {
		const char *nl = memchr(buf + i, '\n', len - i);
		size_t end = nl ? (size_t)(nl - buf) : len;
		if (end - i > kl && memcmp(buf + i, key, kl) == 0 && buf[i + kl] == ' ')
			return cgroup_parse_u64(buf + i + kl + 1, end - i - kl - 1, out);
		i = end + 1;
	}
	return -ENOENT;
}

int cgroup_has_word(const char *buf, size_t len, const char *word)
{
	size_t wl = strlen(word);
	for (size_t i = 0; i < len;) {
		while (i < len && (buf[i] == ' ' || buf[i] == '\n'))
			i++;
		size_t j = i;
		while (j < len && buf[j] != ' ' && buf[j] != '\n')
			j++;
		if (j - i == wl && memcmp(buf + i, word, wl) == 0)
			return 1;
		i = j;
	}
	return 0;
}

long cgroup_parse_procs(const char *buf, size_t len, pid_t *out, size_t cap)
{
	long n = 0;
	for (size_t i = 0; i < len;) {
		long v = 0;
		size_t j = i;
		while (j < len && buf[j] >= '0' && buf[j] <= '9' && v < INT_MAX / 10)
			v = v * 10 + (buf[j++] - '0');
		if (j == i || v <= 0 || (j < len && buf[j] != '\n'))
			return -EINVAL;
		if ((size_t)n < cap)
			out[n] = (pid_t)v;
		n++;
		i = j + 1;
	}
	return n;
}

/* The keys of memory.stat that cgroup_parse_memstat uses, by version, and
 * where each goes. */
enum { MS_ANON, MS_FILE, MS_SHMEM, MS_KERNEL, MS_SOCK, MS_PART, MS_NSLOT };

struct memstat_key {
	const char *key;
	size_t len;
	unsigned slot;
};

#define MEMSTAT_KEY(k, slot) { k, sizeof k - 1, slot }

static const struct memstat_key memstat_v2[] = {
	MEMSTAT_KEY("anon", MS_ANON),
	MEMSTAT_KEY("file", MS_FILE),
	MEMSTAT_KEY("shmem", MS_SHMEM),
	MEMSTAT_KEY("kernel", MS_KERNEL),
	MEMSTAT_KEY("sock", MS_SOCK),
	/* what "kernel" sums, for the kernels before 6.0 that lack it */
	MEMSTAT_KEY("kernel_stack", MS_PART),
	MEMSTAT_KEY("pagetables", MS_PART),
	MEMSTAT_KEY("percpu", MS_PART),
	MEMSTAT_KEY("slab", MS_PART),
	MEMSTAT_KEY("vmalloc", MS_PART),
};

/* The total_ keys count the cgroup's descendants too: the run's cgroup has
 * none, and a kernel that ever gives only one of the two gives total_. */
static const struct memstat_key memstat_v1[] = {
	MEMSTAT_KEY("total_rss", MS_ANON),
	MEMSTAT_KEY("total_cache", MS_FILE),
	MEMSTAT_KEY("total_shmem", MS_SHMEM),
};

int cgroup_parse_memstat(const char *buf, size_t len, int v2, struct cg_memstat *out)
{
	const struct memstat_key *keys = v2 ? memstat_v2 : memstat_v1;
	size_t nkeys = v2 ? sizeof memstat_v2 / sizeof memstat_v2[0]
			  : sizeof memstat_v1 / sizeof memstat_v1[0];
	uint64_t val[MS_NSLOT] = { 0 };
	unsigned seen = 0;
	/* every key wanted seen: the rest of the file (most of it, on v2,
	 * whose amounts come first) is not read */
	const unsigned enough = 1u << MS_ANON | 1u << MS_FILE | 1u << MS_SHMEM |
				(v2 ? 1u << MS_KERNEL | 1u << MS_SOCK : 0);
	for (size_t i = 0; i < len && (seen & enough) != enough;) {
		const char *nl = memchr(buf + i, '\n', len - i);
		size_t end = nl ? (size_t)(nl - buf) : len;
		const char *sp = memchr(buf + i, ' ', end - i);
		size_t kl = sp ? (size_t)(sp - (buf + i)) : 0;
		for (size_t k = 0; sp && k < nkeys; k++) {
			if (keys[k].len != kl || memcmp(buf + i, keys[k].key, kl) != 0)
				continue;
			uint64_t v;
			unsigned slot = keys[k].slot;
			/* "max" is no amount; a sum that wraps is no file's */
			if (cgroup_parse_u64(sp + 1, (size_t)(buf + end - sp - 1), &v) < 0 ||
			    v == UINT64_MAX || (slot == MS_PART && val[slot] + v < val[slot]))
				return -EINVAL;
			val[slot] = slot == MS_PART ? val[slot] + v : v;
			seen |= 1u << slot;
			break;
		}
		i = end + 1;
	}
	if (!(seen & 1u << MS_ANON) || !(seen & 1u << MS_FILE))
		return -EINVAL;
	out->anon = val[MS_ANON];
	out->file = val[MS_FILE];
	out->shmem = val[MS_SHMEM];
	out->kernel = (seen & 1u << MS_KERNEL) ? val[MS_KERNEL] : val[MS_PART];
	if (out->kernel + val[MS_SOCK] < out->kernel)
		return -EINVAL;
	out->kernel += val[MS_SOCK];
	return 0;
}

/* ---- files -------------------------------------------------------------------- */

int cgroup_write(int dirfd, const char *name, const char *text)
{
	/* O_TRUNC as a shell's `>` does: a no-op on cgroupfs, and what a
	 * fixture tree's plain file needs to hold just this value */
	int fd = openat(dirfd, name, O_WRONLY | O_TRUNC | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	size_t n = strlen(text);
	ssize_t w;
	do
		w = write(fd, text, n);
	while (w < 0 && errno == EINTR);
	int rc = w < 0 ? -errno : (size_t)w == n ? 0 : -EIO;
	close(fd);
	return rc;
}

int cgroup_read(int dirfd, const char *name, char *buf, size_t cap, size_t *len)
{
	int fd = openat(dirfd, name, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	int rc = procfs_pread_fd(fd, buf, cap, len);
	close(fd);
	return rc;
}

int cgroup_has(int dirfd, const char *name)
{
	return dirfd >= 0 && faccessat(dirfd, name, F_OK, 0) == 0;
}

static int read_u64(int fd, uint64_t *v)
{
	char buf[64];
	size_t len;
	int rc = procfs_pread_fd(fd, buf, sizeof buf, &len);
	return rc < 0 ? rc : cgroup_parse_u64(buf, len, v);
}

static int read_key(int fd, const char *key, uint64_t *v)
{
	char buf[1024];
	size_t len;
	int rc = procfs_pread_fd(fd, buf, sizeof buf, &len);
	return rc < 0 ? rc : cgroup_parse_key(buf, len, key, v);
}

/* ---- layout ------------------------------------------------------------------- */

const char *cgroup_layout_name(enum cg_layout_kind kind)
{
	switch (kind) {
	case CG_LAYOUT_V2:
		return "cgroup2";
	case CG_LAYOUT_HYBRID:
		return "hybrid";
	case CG_LAYOUT_V1:
		return "cgroup1";
	case CG_LAYOUT_NONE:
		break;
	}
	return "none";
}

/* The path of `controller` ("" for v2) in a /proc/PID/cgroup text, whose
 * lines are "ID:CONTROLLERS:PATH" (v2: "0::PATH"; v1: a comma-separated
 * list that may name several co-mounted controllers). */
static int own_path(const char *text, size_t len, const char *controller, char *out, size_t cap)
{
	for (size_t i = 0; i < len;) {
		const char *nl = memchr(text + i, '\n', len - i);
		size_t end = nl ? (size_t)(nl - text) : len;
		const char *c1 = memchr(text + i, ':', end - i);
		const char *c2 = c1 ? memchr(c1 + 1, ':', (size_t)(text + end - c1 - 1)) : NULL;
		if (c2) {
			const char *ctl = c1 + 1;
			size_t cl = (size_t)(c2 - ctl);
			int hit = 0;
			if (!*controller)
				hit = cl == 0 && c1 - (text + i) == 1 && text[i] == '0';
			else
				for (size_t a = 0; a < cl && !hit;) {
					size_t b = a;
					while (b < cl && ctl[b] != ',')
						b++;
					hit = b - a == strlen(controller) &&
					      memcmp(ctl + a, controller, b - a) == 0;
					a = b + 1;
				}
			size_t pl = (size_t)(text + end - c2 - 1);
			if (hit && pl > 0 && c2[1] == '/' && pl < cap) {
				memcpy(out, c2 + 1, pl);
				out[pl] = '\0';
				return 1;
			}
		}
		i = end + 1;
	}
	return 0;
}

static int is_dir(const char *path)
{
	struct stat st;
	return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

/* base + path ("/" is base itself) into out. */
static int join(char *out, size_t cap, const char *base, const char *path)
{
	int n = snprintf(out, cap, "%s%s", base, strcmp(path, "/") == 0 ? "" : path);
	return n > 0 && (size_t)n < cap ? 0 : -ENAMETOOLONG;
}

int cgroup_layout(const char *root, const char *proc_root, pid_t self, struct cg_layout *out)
{
	char file[PATH_MAX], text[8192], path[PATH_MAX], base[PATH_MAX];
	size_t len;
	/* every field but the string arrays' unused tails: 17 KB of which a
	 * layout fills a few hundred bytes, not worth a page fault each */
	out->kind = CG_LAYOUT_NONE;
	for (int h = 0; h < CG_NHIER; h++) {
		out->own[h][0] = '\0';
		out->own_is_root[h] = 0;
	}
	out->why[0] = '\0';
	if (!root)
		root = CGROUP_ROOT;
	snprintf(file, sizeof file, "%s/%d/cgroup", proc_root ? proc_root : "/proc", (int)self);
	int rc = procfs_read_file(file, text, sizeof text, &len);
	if (rc < 0)
		return rc;
	int have_v2 = own_path(text, len, "", path, sizeof path);
	snprintf(base, sizeof base, "%s/cgroup.controllers", root);
	if (access(base, F_OK) == 0) {
		/* root is a cgroup2 mount itself: pure v2 */
		if (!have_v2 || join(out->own[CG_V2], PATH_MAX, root, path) < 0) {
			snprintf(out->why, sizeof out->why, "%.120s is cgroup v2 but %.120s names "
				 "no v2 cgroup of memsup", root, file);
			return 0;
		}
		out->own_is_root[CG_V2] = strcmp(path, "/") == 0;
		out->kind = CG_LAYOUT_V2;
		return 0;
	}
	int any_v1 = 0;
	snprintf(base, sizeof base, "%s/unified/cgroup.controllers", root);
	if (have_v2 && access(base, F_OK) == 0) {
		snprintf(base, sizeof base, "%s/unified", root);
		if (join(out->own[CG_V2], PATH_MAX, base, path) < 0)
			out->own[CG_V2][0] = '\0';
		out->own_is_root[CG_V2] = strcmp(path, "/") == 0;
	}
	for (int h = CG_MEMORY; h < CG_NHIER; h++) {
		snprintf(base, sizeof base, "%s/%s", root, hier_controller[h]);
		if (!own_path(text, len, hier_controller[h], path, sizeof path) ||
		    join(out->own[h], PATH_MAX, base, path) < 0 || !is_dir(out->own[h])) {
			out->own[h][0] = '\0';
			continue;
		}
		out->own_is_root[h] = strcmp(path, "/") == 0;
		any_v1 = 1;
	}
	if (out->own[CG_V2][0])
		out->kind = CG_LAYOUT_HYBRID;
	else if (any_v1)
		out->kind = CG_LAYOUT_V1;
	else
		snprintf(out->why, sizeof out->why, "no cgroup hierarchy memsup can use under "
			 "%.120s (neither cgroup v2 nor the v1 memory, pids or freezer "
			 "controllers)", root);
	return 0;
}

/* ---- the run's cgroups -------------------------------------------------------- */

struct cg_member {
	pid_t pid;                 /* first: the pidmap key */
	int fd;                    /* PID/statm, -1 when not open */
	unsigned round;            /* the last listing that named it */
};

int cgroup_run_begin(struct cgrun **out, const struct contain_ops *ops,
		     const struct contain_config *cfg, unsigned kinds)
{
	/* 70 KB, most of it PATH_MAX buffers a run fills a few bytes of: fresh
	 * zero pages from the kernel, touched (a page fault each) only where
	 * written, where calloc would clear every page of it; the layout is
	 * read into it, not into the stack and then copied */
	struct cgrun *r = mmap(NULL, sizeof *r, PROT_READ | PROT_WRITE,
			       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (r == MAP_FAILED)
		return -ENOMEM;
	int rc = cgroup_layout(cfg->cgroup_root, cfg->proc_root, cfg->self, &r->layout);
	if (rc == 0 && !(kinds & (1u << r->layout.kind)))
		rc = -ENOTSUP;
	if (rc < 0) {
		munmap(r, sizeof *r);
		return rc;
	}
	r->base.ops = ops;
	r->proc_root = cfg->proc_root ? cfg->proc_root : "/proc";
	r->self = cfg->self;
	r->root = cfg->cgroup_root ? cfg->cgroup_root : CGROUP_ROOT;
	r->premade = cfg->premade;
	for (int h = 0; h < CG_NHIER; h++) {
		r->dir[h].fd = -1;
		r->join_fd[h] = -1;
	}
	r->sup.fd = -1;
	r->memdir = r->pidsdir = -1;
	r->procs_fd = r->usage_fd = r->pids_events_fd = r->oom_fd = r->event_fd = -1;
	r->watch_fd = -1;
	r->list_dir = r->cgstat_fd = r->below_fd = -1;
	r->below = 1;
	r->stat_fd = r->kmem_fd = r->failcnt_fd = r->memsw_failcnt_fd = -1;
	r->limit_fd = -1;
	pidmap_init(&r->members, sizeof(struct cg_member));
	r->proc_fd = open(r->proc_root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (r->proc_fd < 0) {
		rc = -errno;
		munmap(r, sizeof *r);
		return rc;
	}
	*out = r;
	return 0;
}

int cgroup_run_end(struct cgrun *r, const struct contain_config *cfg,
		   struct contain_info *info, struct contain **out)
{
	int rc = cgroup_setup(r, cfg, info);
	if (rc < 0) {
		cgroup_run_finish(&r->base);
		r->base.ops->close(&r->base);
		return rc;
	}
	*out = &r->base;
	return 0;
}

/* "memsup-PID-run" / "memsup-PID-sup": the pid, else 0. */
static pid_t memsup_name_pid(const char *name)
{
	const char *p = name;
	long v = 0;
	if (strncmp(p, "memsup-", 7) != 0)
		return 0;
	for (p += 7; *p >= '0' && *p <= '9' && v < INT_MAX / 10; p++)
		v = v * 10 + (*p - '0');
	if (strcmp(p, "-run") != 0 && strcmp(p, "-sup") != 0)
		return 0;
	return (pid_t)v;
}

/* ---- the cgroups below the run's ---------------------------------------------- */

/* Past CG_WALK_DEPTH levels the walk goes on by path from the last fd
 * held, `base`: a chain a command made 40 cgroups deep once kept its
 * processes out of every sample and 132 cgroups behind for good, and
 * holding two fds a level down a chain of hundreds would run out of them.
 * Each directory's names are read and it is closed before its children
 * are walked, so the walk holds no fd of its own between visits; each
 * visit opens the parent and the child by path (`rel`, below base, as
 * long as PATH_MAX allows).  Children before their parent, as walk(). */
static int walk_deep(int base, char *rel, char *path, cgroup_visit_fn fn, void *ctx)
{
	int fd = openat(base, rel[0] ? rel : ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
	if (!d) {
		if (fd >= 0)
			close(fd);
		return 0;
	}
	char *names = NULL; /* the subdirectories' names, each NUL-ended */
	size_t len = 0, cap = 0;
	for (struct dirent *e; (e = readdir(d)) != NULL;) {
		size_t n = strlen(e->d_name) + 1;
		if ((e->d_type != DT_DIR && e->d_type != DT_UNKNOWN) ||
		    strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
			continue;
		if (len + n > cap) {
			size_t ncap = cap ? 2 * cap : 256;
			while (ncap < len + n)
				ncap *= 2;
			char *nn = realloc(names, ncap);
			if (!nn)
				break;
			names = nn;
			cap = ncap;
		}
		memcpy(names + len, e->d_name, n);
		len += n;
	}
	closedir(d);
	size_t rlen = strlen(rel), plen = strlen(path);
	int rc = 0;
	for (size_t at = 0; rc >= 0 && at < len; at += strlen(names + at) + 1) {
		const char *name = names + at;
		int rn = snprintf(rel + rlen, PATH_MAX - rlen, "%s%s", rlen ? "/" : "", name);
		int pn = snprintf(path + plen, PATH_MAX - plen, "/%s", name);
		if (rn > 0 && (size_t)rn < PATH_MAX - rlen && pn > 0 && (size_t)pn < PATH_MAX - plen) {
			rc = walk_deep(base, rel, path, fn, ctx);
			rel[rlen] = '\0';
			int pfd = rc < 0 ? -1 : openat(base, rlen ? rel : ".",
						      O_RDONLY | O_DIRECTORY | O_CLOEXEC);
			int cfd = pfd < 0 ? -1 : openat(pfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
							O_CLOEXEC);
			if (cfd >= 0)
				rc = fn(pfd, name, cfd, path, ctx);
			if (cfd >= 0)
				close(cfd);
			if (pfd >= 0)
				close(pfd);
		}
		rel[rlen] = '\0';
		path[plen] = '\0';
	}
	free(names);
	return rc;
}

static int walk(int dirfd, char *path, int depth, cgroup_visit_fn fn, void *ctx)
{
	/* fdopendir owns the fd it is given: one of its own, at offset 0 */
	int fd = openat(dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
	if (!d) {
		if (fd >= 0)
			close(fd);
		return 0; /* removed meanwhile: nothing below it */
	}
	size_t plen = strlen(path);
	int rc = 0;
	for (struct dirent *e; rc >= 0 && (e = readdir(d)) != NULL;) {
		/* a cgroup's subdirectories are its child cgroups; cgroupfs
		 * gives d_type, a fixture's file system may not */
		if ((e->d_type != DT_DIR && e->d_type != DT_UNKNOWN) ||
		    strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
			continue;
		int cfd = openat(dirfd, e->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (cfd < 0)
			continue; /* a file, or a cgroup gone since */
		int n = snprintf(path + plen, PATH_MAX - plen, "/%s", e->d_name);
		if (n > 0 && (size_t)n < PATH_MAX - plen) {
			/* past the depth, by path from this fd (walk_deep) */
			if (depth + 1 < CG_WALK_DEPTH) {
				rc = walk(cfd, path, depth + 1, fn, ctx);
			} else {
				char rel[PATH_MAX] = "";
				rc = walk_deep(cfd, rel, path, fn, ctx);
			}
			if (rc >= 0)
				rc = fn(dirfd, e->d_name, cfd, path, ctx);
		}
		close(cfd);
		path[plen] = '\0';
	}
	closedir(d);
	return rc;
}

int cgroup_walk_below(int dirfd, char *path, cgroup_visit_fn fn, void *ctx)
{
	MT_ASSERT(strlen(path) < PATH_MAX);
	return walk(dirfd, path, 0, fn, ctx);
}

/* Does the cgroup at fd hold a process of its own (its cgroup.procs not
 * empty)?  The first pid into *pid. */
static int holds_procs(int fd, pid_t *pid)
{
	char buf[64];
	size_t len;
	pid_t p[1] = { 0 };
	if (cgroup_read(fd, "cgroup.procs", buf, sizeof buf, &len) < 0 || len == 0)
		return 0;
	cgroup_parse_procs(buf, len, p, 1);
	if (pid)
		*pid = p[0];
	return 1;
}

/* Is there a subdirectory (a child cgroup) in the one at fd? */
static int has_child(int fd)
{
	int dfd = openat(fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	DIR *d = dfd >= 0 ? fdopendir(dfd) : NULL;
	int any = 0;
	if (!d) {
		if (dfd >= 0)
			close(dfd);
		return 0;
	}
	for (struct dirent *e; !any && (e = readdir(d)) != NULL;) {
		struct stat st;
		if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
			continue;
		any = e->d_type == DT_DIR ||
		      (e->d_type == DT_UNKNOWN &&
		       fstatat(fd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISDIR(st.st_mode));
	}
	closedir(d);
	return any;
}

/* The stale sweep's first pass: a process anywhere in the tree, or a
 * memsup named in it that is alive (a nested one, about to start its
 * command there), and the tree is not the sweep's to remove. */
static int sweep_check(int parentfd, const char *name, int fd, const char *path, void *ctx)
{
	(void)parentfd, (void)path, (void)ctx;
	pid_t pid = memsup_name_pid(name);
	if (holds_procs(fd, NULL) || (pid > 0 && !(kill(pid, 0) < 0 && errno == ESRCH)))
		return -EBUSY;
	return 0;
}

static int sweep_remove(int parentfd, const char *name, int fd, const char *path, void *ctx)
{
	(void)fd, (void)path, (void)ctx;
	unlinkat(parentfd, name, AT_REMOVEDIR);
	return 0;
}

void cgroup_sweep_stale(const char *own, pid_t self)
{
	DIR *d = opendir(own);
	if (!d)
		return;
	for (struct dirent *e; (e = readdir(d)) != NULL;) {
		pid_t pid = memsup_name_pid(e->d_name);
		/* only a memsup that is gone (EPERM: alive, another user's) */
		if (pid <= 0 || pid == self || !(kill(pid, 0) < 0 && errno == ESRCH))
			continue;
		int fd = openat(dirfd(d), e->d_name,
				O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (fd < 0)
			continue;
		/* the cgroups its command made below it first, bottom-up --
		 * unless something there still runs; rmdir refuses a cgroup
		 * that holds a process all the same */
		char path[PATH_MAX];
		snprintf(path, sizeof path, "%s/%s", own, e->d_name);
		if (!holds_procs(fd, NULL) && cgroup_walk_below(fd, path, sweep_check, NULL) == 0)
			cgroup_walk_below(fd, path, sweep_remove, NULL);
		close(fd);
		unlinkat(dirfd(d), e->d_name, AT_REMOVEDIR);
	}
	closedir(d);
}

int cgroup_make(struct cgrun *r, const char *own, const char *suffix, struct cg_dir *d)
{
	int n = snprintf(d->path, sizeof d->path, "%s/memsup-%d-%s", own, (int)r->self, suffix);
	if (n < 0 || (size_t)n >= sizeof d->path)
		return -ENAMETOOLONG;
	if (!r->premade) {
		if (mkdir(d->path, 0755) < 0) {
			/* a leftover of an earlier memsup that had our pid */
			if (errno != EEXIST || rmdir(d->path) < 0 || mkdir(d->path, 0755) < 0)
				return -errno;
		}
		d->made = 1;
	}
	d->fd = open(d->path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (d->fd < 0) {
		int rc = -errno;
		if (d->made)
			rmdir(d->path);
		d->made = 0;
		return rc;
	}
	return 0;
}

int cgroup_make_v1(struct cgrun *r, struct contain_info *info)
{
	int made = 0, first_err = 0;
	for (int h = CG_MEMORY; h < CG_NHIER; h++) {
		const char *own = r->layout.own[h];
		if (!own[0]) {
			if (h != CG_FREEZER) /* the freezer only matters without cgroup.kill */
				contain_missing(info, "%s controller: no cgroup v1 hierarchy of it "
						"holds memsup", hier_controller[h]);
			continue;
		}
		if (!r->premade)
			cgroup_sweep_stale(own, r->self);
		int rc = cgroup_make(r, own, "run", &r->dir[h]);
		if (rc < 0)
			contain_missing(info, "%s controller (cgroup v1): cannot make a cgroup in %s: %s",
					hier_controller[h], own, strerror(-rc));
		else
			made++;
		if (rc < 0 && !first_err)
			first_err = rc;
	}
	/* none made: the caller's error is the kernel's (EROFS, EACCES), not
	 * a made-up one */
	return made ? made : first_err;
}

static int open_in(int dirfd, const char *name, int flags)
{
	return dirfd >= 0 ? openat(dirfd, name, flags | O_CLOEXEC) : -1;
}

/* --max-procs as pids.max. */
static void set_pids_max(struct cgrun *r, unsigned max_procs, struct contain_info *info)
{
	char v[32];
	snprintf(v, sizeof v, "%u", max_procs);
	int rc = cgroup_write(r->pidsdir, "pids.max", v);
	if (rc < 0) {
		contain_missing(info, "pids.max: cannot set it: %s; --max-procs is counted at "
				"samples instead", strerror(-rc));
		info->pids = 0;
		return;
	}
	r->pids_events_fd = open_in(r->pidsdir, "pids.events", O_RDONLY);
}

/* An OOM kill in the run is told at once, whichever limit fired (so
 * that the sample that describes the kill is the one its event woke, not the
 * next periodic one).  v2: memory.events is a pollable file (POLLPRI at
 * each change of its counters, oom_kill among them).  v1: an eventfd
 * registered through cgroup.event_control on memory.oom_control turns
 * readable at each OOM of the run's cgroup or of any cgroup above it (the
 * kernel notifies the descendants of the cgroup whose limit fired); the
 * global OOM killer notifies none, and its kill is found by the counter
 * at the next sample. */
static void watch_oom(struct cgrun *r)
{
	if (r->oom_fd < 0)
		return;
	if (r->v2_files) {
		r->event_fd = r->oom_fd;
		r->event_events = POLLPRI;
		return;
	}
	int efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	char reg[64];
	if (efd < 0)
		return;
	snprintf(reg, sizeof reg, "%d %d", efd, r->oom_fd);
	if (cgroup_write(r->memdir, "cgroup.event_control", reg) == 0) {
		r->event_fd = efd;
		r->event_events = POLLIN;
		return;
	}
	close(efd);
}

/* --mem-max: the limit, no swap beyond it, the OOM kill seen at once. */
static int set_mem_max(struct cgrun *r, uint64_t bytes, struct contain_info *info)
{
	char v[32];
	snprintf(v, sizeof v, "%llu", (unsigned long long)bytes);
	int rc;
	if (r->v2_files) {
		rc = cgroup_write(r->memdir, "memory.max", v);
		/* one OOM kill takes the whole run, as a budget kill would */
		if (rc == 0 && cgroup_has(r->memdir, "memory.oom.group"))
			rc = cgroup_write(r->memdir, "memory.oom.group", "1");
		/* swapping past the limit would stretch the run instead of
		 * ending it: the limit is memory, not memory minus swap */
		if (rc == 0 && cgroup_has(r->memdir, "memory.swap.max"))
			rc = cgroup_write(r->memdir, "memory.swap.max", "0");
	} else {
		rc = cgroup_write(r->memdir, "memory.limit_in_bytes", v);
		r->own_limit = rc == 0;
		if (rc == 0 && cgroup_has(r->memdir, "memory.memsw.limit_in_bytes")) {
			rc = cgroup_write(r->memdir, "memory.memsw.limit_in_bytes", v);
			/* the kernel charges memory+swap first: at equal limits a
			 * charge fails there, and memory.failcnt never moves */
			r->memsw_failcnt_fd = open_in(r->memdir, "memory.memsw.failcnt", O_RDONLY);
		}
	}
	if (rc < 0) {
		contain_missing(info, "--mem-max: cannot set the memory limit: %s", strerror(-rc));
		return rc;
	}
	/* read back at every sample: a root command can raise it */
	snprintf(r->limit_text, sizeof r->limit_text, "%s", v);
	r->limit_fd = open_in(r->memdir, r->v2_files ? "memory.max" : "memory.limit_in_bytes",
			      O_RDONLY);
	if (r->limit_fd >= 0 && read_u64(r->limit_fd, &r->limit_set) < 0) {
		close(r->limit_fd);
		r->limit_fd = -1;
	}
	return 0;
}

/* --mem-max is memsup's promise, and a command running as root can write
 * the run's cgroup files: raise the limit (a run once reached 301 MB under
 * --mem-max 50 and exited 0, nothing said), or, on v1, set
 * oom_kill_disable, which leaves the tree waiting at the limit for good.
 * Each sample reads the limit back; one that changed is written again (v1:
 * its memory+swap limit too) -- which the kernel refuses while the tree
 * holds more than it (v1, EBUSY), and then the run ends -- and an
 * oom_kill_disable is turned off.  st says what was found. */
static void keep_the_limit(struct cgrun *r, struct contain_state *st, const char *oom_text,
			   size_t oom_len)
{
	uint64_t now, off;
	if (read_u64(r->limit_fd, &now) == 0 && now != r->limit_set) {
		st->limit_found = now;
		int rc = cgroup_write(r->memdir, r->v2_files ? "memory.max" : "memory.limit_in_bytes",
				      r->limit_text);
		if (rc == 0 && r->memsw_failcnt_fd >= 0)
			rc = cgroup_write(r->memdir, "memory.memsw.limit_in_bytes", r->limit_text);
		st->limit_restored = rc == 0 ? 1 : rc;
	}
	if (oom_text && !r->v2_files &&
	    cgroup_parse_key(oom_text, oom_len, "oom_kill_disable", &off) == 0 && off &&
	    cgroup_write(r->memdir, "memory.oom_control", "0") == 0)
		st->oom_reenabled = 1;
}

/* A cgroup below the run's is made by a mkdir there, which inotify tells
 * (IN_CREATE): until it has, the run's own cgroup.procs lists the whole
 * tree, and a sample reads neither cgroup.stat nor the directory.  The
 * watch is set before the command starts, and a directory already there
 * (a premade one) is looked for after it: none is missed. */
static void watch_below(struct cgrun *r, const char *path)
{
	if (r->list_dir < 0 || !path || !path[0])
		return;
	int fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
	if (fd < 0)
		return;
	if (inotify_add_watch(fd, path, IN_CREATE | IN_ONLYDIR) < 0) {
		close(fd);
		return;
	}
	r->below_fd = fd;
	r->below = has_child(r->list_dir);
}

int cgroup_setup(struct cgrun *r, const struct contain_config *cfg, struct contain_info *info)
{
	struct cg_dir *v2 = &r->dir[CG_V2];
	if (r->v2_files) {
		r->memdir = cgroup_has(v2->fd, "memory.current") ? v2->fd : -1;
		r->pidsdir = cgroup_has(v2->fd, "pids.max") ? v2->fd : -1;
	} else {
		r->memdir = r->dir[CG_MEMORY].fd;
		r->pidsdir = r->dir[CG_PIDS].fd;
	}
	/* members: any hierarchy lists the same processes; v2 first (the
	 * command is in it from its first instruction) */
	static const int order[] = { CG_V2, CG_PIDS, CG_MEMORY, CG_FREEZER };
	const char *list_path = NULL;
	for (size_t i = 0; i < 4 && r->procs_fd < 0; i++) {
		r->procs_fd = open_in(r->dir[order[i]].fd, "cgroup.procs", O_RDONLY);
		if (r->procs_fd >= 0) {
			r->list_dir = r->dir[order[i]].fd;
			list_path = r->dir[order[i]].path;
		}
	}
	watch_below(r, list_path);
	/* v2 counts the cgroups below (nr_descendants): no walk while none */
	if (v2->fd >= 0 && r->list_dir == v2->fd)
		r->cgstat_fd = open_in(r->list_dir, "cgroup.stat", O_RDONLY);
	else
		r->procs_fresh = 1; /* v1: see list_procs */
	if (r->procs_fd < 0) {
		contain_missing(info, "no cgroup of the run could be opened to list its processes");
		return -ENOENT;
	}
	for (int h = CG_MEMORY; h < CG_NHIER; h++) {
		r->join_fd[h] = open_in(r->dir[h].fd, "cgroup.procs", O_WRONLY);
		if (r->dir[h].fd >= 0 && r->join_fd[h] < 0) {
			contain_missing(info, "cannot open %s/cgroup.procs to start the command "
					"there: %s", r->dir[h].path, strerror(errno));
			return -errno;
		}
	}
	if (cgroup_has(v2->fd, "cgroup.kill"))
		r->kill = CG_KILL_FILE;
	else if (cgroup_has(v2->fd, "cgroup.freeze"))
		r->kill = CG_KILL_FREEZE;
	else if (r->dir[CG_FREEZER].fd >= 0)
		r->kill = CG_KILL_FREEZER;
	static const char *const kill_names[] = { "stop-and-kill", "cgroup.kill", "cgroup.freeze",
						  "freezer" };
	info->kill = kill_names[r->kill];
	if (r->kill == CG_KILL_NONE)
		contain_missing(info, "no cgroup.kill, cgroup.freeze or v1 freezer: the tree is "
				"killed by SIGSTOP sweeps, then SIGKILL to each process and group");
	info->memory = r->memdir >= 0;
	info->pids = r->pidsdir >= 0;
	r->usage_fd = open_in(r->memdir, r->v2_files ? "memory.current" : "memory.usage_in_bytes",
			      O_RDONLY);
	/* what the usage is made of, and the limit's events, every sample
	 * (each -1 where the kernel has no such file) */
	r->stat_fd = open_in(r->memdir, "memory.stat", O_RDONLY);
	r->oom_fd = open_in(r->memdir, r->v2_files ? "memory.events" : "memory.oom_control",
			    O_RDONLY);
	if (!r->v2_files) {
		r->kmem_fd = open_in(r->memdir, "memory.kmem.usage_in_bytes", O_RDONLY);
		r->failcnt_fd = open_in(r->memdir, "memory.failcnt", O_RDONLY);
	}
	watch_oom(r);
	if (cfg->max_procs && info->pids)
		set_pids_max(r, cfg->max_procs, info);
	else if (cfg->max_procs)
		contain_missing(info, "pids controller: none for the run; --max-procs is counted "
				"at samples, not enforced by the kernel");
	if (cfg->mem_max && !info->memory) {
		contain_missing(info, "--mem-max needs a memory cgroup, and the run has none");
		return -ENOTSUP;
	}
	if (cfg->mem_max && set_mem_max(r, cfg->mem_max, info) < 0)
		return -EIO;
	info->n_paths = 0;
	info->memory_path = -1;
	for (int h = 0; h < CG_NHIER; h++) {
		if (r->dir[h].fd < 0 || info->n_paths >= CONTAIN_MAX_PATHS)
			continue;
		if (r->memdir >= 0 && r->dir[h].fd == r->memdir) {
			info->memory_path = (int)info->n_paths;
			info->memory_v2 = r->v2_files;
		}
		snprintf(info->paths[info->n_paths++], PATH_MAX, "%s", r->dir[h].path);
	}
	return 0;
}

/* ---- the shared ops ----------------------------------------------------------- */

static struct cgrun *of(struct contain *c)
{
	return (struct cgrun *)c;
}

static const struct cgrun *of_const(const struct contain *c)
{
	return (const struct cgrun *)c;
}

static void close_fd(int *fd)
{
	if (*fd >= 0)
		close(*fd);
	*fd = -1;
}

static void members_clear(struct pidmap *m)
{
	for (size_t i = 0; i < m->cap; i++) {
		struct cg_member *e = pidmap_slot(m, i);
		if (e && e->fd >= 0)
			close(e->fd);
	}
	pidmap_clear(m);
}

void cgroup_run_close(struct contain *c)
{
	struct cgrun *r = of(c);
	for (int h = 0; h < CG_NHIER; h++) {
		close_fd(&r->dir[h].fd);
		close_fd(&r->join_fd[h]);
	}
	close_fd(&r->sup.fd);
	if (r->event_fd != r->oom_fd)
		close_fd(&r->event_fd);
	close_fd(&r->watch_fd);
	close_fd(&r->oom_fd);
	close_fd(&r->procs_fd);
	close_fd(&r->cgstat_fd);
	close_fd(&r->below_fd);
	close_fd(&r->usage_fd);
	close_fd(&r->stat_fd);
	close_fd(&r->kmem_fd);
	close_fd(&r->failcnt_fd);
	close_fd(&r->memsw_failcnt_fd);
	close_fd(&r->pids_events_fd);
	close_fd(&r->limit_fd);
	close_fd(&r->proc_fd);
	members_clear(&r->members);
	pidmap_free(&r->members);
	free(r->buf);
	free(r->pids);
	free(r->below_pids);
	free(r->smp);
	munmap(r, sizeof *r); /* cgroup_run_begin() */
}

const char *cgroup_run_name(const struct contain *c)
{
	(void)c;
	return "cgroup";
}

int cgroup_run_start(struct contain *c, const struct spawn_request *req, struct spawn_result *res)
{
	struct cgrun *r = of(c);
	int join[CG_NHIER];
	size_t n = 0;
	for (int h = CG_MEMORY; h < CG_NHIER; h++)
		if (r->join_fd[h] >= 0)
			join[n++] = r->join_fd[h];
	struct spawn_cgroup cg = { r->dir[CG_V2].fd, join, n };
	struct spawn_request rq = *req;
	rq.cgroup = &cg;
	return spawn_start(&rq, res);
}

/* A cgroup.procs (open at fd) whole into r->buf, *len bytes. */
static int read_procs(struct cgrun *r, int fd, size_t *len)
{
	for (;;) {
		if (r->buf_cap == 0 || !r->buf) {
			r->buf = malloc(4096);
			if (!r->buf)
				return -ENOMEM;
			r->buf_cap = 4096;
		}
		int rc = procfs_pread_list(fd, r->buf, r->buf_cap, len);
		if (rc < 0)
			return rc;
		if (*len + 1 < r->buf_cap)
			return 0;
		/* it filled the buffer: there may be more */
		char *nb = realloc(r->buf, r->buf_cap * 2);
		if (!nb)
			return -ENOMEM;
		r->buf = nb;
		r->buf_cap *= 2;
	}
}

/* The pids of the cgroup.procs open at fd, after r->pids[0..npids). */
static int add_procs(struct cgrun *r, int fd)
{
	size_t len;
	int rc = read_procs(r, fd, &len);
	if (rc < 0)
		return rc;
	size_t room = r->pids_cap - r->npids;
	long n = cgroup_parse_procs(r->buf, len, r->pids + r->npids, room);
	if (n < 0)
		return (int)n;
	if ((size_t)n > room) {
		size_t cap = (r->npids + (size_t)n) * 2;
		pid_t *np = realloc(r->pids, cap * sizeof *np);
		if (!np)
			return -ENOMEM;
		r->pids = np;
		r->pids_cap = cap;
		n = cgroup_parse_procs(r->buf, len, r->pids + r->npids, cap - r->npids);
	}
	r->npids += (size_t)n;
	MT_ASSERT(r->npids <= r->pids_cap);
	return 0;
}

static int list_visit(int parentfd, const char *name, int fd, const char *path, void *ctx)
{
	(void)parentfd, (void)name, (void)path;
	int pfd = openat(fd, "cgroup.procs", O_RDONLY | O_CLOEXEC);
	if (pfd < 0)
		return 0; /* removed since the directory was read */
	int rc = add_procs(ctx, pfd);
	close(pfd);
	/* one that went between open and read lists nothing */
	return rc == -ENOMEM ? rc : 0;
}

/* Are there cgroups below the listing one?  v2 says so in cgroup.stat;
 * v1 has no such count, so it is always looked. */
static int has_descendants(struct cgrun *r)
{
	uint64_t n;
	if (r->list_dir < 0 || !r->below)
		return 0;
	if (r->cgstat_fd < 0 || read_key(r->cgstat_fd, "nr_descendants", &n) < 0)
		return 1;
	return n > 0;
}

/* The walk below the run's cgroup costs a directory read and an open and
 * a read of cgroup.procs per cgroup: with thousands of them, at every
 * sample, memsup took more CPU than the command (2,080 cgroups: 34.9 s of
 * CPU in a 73 s run).  So a sample walks again only once CG_WALK_PACE times
 * the last walk's own time has passed -- the walk then costs at most about
 * 1/CG_WALK_PACE of a CPU -- and, in between, lists the pids the last walk
 * found (a dead one drops out, never reopened: cgroup_run_sample).  A walk
 * of a few cgroups takes tens of microseconds and still runs at every
 * sample; the kill's and the end's listings always walk.  What the pace
 * costs: a process made in a cgroup below between two walks is in the
 * per-process figures from the next walk on; the kernel's figures for the
 * run's cgroup count it at once. */
#define CG_WALK_PACE 10u
#define CG_WALK_PACE_MAX_NS (2ull * 1000000000ull)

/* Append pids to r->pids, growing it. */
static int add_pids(struct cgrun *r, const pid_t *pids, size_t n)
{
	if (!n) /* pids may be NULL */
		return 0;
	if (r->pids_cap - r->npids < n) {
		size_t cap = (r->npids + n) * 2;
		pid_t *np = realloc(r->pids, cap * sizeof *np);
		if (!np)
			return -ENOMEM;
		r->pids = np;
		r->pids_cap = cap;
	}
	memcpy(r->pids + r->npids, pids, n * sizeof *pids);
	r->npids += n;
	return 0;
}

/* Keep r->pids[from..npids) as the walk's pids, for the samples until the
 * next walk. */
static int keep_walk(struct cgrun *r, size_t from)
{
	size_t n = r->npids - from;
	if (r->below_cap < n) {
		pid_t *np = realloc(r->below_pids, n * 2 * sizeof *np);
		if (!np)
			return -ENOMEM;
		r->below_pids = np;
		r->below_cap = n * 2;
	}
	if (n) /* none below: below_pids may still be NULL */
		memcpy(r->below_pids, r->pids + from, n * sizeof *r->below_pids);
	r->below_n = n;
	r->below_cached = 1;
	return 0;
}

/* cgroup.procs of the run's cgroup and of every cgroup below it into
 * r->pids (duplicates possible in v1, and when a process moves between
 * two cgroups while they are read).  `fresh`: walk whatever the pace says
 * (the kill's and the end's listings). */
static int list_procs(struct cgrun *r, int fresh)
{
	r->npids = 0;
	r->cached_from = SIZE_MAX;
	/* cgroup v1 serves cgroup.procs from a list it makes when the file is
	 * opened and keeps while it is read again within a second (the
	 * pidlist cache, kernel/cgroup/cgroup-v1.c): a held fd read again at
	 * offset 0 gives the list of the last open, by anyone -- on the test
	 * VM a main process reaped long before stayed listed, and the kill
	 * loop spun on it for seconds.  So v1 opens the file anew each time. */
	int fd = r->procs_fresh ? openat(r->list_dir, "cgroup.procs", O_RDONLY | O_CLOEXEC)
				: r->procs_fd;
	if (fd < 0)
		return -errno;
	int rc = add_procs(r, fd);
	if (fd != r->procs_fd)
		close(fd);
	if (rc < 0 || !has_descendants(r)) {
		r->below_cached = 0;
		return rc;
	}
	size_t from = r->npids;
	uint64_t t0 = clock_mono_ns();
	if (!fresh && r->below_cached && t0 < r->next_walk_ns) {
		r->walk_paced = 1;
		r->cached_from = from;
		return add_pids(r, r->below_pids, r->below_n);
	}
	char path[PATH_MAX] = "";
	rc = cgroup_walk_below(r->list_dir, path, list_visit, r);
	/* only a sample's walk is kept: the sample opens each pid's statm
	 * as it is listed, and a later sample reads a kept pid only through
	 * that fd (a kill's listing opens nothing) */
	if (rc < 0 || fresh)
		return rc;
	uint64_t took = clock_mono_ns() - t0, pace = took * CG_WALK_PACE;
	if (pace > CG_WALK_PACE_MAX_NS)
		pace = CG_WALK_PACE_MAX_NS;
	r->next_walk_ns = t0 + pace;
	if (r->walk_paced && pace > r->walk_pace_max_ns)
		r->walk_pace_max_ns = pace;
	return keep_walk(r, from);
}

/* What the pace cost, said once at the end (list_procs). */
static void note_walk_pace(struct cgrun *r)
{
	if (!r->walk_paced || r->walk_noted)
		return;
	r->walk_noted = 1;
	contain_missing(&r->base.info, "the cgroups below the run's were walked for their "
			"processes at most every %.0f ms (%u times a walk's own time): a process "
			"made in one was in the per-process figures from the next walk on, in "
			"the kernel's at once", (double)r->walk_pace_max_ns / 1e6 + 0.5,
			CG_WALK_PACE);
}

int cgroup_run_members(struct contain *c, const pid_t **pids, size_t *n)
{
	struct cgrun *r = of(c);
	/* the kill's listing (and the sentinel's, whose copy of the watch
	 * memsup may have drained) never trusts the watch: it looks below */
	r->below = 1;
	int rc = list_procs(r, 1);
	if (rc < 0)
		return rc;
	*pids = r->pids;
	*n = r->npids;
	return 0;
}

/* A member's RSS and text pages, through its statm fd (opened at first
 * sight). */
static int member_read(struct cgrun *r, struct cg_member *m, struct tree_member *out)
{
	for (int attempt = 0; attempt < 2; attempt++) {
		if (m->fd < 0) {
			int fd = procfs_open_statm(r->proc_fd, m->pid);
			if (fd < 0)
				return PROCFS_GONE;
			m->fd = fd;
		}
		int rc = procfs_pread_statm(m->fd, &out->rss, &out->text_pages);
		if (rc != PROCFS_GONE || attempt)
			return rc;
		/* the fd named a process that died; cgroup.procs names a live
		 * one with the same pid: open it anew */
		close_fd(&m->fd);
	}
	return PROCFS_GONE;
}

/* Forget the members the last listing did not name (their fds closed). */
static int members_prune(struct cgrun *r, size_t seen)
{
	if (r->members.used == seen)
		return 0;
	r->left = 1;
	struct pidmap keep;
	pidmap_init(&keep, sizeof(struct cg_member));
	if (pidmap_reserve(&keep, seen) < 0)
		return -ENOMEM;
	for (size_t i = 0; i < r->members.cap; i++) {
		struct cg_member *e = pidmap_slot(&r->members, i);
		if (!e)
			continue;
		if (e->round == r->round) {
			struct cg_member *k = pidmap_add(&keep, e->pid, NULL);
			if (k) {
				*k = *e;
				continue;
			}
		}
		if (e->fd >= 0)
			close(e->fd);
	}
	pidmap_free(&r->members);
	r->members = keep;
	return 0;
}

int cgroup_run_sample(struct contain *c, uint64_t *rss, unsigned *nprocs)
{
	struct cgrun *r = of(c);
	int rc = list_procs(r, 0);
	if (rc < 0)
		return rc;
	if (r->smp_cap < r->npids) {
		struct tree_member *ns = realloc(r->smp, r->npids * 2 * sizeof *ns);
		if (!ns)
			return -ENOMEM;
		r->smp = ns;
		r->smp_cap = r->npids * 2;
	}
	r->round++;
	uint64_t sum = 0;
	size_t seen = 0;
	r->nsmp = 0;
	for (size_t i = 0; i < r->npids; i++) {
		int added;
		struct cg_member *m = pidmap_add(&r->members, r->pids[i], &added);
		if (!m)
			return -ENOMEM;
		if (added)
			m->fd = -1;
		else if (m->round == r->round)
			continue; /* listed twice (cgroup v1 may) */
		m->round = r->round;
		seen++;
		/* one that exited since the listing is skipped, not a zero; a
		 * pid from the last walk (not listed now) is read only through
		 * the fd opened when it was: its number may be another's now */
		struct tree_member *t = &r->smp[r->nsmp];
		int cached = i >= r->cached_from;
		if (cached && m->fd < 0)
			continue;
		if ((cached ? procfs_pread_statm(m->fd, &t->rss, &t->text_pages)
			    : member_read(r, m, t)) == 0) {
			t->pid = m->pid;
			sum += t->rss;
			r->nsmp++;
		}
	}
	members_prune(r, seen);
	*rss = sum;
	*nprocs = (unsigned)r->nsmp;
	return 0;
}

size_t cgroup_run_sampled(const struct contain *c, const struct tree_member **out)
{
	const struct cgrun *r = of_const(c);
	*out = r->smp;
	return r->nsmp;
}

/* memory.stat's split, and on v1 the kernel memory beside it, through
 * the fds kept open.
 *
 * How the parts stack up to the usage.  Every part is memory the cgroup
 * is charged for, and no page is in two of them (but a swap-cached anon
 * page, in both anon and file: this project's machines have no swap).
 * What remains is the kernel's batching: each CPU charges the counter
 * ahead of use, up to 64 pages at a time, and memory.stat's counters are
 * flushed from per-CPU deltas only once these pass about 64 pages per CPU
 * -- so the usage runs ahead of the parts' sum by up to a few hundred KB a
 * CPU, more while the tree is growing fast.  Not in the parts: v2's
 * "hugetlb" (charged only with the memory_hugetlb_accounting mount
 * option).  On cgroup v1, memory.usage_in_bytes holds the kernel memory
 * (memory.kmem.usage_in_bytes is a part of it, not an addition; its TCP
 * buffers, memory.kmem.tcp.*, are counted apart and are in neither).  On
 * this project's 2-CPU test VM (Linux 6.18, hybrid layout; total_rss
 * includes total_rss_huge, as v1's documentation says), a tree holding
 * 64 MB in huge pages read total_rss 65110016 (total_rss_huge 65011712),
 * kmem 196608 and usage 65531904: 225 KB above the sum; one holding 480
 * full pipes read kmem 32649216, total_rss 110592 and usage 32768000, 8
 * KB above it. */
static int read_memstat(struct cgrun *r, struct cg_memstat *ms)
{
	char buf[8192];
	size_t len;
	if (r->stat_fd < 0)
		return -ENOENT;
	int rc = procfs_pread_fd(r->stat_fd, buf, sizeof buf, &len);
	if (rc < 0)
		return rc;
	/* a text that fills the buffer may end in a number cut short */
	if (len + 1 >= sizeof buf)
		return -EFBIG;
	rc = cgroup_parse_memstat(buf, len, r->v2_files, ms);
	if (rc == 0 && !r->v2_files && (r->kmem_fd < 0 || read_u64(r->kmem_fd, &ms->kernel) < 0))
		ms->kernel = 0; /* a kernel without kmem accounting */
	/* the counters are flushed apart: never more shared memory than file */
	if (rc == 0 && ms->shmem > ms->file)
		ms->shmem = ms->file;
	return rc;
}

/* The limit's events: v2's memory.events holds both counters.  v1 has
 * memory.failcnt beside memory.oom_control, and, under --mem-max, the
 * memory+swap counter's failcnt: each failed charge counts in one of the
 * two, the first that refused it.  From Linux 6.15 the kernel keeps no
 * failcnt for memory+swap, so under --mem-max (both limits equal, memsw
 * checked first) a v1 run's limit hits read 0 there -- on the test VM
 * (6.18) a grower stopped by --mem-max 40 read failcnt 0 and oom_kill 1,
 * and 99 failures without the memsw limit -- and its OOM kills are the
 * event that shows. */
static int read_events(struct cgrun *r, struct contain_state *st, char *buf, size_t cap,
		       size_t *len_out)
{
	size_t len = 0;
	uint64_t memsw = 0;
	*len_out = 0;
	if (r->oom_fd < 0)
		return -ENOENT;
	int rc = procfs_pread_fd(r->oom_fd, buf, cap, &len);
	*len_out = rc == 0 ? len : 0;
	if (rc == 0)
		rc = cgroup_parse_key(buf, len, "oom_kill", &st->oom_kills);
	/* v1's failcnt counts the charges that failed at this cgroup's own
	 * limit (a failure at an ancestor's counts there): without a limit
	 * of the run's own it cannot move from the 0 the run began with */
	if (rc == 0 && !r->v2_files && !r->own_limit && !r->premade)
		st->limit_hits = 0;
	else if (rc == 0)
		rc = r->v2_files ? cgroup_parse_key(buf, len, "max", &st->limit_hits)
		   : r->failcnt_fd >= 0 ? read_u64(r->failcnt_fd, &st->limit_hits) : -ENOENT;
	if (rc == 0 && r->memsw_failcnt_fd >= 0 && read_u64(r->memsw_failcnt_fd, &memsw) == 0)
		st->limit_hits += memsw;
	if (rc == 0)
		st->have_events = 1;
	return rc;
}

/* memory.stat is the costliest file of a sample (the kernel sums its
 * counters over the cgroup and its descendants, 40 lines on v1, and on v1
 * kmem is read beside it) and the one that moves least: a usage that did
 * not move left the parts where they were, but for the counters' per-CPU
 * flush (read_memstat), which this many samples later are read again. */
#define CG_SPLIT_KEEP_SAMPLES 10u

int cgroup_split_agrees(uint64_t usage, const struct cg_memstat *ms)
{
	uint64_t sum = ms->anon + ms->file + ms->kernel;
	uint64_t gap = usage > sum ? usage - sum : sum - usage;
	return gap <= CG_SPLIT_SLACK_BYTES + usage / 16;
}

int cgroup_run_poll(struct contain *c, struct contain_state *st)
{
	struct cgrun *r = of(c);
	memset(st, 0, sizeof *st);
	if (r->usage_fd >= 0 && read_u64(r->usage_fd, &st->usage) == 0)
		st->have_usage = 1;
	if (r->have_split && st->have_usage && st->usage == r->split_usage &&
	    r->split_kept < CG_SPLIT_KEEP_SAMPLES) {
		r->split_kept++;
	} else {
		r->have_split = read_memstat(r, &r->split) == 0;
		if (r->have_split && st->have_usage && !cgroup_split_agrees(st->usage, &r->split)) {
			/* the tree moved between the two reads (a member
			 * ended, or grew fast, while memsup waited for the
			 * CPU): both once more, so that the parts are of the
			 * usage they stand beside */
			uint64_t again;
			if (read_u64(r->usage_fd, &again) == 0)
				st->usage = again;
			r->have_split = read_memstat(r, &r->split) == 0;
		}
		r->split_usage = st->usage;
		/* without the usage there is nothing to keep it by */
		r->split_kept = st->have_usage ? 0 : CG_SPLIT_KEEP_SAMPLES;
	}
	if (r->have_split) {
		const struct cg_memstat *ms = &r->split;
		st->have_split = 1;
		/* still apart after the second reading: the kernel's own
		 * moment, an exiting member's pages unmapped (out of anon) and
		 * not yet uncharged (in the usage) */
		st->split_agrees = !st->have_usage || cgroup_split_agrees(st->usage, ms);
		st->anon = ms->anon;
		st->page_cache = ms->file - ms->shmem;
		st->shmem = ms->shmem;
		st->kernel = ms->kernel;
	}
	/* v1's oom_control without a limit of the run's own: its oom_kill
	 * moves only when the kernel kills a member, which then leaves the
	 * listing (its counter is raised before the victim exits), so it is
	 * read at the first sample and at each one after a member left;
	 * in between the last reading stands.  Under a limit of the run's
	 * own (its failcnt moves on every failed charge), and on v2, at
	 * every sample */
	int events_fixed = !r->v2_files && !r->own_limit && !r->premade;
	char oom_text[1024];
	size_t oom_len = 0;
	/* the v1 eventfd, drained: it waits for the next OOM.  One that
	 * fired is read now, the victim perhaps still listed */
	int told = 0;
	if (r->event_fd >= 0 && r->event_fd != r->oom_fd) {
		uint64_t x;
		if (read(r->event_fd, &x, sizeof x) == (ssize_t)sizeof x)
			told = 1;
		else if (errno != EAGAIN)
			return -errno;
	}
	if (events_fixed && r->have_events && !r->left && !told) {
		st->have_events = 1;
		st->oom_kills = r->oom_kills;
		st->limit_hits = r->limit_hits;
	} else if (read_events(r, st, oom_text, sizeof oom_text, &oom_len) == 0) {
		r->have_events = 1;
		r->oom_kills = st->oom_kills;
		r->limit_hits = st->limit_hits;
		r->left = 0;
	}
	if (r->limit_fd >= 0)
		keep_the_limit(r, st, oom_len ? oom_text : NULL, oom_len);
	if (r->pids_events_fd >= 0)
		read_key(r->pids_events_fd, "max", &st->forks_refused);
	return 0;
}

int cgroup_run_event_fd(const struct contain *c, short *events)
{
	const struct cgrun *r = of_const(c);
	*events = r->event_events;
	return r->event_fd;
}

/* ---- the memory's movement (contain_watch) ---------------------------------- */

const char *cgroup_run_unwatchable(const struct contain *c)
{
	const struct cgrun *r = of_const(c);
	if (r->memdir < 0)
		return "no memory cgroup for the run: nothing tells memsup that the memory moved";
	/* v2's memory.events counts limit events alone (low, high, max, oom);
	 * a PSI trigger (memory.pressure) tells of stalls, not of usage, and
	 * its first event after arming can be spurious */
	if (r->v2_files)
		return "cgroup v2 has no notification of a usage crossing a mark in its core "
		       "files (memory.events counts limit events; memory.pressure, stalls)";
	if (r->usage_fd < 0 || !cgroup_has(r->memdir, "cgroup.event_control"))
		return "the v1 memory cgroup has no memory.usage_in_bytes or "
		       "cgroup.event_control to set thresholds on";
	return NULL;
}

/* One threshold on memory.usage_in_bytes, told to efd. */
static int watch_mark(struct cgrun *r, int efd, uint64_t mark)
{
	char reg[96];
	snprintf(reg, sizeof reg, "%d %d %llu", efd, r->usage_fd, (unsigned long long)mark);
	return cgroup_write(r->memdir, "cgroup.event_control", reg);
}

int cgroup_run_watch(struct contain *c, uint64_t low, uint64_t high)
{
	struct cgrun *r = of(c);
	/* closing the eventfd is what unregisters its thresholds (the
	 * kernel drops them when the eventfd's file is released) */
	close_fd(&r->watch_fd);
	if (cgroup_run_unwatchable(c))
		return -ENOTSUP;
	int efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (efd < 0)
		return -errno;
	int rc = watch_mark(r, efd, high);
	if (rc == 0 && low > 0)
		rc = watch_mark(r, efd, low);
	if (rc < 0) {
		close(efd);
		return rc;
	}
	r->watch_fd = efd;
	/* the usage may have crossed a mark between the caller's reading and
	 * the registration, which the kernel then never tells: told here */
	uint64_t now;
	if (read_u64(r->usage_fd, &now) == 0 && (now >= high || (low > 0 && now <= low))) {
		uint64_t one = 1;
		if (write(efd, &one, sizeof one) < 0)
			return -errno;
	}
	return 0;
}

int cgroup_run_below_fd(const struct contain *c)
{
	const struct cgrun *r = of_const(c);
	return r->below ? -1 : r->below_fd;
}

void cgroup_run_below_told(struct contain *c)
{
	struct cgrun *r = of(c);
	/* from now on every listing looks below: the watch has done its work */
	r->below = 1;
	close_fd(&r->below_fd);
}

int cgroup_run_watch_fd(const struct contain *c)
{
	return of_const(c)->watch_fd;
}

void cgroup_run_unwatch(struct contain *c)
{
	close_fd(&of(c)->watch_fd);
}

int cgroup_run_figures(struct contain *c, struct contain_figures *f)
{
	struct cgrun *r = of(c);
	memset(f, 0, sizeof *f);
	if (r->memdir >= 0) {
		int fd = open_in(r->memdir, r->v2_files ? "memory.peak" : "memory.max_usage_in_bytes",
				 O_RDONLY);
		if (fd >= 0 && read_u64(fd, &f->peak) == 0)
			f->have_peak = 1;
		if (fd >= 0)
			close(fd);
		struct cg_memstat ms;
		if (read_memstat(r, &ms) == 0) {
			f->have_stat = 1;
			f->anon = ms.anon;
			f->file = ms.file;
			f->kernel = ms.kernel;
		}
		fd = open_in(r->memdir, r->v2_files ? "memory.events" : "memory.oom_control",
			     O_RDONLY);
		if (fd >= 0 && read_key(fd, "oom_kill", &f->oom_kills) == 0)
			f->have_oom = 1;
		if (fd >= 0)
			close(fd);
	}
	if (r->pidsdir >= 0) {
		int fd = open_in(r->pidsdir, "pids.events", O_RDONLY);
		if (fd >= 0 && read_key(fd, "max", &f->forks_refused) == 0)
			f->have_pids = 1;
		if (fd >= 0)
			close(fd);
	}
	return 0;
}

static void sleep_ms(int ms)
{
	struct timespec ts = { 0, (long)ms * 1000000L };
	nanosleep(&ts, NULL);
}

/* v1's freezer below the run's: a cgroup whose own state is FROZEN stays
 * frozen when its parent thaws (v1 freezing is hierarchical: it freezes
 * with the run's, but thaws only by its own freezer.state), and a
 * SIGKILLed task in it never dies -- its cgroup can then never be
 * removed.  So each descendant is thawed, bottom-up, as BenchExec does. */
static int thaw_visit(int parentfd, const char *name, int fd, const char *path, void *ctx)
{
	(void)parentfd, (void)name, (void)path, (void)ctx;
	cgroup_write(fd, "freezer.state", "THAWED");
	return 0;
}

static void thaw_below(struct cgrun *r)
{
	char path[PATH_MAX] = "";
	if (r->dir[CG_FREEZER].fd >= 0)
		cgroup_walk_below(r->dir[CG_FREEZER].fd, path, thaw_visit, r);
}

/* Freeze, SIGKILL every member, thaw.  Frozen, none can fork, so the
 * listing taken then is complete (it holds the cgroups below the run's:
 * freezing reaches them too); a SIGKILLed frozen task dies when thawed
 * (v1) or at once (v2). */
static int freeze_kill_thaw(struct cgrun *r, int fd, const char *file, const char *freeze,
			    const char *thaw)
{
	int rc = cgroup_write(fd, file, freeze);
	if (rc < 0)
		return rc;
	/* wait (briefly: a task in D state keeps it FREEZING) for the freeze */
	for (int i = 0; i < 100; i++) {
		char buf[256];
		size_t len;
		uint64_t frozen = 0;
		if (r->kill == CG_KILL_FREEZE) {
			if (cgroup_read(fd, "cgroup.events", buf, sizeof buf, &len) == 0 &&
			    cgroup_parse_key(buf, len, "frozen", &frozen) == 0 && frozen)
				break;
		} else if (cgroup_read(fd, "freezer.state", buf, sizeof buf, &len) == 0 &&
			   strncmp(buf, "FROZEN", 6) == 0) {
			break;
		}
		sleep_ms(1);
	}
	if (list_procs(r, 1) == 0)
		for (size_t i = 0; i < r->npids; i++)
			kill(r->pids[i], SIGKILL);
	return cgroup_write(fd, file, thaw);
}

static int is_listed(const pid_t *pids, size_t n, pid_t pid)
{
	for (size_t i = 0; i < n; i++)
		if (pids[i] == pid)
			return 1;
	return 0;
}

/* A member the kill cannot end because it moved itself into a v1 freezer
 * cgroup outside the run that is frozen: SIGKILL waits for a thaw, and
 * memsup used to wait with it.  That cgroup is thawed when every process
 * in it is a member -- the thaw then wakes only the run's own, to die --
 * and left alone when it holds anyone else's.  Members are `pids`, as
 * listed for this kill. */
static void thaw_frozen_outside(struct cgrun *r, const pid_t *pids, size_t n)
{
	if (r->dir[CG_FREEZER].fd < 0 || r->premade)
		return;
	size_t run_len = strlen(r->dir[CG_FREEZER].path);
	for (size_t i = 0; i < n; i++) {
		char file[64], text[4096], path[PATH_MAX], dir[PATH_MAX + 16], buf[64];
		size_t len;
		snprintf(file, sizeof file, "%s/%d/cgroup", r->proc_root, (int)pids[i]);
		if (procfs_read_file(file, text, sizeof text, &len) < 0 ||
		    !own_path(text, len, "freezer", path, sizeof path) ||
		    join(dir, sizeof dir, r->root, "/freezer") < 0 ||
		    strlen(dir) + strlen(path) >= sizeof dir)
			continue;
		strcat(dir, strcmp(path, "/") == 0 ? "" : path);
		if (strncmp(dir, r->dir[CG_FREEZER].path, run_len) == 0 &&
		    (dir[run_len] == '\0' || dir[run_len] == '/'))
			continue; /* the run's own, or below it: thawed already */
		int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (fd < 0)
			continue;
		int frozen = cgroup_read(fd, "freezer.state", buf, sizeof buf, &len) == 0 &&
			     strncmp(buf, "THAWED", 6) != 0;
		int ours = frozen;
		if (frozen) {
			char *procs = malloc(1u << 16);
			size_t plen;
			int pfd = openat(fd, "cgroup.procs", O_RDONLY | O_CLOEXEC);
			ours = procs && pfd >= 0 &&
			       procfs_pread_list(pfd, procs, 1u << 16, &plen) == 0 &&
			       plen + 1 < 1u << 16;
			for (size_t at = 0; ours && at < plen;) {
				char *end;
				long pid = strtol(procs + at, &end, 10);
				if (end == procs + at)
					break;
				ours = is_listed(pids, n, (pid_t)pid);
				at = (size_t)(end - procs) + 1;
			}
			if (pfd >= 0)
				close(pfd);
			free(procs);
		}
		if (frozen && ours)
			cgroup_write(fd, "freezer.state", "THAWED");
		close(fd);
	}
}

int cgroup_run_kill_all(struct contain *c, const pid_t *members, size_t n)
{
	struct cgrun *r = of(c);
	int rc = -ENOTSUP;
	/* cgroup.kill and cgroup.freeze act on the cgroups below too */
	switch (r->kill) {
	case CG_KILL_FILE:
		rc = cgroup_write(r->dir[CG_V2].fd, "cgroup.kill", "1");
		break;
	case CG_KILL_FREEZE:
		rc = freeze_kill_thaw(r, r->dir[CG_V2].fd, "cgroup.freeze", "1", "0");
		break;
	case CG_KILL_FREEZER:
		rc = freeze_kill_thaw(r, r->dir[CG_FREEZER].fd, "freezer.state", "FROZEN",
				      "THAWED");
		break;
	case CG_KILL_NONE:
		break;
	}
	/* whichever killed: a task the command froze in a v1 freezer cgroup
	 * -- the run's own (cgroup.kill leaves it as it is) or one it made
	 * below -- dies only once thawed, and never while memsup waits */
	if (rc == 0 && r->dir[CG_FREEZER].fd >= 0) {
		thaw_below(r);
		if (r->kill != CG_KILL_FREEZER)
			cgroup_write(r->dir[CG_FREEZER].fd, "freezer.state", "THAWED");
		thaw_frozen_outside(r, members, n);
	}
	return rc;
}

struct remove_ctx {
	struct cgrun *r;
	uint64_t deadline;         /* CLOCK_MONOTONIC ns: no retry after it */
	uint64_t began;
	int rc;                    /* the first failure */
};

/* A cgroup that stays: named, with why, in the record. */
static void note_left(struct remove_ctx *x, const char *path, int fd, int err)
{
	struct contain_info *in = &x->r->base.info;
	size_t i = in->n_left++;
	if (x->rc == 0)
		x->rc = err;
	if (i >= CONTAIN_MAX_LEFT)
		return;
	pid_t pid = 0;
	char what[64] = "";
	if (err == -EBUSY && has_child(fd))
		snprintf(what, sizeof what, "; a cgroup below it is left");
	else if (err == -EBUSY && holds_procs(fd, &pid))
		snprintf(what, sizeof what, "; it still holds processes (pid %d)", (int)pid);
	snprintf(in->left[i].path, sizeof in->left[i].path, "%s", path);
	snprintf(in->left[i].why, sizeof in->left[i].why, "rmdir: %s after %.2f s%s",
		 strerror(-err), (double)(clock_mono_ns() - x->began) / 1e9, what);
}

/* rmdir parentfd/name, the cgroup open at fd, retried while EBUSY until
 * the deadline: cgroup.procs stops listing a killed task as it starts to
 * exit, but the cgroup stays populated until the task has left it -- with
 * hundreds of them dying on a loaded machine, a second or more.  A cgroup
 * busy because one below it is left is not waited on: it cannot go. */
static int remove_one(struct remove_ctx *x, int parentfd, const char *name, int fd,
		      const char *path)
{
	for (;;) {
		if (unlinkat(parentfd, name, AT_REMOVEDIR) == 0 || errno == ENOENT)
			return 0;
		int rc = -errno;
		if (rc != -EBUSY || clock_mono_ns() >= x->deadline || has_child(fd)) {
			note_left(x, path, fd, rc);
			return rc;
		}
		sleep_ms(5);
	}
}

static int remove_visit(int parentfd, const char *name, int fd, const char *path, void *ctx)
{
	remove_one(ctx, parentfd, name, fd, path);
	return 0; /* the others are still worth trying */
}

/* The cgroups the command made below d, bottom-up, then d.  One rmdir
 * first: the kernel refuses it while a cgroup is below d (or a process is
 * in it), and where the command made none -- nearly every run -- it is all
 * there is to do, without the walk's seven system calls. */
static void remove_tree(struct remove_ctx *x, struct cg_dir *d)
{
	if (!d->made)
		return;
	if (unlinkat(AT_FDCWD, d->path, AT_REMOVEDIR) == 0 || errno == ENOENT) {
		d->made = 0;
		return;
	}
	char path[PATH_MAX];
	snprintf(path, sizeof path, "%s", d->path);
	if (d->fd >= 0)
		cgroup_walk_below(d->fd, path, remove_visit, x);
	if (remove_one(x, AT_FDCWD, d->path, d->fd, d->path) == 0)
		d->made = 0;
}

int cgroup_run_finish(struct contain *c)
{
	struct cgrun *r = of(c);
	note_walk_pace(r);
	uint64_t now = clock_mono_ns();
	/* one wait for all the hierarchies: what is left after it is named,
	 * and a second finish (contain_close after a failed one) only looks */
	struct remove_ctx x = {
		r, now + (r->finish_tried ? 0 : (uint64_t)CG_REMOVE_WAIT_MS * 1000000u), now, 0,
	};
	r->base.info.n_left = 0;
	for (int h = 0; h < CG_NHIER; h++)
		remove_tree(&x, &r->dir[h]);
	r->finish_tried = x.rc < 0;
	MT_ASSERT(x.rc == 0 || r->base.info.n_left > 0);
	return x.rc;
}
