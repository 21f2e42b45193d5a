/* addr2line.c: running binutils' addr2line over one file's addresses (see
 * addr2line.h). */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "analyze/addr2line.h"
#include "base/clock.h"
#include "base/grow.h"

int addr2line_tool(char *buf, size_t cap, const char **why)
{
	const char *env = getenv(ADDR2LINE_ENV), *name = env ? env : "addr2line";
	const char *path = getenv("PATH");
	if (env && !*env) {
		*why = ADDR2LINE_ENV " is empty";
		return 0;
	}
	if (strchr(name, '/')) {
		if (access(name, X_OK) != 0) {
			*why = ADDR2LINE_ENV " names no executable file";
			return 0;
		}
		snprintf(buf, cap, "%s", name);
		return 1;
	}
	for (const char *p = path ? path : ""; *p;) {
		const char *end = strchr(p, ':');
		size_t len = end ? (size_t)(end - p) : strlen(p);
		if (len && snprintf(buf, cap, "%.*s/%s", (int)len, p, name) < (int)cap &&
		    access(buf, X_OK) == 0)
			return 1;
		p += len + (end != NULL);
	}
	*why = env ? ADDR2LINE_ENV " names no program in PATH" : "addr2line is not in PATH";
	return 0;
}

void addr2line_free(struct addr2line_result *r)
{
	free(r->text);
	free(r->frames);
	free(r->first);
	free(r->count);
	memset(r, 0, sizeof *r);
}

/* "0x" and hex digits only, equal to want. */
static int addr2line_is_addr(const char *l, uint64_t want)
{
	char *end;
	if (l[0] != '0' || l[1] != 'x' || !l[2])
		return 0;
	errno = 0;
	uint64_t v = strtoull(l + 2, &end, 16);
	return !errno && !*end && v == want;
}

/* "file:line", "file:line (discriminator N)", "??:0", "??:?" */
static void addr2line_location(char *l, struct addr2line_frame *f)
{
	char *d = strstr(l, " (discriminator "), *colon, *end;
	if (d)
		*d = '\0';
	colon = strrchr(l, ':');
	if (!colon)
		return;
	*colon = '\0';
	unsigned long v = strtoul(colon + 1, &end, 10);
	f->line = end != colon + 1 && !*end && v <= UINT32_MAX ? (uint32_t)v : 0;
	f->file = strcmp(l, "??") && *l ? l : NULL;
}

int addr2line_parse(char *text, const uint64_t *addrs, size_t n, struct addr2line_result *out)
{
	size_t cap = 0, i = 0;
	char *line = text, *fn = NULL;
	memset(out, 0, sizeof *out);
	out->first = calloc(n ? n : 1, sizeof *out->first);
	out->count = calloc(n ? n : 1, sizeof *out->count);
	if (!out->first || !out->count) {
		addr2line_free(out);
		return -ENOMEM;
	}
	out->n = n;
	int started = 0;
	while (*line) {
		char *nl = strchr(line, '\n');
		if (nl)
			*nl = '\0';
		if (!fn && i < n && addr2line_is_addr(line, addrs[i])) {
			/* the next address's answer begins */
			out->first[i] = (uint32_t)out->n_frames;
			i++;
			started = 1;
		} else if (!started) {
			break; /* text before the first address */
		} else if (!fn) {
			fn = line;
		} else {
			struct addr2line_frame f = { strcmp(fn, "??") ? fn : NULL, NULL, 0 };
			addr2line_location(line, &f);
			if (out->n_frames >= UINT32_MAX ||
			    grow_array((void **)&out->frames, &cap, out->n_frames + 1,
				       sizeof *out->frames) < 0) {
				addr2line_free(out);
				return -ENOMEM;
			}
			out->frames[out->n_frames++] = f;
			out->count[i - 1]++;
			fn = NULL;
		}
		if (!nl)
			break;
		line = nl + 1;
	}
	if (i != n || fn) {
		addr2line_free(out);
		return -EPROTO;
	}
	return 0;
}

/* The addresses, one a line, in an unlinked in-memory file at offset 0. */
static int addr2line_input(const uint64_t *addrs, size_t n)
{
	int fd = memfd_create("memsup-addr2line", MFD_CLOEXEC);
	char buf[8192];
	size_t o = 0;
	if (fd < 0)
		return -errno;
	for (size_t i = 0; i <= n; i++) {
		if (i == n || o + 24 > sizeof buf) {
			for (size_t w = 0; w < o;) {
				ssize_t r = write(fd, buf + w, o - w);
				if (r < 0 && errno == EINTR)
					continue;
				if (r <= 0) {
					int e = r < 0 ? errno : EIO;
					close(fd);
					return -e;
				}
				w += (size_t)r;
			}
			o = 0;
		}
		if (i < n)
			o += (size_t)snprintf(buf + o, sizeof buf - o, "0x%" PRIx64 "\n", addrs[i]);
	}
	if (lseek(fd, 0, SEEK_SET) != 0) {
		int e = errno;
		close(fd);
		return -e;
	}
	return fd;
}

/* Reads fd to its end into *text until the deadline: 0, -ETIMEDOUT, -E2BIG,
 * -ENOMEM, -errno. */
static int addr2line_read(int fd, uint64_t deadline_ns, char **text, size_t *len)
{
	size_t cap = 0;
	*text = NULL;
	*len = 0;
	for (;;) {
		uint64_t now = clock_mono_ns();
		if (now >= deadline_ns)
			return -ETIMEDOUT;
		uint64_t ms = (deadline_ns - now) / 1000000u + 1;
		struct pollfd p = { fd, POLLIN, 0 };
		int r = poll(&p, 1, ms > 60000 ? 60000 : (int)ms);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return -errno;
		if (r == 0)
			continue;
		if (*len + 65536 + 1 > ADDR2LINE_MAX_OUTPUT)
			return -E2BIG;
		if (grow_array((void **)text, &cap, *len + 65536 + 1, 1) < 0)
			return -ENOMEM;
		ssize_t n = read(fd, *text + *len, 65536);
		if (n < 0 && (errno == EINTR || errno == EAGAIN))
			continue;
		if (n < 0)
			return -errno;
		if (n == 0)
			break;
		*len += (size_t)n;
	}
	if (grow_array((void **)text, &cap, *len + 1, 1) < 0)
		return -ENOMEM;
	(*text)[*len] = '\0';
	return 0;
}

/* Waits for pid until the deadline, then kills it: its exit status, or -1
 * when it had to be killed. */
static int addr2line_reap(pid_t pid, uint64_t deadline_ns)
{
	int status;
	for (;;) {
		pid_t r = waitpid(pid, &status, WNOHANG);
		if (r == pid)
			return status;
		if (r < 0 && errno != EINTR)
			return -1;
		if (clock_mono_ns() >= deadline_ns)
			break;
		struct timespec ts = { 0, 10 * 1000 * 1000 };
		nanosleep(&ts, NULL);
	}
	kill(pid, SIGKILL);
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
	}
	return -1;
}

int addr2line_run(const char *tool, const char *file, const uint64_t *addrs, size_t n,
		  int inlines, uint64_t deadline_ns, struct addr2line_result *out)
{
	char *argv[] = { (char *)tool, "-a", "-f", "-C", inlines ? "-i" : "-f", "-e", (char *)file,
			 NULL };
	posix_spawn_file_actions_t fa;
	posix_spawnattr_t attr;
	sigset_t none, dfl;
	int pout[2], in, rc, status;
	char *text = NULL;
	size_t len;
	pid_t pid;
	memset(out, 0, sizeof *out);
	if ((in = addr2line_input(addrs, n)) < 0)
		return in;
	if (pipe2(pout, O_CLOEXEC) < 0) {
		rc = -errno;
		close(in);
		return rc;
	}
	/* posix_spawn: no copy of memsup's page tables (it may be large at
	 * the end of a big run), and an exec failure is its return value.
	 * The tool starts with memsup's signals unblocked and the ones memsup
	 * ignores (main.c) at their defaults. */
	sigemptyset(&none);
	sigemptyset(&dfl);
	sigaddset(&dfl, SIGPIPE);
	sigaddset(&dfl, SIGXFSZ);
	if ((rc = posix_spawn_file_actions_init(&fa)) != 0) {
		close(in);
		close(pout[0]);
		close(pout[1]);
		return -rc;
	}
	if ((rc = posix_spawnattr_init(&attr)) != 0) {
		posix_spawn_file_actions_destroy(&fa);
		close(in);
		close(pout[0]);
		close(pout[1]);
		return -rc;
	}
	rc = posix_spawn_file_actions_adddup2(&fa, in, STDIN_FILENO);
	if (!rc)
		rc = posix_spawn_file_actions_adddup2(&fa, pout[1], STDOUT_FILENO);
	if (!rc)
		rc = posix_spawn_file_actions_addopen(&fa, STDERR_FILENO, "/dev/null", O_WRONLY, 0);
	if (!rc)
		rc = posix_spawnattr_setsigmask(&attr, &none);
	if (!rc)
		rc = posix_spawnattr_setsigdefault(&attr, &dfl);
	if (!rc)
		rc = posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
	if (!rc)
		rc = posix_spawn(&pid, tool, &fa, &attr, argv, environ);
	posix_spawn_file_actions_destroy(&fa);
	posix_spawnattr_destroy(&attr);
	close(in);
	close(pout[1]);
	if (rc) {
		close(pout[0]);
		return rc == ENOENT || rc == EACCES || rc == ENOEXEC ? -ENOENT : -rc;
	}
	rc = addr2line_read(pout[0], deadline_ns, &text, &len);
	close(pout[0]);
	/* it closed its output (or the deadline passed): it has the rest of
	 * the deadline to exit */
	status = addr2line_reap(pid, rc < 0 ? 0 : deadline_ns);
	if (rc == 0 && !(status >= 0 && WIFEXITED(status) && WEXITSTATUS(status) == 0))
		rc = status < 0 ? -ETIMEDOUT : -EPROTO;
	if (rc == 0 && (rc = addr2line_parse(text, addrs, n, out)) == 0)
		out->text = text;
	else
		free(text);
	return rc;
}
