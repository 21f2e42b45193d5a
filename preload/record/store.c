/* store.c: the record's life (see store.h). */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stddef.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/syscall.h>

#include "base/config.h"
#include "base/errfd.h"
#include "base/route.h"
#include "base/sys.h"
#include "textbuf.h"
#include "core/counters.h"
#include "record/store.h"
#include "imagename.h"
#include "invariant.h"
#include "record.h"
#include "sampling/sites.h"

#define STORE_MAX_GEN 100000u

/* Writes the record file's MT_RECORD_SIZE bytes of zeros.  Not ftruncate:
 * that reserves no blocks, so on a full file system the first store into
 * the mapping would kill the program with SIGBUS.  Written blocks are the
 * program's to use; 0 or -errno (-ENOSPC on a short write). */
static int store_fill(int fd)
{
	static const char zeros[4096];
	struct rlimit lim;
	/* Past RLIMIT_FSIZE a write raises SIGXFSZ, which kills the program:
	 * a file-size limit below a record means no record. */
	if (sys_call6(SYS_getrlimit, RLIMIT_FSIZE, (long)&lim, 0, 0, 0, 0) == 0 &&
	    lim.rlim_cur != RLIM_INFINITY && lim.rlim_cur < MT_RECORD_SIZE)
		return -EFBIG;
	for (long off = 0; off < (long)MT_RECORD_SIZE; off += (long)sizeof zeros) {
		long n = sys_call6(SYS_pwrite64, fd, (long)zeros, (long)sizeof zeros, off, 0, 0);
		if (n == -EINTR) {
			off -= (long)sizeof zeros;
			continue;
		}
		if (n < 0)
			return (int)n;
		if (n != (long)sizeof zeros)
			return -ENOSPC;
	}
	return 0;
}

/* Whether the record's home (counters.h) holds this image's record file,
 * a shared mapping, rather than process-private pages; and the file's
 * generation. */
static int store_mapped;
static uint32_t store_gen;
/* The constructor's argc and argv, from store_identify to store_publish. */
static int store_names_argc, store_names_due;
static char **store_names_argv;
static void store_fill_names(struct mt_record *r);
/* Set in a fork child that could put neither private pages nor a file of
 * its own over its parent's record file (store_fork_strand). */
static int store_stranded;

int store_has_file(void)
{
	return store_mapped;
}

/* Moves the mapping m of a record file over the record's home, replacing
 * its pages at once; 0 or -errno (m is still where it was then).  The
 * caller copied the home's record into m first: what is counted between
 * the copy and the move is lost, as it was between a copy and the switch
 * of a pointer (only a thread or signal handler that counts while the
 * constructor or a fork child's handler runs). */
static int store_move_home(void *m, struct mt_record *home)
{
	long r = sys_call6(SYS_mremap, (long)m, MT_RECORD_SIZE, MT_RECORD_SIZE,
			   MREMAP_MAYMOVE | MREMAP_FIXED, (long)home, 0);
	return r < 0 && r > -4096 ? (int)r : 0;
}

/* How much of the home to copy into a new record file: all of the
 * record, or its first page alone when the second was never written (the
 * common case: what an image writes there before its file exists is kept
 * elsewhere until then, see store_fill_names and counters_bind), since
 * reading an untouched page would be a page fault of its own.  mincore
 * says whether the page is mapped; one swapped out since it was written
 * would read as untouched, and what it held (written before the
 * constructor, none of it a heap or mapping figure) would be lost. */
static size_t store_home_written(const struct mt_record *home)
{
	unsigned char vec[MT_RECORD_SIZE / COUNTERS_HOME_ALIGN];
	if (sys_call6(SYS_mincore, (long)home, MT_RECORD_SIZE, (long)vec, 0, 0, 0) == 0 &&
	    !(vec[1] & 1))
		return COUNTERS_HOME_ALIGN;
	return sizeof *home;
}

/* Creates the first free "<pid>.<gen>.mtr", fills it with the home's
 * record and maps it over the home; 0 or -errno (then the home is as it
 * was, and the file, if one was made, is gone again: no file memsup would
 * wait on for its magic). */
static int store_map_file(struct mt_record *home, int32_t pid)
{
	char path[PATH_MAX + 64];
	unsigned long page = getauxval(AT_PAGESZ);
	/* the home is whole pages of 4096 bytes (counters.h) */
	if (page && page != COUNTERS_HOME_ALIGN)
		return -EINVAL;
	MT_ASSERT(((uintptr_t)home & (COUNTERS_HOME_ALIGN - 1)) == 0);
	for (uint32_t gen = 0; gen < STORE_MAX_GEN; gen++) {
		void *m;
		int fd, rc;
		if ((rc = imagename_path(path, sizeof path, config.dir, pid, gen,
					 MT_RECORD_SUFFIX)) < 0)
			return rc;
		fd = sys_open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0644);
		if (fd == -EEXIST)
			continue;
		if (fd < 0)
			return fd;
		/* no room: the image runs untraced (the file this image just
		 * made, O_EXCL: its own) */
		if ((rc = store_fill(fd)) < 0) {
			sys_close(fd);
			sys_call6(SYS_unlink, (long)path, 0, 0, 0, 0, 0);
			return rc;
		}
		/* Directly, not through our mmap hook: not the program's mapping.
		 * Populated: the copy below writes both pages at once, and the
		 * one call maps them instead of two page faults. */
		m = sys_mmap(NULL, MT_RECORD_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE,
			     fd, 0);
		/* Keep no descriptor: programs close all fds, and the mapping
		 * is enough. */
		sys_close(fd);
		rc = m == MAP_FAILED ? -ENOMEM : 0;
		if (rc == 0) {
			memcpy(m, home, store_home_written(home));
			/* not yet: a fork child's copy of its parent's
			 * record has the parent's magic */
			((struct mt_record *)m)->magic = 0;
			((struct mt_record *)m)->gen = gen;
			if ((rc = store_move_home(m, home)) < 0)
				sys_munmap(m, MT_RECORD_SIZE);
		}
		if (rc < 0) {
			sys_call6(SYS_unlink, (long)path, 0, 0, 0, 0, 0);
			return rc;
		}
		store_gen = gen;
		store_mapped = 1;
		return 0;
	}
	return -EEXIST; /* every generation taken */
}

void store_publish(void)
{
	struct mt_record *r = counters_rec;
	/* The constructor's publish binds the record (the peak stamps taken so
	 * far move in: counters_bind), and so does one that maps the file,
	 * as before; a fork child without a file is bound already. */
	int bind = store_names_due;
	/* the shim's shortest paths update the home (hooks.c) */
	MT_ASSERT(r == &counters_home.rec || store_stranded);
	static int secure_said;
	if (MT_UNLIKELY(config.secure_dir_ignored) && !secure_said++)
		errfd_debug("record: secure-execution mode (AT_SECURE): " MT_ENV_DIR
			    " ignored: this image counts in its own memory only", NULL);
	if (config.dir[0] && !store_mapped && !store_stranded) {
		char name[IMAGENAME_MAX_BYTES];
		int err = store_map_file(r, r->pid);
		if (err == 0) {
			bind = 1;
			if (config.debug) {
				imagename_format(name, sizeof name, r->pid, store_gen,
						 MT_RECORD_SUFFIX);
				errfd_debug("record: ", config.dir, "/", name, NULL);
			}
		} else {
			char why[48];
			struct textbuf e;
			textbuf_init(&e, why, sizeof why);
			errfd_add_errno(&e, -err);
			errfd_debug("record: none could be made in ", config.dir, ": ", why,
				    ": this image counts in its own memory only", NULL);
		}
	}
	store_fill_names(r);
	if (bind)
		counters_bind(r);
	__atomic_store_n(&r->magic, MT_RECORD_MAGIC, __ATOMIC_RELEASE);
}

static void store_fill_exe(struct mt_record *r)
{
	long n = sys_call6(SYS_readlink, (long)"/proc/self/exe", (long)r->exe, MT_EXE_BYTES, 0, 0,
			   0);
	if (n < 0)
		n = 0;
	if (n >= (long)MT_EXE_BYTES) {
		n = MT_EXE_BYTES - 1;
		r->flags |= MT_FLAG_EXE_TRUNCATED;
	}
	r->exe[n] = '\0';
}

static void store_fill_argv(struct mt_record *r, int argc, char **argv)
{
	size_t used = 0;
	r->argc = argc > 0 ? (uint32_t)argc : 0;
	for (int i = 0; argv && i < argc && argv[i]; i++) {
		size_t len = strlen(argv[i]) + 1;
		if (len > MT_ARGV_BYTES - used) {
			/* Keep what fits of this argument, NUL-terminated. */
			if (MT_ARGV_BYTES - used > 1) {
				memcpy(r->argv + used, argv[i], MT_ARGV_BYTES - used - 1);
				used = MT_ARGV_BYTES;
				r->argv[used - 1] = '\0';
			}
			r->flags |= MT_FLAG_ARGV_TRUNCATED;
			break;
		}
		memcpy(r->argv + used, argv[i], len);
		used += len;
	}
	r->argv_bytes = (uint32_t)used;
}

/* argv from /proc/self/cmdline when the constructor got none. */
static void store_fill_cmdline(struct mt_record *r)
{
	char buf[MT_ARGV_BYTES + 1];
	ssize_t n = sys_read_file("/proc/self/cmdline", buf, sizeof buf);
	uint32_t argc = 0;
	if (n <= 0)
		return;
	if (n > (ssize_t)MT_ARGV_BYTES) {
		n = MT_ARGV_BYTES;
		buf[n - 1] = '\0';
		r->flags |= MT_FLAG_ARGV_TRUNCATED;
	}
	memcpy(r->argv, buf, (size_t)n);
	for (ssize_t i = 0; i < n; i++)
		argc += buf[i] == '\0';
	r->argv_bytes = (uint32_t)n;
	r->argc = argc;
}

void store_identify(int argc, char **argv)
{
	struct mt_record *r = counters_rec; /* the home, counting already */
	r->version = MT_RECORD_VERSION;
	r->record_size = MT_RECORD_SIZE;
	r->pid = sys_getpid();
	r->ppid = sys_getppid();
	/* Libraries' constructors that run before the shim's (libselinux's
	 * in coreutils, sed) allocate through it, and the first of those
	 * allocations stamped the peaks already: the image was counting
	 * before this constructor, so its start is the earliest stamp.  A
	 * start taken here would lie after a peak time its record states
	 * (memsup refuses such a record: recordfile_plausible). */
	uint64_t now = sys_mono_ns_cold(), real = sys_real_ns(), start = now;
	if (r->heap_peak_mono_ns && r->heap_peak_mono_ns < start)
		start = r->heap_peak_mono_ns;
	if (r->total_peak_mono_ns && r->total_peak_mono_ns < start)
		start = r->total_peak_mono_ns;
	r->start_mono_ns = start;
	r->start_real_ns = real > now - start ? real - (now - start) : real;
	if (config.secure)
		r->flags |= MT_FLAG_SECURE;
	store_names_argc = argc;
	store_names_argv = argv;
	store_names_due = 1;
}

/* exe and argv, which reach into the record's second page: filled by
 * store_publish once the record file is over the home, so that the page
 * is first written in the file's mapping (no page fault of its own) and
 * still before magic. */
static void store_fill_names(struct mt_record *r)
{
	if (!store_names_due)
		return;
	store_names_due = 0;
	store_fill_exe(r);
	if (store_names_argv && store_names_argc > 0)
		store_fill_argv(r, store_names_argc, store_names_argv);
	else
		store_fill_cmdline(r);
}

/* The parent's record as it stood when fork() began.  A shared file
 * mapping keeps changing in the parent after fork() returns there, possibly
 * before the child's handler runs, so the child must start from a copy
 * taken in the prepare handler (process-private memory: the child inherits
 * it as it was).  Valid only between prepare and the parent/child handler. */
static struct mt_record store_fork_snapshot MT_TABLE;
static int store_fork_snapshot_taken;

void store_fork_prepare(void)
{
	/* This thread's live bytes into the record, so that the snapshot has
	 * them; other threads' are added in the child (counters_go_single). */
	counters_flush_own();
	if (store_mapped) {
		memcpy(&store_fork_snapshot, counters_rec, sizeof store_fork_snapshot);
		store_fork_snapshot_taken = 1;
	}
}

void store_fork_parent(void)
{
	store_fork_snapshot_taken = 0;
}

/* The child's record starts at zero but for what it inherits: the
 * command line, and the memory held at the fork (current figures;
 * activity counts, markers and the end block start afresh).  A field
 * added to the record starts at zero here without a line of its own. */
static void store_fork_reset(struct mt_record *loc, const struct mt_record *from)
{
	memset(loc, 0, sizeof *loc);
	loc->version = from->version;
	loc->record_size = from->record_size;
	loc->flags = from->flags & (MT_FLAG_ARGV_TRUNCATED | MT_FLAG_EXE_TRUNCATED |
				    MT_FLAG_SECURE | MT_FLAG_HEAP_UNSIZED |
				    MT_FLAG_HEAP_FOREIGN | MT_FLAG_HUGETLB);
	loc->argc = from->argc;
	memcpy(loc->exe, from->exe, sizeof loc->exe);
	memcpy(loc->argv, from->argv, sizeof loc->argv);
	loc->argv_bytes = from->argv_bytes;
	loc->heap_current = from->heap_current;
	loc->map_anon_current = from->map_anon_current;
	loc->map_file_current = from->map_file_current;
	loc->total_current = from->total_current;
}

/* That child (the kernel refused it 8 KiB of private memory, strict
 * overcommit at its limit, and no record file could be made either), and
 * its own fork children: the home is still the parent's record, which it
 * must not write, and nothing is mapped there again.  Its record is built
 * on the stack and kept in the snapshot's memory, where no file shows it,
 * and the hooks' shortest paths, which write the home, are turned off for
 * good (as when block sizes do not come from glibc's headers:
 * route_glibc_sizes), so every count goes through counters_rec. */
static __attribute__((noinline, cold)) struct mt_record *store_fork_strand(void)
{
	struct mt_record fresh;
	errfd_debug("record: this fork child could leave its parent's record for neither "
		    "private memory nor a file: it counts in its own memory only", NULL);
	store_fork_reset(&fresh, &store_fork_snapshot);
	memcpy(&store_fork_snapshot, &fresh, sizeof fresh);
	route_glibc_sizes(0);
	store_mapped = 0;
	store_stranded = 1;
	return &store_fork_snapshot;
}

/* Puts private zero pages over the home, where the parent's record file
 * is mapped (MAP_FIXED replaces a mapping in one call, and leaves it as it
 * was when the call fails); failing those, the child's own record file,
 * which store_publish would map there anyway.  1 if either is there. */
static int store_leave_parent(struct mt_record *home)
{
	if (sys_mmap(home, MT_RECORD_SIZE, PROT_READ | PROT_WRITE,
		     MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0) != MAP_FAILED) {
		store_mapped = 0;
		return 1;
	}
	return store_map_file(home, sys_getpid()) == 0;
}

void store_fork_child(void)
{
	struct mt_record *loc = counters_rec;
	const struct mt_record *from = &store_fork_snapshot;
	int32_t parent_pid;
	uint32_t parent_gen;

	/* The parent's record as the fork found it, in process-private memory:
	 * the prepare-time snapshot when there is one (not when fork() came
	 * from a signal handler inside the shim: then the live copy is all we
	 * have). */
	if (!store_fork_snapshot_taken && loc != &store_fork_snapshot)
		memcpy(&store_fork_snapshot, loc, sizeof store_fork_snapshot);
	store_fork_snapshot_taken = 0;
	parent_pid = from->pid;
	parent_gen = from->gen;
	/* The home may hold the parent's file mapping, shared: the child must
	 * not write to it from here on.  A vfork child runs no fork handler
	 * and remaps nothing: it shares the parent's memory, home included,
	 * until it execs (hooks.c). */
	if (store_stranded || (store_mapped && !store_leave_parent(loc))) {
		loc = store_fork_strand();
	} else {
		store_fork_reset(loc, from);
		/* the child's own file, when it is mapped already */
		if (store_mapped)
			loc->gen = store_gen;
	}
	counters_bind(loc);
	/* other threads' shards into heap_current, before the peaks copy it */
	counters_go_single();

	loc->pid = sys_getpid();
	loc->ppid = sys_getppid();
	loc->relation = MT_REL_FORK;
	loc->parent_pid = parent_pid;
	loc->parent_gen = parent_gen;
	loc->start_mono_ns = sys_mono_ns_cold();
	loc->start_real_ns = sys_real_ns();
	loc->heap_peak = loc->heap_peak_stamp = loc->heap_current;
	loc->heap_at_fork = loc->heap_current;
	loc->map_anon_at_fork = loc->map_anon_current;
	loc->heap_peak_mono_ns = loc->start_mono_ns;
	loc->map_anon_peak = loc->map_anon_current;
	loc->map_file_peak = loc->map_file_current;
	loc->total_peak = loc->total_peak_stamp = loc->total_current;
	loc->total_peak_mono_ns = loc->start_mono_ns;
	store_publish();
}

/* "VmHWM:   1234 kB" -> 1234 */
static uint64_t store_status_kb(const char *status, const char *key)
{
	const char *p = strstr(status, key);
	uint64_t v = 0;
	if (!p)
		return 0;
	p += strlen(key);
	while (*p == ' ' || *p == '\t')
		p++;
	sys_parse_u64(p, &v);
	return v;
}

int store_finish(unsigned state, int exit_code, int exit_signal)
{
	struct mt_record *r = counters_rec;
	char status[4096];
	struct rusage ru;

	if (!counters_is_own_process() ||
	    __atomic_load_n(&r->state, __ATOMIC_ACQUIRE) != MT_STATE_RUNNING)
		return 0;
	counters_settle();
	/* The stacks table's last peak needs the settled heap_peak. */
	sites_finish(state);
	r->end_mono_ns = sys_mono_ns_cold();
	r->exit_code = exit_code;
	r->exit_signal = exit_signal;
	if (sys_read_file("/proc/self/status", status, sizeof status) > 0) {
		r->vm_hwm_kb = store_status_kb(status, "\nVmHWM:");
		r->vm_rss_kb = store_status_kb(status, "\nVmRSS:");
		r->vm_peak_kb = store_status_kb(status, "\nVmPeak:");
	}
	if (sys_call6(SYS_getrusage, RUSAGE_SELF, (long)&ru, 0, 0, 0, 0) == 0)
		r->ru_maxrss_self_kb = (uint64_t)ru.ru_maxrss;
	if (sys_call6(SYS_getrusage, RUSAGE_CHILDREN, (long)&ru, 0, 0, 0, 0) == 0)
		r->ru_maxrss_children_kb = (uint64_t)ru.ru_maxrss;
	__atomic_store_n(&r->state, state, __ATOMIC_RELEASE);
	return 1;
}

void store_unfinish(void)
{
	struct mt_record *r = counters_rec;
	r->end_mono_ns = 0;
	sites_unfinish();
	__atomic_store_n(&r->state, MT_STATE_RUNNING, __ATOMIC_RELEASE);
}
