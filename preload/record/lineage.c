/* lineage.c: process-tree hand-off (see lineage.h).  Never allocates;
 * async-signal-safe except lineage_start (constructor: unsetenv). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>

#include "base/config.h"
#include "base/errfd.h"
#include "base/sys.h"
#include "textbuf.h"
#include "core/counters.h"
#include "filecheck.h"
#include "record/lineage.h"
#include "imagename.h"
#include "names.h"

#define LINEAGE_MAX_ENV 65536u
/* what lineage_env_build may add: LD_PRELOAD, the other CONFIG_KEEP_*
 * variables, MEMTRACE_PARENT */
#define LINEAGE_EXTRA (CONFIG_KEEP_COUNT + 1u)

int lineage_parse(const char *v, int32_t *pid, uint32_t *gen, uint32_t *relation)
{
	uint64_t p, g, r;
	size_t n;
	if (!v)
		return -EINVAL;
	n = sys_parse_u64(v, &p);
	if (n == 0 || v[n] != '.' || p == 0 || p > INT32_MAX)
		return -EINVAL;
	v += n + 1;
	n = sys_parse_u64(v, &g);
	if (n == 0 || v[n] != ':' || g > UINT32_MAX)
		return -EINVAL;
	v += n + 1;
	n = sys_parse_u64(v, &r);
	if (n == 0 || v[n] != '\0' || r == MT_REL_ROOT || r > MT_REL_UNKNOWN)
		return -EINVAL;
	*pid = (int32_t)p;
	*gen = (uint32_t)g;
	*relation = (uint32_t)r;
	return 0;
}

struct lineage_newest {
	int32_t pid;
	uint32_t gen;
	int found;
};

static int lineage_newest_entry(const char *name, void *ctx)
{
	struct lineage_newest *ln = ctx;
	int32_t p;
	uint32_t g;
	if (imagename_parse(name, MT_RECORD_SUFFIX, &p, &g) == 0 && p == ln->pid && (!ln->found || g > ln->gen)) {
		ln->gen = g;
		ln->found = 1;
	}
	return 0;
}

int lineage_newest(const char *dir, pid_t pid, uint32_t *gen)
{
	struct lineage_newest ln = { (int32_t)pid, 0, 0 };
	int fd = sys_open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC, 0);
	if (fd < 0)
		return fd;
	sys_dir_each(fd, lineage_newest_entry, &ln);
	sys_close(fd);
	if (!ln.found)
		return -ENOENT;
	*gen = ln.gen;
	return 0;
}

/* The parent record's spawn_relation, if it is a valid record. */
static uint32_t lineage_spawn_relation(pid_t pid, uint32_t gen)
{
	char path[PATH_MAX + 64];
	struct {
		uint64_t magic;
		uint32_t version, record_size;
	} head;
	uint32_t rel = 0;
	int fd;
	_Static_assert(offsetof(struct mt_record, record_size) + sizeof(uint32_t) == sizeof head,
		       "a record's head is magic, version, record_size");
	if (imagename_path(path, sizeof path, config.dir, pid, gen, MT_RECORD_SUFFIX) < 0)
		return 0;
	fd = sys_open(path, O_RDONLY | O_CLOEXEC, 0);
	if (fd < 0)
		return 0;
	if (sys_pread(fd, &head, sizeof head, 0) != sizeof head ||
	    filecheck_record_head(head.magic, head.version, head.record_size) != 0 ||
	    sys_pread(fd, &rel, sizeof rel, offsetof(struct mt_record, spawn_relation)) !=
		    sizeof rel)
		rel = 0;
	sys_close(fd);
	return rel == MT_REL_SYSTEM || rel == MT_REL_POPEN ? rel : 0;
}

/* MEMTRACE_DEBUG: the lineage taken and how. */
static void lineage_debug(const struct mt_record *r, const char *how)
{
	char parent[IMAGENAME_MAX_BYTES] = "";
	if (!config.debug)
		return;
	if (r->relation != MT_REL_ROOT)
		imagename_format(parent, sizeof parent, r->parent_pid, r->parent_gen, "");
	errfd_debug("lineage: ", names_relation(r->relation), parent[0] ? " of " : "", parent,
		    ", ", how, NULL);
}

void lineage_start(struct mt_record *r)
{
	const char *v = getenv(MT_ENV_PARENT);
	int32_t pid;
	uint32_t gen, rel;

	const char *how = "no traced parent";
	r->relation = MT_REL_ROOT;
	r->parent_pid = 0;
	r->parent_gen = 0;
	if (lineage_parse(v, &pid, &gen, &rel) == 0 &&
	    (rel == MT_REL_EXEC ? pid == r->pid : pid == r->ppid)) {
		r->relation = rel;
		r->parent_pid = pid;
		r->parent_gen = gen;
		how = "from " MT_ENV_PARENT;
	} else if (config.dir[0] && lineage_newest(config.dir, r->ppid, &gen) == 0) {
		uint32_t tag = lineage_spawn_relation(r->ppid, gen);
		r->relation = tag ? tag : MT_REL_UNKNOWN;
		r->parent_pid = r->ppid;
		r->parent_gen = gen;
		r->flags |= MT_FLAG_LINEAGE_GUESSED;
		how = v ? "guessed from the parent's newest record (" MT_ENV_PARENT
			  " named another process)"
			: "guessed from the parent's newest record (no " MT_ENV_PARENT ")";
	} else if (v) {
		how = "no traced parent (" MT_ENV_PARENT " named another process)";
	}
	lineage_debug(r, how);
	/* Ours only: the program never sees it, and nothing it starts past
	 * our hooks inherits a stale one. */
	if (v)
		unsetenv(MT_ENV_PARENT);
}

size_t lineage_env_slots(char *const envp[])
{
	size_t n = 0;
	while (envp && envp[n]) {
		if (++n > LINEAGE_MAX_ENV)
			return 0;
	}
	return n + LINEAGE_EXTRA;
}

static int lineage_has_prefix(const char *s, const char *prefix)
{
	return strncmp(s, prefix, strlen(prefix)) == 0;
}

/* Do "NAME=..." entries a and b name the same variable? */
static int lineage_same_name(const char *a, const char *b)
{
	const char *eq = strchr(b, '=');
	return eq && strncmp(a, b, (size_t)(eq - b + 1)) == 0;
}

/* Does an LD_PRELOAD value load us? */
static int lineage_preloads_us(const char *value)
{
	const char *base = strrchr(config.self_path, '/');
	base = base ? base + 1 : "libmemtrace";
	if (!base[0])
		base = "libmemtrace";
	return strstr(value, base) != NULL;
}

char **lineage_env_build(char *const envp[], char **out, size_t slots, struct lineage_env *le,
			 int32_t pid, uint32_t gen, unsigned relation)
{
	size_t n = 0;
	int traced = 0, followed = 0;
	unsigned has = 0; /* bit k: envp sets config.keep[k]'s variable */
	const int follow = config.follow;

	for (size_t i = 0; envp && envp[i] && n + LINEAGE_EXTRA < slots; i++) {
		const char *e = envp[i];
		if (lineage_has_prefix(e, MT_ENV_PARENT "="))
			continue;
		if (lineage_has_prefix(e, "LD_PRELOAD=")) {
			if (lineage_preloads_us(e + 11)) {
				traced = 1;
			} else if (follow && config.self_path[0]) {
				struct textbuf s;
				textbuf_init(&s, le->preload, sizeof le->preload);
				textbuf_add(&s, "LD_PRELOAD=");
				textbuf_add(&s, config.self_path);
				textbuf_add(&s, " ");
				textbuf_add(&s, e + 11);
				if (!s.truncated) {
					e = le->preload;
					traced = followed = 1;
				}
			}
		}
		for (unsigned k = CONFIG_KEEP_DIR; k < CONFIG_KEEP_COUNT; k++)
			if (config_kept(k)[0] &&
			    lineage_same_name(e, config_kept(k)))
				has |= 1u << k;
		out[n++] = (char *)e;
	}
	if (follow && !traced && config_kept(CONFIG_KEEP_PRELOAD)[0] &&
	    lineage_preloads_us(config_kept(CONFIG_KEEP_PRELOAD) + 11)) {
		out[n++] = config.keep[CONFIG_KEEP_PRELOAD];
		traced = followed = 1;
	}
	if (followed) {
		for (unsigned k = CONFIG_KEEP_DIR; k < CONFIG_KEEP_COUNT; k++)
			if (!(has & (1u << k)) && config_kept(k)[0])
				out[n++] = config.keep[k];
		counters_set_flag(MT_FLAG_FOLLOWED);
	}
	if (traced) {
		struct textbuf s;
		textbuf_init(&s, le->parent, sizeof le->parent);
		textbuf_add(&s, MT_ENV_PARENT "=");
		textbuf_add_u64(&s, (uint64_t)(uint32_t)pid);
		textbuf_add(&s, ".");
		textbuf_add_u64(&s, gen);
		textbuf_add(&s, ":");
		textbuf_add_u64(&s, relation);
		out[n++] = le->parent;
	}
	out[n] = NULL;
	return out;
}
