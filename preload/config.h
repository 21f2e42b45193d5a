/* config.h: the shim's settings, read once from the environment at startup
 * (config_load, from the constructor) and kept in static storage so that a
 * program that edits its environment, closes its descriptors or changes
 * directory does not change them.  Paths are made absolute at load.
 */
#ifndef MEMTRACE_CONFIG_H
#define MEMTRACE_CONFIG_H

#include <limits.h>

#define CONFIG_VAR_BYTES (PATH_MAX + 32)

struct config {
	int loaded;
	int quiet;  /* MEMTRACE_QUIET=1 */
	int follow; /* MEMTRACE_FOLLOW=1 (ignored in secure mode) */
	int secure; /* AT_SECURE */
	char dir[PATH_MAX]; /* absolute MEMTRACE_DIR, "" if unset */
	char out[PATH_MAX]; /* absolute MEMTRACE_OUT pattern, "" if unset/secure */
	char self_path[PATH_MAX]; /* this .so, from dladdr */
	/* "NAME=value" strings to put back into a scrubbed envp (FOLLOW). */
	char env_preload[CONFIG_VAR_BYTES];
	char env_dir[CONFIG_VAR_BYTES];
	char env_out[CONFIG_VAR_BYTES];
	char env_quiet[32];
	char env_follow[32];
};

extern struct config config;

/* Reads the environment (getenv: no allocation).  If MEMTRACE_DIR or
 * MEMTRACE_OUT is relative it is made absolute, and rewritten in environ so
 * that children started after a chdir (make -C, system()) find the same
 * directory; that setenv is the only allocation the shim ever makes. */
void config_load(void);

/* 1 if value is exactly "1". */
int config_flag(const char *value);

#endif /* MEMTRACE_CONFIG_H */
