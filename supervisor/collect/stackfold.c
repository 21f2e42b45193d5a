/* stackfold.c: packing the finished run's stacks files, and reading them
 * back (see stackfold.h). */
#include "collect/stackfold.h"
#include "collect/fold.h"
#include "collect/recordfile.h"
#include "collect/stackfile.h"
#include "evidence/files.h"
#include "invariant.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* The published part's length by the header's counts. */
static size_t published_bytes(const struct mt_stacks_header *h)
{
	return MT_STACKS_HEADER_BYTES + (size_t)h->module_count * MT_STACKS_MODULE_BYTES +
	       (size_t)h->stack_count * MT_STACKS_STACK_BYTES +
	       (size_t)h->code_count * MT_STACKS_CODE_BYTES;
}

/* Reads n bytes at off into buf: 0, or -EBADMSG when the file is shorter. */
static int read_part(int fd, unsigned char *buf, size_t n, off_t off)
{
	ssize_t got = recordfile_pread_full(fd, buf, n, off);
	if (got < 0)
		return (int)got;
	return (size_t)got == n ? 0 : -EBADMSG;
}

/* The published part of the stacks file open at fd, of image (pid, gen),
 * into a malloc'd *raw.  -EBADMSG when it is not one of this layout. */
static int read_published(int fd, int32_t pid, uint32_t gen, unsigned char **raw, size_t *len)
{
	struct mt_stacks_header h;
	int rc = stackfile_read_header(fd, pid, gen, &h);
	if (rc <= -STACKFILE_ESHORT)
		return -EBADMSG; /* not a stacks file (of this build) */
	if (rc < 0)
		return rc;
	/* stackfile_read_header clamps the counts to the slots (and to what
	 * the file holds): the published part fits a stacks file, which is
	 * what the fold's reader decodes into (MT_STACKS_SIZE bytes) */
	MT_ASSERT(h.module_count <= MT_STACKS_MODULE_SLOTS && h.stack_count <= MT_STACKS_SLOTS);
	size_t n = published_bytes(&h);
	MT_ASSERT(n <= MT_STACKS_SIZE);
	size_t mods = (size_t)h.module_count * MT_STACKS_MODULE_BYTES;
	size_t stacks = (size_t)h.stack_count * MT_STACKS_STACK_BYTES;
	size_t codes = (size_t)h.code_count * MT_STACKS_CODE_BYTES;
	unsigned char *p = malloc(n);
	if (!p)
		return -ENOMEM;
	rc = read_part(fd, p, MT_STACKS_HEADER_BYTES, 0);
	if (!rc)
		rc = read_part(fd, p + MT_STACKS_HEADER_BYTES, mods, MT_STACKS_MODULES_OFFSET);
	if (!rc)
		rc = read_part(fd, p + MT_STACKS_HEADER_BYTES + mods, stacks, MT_STACKS_STACKS_OFFSET);
	if (!rc && codes)
		rc = read_part(fd, p + MT_STACKS_HEADER_BYTES + mods + stacks, codes,
			       MT_STACKS_CODES_OFFSET);
	/* the counts as checked, so that the part is what they describe (a
	 * writer still running could only have added more) */
	memcpy(p, &h, sizeof h);
	if (rc < 0) {
		free(p);
		return rc;
	}
	*raw = p;
	*len = n;
	return 0;
}

/* One stacks file into the fold, then away.  1 when packed, 0 when left
 * (not a stacks file of this layout), or -errno. */
static int pack_one(int rdfd, int fold_fd, const char *name, int32_t pid, uint32_t gen)
{
	unsigned char *raw = NULL, *entry = NULL;
	size_t len = 0;
	int fd = openat(rdfd, name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return errno == ENOENT ? 0 : -errno;
	int rc = read_published(fd, pid, gen, &raw, &len);
	close(fd);
	if (rc == -EBADMSG)
		return 0;
	if (rc < 0)
		return rc;
	entry = malloc(FOLD_HEADER_BYTES + FOLD_ENCODED_MAX(len) + 4u);
	if (!entry) {
		free(raw);
		return -ENOMEM;
	}
	size_t total = fold_entry_bytes(STACKFOLD_MAGIC, pid, gen, raw, len, entry);
	free(raw);
	struct stat st;
	rc = fstat(fold_fd, &st) < 0 ? -errno : 0;
	if (!rc) {
		/* one write(2), as records.fold's: a short one (a full disk)
		 * is cut back, so that no torn entry hides the ones after it */
		ssize_t w = write(fold_fd, entry, total);
		if (w != (ssize_t)total) {
			rc = w < 0 ? -errno : -ENOSPC;
			if (w > 0)
				(void)!ftruncate(fold_fd, st.st_size);
		}
	}
	free(entry);
	if (rc < 0)
		return rc;
	return unlinkat(rdfd, name, 0) < 0 ? -errno : 1;
}

int stackfold_pack_image(int records_dirfd, int fold_fd, int32_t pid, uint32_t gen)
{
	char name[48];
	stackfile_name(name, sizeof name, pid, gen);
	return pack_one(records_dirfd, fold_fd, name, pid, gen);
}

int stackfold_pack(int records_dirfd, int evdirfd, size_t *packed, size_t *left)
{
	size_t n_packed = 0, n_left = 0;
	int rc = 0, dfd = dup(records_dirfd);
	DIR *d = dfd >= 0 ? fdopendir(dfd) : NULL;
	if (!d) {
		rc = -errno;
		if (dfd >= 0)
			close(dfd);
		return rc;
	}
	int fold_fd = -1;
	struct dirent *e;
	while (rc >= 0 && (e = readdir(d))) {
		int32_t pid;
		uint32_t gen;
		if (stackfile_parse_name(e->d_name, &pid, &gen) < 0)
			continue;
		if (fold_fd < 0) {
			fold_fd = openat(evdirfd, EVIDENCE_STACKS_FOLD,
					 O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0666);
			if (fold_fd < 0) {
				rc = -errno;
				break;
			}
		}
		rc = pack_one(records_dirfd, fold_fd, e->d_name, pid, gen);
		if (rc > 0)
			n_packed++;
		else if (rc == 0)
			n_left++;
	}
	closedir(d);
	if (fold_fd >= 0 && close(fold_fd) < 0 && rc >= 0)
		rc = -errno;
	if (packed)
		*packed = n_packed;
	if (left)
		*left = n_left;
	return rc < 0 ? rc : 0;
}

/* The entry at off decoded into raw (MT_STACKS_SIZE bytes), checked to be
 * exactly the published part its header describes.  As stackfold_read_at. */
static int decode_at(int fd, off_t off, unsigned char *raw, struct stackfold_image *out,
		     off_t *next)
{
	struct mt_stacks_header h;
	int32_t pid;
	uint32_t gen;
	size_t len = 0;
	int rc = fold_read_entry(fd, off, STACKFOLD_MAGIC, MT_STACKS_SIZE, raw, &len, &pid, &gen,
				 next);
	if (rc != 1)
		return rc;
	memcpy(&h, raw, len < sizeof h ? len : sizeof h);
	if (len < sizeof h || h.magic != MT_STACKS_MAGIC || h.version != MT_STACKS_VERSION ||
	    !mt_stacks_layout_ok(&h) || h.module_count > MT_STACKS_MODULE_SLOTS ||
	    h.stack_count > MT_STACKS_SLOTS ||
	    (h.code_count && (!mt_stacks_codes_ok(&h) || h.code_count > MT_STACKS_CODE_SLOTS)) ||
	    published_bytes(&h) != len || h.pid != pid ||
	    h.gen != gen)
		return -EBADMSG;
	out->pid = pid;
	out->gen = gen;
	out->bytes = raw;
	out->len = len;
	return 1;
}

int stackfold_read_at(int fd, off_t off, struct stackfold_image *out, off_t *next)
{
	unsigned char *raw = malloc(MT_STACKS_SIZE);
	if (!raw)
		return -ENOMEM;
	int rc = decode_at(fd, off, raw, out, next);
	if (rc != 1) {
		free(raw);
		return rc;
	}
	unsigned char *fit = realloc(raw, out->len);
	if (fit)
		out->bytes = fit;
	return 1;
}

/* ---- reading back by image ---------------------------------------------- */

struct stackfold_slot {
	int32_t pid;
	uint32_t gen;
	off_t off;
};

static int slot_order(const void *a, const void *b)
{
	const struct stackfold_slot *x = a, *y = b;
	if (x->pid != y->pid)
		return x->pid < y->pid ? -1 : 1;
	if (x->gen != y->gen)
		return x->gen < y->gen ? -1 : 1;
	return x->off < y->off ? -1 : x->off > y->off;
}

int stackfold_index_open(struct stackfold_index *ix, int evdirfd)
{
	size_t cap = 0;
	off_t off = 0, next;
	int32_t pid;
	uint32_t gen;
	memset(ix, 0, sizeof *ix);
	ix->fd = openat(evdirfd, EVIDENCE_STACKS_FOLD, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (ix->fd < 0)
		return errno == ENOENT ? 0 : -errno;
	while (fold_peek_entry(ix->fd, off, STACKFOLD_MAGIC, &pid, &gen, &next) == 1) {
		if (ix->n == cap) {
			cap = cap ? 2 * cap : 64;
			struct stackfold_slot *e = realloc(ix->e, cap * sizeof *e);
			if (!e) {
				stackfold_index_close(ix);
				return -ENOMEM;
			}
			ix->e = e;
		}
		ix->e[ix->n++] = (struct stackfold_slot){ pid, gen, off };
		off = next;
	}
	if (ix->n) {
		qsort(ix->e, ix->n, sizeof *ix->e, slot_order);
		/* one buffer for every image's read: a fresh 3 MB one each time
		 * was the most page faults of memsup's end of run, each a
		 * first touch, slow on a VM */
		if (!(ix->scratch = malloc(MT_STACKS_SIZE))) {
			stackfold_index_close(ix);
			return -ENOMEM;
		}
	}
	return 0;
}

int stackfold_index_read(const struct stackfold_index *ix, int32_t pid, uint32_t gen,
			 struct stackfile *out)
{
	struct stackfold_image im;
	off_t next;
	size_t lo = 0, hi = ix->n;
	memset(out, 0, sizeof *out);
	/* past the last slot at or before (pid, gen): that one is the newest
	 * entry of the image, if it is the image's */
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		const struct stackfold_slot *e = &ix->e[mid];
		if (e->pid < pid || (e->pid == pid && e->gen <= gen))
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == 0 || ix->e[lo - 1].pid != pid || ix->e[lo - 1].gen != gen)
		return -ENOENT;
	int rc = decode_at(ix->fd, ix->e[lo - 1].off, ix->scratch, &im, &next);
	if (rc < 0)
		return rc;
	if (rc == 0 || im.pid != pid || im.gen != gen)
		return -EBADMSG;
	/* stackfold_read_at checked that the bytes are exactly the header
	 * and the entries its counts say */
	memcpy(&out->h, im.bytes, sizeof out->h);
	size_t mods = (size_t)out->h.module_count * MT_STACKS_MODULE_BYTES;
	size_t stacks = (size_t)out->h.stack_count * MT_STACKS_STACK_BYTES;
	size_t codes = (size_t)out->h.code_count * MT_STACKS_CODE_BYTES;
	out->modules = malloc(mods ? mods : 1);
	out->stacks = malloc(stacks ? stacks : 1);
	out->codes = malloc(codes ? codes : 1);
	if (!out->modules || !out->stacks || !out->codes) {
		stackfile_free(out);
		return -ENOMEM;
	}
	memcpy(out->modules, im.bytes + MT_STACKS_HEADER_BYTES, mods);
	memcpy(out->stacks, im.bytes + MT_STACKS_HEADER_BYTES + mods, stacks);
	memcpy(out->codes, im.bytes + MT_STACKS_HEADER_BYTES + mods + stacks, codes);
	/* packed once its writer had ended: consistent unless it died inside
	 * an update of the peak columns */
	out->peak_consistent = !(out->h.peak_seq & 1);
	stackfile_clamp_entries(out);
	return 0;
}

void stackfold_index_close(struct stackfold_index *ix)
{
	if (ix->fd >= 0)
		close(ix->fd);
	free(ix->e);
	free(ix->scratch);
	memset(ix, 0, sizeof *ix);
	ix->fd = -1;
}
