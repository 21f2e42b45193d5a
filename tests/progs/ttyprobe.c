/* ttyprobe.c: what a command sees of its terminal, for tests/terminal.sh.
 *
 *   ttyprobe [STATUS]
 *
 * Prints one line on what it was given -- "probe: tty 1 1 1 devtty ok fg
 * yes group own" (isatty of fds 0, 1 and 2; whether /dev/tty opens;
 * whether its process group is the terminal's foreground group; whether it
 * leads that group or shares its parent's) -- then "probe: size
 * ROWSxCOLS" (TIOCGWINSZ) at the start and at each SIGWINCH.  Reads lines
 * from stdin; at a line "q" or end of file it exits with STATUS (default 0). */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

static volatile sig_atomic_t resized;

static void on_winch(int sig)
{
	(void)sig;
	resized = 1;
}

static void print_size(void)
{
	struct winsize ws;
	if (ioctl(STDIN_FILENO, TIOCGWINSZ, &ws) == 0)
		printf("probe: size %ux%u\n", (unsigned)ws.ws_row, (unsigned)ws.ws_col);
	else
		printf("probe: size unknown (%s)\n", strerror(errno));
	fflush(stdout);
}

int main(int argc, char **argv)
{
	int status = argc > 1 ? atoi(argv[1]) : 0;
	int tty = open("/dev/tty", O_RDWR | O_NOCTTY | O_CLOEXEC);
	pid_t fg = tcgetpgrp(STDIN_FILENO);
	const char *group = getpgrp() == getpid() ? "own"
			    : getpgid(getppid()) == getpgrp() ? "parent's" : "other";
	printf("probe: tty %d %d %d devtty %s fg %s group %s\n", isatty(0), isatty(1), isatty(2),
	       tty >= 0 ? "ok" : "no", fg > 0 && fg == getpgrp() ? "yes" : "no", group);
	if (tty >= 0)
		close(tty);

	sigset_t block, orig;
	sigemptyset(&block);
	sigaddset(&block, SIGWINCH);
	sigprocmask(SIG_BLOCK, &block, &orig);
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_winch;
	sigaction(SIGWINCH, &sa, NULL);
	print_size();

	char line[256];
	size_t have = 0;
	for (;;) {
		/* SIGWINCH is let in only while waiting: none is missed */
		struct pollfd p = { STDIN_FILENO, POLLIN, 0 };
		int n = ppoll(&p, 1, NULL, &orig);
		if (resized) {
			resized = 0;
			print_size();
		}
		if (n <= 0)
			continue;
		ssize_t got = read(STDIN_FILENO, line + have, sizeof line - 1 - have);
		if (got <= 0)
			return status;
		have += (size_t)got;
		line[have] = '\0';
		char *nl;
		while ((nl = strchr(line, '\n')) != NULL) {
			*nl = '\0';
			if (strcmp(line, "q") == 0)
				return status;
			memmove(line, nl + 1, strlen(nl + 1) + 1);
			have = strlen(line);
		}
		if (have >= sizeof line - 1)
			have = 0;
	}
}
