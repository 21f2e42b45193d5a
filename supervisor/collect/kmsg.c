/* kmsg.c: the OOM killer's lines in /dev/kmsg, parsed (pure, no allocation)
 * and read (a non-blocking fd, one record a read, a small table of kills).
 * The line formats and the ambiguities a comm or a cgroup name can add are
 * described in kmsg.h. */
#include "collect/kmsg.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/procfs.h"
#include "invariant.h"

/* ---- small text helpers --------------------------------------------------- */

/* The text [s, e) as a length-counted string. */
struct span {
	const char *s;
	size_t n;
};

#define LIT(s) (s), (sizeof(s) - 1)

static int has_prefix(const char *s, const char *e, const char *p, size_t pn)
{
	return (size_t)(e - s) >= pn && memcmp(s, p, pn) == 0;
}

/* The first needle in [s, e), or NULL. */
static const char *find(const char *s, const char *e, const char *needle, size_t nn)
{
	if (s >= e)
		return NULL;
	return memmem(s, (size_t)(e - s), needle, nn);
}

/* The last needle in [s, e), or NULL. */
static const char *rfind(const char *s, const char *e, const char *needle, size_t nn)
{
	if (s >= e || (size_t)(e - s) < nn)
		return NULL;
	for (const char *p = e - nn;; p--) {
		if (memcmp(p, needle, nn) == 0)
			return p;
		if (p == s)
			return NULL;
	}
}

static int is_digit(char c)
{
	return c >= '0' && c <= '9';
}

static int is_hex(char c)
{
	return is_digit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

/* Digits at *p (no sign, no blank); advances *p past them.  -EINVAL when
 * there is none or the number does not fit. */
static int parse_u64(const char **p, const char *e, uint64_t *out)
{
	const char *s = *p;
	uint64_t v = 0;
	if (s >= e || !is_digit(*s))
		return -EINVAL;
	for (; s < e && is_digit(*s); s++) {
		unsigned d = (unsigned)(*s - '0');
		if (v > (UINT64_MAX - d) / 10)
			return -EINVAL;
		v = v * 10 + d;
	}
	*p = s;
	*out = v;
	return 0;
}

/* An optional '-', then digits, within [lo, hi]. */
static int parse_i64(const char **p, const char *e, int64_t lo, int64_t hi, int64_t *out)
{
	const char *s = *p;
	int neg = s < e && *s == '-';
	uint64_t v;
	if (neg)
		s++;
	if (parse_u64(&s, e, &v) < 0)
		return -EINVAL;
	/* |lo| and hi stay far below 2^63 here: no overflow in the compare */
	if (neg ? v > (uint64_t)(-lo) : v > (uint64_t)hi)
		return -EINVAL;
	*out = neg ? -(int64_t)v : (int64_t)v;
	*p = s;
	return 0;
}

static int parse_pid(const char **p, const char *e, int32_t *pid)
{
	uint64_t v;
	if (parse_u64(p, e, &v) < 0 || v == 0 || v >= KMSG_PID_LIMIT)
		return -EINVAL;
	*pid = (int32_t)v;
	return 0;
}

/* How many bytes the kernel's text had: /dev/kmsg printed each byte it
 * escapes as the four characters "\xNN" (and '\' itself so, so every '\'
 * starts an escape; one that does not is counted as it stands). */
static size_t unescaped_len(const char *s, size_t n)
{
	size_t count = 0;
	for (size_t i = 0; i < n; count++) {
		if (s[i] == '\\' && n - i >= 4 && s[i + 1] == 'x' && is_hex(s[i + 2]) &&
		    is_hex(s[i + 3]))
			i += 4;
		else
			i++;
	}
	return count;
}

/* The span into dst[cap], NUL-terminated; -EINVAL when it does not fit. */
static int copy_exact(char *dst, size_t cap, struct span v)
{
	if (v.n >= cap)
		return -EINVAL;
	memcpy(dst, v.s, v.n);
	dst[v.n] = '\0';
	return 0;
}

/* The same, cut to fit (text that only informs). */
static void copy_cut(char *dst, size_t cap, struct span v)
{
	size_t n = v.n < cap ? v.n : cap - 1;
	memcpy(dst, v.s, n);
	dst[n] = '\0';
}

void kmsg_oom_init(struct kmsg_oom *o)
{
	memset(o, 0, sizeof *o);
	o->uid = -1;
	o->total_vm_kb = o->anon_rss_kb = o->file_rss_kb = UINT64_MAX;
	o->shmem_rss_kb = o->pgtables_kb = UINT64_MAX;
}

/* ---- records ----------------------------------------------------------------- */

int kmsg_parse_record(const char *rec, size_t len, struct kmsg_record *out)
{
	const char *e = rec + len, *p = rec;
	const char *nl = memchr(rec, '\n', len);
	uint64_t pri;
	if (!nl)
		return -EINVAL; /* cut short: its last number may be cut too */
	e = nl;
	if (parse_u64(&p, e, &pri) < 0 || pri > UINT32_MAX || p >= e || *p++ != ',')
		return -EINVAL;
	if (parse_u64(&p, e, &out->seq) < 0 || p >= e || *p++ != ',')
		return -EINVAL;
	if (parse_u64(&p, e, &out->ts_us) < 0 || p >= e || *p != ',')
		return -EINVAL;
	/* the flags, and whatever fields a later kernel adds, up to ';' */
	const char *semi = memchr(p, ';', (size_t)(e - p));
	if (!semi)
		return -EINVAL;
	out->pri = (unsigned)pri;
	out->msg = semi + 1;
	out->msg_len = (size_t)(e - out->msg);
	return 0;
}

/* ---- the summary line -------------------------------------------------------- */

/* Is the cgroup path b the path a or below it?  Both must be paths ('/'
 * first): the kernel prints "(name too long)" or "(error)" in place of a
 * path it cannot give, which is under nothing. */
static int path_under(struct span b, struct span a)
{
	if (a.n == 0 || b.n == 0 || a.s[0] != '/' || b.s[0] != '/')
		return 0;
	if (a.n == 1)
		return 1;
	return b.n >= a.n && memcmp(b.s, a.s, a.n) == 0 && (b.n == a.n || b.s[a.n] == '/');
}

/* Candidates looked at per marker: a real line has one of each; a cgroup
 * named after the markers adds some; this bounds a forged line's cost. */
#define MARKER_TRIES 64

/* ",oom_memcg=A,task_memcg=B" in [s, e), B running to e.  The cpuset name
 * before it and both paths may hold the markers themselves; the reading
 * taken is the first (leftmost A, then leftmost B) in which B is A or
 * below it, as the kernel's victim always is.  Without one, the leftmost
 * markers (the paths may be "(name too long)").  -EINVAL without any. */
static int find_memcg_pair(const char *s, const char *e, struct span *a, struct span *b)
{
	static const char om[] = ",oom_memcg=", tm[] = ",task_memcg=";
	const char *first_a = NULL, *first_m = NULL;
	const char *x = s;
	for (int na = 0; na < MARKER_TRIES && (x = find(x, e, LIT(om))); na++, x++) {
		const char *as = x + sizeof om - 1, *y = as;
		for (int nm = 0; nm < MARKER_TRIES && (y = find(y, e, LIT(tm))); nm++, y++) {
			struct span ta = { as, (size_t)(y - as) };
			struct span tb = { y + sizeof tm - 1, (size_t)(e - (y + sizeof tm - 1)) };
			if (!first_a) {
				first_a = as;
				first_m = y;
			}
			if (path_under(tb, ta)) {
				*a = ta;
				*b = tb;
				return 0;
			}
		}
	}
	if (!first_a)
		return -EINVAL;
	a->s = first_a;
	a->n = (size_t)(first_m - first_a);
	b->s = first_m + sizeof tm - 1;
	b->n = (size_t)(e - b->s);
	return 0;
}

/* ",global_oom,task_memcg=B" in [s, e): the leftmost whose B is a path (a
 * cpuset name, which has no '/', cannot fake one), else the leftmost.
 * 0, or -ENOENT without one. */
static int find_global(const char *s, const char *e, struct span *b)
{
	static const char gm[] = ",global_oom,task_memcg=";
	const char *first = NULL, *x = s;
	for (int n = 0; n < MARKER_TRIES && (x = find(x, e, LIT(gm))); n++, x++) {
		const char *bs = x + sizeof gm - 1;
		if (!first)
			first = bs;
		if (bs < e && *bs == '/') {
			first = bs;
			break;
		}
	}
	if (!first)
		return -ENOENT;
	b->s = first;
	b->n = (size_t)(e - first);
	return 0;
}

/* "oom-kill:constraint=C,nodemask=N,cpuset=S,mems_allowed=M" then
 * ",oom_memcg=A,task_memcg=B" (a memcg OOM) or ",global_oom,task_memcg=B"
 * (any other; neither without CONFIG_MEMCG), then ",task=COMM,pid=P,uid=U".
 * N and M are node lists ("0-3,5"), S a cgroup name: they are skipped. */
static int parse_summary(const char *msg, const char *e, struct kmsg_oom *o)
{
	static const char head[] = "oom-kill:constraint=";
	const char *p = msg;
	if (!has_prefix(p, e, LIT(head)))
		return -EINVAL;
	p += sizeof head - 1;
	const char *c = p;
	while (p < e && ((*p >= 'A' && *p <= 'Z') || *p == '_' || is_digit(*p)))
		p++;
	if (p == c || p >= e || *p != ',' ||
	    copy_exact(o->constraint, sizeof o->constraint, (struct span){ c, (size_t)(p - c) }) < 0)
		return -EINVAL;
	const char *rest = p;

	/* From the right, where the kernel ends the line with numbers: the last
	 * ",pid=" is the real one whatever the comm holds. */
	const char *pm = rfind(rest, e, LIT(",pid="));
	int64_t uid;
	if (!pm)
		return -EINVAL;
	p = pm + 5;
	if (parse_pid(&p, e, &o->pid) < 0 || !has_prefix(p, e, LIT(",uid=")))
		return -EINVAL;
	p += 5;
	/* "%d" of a kuid: a uid above INT32_MAX prints negative; -1 is the
	 * kernel's invalid uid */
	if (parse_i64(&p, e, INT32_MIN, INT32_MAX, &uid) < 0 || p != e)
		return -EINVAL;
	o->uid = (int64_t)(uint32_t)(int32_t)uid;

	/* The comm ends at that ",pid=" and starts after a ",task=" at most 15
	 * bytes before it.  A ",task=" inside the comm lies to the right of
	 * the real one, which is therefore the leftmost that leaves a comm
	 * short enough -- unless the victim's cgroup path itself ends in
	 * ",task=" and a few bytes: the killed line, whose comm has both ends
	 * fixed, sets that right (kmsg_read_new). */
	const char *tk = NULL;
	size_t back = (size_t)(pm - rest) < 6 + 4 * KMSG_COMM_BYTES ? (size_t)(pm - rest)
								   : 6 + 4 * KMSG_COMM_BYTES;
	for (const char *t = pm - back; t + 6 <= pm; t++) {
		if (memcmp(t, ",task=", 6) == 0 &&
		    unescaped_len(t + 6, (size_t)(pm - (t + 6))) <= KMSG_COMM_BYTES) {
			tk = t;
			break;
		}
	}
	if (!tk)
		return -EINVAL;
	struct span comm = { tk + 6, (size_t)(pm - (tk + 6)) };
	MT_ASSERT(comm.n <= 4 * KMSG_COMM_BYTES && comm.n < sizeof o->comm);
	copy_cut(o->comm, sizeof o->comm, comm);

	/* The cgroups, between the constraint and ",task=".  The constraint,
	 * first and free of commas, says which kind of line this is: only a
	 * memcg OOM has an oom_memcg (the kernel prints ",global_oom" for any
	 * other), so a cgroup named ",oom_memcg=..." cannot turn a global OOM
	 * into a limit that fired.  A kernel without memory cgroups prints
	 * neither, and no task_memcg. */
	struct span a = { "", 0 }, b = { "", 0 };
	if (strcmp(o->constraint, "CONSTRAINT_MEMCG") == 0) {
		if (find_memcg_pair(rest, tk, &a, &b) < 0)
			return -EINVAL;
	} else {
		o->global = 1;
		(void)find_global(rest, tk, &b);
	}
	if (copy_exact(o->oom_memcg, sizeof o->oom_memcg, a) < 0 ||
	    copy_exact(o->task_memcg, sizeof o->task_memcg, b) < 0)
		return -EINVAL;
	o->have_summary = 1;
	return 1;
}

int kmsg_parse_summary(const char *msg, size_t len, struct kmsg_oom *o)
{
	kmsg_oom_init(o);
	if (!has_prefix(msg, msg + len, LIT("oom-kill:")))
		return 0;
	int rc = parse_summary(msg, msg + len, o);
	if (rc < 0)
		kmsg_oom_init(o);
	return rc;
}

/* ---- the killed-process line -------------------------------------------------- */

enum {
	HAVE_TOTAL_VM = 1u << 0,
	HAVE_ANON = 1u << 1,
	HAVE_FILE = 1u << 2,
	HAVE_SHMEM = 1u << 3,
	HAVE_PGTABLES = 1u << 4,
	HAVE_UID = 1u << 5,
	HAVE_ADJ = 1u << 6,
};

/* "total-vm:NkB, anon-rss:NkB, file-rss:NkB, shmem-rss:NkB, UID:N
 * pgtables:NkB oom_score_adj:N": KEY:VALUE items split by ", " or " ".
 * Older kernels print a prefix of these (up to file-rss, shmem-rss or
 * UID); an item a later kernel adds is skipped, but every item is KEY:VALUE
 * (an empty one, after a separator at the end, is none), so a line cut
 * mid-item is not taken for an older one. */
static int parse_killed_tail(const char *p, const char *e, struct kmsg_oom *o)
{
	static const struct {
		const char *key;
		size_t off;
	} kb_keys[] = {
		{ "total-vm", offsetof(struct kmsg_oom, total_vm_kb) },
		{ "anon-rss", offsetof(struct kmsg_oom, anon_rss_kb) },
		{ "file-rss", offsetof(struct kmsg_oom, file_rss_kb) },
		{ "shmem-rss", offsetof(struct kmsg_oom, shmem_rss_kb) },
		{ "pgtables", offsetof(struct kmsg_oom, pgtables_kb) },
	};
	unsigned have = 0;
	while (p < e) {
		while (p < e && (*p == ' ' || *p == ','))
			p++;
		const char *t = p;
		while (p < e && *p != ' ' && *p != ',')
			p++;
		const char *colon = memchr(t, ':', (size_t)(p - t));
		if (!colon)
			return -EINVAL;
		size_t kn = (size_t)(colon - t);
		const char *v = colon + 1;
		unsigned bit = 0;
		for (size_t i = 0; i < sizeof kb_keys / sizeof kb_keys[0]; i++) {
			if (strlen(kb_keys[i].key) != kn || memcmp(t, kb_keys[i].key, kn) != 0)
				continue;
			uint64_t kb;
			bit = 1u << i; /* HAVE_TOTAL_VM .. HAVE_PGTABLES */
			if (parse_u64(&v, p, &kb) < 0 || !has_prefix(v, p, LIT("kB")) || v + 2 != p)
				return -EINVAL;
			memcpy((char *)o + kb_keys[i].off, &kb, sizeof kb);
			break;
		}
		if (!bit && kn == 3 && memcmp(t, "UID", 3) == 0) {
			int64_t uid;
			bit = HAVE_UID;
			if (parse_i64(&v, p, 0, UINT32_MAX, &uid) < 0 || v != p)
				return -EINVAL;
			o->uid = uid;
		} else if (!bit && kn == 13 && memcmp(t, "oom_score_adj", 13) == 0) {
			int64_t adj;
			bit = HAVE_ADJ;
			/* OOM_SCORE_ADJ_MIN .. OOM_SCORE_ADJ_MAX */
			if (parse_i64(&v, p, -1000, 1000, &adj) < 0 || v != p)
				return -EINVAL;
			o->oom_score_adj = (int)adj;
			o->have_score_adj = 1;
		}
		if (bit & have)
			return -EINVAL; /* said twice: not the kernel's line */
		have |= bit;
	}
	/* the oldest form of the line already has these three */
	unsigned need = HAVE_TOTAL_VM | HAVE_ANON | HAVE_FILE;
	if ((have & need) != need)
		return -EINVAL;
	return 1;
}

/* "[REASON: ]Killed process P (COMM) total-vm:...".  The comm starts after
 * "P (", fixed, and ends at the last ") " before the last "total-vm:": what
 * follows the real one holds neither ')' nor another "total-vm:". */
static int parse_killed(const char *msg, const char *kp, const char *e, struct kmsg_oom *o)
{
	const char *p = kp + sizeof "Killed process " - 1;
	if (parse_pid(&p, e, &o->pid) < 0 || !has_prefix(p, e, LIT(" (")))
		return -EINVAL;
	const char *cs = p + 2;
	const char *tv = rfind(cs, e, LIT("total-vm:"));
	const char *ce = tv ? rfind(cs, tv, LIT(") ")) : NULL;
	if (!ce)
		return -EINVAL;
	struct span comm = { cs, (size_t)(ce - cs) };
	if (unescaped_len(comm.s, comm.n) > KMSG_COMM_BYTES)
		return -EINVAL;
	MT_ASSERT(comm.n < sizeof o->comm);
	copy_cut(o->comm, sizeof o->comm, comm);
	if (kp > msg)
		copy_cut(o->reason, sizeof o->reason, (struct span){ msg, (size_t)(kp - 2 - msg) });
	if (parse_killed_tail(ce + 2, e, o) < 0)
		return -EINVAL;
	o->have_killed = 1;
	return 1;
}

int kmsg_parse_killed(const char *msg, size_t len, struct kmsg_oom *o)
{
	static const char kp[] = "Killed process ";
	const char *e = msg + len, *x = msg;
	kmsg_oom_init(o);
	/* at the start (older kernels) or after the reason's ": " */
	while ((x = find(x, e, LIT(kp))) && x != msg &&
	       !(x - msg >= 2 && x[-2] == ':' && x[-1] == ' '))
		x++;
	if (!x)
		return 0;
	int rc = parse_killed(msg, x, e, o);
	if (rc < 0)
		kmsg_oom_init(o);
	return rc;
}

/* ---- why it cannot be read ------------------------------------------------------ */

void kmsg_explain(int err, int dmesg_restrict, char *why, size_t cap)
{
	const char *dev = KMSG_DEFAULT_PATH;
	if (cap == 0)
		return;
	switch (-err) {
	case EPERM:
		if (dmesg_restrict == 1)
			snprintf(why, cap,
				 "cannot read %s: kernel.dmesg_restrict=1 and memsup lacks CAP_SYSLOG",
				 dev);
		else if (dmesg_restrict == 0)
			snprintf(why, cap,
				 "cannot read %s: refused although kernel.dmesg_restrict=0 "
				 "(a security module or the container's policy forbids it)", dev);
		else
			snprintf(why, cap,
				 "cannot read %s: not permitted (it needs CAP_SYSLOG when "
				 "kernel.dmesg_restrict=1)", dev);
		break;
	case ENOENT:
		snprintf(why, cap, "cannot read %s: there is none (a container without it, "
			 "or a kernel built without printk)", dev);
		break;
	case EACCES:
		snprintf(why, cap, "cannot read %s: its file mode does not let memsup read it", dev);
		break;
	default:
		snprintf(why, cap, "cannot read %s: %s", dev, strerror(err < 0 ? -err : err));
		break;
	}
}

/* ---- the reader ------------------------------------------------------------------- */

/* A killed line belongs to the summary of its pid only when it comes
 * close behind it: the kernel prints the two a few records apart.  A
 * summary whose killed line was lost (overwritten) must not take the
 * killed line of a later process that got the same pid. */
#define KMSG_PAIR_SEQ_GAP 256u

struct kmsg {
	int fd;
	size_t have;               /* bytes of an unfinished line at buf */
	int skipping;              /* in a line too long to be a record: drop
				      it up to its '\n' */
	struct kmsg_stats stats;
	size_t n;                  /* kills[0..n), oldest first */
	unsigned char fresh[KMSG_KILLS_MAX]; /* added by this kmsg_read_new */
	struct kmsg_oom kills[KMSG_KILLS_MAX];
	struct kmsg_oom line;      /* the line being taken in */
	/* a partial line (< KMSG_RECORD_MAX) and a whole record behind it */
	char buf[2 * KMSG_RECORD_MAX];
};

static int read_dmesg_restrict(void)
{
	char buf[32];
	size_t len;
	if (procfs_read_file("/proc/sys/kernel/dmesg_restrict", buf, sizeof buf, &len) < 0 ||
	    len == 0 || !is_digit(buf[0]))
		return -1;
	return buf[0] - '0';
}

int kmsg_open_fd(struct kmsg **out, int fd, int seek_end)
{
	int fl = fcntl(fd, F_GETFL);
	if (fl < 0 || fcntl(fd, F_SETFL, fl | O_NONBLOCK) < 0)
		return -errno;
	/* /dev/kmsg opens at the oldest record the kernel still holds; the
	 * kills memsup must name are those of its run, from now on.  A FIFO
	 * has no past to skip. */
	if (seek_end && lseek(fd, 0, SEEK_END) < 0 && errno != ESPIPE)
		return -errno;
	struct kmsg *k = calloc(1, sizeof *k);
	if (!k)
		return -ENOMEM;
	k->fd = fd;
	*out = k;
	return 0;
}

int kmsg_open(struct kmsg **out, const char *path, char *why, size_t cap)
{
	int fd = open(path ? path : KMSG_DEFAULT_PATH, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0) {
		int err = errno;
		kmsg_explain(-err, err == EPERM ? read_dmesg_restrict() : -1, why, cap);
		return -err;
	}
	int rc = kmsg_open_fd(out, fd, 1);
	if (rc < 0) {
		close(fd);
		kmsg_explain(rc, -1, why, cap);
	}
	return rc;
}

void kmsg_close(struct kmsg *k)
{
	if (!k)
		return;
	close(k->fd);
	free(k);
}

size_t kmsg_kills(const struct kmsg *k, const struct kmsg_oom **out)
{
	*out = k->kills;
	return k->n;
}

void kmsg_stats(const struct kmsg *k, struct kmsg_stats *out)
{
	*out = k->stats;
}

/* A new entry at the end, the oldest dropped when the table is full. */
static struct kmsg_oom *kill_push(struct kmsg *k)
{
	if (k->n == KMSG_KILLS_MAX) {
		memmove(k->kills, k->kills + 1, (KMSG_KILLS_MAX - 1) * sizeof k->kills[0]);
		memmove(k->fresh, k->fresh + 1, KMSG_KILLS_MAX - 1);
		k->n--;
		k->stats.dropped++;
	}
	k->fresh[k->n] = 1;
	return &k->kills[k->n++];
}

/* The killed line's comm has both ends fixed, where the summary's start
 * was a choice (the leftmost ",task=" that leaves 15 bytes at most): when
 * the summary's comm is P ",task=" comm, the ",task=P" taken for part of
 * it ended the victim's cgroup path, and goes back there. */
static void summary_fix_comm(struct kmsg_oom *s, const char *comm)
{
	size_t sn = strlen(s->comm), cn = strlen(comm), tn = strlen(s->task_memcg);
	if (sn > cn + 6 && strcmp(s->comm + sn - cn, comm) == 0 &&
	    memcmp(s->comm + sn - cn - 6, ",task=", 6) == 0 && tn + sn - cn < sizeof s->task_memcg) {
		memcpy(s->task_memcg + tn, ",task=", 6);
		memcpy(s->task_memcg + tn + 6, s->comm, sn - cn - 6);
		s->task_memcg[tn + sn - cn] = '\0';
	}
	memcpy(s->comm, comm, cn + 1);
}

/* The killed line `o` into the latest kill of its pid, if that one has a
 * summary and no killed line yet; else a kill of its own (its summary was
 * overwritten or printed before memsup looked, or it is one more task of
 * a memory.oom.group).  1 when a kill was added or completed that this
 * call had not counted yet. */
static int kill_take_killed(struct kmsg *k, const struct kmsg_oom *o)
{
	for (size_t i = k->n; i-- > 0;) {
		struct kmsg_oom *s = &k->kills[i];
		if (s->pid != o->pid)
			continue;
		if (!s->have_summary || s->have_killed || o->seq <= s->seq ||
		    o->seq - s->seq > KMSG_PAIR_SEQ_GAP)
			break;
		s->have_killed = 1;
		memcpy(s->reason, o->reason, sizeof s->reason);
		summary_fix_comm(s, o->comm);
		s->total_vm_kb = o->total_vm_kb;
		s->anon_rss_kb = o->anon_rss_kb;
		s->file_rss_kb = o->file_rss_kb;
		s->shmem_rss_kb = o->shmem_rss_kb;
		s->pgtables_kb = o->pgtables_kb;
		s->oom_score_adj = o->oom_score_adj;
		s->have_score_adj = o->have_score_adj;
		int counted = k->fresh[i];
		k->fresh[i] = 1;
		return !counted;
	}
	*kill_push(k) = *o;
	return 1;
}

/* One record's header line (and '\n'); its dictionary lines were skipped. */
static int take_record(struct kmsg *k, const char *s, size_t n)
{
	struct kmsg_record rec;
	struct kmsg_oom *o = &k->line;
	if (kmsg_parse_record(s, n, &rec) < 0)
		return 0;
	int rs = kmsg_parse_summary(rec.msg, rec.msg_len, o);
	int rk = rs == 0 ? kmsg_parse_killed(rec.msg, rec.msg_len, o) : 0;
	if (rs == 0 && rk == 0)
		return 0;
	if (!KMSG_FROM_KERNEL(rec.pri)) {
		k->stats.forged++;
		return 0;
	}
	if (rs < 0 || rk < 0) {
		k->stats.bad++;
		return 0;
	}
	o->seq = rec.seq;
	o->ts_us = rec.ts_us;
	if (rs == 1) {
		*kill_push(k) = *o;
		return 1;
	}
	return kill_take_killed(k, o);
}

/* Every whole line in buf; an unfinished last one moves to buf's start.
 * /dev/kmsg gives one record a read, header and dictionary lines all
 * ended; a file or a FIFO gives what it holds, cut anywhere. */
static int take_lines(struct kmsg *k)
{
	int count = 0;
	const char *s = k->buf, *e = k->buf + k->have;
	for (const char *nl; (nl = memchr(s, '\n', (size_t)(e - s))); s = nl + 1) {
		if (k->skipping)
			k->skipping = 0;
		else if (*s != ' ') /* " KEY=VALUE": the record before's dictionary */
			count += take_record(k, s, (size_t)(nl + 1 - s));
	}
	size_t left = (size_t)(e - s);
	if (left >= KMSG_RECORD_MAX) {
		/* longer than the kernel makes a record: not one */
		if (!k->skipping)
			k->stats.bad++;
		k->skipping = 1;
		left = 0;
	}
	memmove(k->buf, s, left);
	k->have = left;
	return count;
}

int kmsg_read_new(struct kmsg *k)
{
	int count = 0;
	memset(k->fresh, 0, sizeof k->fresh);
	for (;;) {
		/* a kmsg read into less than a record fails with EINVAL */
		MT_ASSERT(sizeof k->buf - k->have > KMSG_RECORD_MAX);
		ssize_t r = read(k->fd, k->buf + k->have, sizeof k->buf - k->have);
		if (r < 0) {
			if (errno == EINTR)
				continue;
			if (errno == EAGAIN || errno == EWOULDBLOCK)
				break;
			if (errno == EPIPE) {
				/* records were overwritten before this read: the
				 * next read goes on from the oldest left */
				k->stats.overruns++;
				continue;
			}
			return -errno;
		}
		if (r == 0)
			break; /* end of a file, or a FIFO without a writer */
		k->have += (size_t)r;
		count += take_lines(k);
	}
	return count;
}
