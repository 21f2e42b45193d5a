/* config.h: the shim's settings, read once from the environment at startup
 * (config_load, from the constructor) and kept in static storage so that a
 * program that edits its environment, closes its descriptors or changes
 * directory does not change them.  Paths are made absolute at load.
 */
#ifndef MEMTRACE_CONFIG_H
#define MEMTRACE_CONFIG_H

#include <limits.h>
#include <stddef.h>
#include <stdint.h>

#include "base/shim.h"

#define CONFIG_VAR_BYTES (PATH_MAX + 32)

/* The MEMTRACE_* variables (and LD_PRELOAD) that MEMTRACE_FOLLOW puts back
 * into an environment the program scrubbed, as "NAME=value" (config.keep). */
enum config_keep {
	CONFIG_KEEP_PRELOAD,
	CONFIG_KEEP_DIR,
	CONFIG_KEEP_OUT,
	CONFIG_KEEP_QUIET,
	CONFIG_KEEP_FOLLOW,
	CONFIG_KEEP_SUMMARY,
	CONFIG_KEEP_TREE,
	CONFIG_KEEP_SAMPLE,
	CONFIG_KEEP_COUNT,
};

struct config {
	int loaded;
	int quiet;  /* MEMTRACE_QUIET=1 */
	int debug;  /* MEMTRACE_DEBUG=1: decisions on stderr (errfd_debug) */
	int follow; /* MEMTRACE_FOLLOW=1 (ignored in secure mode) */
	int secure; /* AT_SECURE: no path is read from the environment */
	int secure_dir_ignored; /* secure, and MEMTRACE_DIR was set (ignored) */
	int summary_each; /* MEMTRACE_SUMMARY=each: every image prints its block */
	int out_per_image; /* MEMTRACE_OUT holds %p: one JSON per image; without
	                      it, one JSON for the whole tree, from its root */
	int32_t tree_pid; /* MEMTRACE_TREE: the root of a standalone tree whose
	                     private directory is `dir`; 0 if none */
	uint64_t tree_ino; /* MEMTRACE_TREE: that directory's inode, as the
	                      root made it (summary.h) */
	/* MEMTRACE_SAMPLE_BYTES: mean sampling interval in bytes (stacks.h);
	 * 0 = no sampling, 1 = every block.  Unset or not a decimal number:
	 * MT_STACKS_DEFAULT_SAMPLE_BYTES. */
	uint64_t sample_bytes;
	/* MEMTRACE_PY_VERSION: a test knob, hex (e.g. 0x03630000), that the
	 * Python probe takes for the image's Py_Version (python.h); 0 when
	 * unset or not a whole hex number. */
	uint64_t py_version;
	/* Strings, packed one after the other in one buffer of config.c's
	 * (each first write to a page is a fault, 10-20 us, in every
	 * process: three PATH_MAX arrays and the kept variables were four
	 * pages written at every start); "" when unset. */
	const char *dir;       /* absolute MEMTRACE_DIR */
	const char *out;       /* absolute MEMTRACE_OUT pattern ("" in secure mode) */
	const char *self_path; /* this .so, from dladdr */
	/* "NAME=value" of each kept variable, "" when unset */
	char *keep[CONFIG_KEEP_COUNT];
};

extern MT_HIDDEN struct config config;

/* config.keep[k], "" before config_load ran (another library's
 * constructor may exec before ours). */
static inline const char *config_kept(unsigned k)
{
	return config.keep[k] ? config.keep[k] : "";
}

/* Reads the environment (getenv: no allocation).  If MEMTRACE_DIR or
 * MEMTRACE_OUT is relative it is made absolute, and rewritten in environ so
 * that children started after a chdir (make -C, system()) find the same
 * directory.  The shim's setenv calls are its only allocations, served
 * from the bootstrap arena so that they never count as the program's
 * (boot_arena_begin). */
void config_load(void);

/* 1 if value is exactly "1". */
int config_flag(const char *value);

/* MEMTRACE_SAMPLE_BYTES's value: a decimal number of bytes (0 = off), or
 * `dflt` when value is NULL, empty, or anything else. */
uint64_t config_sample_bytes(const char *value, uint64_t dflt);

/* MEMTRACE_TREE's value, "<pid>.<inode>" (summary.h): 0 with *pid and
 * *ino set, or -EINVAL (NULL, a bare pid, anything else). */
int config_tree_parse(const char *value, int32_t *pid, uint64_t *ino);

/* Sets NAME=value in the environment (the standalone tree's MEMTRACE_DIR
 * and MEMTRACE_TREE) and in config.keep; 0 or -errno.  Constructor only. */
int config_export(enum config_keep which, const char *value);

/* A copy of s (shorter than PATH_MAX) kept with config's strings for the
 * image's life; NULL when it does not fit.  Constructor only (config_load
 * need not have run). */
const char *config_keep_string(const char *s);

/* config.dir = a copy of dir (the standalone tree's private directory);
 * 0, or -ENOSPC with config.dir unchanged.  Constructor only. */
int config_set_dir(const char *dir);

#endif /* MEMTRACE_CONFIG_H */
