/* recordfile.c: record file reader (see recordfile.h).  pread(2), not
 * mmap: a hostile or concurrent truncation can then only shorten a read,
 * never raise SIGBUS. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "collect/recordfile.h"
#include "imagename.h"
#include "base/grow.h"

ssize_t recordfile_pread_full(int fd, void *buf, size_t n, off_t off)
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
			break;
		got += (size_t)r;
	}
	return (ssize_t)got;
}

static int recordfile_pread_all(int fd, void *buf, size_t n, off_t off)
{
	ssize_t r = recordfile_pread_full(fd, buf, n, off);
	if (r < 0)
		return (int)r;
	return (size_t)r < n ? -RECORDFILE_ESHORT : 0;
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
	if ((rc = filecheck_record_bytes((uint64_t)st.st_size)) != 0)
		return rc;
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
	return filecheck_record(out);
}

/* The largest address space a process can have (57-bit virtual addresses,
 * five-level paging): no live byte count can pass it. */
#define RECORDFILE_MAX_BYTES (UINT64_C(1) << 57)
#define RECORDFILE_MAX_MARKERS (UINT32_C(1) << 31)
/* The kernel's figures, in KiB, may pass RAM + swap by a little: VmHWM
 * counts pages being reclaimed, and meminfo rounds. */
#define RECORDFILE_KB_SLACK (64u * 1024u)

static int implausible(char *why, size_t cap, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static int implausible(char *why, size_t cap, const char *fmt, ...)
{
	va_list ap;
	if (cap) {
		va_start(ap, fmt);
		vsnprintf(why, cap, fmt, ap);
		va_end(ap);
	}
	return -RECORDFILE_EIMPLAUSIBLE;
}

int recordfile_plausible(const struct mt_record *r, const struct recordfile_bounds *b,
			 char *why, size_t cap)
{
	static const struct {
		size_t off;
		const char *name;
	} kb_fields[] = {
		{ offsetof(struct mt_record, vm_hwm_kb), "VmHWM" },
		{ offsetof(struct mt_record, vm_rss_kb), "VmRSS" },
		{ offsetof(struct mt_record, ru_maxrss_self_kb), "maxrss" },
		{ offsetof(struct mt_record, ru_maxrss_children_kb), "children's maxrss" },
	};
	static const struct {
		size_t off;
		const char *name;
	} byte_fields[] = {
		/* not heap_largest_request nor heap_requested_total: a
		 * request is whatever size_t the program passed, served or
		 * not (malloc(SIZE_MAX) fails and still counts), and the
		 * total of such requests wraps */
		{ offsetof(struct mt_record, heap_peak), "heap peak" },
		{ offsetof(struct mt_record, map_anon_peak), "anonymous mapping peak" },
		{ offsetof(struct mt_record, map_file_peak), "file mapping peak" },
		{ offsetof(struct mt_record, map_largest), "largest mapping" },
		{ offsetof(struct mt_record, total_peak), "heap+mapping peak" },
	};
	uint64_t slack = 1000000; /* 1 ms: clocks read a moment apart */
	uint64_t end = r->state != MT_STATE_RUNNING && r->end_mono_ns ? r->end_mono_ns : b->now_ns;
	if (r->start_mono_ns + slack < b->run_start_ns || r->start_mono_ns > b->now_ns + slack)
		return implausible(why, cap, "it started outside the run");
	if (r->state != MT_STATE_RUNNING && r->end_mono_ns &&
	    (r->end_mono_ns + slack < r->start_mono_ns || r->end_mono_ns > b->now_ns + slack))
		return implausible(why, cap, "it ended outside the run");
	if ((r->heap_peak_mono_ns &&
	     (r->heap_peak_mono_ns + slack < r->start_mono_ns || r->heap_peak_mono_ns > end + slack)) ||
	    (r->total_peak_mono_ns &&
	     (r->total_peak_mono_ns + slack < r->start_mono_ns || r->total_peak_mono_ns > end + slack)))
		return implausible(why, cap, "its peak times lie outside its life");
	for (size_t i = 0; i < sizeof byte_fields / sizeof byte_fields[0]; i++) {
		uint64_t v;
		memcpy(&v, (const char *)r + byte_fields[i].off, sizeof v);
		if (v > RECORDFILE_MAX_BYTES)
			return implausible(why, cap, "its %s, %" PRIu64 " bytes, is more than any "
					   "address space", byte_fields[i].name, v);
	}
	for (size_t i = 0; b->memory_kb && i < sizeof kb_fields / sizeof kb_fields[0]; i++) {
		uint64_t v;
		memcpy(&v, (const char *)r + kb_fields[i].off, sizeof v);
		if (v > b->memory_kb + RECORDFILE_KB_SLACK)
			return implausible(why, cap, "its %s, %" PRIu64 " kB, is more than the "
					   "machine's %" PRIu64 " kB of RAM and swap",
					   kb_fields[i].name, v, b->memory_kb);
	}
	if (r->marker_count > RECORDFILE_MAX_MARKERS)
		return implausible(why, cap, "it claims %" PRIu32 " markers", r->marker_count);
	if (r->state != MT_STATE_RUNNING &&
	    ((int64_t)r->heap_current > 0 && r->heap_current > r->heap_peak))
		return implausible(why, cap, "its heap at the end is above its peak");
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

int recordfile_parse_name(const char *name, int32_t *pid, uint32_t *gen)
{
	return imagename_parse(name, MT_RECORD_SUFFIX, pid, gen) == 0 ? 0 : -RECORDFILE_ENAME;
}

int recordfile_entry_cmp(const void *a, const void *b)
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
		if (grow_array((void **)&v, &cap, n + 1, sizeof *v) < 0) {
			free(v);
			closedir(d);
			return -ENOMEM;
		}
		v[n++] = ent;
	}
	closedir(d);
	if (n)
		qsort(v, n, sizeof *v, recordfile_entry_cmp);
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
	case RECORDFILE_EIDENTITY:
		return "record of another image than its file name says";
	case RECORDFILE_ENAME:
		return "not a record file name";
	case RECORDFILE_EIMPLAUSIBLE:
		return "implausible record (its figures cannot be true)";
	default:
		return strerror(-err);
	}
}
