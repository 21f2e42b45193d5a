/* config.c: environment settings (see config.h).  Runs in the constructor,
 * before the program's main, so setenv here races with nobody. */
#include <dlfcn.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/syscall.h>

#include "base/boot.h"
#include "base/config.h"
#include "base/sys.h"
#include "textbuf.h"
#include "record.h"
#include "stacks.h"

struct config config = { .dir = "", .out = "", .self_path = "" };

/* config's strings, one after the other (config.h says why).  The first
 * few hundred bytes of them, which is all that a run with short paths
 * writes (this .so, MEMTRACE_DIR, the kept variables), go to config_hot,
 * in .bss beside the small variables that every start writes anyway: its
 * first byte written at start is then no page fault of its own (the
 * strings were one page of .lbss, one fault in every image).  A string
 * that does not fit what is left of it goes to config_strings, with room
 * for four paths (MEMTRACE_DIR, MEMTRACE_OUT, this .so, a standalone
 * tree's private directory) and each kept variable twice (an export that
 * sets a variable again appends it again).  Neither is ever written past
 * its end: a string that fits neither is not kept. */
#define CONFIG_HOT_BYTES 768u
#define CONFIG_STRINGS_BYTES ((4 + 2 * CONFIG_KEEP_COUNT) * CONFIG_VAR_BYTES)
static struct {
	size_t used;
	char bytes[CONFIG_HOT_BYTES];
} config_hot;
static struct {
	size_t used;
	char bytes[CONFIG_STRINGS_BYTES];
} config_strings MT_TABLE;

/* Where the next string goes, if it takes `need` bytes with its NUL, and
 * how many bytes it may take there (at most cap; less than need when it
 * fits nowhere); the string is kept by config_strings_take. */
static char *config_strings_end(size_t need, size_t cap, size_t *room)
{
	size_t left = sizeof config_hot.bytes - config_hot.used;
	if (need <= left) {
		*room = left < cap ? left : cap;
		return config_hot.bytes + config_hot.used;
	}
	left = sizeof config_strings.bytes - config_strings.used;
	*room = left < cap ? left : cap;
	return config_strings.bytes + config_strings.used;
}

static const char *config_strings_take(const char *s)
{
	size_t n = strlen(s) + 1;
	if (s >= config_hot.bytes && s < config_hot.bytes + sizeof config_hot.bytes)
		config_hot.used += n;
	else
		config_strings.used += n;
	return s;
}

/* A copy of s (shorter than PATH_MAX) kept in config's strings; NULL when
 * it does not fit. */
static const char *config_strings_copy(const char *s)
{
	struct textbuf str;
	size_t room;
	char *out = config_strings_end(strlen(s) + 1, PATH_MAX, &room);
	textbuf_init(&str, out, room);
	textbuf_add(&str, s);
	return str.truncated ? NULL : config_strings_take(out);
}

int config_flag(const char *value)
{
	return value && value[0] == '1' && value[1] == '\0';
}

/* Absolute form of `path` into out; returns 0 or -ENAMETOOLONG. */
static int config_absolute(const char *path, char *out, size_t cap)
{
	struct textbuf s;
	textbuf_init(&s, out, cap);
	if (path[0] != '/') {
		char cwd[PATH_MAX];
		long r = sys_call6(SYS_getcwd, (long)cwd, sizeof cwd, 0, 0, 0, 0);
		if (r < 0)
			return (int)r;
		textbuf_add(&s, cwd);
		if (s.len && s.buf[s.len - 1] != '/')
			textbuf_add(&s, "/");
	}
	textbuf_add(&s, path);
	return s.truncated ? -ENAMETOOLONG : 0;
}

static const char *const config_keep_names[CONFIG_KEEP_COUNT] = {
	"LD_PRELOAD", MT_ENV_DIR, MT_ENV_OUT, MT_ENV_QUIET, MT_ENV_FOLLOW, MT_ENV_SUMMARY, MT_ENV_TREE,
	MT_ENV_SAMPLE,
};

static char config_unset[1];

/* config.keep[which] = "NAME=value", appended to config's strings; ""
 * when value is NULL or too long. */
static void config_keep(enum config_keep which, const char *value)
{
	struct textbuf s;
	size_t room, need = value ? strlen(config_keep_names[which]) + strlen(value) + 2 : 0;
	char *out = config_strings_end(need, CONFIG_VAR_BYTES, &room);
	config.keep[which] = config_unset;
	if (!value || room < need)
		return;
	textbuf_init(&s, out, room);
	textbuf_add(&s, config_keep_names[which]);
	textbuf_add(&s, "=");
	textbuf_add(&s, value);
	if (s.truncated)
		return;
	config.keep[which] = out;
	config_strings_take(out);
}

/* The absolute form of path, kept in config's strings; NULL when it does
 * not fit in PATH_MAX or getcwd fails.  A relative path asks for PATH_MAX
 * bytes: the directory's length is not known before getcwd. */
static const char *config_path(const char *path)
{
	size_t room, need = path[0] == '/' ? strlen(path) + 1 : PATH_MAX;
	char *out = config_strings_end(need, PATH_MAX, &room);
	if (room < need || config_absolute(path, out, room) != 0)
		return NULL;
	return config_strings_take(out);
}

const char *config_keep_string(const char *s)
{
	return config_strings_copy(s);
}

int config_set_dir(const char *dir)
{
	const char *copy = config_strings_copy(dir);
	if (!copy)
		return -ENOSPC;
	config.dir = copy;
	return 0;
}

uint64_t config_sample_bytes(const char *value, uint64_t dflt)
{
	uint64_t v;
	size_t n;
	if (!value || !value[0])
		return dflt;
	n = sys_parse_u64(value, &v);
	return n && value[n] == '\0' ? v : dflt;
}

/* MEMTRACE_PY_VERSION's value (config.h): strtoull's hex, 0 unless all
 * of value is a number.  strtoull only when it is set: a `true` never
 * runs libc's number parsing. */
static uint64_t config_py_version(const char *value)
{
	char *end;
	unsigned long long x;
	if (!value || !value[0])
		return 0;
	x = strtoull(value, &end, 16);
	return *end == '\0' ? x : 0;
}

int config_tree_parse(const char *value, int32_t *pid, uint64_t *ino)
{
	uint64_t p, i;
	size_t n, m;
	if (!value)
		return -EINVAL;
	n = sys_parse_u64(value, &p);
	if (n == 0 || p == 0 || p > INT32_MAX || value[n] != '.')
		return -EINVAL;
	m = sys_parse_u64(value + n + 1, &i);
	if (m == 0 || value[n + 1 + m] != '\0')
		return -EINVAL;
	*pid = (int32_t)p;
	*ino = i;
	return 0;
}

/* setenv with its allocations kept off the program's figures (boot.h). */
static int config_setenv(const char *name, const char *value)
{
	int rc;
	boot_arena_begin();
	rc = setenv(name, value, 1) == 0 ? 0 : -errno;
	boot_arena_end();
	return rc;
}

int config_export(enum config_keep which, const char *value)
{
	int rc = config_setenv(config_keep_names[which], value);
	if (rc == 0)
		config_keep(which, value);
	return rc;
}

void config_load(void)
{
	const char *dir = getenv(MT_ENV_DIR), *out = getenv(MT_ENV_OUT);
	const char *summary = getenv(MT_ENV_SUMMARY), *tree = getenv(MT_ENV_TREE);
	const char *abs;
	Dl_info info;

	if (config.loaded)
		return;
	config.loaded = 1;
	config.secure = getauxval(AT_SECURE) != 0;
	config.quiet = config_flag(getenv(MT_ENV_QUIET));
	config.debug = config_flag(getenv(MT_ENV_DEBUG));
	config.follow = config_flag(getenv(MT_ENV_FOLLOW)) && !config.secure;
	config.sample_bytes =
		config_sample_bytes(getenv(MT_ENV_SAMPLE), MT_STACKS_DEFAULT_SAMPLE_BYTES);
	/* Read here rather than in python.c, whose code lies past the first
	 * 64 KB of .text: the only start code there, it cost every traced
	 * image a page fault (Makefile.am, SHIM_CORE_SOURCES). */
	config.py_version = config_py_version(getenv("MEMTRACE_PY_VERSION"));
	/* Anything but "each" is the default: a table from the tree's root. */
	config.summary_each = summary && strcmp(summary, "each") == 0;
	/* In secure mode (a setuid, setgid or capability-raising exec) the
	 * environment is the unprivileged caller's: a directory taken from it
	 * would let anyone make files owned by the privileged user wherever
	 * that user may write.  No path is read from it: the image counts in
	 * its own memory only (store.c says so at MEMTRACE_DEBUG=1), and with
	 * no directory there is no MEMTRACE_TREE either. */
	config.secure_dir_ignored = config.secure && dir && dir[0];
	if (config.secure)
		dir = NULL;
	if (dir && dir[0] && (abs = config_path(dir)) != NULL) {
		config.dir = abs;
		if (dir[0] != '/')
			config_setenv(MT_ENV_DIR, config.dir);
		/* MEMTRACE_TREE only means something beside its directory. */
		if (config_tree_parse(tree, &config.tree_pid, &config.tree_ino) != 0)
			config.tree_pid = 0;
	}
	/* In secure mode a user-chosen output path would let anyone truncate
	 * files as the privileged user: refuse it. */
	if (out && out[0] && !config.secure && (abs = config_path(out)) != NULL) {
		config.out = abs;
		if (out[0] != '/')
			config_setenv(MT_ENV_OUT, config.out);
		config.out_per_image = strstr(config.out, "%p") != NULL;
	}
	if (dladdr((void *)config_load, &info) && info.dli_fname &&
	    (abs = config_strings_copy(info.dli_fname)) != NULL)
		config.self_path = abs;
	config_keep(CONFIG_KEEP_PRELOAD, getenv("LD_PRELOAD"));
	config_keep(CONFIG_KEEP_DIR, config.dir[0] ? config.dir : NULL);
	config_keep(CONFIG_KEEP_OUT, config.out[0] ? config.out : NULL);
	config_keep(CONFIG_KEEP_QUIET, getenv(MT_ENV_QUIET));
	config_keep(CONFIG_KEEP_FOLLOW, getenv(MT_ENV_FOLLOW));
	config_keep(CONFIG_KEEP_SUMMARY, summary);
	config_keep(CONFIG_KEEP_TREE, config.tree_pid ? tree : NULL);
	config_keep(CONFIG_KEEP_SAMPLE, getenv(MT_ENV_SAMPLE));
}
