/* peaksites.c: sampled call sites at the tree's peaks (see peaksites.h). */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "collect/live.h"
#include "collect/peaksites.h"
#include "collect/pview.h"
#include "base/grow.h"

struct peaksites {
	int dirfd;
	struct peaksites_image *images;
	size_t n, cap;
	/* per kind: the peak's serial (0: none yet), value, when */
	unsigned long serial[PEAKSITES_KINDS];
	uint64_t value[PEAKSITES_KINDS];
	double at_s[PEAKSITES_KINDS];
	uint64_t heap[PEAKSITES_KINDS], rss[PEAKSITES_KINDS], total[PEAKSITES_KINDS];
	/* the samples around each peak (peaksites_window); after_s is set by
	 * the sample that follows the peak */
	double before_s[PEAKSITES_KINDS], after_s[PEAKSITES_KINDS];
	unsigned after_due;        /* bit k: the last sample was a peak of kind k */
	double last_s;             /* the previous sample's time; < 0: none */
};

int peaksites_open(struct peaksites **out, const char *records_dir)
{
	struct peaksites *p = calloc(1, sizeof *p);
	if (!p)
		return -ENOMEM;
	p->dirfd = open(records_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (p->dirfd < 0) {
		int rc = -errno;
		free(p);
		return rc;
	}
	for (int k = 0; k < PEAKSITES_KINDS; k++)
		p->at_s[k] = p->before_s[k] = p->after_s[k] = -1;
	p->last_s = -1;
	*out = p;
	return 0;
}

void peaksites_close(struct peaksites *p)
{
	if (!p)
		return;
	for (size_t i = 0; i < p->n; i++) {
		stackfile_set_free(&p->images[i].cur);
		for (int k = 0; k < PEAKSITES_KINDS; k++)
			stackfile_set_free(&p->images[i].at[k]);
	}
	free(p->images);
	close(p->dirfd);
	free(p);
}

/* The entry of (pid, gen), made if new; the newest images are looked up
 * most, so the search runs backwards. */
static struct peaksites_image *peaksites_image_of(struct peaksites *p, pid_t pid, uint32_t gen)
{
	for (size_t i = p->n; i-- > 0;)
		if (p->images[i].pid == pid && p->images[i].gen == gen)
			return &p->images[i];
	if (grow_array((void **)&p->images, &p->cap, p->n + 1, sizeof *p->images) < 0)
		return NULL;
	struct peaksites_image *im = &p->images[p->n++];
	memset(im, 0, sizeof *im);
	im->pid = pid;
	im->gen = gen;
	return im;
}

/* The image's live set now: read only if the record says it changed (and
 * then only if the file's own events moved). */
static void peaksites_refresh(struct peaksites *p, struct peaksites_image *im,
			      const struct mt_record *rec)
{
	char name[48];
	int fd, changed;
	uint64_t changes = __atomic_load_n(&rec->stacks_changes, __ATOMIC_ACQUIRE);
	if (changes == 0 || (im->cur.read && changes == im->changes && !im->error)) {
		if (changes == 0)
			im->cur.n = 0;
		return;
	}
	im->changes = changes;
	stackfile_name(name, sizeof name, im->pid, im->gen);
	fd = openat(p->dirfd, name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0) {
		/* no sample taken yet: nothing of it is sampled */
		im->cur.n = 0;
		im->error = errno == ENOENT ? 0 : -errno;
		return;
	}
	im->error = stackfile_read_live(fd, im->pid, im->gen, &im->cur, &changed);
	close(fd);
}

void peaksites_sample(struct peaksites *p, const struct live *l,
		      const struct pview_peak_member *m, size_t n, double at_s, uint64_t heap,
		      uint64_t mapped, uint64_t rss)
{
	const uint64_t v[PEAKSITES_KINDS] = { heap, rss, heap + mapped };
	unsigned due = 0;
	for (int k = 0; k < PEAKSITES_KINDS; k++) {
		/* the sample after a peak closes its window */
		if (p->after_due & (1u << k))
			p->after_s[k] = at_s;
		if (p->serial[k] && v[k] <= p->value[k])
			continue;
		due |= 1u << k;
		p->serial[k]++;
		p->value[k] = v[k];
		p->at_s[k] = at_s;
		p->heap[k] = heap;
		p->rss[k] = rss;
		p->total[k] = heap + mapped;
		p->before_s[k] = p->last_s;
		p->after_s[k] = -1;
	}
	p->after_due = due;
	p->last_s = at_s;
	if (!due || !l)
		return;
	/* The images pview counted in the traced heap, chosen there (an exec
	 * in flight, a reading that straddled one): choosing again here could
	 * name another image than the one whose heap is in the sum. */
	for (size_t i = 0; i < n; i++) {
		if (!m[i].heap_counted)
			continue;
		const struct live_rec *rec = live_find(l, m[i].pid, m[i].gen);
		struct peaksites_image *im;
		if (!rec || !rec->map)
			continue;
		if (!(im = peaksites_image_of(p, m[i].pid, m[i].gen)))
			continue;
		peaksites_refresh(p, im, rec->map);
		for (int k = 0; k < PEAKSITES_KINDS; k++) {
			if (!(due & (1u << k)))
				continue;
			if (stackfile_set_copy(&im->at[k], &im->cur) < 0)
				continue;
			im->serial[k] = p->serial[k];
			im->heap[k] = k == PEAKSITES_TOTAL ? m[i].heap + m[i].map : m[i].heap;
		}
	}
}

size_t peaksites_count(const struct peaksites *p)
{
	return p ? p->n : 0;
}

const struct peaksites_image *peaksites_get(const struct peaksites *p, size_t i)
{
	return i < p->n ? &p->images[i] : NULL;
}

int peaksites_at(const struct peaksites *p, const struct peaksites_image *im, int kind)
{
	return p->serial[kind] && im->serial[kind] == p->serial[kind];
}

double peaksites_when(const struct peaksites *p, int kind, uint64_t *heap, uint64_t *rss)
{
	*heap = p->heap[kind];
	*rss = p->rss[kind];
	return p->at_s[kind];
}

void peaksites_window(const struct peaksites *p, int kind, double *before_s, double *after_s)
{
	*before_s = p->before_s[kind];
	*after_s = p->after_s[kind];
}

uint64_t peaksites_total(const struct peaksites *p, int kind)
{
	return p->serial[kind] ? p->total[kind] : 0;
}
