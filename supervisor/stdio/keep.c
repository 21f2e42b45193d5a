/* keep.c: the head and tail of the command's output in stdout.log (see
 * keep.h).  Every byte is taken from its source exactly once: into the
 * log (the head), into the ring (what may be in the tail) or into nothing
 * (what cannot be in either). */
#include "stdio/keep.h"
#include "base/grow.h"
#include "invariant.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

#define KEEP_SCRATCH (1 << 16) /* dropping without /dev/null: read into this */

int keep_init(struct keep *k, uint64_t max)
{
	memset(k, 0, sizeof *k);
	k->log_fd = k->null_fd = -1;
	if (max == KEEP_UNLIMITED) {
		k->head_max = KEEP_UNLIMITED;
		return 0;
	}
	k->tail_max = max / 2;
	k->head_max = max - k->tail_max;
	if (k->tail_max > SIZE_MAX / 2)
		return -ENOMEM;
	if (k->tail_max && !(k->ring = malloc((size_t)k->tail_max)))
		return -ENOMEM;
	/* without it, dropped bytes are read into a buffer: slower, as right */
	k->null_fd = open("/dev/null", O_WRONLY | O_CLOEXEC);
	return 0;
}

void keep_set_log(struct keep *k, int log_fd)
{
	k->log_fd = log_fd;
}

static int write_all(int fd, const char *p, size_t n)
{
	while (n > 0) {
		ssize_t w = write(fd, p, n);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return w < 0 ? -errno : -EIO;
		p += w;
		n -= (size_t)w;
	}
	return 0;
}

/* Where the bytes come from: a pipe (relay.c), taken out of it by
 * splice(2) or read(2), or memory already read (transcript.c's buffer of
 * what the pty showed), whose cursor moves on.  Each step takes exactly
 * its n bytes, all of them there already. */
struct keep_src {
	int fd;                    /* the pipe; -1 for memory */
	const char *buf;           /* memory's next byte */
};

/* n bytes into the log: spliced by the kernel, or written. */
static int src_to_log(struct keep_src *s, int log_fd, size_t n)
{
	if (s->fd < 0) {
		int rc = write_all(log_fd, s->buf, n);
		s->buf += n;
		return rc;
	}
	while (n > 0) {
		ssize_t w = splice(s->fd, NULL, log_fd, NULL, n, 0);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return w < 0 ? -errno : -EIO;
		n -= (size_t)w;
	}
	return 0;
}

/* n bytes into `iov` (the ring's free part, in one or two pieces). */
static int src_into(struct keep_src *s, struct iovec *iov, int cnt, size_t n)
{
	while (n > 0) {
		ssize_t got;
		if (s->fd < 0) {
			got = (ssize_t)(n < iov->iov_len ? n : iov->iov_len);
			memcpy(iov->iov_base, s->buf, (size_t)got);
			s->buf += got;
		} else {
			got = readv(s->fd, iov, cnt);
			if (got < 0 && errno == EINTR)
				continue;
			if (got <= 0)
				return got < 0 ? -errno : -EIO;
		}
		n -= (size_t)got;
		while (got > 0) {
			size_t step = (size_t)got < iov->iov_len ? (size_t)got : iov->iov_len;
			iov->iov_base = (char *)iov->iov_base + step;
			iov->iov_len -= step;
			got -= (ssize_t)step;
			if (iov->iov_len == 0 && cnt > 1) {
				iov++;
				cnt--;
			}
		}
	}
	return 0;
}

/* n bytes into nothing: spliced into /dev/null, read and forgotten, or
 * (memory) passed over. */
static int src_drop(struct keep *k, struct keep_src *s, int stream, size_t n)
{
	k->left_out[stream] += n;
	k->cut = 1;
	if (s->fd < 0) {
		s->buf += n;
		return 0;
	}
	while (n > 0) {
		ssize_t w = -1;
		if (k->null_fd >= 0) {
			w = splice(s->fd, NULL, k->null_fd, NULL, n, 0);
			if (w < 0 && errno == EINVAL) {
				close(k->null_fd); /* a /dev/null that splice refuses */
				k->null_fd = -1;
				continue;
			}
		} else {
			char buf[KEEP_SCRATCH];
			w = read(s->fd, buf, n < sizeof buf ? n : sizeof buf);
		}
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return w < 0 ? -errno : -EIO;
		n -= (size_t)w;
	}
	return 0;
}

/* The ring's oldest e bytes are overwritten: left out, by stream. */
static void ring_forget(struct keep *k, size_t e)
{
	while (e > 0) {
		MT_ASSERT_MSG(k->first < k->n_runs, "the runs cover the ring");
		struct keep_run *r = &k->runs[k->first];
		size_t step = r->len < e ? r->len : e;
		r->len -= step;
		e -= step;
		k->logged[r->stream] -= step;
		k->left_out[r->stream] += step;
		if (r->len == 0)
			k->first++;
	}
	/* the runs array slides down once half of it is spent */
	if (k->first > 0 && k->first * 2 >= k->n_runs) {
		memmove(k->runs, k->runs + k->first, (k->n_runs - k->first) * sizeof *k->runs);
		k->n_runs -= k->first;
		k->first = 0;
	}
}

static int ring_note(struct keep *k, int stream, size_t n)
{
	if (k->n_runs > k->first && k->runs[k->n_runs - 1].stream == stream) {
		k->runs[k->n_runs - 1].len += n;
	} else {
		void *p = k->runs;
		int rc = grow_array(&p, &k->cap_runs, k->n_runs + 1, sizeof *k->runs);
		if (rc < 0)
			return rc;
		k->runs = p;
		k->runs[k->n_runs++] = (struct keep_run){ n, stream };
	}
	k->logged[stream] += n;
	return 0;
}

/* n (at most tail_max) bytes from the source into the ring, after what it
 * holds, the oldest overwritten when it is full. */
static int ring_take(struct keep *k, int stream, struct keep_src *src, size_t n)
{
	size_t cap = (size_t)k->tail_max;
	size_t at = (k->start + k->len) % cap;
	size_t first = cap - at < n ? cap - at : n;
	struct iovec iov[2] = { { k->ring + at, first }, { k->ring, n - first } };
	int rc = src_into(src, iov, n > first ? 2 : 1, n);
	if (rc < 0)
		return rc;
	/* Nothing left out yet: the ring has never wrapped (start is 0), and
	 * the log follows it, so that it is whole during the run; it stops at
	 * head + tail bytes. */
	if (!k->cut && k->live < cap) {
		size_t now = cap - (size_t)k->live < n ? cap - (size_t)k->live : n;
		MT_ASSERT_MSG(k->start == 0 && k->live == k->len, "the live log is the ring");
		if ((rc = write_all(k->log_fd, k->ring + k->live, now)) < 0)
			return rc;
		k->live += now;
	}
	if (k->len + n > cap) {
		size_t e = k->len + n - cap;
		ring_forget(k, e);
		k->start = (k->start + e) % cap;
		k->len = cap;
		k->cut = 1;
	} else {
		k->len += n;
	}
	return ring_note(k, stream, n);
}

/* n bytes of `stream` from the source: the head's room first, then the
 * ring; what the ring could not keep anyway is dropped before it. */
static int take(struct keep *k, int stream, struct keep_src *src, size_t n)
{
	MT_ASSERT(stream >= 0 && stream < KEEP_STREAMS);
	MT_ASSERT(!k->finished);
	uint64_t room = k->head_max - k->head_used;
	size_t head = room < n ? (size_t)room : n;
	int rc;
	if (head > 0) {
		if ((rc = src_to_log(src, k->log_fd, head)) < 0)
			return rc;
		k->head_used += head;
		k->logged[stream] += head;
		n -= head;
	}
	if (n > k->tail_max) {
		/* the first of these are followed by more than a tail already */
		if ((rc = src_drop(k, src, stream, n - (size_t)k->tail_max)) < 0)
			return rc;
		n = (size_t)k->tail_max;
	}
	return n > 0 ? ring_take(k, stream, src, n) : 0;
}

int keep_from(struct keep *k, int stream, int from, size_t n)
{
	struct keep_src src = { from, NULL };
	return take(k, stream, &src, n);
}

int keep_from_buf(struct keep *k, int stream, const char *buf, size_t n)
{
	struct keep_src src = { -1, buf };
	return take(k, stream, &src, n);
}

size_t keep_marker(char *buf, size_t cap, uint64_t left_out)
{
	int n = snprintf(buf, cap, "\n[memsup: %llu bytes left out]\n", (unsigned long long)left_out);
	return n < 0 ? 0 : (size_t)n < cap ? (size_t)n : cap - 1;
}

int keep_finish(struct keep *k)
{
	if (k->finished || k->log_fd < 0)
		return 0;
	k->finished = 1;
	if (!k->cut)
		return 0; /* the log is the whole output already */
	uint64_t left = 0;
	for (int i = 0; i < KEEP_STREAMS; i++)
		left += k->left_out[i];
	char marker[KEEP_MARKER_MAX];
	size_t m = keep_marker(marker, sizeof marker, left);
	if (ftruncate(k->log_fd, (off_t)k->head_used) < 0 ||
	    lseek(k->log_fd, (off_t)k->head_used, SEEK_SET) < 0)
		return -errno;
	int rc = write_all(k->log_fd, marker, m);
	if (rc == 0 && k->len > 0) {
		size_t cap = (size_t)k->tail_max;
		size_t first = cap - k->start < k->len ? cap - k->start : k->len;
		rc = write_all(k->log_fd, k->ring + k->start, first);
		if (rc == 0)
			rc = write_all(k->log_fd, k->ring, k->len - first);
	}
	return rc;
}

uint64_t keep_logged(const struct keep *k, int stream)
{
	return k->logged[stream];
}

uint64_t keep_left_out(const struct keep *k, int stream)
{
	return k->left_out[stream];
}

void keep_free(struct keep *k)
{
	free(k->ring);
	free(k->runs);
	if (k->null_fd >= 0)
		close(k->null_fd);
	k->ring = NULL;
	k->runs = NULL;
	k->null_fd = -1;
}
