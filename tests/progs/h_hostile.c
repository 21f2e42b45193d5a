/* h_hostile.c: a tree that makes itself hard to watch and to kill.
 * Usage: h_hostile MODE PIDFILE MB [DEPTH].
 * A chain of DEPTH processes (default 3; the main one first, each forking
 * the next) in which every process applies MODE, appends its pid to
 * PIDFILE, then holds MB (decimal MB) and waits forever:
 *   close     close stdin, stdout and stderr (after one line to stdout)
 *   redirect  point stdout and stderr at /dev/null (after one line)
 *   ignterm   ignore SIGTERM
 *   setpgid   leave the process group (setpgid(0, 0)); not the main one,
 *             which memsup made a session leader
 *   setsid    leave the session (setsid()); not the main one
 * A process writes its pid before it holds memory, so a test whose RSS
 * budget lies above DEPTH-1 blocks and below DEPTH blocks knows every pid
 * is in PIDFILE when the budget kills the tree. */
#include "workload.h"
#include <signal.h>

static void note_pid(const char *path)
{
	char line[32];
	int fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
	if (fd < 0)
		_exit(3);
	int n = snprintf(line, sizeof line, "%d\n", (int)getpid());
	if (write(fd, line, (size_t)n) != n)
		_exit(3);
	close(fd);
}

static void say(const char *text)
{
	ssize_t w = write(STDOUT_FILENO, text, strlen(text));
	(void)w;
}

static int apply(const char *mode, int level)
{
	if (strcmp(mode, "close") == 0) {
		say("h_hostile: closing stdin, stdout, stderr\n");
		close(0);
		close(1);
		close(2);
	} else if (strcmp(mode, "redirect") == 0) {
		say("h_hostile: redirecting to /dev/null\n");
		int fd = open("/dev/null", O_WRONLY);
		if (fd < 0 || dup2(fd, 1) < 0 || dup2(fd, 2) < 0)
			return -1;
		close(fd);
		say("h_hostile: this line must not reach stdout.log\n");
	} else if (strcmp(mode, "ignterm") == 0) {
		signal(SIGTERM, SIG_IGN);
	} else if (strcmp(mode, "setpgid") == 0) {
		if (level > 0 && setpgid(0, 0) < 0)
			return -1;
	} else if (strcmp(mode, "setsid") == 0) {
		if (level > 0 && setsid() < 0)
			return -1;
	} else {
		return -1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	if (argc < 4) {
		fprintf(stderr, "usage: h_hostile MODE PIDFILE MB [DEPTH]\n");
		return 2;
	}
	const char *mode = argv[1], *pidfile = argv[2];
	long mb = wl_arg(argc, argv, 3, 30), depth = wl_arg(argc, argv, 4, 3);
	int level = 0;
	while (level + 1 < depth) {
		pid_t pid = fork();
		if (pid < 0)
			wl_die("fork");
		if (pid > 0)
			break;
		level++;
	}
	if (apply(mode, level) < 0)
		_exit(4);
	note_pid(pidfile);
	wl_hold((size_t)mb * WL_MB);
	for (;;)
		pause();
}
