/* contain.c: the containment interface's dispatch, and the kill loop every
 * backend without a kill of its own shares (see contain.h).
 *
 * Killing lists right before every round, so that pids are as fresh as
 * they can be, and repeats until a listing comes back empty: a member may
 * fork between our listing and its SIGKILL (its orphans then come to
 * memsup, the subreaper, and into the next listing). */
#include "contain/contain.h"

#include <errno.h>
#include <signal.h>
#include <time.h>

#define NS_PER_S 1000000000ull
/* Give up killing after this long: a process stuck in D state cannot die. */
#define KILL_GIVE_UP_NS (10 * NS_PER_S)

/* The backend for a configuration: the first that can hold the tree.
 * Today there is one. */
static const struct contain_ops *pick(const struct contain_config *cfg)
{
	(void)cfg;
	return &contain_procscan_ops;
}

int contain_check(const struct contain_config *cfg, char *err, size_t errlen)
{
	return pick(cfg)->check(cfg, err, errlen);
}

int contain_open(struct contain **out, const struct contain_config *cfg)
{
	return pick(cfg)->open(out, cfg);
}

void contain_close(struct contain *c)
{
	if (c)
		c->ops->close(c);
}

const char *contain_name(const struct contain *c)
{
	return c->ops->name(c);
}

void contain_note(struct contain *c, const char *note)
{
	if (c->n_notes < CONTAIN_MAX_NOTES)
		c->notes[c->n_notes++] = note;
}

size_t contain_notes(const struct contain *c, const char *const **notes)
{
	*notes = c->notes;
	return c->n_notes;
}

int contain_start(struct contain *c, const struct spawn_request *req, struct spawn_result *res)
{
	return c->ops->start(c, req, res);
}

int contain_members(struct contain *c, const pid_t **pids, size_t *n)
{
	return c->ops->members(c, pids, n);
}

int contain_sample(struct contain *c, uint64_t *rss, unsigned *nprocs)
{
	return c->ops->sample(c, rss, nprocs);
}

size_t contain_sampled(const struct contain *c, const struct tree_member **out)
{
	return c->ops->sampled(c, out);
}

/* ---- the generic kill ------------------------------------------------------ */

static uint64_t mono_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * NS_PER_S + (uint64_t)ts.tv_nsec;
}

/* The members now; a listing that fails is an empty one (nothing more can
 * be done about what it would have found). */
static size_t list(struct contain *c, const pid_t **pids)
{
	size_t n;
	return contain_members(c, pids, &n) < 0 ? 0 : n;
}

int contain_kill(struct contain *c, double grace_s, const struct contain_waiter *w)
{
	const pid_t *pids;
	size_t n;
	if (c->ops->kill)
		return c->ops->kill(c, grace_s, w);
	if (grace_s > 0) {
		n = list(c, &pids);
		for (size_t i = 0; i < n; i++)
			kill(pids[i], SIGTERM);
		uint64_t end = mono_ns() + (uint64_t)(grace_s * 1e9);
		while (n > 0 && mono_ns() < end) {
			w->wait(w->ctx, 10);
			n = list(c, &pids);
		}
	}
	uint64_t t0 = mono_ns();
	while ((n = list(c, &pids)) > 0) {
		for (size_t i = 0; i < n; i++) {
			if (w->found)
				w->found(w->ctx, pids[i]);
			kill(pids[i], SIGKILL);
		}
		w->wait(w->ctx, 5);
		if (mono_ns() - t0 > KILL_GIVE_UP_NS)
			return -ETIMEDOUT;
	}
	return 0;
}
