/* pview.c: per-process poller view (see pview.h).
 *
 * Everything /proc is read here at most a bounded number of times per
 * process (first sight, 3rd sample, one inspection per image without a
 * record) or per tree peak (smaps_rollup + status, rate-limited); the
 * per-sample path only does hash lookups and atomic loads of the mapped
 * records, and allocates only when a table grows. */
#include "collect/pview.h"
#include "base/procfs.h"
#include "base/grow.h"
#include "invariant.h"
#include "base/pidmap.h"
#include "base/clock.h"
#include "base/debug.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define NS_PER_MS 1000000ull

/* pid -> the index of its process in procs[] (a pidmap entry) */
struct pview_index {
	pid_t pid;
	size_t idx;
};

struct pview {
	const char *root;
	int tracing;
	struct pview_proc **procs;
	size_t n, cap;
	struct pidmap index;            /* struct pview_index */
	struct pview_peak_member *cur;  /* this sample's members */
	size_t ncur, cur_cap;
	struct pview_peak peak;
	size_t peak_cap;
	struct pview_peak_member *prev; /* scratch for carrying smaps over */
	size_t prev_cap;
	uint64_t look_ns;               /* a sample's look budget (pview.h) */
	const char *ksm_path;           /* KSM's run switch (pview.h) */
	uint64_t nsamples;              /* pview_sample() calls */
	uint64_t joins;                 /* members that were not in the sample
					   before: new processes, or pids back
					   after a gap (pview.h, "Pss without
					   the walk") */
	unsigned rollups, derived;      /* smaps_rollup reads; Pss from status */
	int records_known;              /* the records directory's owner: */
	uid_t records_uid;
	gid_t records_gid;
	mode_t records_mode;
	int self_levels;                /* memsup's own NSpid levels; 0 unknown */
};

static struct pview_proc *proc_of(const struct pview *pv, pid_t pid)
{
	const struct pview_index *e = pidmap_find(&pv->index, pid);
	return e ? pv->procs[e->idx] : NULL;
}

void pview_set_records_owner(struct pview *pv, uid_t uid, gid_t gid, mode_t mode)
{
	pv->records_known = 1;
	pv->records_uid = uid;
	pv->records_gid = gid;
	pv->records_mode = mode;
}

/* Whether a process with these ids may create a file in the records
 * directory, by its permission bits (root may, whatever they say; its
 * supplementary groups are not read: a group that may write but is not
 * its effective one is missed, and the process is then said to be another
 * user's when it may have failed for another reason). */
static int records_writable_by(const struct pview *pv, uint64_t euid, uint64_t egid)
{
	if (!pv->records_known || euid == 0)
		return 1;
	if (euid == pv->records_uid)
		return (pv->records_mode & S_IWUSR) && (pv->records_mode & S_IXUSR);
	if (egid == pv->records_gid)
		return (pv->records_mode & S_IWGRP) && (pv->records_mode & S_IXGRP);
	return (pv->records_mode & S_IWOTH) && (pv->records_mode & S_IXOTH);
}

int pview_open(struct pview **out, const char *proc_root, int tracing)
{
	struct pview *pv = calloc(1, sizeof *pv);
	if (!pv)
		return -ENOMEM;
	pv->root = proc_root ? proc_root : "/proc";
	pv->tracing = tracing;
	pv->look_ns = PVIEW_LOOK_BUDGET_MS * NS_PER_MS;
	pv->ksm_path = PVIEW_KSM_RUN;
	struct procfs_status self;
	if (procfs_read_status(pv->root, getpid(), &self) == 0 && (self.have & PROCFS_HAVE_NSPID))
		pv->self_levels = (int)self.nspid_levels;
	pidmap_init(&pv->index, sizeof(struct pview_index));
	*out = pv;
	return 0;
}

void pview_set_look_budget(struct pview *pv, unsigned ms)
{
	pv->look_ns = (uint64_t)ms * NS_PER_MS;
}

void pview_set_ksm_path(struct pview *pv, const char *path)
{
	pv->ksm_path = path;
}

void pview_close(struct pview *pv)
{
	if (!pv)
		return;
	if (memsup_debug_on())
		dprintf(2, "memsup: debug: pview: %u smaps_rollup reads, %u Pss from status\n",
			pv->rollups, pv->derived);
	for (size_t i = 0; i < pv->n; i++) {
		struct pview_proc *p = pv->procs[i];
		for (size_t j = 0; j < p->nimgs; j++) {
			free(p->imgs[j].argv);
			free(p->imgs[j].exe);
		}
		free(p->imgs);
		free(p->argv);
		free(p->exe);
		free(p);
	}
	free(pv->procs);
	pidmap_free(&pv->index);
	free(pv->cur);
	free(pv->peak.m);
	free(pv->prev);
	free(pv);
}

/* /proc/PID/exe into buf (cap bytes, terminated); its length, or -1. */
static ssize_t read_exe(const struct pview *pv, pid_t pid, char *buf, size_t cap)
{
	char path[64];
	snprintf(path, sizeof path, "%s/%d/exe", pv->root, (int)pid);
	ssize_t n = readlink(path, buf, cap - 1);
	if (n >= 0)
		buf[n] = '\0';
	return n;
}

/* argv and exe of pid's current image.  An exec between the two reads
 * would pair the old argv with the new exe (a fork child read as its
 * parent's argv and its own static binary), so exe is read on both sides
 * of argv, and argv again when the exec fell between them. */
static void read_identity(const struct pview *pv, pid_t pid, char **argv, size_t *argv_len,
			  char **exe)
{
	char buf[PROCFS_ARGV_BYTES], before[PATH_MAX], after[PATH_MAX];
	size_t len = 0;
	char *a;
	ssize_t nb = read_exe(pv, pid, before, sizeof before);
	int rc = procfs_read_argv(pv->root, pid, buf, &len);
	ssize_t na = read_exe(pv, pid, after, sizeof after);
	int execed = na > 0 && (nb != na || strcmp(before, after) != 0 ||
				(*exe && strcmp(*exe, after) != 0));
	if (execed && (nb != na || strcmp(before, after) != 0))
		rc = procfs_read_argv(pv->root, pid, buf, &len); /* the new image's */
	if (rc == 0 && len && (a = malloc(len))) {
		memcpy(a, buf, len);
		free(*argv);
		*argv = a;
		*argv_len = len;
	} else if (execed) {
		/* read empty in the middle of the exec: the argv kept from an
		 * earlier look is the old image's (a posix_spawn child seen in
		 * its parent's image), not this one's.  None, so that the
		 * caller reads it again while the image runs. */
		free(*argv);
		*argv = NULL;
		*argv_len = 0;
	}
	if (na > 0) {
		char *e = strdup(after);
		if (e) {
			free(*exe);
			*exe = e;
		}
	}
}

/* `named`: a record names this image already (argv, exe): do not read
 * them from /proc, which costs two opens per process. */
static struct pview_proc *first_sight(struct pview *pv, pid_t pid, int named)
{
	if (pv->n == pv->cap) {
		size_t nc = pv->cap ? pv->cap * 2 : 64;
		struct pview_proc **np = realloc(pv->procs, nc * sizeof *np);
		if (!np)
			return NULL;
		pv->procs = np;
		pv->cap = nc;
	}
	struct pview_proc *p = calloc(1, sizeof *p);
	struct pview_index *e = p ? pidmap_add(&pv->index, pid, NULL) : NULL;
	if (!e) {
		free(p);
		return NULL;
	}
	e->idx = pv->n;
	pv->procs[pv->n++] = p;
	/* one index entry per process, and room in procs[] for it */
	MT_ASSERT(pv->index.used == pv->n && pv->n <= pv->cap);
	p->pid = pid;
	struct procfs_stat st;
	if (procfs_read_stat(pv->root, pid, &st) == 0) {
		p->ppid = st.ppid;
		p->sid = st.session;
	}
	if (!named)
		read_identity(pv, pid, &p->argv, &p->argv_len, &p->exe);
	return p;
}

static struct pview_img *img_of(struct pview_proc *p, uint32_t gen)
{
	for (size_t i = 0; i < p->nimgs; i++)
		if (p->imgs[i].gen == gen)
			return &p->imgs[i];
	struct pview_img *ni = realloc(p->imgs, (p->nimgs + 1) * sizeof *ni);
	if (!ni)
		return NULL;
	p->imgs = ni;
	struct pview_img *m = &ni[p->nimgs++];
	memset(m, 0, sizeof *m);
	m->gen = gen;
	return m;
}

/* Is pid still running the image of record `prev` (same exe, same argv)?
 * The shim marks an image EXECED just before execve(2), and the exec takes
 * a while: /proc still shows the old image meanwhile (exec_not_done gives
 * such readings to it; inspect() waits for the new one). */
static int still_previous(const struct pview *pv, pid_t pid, const struct mt_record *prev)
{
	char buf[MT_ARGV_BYTES + 1], exe[MT_EXE_BYTES];
	size_t len;
	uint32_t n = __atomic_load_n(&prev->argv_bytes, __ATOMIC_RELAXED);
	if (n > MT_ARGV_BYTES)
		return 0;
	if (n && prev->argv[n - 1] == '\0')
		n--;
	if (procfs_read_cmdline(pv->root, pid, buf, sizeof buf, &len) < 0 || len != n ||
	    memcmp(buf, prev->argv, n) != 0)
		return 0;
	return read_exe(pv, pid, exe, sizeof exe) >= 0 && strncmp(exe, prev->exe, sizeof exe) == 0;
}

/* How long after an image's exec mark a sample may still find its old
 * memory: the exec itself, on a loaded machine. */
#define EXEC_PENDING_NS (2000 * NS_PER_MS)

/* statm's text of image gen of pid, from a reading surely of that image;
 * 0 when there was none. */
static uint64_t known_text(const struct pview *pv, pid_t pid, uint32_t gen)
{
	const struct pview_proc *p = proc_of(pv, pid);
	for (size_t i = 0; p && i < p->nimgs; i++)
		if (p->imgs[i].gen == gen)
			return p->imgs[i].text_pages;
	return 0;
}

/* Was a reading between t_ns and read_end_ns surely of the image of record
 * r: started before it, and no exec marked before it ended? */
static int surely_of(const struct mt_record *r, uint64_t t_ns, uint64_t read_end_ns)
{
	if (live_load(&r->start_mono_ns) > t_ns)
		return 0;
	uint64_t end = live_load(&r->end_mono_ns);
	return live_state(r) != MT_STATE_EXECED || (end && end > read_end_ns);
}

/* live_image_at() names image gen when gen-1 marked its exec before the
 * sample began; but the shim marks it just before execve(2), and until the
 * kernel replaces the memory (long, when the process is descheduled) the
 * reading was of gen-1's.  While gen has not started, the reading's own
 * text pages say which memory it was: the old image's (known from an
 * earlier reading surely its own) or not.  Without them, ask /proc: the
 * old image still there after the reading was there during it.  Returns
 * the record of the image the reading saw, *gen updated. */
static const struct live_rec *exec_not_done(const struct pview *pv, const struct live *live,
					    pid_t pid, uint64_t t_ns, uint64_t text_pages,
					    const struct live_rec *rec, uint32_t *gen)
{
	if (rec && rec->map && live_load(&rec->map->start_mono_ns) <= t_ns)
		return rec; /* its constructor ran before the reading: exec done */
	const struct live_rec *prev = live_find(live, pid, *gen - 1);
	if (!prev || !prev->map || prev->error || live_state(prev->map) != MT_STATE_EXECED)
		return rec;
	uint64_t end = live_load(&prev->map->end_mono_ns);
	if (!end || end > t_ns || t_ns - end > EXEC_PENDING_NS)
		return rec;
	/* /proc after the reading cannot tell a reading of the old memory
	 * from one of the new when the exec finished in between (it did, in
	 * a sanitizer build under load: the new `sleep` got its parent's
	 * 60 MB); the text pages, read with the RSS, can */
	uint64_t old_text = known_text(pv, pid, *gen - 1);
	if (old_text ? text_pages != old_text : !still_previous(pv, pid, prev->map))
		return rec;
	*gen -= 1;
	return prev;
}

/* The other way round: live_image_at() names the image current when the
 * sample began, but one that marked its exec during the sample may have
 * been replaced before memsup read its pid.  The reading's text pages,
 * when they are not that image's, say so: the reading was of the next. */
static const struct live_rec *exec_done_early(const struct pview *pv, const struct live *live,
					      pid_t pid, uint64_t t_ns, uint64_t read_end_ns,
					      uint64_t text_pages, const struct live_rec *rec,
					      uint32_t *gen)
{
	if (!rec || !rec->map || live_state(rec->map) != MT_STATE_EXECED)
		return rec;
	uint64_t end = live_load(&rec->map->end_mono_ns);
	if (!end || end <= t_ns || end > read_end_ns)
		return rec; /* no exec marked during the sample */
	uint64_t old_text = known_text(pv, pid, *gen);
	if (!old_text || text_pages == old_text)
		return rec;
	*gen += 1;
	const struct live_rec *next = live_find(live, pid, *gen);
	return next && next->map && !next->error ? next : NULL;
}

/* Why has this live image no record?  Looked at while it runs, once when
 * the answer is conclusive:
 * static executables never load the shim, the loader drops LD_PRELOAD for
 * setuid/setgid programs, and a scrubbed environment simply lacks it. */
static void inspect(const struct pview *pv, const struct live *live, pid_t pid,
		    struct pview_img *img)
{
	char path[64];
	unsigned char elf[4096];
	struct procfs_status ps;
	if (img->gen > 0 && live && img->inspect_tries < 50) {
		const struct live_rec *prev = live_find(live, pid, img->gen - 1);
		if (prev && prev->map && !prev->error && still_previous(pv, pid, prev->map)) {
			img->inspect_tries++; /* again at the next sample */
			return;
		}
	}
	img->inspected = 1;
	img->why = UNTRACED_UNKNOWN;
	read_identity(pv, pid, &img->argv, &img->argv_len, &img->exe);
	/* status is readable whoever runs the process; its exe and environ
	 * are not when it runs setuid to someone else (ptrace access) */
	int have_ids = procfs_read_status(pv->root, pid, &ps) == 0 && (ps.have & PROCFS_HAVE_IDS);
	if (have_ids && (ps.ruid != ps.euid || ps.rgid != ps.egid)) {
		img->why = UNTRACED_SECURE;
		return;
	}
	snprintf(path, sizeof path, "%s/%d/exe", pv->root, (int)pid);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd >= 0) {
		struct stat st;
		ssize_t n = pread(fd, elf, sizeof elf, 0);
		if (n > 0 && procfs_parse_elf_interp(elf, (size_t)n) == 0)
			img->why = UNTRACED_STATIC;
		else if (fstat(fd, &st) == 0 && (st.st_mode & (S_ISUID | S_ISGID)))
			img->why = UNTRACED_SECURE;
		close(fd);
		if (img->why != UNTRACED_UNKNOWN) {
			/* the exec may have fallen between the name read above
			 * and this open (a posix_spawn child named as its
			 * parent, judged as its own static binary: seen under
			 * load): the name of the image judged, then */
			char now[PATH_MAX];
			if (read_exe(pv, pid, now, sizeof now) > 0 &&
			    (!img->exe || strcmp(now, img->exe) != 0))
				read_identity(pv, pid, &img->argv, &img->argv_len, &img->exe);
			return;
		}
	}
	int env = procfs_environ_has(pv->root, pid, "LD_PRELOAD", "libmemtrace");
	/* Empty: a process started with no environment (env -i), or an exec
	 * in progress (its new memory in place, its arguments and environment
	 * not yet: seen in a command that dropped to another user), whose
	 * cmdline reads empty too.  That one is looked at again. */
	if (env == -ENODATA && img->inspect_tries < 50) {
		static char argv[PROCFS_ARGV_BYTES];
		size_t alen = 0;
		if (procfs_read_argv(pv->root, pid, argv, &alen) == 0 && alen == 0) {
			img->inspect_tries++;
			img->inspected = 0;
			return;
		}
	}
	if (env == 0 || env == -ENODATA)
		img->why = UNTRACED_NO_PRELOAD;
	else if (have_ids && pv->self_levels > 0 && (ps.have & PROCFS_HAVE_NSPID) &&
		 (int)ps.nspid_levels > pv->self_levels)
		/* its shim named its record by its pid in its own namespace
		 * (live.c: BELIEF_OTHER_NS) */
		img->why = UNTRACED_PID_NAMESPACE;
	else if (have_ids && !records_writable_by(pv, ps.euid, ps.egid)) {
		/* the shim ran, and its record file could not be created:
		 * EACCES in the records directory, whose owner is memsup's */
		img->why = UNTRACED_OTHER_USER;
		img->uid = (int64_t)ps.euid;
	}
	/* Nothing conclusive: maybe a vfork/posix_spawn child still in the
	 * parent's image, between clone and exec (long on a loaded machine),
	 * whose record-less exec has not happened yet.  Look again later. */
	if (img->why == UNTRACED_UNKNOWN && img->inspect_tries < 50) {
		img->inspect_tries++;
		img->inspected = 0;
	}
}

/* Do two RSS readings of one process describe the same moment? */
static int rss_agree(uint64_t a, uint64_t b)
{
	uint64_t d = a > b ? a - b : b - a, big = a > b ? a : b;
	return d <= PVIEW_SMAPS_AGREE_BYTES || d * 100 <= big * PVIEW_SMAPS_AGREE_PCT;
}

/* Is KSM merging pages?  1 when its switch says anything but 0 or cannot
 * be read; 0 when it says 0, or is absent (a kernel without KSM). */
static int ksm_running(const struct pview *pv)
{
	char buf[16];
	int fd = open(pv->ksm_path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return errno != ENOENT;
	ssize_t n = read(fd, buf, sizeof buf);
	close(fd);
	return !(n >= 1 && buf[0] == '0' && (n == 1 || buf[1] == '\n'));
}

/* Whether p's last rollup still stands for image `gen`: it found every
 * anonymous page mapped once, and no process joined the tree since
 * (pview.h, "Pss without the walk"). */
static int basis_holds(const struct pview *pv, const struct pview_proc *p, uint32_t gen)
{
	return p && p->basis_alone && p->basis_gen == gen && p->basis_joins == pv->joins;
}

/* A Pss for m from its status alone, where its last rollup allows it
 * (pview.h, "Pss without the walk").  1: m has its figures; 0: read its
 * smaps_rollup; -1: no figures now (its status says it no longer holds
 * the RSS of its peak sample, so a rollup would not either).  *ksm: -1
 * until looked at in this pass. */
static int derive_pss(struct pview *pv, struct pview_peak_member *m, struct pview_proc *p,
		      int *ksm)
{
	struct procfs_status st;
	if (!basis_holds(pv, p, m->gen))
		return 0;
	if (*ksm < 0)
		*ksm = ksm_running(pv);
	if (*ksm || procfs_read_status(pv->root, m->pid, &st) < 0 ||
	    (st.have & (PROCFS_HAVE_RSS_PARTS | PROCFS_HAVE_SWAP)) !=
		    (PROCFS_HAVE_RSS_PARTS | PROCFS_HAVE_SWAP))
		return 0;
	uint64_t anon = st.rss_anon_kb * 1024, file = st.rss_file_kb * 1024;
	uint64_t shmem = st.rss_shmem_kb * 1024, shared = file + shmem;
	if (!rss_agree(anon + shared, m->rss))
		return -1;
	/* swapped since: its entries are its own (a page swapped after the
	 * basis was mapped once), but the rollup's Swap also counts shmem's,
	 * which status does not: read it */
	if (st.vm_swap_kb || (shared > PVIEW_SMAPS_AGREE_BYTES &&
			      shared * 100 > (anon + shared) * PVIEW_DERIVE_FILE_PCT))
		return 0;
	/* of the peak sample's moment, not this read's: its resident pages
	 * then, less the file and shared memory now (which moves little: it
	 * is within the bound above), are its anonymous pages then, each
	 * mapped once */
	if (m->rss > shared)
		anon = m->rss - shared;
	m->have_smaps = 1;
	m->carried = 0;
	m->derived = 1;
	m->pss = anon + (p->basis_pss_fs < shared ? p->basis_pss_fs : shared);
	/* a derived Pss never exceeds the resident pages it is of */
	MT_ASSERT(m->pss <= anon + shared);
	m->swap = 0;
	m->anon = anon;
	m->file = file;
	m->shmem = shmem;
	if (st.have & PROCFS_HAVE_HWM) {
		p->hwm_kb = st.vm_hwm_kb;
		p->hwm_gen = m->gen;
	}
	pv->derived++;
	return 1;
}

/* smaps_rollup and status of the members of the peak (only those still
 * without figures, or with carried ones, when `only_missing`), accepted
 * only while a member's RSS agrees with its RSS at the peak, until `until`
 * (smaps_rollup waits for the memory map lock, as cmdline does); a carried
 * member whose read fails keeps its figures.  Bytes.  Returns 1 when every
 * member then has figures. */
static int read_smaps(struct pview *pv, int only_missing, uint64_t until, int *walked)
{
	int all = 1, ksm = -1;
	*walked = 0;
	for (size_t i = 0; i < pv->peak.n; i++) {
		struct pview_peak_member *m = &pv->peak.m[i];
		struct procfs_rollup ru;
		struct procfs_status st;
		if (only_missing && m->have_smaps && !m->carried)
			continue;
		int keep = only_missing && m->have_smaps;
		if (!keep)
			m->have_smaps = m->carried = 0;
		if (clock_mono_ns() > until) {
			all &= keep;
			continue;
		}
		struct pview_proc *p = proc_of(pv, m->pid);
		int d = derive_pss(pv, m, p, &ksm);
		if (d != 0) {
			all &= d > 0 || keep;
			continue;
		}
		pv->rollups++;
		*walked = 1;
		if (procfs_read_rollup(pv->root, m->pid, &ru) < 0 ||
		    procfs_read_status(pv->root, m->pid, &st) < 0 ||
		    !(st.have & PROCFS_HAVE_RSS_PARTS) || !rss_agree(ru.rss_kb * 1024, m->rss)) {
			all &= keep;
			continue;
		}
		m->have_smaps = 1;
		m->carried = 0;
		m->derived = 0;
		m->pss = ru.pss_kb * 1024;
		m->swap = ru.swap_kb * 1024;
		m->anon = st.rss_anon_kb * 1024;
		m->file = st.rss_file_kb * 1024;
		m->shmem = st.rss_shmem_kb * 1024;
		if (!p)
			continue;
		if (st.have & PROCFS_HAVE_HWM) {
			p->hwm_kb = st.vm_hwm_kb;
			p->hwm_gen = m->gen;
		}
		/* the basis of its next Pss from status: every anonymous page
		 * mapped once (Pss_Anon == Anonymous, both from this walk) and
		 * no swap entry that a fork relative might share */
		uint64_t pss_anon = ru.pss_anon_kb;
		p->basis_alone = (ru.have & PROCFS_ROLLUP_PSS_PARTS) && (ru.have & PROCFS_ROLLUP_ANON) &&
				 (ru.have & PROCFS_ROLLUP_SWAP) && pss_anon == ru.anon_kb &&
				 !ru.swap_kb && pss_anon <= ru.pss_kb;
		p->basis_gen = m->gen;
		p->basis_joins = pv->joins;
		p->basis_pss_fs = p->basis_alone ? (ru.pss_kb - pss_anon) * 1024 : 0;
	}
	return all;
}

/* After a pass of read_smaps: does every member still hold the memory its
 * peak sample read?  A member that exited during the pass (its memory
 * released, no VmRSS in its status) changed the Pss of everyone sharing
 * pages with it, between one member's reading and the next: the pass
 * mixes two moments (readers of a shared 300 MB leaving one by one: 353
 * MB of Pss for 302 held).  One that holds it still after the pass held
 * it throughout. */
static int still_whole(const struct pview *pv)
{
	for (size_t i = 0; i < pv->peak.n; i++) {
		const struct pview_peak_member *m = &pv->peak.m[i];
		struct procfs_status st;
		if (procfs_read_status(pv->root, m->pid, &st) < 0 ||
		    !(st.have & PROCFS_HAVE_RSS_PARTS) ||
		    !rss_agree((st.rss_anon_kb + st.rss_file_kb + st.rss_shmem_kb) * 1024, m->rss))
			return 0;
	}
	return 1;
}

static int any_carried(const struct pview_peak *pk)
{
	for (size_t i = 0; i < pk->n; i++)
		if (pk->m[i].have_smaps && pk->m[i].carried)
			return 1;
	return 0;
}

/* Fill the members that have no smaps figures from the previous peak
 * snapshot (same pid).  Returns 1 when every member then has figures. */
static int carry_smaps(struct pview *pv, size_t oldn)
{
	struct pview_peak *pk = &pv->peak;
	int all = 1;
	for (size_t i = 0; i < pk->n; i++) {
		struct pview_peak_member *m = &pk->m[i];
		if (m->have_smaps)
			continue;
		size_t j;
		/* carried only from a reading of the same process at about
		 * the same size: figures of another moment are not this one's */
		for (j = 0; j < oldn; j++)
			if (pv->prev[j].pid == m->pid && pv->prev[j].have_smaps &&
			    rss_agree(pv->prev[j].rss, m->rss))
				break;
		if (j == oldn) {
			all = 0;
			continue;
		}
		const struct pview_peak_member *o = &pv->prev[j];
		m->have_smaps = 1;
		m->carried = 1;
		m->derived = o->derived;
		m->pss = o->pss;
		m->anon = o->anon;
		m->file = o->file;
		m->shmem = o->shmem;
		m->swap = o->swap;
		/* a Pss from status of a process whose anonymous pages are
		 * still its own alone (pview.h) moves with its anonymous
		 * pages: those of this sample are its resident pages less the
		 * file and shared memory of that reading (a few percent at
		 * most, read again when the figures are refreshed) */
		const struct pview_proc *p = proc_of(pv, m->pid);
		uint64_t shared = o->file + o->shmem;
		if (o->derived && o->gen == m->gen && basis_holds(pv, p, m->gen) &&
		    m->rss > shared && o->pss >= o->anon) {
			m->anon = m->rss - shared;
			m->pss = m->anon + (o->pss - o->anon);
		}
	}
	return all;
}

/* The sample is a new tree peak: keep its members; read smaps when the
 * bound allows (or the last read was incomplete), else carry the last
 * figures of the same pids over.  A member whose read fails (it exited
 * between the sample and the read) keeps its last figures too. */
static void note_peak(struct pview *pv, uint64_t t_ns, uint64_t tree_rss,
		      struct pview_sums *s)
{
	struct pview_peak *pk = &pv->peak;
	size_t oldn = pk->n;
	if (grow_array((void **)&pv->prev, &pv->prev_cap, oldn, sizeof *pv->prev) < 0 ||
	    grow_array((void **)&pk->m, &pv->peak_cap, pv->ncur, sizeof *pk->m) < 0)
		return;
	if (oldn)
		memcpy(pv->prev, pk->m, oldn * sizeof *pk->m);
	if (pv->ncur)
		memcpy(pk->m, pv->cur, pv->ncur * sizeof *pk->m);
	pk->n = pv->ncur;
	pk->t_ns = t_ns;
	pk->rss = tree_rss;
	pk->heap = s->heap;
	pk->map_anon = s->map_anon;
	pk->map_file = s->map_file;
	uint64_t since = t_ns - pk->smaps_ns;
	int due = !pk->smaps_ns || since >= PVIEW_SMAPS_MIN_MS * NS_PER_MS ||
		  (!pk->have_smaps && since >= PVIEW_SMAPS_RETRY_MS * NS_PER_MS) ||
		  tree_rss * 100 >= pk->smaps_rss * (100 + PVIEW_SMAPS_GROWTH_PCT);
	if (due) {
		/* a peak's reads get a budget of their own, larger: every
		 * member, where a sample looks only at the newcomers */
		int walked;
		int all = read_smaps(pv, 0, clock_mono_ns() + 4 * pv->look_ns, &walked);
		/* a pass of figures from status alone does not mix moments:
		 * each is of pages no other process maps, bar the bounded
		 * file part */
		if (walked && !still_whole(pv)) {
			/* none of this pass stands: the last figures carry
			 * over where they may, and the next sample tries */
			for (size_t i = 0; i < pk->n; i++)
				pk->m[i].have_smaps = pk->m[i].carried = 0;
			all = 0;
		}
		pk->smaps_ns = t_ns;
		pk->smaps_rss = tree_rss;
		if (all) {
			s->have_pss = 1;
			s->pss = 0;
			for (size_t i = 0; i < pk->n; i++)
				s->pss += pk->m[i].pss;
		}
	}
	/* carried over: the figures of a peak sample less than the bound ago
	 * and within the growth margin of this one */
	pk->have_smaps = carry_smaps(pv, oldn);
	pk->carried = any_carried(pk);
}

/* Not a new peak, but the peak still lacks some member's figures (its
 * read was rate-limited, or missed a process that was still growing), or
 * holds carried ones, and the tree holds about the peak again: read those
 * members now, each accepted only if its RSS agrees with its RSS at the
 * peak (the rule that carrying follows).  Without it, a tree that reaches
 * its peak just after a read and then plateaus had no Pss at its peak at
 * all; and a carried Pss can be of another sharing (three readers of a
 * parent's 300 MB: the parent's Pss carried from when one had read a
 * third made the peak's Pss 353 MB, not 302). */
static void complete_peak(struct pview *pv, uint64_t t_ns, uint64_t tree_rss)
{
	struct pview_peak *pk = &pv->peak;
	uint64_t since = t_ns - pk->smaps_ns;
	/* missing figures are retried soon; carried ones are refreshed no
	 * more often than a creeping peak's are read (note_peak): a peak
	 * that creeps up by a page at a time (sort writing its output) would
	 * otherwise have its smaps read every PVIEW_SMAPS_RETRY_MS */
	if (!pk->n || !rss_agree(tree_rss, pk->rss) ||
	    (pk->have_smaps && (!pk->carried || since < PVIEW_SMAPS_MIN_MS * NS_PER_MS)) ||
	    since < PVIEW_SMAPS_RETRY_MS * NS_PER_MS)
		return;
	pk->smaps_ns = t_ns;
	/* the figures before the pass, back if it mixed two moments */
	if (grow_array((void **)&pv->prev, &pv->prev_cap, pk->n, sizeof *pv->prev) < 0)
		return;
	memcpy(pv->prev, pk->m, pk->n * sizeof *pk->m);
	/* the same budget as a new peak's reads */
	int walked;
	pk->have_smaps = read_smaps(pv, 1, clock_mono_ns() + 4 * pv->look_ns, &walked);
	if (walked && !still_whole(pv)) {
		memcpy(pk->m, pv->prev, pk->n * sizeof *pk->m);
		pk->have_smaps = 1;
		for (size_t i = 0; i < pk->n; i++)
			pk->have_smaps &= pk->m[i].have_smaps;
	}
	pk->carried = any_carried(pk);
}

void pview_sample(struct pview *pv, const struct live *live, uint64_t t_ns, uint64_t read_end_ns,
		  const struct tree_member *mem, size_t n, int new_peak, uint64_t tree_rss,
		  struct pview_sums *out)
{
	memset(out, 0, sizeof *out);
	if (grow_array((void **)&pv->cur, &pv->cur_cap, n, sizeof *pv->cur) < 0)
		n = pv->cur_cap < n ? pv->cur_cap : n;
	pv->ncur = 0;
	pv->nsamples++;
	uint64_t look_until = clock_mono_ns() + pv->look_ns;
	for (size_t i = 0; i < n; i++) {
		pid_t pid = mem[i].pid;
		uint32_t gen = 0;
		/* the image current when the reading began; for a pid that had
		 * none then, one that started while memsup read (its memory
		 * is in the reading).  Not simply the image of the reading's
		 * end: a fork child that exec'd meanwhile was read before its
		 * exec, as the image it was (fork_before_exec). */
		const struct live_rec *rec = live ? live_image_at(live, pid, t_ns, &gen) : NULL;
		if (!rec && live && !gen)
			rec = live_image_at(live, pid, read_end_ns, &gen);
		if (live && gen > 0)
			rec = exec_not_done(pv, live, pid, t_ns, mem[i].text_pages, rec, &gen);
		if (live)
			rec = exec_done_early(pv, live, pid, t_ns, read_end_ns, mem[i].text_pages,
					      rec, &gen);
		struct pview_proc *p = proc_of(pv, pid);
		/* a process that was not in the last sample may be a fork child
		 * sharing another member's anonymous pages: no Pss from status
		 * until their next rollups (pview.h) -- counted even when its
		 * first look waits for the next sample */
		if (!p || p->last_sample + 1 != pv->nsamples)
			pv->joins++;
		/* a newcomer past the budget waits for the next sample */
		if (!p && (clock_mono_ns() > look_until || !(p = first_sight(pv, pid, rec != NULL))))
			continue;
		p->last_sample = pv->nsamples;
		p->samples++;
		if (p->samples == 3) {
			/* a child that calls setsid() right after fork is often
			 * first seen before it did */
			struct procfs_stat st;
			if (procfs_read_stat(pv->root, pid, &st) == 0)
				p->sid = st.session;
		}
		struct pview_img *img = img_of(p, gen);
		if (!img)
			continue;
		if (!img->samples++)
			img->first_ns = t_ns;
		img->last_ns = t_ns;
		/* learnt once: an image's text does not change */
		if (!img->text_pages && rec && rec->map && mem[i].text_pages &&
		    surely_of(rec->map, t_ns, read_end_ns))
			img->text_pages = mem[i].text_pages;
		if (mem[i].rss > img->peak_rss || img->samples == 1) {
			img->peak_rss = mem[i].rss;
			img->peak_ns = t_ns;
		}
		/* at most one entry per member, in the room grown for n */
		MT_ASSERT(pv->ncur < n && n <= pv->cur_cap);
		struct pview_peak_member *c = &pv->cur[pv->ncur++];
		memset(c, 0, sizeof *c);
		c->pid = pid;
		c->gen = gen;
		c->rss = mem[i].rss;
		if (rec) {
			const struct mt_record *r = rec->map;
			out->traced++;
			/* Whatever its state: an image that ran its exit hook
			 * (or marked its exec) still holds its heap until the
			 * kernel takes its memory away, and this reading is of
			 * that memory.  Counting running records only put a
			 * leaving child's RSS in a sample without its heap (a
			 * tree RSS peak at 95 MB "with 60 MB of heap", when
			 * 90 MB were live). */
			{
				uint64_t h = live_heap_current(r);
				uint64_t a = live_load(&r->map_anon_current);
				uint64_t f = live_load(&r->map_file_current);
				out->heap += h;
				out->map_anon += a;
				out->map_file += f;
				c->heap = h;
				c->map = a + f;
				c->heap_counted = 1;
			}
		} else if (!img->inspected) {
			if (!pv->tracing) {
				img->inspected = 1;
				img->why = UNTRACED_NOT_REQUESTED;
			} else if ((!live || !live_find(live, pid, gen)) && clock_mono_ns() <= look_until) {
				/* from its first sample: a short image may have no
				 * second one, and would stay nameless ("?") with no
				 * reason; an inconclusive look is retried (and one
				 * past the look budget waits for the next sample) */
				inspect(pv, live, pid, img);
			}
		} else if (!img->argv && img->inspect_tries < 50) {
			/* inspected, but its cmdline read empty: caught in the
			 * middle of its exec (the old mm gone, the new one not
			 * yet set up).  Its name, again, while it runs. */
			img->inspect_tries++;
			read_identity(pv, pid, &img->argv, &img->argv_len, &img->exe);
		}
	}
	/* pview_sums: the traced members are among those attributed */
	MT_ASSERT(out->traced <= pv->ncur);
	if (new_peak)
		note_peak(pv, t_ns, tree_rss, out);
	else
		complete_peak(pv, t_ns, tree_rss);
}

size_t pview_current(const struct pview *pv, const struct pview_peak_member **m)
{
	*m = pv->cur;
	return pv->ncur;
}

size_t pview_count(const struct pview *pv)
{
	return pv->n;
}

const struct pview_proc *pview_get(const struct pview *pv, size_t i)
{
	return i < pv->n ? pv->procs[i] : NULL;
}

const struct pview_proc *pview_find(const struct pview *pv, pid_t pid)
{
	return proc_of(pv, pid);
}

const struct pview_peak *pview_peak(const struct pview *pv)
{
	return &pv->peak;
}

void pview_read_counts(const struct pview *pv, unsigned *rollups, unsigned *derived)
{
	*rollups = pv->rollups;
	*derived = pv->derived;
}
