/* stackfile.c: stacks file reader (see stackfile.h). */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "collect/recordfile.h"
#include "collect/stackfile.h"
#include "imagename.h"
#include "base/grow.h"

/* A read of the stack table in pieces of this many entries (~86 KiB). */
#define STACKFILE_CHUNK 256u
/* Tries to read the peak columns inside one sequence. */
#define STACKFILE_SEQ_TRIES 8

/* The header, checked by the shared check against the file's `size`. */
static int stackfile_header(int fd, off_t size, int32_t pid, uint32_t gen,
			    struct mt_stacks_header *h)
{
	ssize_t r = recordfile_pread_full(fd, h, sizeof *h, 0);
	if (r < 0)
		return (int)r;
	if ((size_t)r < sizeof *h)
		return -STACKFILE_ESHORT;
	int rc = filecheck_stacks_header(h, (uint64_t)size, pid, gen);
	if (rc == 0)
		filecheck_stacks_codes(h, (uint64_t)size);
	return rc;
}

static int stackfile_size(int fd, off_t *size)
{
	struct stat st;
	if (fstat(fd, &st) != 0)
		return -errno;
	if (!S_ISREG(st.st_mode))
		return -STACKFILE_EMAGIC;
	*size = st.st_size;
	return 0;
}

int stackfile_read_header(int fd, int32_t pid, uint32_t gen, struct mt_stacks_header *h)
{
	off_t size;
	int rc = stackfile_size(fd, &size);
	return rc ? rc : stackfile_header(fd, size, pid, gen, h);
}

void stackfile_free(struct stackfile *f)
{
	free(f->modules);
	free(f->stacks);
	free(f->codes);
	memset(f, 0, sizeof *f);
}

int stackfile_read_fd(int fd, int32_t pid, uint32_t gen, struct stackfile *out)
{
	uint64_t seq0, seq1;
	off_t size = 0;
	ssize_t r;
	int rc;

	memset(out, 0, sizeof *out);
	if ((rc = stackfile_size(fd, &size)) != 0 ||
	    (rc = stackfile_header(fd, size, pid, gen, &out->h)) != 0)
		return rc;
	out->modules = calloc(out->h.module_count ? out->h.module_count : 1, MT_STACKS_MODULE_BYTES);
	out->stacks = calloc(out->h.stack_count ? out->h.stack_count : 1, MT_STACKS_STACK_BYTES);
	out->codes = calloc(out->h.code_count ? out->h.code_count : 1, MT_STACKS_CODE_BYTES);
	if (!out->modules || !out->stacks || !out->codes) {
		stackfile_free(out);
		return -ENOMEM;
	}
	r = recordfile_pread_full(fd, out->modules, (size_t)out->h.module_count * MT_STACKS_MODULE_BYTES,
			    MT_STACKS_MODULES_OFFSET);
	if (r >= 0 && (size_t)r < (size_t)out->h.module_count * MT_STACKS_MODULE_BYTES)
		out->h.module_count = (uint32_t)((size_t)r / MT_STACKS_MODULE_BYTES);
	/* The stacks inside one sequence of the peak's lock when the writer
	 * lets us (stacks.h): seq even and the same before and after. */
	for (int tries = 0; r >= 0 && tries < STACKFILE_SEQ_TRIES; tries++) {
		if (recordfile_pread_full(fd, &seq0, sizeof seq0,
				    offsetof(struct mt_stacks_header, peak_seq)) != sizeof seq0)
			break;
		r = recordfile_pread_full(fd, out->stacks, (size_t)out->h.stack_count * MT_STACKS_STACK_BYTES,
				    MT_STACKS_STACKS_OFFSET);
		if (recordfile_pread_full(fd, &seq1, sizeof seq1,
				    offsetof(struct mt_stacks_header, peak_seq)) != sizeof seq1)
			break;
		if (seq0 == seq1 && !(seq0 & 1)) {
			out->peak_consistent = 1;
			break;
		}
	}
	if (r < 0) {
		stackfile_free(out);
		return (int)r;
	}
	if ((size_t)r < (size_t)out->h.stack_count * MT_STACKS_STACK_BYTES)
		out->h.stack_count = (uint32_t)((size_t)r / MT_STACKS_STACK_BYTES);
	/* the code table after the stacks: a stack read above names only
	 * codes published before it (stacks.h), so the count read now covers
	 * them */
	if (out->h.code_count || mt_stacks_codes_ok(&out->h)) {
		uint32_t cc = 0;
		if (recordfile_pread_full(fd, &cc, sizeof cc,
					  offsetof(struct mt_stacks_header, code_count)) == sizeof cc &&
		    cc > out->h.code_count) {
			struct mt_stacks_header h2 = out->h;
			h2.code_count = cc;
			filecheck_stacks_codes(&h2, (uint64_t)size);
			void *more = realloc(out->codes, (size_t)(h2.code_count ? h2.code_count : 1) *
								 MT_STACKS_CODE_BYTES);
			if (more) {
				out->codes = more;
				out->h.code_count = h2.code_count;
			}
		}
		r = recordfile_pread_full(fd, out->codes,
					  (size_t)out->h.code_count * MT_STACKS_CODE_BYTES,
					  MT_STACKS_CODES_OFFSET);
		if (r < 0)
			r = 0;
		if ((size_t)r < (size_t)out->h.code_count * MT_STACKS_CODE_BYTES)
			out->h.code_count = (uint32_t)((size_t)r / MT_STACKS_CODE_BYTES);
	}
	stackfile_clamp_entries(out);
	return 0;
}

void stackfile_clamp_entries(struct stackfile *out)
{
	filecheck_stacks_entries(out->modules, out->h.module_count, out->stacks, out->h.stack_count);
	if (out->codes)
		filecheck_stacks_code_entries(out->codes, out->h.code_count);
	else
		out->h.code_count = 0;
}

void stackfile_name(char *buf, size_t cap, int32_t pid, uint32_t gen)
{
	imagename_format(buf, cap, pid, gen, MT_STACKS_SUFFIX);
}

int stackfile_read_at(int dirfd, int32_t pid, uint32_t gen, struct stackfile *out)
{
	char name[48];
	int fd, rc;
	memset(out, 0, sizeof *out);
	stackfile_name(name, sizeof name, pid, gen);
	fd = openat(dirfd, name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return -errno;
	rc = stackfile_read_fd(fd, pid, gen, out);
	close(fd);
	return rc;
}

int stackfile_parse_name(const char *name, int32_t *pid, uint32_t *gen)
{
	return imagename_parse(name, MT_STACKS_SUFFIX, pid, gen) == 0 ? 0 : -STACKFILE_ENAME;
}

static int stackfile_set_room(struct stackfile_set *s, size_t n)
{
	return grow_array((void **)&s->e, &s->cap, n, sizeof *s->e);
}

int stackfile_read_live(int fd, int32_t pid, uint32_t gen, struct stackfile_set *set,
			int *changed)
{
	static struct mt_stack chunk[STACKFILE_CHUNK]; /* one run, one thread */
	struct mt_stacks_header h;
	uint64_t events;
	size_t n = 0;
	off_t size = 0;
	int rc;

	*changed = 0;
	if ((rc = stackfile_size(fd, &size)) != 0 ||
	    (rc = stackfile_header(fd, size, pid, gen, &h)) != 0)
		return rc;
	events = h.samples + h.sampled_frees;
	if (set->read && events == set->events)
		return 0;
	for (uint32_t at = 0; at < h.stack_count; at += STACKFILE_CHUNK) {
		uint32_t k = h.stack_count - at < STACKFILE_CHUNK ? h.stack_count - at : STACKFILE_CHUNK;
		ssize_t r = recordfile_pread_full(fd, chunk, (size_t)k * MT_STACKS_STACK_BYTES,
					    (off_t)(MT_STACKS_STACKS_OFFSET +
						    (uint64_t)at * MT_STACKS_STACK_BYTES));
		if (r < 0)
			return (int)r;
		k = (uint32_t)((size_t)r / MT_STACKS_STACK_BYTES);
		for (uint32_t j = 0; j < k; j++) {
			if (!chunk[j].live_count || !chunk[j].live_bytes)
				continue;
			if (stackfile_set_room(set, n + 1) < 0)
				return -ENOMEM;
			set->e[n++] = (struct stackfile_live){ at + j,
							       chunk[j].live_bytes,
							       chunk[j].live_count,
							       chunk[j].live_var,
							       chunk[j].total_bytes,
							       chunk[j].total_count };
		}
		if (k < STACKFILE_CHUNK)
			break;
	}
	set->n = n;
	set->events = events;
	set->read = 1;
	*changed = 1;
	return 0;
}

int stackfile_set_copy(struct stackfile_set *dst, const struct stackfile_set *src)
{
	if (stackfile_set_room(dst, src->n) < 0) {
		dst->n = 0;
		return -ENOMEM;
	}
	if (src->n)
		memcpy(dst->e, src->e, src->n * sizeof *src->e);
	dst->n = src->n;
	dst->events = src->events;
	dst->read = src->read;
	return 0;
}

void stackfile_set_free(struct stackfile_set *s)
{
	free(s->e);
	memset(s, 0, sizeof *s);
}

const char *stackfile_strerror(int err)
{
	switch (-err) {
	case STACKFILE_ESHORT:
		return "stacks file too short";
	case STACKFILE_EMAGIC:
		return "not a stacks file (no magic)";
	case STACKFILE_EVERSION:
		return "stacks file of another version";
	case STACKFILE_ELAYOUT:
		return "stacks file of another layout";
	case STACKFILE_EIDENTITY:
		return "stacks file of another image";
	case STACKFILE_ENAME:
		return "not a stacks file name";
	default:
		return strerror(-err);
	}
}
