/* x_userpreload.c: a user's own LD_PRELOAD library, for the test that memsup
 * keeps it and adds the shim beside it (tests/e2e/test_memsup_hostile.c).
 *
 * Its constructor appends one line to the file named by X_USERPRELOAD_LOG:
 *   "<pid> <exe>\t<LD_PRELOAD as this image saw it>\n"
 * with open/write only (no stdio, no allocation: it may run before the
 * shim's constructor, in any process, including memsup itself).
 */
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static size_t put(char *buf, size_t at, size_t cap, const char *s)
{
	size_t n = strlen(s);
	if (at + n > cap)
		n = cap - at;
	memcpy(buf + at, s, n);
	return at + n;
}

static size_t put_uint(char *buf, size_t at, size_t cap, unsigned long v)
{
	char tmp[24];
	int i = (int)sizeof tmp;
	tmp[--i] = '\0';
	do
		tmp[--i] = (char)('0' + v % 10);
	while ((v /= 10) && i > 0);
	return put(buf, at, cap, tmp + i);
}

__attribute__((constructor)) static void userpreload_init(void)
{
	const char *log = getenv("X_USERPRELOAD_LOG");
	const char *pre = getenv("LD_PRELOAD");
	char line[8192], exe[4096];
	size_t at = 0, cap = sizeof line - 1;
	if (!log)
		return;
	ssize_t e = readlink("/proc/self/exe", exe, sizeof exe - 1);
	exe[e > 0 ? e : 0] = '\0';
	at = put_uint(line, at, cap, (unsigned long)getpid());
	at = put(line, at, cap, " ");
	at = put(line, at, cap, exe);
	at = put(line, at, cap, "\t");
	at = put(line, at, cap, pre ? pre : "(unset)");
	line[at++] = '\n';
	int fd = open(log, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
	if (fd < 0)
		return;
	/* one write per line with O_APPEND: lines of concurrent processes
	 * do not interleave */
	if (write(fd, line, at) < 0) {
		/* nothing to do: the test sees the missing line */
	}
	close(fd);
}
