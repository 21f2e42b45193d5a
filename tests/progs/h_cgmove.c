/* h_cgmove.c: a descendant that moves itself out of the run's cgroups
 * (trying to escape memsup's kill).  Usage: h_cgmove WHICH PIDFILE [HOLD_MS].
 * WHICH is a comma-separated list of hierarchies -- "v2" (the unified
 * one), "memory", "pids", "freezer" -- or "all" (each of those mounted).
 * A child leaves the session and double-forks; the grandchild writes its
 * pid into the PARENT of its cgroup in each hierarchy named (never
 * further up: in the pids hierarchy that parent is still inside the test's
 * pids fence), writes "PID\n" to PIDFILE and becomes `sleep 30`.  The main
 * process waits for PIDFILE, holds HOLD_MS (default 300) and exits 0.  A
 * move that fails writes "ERR what: why\n" to PIDFILE instead and the
 * grandchild exits 3: the test then knows the escape never happened. */
#include "workload.h"
#include <errno.h>
#include <limits.h>
#include <string.h>
#include <sys/wait.h>

/* The mount point of hierarchy `name` ("v2" or a v1 controller) into
 * out; 0, or -1 when it is not mounted. */
static int mount_of(const char *name, char *out, size_t cap)
{
	char line[4096];
	FILE *f = fopen("/proc/self/mountinfo", "r");
	int found = -1;
	while (f && found < 0 && fgets(line, sizeof line, f)) {
		char *dash = strstr(line, " - ");
		char mnt[PATH_MAX], fstype[64], src[256], opts[1024];
		if (!dash || sscanf(line, "%*s %*s %*s %*s %4095s", mnt) != 1 ||
		    sscanf(dash + 3, "%63s %255s %1023s", fstype, src, opts) != 3)
			continue;
		if (strcmp(name, "v2") == 0 ? strcmp(fstype, "cgroup2") != 0
					     : strcmp(fstype, "cgroup") != 0)
			continue;
		if (strcmp(name, "v2") != 0) {
			int hit = 0;
			for (char *o = strtok(opts, ","); o; o = strtok(NULL, ","))
				hit |= strcmp(o, name) == 0;
			if (!hit)
				continue;
		}
		snprintf(out, cap, "%s", mnt);
		found = 0;
	}
	if (f)
		fclose(f);
	return found;
}

/* This process's path in hierarchy `name`, from /proc/self/cgroup. */
static int path_in(const char *name, char *out, size_t cap)
{
	char line[4096];
	FILE *f = fopen("/proc/self/cgroup", "r");
	int found = -1;
	while (f && found < 0 && fgets(line, sizeof line, f)) {
		char *c1 = strchr(line, ':'), *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
		if (!c2)
			continue;
		*c2 = '\0';
		line[strcspn(line, "\n")] = '\0';
		c2[1 + strcspn(c2 + 1, "\n")] = '\0';
		int hit = strcmp(name, "v2") == 0 ? c1[1] == '\0' : 0;
		for (char *o = strtok(c1 + 1, ","); o && !hit; o = strtok(NULL, ","))
			hit = strcmp(o, name) == 0;
		if (hit) {
			snprintf(out, cap, "%s", c2 + 1);
			found = 0;
		}
	}
	if (f)
		fclose(f);
	return found;
}

static _Noreturn void fail(const char *pidfile, const char *what, int err)
{
	char text[PATH_MAX + 128];
	snprintf(text, sizeof text, "ERR %s: %s\n", what, strerror(err));
	wl_write_file(pidfile, text);
	_exit(3);
}

/* Into the parent of this process's cgroup in `name`. */
static void move_up(const char *name, const char *pidfile)
{
	char mnt[PATH_MAX], path[PATH_MAX], procs[2 * PATH_MAX + 32], pid[32];
	if (mount_of(name, mnt, sizeof mnt) < 0 || path_in(name, path, sizeof path) < 0)
		fail(pidfile, name, ENOENT);
	char *slash = strrchr(path, '/');
	if (!slash || slash == path)
		path[1] = '\0', path[0] = '/'; /* a child of the root: the root */
	else
		*slash = '\0';
	snprintf(procs, sizeof procs, "%s%s/cgroup.procs", mnt, strcmp(path, "/") ? path : "");
	snprintf(pid, sizeof pid, "%d", (int)getpid());
	FILE *f = fopen(procs, "w");
	if (!f)
		fail(pidfile, procs, errno);
	if (fputs(pid, f) == EOF || fclose(f) == EOF)
		fail(pidfile, procs, errno);
}

int main(int argc, char **argv)
{
	if (argc < 3) {
		fprintf(stderr, "usage: h_cgmove WHICH PIDFILE [HOLD_MS]\n");
		return 2;
	}
	const char *pidfile = argv[2];
	long ms = wl_arg(argc, argv, 3, 300);
	char which[256];
	snprintf(which, sizeof which, "%s",
		 strcmp(argv[1], "all") == 0 ? "v2,memory,pids,freezer" : argv[1]);
	pid_t mid = fork();
	if (mid < 0)
		wl_die("fork");
	if (mid == 0) {
		setsid();
		pid_t g = fork();
		if (g < 0)
			wl_die("fork");
		if (g == 0) {
			char text[32], mnt[PATH_MAX];
			char *save = NULL;
			for (char *h = strtok_r(which, ",", &save); h; h = strtok_r(NULL, ",", &save))
				if (strcmp(argv[1], "all") != 0 || mount_of(h, mnt, sizeof mnt) == 0)
					move_up(h, pidfile);
			snprintf(text, sizeof text, "%d\n", (int)getpid());
			wl_write_file(pidfile, text);
			execlp("sleep", "sleep", "30", (char *)NULL);
			_exit(127);
		}
		_exit(0);
	}
	waitpid(mid, NULL, 0);
	for (int i = 0; i < 2000 && access(pidfile, F_OK) != 0; i++)
		wl_sleep_ms(5);
	wl_sleep_ms(ms);
	return 0;
}
