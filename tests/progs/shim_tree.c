/* shim_tree.c: one workload program for the shim's lineage and end-of-image
 * tests.  `shim_tree MODE [ARGS]`; every mode prints "MODE pid=<pid>" on
 * stdout first (write(2), so stdio allocates nothing unless a mode does).
 *
 *   leaf             print and exit 0
 *   none             print and exit 0 (allocates nothing itself)
 *   fork             fork a child that runs `leaf` code and exits
 *   forkexec         fork; the child execs `leaf` (execl)
 *   execs            exec itself through every exec variant in turn:
 *                    execv -> execvp -> execvpe -> execl -> execlp -> execle
 *                    -> execve -> fexecve -> execveat -> leaf
 *   spawn            posix_spawn then posix_spawnp of `leaf`
 *   system           system("<self> leaf")
 *   popen            popen("<self> leaf", "r"), read it all, pclose
 *   vfork            vfork; the child execv's `leaf`
 *   envi             execve `leaf` with the scrubbed envp {"A=1", NULL}
 *   hold BYTES       malloc+touch BYTES, print "usable=<n>" and "ready",
 *                    then sleep until killed
 *   uexit BYTES      malloc BYTES, print "usable=<n>", _exit(7)
 *   mark             memtrace_mark() around a 1 MiB block (via dlsym);
 *                    prints "usable=<n>"
 *   threadfork       a thread allocating in a loop while main forks a child
 *                    that allocates, frees and exits
 *   chdirclose       chdir("/"), close every fd above 2, print "fds=<n>"
 *                    (descriptors still open above 2: the shim keeps none),
 *                    then fork; the child execs `leaf`
 *   dlopen LIB       dlopen LIB (its constructor allocates), dlclose it
 *   threshold        print "mmapped=1" if a 200000-byte malloc is served by
 *                    mmap, as glibc does by default (the shim's start-up
 *                    must not move glibc's dynamic mmap threshold)
 *   quick            quick_exit(5) after malloc of 3000 bytes ("usable=<n>")
 *   execfail         execv and execvp of a missing program fail (ENOENT is
 *                    printed as "errno=2"), then exit 0
 */
#include <dirent.h>
#include <errno.h>
#include <dlfcn.h>
#include <fcntl.h>
#include <malloc.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "memtrace.h"

extern char **environ;
static char self[4096];

static void say(const char *mode, const char *key, long long v)
{
	char buf[256];
	int n = snprintf(buf, sizeof buf, "%s %s=%lld\n", mode, key, v);
	if (write(1, buf, (size_t)n) != n)
		_exit(3);
}

static void wait_ok(pid_t pid)
{
	int st;
	if (waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st) != 0) {
		fprintf(stderr, "shim_tree: child %d failed (status %#x)\n", (int)pid, st);
		exit(4);
	}
}

static void fail(const char *what)
{
	perror(what);
	_exit(5);
}

/* The exec chain: each step uses the next variant to exec "execs <step+1>". */
static void exec_step(int step)
{
	char next[16];
	char *av[] = { self, "execs", next, NULL };
	int fd;
	snprintf(next, sizeof next, "%d", step + 1);
	switch (step) {
	case 0:
		execv(self, av);
		break;
	case 1:
		execvp(self, av);
		break;
	case 2:
		execvpe(self, av, environ);
		break;
	case 3:
		execl(self, self, "execs", next, (char *)NULL);
		break;
	case 4:
		execlp(self, self, "execs", next, (char *)NULL);
		break;
	case 5:
		execle(self, self, "execs", next, (char *)NULL, environ);
		break;
	case 6:
		execve(self, av, environ);
		break;
	case 7:
		fd = open(self, O_RDONLY | O_CLOEXEC);
		fexecve(fd, av, environ);
		break;
	case 8:
		execveat(AT_FDCWD, self, av, environ, 0);
		break;
	default:
		execl(self, self, "leaf", (char *)NULL);
		break;
	}
	fail("exec");
}

static void *spin(void *arg)
{
	volatile int *stop = arg;
	while (!*stop)
		free(malloc(64));
	return NULL;
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "leaf";
	char cmd[4200];
	pid_t pid;
	ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);

	if (n <= 0)
		return 6;
	self[n] = '\0';
	say(mode, "pid", getpid());
	if (!strcmp(mode, "leaf") || !strcmp(mode, "none"))
		return 0;
	if (!strcmp(mode, "fork")) {
		pid = fork();
		if (pid == 0) {
			say("forkchild", "pid", getpid());
			exit(0);
		}
		wait_ok(pid);
		return 0;
	}
	if (!strcmp(mode, "forkrace")) {
		/* On one CPU the parent runs on after fork() before the child
		 * does: its 50 MB malloc lands while the child has not yet run
		 * the shim's fork handler.  The child must still start from the
		 * parent's figures AT the fork, not from what it reads later. */
		cpu_set_t one;
		CPU_ZERO(&one);
		CPU_SET(0, &one);
		sched_setaffinity(0, sizeof one, &one);
		pid = fork();
		if (pid == 0) {
			say("forkchild", "pid", getpid());
			_exit(0);
		}
		char *late = malloc(50u << 20);
		if (!late)
			fail("malloc");
		*(volatile char *)late = 1; /* used: the compiler may not drop it */
		wait_ok(pid);
		free(late);
		return 0;
	}
	if (!strcmp(mode, "forkexec")) {
		pid = fork();
		if (pid == 0) {
			execl(self, self, "leaf", (char *)NULL);
			fail("execl");
		}
		wait_ok(pid);
		return 0;
	}
	if (!strcmp(mode, "execs"))
		exec_step(argc > 2 ? atoi(argv[2]) : 0);
	if (!strcmp(mode, "spawn")) {
		char *av[] = { self, "leaf", NULL };
		if (posix_spawn(&pid, self, NULL, NULL, av, environ) != 0)
			fail("posix_spawn");
		wait_ok(pid);
		if (posix_spawnp(&pid, self, NULL, NULL, av, environ) != 0)
			fail("posix_spawnp");
		wait_ok(pid);
		return 0;
	}
	if (!strcmp(mode, "system")) {
		snprintf(cmd, sizeof cmd, "'%s' leaf", self);
		return system(cmd) == 0 ? 0 : 7;
	}
	if (!strcmp(mode, "popen")) {
		char line[256];
		FILE *f;
		snprintf(cmd, sizeof cmd, "'%s' leaf", self);
		f = popen(cmd, "r");
		if (!f)
			fail("popen");
		while (fgets(line, sizeof line, f))
			fputs(line, stdout);
		fflush(stdout);
		return pclose(f) == 0 ? 0 : 8;
	}
	if (!strcmp(mode, "vfork")) {
		char *av[] = { self, "leaf", NULL };
		pid = vfork();
		if (pid == 0) {
			execv(self, av);
			_exit(127);
		}
		wait_ok(pid);
		return 0;
	}
	if (!strcmp(mode, "envi")) {
		char *av[] = { self, "leaf", NULL };
		char *ev[] = { "A=1", NULL };
		execve(self, av, ev);
		fail("execve");
	}
	if (!strcmp(mode, "hold") || !strcmp(mode, "uexit")) {
		size_t bytes = argc > 2 ? strtoul(argv[2], NULL, 0) : 1 << 20;
		char *p = malloc(bytes);
		if (!p)
			fail("malloc");
		memset(p, 0x5a, bytes);
		say(mode, "usable", (long long)malloc_usable_size(p));
		if (!strcmp(mode, "uexit"))
			_exit(7);
		if (write(1, "ready\n", 6) != 6)
			return 9;
		for (;;)
			pause();
	}
	if (!strcmp(mode, "mark")) {
		memtrace_mark_fn *mark = (memtrace_mark_fn *)dlsym(RTLD_DEFAULT, "memtrace_mark");
		char *p;
		if (!mark)
			return 10;
		mark("start");
		p = malloc(1 << 20);
		say(mode, "usable", (long long)malloc_usable_size(p));
		mark("big block held");
		free(p);
		mark("end: a label that is much longer than the forty-seven bytes kept");
		return 0;
	}
	if (!strcmp(mode, "threadfork")) {
		volatile int stop = 0;
		pthread_t t;
		pthread_create(&t, NULL, spin, (void *)&stop);
		for (int i = 0; i < 3; i++) {
			pid = fork();
			if (pid == 0) {
				void *p = malloc(1000);
				say("threadforkchild", "usable", (long long)malloc_usable_size(p));
				free(p);
				exit(0);
			}
			wait_ok(pid);
		}
		stop = 1;
		pthread_join(t, NULL);
		return 0;
	}
	if (!strcmp(mode, "chdirclose")) {
		int fds = 0;
		DIR *d;
		struct dirent *e;
		if (chdir("/") != 0)
			fail("chdir");
		for (int fd = 3; fd < 1024; fd++)
			close(fd);
		d = opendir("/proc/self/fd");
		if (!d)
			fail("opendir");
		while ((e = readdir(d)) != NULL)
			if (atoi(e->d_name) > 2 && atoi(e->d_name) != dirfd(d))
				fds++;
		closedir(d);
		say(mode, "fds", fds);
		pid = fork();
		if (pid == 0) {
			execl(self, self, "leaf", (char *)NULL);
			fail("execl");
		}
		wait_ok(pid);
		return 0;
	}
	if (!strcmp(mode, "quick")) {
		void *volatile p = malloc(3000);
		say(mode, "usable", (long long)malloc_usable_size(p));
		quick_exit(5);
	}
	if (!strcmp(mode, "threshold")) {
		char *volatile p = malloc(200000);
		size_t h;
		memcpy(&h, p - sizeof h, sizeof h); /* glibc chunk header: bit 1 = mmapped */
		say(mode, "mmapped", (h & 2) != 0);
		free(p);
		return 0;
	}
	if (!strcmp(mode, "execfail")) {
		char *av[] = { "/nonexistent/prog", NULL };
		int e1, e2;
		execv(av[0], av);
		e1 = errno;
		execvp("no-such-program-anywhere", av);
		e2 = errno;
		say(mode, "errno", e1 == e2 ? e1 : -1);
		return 0;
	}
	if (!strcmp(mode, "dlopen")) {
		void *h = dlopen(argc > 2 ? argv[2] : "", RTLD_NOW);
		if (!h) {
			fprintf(stderr, "shim_tree: %s\n", dlerror());
			return 11;
		}
		dlclose(h);
		return 0;
	}
	fprintf(stderr, "shim_tree: unknown mode %s\n", mode);
	return 2;
}
