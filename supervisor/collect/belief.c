/* belief.c: the time and pid tests of the belief rule (see belief.h). */
#include "collect/belief.h"
#include "base/procfs.h"

#include <errno.h>
#include <stdlib.h>

int belief_pid_possible(int64_t pid, long pid_max)
{
	/* pid_max is the first pid the kernel will not hand out: the largest
	 * possible pid is pid_max - 1 */
	return pid > 0 && (pid_max <= 0 || pid < (int64_t)pid_max);
}

int belief_seen_fits(const struct belief_span *img, uint64_t seen_from, uint64_t seen_to)
{
	/* A sighting is a listing that took from seen_from to seen_to; a
	 * process it found may have been forked during it, so its image's
	 * start may be a little after seen_from but never after seen_to.
	 * The slack covers the fork handler's stamp coming late (belief.h). */
	if (img->start_ns > seen_to + BELIEF_SLACK_NS)
		return 0;
	return !img->end_ns || img->end_ns + BELIEF_SLACK_NS >= seen_from;
}

int belief_parent_fits(const struct belief_span *parent, const struct belief_span *child)
{
	/* The parent's own stamp comes before the fork, exec or spawn that
	 * made the child, on the same clock: no slack that way. */
	if (!parent->start_ns || parent->start_ns > child->start_ns)
		return 0;
	return !parent->end_ns || child->start_ns <= parent->end_ns + BELIEF_SLACK_NS;
}

int belief_hwm_fits(uint64_t vm_hwm_kb, uint64_t bound_kb)
{
	if (!bound_kb)
		return 1;
	/* 2 * bound cannot wrap: a bound in KiB is far below 2^63 */
	return vm_hwm_kb <= 2 * bound_kb + BELIEF_HWM_SLACK_KB;
}

long belief_read_pid_max(const char *path)
{
	char buf[32];
	size_t len;
	int rc = procfs_read_file(path, buf, sizeof buf, &len);
	if (rc < 0)
		return rc;
	buf[len < sizeof buf ? len : sizeof buf - 1] = '\0';
	char *end;
	errno = 0;
	long v = strtol(buf, &end, 10);
	if (errno || end == buf || v <= 0)
		return -EINVAL;
	return v;
}
