/* oomadj.c: memsup out of the OOM killer's reach (see oomadj.h). */
#include "contain/oomadj.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

int oomadj_protect(struct oomadj *a, const char *path)
{
	memset(a, 0, sizeof *a);
	if (!path)
		path = "/proc/self/oom_score_adj";
	int fd = open(path, O_RDWR | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	ssize_t n = pread(fd, a->before, sizeof a->before - 1, 0);
	if (n <= 0) {
		int e = n < 0 ? errno : EIO;
		close(fd);
		return -e;
	}
	a->before[n] = '\0';
	a->before[strcspn(a->before, "\n")] = '\0';
	/* already there (a memsup nested in one that is not the command's
	 * parent, or a service set so): nothing to give back */
	if (!strcmp(a->before, "-1000")) {
		close(fd);
		return 0;
	}
	a->protected = pwrite(fd, "-1000", 5, 0) == 5;
	close(fd);
	return 0;
}
