/* recordfile.c: record file reader (see recordfile.h).  pread(2), not
 * mmap: a hostile or concurrent truncation can then only shorten a read,
 * never raise SIGBUS. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "collect/recordfile.h"

static int recordfile_pread_all(int fd, void *buf, size_t n, off_t off)
{
	size_t got = 0;
	while (got < n) {
		ssize_t r = pread(fd, (char *)buf + got, n - got, off + (off_t)got);
		if (r < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (r == 0)
			return -RECORDFILE_ESHORT;
		got += (size_t)r;
	}
	return 0;
}

int recordfile_read_fd(int fd, struct mt_record *out)
{
	struct stat st;
	uint64_t magic;
	uint32_t state_count[2];
	int rc;

	_Static_assert(offsetof(struct mt_record, marker_count) ==
			       offsetof(struct mt_record, state) + sizeof(uint32_t),
		       "state and marker_count are read together");
	if (fstat(fd, &st) != 0)
		return -errno;
	if (!S_ISREG(st.st_mode))
		return -RECORDFILE_ECORRUPT;
	if (st.st_size < (off_t)MT_RECORD_SIZE)
		return -RECORDFILE_ESHORT;
	if (st.st_size > (off_t)MT_RECORD_SIZE)
		return -RECORDFILE_ELONG;
	/* 1. magic: the identity block is complete once it is set. */
	rc = recordfile_pread_all(fd, &magic, sizeof magic, 0);
	if (rc)
		return rc;
	if (magic != MT_RECORD_MAGIC)
		return -RECORDFILE_EMAGIC;
	/* 2. state and marker_count, before the fields they guard: each
	 * read(2) is a full barrier against the writer's release stores. */
	rc = recordfile_pread_all(fd, state_count, sizeof state_count,
				  offsetof(struct mt_record, state));
	if (rc)
		return rc;
	/* 3. everything. */
	rc = recordfile_pread_all(fd, out, sizeof *out, 0);
	if (rc)
		return rc;
	out->state = state_count[0];
	out->marker_count = state_count[1];
	return recordfile_validate(out);
}

int recordfile_validate(struct mt_record *out)
{
	if (out->magic != MT_RECORD_MAGIC)
		return -RECORDFILE_EMAGIC;
	if (out->version != MT_RECORD_VERSION)
		return -RECORDFILE_EVERSION;
	if (out->record_size != MT_RECORD_SIZE)
		return -RECORDFILE_ESIZE;
	if (out->pid <= 0 || out->state > MT_STATE_SIGNALED || out->relation > MT_REL_UNKNOWN ||
	    out->parent_pid < 0)
		return -RECORDFILE_ECORRUPT;
	/* Strings: terminated, lengths clamped, whatever the file said. */
	out->exe[MT_EXE_BYTES - 1] = '\0';
	if (out->argv_bytes > MT_ARGV_BYTES)
		out->argv_bytes = MT_ARGV_BYTES;
	if (out->argv_bytes > 0)
		out->argv[out->argv_bytes - 1] = '\0';
	for (unsigned i = 0; i < MT_MARKERS; i++)
		out->markers[i].label[MT_LABEL_BYTES - 1] = '\0';
	return 0;
}

int recordfile_read_at(int dirfd, const char *name, struct mt_record *out)
{
	int fd = openat(dirfd, name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
	int rc;
	if (fd < 0)
		return -errno;
	rc = recordfile_read_fd(fd, out);
	close(fd);
	return rc;
}

int recordfile_read(const char *path, struct mt_record *out)
{
	return recordfile_read_at(AT_FDCWD, path, out);
}

static size_t recordfile_digits(const char *s, uint64_t max, uint64_t *v)
{
	size_t i = 0;
	*v = 0;
	while (s[i] >= '0' && s[i] <= '9') {
		*v = *v * 10 + (uint64_t)(s[i] - '0');
		if (*v > max || i > 12)
			return 0;
		i++;
	}
	return i;
}

int recordfile_parse_name(const char *name, int32_t *pid, uint32_t *gen)
{
	uint64_t p, g;
	size_t n = recordfile_digits(name, INT32_MAX, &p);
	if (n == 0 || name[n] != '.' || p == 0)
		return -RECORDFILE_ENAME;
	name += n + 1;
	n = recordfile_digits(name, UINT32_MAX, &g);
	if (n == 0 || strcmp(name + n, MT_RECORD_SUFFIX) != 0)
		return -RECORDFILE_ENAME;
	*pid = (int32_t)p;
	*gen = (uint32_t)g;
	return 0;
}

static int recordfile_cmp(const void *a, const void *b)
{
	const struct recordfile_entry *x = a, *y = b;
	if (x->pid != y->pid)
		return x->pid < y->pid ? -1 : 1;
	if (x->gen != y->gen)
		return x->gen < y->gen ? -1 : 1;
	return 0;
}

int recordfile_list(const char *dir, struct recordfile_entry **out, size_t *count)
{
	DIR *d = opendir(dir);
	struct recordfile_entry *v = NULL;
	size_t n = 0, cap = 0;
	struct dirent *e;
	*out = NULL;
	*count = 0;
	if (!d)
		return -errno;
	while ((e = readdir(d)) != NULL) {
		struct recordfile_entry ent;
		if (recordfile_parse_name(e->d_name, &ent.pid, &ent.gen) != 0)
			continue;
		if (n == cap) {
			size_t ncap = cap ? cap * 2 : 64;
			struct recordfile_entry *nv = realloc(v, ncap * sizeof *nv);
			if (!nv) {
				free(v);
				closedir(d);
				return -ENOMEM;
			}
			v = nv;
			cap = ncap;
		}
		v[n++] = ent;
	}
	closedir(d);
	if (n)
		qsort(v, n, sizeof *v, recordfile_cmp);
	*out = v;
	*count = n;
	return 0;
}

const char *recordfile_strerror(int err)
{
	switch (-err) {
	case RECORDFILE_ESHORT:
		return "record file too short (truncated, or still being created)";
	case RECORDFILE_ELONG:
		return "record file longer than a record";
	case RECORDFILE_EMAGIC:
		return "no record magic (being created, or not a record)";
	case RECORDFILE_EVERSION:
		return "unknown record version";
	case RECORDFILE_ESIZE:
		return "record_size does not match this build";
	case RECORDFILE_ECORRUPT:
		return "corrupt record";
	case RECORDFILE_ENAME:
		return "not a record file name";
	default:
		return strerror(-err);
	}
}
