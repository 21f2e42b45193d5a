/* config.c: environment settings (see config.h).  Runs in the constructor,
 * before the program's main, so setenv here races with nobody. */
#include <dlfcn.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/syscall.h>

#include "config.h"
#include "record.h"
#include "sys.h"

struct config config;

int config_flag(const char *value)
{
	return value && value[0] == '1' && value[1] == '\0';
}

/* Absolute form of `path` into out; returns 0 or -ENAMETOOLONG. */
static int config_absolute(const char *path, char *out, size_t cap)
{
	struct sys_str s;
	sys_str_init(&s, out, cap);
	if (path[0] != '/') {
		char cwd[PATH_MAX];
		long r = sys_call6(SYS_getcwd, (long)cwd, sizeof cwd, 0, 0, 0, 0);
		if (r < 0)
			return (int)r;
		sys_str_add(&s, cwd);
		if (s.len && s.buf[s.len - 1] != '/')
			sys_str_add(&s, "/");
	}
	sys_str_add(&s, path);
	return s.truncated ? -ENAMETOOLONG : 0;
}

static void config_var(char *out, size_t cap, const char *name, const char *value)
{
	struct sys_str s;
	sys_str_init(&s, out, cap);
	if (!value)
		return;
	sys_str_add(&s, name);
	sys_str_add(&s, "=");
	sys_str_add(&s, value);
	if (s.truncated)
		out[0] = '\0';
}

void config_load(void)
{
	const char *dir = getenv(MT_ENV_DIR), *out = getenv(MT_ENV_OUT);
	Dl_info info;

	if (config.loaded)
		return;
	config.loaded = 1;
	config.secure = getauxval(AT_SECURE) != 0;
	config.quiet = config_flag(getenv(MT_ENV_QUIET));
	config.follow = config_flag(getenv(MT_ENV_FOLLOW)) && !config.secure;
	if (dir && dir[0] && config_absolute(dir, config.dir, sizeof config.dir) == 0) {
		if (dir[0] != '/')
			setenv(MT_ENV_DIR, config.dir, 1);
	} else {
		config.dir[0] = '\0';
	}
	/* In secure mode a user-chosen output path would let anyone truncate
	 * files as the privileged user: refuse it. */
	if (out && out[0] && !config.secure &&
	    config_absolute(out, config.out, sizeof config.out) == 0) {
		if (out[0] != '/')
			setenv(MT_ENV_OUT, config.out, 1);
	} else {
		config.out[0] = '\0';
	}
	if (dladdr((void *)config_load, &info) && info.dli_fname) {
		struct sys_str s;
		sys_str_init(&s, config.self_path, sizeof config.self_path);
		sys_str_add(&s, info.dli_fname);
		if (s.truncated)
			config.self_path[0] = '\0';
	}
	config_var(config.env_preload, sizeof config.env_preload, "LD_PRELOAD",
		   getenv("LD_PRELOAD"));
	config_var(config.env_dir, sizeof config.env_dir, MT_ENV_DIR,
		   config.dir[0] ? config.dir : NULL);
	config_var(config.env_out, sizeof config.env_out, MT_ENV_OUT,
		   config.out[0] ? config.out : NULL);
	config_var(config.env_quiet, sizeof config.env_quiet, MT_ENV_QUIET, getenv(MT_ENV_QUIET));
	config_var(config.env_follow, sizeof config.env_follow, MT_ENV_FOLLOW,
		   getenv(MT_ENV_FOLLOW));
}
