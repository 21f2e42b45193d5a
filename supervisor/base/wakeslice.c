/* wakeslice.c: a short time slice for memsup's wake-ups (see wakeslice.h). */
#include "base/wakeslice.h"

#include <errno.h>
#include <sched.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

/* The kernel's struct sched_attr (include/uapi/linux/sched/types.h),
 * SCHED_ATTR_SIZE_VER0: what every kernel with sched_setattr takes; glibc
 * before 2.41 declares none. */
struct wakeslice_attr {
	uint32_t size;
	uint32_t sched_policy;
	uint64_t sched_flags;
	int32_t sched_nice;
	uint32_t sched_priority;
	uint64_t sched_runtime;
	uint64_t sched_deadline;
	uint64_t sched_period;
};

int wakeslice_take(uint64_t ns)
{
#if defined(SYS_sched_getattr) && defined(SYS_sched_setattr)
	struct wakeslice_attr a;
	memset(&a, 0, sizeof a);
	if (syscall(SYS_sched_getattr, 0, &a, (unsigned)sizeof a, 0u) < 0)
		return -errno;
	if (a.sched_policy != SCHED_OTHER && a.sched_policy != SCHED_BATCH)
		return -EINVAL;
	/* the policy and nice as they are: only the slice changes */
	a.size = sizeof a;
	a.sched_flags = 0;
	a.sched_runtime = ns;
	if (syscall(SYS_sched_setattr, 0, &a, 0u) < 0)
		return -errno;
	return 0;
#else
	(void)ns;
	return -ENOSYS;
#endif
}
