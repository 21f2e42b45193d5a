/* pollset.c: the loop's steady fds behind one epoll fd (see pollset.h). */
#include "base/pollset.h"
#include "invariant.h"

#include <errno.h>
#include <string.h>
#include <sys/epoll.h>
#include <unistd.h>

/* the slots a wait may take beside the steady ones (the output's) */
#define POLLSET_MAX_MORE 16u

void pollset_open(struct pollset *ps, size_t n)
{
	memset(ps, 0, sizeof *ps);
	MT_ASSERT(n <= POLLSET_MAX_SLOTS);
	ps->n = n <= POLLSET_MAX_SLOTS ? n : 0;
	for (size_t i = 0; i < POLLSET_MAX_SLOTS; i++)
		ps->fd[i] = -1;
	ps->epfd = ps->n ? epoll_create1(EPOLL_CLOEXEC) : -1;
}

void pollset_close(struct pollset *ps)
{
	if (ps->epfd >= 0)
		close(ps->epfd);
	ps->epfd = -1;
}

void pollset_forget(struct pollset *ps, size_t slot)
{
	if (slot >= ps->n || ps->fd[slot] < 0) /* none open (no loop yet) */
		return;
	/* its file may be open still, under this number: let go of it, but
	 * only if no other slot holds that number now */
	int mine = ps->fd[slot];
	ps->fd[slot] = -1;
	for (size_t i = 0; i < ps->n; i++)
		if (ps->fd[i] == mine)
			return;
	if (ps->epfd >= 0)
		epoll_ctl(ps->epfd, EPOLL_CTL_DEL, mine, NULL);
}

/* The registrations made to match pfd[0..n).  Every removal first, then
 * every addition: an fd number a slot let go of (its file closed) may
 * come back as another slot's new fd in the same pass.  0, or -1 when
 * epoll cannot take one (the caller gives epoll up). */
static int sync_slots(struct pollset *ps, const struct pollfd *pfd)
{
	int changed = 0;
	for (size_t i = 0; i < ps->n; i++) {
		if (pfd[i].fd == ps->fd[i] && (pfd[i].fd < 0 || pfd[i].events == ps->events[i]))
			continue;
		changed = 1;
		if (ps->fd[i] >= 0 && pfd[i].fd != ps->fd[i])
			pollset_forget(ps, i);
	}
	if (!changed)
		return 0;
	for (size_t i = 0; i < ps->n; i++) {
		if (pfd[i].fd < 0 || (pfd[i].fd == ps->fd[i] && pfd[i].events == ps->events[i]))
			continue;
		struct epoll_event ev = { .events = (uint32_t)(unsigned short)pfd[i].events,
					  .data.u32 = (uint32_t)i };
		int op = pfd[i].fd == ps->fd[i] ? EPOLL_CTL_MOD : EPOLL_CTL_ADD;
		int rc = epoll_ctl(ps->epfd, op, pfd[i].fd, &ev);
		/* registered already: a slot forgotten whose file stayed open,
		 * or the same fd in two slots, which one epoll cannot tell
		 * apart (ppoll can) */
		if (rc < 0 && errno == EEXIST) {
			for (size_t j = 0; j < ps->n; j++)
				if (j != i && ps->fd[j] == pfd[i].fd)
					return -1;
			rc = epoll_ctl(ps->epfd, EPOLL_CTL_MOD, pfd[i].fd, &ev);
		}
		if (rc < 0)
			return -1;
		ps->fd[i] = pfd[i].fd;
		ps->events[i] = pfd[i].events;
	}
	return 0;
}

int pollset_wait(struct pollset *ps, struct pollfd *pfd, size_t n_more,
		 const struct timespec *ts)
{
	size_t n = ps->n;
	if (ps->epfd >= 0 && (n_more > POLLSET_MAX_MORE || sync_slots(ps, pfd) < 0))
		pollset_close(ps); /* epoll given up: plain ppoll() from now on */
	if (ps->epfd < 0)
		return ppoll(pfd, n + n_more, ts, NULL);
	struct pollfd q[1 + POLLSET_MAX_MORE];
	q[0] = (struct pollfd){ ps->epfd, POLLIN, 0 };
	memcpy(q + 1, pfd + n, n_more * sizeof *pfd);
	int rc = ppoll(q, 1 + n_more, ts, NULL);
	for (size_t i = 0; i < n + n_more; i++)
		pfd[i].revents = 0;
	if (rc < 0)
		return rc;
	int count = 0;
	for (size_t j = 0; j < n_more; j++) {
		pfd[n + j].revents = q[1 + j].revents;
		count += q[1 + j].revents != 0;
	}
	if (q[0].revents) {
		struct epoll_event ev[POLLSET_MAX_SLOTS];
		int k = epoll_wait(ps->epfd, ev, (int)n, 0);
		for (int e = 0; e < k; e++) {
			uint32_t slot = ev[e].data.u32;
			MT_ASSERT(slot < n);
			if (slot >= n || pfd[slot].fd < 0)
				continue;
			pfd[slot].revents = (short)(ev[e].events &
				(uint32_t)(pfd[slot].events | POLLERR | POLLHUP));
			count += pfd[slot].revents != 0;
		}
	}
	return count;
}
