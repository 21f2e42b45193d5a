/* summary.c: a standalone tree's one summary (see summary.h). */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>

#include "base/config.h"
#include "base/errfd.h"
#include "base/sys.h"
#include "textbuf.h"
#include "filecheck.h"
#include "imagename.h"
#include "jsonw.h"
#include "names.h"
#include "recordjson.h"
#include "report/outfile.h"
#include "report/render.h"
#include "report/summary.h"
#include "report/topsites.h"
#include "stacks.h"

#define SUMMARY_PREFIX "memtrace-tree."
#define SUMMARY_SWEEP_MAX 16 /* stale directories removed per start */

/* ---- the table ------------------------------------------------------- */

void summary_tree_init(struct summary_tree *t, int32_t root_pid)
{
	memset(t, 0, sizeof *t);
	t->root_pid = root_pid;
}

static void summary_row_fill(struct summary_row *row, const struct mt_record *r)
{
	struct textbuf s;
	row->pid = r->pid;
	row->parent_pid = r->parent_pid;
	row->gen = r->gen;
	row->relation = r->relation;
	row->state = r->state;
	row->total_peak = r->total_peak;
	row->heap_peak = r->heap_peak;
	row->anon_peak = r->map_anon_peak;
	row->file_peak = r->map_file_peak;
	row->vm_hwm_kb = r->vm_hwm_kb;
	textbuf_init(&s, row->cmd, sizeof row->cmd);
	for (uint32_t off = 0; off < r->argv_bytes && off < MT_ARGV_BYTES;) {
		size_t len = strnlen(r->argv + off, MT_ARGV_BYTES - off);
		if (off)
			textbuf_add(&s, " ");
		textbuf_add_n(&s, r->argv + off, len);
		off += (uint32_t)len + 1;
	}
	if (!r->argv_bytes)
		textbuf_add(&s, r->exe);
	if (s.truncated || (r->flags & MT_FLAG_ARGV_TRUNCATED)) {
		size_t at = s.len < sizeof row->cmd - 4 ? s.len : sizeof row->cmd - 4;
		memcpy(row->cmd + at, "...", 4); /* said, not silent */
	}
}

static int summary_row_before(const struct summary_row *a, const struct mt_record *b)
{
	return a->total_peak > b->total_peak ||
	       (a->total_peak == b->total_peak && a->pid < b->pid);
}

void summary_tree_add(struct summary_tree *t, const struct mt_record *r)
{
	unsigned at = t->ntop;
	t->images++;
	t->processes += r->relation != MT_REL_EXEC;
	t->running += r->state == MT_STATE_RUNNING;
	t->sum_total_peaks += r->total_peak;
	while (at > 0 && !summary_row_before(&t->top[at - 1], r))
		at--;
	if (at >= SUMMARY_ROWS) {
		if (r->total_peak > t->rest_max_total)
			t->rest_max_total = r->total_peak;
		return;
	}
	if (t->ntop == SUMMARY_ROWS) {
		/* the last row leaves the table for the rest */
		if (t->top[SUMMARY_ROWS - 1].total_peak > t->rest_max_total)
			t->rest_max_total = t->top[SUMMARY_ROWS - 1].total_peak;
		t->ntop--;
	}
	memmove(&t->top[at + 1], &t->top[at], (t->ntop - at) * sizeof t->top[0]);
	summary_row_fill(&t->top[at], r);
	t->ntop++;
}

/* text right-aligned in width columns */
static void summary_cell(struct textbuf *s, const char *text, size_t width)
{
	for (size_t n = strlen(text); n < width; n++)
		textbuf_add(s, " ");
	textbuf_add(s, text);
}

static void summary_bytes_cell(struct textbuf *s, uint64_t v, size_t width)
{
	char buf[32];
	struct textbuf c;
	textbuf_init(&c, buf, sizeof buf);
	render_bytes(&c, v);
	summary_cell(s, buf, width);
}

static void summary_lineage(char *buf, size_t cap, const struct summary_row *row)
{
	struct textbuf s;
	textbuf_init(&s, buf, cap);
	if (row->relation == MT_REL_ROOT) {
		textbuf_add(&s, "root");
	} else if (row->relation == MT_REL_EXEC) {
		textbuf_add(&s, "exec #");
		textbuf_add_u64(&s, row->gen);
	} else {
		/* a person reads "child of 12" better than "unknown of 12" */
		const char *name = names_relation(row->relation);
		textbuf_add(&s, name && row->relation != MT_REL_UNKNOWN ? name : "child");
		textbuf_add(&s, " of ");
		textbuf_add_u64(&s, (uint64_t)(uint32_t)row->parent_pid);
	}
}

size_t summary_format(const struct summary_tree *t, char *buf, size_t cap)
{
	struct textbuf s;
	char cell[48];
	textbuf_init(&s, buf, cap);
	textbuf_add(&s, "memtrace: ");
	textbuf_add_u64(&s, t->images);
	textbuf_add(&s, t->images == 1 ? " image in " : " images in ");
	textbuf_add_u64(&s, t->processes);
	textbuf_add(&s, t->processes == 1 ? " process" : " processes");
	textbuf_add(&s, " from pid ");
	textbuf_add_u64(&s, (uint64_t)(uint32_t)t->root_pid);
	if (t->running) {
		textbuf_add(&s, " (");
		textbuf_add_u64(&s, t->running);
		textbuf_add(&s, " still running)");
	}
	textbuf_add(&s, ", largest heap+mmap peak first\n");
	textbuf_add(&s, "memtrace:     PID  LINEAGE           HEAP+MMAP       HEAP   ANON MAP"
			"   FILE MAP      VmHWM  COMMAND\n");
	for (unsigned i = 0; i < t->ntop; i++) {
		const struct summary_row *row = &t->top[i];
		struct textbuf c;
		textbuf_add(&s, "memtrace: ");
		textbuf_init(&c, cell, sizeof cell);
		textbuf_add_u64(&c, (uint64_t)(uint32_t)row->pid);
		summary_cell(&s, cell, 7);
		textbuf_add(&s, "  ");
		summary_lineage(cell, sizeof cell, row);
		textbuf_add(&s, cell);
		for (size_t n = strlen(cell); n < 16; n++)
			textbuf_add(&s, " ");
		summary_bytes_cell(&s, row->total_peak, 11);
		summary_bytes_cell(&s, row->heap_peak, 11);
		summary_bytes_cell(&s, row->anon_peak, 11);
		summary_bytes_cell(&s, row->file_peak, 11);
		if (row->state == MT_STATE_RUNNING) {
			summary_cell(&s, "running", 11);
		} else {
			summary_bytes_cell(&s, row->vm_hwm_kb * 1024, 11);
		}
		textbuf_add(&s, "  ");
		textbuf_add(&s, row->cmd);
		textbuf_add(&s, "\n");
	}
	if (t->images > t->ntop) {
		textbuf_add(&s, "memtrace:     ... ");
		textbuf_add_u64(&s, t->images - t->ntop);
		textbuf_add(&s, t->images - t->ntop == 1 ? " more image, " : " more images, each ");
		textbuf_add(&s, "at most ");
		render_bytes(&s, t->rest_max_total);
		textbuf_add(&s, " heap+mmap\n");
	}
	textbuf_add(&s, "memtrace: the images' heap+mmap peaks add up to ");
	render_bytes(&s, t->sum_total_peaks);
	textbuf_add(&s, ", each at its own time (memsup -- CMD measures what the tree held "
			"at once)\n");
	if (s.truncated && cap > 1)
		buf[cap - 2] = '\n';
	return s.len;
}

/* ---- the tree's directory -------------------------------------------- */

static const char *summary_tmpdir(void)
{
	const char *t = getenv("TMPDIR");
	return t && t[0] == '/' ? t : "/tmp";
}

/* Removes the record and stacks files of dir, then dir; 0 or -errno. */
static int summary_remove_entry(const char *name, void *ctx)
{
	int32_t pid;
	uint32_t gen;
	if (imagename_parse(name, MT_RECORD_SUFFIX, &pid, &gen) == 0 ||
	    imagename_parse(name, MT_STACKS_SUFFIX, &pid, &gen) == 0)
		sys_call6(SYS_unlinkat, *(int *)ctx, (long)name, 0, 0, 0, 0);
	return 0;
}

static int summary_remove_dir(const char *dir)
{
	int fd = sys_open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW, 0);
	if (fd < 0)
		return fd;
	sys_dir_each(fd, summary_remove_entry, &fd);
	sys_close(fd);
	return (int)sys_call6(SYS_unlinkat, AT_FDCWD, (long)dir, AT_REMOVEDIR, 0, 0, 0);
}

struct summary_sweep {
	const char *tmp;
	unsigned removed;
	uid_t uid;
};

/* "memtrace-tree.<pid>.<n>" of a root that is gone, and ours: remove it. */
static int summary_sweep_entry(const char *name, void *ctx)
{
	struct summary_sweep *sw = ctx;
	char path[PATH_MAX];
	struct textbuf s;
	struct stat st;
	uint64_t pid;
	size_t k;
	if (strncmp(name, SUMMARY_PREFIX, sizeof SUMMARY_PREFIX - 1) != 0)
		return 0;
	k = sys_parse_u64(name + sizeof SUMMARY_PREFIX - 1, &pid);
	if (k == 0 || pid == 0 || pid > INT32_MAX || name[sizeof SUMMARY_PREFIX - 1 + k] != '.')
		return 0;
	if (sys_call6(SYS_kill, (long)pid, 0, 0, 0, 0, 0) != -ESRCH)
		return 0;
	textbuf_init(&s, path, sizeof path);
	textbuf_add(&s, sw->tmp);
	textbuf_add(&s, "/");
	textbuf_add(&s, name);
	/* as summary_start makes them: a directory of ours, no access for
	 * others (mode 0700 less the umask) */
	if (s.truncated ||
	    sys_call6(SYS_newfstatat, AT_FDCWD, (long)path, (long)&st, AT_SYMLINK_NOFOLLOW, 0, 0) != 0 ||
	    !S_ISDIR(st.st_mode) || st.st_uid != sw->uid || (st.st_mode & 077))
		return 0;
	summary_remove_dir(path);
	return ++sw->removed >= SUMMARY_SWEEP_MAX;
}

static void summary_sweep(const char *tmp)
{
	struct summary_sweep sw = { tmp, 0, (uid_t)sys_call6(SYS_getuid, 0, 0, 0, 0, 0, 0) };
	int fd = sys_open(tmp, O_RDONLY | O_DIRECTORY | O_CLOEXEC, 0);
	if (fd < 0)
		return;
	sys_dir_each(fd, summary_sweep_entry, &sw);
	sys_close(fd);
}

/* 1 if dir is the directory the tree's root made: the inode MEMTRACE_TREE
 * names, a directory of ours that others cannot enter.  Then every file in
 * it is the tree's: the root made it empty, and only the tree writes there. */
static int summary_dir_is_tree(const char *dir, uint64_t ino)
{
	struct stat st;
	return sys_call6(SYS_newfstatat, AT_FDCWD, (long)dir, (long)&st, AT_SYMLINK_NOFOLLOW, 0,
			 0) == 0 &&
	       S_ISDIR(st.st_mode) && (uint64_t)st.st_ino == ino && !(st.st_mode & 077) &&
	       st.st_uid == (uid_t)sys_call6(SYS_getuid, 0, 0, 0, 0, 0, 0);
}

void summary_start(int32_t pid)
{
	char dir[PATH_MAX], num[48];
	struct textbuf s;
	struct stat st;
	const char *tmp;
	int tree_json = config.out[0] && !config.out_per_image;
	int table = !config.quiet && !config.summary_each && !config.out[0];
	/* The root's own image after an exec (same pid): it removes the
	 * directory at the end, so it must be the one the root made, not a
	 * user's directory with a MEMTRACE_TREE that came from elsewhere. */
	if (config.tree_pid == pid && !summary_dir_is_tree(config.dir, config.tree_ino)) {
		config.tree_pid = 0;
		errfd_debug("standalone tree: " MT_ENV_TREE " does not name ", config.dir,
			    " as its root made it: ignored, nothing there is removed", NULL);
	}
	if (config.dir[0] || config.secure || !(tree_json || table))
		return;
	tmp = summary_tmpdir();
	summary_sweep(tmp);
	textbuf_init(&s, dir, sizeof dir);
	textbuf_add(&s, tmp);
	textbuf_add(&s, "/" SUMMARY_PREFIX);
	textbuf_add_u64(&s, (uint64_t)(uint32_t)pid);
	textbuf_add(&s, ".");
	textbuf_add_u64(&s, sys_mono_ns_cold() % 1000000007u);
	if (s.truncated ||
	    sys_call6(SYS_mkdirat, AT_FDCWD, (long)dir, 0700, 0, 0, 0) != 0)
		return; /* no tree: this image reports alone, as with "each" */
	/* MEMTRACE_TREE=<pid>.<inode>: the inode ties the tree to this very
	 * directory (summary_dir_is_tree), so that a MEMTRACE_TREE set by
	 * hand never makes a root remove files it did not make. */
	textbuf_init(&s, num, sizeof num);
	textbuf_add_u64(&s, (uint64_t)(uint32_t)pid);
	textbuf_add(&s, ".");
	if (sys_call6(SYS_newfstatat, AT_FDCWD, (long)dir, (long)&st, AT_SYMLINK_NOFOLLOW, 0, 0) ==
	    0)
		textbuf_add_u64(&s, (uint64_t)st.st_ino);
	if (s.buf[s.len - 1] == '.' || config_export(CONFIG_KEEP_DIR, dir) != 0 ||
	    config_export(CONFIG_KEEP_TREE, num) != 0 || config_set_dir(dir) != 0) {
		summary_remove_dir(dir);
		unsetenv(MT_ENV_DIR); /* no allocation */
		unsetenv(MT_ENV_TREE);
		config.keep[CONFIG_KEEP_DIR][0] = config.keep[CONFIG_KEEP_TREE][0] = '\0';
		errfd_debug("standalone tree: no private directory could be made in ", tmp,
			    ": no summary table", NULL);
		return;
	}
	config.tree_pid = pid;
	config.tree_ino = (uint64_t)st.st_ino;
	errfd_debug("standalone tree: records in ", dir, ", the table from this image", NULL);
}

int summary_is_root(const struct mt_record *r)
{
	return config.tree_pid != 0 && r->pid == config.tree_pid;
}

/* ---- reading the records --------------------------------------------- */

struct summary_walk {
	int dirfd;
	void (*fn)(const struct mt_record *r, void *ctx);
	void *ctx;
};

int summary_read_record(int dirfd, const char *name, struct mt_record *r)
{
	struct stat st;
	int32_t pid;
	uint32_t gen;
	int fd, rc;
	if (imagename_parse(name, MT_RECORD_SUFFIX, &pid, &gen) != 0)
		return -FILECHECK_ENAME;
	fd = (int)sys_call6(SYS_openat, dirfd, (long)name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW, 0,
			    0, 0);
	if (fd < 0)
		return fd;
	rc = (int)sys_call6(SYS_fstat, fd, (long)&st, 0, 0, 0, 0);
	if (rc == 0 && !S_ISREG(st.st_mode))
		rc = -FILECHECK_ECORRUPT; /* as memsup's recordfile_read_fd() */
	if (rc == 0)
		rc = filecheck_record_bytes((uint64_t)st.st_size);
	if (rc == 0 && sys_pread(fd, r, sizeof *r, 0) != (ssize_t)sizeof *r)
		rc = -FILECHECK_ESHORT;
	sys_close(fd);
	return rc ? rc : filecheck_record_of(r, pid, gen);
}

static int summary_walk_entry(const char *name, void *ctx)
{
	struct summary_walk *w = ctx;
	struct mt_record r;
	/* A record still being created (magic 0), damaged, or not of the image
	 * its name says is skipped, as memsup skips it (filecheck.h). */
	if (summary_read_record(w->dirfd, name, &r) == 0)
		w->fn(&r, w->ctx);
	return 0;
}

static void summary_walk(void (*fn)(const struct mt_record *, void *), void *ctx)
{
	struct summary_walk w = { -1, fn, ctx };
	w.dirfd = sys_open(config.dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC, 0);
	if (w.dirfd < 0)
		return;
	sys_dir_each(w.dirfd, summary_walk_entry, &w);
	sys_close(w.dirfd);
}

static void summary_collect(const struct mt_record *r, void *ctx)
{
	summary_tree_add(ctx, r);
}

static void summary_json_record(const struct mt_record *r, void *ctx)
{
	recordjson_write(ctx, r);
}

static void summary_write_json(const struct summary_tree *t)
{
	struct outfile_guard g;
	struct jsonw w;
	int fd = outfile_open(config.out), rc;
	if (fd < 0)
		return;
	outfile_guard_begin(&g);
	jsonw_init(&w, fd, 0);
	jsonw_object_begin(&w);
	jsonw_key(&w, "root_pid");
	jsonw_int(&w, t->root_pid);
	jsonw_key(&w, "images");
	jsonw_uint(&w, t->images);
	jsonw_key(&w, "processes");
	jsonw_uint(&w, t->processes);
	jsonw_key(&w, "running");
	jsonw_uint(&w, t->running);
	jsonw_key(&w, "sum_of_total_peaks");
	jsonw_uint(&w, t->sum_total_peaks);
	jsonw_key(&w, "records");
	jsonw_array_begin(&w);
	summary_walk(summary_json_record, &w);
	jsonw_array_end(&w);
	jsonw_object_end(&w);
	rc = jsonw_finish_line(&w);
	outfile_guard_end(&g, rc);
	sys_close(fd);
	if (rc < 0)
		outfile_failed(config.out, "write", -rc);
}

void summary_end(const struct mt_record *root)
{
	struct summary_tree t;
	summary_tree_init(&t, root->pid);
	summary_walk(summary_collect, &t);
	if (!config.quiet && !config.summary_each && !config.out[0]) {
		char buf[4096];
		size_t n;
		if (t.images <= 1)
			n = render_summary(root, buf, sizeof buf);
		else
			n = summary_format(&t, buf, sizeof buf);
		errfd_write(buf, n);
		if (t.images <= 1) {
			topsites_write(root);
		} else {
			struct topsites_image im[SUMMARY_ROWS];
			for (unsigned i = 0; i < t.ntop; i++)
				im[i] = (struct topsites_image){ t.top[i].pid, t.top[i].gen,
								 t.top[i].heap_peak };
			topsites_write_tree(config.dir, im, t.ntop);
		}
	}
	if (config.out[0] && !config.out_per_image)
		summary_write_json(&t);
	/* checked at start too; the directory may have been swapped since */
	if (summary_dir_is_tree(config.dir, config.tree_ino))
		summary_remove_dir(config.dir);
}
