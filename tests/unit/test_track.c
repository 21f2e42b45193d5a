/* test_track.c: the registry of the run's processes (contain/track.h)
 * against real children: what a listing names is held, what ended is
 * forgotten, what left the listing alive is kept. */
#include <criterion/criterion.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include "contain/track.h"

#define KIDS 3

static pid_t sleeper(void)
{
	pid_t pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		pause();
		_exit(0);
	}
	return pid;
}

static void end(pid_t pid)
{
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
}

Test(track, listings_held_ended_forgotten_absent_kept)
{
	struct track *t;
	pid_t kid[KIDS];
	for (int i = 0; i < KIDS; i++)
		kid[i] = sleeper();
	cr_assert_eq(track_open(&t, NULL, getpid()), 0);
	track_note(t, kid, KIDS);
	cr_expect_eq(track_count(t), KIDS);
	/* the same listing again, and with a pid twice: nothing changes */
	track_note(t, kid, KIDS);
	pid_t twice[KIDS + 1] = { kid[0], kid[1], kid[2], kid[1] };
	track_note(t, twice, KIDS + 1);
	cr_expect_eq(track_count(t), KIDS);
	/* kid[2] ended: the next listing lacks it and it is forgotten */
	end(kid[2]);
	track_note(t, kid, KIDS - 1);
	cr_expect_eq(track_count(t), KIDS - 1);
	/* kid[1] absent but alive (moved out of the cgroups): kept, for the
	 * end's sweep; then ended while absent: forgotten */
	track_note(t, kid, 1);
	cr_expect_eq(track_count(t), KIDS - 1);
	end(kid[1]);
	track_note(t, kid, 1);
	cr_expect_eq(track_count(t), 1);
	/* an absent one ended while a new one came: same count listed as
	 * held, yet the ended one is found */
	pid_t fresh = sleeper();
	pid_t next[2] = { kid[0], fresh };
	track_note(t, next, 2);
	cr_expect_eq(track_count(t), 2);
	pid_t other = sleeper();
	end(fresh);
	pid_t swap[2] = { kid[0], other };
	track_note(t, swap, 2);
	cr_expect_eq(track_count(t), 2);
	track_close(t);
	end(kid[0]);
	end(other);
}
