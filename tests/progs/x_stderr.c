/* x_stderr.c: programs that do things to their stderr before they end, for
 * the shim's standalone summary (tests/e2e/test_shim_summary.c).
 *
 *   x_stderr alloc MB            malloc MB decimal megabytes, free, exit 0
 *   x_stderr atexit-close        an atexit handler fcloses stdout and stderr
 *                                (gnulib's close_stdout, as ls and sort do)
 *   x_stderr fclose-stderr       fclose(stderr) at the end of main (GNU tar)
 *   x_stderr close2              close(2) at the end of main
 *   x_stderr dup2-over PATH      dup2 PATH's descriptor over fd 2, then end
 *   x_stderr nonblock-fill N     make fd 2 non-blocking, write N bytes of 'x'
 *                                to it (waiting whenever it is full), end
 *   x_stderr daemon PIDFILE      fork; the child detaches (setsid, closes
 *                                0, 1 and 2), writes its pid to PIDFILE and
 *                                waits to be killed; the parent exits 0
 *   x_stderr exit N              exit(N)
 * Each prints "x_stderr MODE: done" on stdout before it ends.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void say_done(const char *mode)
{
	printf("x_stderr %s: done\n", mode);
	fflush(stdout);
}

static void close_std_streams(void)
{
	/* what gnulib's close_stdout does, in short */
	if (fclose(stdout) != 0)
		_exit(3);
	if (fclose(stderr) != 0)
		_exit(4);
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "";
	const char *arg = argc > 2 ? argv[2] : "0";
	if (!strcmp(mode, "alloc")) {
		size_t bytes = (size_t)strtoul(arg, NULL, 10) * 1000000u;
		volatile char *p = malloc(bytes);
		if (!p)
			return 2;
		p[0] = 1;
		free((void *)p);
		say_done(mode);
		return 0;
	}
	if (!strcmp(mode, "atexit-close")) {
		atexit(close_std_streams);
		say_done(mode);
		return 0;
	}
	if (!strcmp(mode, "fclose-stderr")) {
		fputs("x_stderr: a last word on stderr\n", stderr);
		say_done(mode);
		return fclose(stderr) != 0;
	}
	if (!strcmp(mode, "close2")) {
		say_done(mode);
		return close(2) != 0;
	}
	if (!strcmp(mode, "dup2-over")) {
		int fd = open(arg, O_WRONLY | O_CREAT | O_TRUNC, 0644);
		if (fd < 0 || dup2(fd, 2) != 2)
			return 2;
		close(fd);
		say_done(mode);
		return 0;
	}
	if (!strcmp(mode, "nonblock-fill")) {
		long left = strtol(arg, NULL, 10);
		char buf[4096];
		memset(buf, 'x', sizeof buf);
		fcntl(2, F_SETFL, fcntl(2, F_GETFL) | O_NONBLOCK);
		while (left > 0) {
			ssize_t n = write(2, buf, left < (long)sizeof buf ? (size_t)left : sizeof buf);
			if (n < 0 && errno == EAGAIN) {
				struct pollfd p = { 2, POLLOUT, 0 };
				poll(&p, 1, -1);
				continue;
			}
			if (n <= 0)
				return 2;
			left -= n;
		}
		say_done(mode);
		return 0;
	}
	if (!strcmp(mode, "daemon")) {
		pid_t pid;
		say_done(mode);
		pid = fork();
		if (pid < 0)
			return 2;
		if (pid == 0) {
			FILE *f;
			setsid();
			close(0);
			close(1);
			close(2);
			f = fopen(arg, "w");
			if (!f)
				_exit(2);
			fprintf(f, "%d\n", (int)getpid());
			fclose(f);
			for (;;)
				pause();
		}
		return 0;
	}
	if (!strcmp(mode, "exit")) {
		say_done(mode);
		exit(atoi(arg));
	}
	fprintf(stderr, "usage: x_stderr MODE [ARG] (see the source)\n");
	return 2;
}
