/* pollset.h: the supervision loop's steady fds behind one epoll fd.
 *
 * Why: a dense sample sleeps in ppoll() a hundred times a second, and
 * ppoll() asks every fd it is given whether it is ready, on the way in
 * and on the way out, each time: on the test VM, with seven slots of
 * which five or six are open, that per-fd work was about a tenth of a
 * dense sample's CPU (perf).  An epoll fd keeps the registrations; the
 * loop's ppoll() is given that one fd in their place, beside the slots
 * that change every few milliseconds (the output relay's), which stay in
 * the ppoll() itself, so that turning those on and off costs nothing.
 *
 * The caller keeps filling a struct pollfd array as for ppoll(); the
 * pollset registers what changed since the last call (a slot's fd or
 * events) and fills revents back after the wait.  What it cannot know:
 * that an fd was closed and another opened with the same number for the
 * same slot (epoll dropped the old file, the number looks unchanged); the
 * caller says so with pollset_forget().  When epoll cannot take a slot's
 * fd (a regular file or /dev/null: EPERM; the same fd in two slots:
 * EEXIST) or is missing, the pollset gives up epoll for good and every
 * wait is a plain ppoll() over all the slots, as before: slower, never
 * wrong. */
#ifndef MEMSUP_POLLSET_H
#define MEMSUP_POLLSET_H

#include <poll.h>
#include <stddef.h>
#include <time.h>

#define POLLSET_MAX_SLOTS 8u

struct pollset {
	int epfd;                          /* -1: plain ppoll(), for good */
	size_t n;                          /* the slots behind epfd */
	int fd[POLLSET_MAX_SLOTS];         /* registered, or -1 */
	short events[POLLSET_MAX_SLOTS];
};

/* n slots (at most POLLSET_MAX_SLOTS) go behind the epoll fd.  Never
 * fails: without epoll the set waits by plain ppoll(). */
void pollset_open(struct pollset *ps, size_t n);
void pollset_close(struct pollset *ps);

/* Slot `slot`'s fd was closed, or is about to be: the next wait
 * registers whatever the slot then holds, even the same number. */
void pollset_forget(struct pollset *ps, size_t slot);

/* ppoll(pfd, n_steady + n_more, ts, NULL), where pfd[0..ps->n) are the
 * steady slots and pfd[ps->n..) the others, with the same result: the
 * count of slots with revents, each slot's revents set, -1 and errno on
 * failure (EINTR among them). */
int pollset_wait(struct pollset *ps, struct pollfd *pfd, size_t n_more,
		 const struct timespec *ts);

#endif /* MEMSUP_POLLSET_H */
