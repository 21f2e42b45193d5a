/* live.c: record files watched and mapped while the run goes on (see
 * live.h).
 *
 * Order of checks on a new file, each one before trusting the next: regular
 * file, exactly MT_RECORD_SIZE bytes (so the mapping can never reach past
 * the end of the file and raise SIGBUS: the shim sizes the file before it
 * maps it and never shrinks it), magic (acquire: the identity block is then
 * complete), version, record_size, then identity fields against the name.
 * Short or magic-less files are "being created": retried, not errors.
 *
 * A record file shrunk after it was mapped (only a hostile or broken
 * command can do that: the shim never shrinks one) would make any read of
 * the mapping raise SIGBUS.  A SIGBUS handler, installed by live_open(),
 * puts a zero page over the faulting page of a record mapping (mmap
 * MAP_FIXED, async-signal-safe) and notes the address; the read returns
 * zeros, and the next live_update() marks that record as not trusted
 * ("record file too short").  A fault anywhere else gets the default
 * action back and kills memsup as it would have. */
#include "collect/belief.h"
#include "collect/fold.h"
#include "collect/live.h"
#include "base/procfs.h"
#include "collect/recordfile.h"
#include "collect/stackfile.h"
#include "collect/stackfold.h"
#include "contain/contain.h"
#include "evidence/files.h"
#include "base/pidmap.h"
#include "base/grow.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

/* pid -> the index of its newest record (a pidmap entry) */
struct live_newest {
	pid_t pid;
	long idx;
};

/* pid -> when samples found it a member of the tree: the first listing's
 * start and the last listing's end (belief.h, belief_seen_fits) */
struct live_seen {
	pid_t pid;
	uint64_t first_ns;
	uint64_t last_ns;
};

struct live {
	int dirfd;
	int ifd;                /* inotify, or -1 */
	int rescan;             /* list the directory at the next update */
	struct timespec mtime;  /* without inotify: the mtime of the last listing */
	struct live_rec *recs;
	size_t n, cap;
	size_t *pending;        /* indices of files still being created */
	size_t npending, pending_cap;
	unsigned long updates;
	struct pidmap newest;    /* struct live_newest */
	size_t *doubted;         /* indices of mapped records not believed yet */
	size_t ndoubted, doubted_cap;
	size_t *active;          /* indices of mapped records (live_active_*) */
	size_t nactive, active_cap;
	int fold_fd;             /* the fold file, or -1 */
	off_t fold_end;          /* its size: where the next entry goes */
	size_t nfolded;
	int evdirfd;             /* where stacks.fold is made; -1: not packed */
	int stacks_fd;           /* stacks.fold once made, or -1 */
	/* the belief rule's facts (belief.h) */
	struct pidmap seen;      /* struct live_seen */
	long pid_max;            /* <= 0: unknown */
	char proc_root[64];      /* "": no look at a live pid (tests) */
	pid_t self;              /* memsup: every member descends from it */
	uint64_t command_start;  /* the command's /proc starttime; 0: unknown */
	const struct tree_member *members; /* live_believe's, while it runs */
	size_t nmembers;
};

/* ---- SIGBUS on a shrunk record file ---------------------------------- */

#define LIVE_FAULTS_MAX 64
static struct live *live_owner;           /* the live whose mappings it covers */
static const void *volatile live_probe;   /* mapping being validated (try_map) */
static uintptr_t live_fault_addr[LIVE_FAULTS_MAX];
static volatile sig_atomic_t live_nfaults;
static uintptr_t live_page_mask;

static int live_is_ours(uintptr_t a)
{
	const struct live *l = live_owner;
	if (live_probe && a - (uintptr_t)live_probe < MT_RECORD_SIZE)
		return 1;
	for (size_t i = 0; l && i < l->n; i++)
		if (l->recs[i].map && a - (uintptr_t)l->recs[i].map < MT_RECORD_SIZE)
			return 1;
	return 0;
}

static void live_on_sigbus(int sig, siginfo_t *si, void *uc)
{
	int saved = errno;
	uintptr_t a = (uintptr_t)si->si_addr;
	(void)uc;
	if (!live_is_ours(a) ||
	    mmap((void *)(a & live_page_mask), ~live_page_mask + 1, PROT_READ,
		 MAP_FIXED | MAP_PRIVATE | MAP_ANONYMOUS, -1, 0) == MAP_FAILED) {
		/* not a record: the default action, at the same fault again */
		signal(sig, SIG_DFL);
	} else if (live_nfaults < LIVE_FAULTS_MAX) {
		live_fault_addr[live_nfaults] = a;
		live_nfaults++;
	}
	errno = saved;
}

/* Records whose mapping faulted are not trusted any more. */
static void live_take_faults(struct live *l)
{
	sig_atomic_t n = live_nfaults;
	for (sig_atomic_t k = 0; k < n; k++) {
		uintptr_t a = live_fault_addr[k];
		for (size_t i = 0; i < l->n; i++)
			if (l->recs[i].map && a - (uintptr_t)l->recs[i].map < MT_RECORD_SIZE &&
			    !l->recs[i].error)
				l->recs[i].error = -RECORDFILE_ESHORT;
	}
	live_nfaults = 0;
}

/* The index of pid's newest record, or -1. */
static long newest_of(const struct live *l, pid_t pid)
{
	const struct live_newest *e = pidmap_find(&l->newest, pid);
	return e ? e->idx : -1;
}

int live_open(struct live **out, const char *dir)
{
	struct live *l = calloc(1, sizeof *l);
	if (!l)
		return -ENOMEM;
	l->dirfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (l->dirfd < 0) {
		int rc = -errno;
		free(l);
		return rc;
	}
	l->ifd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
	if (l->ifd >= 0 && inotify_add_watch(l->ifd, dir, IN_CREATE | IN_MOVED_TO) < 0) {
		close(l->ifd);
		l->ifd = -1;
	}
	l->rescan = 1;
	l->fold_fd = l->evdirfd = l->stacks_fd = -1;
	pidmap_init(&l->newest, sizeof(struct live_newest));
	pidmap_init(&l->seen, sizeof(struct live_seen));
	/* read once: pid_max can be raised during the run, but only by root,
	 * and a pid above the value at the start is then at worst not
	 * believed, never a forged one believed */
	l->pid_max = belief_read_pid_max("/proc/sys/kernel/pid_max");
	snprintf(l->proc_root, sizeof l->proc_root, "/proc");
	l->self = getpid();
	long page = sysconf(_SC_PAGESIZE);
	live_page_mask = ~(uintptr_t)((page > 0 ? page : 4096) - 1);
	live_owner = l;
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_sigaction = live_on_sigbus;
	sa.sa_flags = SA_SIGINFO;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGBUS, &sa, NULL);
	*out = l;
	return 0;
}

void live_close(struct live *l)
{
	if (!l)
		return;
	if (live_owner == l) {
		signal(SIGBUS, SIG_DFL);
		live_owner = NULL;
	}
	for (size_t i = 0; i < l->n; i++) {
		if (l->recs[i].map)
			munmap((void *)l->recs[i].map, MT_RECORD_SIZE);
		if (l->recs[i].fd >= 0)
			close(l->recs[i].fd);
	}
	if (l->ifd >= 0)
		close(l->ifd);
	if (l->stacks_fd >= 0)
		close(l->stacks_fd);
	close(l->dirfd);
	free(l->recs);
	free(l->pending);
	free(l->doubted);
	free(l->active);
	pidmap_free(&l->newest);
	pidmap_free(&l->seen);
	free(l);
}

int live_fd(const struct live *l)
{
	return l->ifd;
}

size_t live_pending(const struct live *l)
{
	return l->npending;
}

size_t live_count(const struct live *l)
{
	return l->n;
}

const struct live_rec *live_get(const struct live *l, size_t i)
{
	return i < l->n ? &l->recs[i] : NULL;
}


/* A newly mapped record joins the active ones.  Out of memory: the record
 * is still mapped and read at the end, but no sample reads it. */
static void activate(struct live *l, size_t i)
{
	if (grow_array((void **)&l->active, &l->active_cap, l->nactive + 1, sizeof *l->active) < 0)
		return;
	l->active[l->nactive++] = i;
}

/* A newly mapped record waits in `doubted` until live_believe() believes
 * it.  Out of memory: believed at once, as before records were doubted. */
static void doubt(struct live *l, size_t i)
{
	if (grow_array((void **)&l->doubted, &l->doubted_cap, l->ndoubted + 1,
		       sizeof *l->doubted) < 0) {
		l->recs[i].believed = 1;
		return;
	}
	l->doubted[l->ndoubted++] = i;
}

/* Try to turn a pending file into a mapped record.  Leaves it pending
 * (error 0, map NULL, its fd kept so that a retry costs no open) when it
 * is still being created. */
static void try_map(struct live *l, struct live_rec *r)
{
	struct stat st;
	if (r->fd < 0) {
		r->fd = openat(l->dirfd, r->name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
		if (r->fd < 0) {
			/* ENOENT: removed behind our back; anything else is
			 * final too */
			r->error = -errno;
			return;
		}
	}
	r->tries++;
	if (fstat(r->fd, &st) < 0) {
		r->error = -errno;
	} else if (!S_ISREG(st.st_mode)) {
		r->error = -RECORDFILE_ECORRUPT;
	} else if (st.st_size > (off_t)MT_RECORD_SIZE) {
		r->error = -RECORDFILE_ELONG;
	} else if (st.st_size == (off_t)MT_RECORD_SIZE) {
		const struct mt_record *m = mmap(NULL, MT_RECORD_SIZE, PROT_READ, MAP_SHARED, r->fd, 0);
		sig_atomic_t faults = live_nfaults;
		uint64_t magic = 0;
		if (m != MAP_FAILED) {
			live_probe = m;
			magic = __atomic_load_n(&m->magic, __ATOMIC_ACQUIRE);
		}
		if (m == MAP_FAILED) {
			r->error = -errno;
		} else if (live_nfaults != faults) {
			/* shrunk between fstat and the load */
			live_nfaults = faults;
			r->error = -RECORDFILE_ESHORT;
		} else if (magic != MT_RECORD_MAGIC) {
			/* being created, or foreign: decided at the end */
			live_probe = NULL;
			munmap((void *)m, MT_RECORD_SIZE);
			return;
		} else if (m->version != MT_RECORD_VERSION) {
			/* (a fault from here on is taken by live_take_faults) */
			r->error = -RECORDFILE_EVERSION;
		} else if (m->record_size != MT_RECORD_SIZE) {
			r->error = -RECORDFILE_ESIZE;
		} else if (m->pid != r->pid || m->gen != r->gen || m->relation > MT_REL_UNKNOWN ||
			   m->parent_pid < 0) {
			r->error = -RECORDFILE_ECORRUPT;
		} else {
			r->map = m;
		}
		if (r->error && m != MAP_FAILED)
			munmap((void *)m, MT_RECORD_SIZE);
		live_probe = NULL;
	} else {
		return; /* short: still being sized */
	}
	/* decided: mapped or not trusted; the mapping needs no fd */
	close(r->fd);
	r->fd = -1;
	if (r->map) {
		doubt(l, (size_t)(r - l->recs));
		activate(l, (size_t)(r - l->recs));
	}
}

static int add_name(struct live *l, const char *name)
{
	int32_t pid;
	uint32_t gen;
	if (recordfile_parse_name(name, &pid, &gen) < 0 || strlen(name) >= sizeof l->recs[0].name)
		return 0;
	if (live_find(l, pid, gen))
		return 0;
	if (grow_array((void **)&l->recs, &l->cap, l->n + 1, sizeof *l->recs) < 0)
		return -ENOMEM;
	struct live_rec *r = &l->recs[l->n];
	memset(r, 0, sizeof *r);
	r->pid = pid;
	r->gen = gen;
	r->fd = -1;
	r->fold_off = -1;
	strcpy(r->name, name);
	/* chain newest first; gens normally appear in increasing order */
	int first;
	struct live_newest *e = pidmap_add(&l->newest, pid, &first);
	if (!e)
		return -ENOMEM;
	r->next_same_pid = first ? -1 : e->idx;
	e->idx = (long)l->n;
	l->n++;
	try_map(l, r);
	if (r->map || r->error)
		return 0;
	if (grow_array((void **)&l->pending, &l->pending_cap, l->npending + 1,
		       sizeof *l->pending) < 0)
		return -ENOMEM;
	l->pending[l->npending++] = l->n - 1;
	return 0;
}

static int scan(struct live *l)
{
	int fd = openat(l->dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	struct stat st;
	if (fstat(fd, &st) == 0)
		l->mtime = st.st_mtim;
	DIR *d = fdopendir(fd);
	if (!d) {
		int rc = -errno;
		close(fd);
		return rc;
	}
	int rc = 0;
	for (struct dirent *e; rc == 0 && (e = readdir(d)) != NULL;)
		rc = add_name(l, e->d_name);
	closedir(d);
	return rc;
}

int live_update(struct live *l, int force_scan)
{
	int rc = 0;
	if (l->ifd >= 0) {
		_Alignas(struct inotify_event) char buf[4096];
		ssize_t n;
		while ((n = read(l->ifd, buf, sizeof buf)) > 0) {
			for (char *p = buf; p < buf + n;) {
				struct inotify_event *ev = (struct inotify_event *)p;
				if (ev->mask & IN_Q_OVERFLOW)
					l->rescan = 1;
				else if (ev->len && rc == 0)
					rc = add_name(l, ev->name);
				p += sizeof *ev + ev->len;
			}
		}
	} else {
		struct stat st;
		if (fstat(l->dirfd, &st) == 0 && (st.st_mtim.tv_sec != l->mtime.tv_sec ||
						  st.st_mtim.tv_nsec != l->mtime.tv_nsec))
			l->rescan = 1;
	}
	if (l->rescan || force_scan) {
		l->rescan = 0;
		int r = scan(l);
		if (r < 0 && rc == 0)
			rc = r;
	}
	if (live_nfaults)
		live_take_faults(l);
	l->updates++;
	for (size_t i = 0; i < l->npending;) {
		struct live_rec *r = &l->recs[l->pending[i]];
		/* A file that stays without magic (its writer was killed while
		 * creating it) is looked at every 64th update after 100 tries,
		 * so it cannot cost a mapping per sample for ever; the end of
		 * the run (force_scan) always looks. */
		if (r->tries < 100 || force_scan || l->updates % 64 == 0)
			try_map(l, r);
		if (r->map || r->error)
			l->pending[i] = l->pending[--l->npending];
		else
			i++;
	}
	return rc;
}

void live_set_checks(struct live *l, const char *proc_root, long pid_max)
{
	snprintf(l->proc_root, sizeof l->proc_root, "%s", proc_root ? proc_root : "");
	l->pid_max = pid_max;
}

int live_pid_possible(const struct live *l, pid_t pid)
{
	return belief_pid_possible(pid, l->pid_max);
}

/* The image's life by its record: from the mapping while mapped, from
 * what the fold kept once folded (live_fold_one). */
static struct belief_span live_span(const struct live_rec *r)
{
	struct belief_span s = { r->start_ns, r->end_ns };
	if (r->map) {
		s.start_ns = live_load(&r->map->start_mono_ns);
		s.end_ns = live_load(&r->map->end_mono_ns);
	}
	return s;
}

/* A believed image of `pid` still running: that pid is the tree's now. */
static int live_runs_believed(const struct live *l, pid_t pid)
{
	for (long i = newest_of(l, pid); i >= 0; i = l->recs[i].next_same_pid) {
		const struct live_rec *r = &l->recs[i];
		if (r->believed && r->map && live_state(r->map) == MT_STATE_RUNNING)
			return 1;
	}
	return 0;
}

/* Where the live process `pid` stands: its ancestors, read from
 * /proc/PID/stat, lead to the command, to a pid a sample saw, to a pid of
 * a believed running image (the tree), or to init without passing memsup
 * (outside).  Every member descends from memsup (it is their subreaper),
 * so a process whose chain reaches init another way is not the tree's:
 * the `sleep` a forged record names.  A direct child of memsup that no
 * sample saw is an orphan of the tree when it started after the command,
 * and otherwise one of memsup's own (its sentinel, children it was left
 * by an exec); in the command's own clock tick it cannot be told.
 * Gone mid-walk, or a chain deeper than any real tree: unknown, and the
 * lineage decides. */
static enum belief_side live_side_of(const struct live *l, pid_t pid, pid_t command)
{
	pid_t p = pid;
	if (pid == l->self)
		return BELIEF_SIDE_OUTSIDE; /* memsup is not its own tree */
	for (int depth = 0; depth < 128; depth++) {
		const struct live_seen *s = pidmap_find(&l->seen, p);
		struct procfs_stat st;
		/* the pid itself counts by its sightings only where their times
		 * fit (live_judge checked): alive now under a pid the tree once
		 * had, it may be another process after the pids wrapped */
		if (p == command || (s && p != pid) || live_runs_believed(l, p))
			return BELIEF_SIDE_TREE;
		if (p <= 1)
			return BELIEF_SIDE_OUTSIDE;
		if (procfs_read_stat(l->proc_root, p, &st) < 0)
			return BELIEF_SIDE_UNKNOWN;
		if (st.ppid == l->self) {
			if (!l->command_start || st.starttime == l->command_start)
				return BELIEF_SIDE_UNKNOWN;
			return st.starttime > l->command_start ? BELIEF_SIDE_TREE
							       : BELIEF_SIDE_OUTSIDE;
		}
		if (st.ppid <= 0)
			return BELIEF_SIDE_OUTSIDE; /* a root other than init (kthreadd) */
		p = st.ppid;
	}
	return BELIEF_SIDE_UNKNOWN;
}

/* The image (pid, gen+1) that record r exec'd into, when it is believed:
 * the same process, so r is the tree's too. */
static int live_exec_successor_believed(const struct live *l, const struct live_rec *r)
{
	const struct live_rec *next = live_find(l, r->pid, r->gen + 1);
	const struct mt_record *m = next ? next->map : NULL;
	if (!next || !next->believed || !m)
		return 0;
	return live_load32(&m->relation) == MT_REL_EXEC &&
	       (pid_t)live_load32(&m->parent_pid) == r->pid &&
	       live_load32(&m->parent_gen) == r->gen;
}

/* A member of this sample that lives in a PID namespace below memsup's and
 * whose pid there is `pid`: the shim in it names its record by that pid
 * (getpid()), which memsup sees as another process (1: init).  0 when
 * none.  Read only for a record about to be refused as outside the tree,
 * so a run without namespaces reads nothing more. */
static pid_t live_ns_member(const struct live *l, pid_t pid)
{
	struct procfs_status self, st;
	if (!l->nmembers || procfs_read_status(l->proc_root, l->self, &self) < 0 ||
	    !(self.have & PROCFS_HAVE_NSPID))
		return 0;
	for (size_t k = 0; k < l->nmembers; k++) {
		pid_t m = l->members[k].pid;
		if (procfs_read_status(l->proc_root, m, &st) == 0 && (st.have & PROCFS_HAVE_NSPID) &&
		    st.nspid_levels > self.nspid_levels && st.nspid_inner == pid)
			return m;
	}
	return 0;
}

/* One record, by belief.h's rule, in its order: the pid first (a pid that
 * cannot exist is final), the sightings, one look at the live process at
 * first sight (a live pid outside is final; it must come before the
 * lineage, which a forged record claims), then the lineage both ways.
 * 1: believed now; 0: not (yet), r->doubt set when that is final. */
static int live_judge(struct live *l, struct live_rec *r, pid_t command)
{
	const struct mt_record *m = r->map;
	struct belief_span me = live_span(r);
	if (!belief_pid_possible(r->pid, l->pid_max)) {
		r->doubt = BELIEF_PID_MAX;
		return 0;
	}
	if (r->pid == command)
		return 1;
	const struct live_seen *s = pidmap_find(&l->seen, r->pid);
	if (s && belief_seen_fits(&me, s->first_ns, s->last_ns))
		return 1;
	if (!r->looked) {
		r->looked = 1;
		enum belief_side side = l->proc_root[0] ? live_side_of(l, r->pid, command)
							: BELIEF_SIDE_UNKNOWN;
		if (side == BELIEF_SIDE_OUTSIDE) {
			/* not a process outside: a member's own pid in its
			 * namespace; still not believed, for that reason */
			r->ns_member = live_ns_member(l, r->pid);
			r->doubt = r->ns_member ? BELIEF_OTHER_NS : BELIEF_OUTSIDE;
			return 0;
		}
		if (side == BELIEF_SIDE_TREE)
			return 1;
	}
	if (live_load32(&m->relation) != MT_REL_ROOT) {
		const struct live_rec *parent = live_find(l, (pid_t)live_load32(&m->parent_pid),
							  live_load32(&m->parent_gen));
		if (parent && parent->believed) {
			struct belief_span ps = live_span(parent);
			if (belief_parent_fits(&ps, &me))
				return 1;
		}
	}
	return live_exec_successor_believed(l, r);
}

/* The members of this sample, noted for belief_seen_fits. */
static void live_note_seen(struct live *l, const struct tree_member *members, size_t n,
			   uint64_t from_ns, uint64_t to_ns)
{
	for (size_t k = 0; k < n; k++) {
		int added;
		struct live_seen *s = pidmap_add(&l->seen, members[k].pid, &added);
		if (!s)
			continue; /* out of memory: the lineage still believes it */
		if (added)
			s->first_ns = from_ns;
		s->last_ns = to_ns;
	}
}

void live_believe(struct live *l, const struct tree_member *members, size_t n, pid_t command,
		  uint64_t seen_from_ns, uint64_t seen_to_ns)
{
	int changed = 1;
	live_note_seen(l, members, n, seen_from_ns, seen_to_ns);
	if (!l->ndoubted)
		return;
	l->members = members;
	l->nmembers = n;
	if (command > 0 && !l->command_start && l->proc_root[0]) {
		struct procfs_stat st;
		if (procfs_read_stat(l->proc_root, command, &st) == 0)
			l->command_start = st.starttime;
	}
	/* through lineage, as long as that believes more: a child listed
	 * before its parent in doubted[] is passed over, then believed on
	 * the next pass */
	while (changed) {
		changed = 0;
		for (size_t k = 0; k < l->ndoubted;) {
			struct live_rec *r = &l->recs[l->doubted[k]];
			if (!r->believed && r->map && !r->error && !r->doubt &&
			    live_judge(l, r, command))
				r->believed = changed = 1;
			if (r->believed || r->error || r->doubt)
				l->doubted[k] = l->doubted[--l->ndoubted];
			else
				k++;
		}
	}
	l->members = NULL; /* the caller's, valid for this call only */
	l->nmembers = 0;
}

/* "1.200 to 1.300 s" of the run, or "1.200 s on" for an image that did
 * not end */
static void live_span_text(char *buf, size_t cap, const struct belief_span *s, uint64_t t0)
{
	double a = ((double)s->start_ns - (double)t0) / 1e9;
	if (s->end_ns)
		snprintf(buf, cap, "%.3f to %.3f s", a, ((double)s->end_ns - (double)t0) / 1e9);
	else
		snprintf(buf, cap, "%.3f s on", a);
}

int live_why(const struct live *l, size_t i, uint64_t run_start_ns, char *buf, size_t cap)
{
	char span[64];
	const struct live_rec *r = &l->recs[i];
	struct belief_span me = live_span(r);
	const struct live_seen *s = pidmap_find(&l->seen, r->pid);
	double t0 = (double)run_start_ns;
	if (r->believed)
		return -EINVAL;
	if (r->doubt == BELIEF_PID_MAX || !belief_pid_possible(r->pid, l->pid_max))
		return snprintf(buf, cap, "pid %d cannot exist: pid_max is %ld", (int)r->pid,
				l->pid_max);
	if (r->doubt == BELIEF_OTHER_NS)
		return snprintf(buf, cap, "pid %d is the tree's process %d in its own PID namespace, "
				"where the shim names its record by that pid; memsup, in another, "
				"cannot join such a record to its process", (int)r->pid,
				(int)r->ns_member);
	if (r->doubt == BELIEF_OUTSIDE)
		return snprintf(buf, cap, "pid %d was alive outside the tree when its record "
				"appeared (its parents lead to init, not to memsup)", (int)r->pid);
	live_span_text(span, sizeof span, &me, run_start_ns);
	if (s)
		return snprintf(buf, cap, "pid %d was in the tree from %.3f to %.3f s, not while "
				"this image ran (%s)", (int)r->pid, ((double)s->first_ns - t0) / 1e9,
				((double)s->last_ns - t0) / 1e9, span);
	if (!r->map)
		return snprintf(buf, cap, "pid %d was never in the tree", (int)r->pid);
	pid_t pp = (pid_t)live_load32(&r->map->parent_pid);
	uint32_t pg = live_load32(&r->map->parent_gen);
	const struct live_rec *parent = live_find(l, pp, pg);
	if (live_load32(&r->map->relation) == MT_REL_ROOT)
		return snprintf(buf, cap, "pid %d was never in the tree and its record names no "
				"parent", (int)r->pid);
	if (!parent)
		return snprintf(buf, cap, "pid %d was never in the tree and the record it names "
				"as its parent (%d.%u) does not exist", (int)r->pid, (int)pp,
				(unsigned)pg);
	if (!parent->believed)
		return snprintf(buf, cap, "pid %d was never in the tree and the record it names "
				"as its parent (%d.%u) is not believed either", (int)r->pid, (int)pp,
				(unsigned)pg);
	struct belief_span ps = live_span(parent);
	char pspan[64];
	live_span_text(pspan, sizeof pspan, &ps, run_start_ns);
	return snprintf(buf, cap, "pid %d was never in the tree and the record it names as its "
			"parent (%d.%u, alive %s) was not alive when it started (%.3f s)",
			(int)r->pid, (int)pp, (unsigned)pg, pspan, ((double)me.start_ns - t0) / 1e9);
}

const struct live_rec *live_image_at(const struct live *l, pid_t pid, uint64_t t_ns,
				     uint32_t *gen)
{
	const struct live_rec *best = NULL;
	for (long i = newest_of(l, pid); i >= 0; i = l->recs[i].next_same_pid) {
		const struct live_rec *r = &l->recs[i];
		if (r->map && !r->error && r->map->start_mono_ns <= t_ns &&
		    (!best || r->gen > best->gen))
			best = r;
	}
	*gen = 0;
	if (!best)
		return NULL;
	*gen = best->gen;
	const struct mt_record *m = best->map;
	if (live_state(m) == MT_STATE_EXECED) {
		uint64_t end = live_load(&m->end_mono_ns);
		if (end && end <= t_ns) {
			/* exec'd before the sample: the sample saw the next
			 * image, whose constructor may not have run yet */
			*gen = best->gen + 1;
			const struct live_rec *next = live_find(l, pid, *gen);
			return next && next->map && !next->error ? next : NULL;
		}
	}
	return best;
}

const struct live_rec *live_find(const struct live *l, pid_t pid, uint32_t gen)
{
	for (long i = newest_of(l, pid); i >= 0; i = l->recs[i].next_same_pid)
		if (l->recs[i].gen == gen)
			return &l->recs[i];
	return NULL;
}

int live_read_final(struct live *l, size_t i, struct mt_record *out)
{
	const struct live_rec *r = &l->recs[i];
	if (live_nfaults)
		live_take_faults(l);
	if (r->error)
		return r->error;
	if (r->fold_off >= 0) {
		off_t next;
		int rc = fold_read_at(l->fold_fd, (off_t)r->fold_off, out, &next);
		if (rc == 0)
			rc = -EBADMSG; /* the file ended before its entry */
		if (rc < 0)
			return rc;
		rc = filecheck_record(out);
		if (rc == 0 && (out->pid != r->pid || out->gen != r->gen))
			rc = -RECORDFILE_ECORRUPT;
		return rc;
	}
	if (!r->map) {
		/* never became valid while the run went on: one last look,
		 * through the validating reader */
		int rc = recordfile_read_at(l->dirfd, r->name, out);
		if (rc == 0 && (out->pid != r->pid || out->gen != r->gen))
			rc = -RECORDFILE_ECORRUPT;
		return rc;
	}
	/* From the mapping, in record.h's order: state and marker_count
	 * (acquire) before the fields they guard, so a final state comes with
	 * its whole exit block.  No system call: a run of thousands of
	 * processes must not end with thousands of file reads. */
	const struct mt_record *m = r->map;
	uint32_t state = __atomic_load_n(&m->state, __ATOMIC_ACQUIRE);
	uint32_t markers = __atomic_load_n(&m->marker_count, __ATOMIC_ACQUIRE);
	sig_atomic_t faults = live_nfaults;
	memcpy(out, m, sizeof *out);
	if (live_nfaults != faults) {
		live_take_faults(l);
		return -RECORDFILE_ESHORT;
	}
	out->state = state;
	out->marker_count = markers;
	/* The writer could have scribbled anything since it was first
	 * validated: the same checks as a file read, plus the name's pid/gen. */
	int rc = filecheck_record(out);
	if (rc == 0 && (out->pid != r->pid || out->gen != r->gen))
		rc = -RECORDFILE_ECORRUPT;
	return rc;
}

void live_set_fold(struct live *l, int fd, int evdirfd)
{
	l->evdirfd = evdirfd;
	l->fold_fd = fd;
	l->fold_end = fd >= 0 ? lseek(fd, 0, SEEK_END) : 0;
	if (l->fold_end < 0)
		l->fold_end = 0;
}

size_t live_folded(const struct live *l)
{
	return l->nfolded;
}

size_t live_active_count(const struct live *l)
{
	return l->nactive;
}

size_t live_active_index(const struct live *l, size_t k)
{
	return l->active[k];
}

/* Can this record still change?  Not once its process is gone, nor once
 * its exec succeeded (the next generation's record is there: the old
 * image's memory, the mapping with it, is gone). */
static int live_record_ended(const struct live *l, const struct live_rec *r)
{
	uint32_t state = live_state(r->map);
	if (state == MT_STATE_EXECED) {
		const struct live_rec *next = live_find(l, r->pid, r->gen + 1);
		if (next && !next->error && (next->map || next->fold_off >= 0))
			return 1;
	}
	return kill(r->pid, 0) < 0 && errno == ESRCH;
}

/* The ended image's stacks file, if it sampled, into stacks.fold (made at
 * the first one). */
static int live_pack_stacks(struct live *l, const struct live_rec *r)
{
	if (l->evdirfd < 0)
		return 0;
	if (l->stacks_fd < 0) {
		char name[48];
		stackfile_name(name, sizeof name, r->pid, r->gen);
		if (faccessat(l->dirfd, name, F_OK, AT_SYMLINK_NOFOLLOW) < 0)
			return 0; /* none: no fold to make yet */
		l->stacks_fd = openat(l->evdirfd, EVIDENCE_STACKS_FOLD,
				      O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0666);
		if (l->stacks_fd < 0)
			return -errno;
	}
	int rc = stackfold_pack_image(l->dirfd, l->stacks_fd, r->pid, r->gen);
	return rc < 0 ? rc : 0;
}

/* Append record i to the fold file, then unmap it and empty its file;
 * its stacks file goes into stacks.fold. */
static int live_fold_one(struct live *l, size_t i)
{
	struct live_rec *r = &l->recs[i];
	static unsigned char buf[FOLD_MAX_ENTRY];
	struct mt_record rec;
	int rc = live_read_final(l, i, &rec);
	if (rc < 0)
		return 0; /* not a record to keep: it stays as it is, untrusted */
	/* the stacks first: a record found folded has its stacks folded */
	if ((rc = live_pack_stacks(l, r)) < 0)
		return rc;
	size_t n = fold_entry(&rec, buf);
	ssize_t w = write(l->fold_fd, buf, n);
	if (w != (ssize_t)n) {
		int err = w < 0 ? -errno : -ENOSPC;
		if (w > 0 && ftruncate(l->fold_fd, l->fold_end) == 0) {
			/* the torn entry is cut back: the file stays readable */
		}
		return err;
	}
	r->fold_off = (int64_t)l->fold_end;
	/* its life stays known to the children it believes (live_span) */
	r->start_ns = rec.start_mono_ns;
	r->end_ns = rec.end_mono_ns;
	l->fold_end += (off_t)n;
	l->nfolded++;
	munmap((void *)r->map, MT_RECORD_SIZE);
	r->map = NULL;
	/* empty, not removed: the name keeps its generation taken */
	int fd = openat(l->dirfd, r->name, O_WRONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
	if (fd >= 0) {
		if (ftruncate(fd, 0) != 0) {
			/* a file we cannot empty keeps its bytes: only space lost */
		}
		close(fd);
	}
	return 0;
}

int live_fold_ended(struct live *l)
{
	if (l->fold_fd < 0)
		return 0;
	if (live_nfaults)
		live_take_faults(l);
	for (size_t k = 0; k < l->nactive;) {
		size_t i = l->active[k];
		struct live_rec *r = &l->recs[i];
		if (!r->map || r->error) { /* unmapped since (a fault) */
			l->active[k] = l->active[--l->nactive];
			continue;
		}
		if (!r->believed || !live_record_ended(l, r)) {
			k++;
			continue;
		}
		int rc = live_fold_one(l, i);
		if (rc < 0)
			return rc;
		l->active[k] = l->active[--l->nactive];
	}
	return 0;
}

