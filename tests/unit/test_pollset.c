/* test_pollset.c: the loop's steady fds behind one epoll fd
 * (supervisor/pollset.h): the same answers as ppoll() over all the slots,
 * an fd replaced under the same number still heard once forgotten, and
 * plain ppoll() where epoll cannot take a slot. */
#include <criterion/criterion.h>
#include <fcntl.h>
#include <stdint.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "base/pollset.h"

static const struct timespec now0 = { 0, 0 };

static void poke(int efd)
{
	uint64_t one = 1;
	cr_assert_eq(write(efd, &one, sizeof one), (ssize_t)sizeof one);
}

Test(pollset, like_ppoll_over_steady_and_other_slots)
{
	struct pollset ps;
	int a = eventfd(0, EFD_NONBLOCK), b = eventfd(0, EFD_NONBLOCK), p[2];
	cr_assert(a >= 0 && b >= 0 && pipe(p) == 0);
	pollset_open(&ps, 3);
	cr_assert_geq(ps.epfd, 0);
	struct pollfd pfd[5] = { { a, POLLIN, 0 }, { -1, 0, 0 }, { b, POLLIN, 0 },
				 { p[0], POLLIN, 0 }, { p[1], POLLOUT, 0 } };
	/* nothing steady ready: only the pipe's write end, beside them */
	cr_expect_eq(pollset_wait(&ps, pfd, 2, &now0), 1);
	cr_expect(!pfd[0].revents && !pfd[2].revents && !pfd[3].revents);
	cr_expect_eq(pfd[4].revents, POLLOUT);
	poke(b);
	cr_expect_eq(pollset_wait(&ps, pfd, 2, &now0), 2);
	cr_expect(!pfd[0].revents && pfd[2].revents == POLLIN);
	/* a slot turned off is not heard, though its fd is ready */
	pfd[2].fd = -1;
	cr_expect_eq(pollset_wait(&ps, pfd, 2, &now0), 1);
	cr_expect_eq(pfd[2].revents, 0);
	/* and back on: heard again */
	pfd[2].fd = b;
	cr_expect_eq(pollset_wait(&ps, pfd, 2, &now0), 2);
	cr_expect_eq(pfd[2].revents, POLLIN);
	cr_expect_geq(ps.epfd, 0, "epoll given up");
	pollset_close(&ps);
	close(a), close(b), close(p[0]), close(p[1]);
}

/* The usage's marks are re-armed with a new eventfd, the old one closed
 * first: the new one usually gets the old number.  Forgotten, it is
 * registered anew and heard; not forgotten, epoll would not hear it (the
 * case the call is for). */
Test(pollset, replaced_under_the_same_number_is_heard_once_forgotten)
{
	struct pollset ps;
	int a = eventfd(0, EFD_NONBLOCK);
	pollset_open(&ps, 1);
	struct pollfd pfd[1] = { { a, POLLIN, 0 } };
	cr_expect_eq(pollset_wait(&ps, pfd, 0, &now0), 0);
	close(a);
	int again = eventfd(0, EFD_NONBLOCK);
	cr_assert_eq(again, a, "the old number comes back");
	pollset_forget(&ps, 0);
	poke(again);
	cr_expect_eq(pollset_wait(&ps, pfd, 0, &now0), 1);
	cr_expect_eq(pfd[0].revents, POLLIN);
	/* without the call: the registration went with the old file */
	close(again);
	int third = eventfd(0, EFD_NONBLOCK);
	cr_assert_eq(third, a);
	poke(third);
	cr_expect_eq(pollset_wait(&ps, pfd, 0, &now0), 0);
	pollset_close(&ps);
	close(third);
}

/* A number a slot let go of, taken by another slot's new fd in the same
 * pass, stays registered for the new one. */
Test(pollset, a_number_passed_between_slots_stays_heard)
{
	struct pollset ps;
	int a = eventfd(0, EFD_NONBLOCK), b = eventfd(0, EFD_NONBLOCK);
	pollset_open(&ps, 2);
	struct pollfd pfd[2] = { { a, POLLIN, 0 }, { b, POLLIN, 0 } };
	cr_expect_eq(pollset_wait(&ps, pfd, 0, &now0), 0);
	close(a);
	pfd[0].fd = -1;
	close(b);
	int nb = eventfd(0, EFD_NONBLOCK); /* a's number, now slot 1's */
	cr_assert_eq(nb, a);
	pfd[1].fd = nb;
	pollset_forget(&ps, 1);
	poke(nb);
	cr_expect_eq(pollset_wait(&ps, pfd, 0, &now0), 1);
	cr_expect_eq(pfd[1].revents, POLLIN);
	cr_expect_geq(ps.epfd, 0, "epoll given up");
	pollset_close(&ps);
	close(nb);
}

/* What epoll cannot take (a regular file; the same fd in two slots):
 * plain ppoll() from then on, with ppoll()'s answers. */
Test(pollset, what_epoll_refuses_falls_back_to_ppoll)
{
	struct pollset ps;
	char path[] = "/tmp/test_pollset.XXXXXX";
	int f = mkstemp(path), e = eventfd(0, EFD_NONBLOCK);
	cr_assert(f >= 0);
	unlink(path);
	pollset_open(&ps, 2);
	struct pollfd pfd[2] = { { e, POLLIN, 0 }, { f, POLLIN, 0 } };
	cr_expect_eq(pollset_wait(&ps, pfd, 0, &now0), 1, "a regular file is always ready");
	cr_expect_eq(pfd[1].revents, POLLIN);
	cr_expect_lt(ps.epfd, 0, "epoll kept");
	poke(e);
	cr_expect_eq(pollset_wait(&ps, pfd, 0, &now0), 2);
	pollset_close(&ps);
	struct pollset twice;
	pollset_open(&twice, 2);
	struct pollfd same[2] = { { e, POLLIN, 0 }, { e, POLLIN, 0 } };
	cr_expect_eq(pollset_wait(&twice, same, 0, &now0), 2);
	cr_expect_lt(twice.epfd, 0, "epoll kept");
	pollset_close(&twice);
	close(f), close(e);
}
