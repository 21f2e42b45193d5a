/* findings.c: the blind spots of one run, explained (see findings.h).
 *
 * Each rule below reads the merged run and either adds one finding of its
 * kind or none.  A finding appears only when its figures clear the
 * threshold stated beside the rule (and in memsup(1)); a clean run has none.
 * Pure: nothing here touches /proc or the record files, nothing allocates;
 * the processes a finding names are pointers into the merged run.
 *
 * Figures are decimal megabytes (MB = 1000000 bytes, as memsup reports
 * them), seconds, percentages and counts; each JSON key says its unit.
 * Process names in sentences are argv with control bytes replaced by '?',
 * so that printing a sentence on a terminal can never emit an escape
 * sequence; the JSON keeps the exact argv bytes in "argv".
 */
#include "analyze/findings.h"
#include "analyze/answer.h"
#include "collect/recordfile.h"
#include "collect/slurmjob.h"
#include "units.h"

#include <stdarg.h>
#include <stdint.h>
#include <string.h>

/* ---- thresholds ---------------------------------------------------------
 * rusage_children: the tree's peak exceeds getrusage(RUSAGE_CHILDREN)
 *   maxrss (time -v's figure: one process, the largest) by >= 10 MB and by
 *   >= 25 %.  Below that a tree is essentially one process plus small
 *   helpers (a shell, a few MB), and the single figure is fair. */
#define RUSAGE_MIN_MB 10.0
#define RUSAGE_MIN_RATIO 1.25
/* rusage_exec_floor: an ended, traced image whose ru_maxrss(SELF) exceeds
 *   its own VmHWM by >= 10 MB and by >= 25 %.  Without an exec the two are
 *   the same kernel counter read a moment apart, so any real gap is the
 *   maxrss the kernel carried over from the image the exec replaced. */
#define EXEC_FLOOR_MIN_MB 10.0
#define EXEC_FLOOR_MIN_RATIO 1.25
/* unsampled_processes: any traced image no poll saw (no size threshold:
 *   such an image is in no sample, whatever it held). */
/* transient_peak: a sampled image whose VmHWM exceeds the largest RSS any
 *   poll read of it by >= 10 MB and by >= 5 % of the VmHWM.  A process that
 *   only grows is caught within one poll period of growth, far below this;
 *   the 5 % keeps page-level noise of large processes out. */
#define TRANSIENT_MIN_MB 10.0
#define TRANSIENT_MIN_FRACTION 0.05
/*   With a memory cgroup, the kernel's peak of the whole run (memory.peak,
 *   exact) is quoted beside it; and without a process to name, the run's
 *   own transient is listed when that peak exceeds, by the same margins,
 *   the cgroup's largest usage a sample read (memory.current: shared
 *   memory, page cache and kernel memory held steadily are in it, as in
 *   the peak), or without that figure the polled tree peak plus page
 *   cache, shared memory and kernel memory. */
/* page_cache: the answer is the cgroup's peak, and page cache (memory.stat
 *   at the cgroup's largest sample, else at the end) is >= 10 MB and >= 10 %
 *   of it: memory a limit counts that RSS never shows, and that the kernel
 *   can reclaim (BenchExec documents the same). */
#define CACHE_MIN_MB 10.0
#define CACHE_MIN_FRACTION 0.10
/* non_heap_memory: at the tree's peak, the traced processes' RSS minus
 *   their live heap is >= 20 MB and >= 20 % of that RSS.  Every process has
 *   a few MB of code, libraries and stack; this is more than that. */
#define NON_HEAP_MIN_MB 20.0
#define NON_HEAP_MIN_FRACTION 0.20
/* shared_pages: the answer is not the summed RSS itself, and at the polled
 *   peak summed RSS minus summed Pss (smaps read), else summed RSS minus the
 *   answer, is >= 20 MB and >= 20 % of summed RSS: that much of the summed
 *   figure is pages counted once per process that maps them. */
#define SHARED_MIN_MB 20.0
#define SHARED_MIN_FRACTION 0.20
/* heap_inherited: at the peak sample, fork children's inherited heap still
 *   held by a parent also in the sample is >= 10 MB and >= 10 % of the
 *   summed traced heap. */
#define HEAP_INHERITED_MIN_MB 10.0
#define HEAP_INHERITED_MIN_FRACTION 0.10
/* untouched_memory: an ended traced image's heap_peak + map_anon_peak
 *   exceeds its VmHWM by >= 20 MB and by >= 25 % of that sum; never of an
 *   image whose malloc is another allocator's (heap_not_seen): the shim
 *   saw none of its heap, and its mappings are that allocator's
 *   reservations as much as the program's requests; nor of an image that
 *   mapped huge pages (MT_FLAG_HUGETLB): its anonymous mapping figures
 *   hold pages of the huge page pool, which VmHWM never counts.
 * hugetlb_pages: any traced image that mapped huge pages with MAP_HUGETLB
 *   (no size threshold: no RSS, VmHWM or cgroup figure holds them).
 * heap_not_seen: any traced image whose malloc is not the shim's (no size
 *   threshold: its heap figures are unknown, not 0). */
#define UNTOUCHED_MIN_MB 20.0
#define UNTOUCHED_MIN_FRACTION 0.25
/* charged_elsewhere: the answer is the cgroup's peak and the largest single
 *   process's peak (rusage) exceeds it by >= 2 MB (the kernel's own peak of
 *   the run cannot be below one of its processes' but for pages charged
 *   elsewhere; 2 MB leaves out rounding and a library or two). */
#define ELSEWHERE_MIN_MB 2.0
/* fork_before_exec: a traced fork child that exec'd later was in the tree's
 *   peak sample before its exec, at >= 10 MB: its RSS was its parent's
 *   pages, counted twice.  (Without smaps, shared_pages cannot see it.) */
#define FORK_EXEC_MIN_MB 10.0
/* untraced: any sampled image without a shim record while tracing was on;
 *   in a --no-trace run, one finding for the whole run.
 * escaped: any image that left the command's session.
 * budget_overshoot: the run ended rss_budget_exceeded (the figure is how
 *   far past the budget the last sample was, whatever its size).
 * corrupt_record: any record file that failed validation.
 * implausible_record: any valid record memsup did not believe (not an
 *   image of the tree, or figures that cannot be true: merge.c).
 * sampling_gap: memsup took no sample for more than 10 poll periods, and
 *   at least 0.25 s (a loaded machine delays single polls by tens of
 *   milliseconds; that is poll_interval_p99_s's business): memsup was
 *   stopped, or the machine stalled.  Says too when the wall budget passed
 *   inside the gap. */
#define GAP_MIN_PERIODS 10.0
#define GAP_MIN_S 0.25
/* slurm_maxrss: memsup ran in a Slurm job, and Slurm's MaxRSS (the most
 *   summed RSS one of its polls read) can differ from the answer by >= 10
 *   MB and >= 5 % of it, at the least or the most a poll could read of
 *   this run (slowpoll.h), as transient_peak's margins; always when Slurm
 *   keeps no figure (jobacct_gather/none) or polls only as tasks end. */
#define SLURM_MIN_MB 10.0
#define SLURM_MIN_FRACTION 0.05

/* ---- building findings -------------------------------------------------- */

struct ctx {
	struct finding *out;
	size_t cap;
	size_t n;
	struct finding scratch; /* target once out[] is full: counted, dropped */
	double keys[FINDING_MAX_PROCS]; /* sort keys of the current procs[] */
};

static struct finding *finding_begin(struct ctx *c, const char *kind)
{
	struct finding *f = c->n < c->cap ? &c->out[c->n] : &c->scratch;
	memset(f, 0, sizeof *f);
	f->kind = kind;
	return f;
}

static void finding_commit(struct ctx *c)
{
	c->n++;
}

static void fig_add(struct finding *f, const char *key, double v, unsigned decimals)
{
	if (f->n_figures >= FINDING_MAX_FIGURES)
		return;
	struct finding_figure *g = &f->figures[f->n_figures++];
	g->key = key;
	g->value = v;
	g->decimals = decimals;
}

static void fig_mb(struct finding *f, const char *key, double bytes)
{
	fig_add(f, key, bytes / UNITS_MB, 2);
}

/* Keeps the FINDING_MAX_PROCS largest keys, largest first; ties keep the
 * order of the merged run.  procs_total counts every candidate. */
static void proc_add(struct ctx *c, struct finding *f, const struct image_view *im, double key)
{
	f->procs_total++;
	size_t n = f->n_procs;
	if (n == FINDING_MAX_PROCS && key <= c->keys[n - 1])
		return;
	size_t i = n < FINDING_MAX_PROCS ? n : n - 1;
	while (i > 0 && c->keys[i - 1] < key) {
		c->keys[i] = c->keys[i - 1];
		f->procs[i] = f->procs[i - 1];
		i--;
	}
	c->keys[i] = key;
	f->procs[i] = im;
	if (n < FINDING_MAX_PROCS)
		f->n_procs++;
}

static void say(struct finding *f, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void say(struct finding *f, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(f->sentence, sizeof f->sentence, fmt, ap);
	va_end(ap);
}

/* ---- reading an image --------------------------------------------------- */

static int rec_ended(const struct image_view *im)
{
	return im->traced && im->rec.state != MT_STATE_RUNNING;
}

/* The image's kernel high-water mark in bytes (merge.h's rule). */
static double img_hwm(const struct image_view *im)
{
	return (double)merge_image_hwm_kb(im, NULL) * UNITS_KIB;
}

/* The program's malloc was another allocator's: the shim saw none of the
 * heap, and the mappings it counted include that allocator's own. */
static int heap_foreign(const struct image_view *im)
{
	return im->traced && (im->rec.flags & MT_FLAG_HEAP_FOREIGN);
}

static int heap_known(const struct image_view *im)
{
	return im->traced && !(im->rec.flags & (MT_FLAG_HEAP_UNSIZED | MT_FLAG_HEAP_FOREIGN));
}

/* Length of the valid UTF-8 sequence at s (at most n bytes) that is safe
 * to print on a terminal, or 0: control characters (C0, DEL and the C1
 * range U+0080..U+009F, which some terminals obey), overlong forms,
 * surrogates and truncated sequences are not. */
static size_t utf8_safe_len(const unsigned char *s, size_t n)
{
	unsigned c = s[0];
	if (c < 0x20 || c == 0x7f)
		return 0;
	if (c < 0x80)
		return 1;
	size_t len = c >= 0xf0 ? 4 : c >= 0xe0 ? 3 : c >= 0xc2 ? 2 : 0;
	if (!len || c > 0xf4 || len > n)
		return 0;
	uint32_t cp = c & (0x7fu >> len);
	for (size_t i = 1; i < len; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		cp = cp << 6 | (s[i] & 0x3fu);
	}
	if ((len == 3 && cp < 0x800) || (len == 4 && (cp < 0x10000 || cp > 0x10ffff)) ||
	    (cp >= 0xd800 && cp <= 0xdfff) || (cp >= 0x80 && cp <= 0x9f))
		return 0;
	return len;
}

/* "'argv0 arg1 ...'" for sentences: about 40 bytes of argv with the
 * basename of argv[0]; anything unsafe to print is '?'.  Falls back to
 * exe, then "'?'". */
static const char *img_name(const struct image_view *im, char *buf, size_t cap)
{
	const char *s = im->argv;
	size_t len = im->argv_len;
	if (!s || !len) {
		s = im->exe;
		len = s ? strlen(s) : 0;
	}
	if (!s || !len || cap < 16) {
		snprintf(buf, cap, "'?'");
		return buf;
	}
	size_t first = strnlen(s, len), base = 0;
	for (size_t i = 0; i + 1 < first; i++)
		if (s[i] == '/')
			base = i + 1;
	s += base;
	len -= base;
	size_t limit = (cap > 48 ? 48 : cap) - 6, o = 0, i = 0;
	buf[o++] = '\'';
	while (i < len && o < limit) {
		const unsigned char *u = (const unsigned char *)s + i;
		size_t k = utf8_safe_len(u, len - i);
		if (*u == '\0') {
			if (i + 1 == len)
				break;
			buf[o++] = ' ';
			i++;
		} else if (!k) {
			buf[o++] = '?';
			i++;
		} else if (o + k >= limit) {
			break;
		} else {
			memcpy(buf + o, u, k);
			o += k;
			i += k;
		}
	}
	if (i < len && !(i + 1 == len && s[i] == '\0')) {
		buf[o++] = '.';
		buf[o++] = '.';
	}
	buf[o++] = '\'';
	buf[o] = '\0';
	return buf;
}

static const struct image_view *img_find(const struct merged_run *m, pid_t pid, uint32_t gen)
{
	for (size_t i = 0; i < m->n_images; i++)
		if (m->images[i].pid == pid && m->images[i].traced && m->images[i].gen == gen)
			return &m->images[i];
	return NULL;
}

static const char *plural(size_t n, const char *one, const char *many)
{
	return n == 1 ? one : many;
}

/* ---- the rules ---------------------------------------------------------- */

/* How the answer was measured, for a sentence: "the run's cgroup peak". */
static const char *answer_short(const struct sup_record *r)
{
	switch (r->peak_source) {
	case SUP_PEAK_CGROUP:
		return "the kernel's exact count for the run's cgroup";
	case SUP_PEAK_POLLED_PSS:
		return "the processes' summed Pss, polled";
	default:
		return "the processes' summed RSS, polled";
	}
}

/* Name the largest single process, the one time -v's figure is (VmHWM, or
 * its own ru_maxrss where larger), as f's one process; " (pid N 'name')"
 * into who, or "" without one. */
static void name_largest(struct ctx *c, struct finding *f, const struct merged_run *m, char *who,
			 size_t cap)
{
	for (size_t i = 0; i < m->n_images; i++) {
		const struct image_view *im = &m->images[i];
		double v = img_hwm(im);
		if (rec_ended(im) && (double)im->rec.ru_maxrss_self_kb * UNITS_KIB > v)
			v = (double)im->rec.ru_maxrss_self_kb * UNITS_KIB;
		if (v > 0)
			proc_add(c, f, im, v);
	}
	f->n_procs = f->procs_total = f->n_procs ? 1 : 0;
	char name[64];
	who[0] = '\0';
	if (f->n_procs)
		snprintf(who, cap, " (pid %d %s)", (int)f->procs[0]->pid,
			 img_name(f->procs[0], name, sizeof name));
}

/* What time -v would say (the largest single process) vs the answer. */
static void rule_rusage_children(struct ctx *c, const struct merged_run *m)
{
	const struct sup_record *r = m->rec;
	if (!r || r->rusage_children_maxrss_mb < 0 || r->peak_mb < 0)
		return;
	double ru = r->rusage_children_maxrss_mb, tree = r->peak_mb;
	if (tree - ru < RUSAGE_MIN_MB || tree < ru * RUSAGE_MIN_RATIO)
		return;
	struct finding *f = finding_begin(c, "rusage_children");
	fig_add(f, "rusage_children_maxrss_mb", ru, 2);
	fig_add(f, "tree_peak_mb", tree, 2);
	fig_add(f, "understated_by_mb", tree - ru, 2);
	if (r->peak_source_at_s >= 0)
		fig_add(f, "tree_peak_at_s", r->peak_source_at_s, 3);
	fig_add(f, "processes_at_peak_count", m->peak.at_s >= 0 ? m->peak.nprocs : r->max_processes, 0);
	char who[96];
	name_largest(c, f, m, who, sizeof who);
	/* a polled answer is a lower bound of what the tree held */
	say(f, "getrusage(RUSAGE_CHILDREN) and time -v report %.1f MB, the largest single "
	    "process%s, but the tree held %s%.1f MB at once (%s): %.1f MB more than that "
	    "figure says.", ru, who, r->peak_source == SUP_PEAK_CGROUP ? "" : "at least ", tree,
	    answer_short(r), tree - ru);
	finding_commit(c);
}

/* ru_maxrss carried across exec: a small program reports its parent's size. */
static void rule_exec_floor(struct ctx *c, const struct merged_run *m)
{
	struct finding *f = NULL;
	for (size_t i = 0; i < m->n_images; i++) {
		const struct image_view *im = &m->images[i];
		if (!rec_ended(im) || !im->rec.ru_maxrss_self_kb || !im->rec.vm_hwm_kb)
			continue;
		double ru = (double)im->rec.ru_maxrss_self_kb * UNITS_KIB;
		double own = (double)im->rec.vm_hwm_kb * UNITS_KIB;
		if (ru - own < EXEC_FLOOR_MIN_MB * UNITS_MB || ru < own * EXEC_FLOOR_MIN_RATIO)
			continue;
		if (!f)
			f = finding_begin(c, "rusage_exec_floor");
		proc_add(c, f, im, ru - own);
	}
	if (!f)
		return;
	const struct image_view *im = f->procs[0];
	double ru = (double)im->rec.ru_maxrss_self_kb * UNITS_KIB, own = (double)im->rec.vm_hwm_kb * UNITS_KIB;
	fig_mb(f, "ru_maxrss_mb", ru);
	fig_mb(f, "vm_hwm_mb", own);
	fig_mb(f, "inherited_mb", ru - own);
	fig_add(f, "process_count", (double)f->procs_total, 0);
	/* the image it replaced: the previous generation of its pid, or for a
	 * vfork/posix_spawn child the parent whose memory the child shared */
	const struct image_view *before = NULL;
	if (im->rec.relation == MT_REL_EXEC || im->rec.relation == MT_REL_VFORK ||
	    im->rec.relation == MT_REL_SPAWN || im->rec.relation == MT_REL_SYSTEM ||
	    im->rec.relation == MT_REL_POPEN)
		before = img_find(m, im->rec.parent_pid, im->rec.parent_gen);
	char name[64], bname[64], more[64] = "";
	if (f->procs_total > 1)
		snprintf(more, sizeof more, " (%zu more %s likewise)", f->procs_total - 1,
			 plural(f->procs_total - 1, "image", "images"));
	if (before)
		say(f, "pid %d %s reports ru_maxrss %.1f MB (what getrusage and time -v give for it) "
		    "but its own VmHWM is %.1f MB: the kernel kept the high-water mark of the image "
		    "its exec replaced (pid %d %s)%s.",
		    (int)im->pid, img_name(im, name, sizeof name), ru / UNITS_MB,
		    own / UNITS_MB, (int)before->pid, img_name(before, bname, sizeof bname), more);
	else
		say(f, "pid %d %s reports ru_maxrss %.1f MB (what getrusage and time -v give for it) "
		    "but its own VmHWM is %.1f MB: the kernel kept the high-water mark of the image "
		    "its exec replaced%s.",
		    (int)im->pid, img_name(im, name, sizeof name), ru / UNITS_MB,
		    own / UNITS_MB, more);
	finding_commit(c);
}

/* Traced images that lived between two polls. */
static void rule_unsampled(struct ctx *c, const struct merged_run *m)
{
	struct finding *f = NULL;
	for (size_t i = 0; i < m->n_images; i++) {
		const struct image_view *im = &m->images[i];
		if (!im->traced || im->record_error || im->sampled)
			continue;
		if (!f)
			f = finding_begin(c, "unsampled_processes");
		double key = img_hwm(im);
		if (heap_known(im) && (double)im->rec.total_peak > key)
			key = (double)im->rec.total_peak;
		proc_add(c, f, im, key);
	}
	if (!f)
		return;
	const struct image_view *im = f->procs[0];
	double hwm = img_hwm(im);
	double heap = heap_known(im) ? (double)im->rec.heap_peak : 0;
	double maps = (double)(im->rec.map_anon_peak + im->rec.map_file_peak);
	fig_add(f, "process_count", (double)f->procs_total, 0);
	fig_mb(f, "largest_vm_hwm_mb", hwm);
	fig_mb(f, "largest_heap_peak_mb", heap);
	fig_mb(f, "largest_mapped_peak_mb", maps);
	char name[64], hwmtext[48];
	if (hwm > 0)
		snprintf(hwmtext, sizeof hwmtext, "VmHWM %.1f MB", hwm / UNITS_MB);
	else
		snprintf(hwmtext, sizeof hwmtext, "no VmHWM (killed)");
	say(f, "%zu traced process %s lived entirely between two polls, so no sample of the "
	    "tree includes %s; the largest, pid %d %s, reached %s (heap peak %.1f MB, "
	    "mappings peak %.1f MB).",
	    f->procs_total, plural(f->procs_total, "image", "images"),
	    plural(f->procs_total, "it", "them"), (int)im->pid, img_name(im, name, sizeof name),
	    hwmtext, heap / UNITS_MB, maps / UNITS_MB);
	finding_commit(c);
}

/* The kernel's peak of the run's cgroup, the most of it a sample saw,
 * and the rest, which came and went between two samples.  *usage is 1
 * when `seen` is the cgroup's own usage at its largest sample; 0 when it
 * is the polled tree peak plus what RSS never shows.  0 without a memory
 * cgroup. */
static int kernel_peak(const struct merged_run *m, double *peak, double *seen,
		       double *unexplained, int *usage)
{
	const struct sup_record *r = m->rec;
	if (!r || !r->cgroup.have_peak || r->peak_at_s < 0)
		return 0;
	*peak = (double)r->cgroup.peak;
	*usage = r->kernel_at_peak.have_usage && r->kernel_peak_at_s >= 0;
	if (*usage) {
		/* the cgroup's own count at a sample: everything the peak
		 * counts that was there then (200 MB of a memfd held for
		 * seconds is shared memory in both, in no process's RSS) */
		*seen = (double)r->kernel_at_peak.usage;
	} else {
		/* what RSS never shows: page cache, shared memory that is
		 * not mapped, kernel memory, at the cgroup's largest sample
		 * when memory.stat was read there, else as the run ended
		 * (file holds shared memory) */
		const struct contain_state *k = &r->kernel_at_peak;
		double cache = 0;
		if (k->have_split && r->kernel_peak_at_s >= 0)
			cache = (double)(k->page_cache + k->shmem + k->kernel);
		else if (r->cgroup.have_stat)
			cache = (double)(r->cgroup.file + r->cgroup.kernel);
		*seen = (double)r->peak_bytes + cache;
	}
	*unexplained = *peak - *seen;
	return 1;
}

/* A spike no poll saw: a sampled image whose VmHWM no poll came near, or
 * (with a memory cgroup) the run's peak above every sample. */
static void rule_transient(struct ctx *c, const struct merged_run *m)
{
	struct finding *f = NULL;
	for (size_t i = 0; i < m->n_images; i++) {
		const struct image_view *im = &m->images[i];
		if (!im->sampled)
			continue;
		double hwm = img_hwm(im), polled = (double)im->polled_peak_rss;
		double missed = hwm - polled;
		if (missed < TRANSIENT_MIN_MB * UNITS_MB || missed < hwm * TRANSIENT_MIN_FRACTION)
			continue;
		if (!f)
			f = finding_begin(c, "transient_peak");
		proc_add(c, f, im, missed);
	}
	double kpeak = 0, kseen = 0, unexplained = 0;
	int usage = 0;
	int kernel = kernel_peak(m, &kpeak, &kseen, &unexplained, &usage);
	double tree = m->rec ? (double)m->rec->peak_bytes : 0;
	char ktext[200] = "";
	if (kernel)
		snprintf(ktext, sizeof ktext, "; the kernel counted the run's cgroup at %.1f MB at "
			 "its peak (exact), against %.1f MB in the largest sample of the tree",
			 kpeak / UNITS_MB, tree / UNITS_MB);
	if (!f) {
		if (!kernel || unexplained < TRANSIENT_MIN_MB * UNITS_MB ||
		    unexplained < kpeak * TRANSIENT_MIN_FRACTION)
			return;
		f = finding_begin(c, "transient_peak");
		fig_mb(f, "cgroup_peak_mb", kpeak);
		fig_mb(f, "polled_peak_rss_mb", tree);
		if (usage)
			fig_mb(f, "cgroup_polled_peak_mb", kseen);
		fig_mb(f, "missed_mb", unexplained);
		fig_add(f, "missed_pct", 100.0 * unexplained / kpeak, 1);
		fig_add(f, "process_count", 0, 0);
		if (usage)
			say(f, "The kernel counted the run's cgroup at %.1f MB at its peak (exact), but "
			    "no poll read it above %.1f MB (the tree's RSS at most %.1f MB): about "
			    "%.1f MB came and went between two polls.",
			    kpeak / UNITS_MB, kseen / UNITS_MB, tree / UNITS_MB,
			    unexplained / UNITS_MB);
		else
			say(f, "The kernel counted the run's cgroup at %.1f MB at its peak (exact), but "
			    "no poll saw the tree above %.1f MB: about %.1f MB came and went between "
			    "two polls (beyond the page cache, shared memory and kernel memory charged "
			    "to the run).",
			    kpeak / UNITS_MB, tree / UNITS_MB, unexplained / UNITS_MB);
		finding_commit(c);
		return;
	}
	const struct image_view *im = f->procs[0];
	double hwm = img_hwm(im), polled = (double)im->polled_peak_rss;
	fig_mb(f, "vm_hwm_mb", hwm);
	fig_mb(f, "polled_peak_rss_mb", polled);
	fig_mb(f, "missed_mb", hwm - polled);
	fig_add(f, "missed_pct", 100.0 * (hwm - polled) / hwm, 1);
	fig_add(f, "process_count", (double)f->procs_total, 0);
	if (kernel)
		fig_mb(f, "cgroup_peak_mb", kpeak);
	char name[64], more[64] = "";
	if (f->procs_total > 1)
		snprintf(more, sizeof more, " (%zu more %s likewise)", f->procs_total - 1,
			 plural(f->procs_total - 1, "process", "processes"));
	say(f, "pid %d %s reached VmHWM %.1f MB but no poll saw more than %.1f MB of it: "
	    "%.1f MB came and went between two polls%s%s.",
	    (int)im->pid, img_name(im, name, sizeof name), hwm / UNITS_MB,
	    polled / UNITS_MB, (hwm - polled) / UNITS_MB, more, ktext);
	finding_commit(c);
}

/* The part of the answer that is page cache: files the run read or wrote,
 * which the kernel charged to the run and can drop under pressure.  Taken
 * from memory.stat at the cgroup's largest sample (what the answer was
 * made of), else as the run ended. */
static void rule_page_cache(struct ctx *c, const struct merged_run *m)
{
	const struct sup_record *r = m->rec;
	if (!r || r->peak_source != SUP_PEAK_CGROUP)
		return;
	double answer = r->peak_mb * UNITS_MB, cache, shmem = 0, kern;
	const char *when;
	if (r->kernel_at_peak.have_split && r->kernel_peak_at_s >= 0) {
		cache = (double)r->kernel_at_peak.page_cache;
		shmem = (double)r->kernel_at_peak.shmem;
		kern = (double)r->kernel_at_peak.kernel;
		when = "at the cgroup's largest sample";
	} else if (r->cgroup.have_stat) {
		cache = (double)r->cgroup.file;  /* shared memory included */
		kern = (double)r->cgroup.kernel;
		when = "as the run ended";
	} else {
		return;
	}
	if (cache < CACHE_MIN_MB * UNITS_MB || cache < answer * CACHE_MIN_FRACTION)
		return;
	struct finding *f = finding_begin(c, "page_cache");
	fig_mb(f, "cgroup_peak_mb", answer);
	fig_mb(f, "page_cache_mb", cache);
	fig_add(f, "page_cache_pct", 100.0 * cache / answer, 1);
	fig_mb(f, "shmem_mb", shmem);
	fig_mb(f, "kernel_mb", kern);
	fig_mb(f, "tree_peak_mb", (double)r->peak_bytes);
	say(f, "Of the answer, %.1f MB, %.1f MB was page cache %s: files the run read or "
	    "wrote, charged to it by the kernel and reclaimable (the kernel drops clean pages "
	    "under pressure, so a limit that low would slow the run rather than kill it); "
	    "kernel memory was %.1f MB. No process's RSS shows these pages.",
	    answer / UNITS_MB, cache / UNITS_MB, when, kern / UNITS_MB);
	finding_commit(c);
}

/* At the peak: resident memory the live heap does not explain. */
static void rule_non_heap(struct ctx *c, const struct merged_run *m)
{
	if (!m->tracing || m->peak.at_s < 0)
		return;
	double rss = 0, heap = 0, anon = 0, file = 0, shmem = 0;
	double map_anon = 0, map_file = 0;
	size_t nt = 0, nsm = 0;
	for (size_t i = 0; i < m->n_images; i++) {
		const struct image_view *im = &m->images[i];
		if (!im->at_peak || !heap_known(im))
			continue;
		nt++;
		rss += (double)im->peak_rss;
		heap += (double)im->peak_heap;
		if (im->have_smaps) {
			nsm++;
			anon += (double)im->peak_anon;
			file += (double)im->peak_file;
			shmem += (double)im->peak_shmem;
		}
	}
	if (!nt)
		return;
	/* the shim's mapping split is per tree: use the peak view's sums */
	map_anon = (double)m->peak.map_anon;
	map_file = (double)m->peak.map_file;
	double non_heap = rss > heap ? rss - heap : 0;
	if (non_heap < NON_HEAP_MIN_MB * UNITS_MB || non_heap < rss * NON_HEAP_MIN_FRACTION)
		return;
	double mapped = map_anon + map_file;
	double other = non_heap > mapped ? non_heap - mapped : 0;
	struct finding *f = finding_begin(c, "non_heap_memory");
	fig_mb(f, "rss_at_peak_mb", rss);
	fig_mb(f, "heap_at_peak_mb", heap);
	fig_mb(f, "non_heap_mb", non_heap);
	fig_add(f, "non_heap_pct", 100.0 * non_heap / rss, 1);
	fig_mb(f, "mmap_anon_mb", map_anon);
	fig_mb(f, "mmap_file_mb", map_file);
	fig_mb(f, "other_mb", other);
	fig_add(f, "peak_at_s", m->peak.at_s, 3);
	char smaps[160] = "";
	/* categories only when smaps cover every process counted: a partial
	 * sum (one died before it was read) would misstate what RSS was made of */
	if (nsm && nsm == nt) {
		fig_mb(f, "rss_anon_mb", anon);
		fig_mb(f, "rss_file_mb", file);
		fig_mb(f, "rss_shmem_mb", shmem);
		/* the collector bounds how often it reads smaps, so the reading
		 * may be of an earlier (smaller) or later sample: say which */
		double age = m->peak.smaps_age_s;
		char when[64] = "";
		fig_add(f, "smaps_age_s", age, 3);
		if (age <= -0.0005 || age >= 0.0005)
			snprintf(when, sizeof when, " (read %.2f s %s the peak sample)",
				 age < 0 ? -age : age, age < 0 ? "before" : "after");
		snprintf(smaps, sizeof smaps, "; smaps%s: %.1f MB anonymous, %.1f MB file-backed, "
			 "%.1f MB shmem", when, anon / UNITS_MB, file / UNITS_MB,
			 shmem / UNITS_MB);
	}
	for (size_t i = 0; i < m->n_images; i++) {
		const struct image_view *im = &m->images[i];
		if (im->at_peak && heap_known(im) && im->peak_rss > im->peak_heap)
			proc_add(c, f, im, (double)(im->peak_rss - im->peak_heap));
	}
	char what[200];
	if (mapped >= UNITS_MB && other >= UNITS_MB)
		snprintf(what, sizeof what, "up to %.1f MB mapped directly with mmap (%.1f MB "
			 "anonymous, %.1f MB file), %.1f MB code, libraries, stacks, JIT code and "
			 "allocator overhead", mapped / UNITS_MB, map_anon / UNITS_MB,
			 map_file / UNITS_MB, other / UNITS_MB);
	else if (mapped >= UNITS_MB)
		snprintf(what, sizeof what, "mapped directly with mmap (%.1f MB anonymous, "
			 "%.1f MB file)", map_anon / UNITS_MB, map_file / UNITS_MB);
	else
		snprintf(what, sizeof what, "code, libraries, stacks, JIT code and allocator "
			 "overhead (no direct mmap)");
	say(f, "At the tree's peak (%.2f s) the traced processes held %.1f MB resident but only "
	    "%.1f MB of live heap: %.1f MB is other memory -- %s%s.",
	    m->peak.at_s, rss / UNITS_MB, heap / UNITS_MB, non_heap / UNITS_MB,
	    what, smaps);
	finding_commit(c);
}

/* Summed RSS counts shared pages once per process: how far it stands above
 * the answer, and why, with figures that add up.  With smaps at the peak
 * sample, summed RSS - summed Pss is exactly the pages counted more than
 * once there; what is left between Pss and the answer is memory the
 * kernel charged to the run that no process maps (page cache, kernel
 * memory) or file pages the kernel charged before the run (negative). */
static void rule_shared(struct ctx *c, const struct merged_run *m)
{
	const struct peak_view *p = &m->peak;
	const struct sup_record *r = m->rec;
	if (p->at_s < 0 || !p->rss || !r || r->peak_mb < 0 ||
	    r->peak_source == SUP_PEAK_POLLED_RSS)
		return; /* the answer is the summed RSS: nothing to compare */
	double rss = (double)p->rss, answer = r->peak_mb * UNITS_MB;
	double above = rss - answer;
	double twice = p->have_smaps && rss > (double)p->pss ? rss - (double)p->pss : 0;
	/* the claim is the larger of what was measured: with smaps, the
	 * pages counted twice; without, summed RSS above the answer */
	double claim = p->have_smaps ? twice : above;
	if (claim < SHARED_MIN_MB * UNITS_MB || claim < rss * SHARED_MIN_FRACTION)
		return;
	struct finding *f = finding_begin(c, "shared_pages");
	fig_mb(f, "rss_sum_mb", rss);
	fig_mb(f, "answer_mb", answer);
	fig_mb(f, "above_answer_mb", above);
	fig_add(f, "processes_at_peak_count", p->nprocs, 0);
	fig_add(f, "peak_at_s", p->at_s, 3);
	if (p->have_smaps) {
		double pss = (double)p->pss;
		fig_mb(f, "pss_sum_mb", pss);
		fig_mb(f, "counted_twice_mb", twice);
		fig_add(f, "counted_twice_pct", 100.0 * twice / rss, 1);
		fig_mb(f, "answer_minus_pss_mb", answer - pss);
		fig_add(f, "smaps_age_s", p->smaps_age_s, 3);
	}
	for (size_t i = 0; i < m->n_images; i++) {
		const struct image_view *im = &m->images[i];
		if (im->at_peak && im->have_smaps && im->peak_rss > im->peak_pss)
			proc_add(c, f, im, (double)(im->peak_rss - im->peak_pss));
	}
	char rest[320] = "";
	if (p->have_smaps && r->peak_source == SUP_PEAK_CGROUP) {
		double d = answer - (double)p->pss;
		if (d >= 0.05 * UNITS_MB)
			snprintf(rest, sizeof rest, "; the answer holds %.1f MB more than that Pss: "
				 "memory charged to the run that no process maps (page cache, "
				 "kernel memory) or that came and went between polls",
				 d / UNITS_MB);
		else if (d <= -0.05 * UNITS_MB)
			snprintf(rest, sizeof rest, "; the answer holds %.1f MB less than that "
				 "Pss: file pages (programs, libraries, data) that were in the page "
				 "cache before the run, charged to whoever read them first",
				 -d / UNITS_MB);
	}
	if (p->have_smaps)
		say(f, "The processes' RSS summed to %.1f MB at the polled peak (%.2f s), %.1f MB "
		    "%s the answer (%.1f MB, %s): %.1f MB of that sum are pages shared between "
		    "processes (copy-on-write after fork, shared files), counted once per process "
		    "that maps them (their Pss, shared pages divided among sharers, summed to "
		    "%.1f MB)%s.",
		    rss / UNITS_MB, p->at_s, (above < 0 ? -above : above) / UNITS_MB,
		    above < 0 ? "below" : "above", answer / UNITS_MB, answer_short(r),
		    twice / UNITS_MB, (double)p->pss / UNITS_MB, rest);
	else
		say(f, "The processes' RSS summed to %.1f MB at the polled peak (%.2f s), %.1f MB "
		    "above the answer (%.1f MB, %s): pages shared between processes (copy-on-write "
		    "after fork, shared files) count once per process in that sum, and file pages "
		    "charged before the run count in it but not in the cgroup.",
		    rss / UNITS_MB, p->at_s, above / UNITS_MB, answer / UNITS_MB, answer_short(r));
	finding_commit(c);
}

/* Fork children hold their parent's heap blocks at the same addresses: a
 * tree's heap summed over images counts each inherited block once per
 * child while the parent holds it too.  Counted at the peak sample, per
 * child: the least of what it inherited, what it held then and what its
 * parent held then (neither can hold more of the shared blocks). */
static void rule_heap_inherited(struct ctx *c, const struct merged_run *m)
{
	if (!m->tracing || m->peak.at_s < 0)
		return;
	double heap = 0, twice = 0;
	for (size_t i = 0; i < m->n_images; i++) {
		const struct image_view *im = &m->images[i];
		if (im->at_peak && heap_known(im))
			heap += (double)im->peak_heap;
	}
	struct finding *f = NULL;
	for (size_t i = 0; i < m->n_images; i++) {
		const struct image_view *im = &m->images[i];
		if (!im->at_peak || !heap_known(im) || im->rec.relation != MT_REL_FORK ||
		    !im->rec.heap_at_fork)
			continue;
		const struct image_view *parent = img_find(m, im->rec.parent_pid, im->rec.parent_gen);
		if (!parent || !parent->at_peak || !heap_known(parent))
			continue; /* the only holder left: its own */
		double v = (double)im->rec.heap_at_fork;
		if ((double)im->peak_heap < v)
			v = (double)im->peak_heap;
		if ((double)parent->peak_heap < v)
			v = (double)parent->peak_heap;
		if (v <= 0)
			continue;
		if (!f)
			f = finding_begin(c, "heap_inherited");
		proc_add(c, f, im, v);
		twice += v;
	}
	if (!f)
		return;
	if (twice < HEAP_INHERITED_MIN_MB * UNITS_MB || twice < heap * HEAP_INHERITED_MIN_FRACTION)
		return; /* begun, never committed: dropped */
	fig_mb(f, "heap_sum_mb", heap);
	fig_mb(f, "inherited_mb", twice);
	fig_mb(f, "own_heap_mb", heap - twice);
	fig_add(f, "process_count", (double)f->procs_total, 0);
	fig_add(f, "peak_at_s", m->peak.at_s, 3);
	say(f, "At the tree's polled peak (%.2f s) the traced heap summed to %.1f MB, but %.1f MB "
	    "of it is heap that %zu fork %s inherited from a parent still holding it (the same "
	    "blocks, counted once per process): the tree's own heap was %.1f MB.",
	    m->peak.at_s, heap / UNITS_MB, twice / UNITS_MB, f->procs_total,
	    plural(f->procs_total, "child", "children"), (heap - twice) / UNITS_MB);
	finding_commit(c);
}

/* Memory requested and never resident: an image whose heap plus anonymous
 * mappings peaked above everything it ever had resident (VmHWM) had at
 * least the difference allocated and never touched at its peak (the
 * kernel gives a page at its first write), or swapped out. */
static void rule_untouched(struct ctx *c, const struct merged_run *m)
{
	if (!m->tracing)
		return;
	struct finding *f = NULL;
	double requested = 0, resident = 0, untouched = 0;
	for (size_t i = 0; i < m->n_images; i++) {
		const struct image_view *im = &m->images[i];
		if (!im->traced || !rec_ended(im) || !im->rec.vm_hwm_kb || heap_foreign(im) ||
		    (im->rec.flags & MT_FLAG_HUGETLB))
			continue;
		double held = (double)im->rec.heap_peak + (double)im->rec.map_anon_peak;
		double hwm = img_hwm(im), gap = held - hwm;
		if (gap < UNTOUCHED_MIN_MB * UNITS_MB || gap < held * UNTOUCHED_MIN_FRACTION)
			continue;
		if (!f)
			f = finding_begin(c, "untouched_memory");
		proc_add(c, f, im, gap);
		requested += held;
		resident += hwm;
		untouched += gap;
	}
	if (!f)
		return;
	const struct image_view *im = f->procs[0];
	double held = (double)im->rec.heap_peak + (double)im->rec.map_anon_peak, hwm = img_hwm(im);
	fig_mb(f, "requested_mb", requested);
	fig_mb(f, "resident_peak_mb", resident);
	fig_mb(f, "untouched_mb", untouched);
	fig_add(f, "process_count", (double)f->procs_total, 0);
	char name[64], more[96] = "";
	if (f->procs_total > 1)
		snprintf(more, sizeof more, " (%zu processes: %.1f MB never resident in all)",
			 f->procs_total, untouched / UNITS_MB);
	say(f, "pid %d %s had %.1f MB of heap and anonymous mappings at its peak but was never "
	    "more than %.1f MB resident (VmHWM): at least %.1f MB were requested and never "
	    "touched (a page costs memory only once written), so its heap figure is not memory "
	    "the machine had to give%s.",
	    (int)im->pid, img_name(im, name, sizeof name), held / UNITS_MB, hwm / UNITS_MB,
	    (held - hwm) / UNITS_MB, more);
	finding_commit(c);
}

/* Traced images that mapped huge pages: memory no RSS, VmHWM or memory
 * cgroup figure holds, so no answer here includes it. */
static void rule_hugetlb(struct ctx *c, const struct merged_run *m)
{
	struct finding *f = NULL;
	double mapped = 0;
	for (size_t i = 0; i < m->n_images; i++) {
		const struct image_view *im = &m->images[i];
		if (!im->traced || !(im->rec.flags & MT_FLAG_HUGETLB))
			continue;
		if (!f)
			f = finding_begin(c, "hugetlb_pages");
		proc_add(c, f, im, (double)im->rec.map_anon_peak);
		if ((double)im->rec.map_anon_peak > mapped)
			mapped = (double)im->rec.map_anon_peak;
	}
	if (!f)
		return;
	const struct image_view *im = f->procs[0];
	fig_add(f, "process_count", (double)f->procs_total, 0);
	fig_mb(f, "largest_mapped_anon_peak_mb", mapped);
	char name[64];
	say(f, "%zu traced %s mapped huge pages from the kernel's pool (MAP_HUGETLB), which no "
	    "RSS, VmHWM or memory-cgroup figure counts: the answer leaves them out, and memsup "
	    "cannot tell how much of %s anonymous mappings (up to %.1f MB, pid %d %s) was "
	    "touched.",
	    f->procs_total, plural(f->procs_total, "process", "processes"),
	    plural(f->procs_total, "its", "their"), mapped / UNITS_MB, (int)im->pid,
	    img_name(im, name, sizeof name));
	finding_commit(c);
}

/* Traced images whose malloc is another allocator's (first in LD_PRELOAD,
 * or the program's own): the hooks never ran for their heap. */
static void rule_heap_not_seen(struct ctx *c, const struct merged_run *m)
{
	struct finding *f = NULL;
	double largest = 0;
	for (size_t i = 0; i < m->n_images; i++) {
		const struct image_view *im = &m->images[i];
		if (!heap_foreign(im))
			continue;
		if (!f)
			f = finding_begin(c, "heap_not_seen");
		double key = img_hwm(im);
		if ((double)im->polled_peak_rss > key)
			key = (double)im->polled_peak_rss;
		if (key > largest)
			largest = key;
		proc_add(c, f, im, key);
	}
	if (!f)
		return;
	const struct image_view *im = f->procs[0];
	fig_add(f, "process_count", (double)f->procs_total, 0);
	fig_mb(f, "largest_resident_mb", largest);
	char name[64];
	say(f, "%zu traced %s called another allocator's malloc (one earlier in LD_PRELOAD than "
	    "the shim, or the program's own), so the shim saw none of %s heap: %s heap "
	    "figures are unknown, not 0, and %s mappings include that allocator's own; the "
	    "largest, pid %d %s, was %.1f MB resident.",
	    f->procs_total, plural(f->procs_total, "process", "processes"),
	    plural(f->procs_total, "its", "their"), plural(f->procs_total, "its", "their"),
	    plural(f->procs_total, "its", "their"), (int)im->pid, img_name(im, name, sizeof name),
	    largest / UNITS_MB);
	finding_commit(c);
}

/* The answer below the largest single process's own peak: with a memory
 * cgroup, pages the kernel charged before the run (files already in the
 * page cache: the program, its libraries, data read before) count in a
 * process's RSS but not against the run. */
static void rule_charged_elsewhere(struct ctx *c, const struct merged_run *m)
{
	const struct sup_record *r = m->rec;
	if (!r || r->peak_source != SUP_PEAK_CGROUP || r->rusage_children_maxrss_mb < 0)
		return;
	double ru = r->rusage_children_maxrss_mb * UNITS_MB, answer = r->peak_mb * UNITS_MB;
	double below = ru - answer;
	if (below < ELSEWHERE_MIN_MB * UNITS_MB)
		return;
	struct finding *f = finding_begin(c, "charged_elsewhere");
	char who[96];
	name_largest(c, f, m, who, sizeof who);
	fig_mb(f, "answer_mb", answer);
	fig_mb(f, "largest_process_mb", ru);
	fig_mb(f, "below_by_mb", below);
	say(f, "The answer, %.1f MB, is %.1f MB below the largest single process's own peak, "
	    "%.1f MB%s (getrusage, time -v): that process's resident pages included file pages "
	    "(its program, libraries, data) already in the page cache before the run, which "
	    "the kernel had charged to whoever read them first, not to this run.",
	    answer / UNITS_MB, below / UNITS_MB, ru / UNITS_MB, who);
	finding_commit(c);
}

/* A fork child between its fork and its exec shares its parent's pages:
 * the tree's peak sample summed them for both.  Named from the sample and
 * the records alone (no smaps needed), so the same run always says it. */
static void rule_fork_before_exec(struct ctx *c, const struct merged_run *m)
{
	struct finding *f = NULL;
	double counted = 0;
	if (m->peak.at_s < 0)
		return;
	for (size_t i = 0; i < m->n_images; i++) {
		const struct image_view *im = &m->images[i];
		const struct image_view *next = i + 1 < m->n_images ? &m->images[i + 1] : NULL;
		if (!im->at_peak || !im->traced || im->rec.relation != MT_REL_FORK ||
		    im->peak_rss < FORK_EXEC_MIN_MB * UNITS_MB || !next || next->pid != im->pid)
			continue; /* not a pre-exec fork child of size at the peak */
		if (!f)
			f = finding_begin(c, "fork_before_exec");
		proc_add(c, f, im, (double)im->peak_rss);
		counted += (double)im->peak_rss;
	}
	if (!f)
		return;
	const struct image_view *im = f->procs[0], *after = im + 1; /* (pid, gen) order */
	char name[96], own[96] = "";
	fig_add(f, "process_count", (double)f->procs_total, 0);
	fig_mb(f, "counted_mb", counted);
	fig_mb(f, "tree_peak_mb", (double)m->peak.rss);
	fig_add(f, "peak_at_s", m->peak.at_s, 3);
	if (after->traced && after->rec.state != MT_STATE_RUNNING && after->rec.vm_hwm_kb) {
		fig_mb(f, "largest_after_exec_hwm_mb", (double)after->rec.vm_hwm_kb * UNITS_KIB);
		snprintf(own, sizeof own, "; after its exec it reached %.1f MB of its own",
			 (double)after->rec.vm_hwm_kb * UNITS_KIB / UNITS_MB);
	}
	say(f, "At the tree's peak (%.2f s) %zu fork %s had not exec'd yet and %s counted at "
	    "%.1f MB (the largest, pid %d '%s', child of %d%s): a fork child shares its "
	    "parent's pages until it writes to them or execs, so the tree's peak counts up to "
	    "that much twice.",
	    m->peak.at_s, f->procs_total, plural(f->procs_total, "child", "children"),
	    plural(f->procs_total, "was", "were"), counted / UNITS_MB, (int)im->pid,
	    img_name(im, name, sizeof name), (int)im->rec.parent_pid, own);
	finding_commit(c);
}

/* Processes the shim never saw from inside. */
static void rule_untraced(struct ctx *c, const struct merged_run *m)
{
	if (!m->tracing) {
		size_t n = 0;
		for (size_t i = 0; i < m->n_images; i++)
			n += m->images[i].sampled != 0;
		struct finding *f = finding_begin(c, "untraced");
		/* not asked for, or asked for and impossible: the words must say
		 * which, or a user hunts a --no-trace they never gave */
		if (m->rec && m->rec->shim_searched) {
			f->why = merge_untraced_name(UNTRACED_NO_SHIM);
			fig_add(f, "process_count", (double)n, 0);
			say(f, "libmemtrace.so was not found (memsup looked %s): %zu %s seen, none "
			    "traced, so there are no heap figures, no exact VmHWM at exit, and nothing "
			    "of processes that lived between polls.", m->rec->shim_searched, n,
			    plural(n, "process", "processes"));
			finding_commit(c);
			return;
		}
		f->why = merge_untraced_name(UNTRACED_NOT_REQUESTED);
		fig_add(f, "process_count", (double)n, 0);
		say(f, "memsup ran with --no-trace: %zu %s seen, none traced, so there are no heap "
		    "figures, no exact VmHWM at exit, and nothing of processes that lived between "
		    "polls.", n, plural(n, "process", "processes"));
		finding_commit(c);
		return;
	}
	struct finding *f = NULL;
	size_t by[UNTRACED_COUNT] = { 0 };
	int64_t other_uid = -1; /* the first OTHER_USER image's uid */
	double at_peak = 0, largest = 0;
	for (size_t i = 0; i < m->n_images; i++) {
		const struct image_view *im = &m->images[i];
		if (im->traced || im->record_error || !im->sampled)
			continue;
		if (!f)
			f = finding_begin(c, "untraced");
		unsigned w = (unsigned)im->untraced_why < UNTRACED_COUNT ? im->untraced_why : 0;
		by[w]++;
		if (w == UNTRACED_OTHER_USER && other_uid < 0)
			other_uid = im->untraced_uid;
		if (im->at_peak)
			at_peak += (double)im->peak_rss;
		if ((double)im->polled_peak_rss > largest)
			largest = (double)im->polled_peak_rss;
		proc_add(c, f, im, (double)im->polled_peak_rss);
	}
	if (!f)
		return;
	fig_add(f, "process_count", (double)f->procs_total, 0);
	fig_add(f, "static_count", (double)by[UNTRACED_STATIC], 0);
	fig_add(f, "secure_count", (double)by[UNTRACED_SECURE], 0);
	fig_add(f, "no_preload_count", (double)by[UNTRACED_NO_PRELOAD], 0);
	fig_add(f, "other_user_count", (double)by[UNTRACED_OTHER_USER], 0);
	fig_add(f, "pid_namespace_count", (double)by[UNTRACED_PID_NAMESPACE], 0);
	fig_add(f, "unknown_count", (double)(by[UNTRACED_UNKNOWN] + by[UNTRACED_NOT_REQUESTED]), 0);
	fig_mb(f, "rss_at_peak_mb", at_peak);
	fig_mb(f, "largest_polled_peak_rss_mb", largest);
	/* why, in words: "2 static binaries, 1 with LD_PRELOAD removed" */
	char why[400];
	size_t o = 0;
	static const struct {
		enum untraced_why w;
		const char *one, *many;
	} words[] = {
		{ UNTRACED_STATIC, "static binary", "static binaries" },
		{ UNTRACED_SECURE, "setuid/setgid program (the loader drops LD_PRELOAD)",
		  "setuid/setgid programs (the loader drops LD_PRELOAD)" },
		{ UNTRACED_NO_PRELOAD, "started with LD_PRELOAD removed from its environment",
		  "started with LD_PRELOAD removed from their environment" },
		{ UNTRACED_OTHER_USER, "that changed its user", "that changed their user" },
		{ UNTRACED_PID_NAMESPACE,
		  "in a PID namespace of its own, whose record is named by its pid there",
		  "in PID namespaces of their own, whose records are named by their pids there" },
		{ UNTRACED_UNKNOWN, "for a reason memsup could not tell",
		  "for a reason memsup could not tell" },
	};
	why[0] = '\0';
	for (size_t k = 0; k < sizeof words / sizeof words[0]; k++) {
		size_t cnt = by[words[k].w];
		if (words[k].w == UNTRACED_UNKNOWN)
			cnt += by[UNTRACED_NOT_REQUESTED];
		if (!cnt || o >= sizeof why)
			continue;
		char what[160];
		snprintf(what, sizeof what, "%s", cnt == 1 ? words[k].one : words[k].many);
		if (words[k].w == UNTRACED_OTHER_USER && cnt == 1)
			snprintf(what, sizeof what, "that changed its user to uid %lld, who may not "
				 "write the run's records directory", (long long)other_uid);
		else if (words[k].w == UNTRACED_OTHER_USER)
			snprintf(what, sizeof what, "that changed their user (the first to uid %lld), "
				 "who may not write the run's records directory", (long long)other_uid);
		int w = snprintf(why + o, sizeof why - o, "%s%zu %s", o ? ", " : "", cnt, what);
		if (w > 0)
			o += (size_t)w;
	}
	char name[64];
	const struct image_view *im = f->procs[0];
	say(f, "%zu %s ran without the shim (%s), pid %d %s the largest at %.1f MB polled: "
	    "memsup has only their polled RSS -- no heap figures, no exact VmHWM at exit, "
	    "nothing between polls%s.",
	    f->procs_total, plural(f->procs_total, "process", "processes"), why, (int)im->pid,
	    img_name(im, name, sizeof name), largest / UNITS_MB,
	    at_peak > 0 ? "; they held part of the tree's peak" : "");
	finding_commit(c);
}

/* Left the session: a process-group kill would have missed them. */
static void rule_escaped(struct ctx *c, const struct merged_run *m)
{
	struct finding *f = NULL;
	size_t killed = 0;
	double largest = 0;
	for (size_t i = 0; i < m->n_images; i++) {
		const struct image_view *im = &m->images[i];
		if (!im->escaped)
			continue;
		if (!f)
			f = finding_begin(c, "escaped");
		killed += im->leftover_killed != 0;
		if ((double)im->polled_peak_rss > largest)
			largest = (double)im->polled_peak_rss;
		proc_add(c, f, im, (double)im->polled_peak_rss);
	}
	if (!f)
		return;
	fig_add(f, "process_count", (double)f->procs_total, 0);
	fig_add(f, "killed_count", (double)killed, 0);
	fig_mb(f, "largest_polled_peak_rss_mb", largest);
	char name[64], end[64] = "";
	const struct image_view *im = f->procs[0];
	if (killed == f->procs_total)
		snprintf(end, sizeof end, " and killed %s when the run ended",
			 plural(killed, "it", "them"));
	else if (killed)
		snprintf(end, sizeof end, " and killed %zu of them when the run ended", killed);
	say(f, "%zu %s left the command's session (setsid), out of reach of a process-group "
	    "kill, e.g. pid %d %s (%.1f MB polled); memsup still measured %s as descendants%s.",
	    f->procs_total, plural(f->procs_total, "process", "processes"), (int)im->pid,
	    img_name(im, name, sizeof name), largest / UNITS_MB,
	    plural(f->procs_total, "it", "them"), end);
	finding_commit(c);
}

/* How far past --rss-mb the tree got before the kill. */
static void rule_budget(struct ctx *c, const struct merged_run *m)
{
	const struct sup_record *r = m->rec;
	if (!r || r->reason != SUP_REASON_RSS_BUDGET ||
	    r->rss_budget_mb <= 0 || r->peak_at_s < 0)
		return;
	double tree = (double)r->peak_bytes / UNITS_MB, over = tree - r->rss_budget_mb;
	if (over < 0)
		over = 0;
	struct finding *f = finding_begin(c, "budget_overshoot");
	fig_add(f, "rss_budget_mb", r->rss_budget_mb, 2);
	fig_add(f, "tree_peak_mb", tree, 2);
	fig_add(f, "over_budget_mb", over, 2);
	fig_add(f, "over_budget_pct", 100.0 * over / r->rss_budget_mb, 1);
	fig_add(f, "tree_peak_at_s", r->peak_at_s, 3);
	say(f, "The tree reached %.1f MB against a budget of %.1f MB (%.1f MB, %.1f%% over) "
	    "at %.2f s before memsup killed it; growth after that sample was not measured.",
	    tree, r->rss_budget_mb, over, 100.0 * over / r->rss_budget_mb, r->peak_at_s);
	finding_commit(c);
}

/* Record files that failed validation: never trusted. */
static void rule_corrupt(struct ctx *c, const struct merged_run *m)
{
	struct finding *f = NULL;
	for (size_t i = 0; i < m->n_images; i++) {
		const struct image_view *im = &m->images[i];
		if (!im->record_error || im->record_error == -RECORDFILE_EIMPLAUSIBLE)
			continue;
		if (!f)
			f = finding_begin(c, "corrupt_record");
		/* keep the order of the merged run (by pid, gen) */
		proc_add(c, f, im, 0);
	}
	if (!f)
		return;
	fig_add(f, "record_count", (double)f->procs_total, 0);
	const struct image_view *im = f->procs[0];
	int e = im->record_error > 0 ? -im->record_error : im->record_error;
	say(f, "%zu record %s failed validation and %s not trusted (first: %d.%u.mtr, %s): "
	    "the shim's figures for %s are missing.",
	    f->procs_total, plural(f->procs_total, "file", "files"),
	    plural(f->procs_total, "was", "were"), (int)im->pid, (unsigned)im->gen,
	    recordfile_strerror(e), plural(f->procs_total, "that image", "those images"));
	finding_commit(c);
}

/* Records memsup did not believe (merge.c): named, with the first thing
 * that could not be true; their figures are in no other finding and no
 * headline number. */
static void rule_implausible(struct ctx *c, const struct merged_run *m)
{
	if (!m->n_aside)
		return;
	const struct merge_aside *a = &m->aside[0];
	size_t outside = 0;
	for (size_t i = 0; i < m->n_aside; i++)
		outside += !m->aside[i].in_tree;
	struct finding *f = finding_begin(c, "implausible_record");
	fig_add(f, "record_count", (double)m->n_aside, 0);
	fig_add(f, "outside_tree_count", (double)outside, 0);
	fig_add(f, "first_pid", (double)a->pid, 0);
	fig_add(f, "first_gen", (double)a->gen, 0);
	for (size_t i = 0; i < m->n_images; i++)
		if (m->images[i].record_error == -RECORDFILE_EIMPLAUSIBLE)
			proc_add(c, f, &m->images[i], 0);
	say(f, "%zu record %s in the records directory %s not believed (first: %d.%u.mtr: %s): "
	    "a record is the traced command's word, and %s figures are in no total here.",
	    m->n_aside, plural(m->n_aside, "file", "files"), plural(m->n_aside, "was", "were"),
	    (int)a->pid, (unsigned)a->gen, a->why, plural(m->n_aside, "its", "their"));
	finding_commit(c);
}

/* When the command's own last image ended, by the shim's clock (seconds
 * of the run); < 0 when no record says. */
static double main_end_s(const struct merged_run *m)
{
	const struct image_view *last = NULL;
	for (size_t i = 0; i < m->n_images; i++) {
		const struct image_view *im = &m->images[i];
		if (im->pid == m->rec->pid && im->traced && (!last || im->gen > last->gen))
			last = im;
	}
	if (!last || !last->rec.end_mono_ns || last->rec.end_mono_ns < m->start_mono_ns)
		return -1;
	return (double)(last->rec.end_mono_ns - m->start_mono_ns) / 1e9;
}

/* An RSS budget the samples never saw crossed, while memsup could not look:
 * a process's own VmHWM above the budget proves the tree crossed it (one
 * process alone held that much); else the kernel's peak of the run's
 * cgroup above it says the tree may have (that peak counts page cache and
 * kernel memory too, which RSS does not). */
static void gap_rss_budget(struct finding *f, const struct merged_run *m)
{
	const struct sup_record *r = m->rec;
	double budget = r->rss_budget_mb * UNITS_MB;
	if (budget <= 0 || r->reason == SUP_REASON_RSS_BUDGET || (double)r->peak_bytes >= budget)
		return;
	const struct image_view *top = NULL;
	for (size_t i = 0; i < m->n_images; i++)
		if (!top || img_hwm(&m->images[i]) > img_hwm(top))
			top = &m->images[i];
	char tail[240];
	if (top && img_hwm(top) >= budget) {
		fig_mb(f, "rss_budget_mb", budget);
		fig_mb(f, "vm_hwm_mb", img_hwm(top));
		fig_add(f, "vm_hwm_pid", top->pid, 0);
		snprintf(tail, sizeof tail, " The RSS budget of %.1f MB was crossed unseen: pid %d "
			 "alone reached VmHWM %.1f MB, and no sample saw the tree above %.1f MB.",
			 budget / UNITS_MB, (int)top->pid, img_hwm(top) / UNITS_MB,
			 (double)r->peak_bytes / UNITS_MB);
	} else if (r->cgroup.have_peak && (double)r->cgroup.peak >= budget) {
		fig_mb(f, "rss_budget_mb", budget);
		fig_mb(f, "kernel_peak_mb", (double)r->cgroup.peak);
		snprintf(tail, sizeof tail, " The kernel's peak for the run's cgroup, %.1f MB "
			 "(page cache and kernel memory included), passed the RSS budget of %.1f MB "
			 "that no sample saw crossed: the tree may have crossed it inside the gap.",
			 (double)r->cgroup.peak / UNITS_MB, budget / UNITS_MB);
	} else {
		return;
	}
	size_t n = strlen(f->sentence);
	snprintf(f->sentence + n, sizeof f->sentence - n, "%s", tail);
}

static void rule_gap(struct ctx *c, const struct merged_run *m)
{
	const struct sup_record *r = m->rec;
	if (!r || r->longest_gap_s < 0 || r->poll_s <= 0 ||
	    r->longest_gap_s < GAP_MIN_PERIODS * r->poll_s || r->longest_gap_s < GAP_MIN_S)
		return;
	double from = r->longest_gap_at_s, to = from + r->longest_gap_s, wall = r->wall_budget_s;
	struct finding *f = finding_begin(c, "sampling_gap");
	fig_add(f, "gap_s", r->longest_gap_s, 3);
	fig_add(f, "from_s", from, 3);
	fig_add(f, "to_s", to, 3);
	fig_add(f, "poll_periods", r->longest_gap_s / r->poll_s, 0);
	say(f, "memsup took no sample for %.2f s (from %.2f s to %.2f s into the run, %.0f poll "
	    "periods): memsup was stopped or the machine stalled, and whatever the tree did then "
	    "(a spike, a short process) is in no sample.",
	    r->longest_gap_s, from, to, r->longest_gap_s / r->poll_s);
	if (wall > 0 && from < wall && wall <= to) {
		double end = main_end_s(m);
		char tail[200];
		fig_add(f, "wall_budget_s", wall, 3);
		if (r->reason == SUP_REASON_WALL_BUDGET)
			snprintf(tail, sizeof tail, " The wall budget of %.2f s passed inside the gap "
				 "and was enforced late, when memsup looked again.", wall);
		else if (end >= 0 && end < wall)
			snprintf(tail, sizeof tail, " The wall budget of %.2f s fell inside the gap; "
				 "the command had ended before it, at %.2f s.", wall, end);
		else if (end >= 0)
			snprintf(tail, sizeof tail, " The wall budget of %.2f s passed inside the gap "
				 "while the command still ran (it ended at %.2f s): not enforced.",
				 wall, end);
		else
			snprintf(tail, sizeof tail, " The wall budget of %.2f s passed inside the gap; "
				 "the command ended before %.2f s, maybe after the budget: not "
				 "enforced.", wall, to);
		size_t n = strlen(f->sentence);
		snprintf(f->sentence + n, sizeof f->sentence - n, "%s", tail);
		if (end >= 0)
			fig_add(f, "command_end_s", end, 3);
	}
	gap_rss_budget(f, m);
	finding_commit(c);
}

/* What Slurm's MaxRSS says of this run, against the answer. */
static void rule_slurm(struct ctx *c, const struct merged_run *m)
{
	const struct sup_record *r = m->rec;
	const struct slurm_job *j = r ? r->slurm : NULL;
	if (!j || !j->job_id[0] || r->peak_mb < 0)
		return;
	char job[128];
	snprintf(job, sizeof job, "Slurm job %s%s%s", j->job_id, j->step_id[0] ? " step " : "",
		 j->step_id);
	double tree = r->peak_mb;
	struct finding *f;
	if (strcmp(j->gather, "none") == 0) {
		f = finding_begin(c, "slurm_maxrss");
		fig_add(f, "tree_peak_mb", tree, 2);
		say(f, "%s keeps no memory figure (JobAcctGatherType jobacct_gather/none in %s): "
		    "sstat and sacct have no MaxRSS for it; the tree held %s%.1f MB at once (%s).",
		    job, j->conf, r->peak_source == SUP_PEAK_CGROUP ? "" : "at least ", tree,
		    answer_short(r));
		finding_commit(c);
		return;
	}
	char how[PATH_MAX + 160];
	if (j->gather[0])
		snprintf(how, sizeof how, "jobacct_gather/%s", j->gather);
	else
		snprintf(how, sizeof how, "%s unread: %s; its plugin unknown", j->conf,
			 strerror(j->conf_error));
	if (!r->have_slurm_poll) {
		if (j->poll_s > 0)
			return; /* no sample: nothing to say of the run */
		f = finding_begin(c, "slurm_maxrss");
		fig_add(f, "slurm_poll_s", 0, 0);
		fig_add(f, "tree_peak_mb", tree, 2);
		say(f, "%s (%s) has Slurm's periodic poll off (task=0, from %s): its MaxRSS comes "
		    "only from what Slurm gathers as the job ends, not from the run's peak; the tree "
		    "held %s%.1f MB at once (%s).", job, how, j->poll_from,
		    r->peak_source == SUP_PEAK_CGROUP ? "" : "at least ", tree, answer_short(r));
		finding_commit(c);
		return;
	}
	double low = (double)r->slurm_poll_low / UNITS_MB, high = (double)r->slurm_poll_high / UNITS_MB;
	double under = tree - low, over = high - tree;
	double margin = tree * SLURM_MIN_FRACTION > SLURM_MIN_MB ? tree * SLURM_MIN_FRACTION : SLURM_MIN_MB;
	if (under < margin && over < margin)
		return;
	f = finding_begin(c, "slurm_maxrss");
	fig_add(f, "slurm_poll_s", j->poll_s, 3);
	fig_add(f, "slurm_maxrss_low_mb", low, 2);
	fig_add(f, "slurm_maxrss_high_mb", high, 2);
	fig_add(f, "tree_peak_mb", tree, 2);
	fig_add(f, "between_polls_mb", high - low, 2);
	fig_add(f, "beyond_poll_mb", tree > high ? tree - high : 0, 2);
	fig_add(f, "poll_above_answer_mb", over > 0 ? over : 0, 2);
	int anon = r->slurm_poll_reads && strcmp(r->slurm_poll_reads, "cgroup_anon") == 0;
	char rest[400] = "";
	size_t o = 0;
	if (high - low >= SLURM_MIN_MB && o < sizeof rest)
		o += (size_t)snprintf(rest + o, sizeof rest - o, "; up to %.1f MB came and went "
				      "between two of Slurm's polls", high - low);
	if (tree - high >= SLURM_MIN_MB && o < sizeof rest)
		o += (size_t)snprintf(rest + o, sizeof rest - o, "; %.1f MB of the answer is in no "
				      "poll's figure at any sample (%s)", tree - high,
				      anon ? "page cache, shared memory, kernel memory"
					   : "page cache, kernel memory, or between memsup's own samples");
	if (over >= SLURM_MIN_MB && o < sizeof rest)
		o += (size_t)snprintf(rest + o, sizeof rest - o, "; the summed RSS reads %.1f MB above "
				      "the answer: pages shared between processes, counted once per "
				      "process", over);
	say(f, "%s (%s, a poll every %g s, from %s): Slurm's MaxRSS (sstat, sacct, seff) is the "
	    "most %s that one poll read, between %.1f and %.1f MB for this run depending on when its "
	    "polls fell; the tree held %s%.1f MB at once (%s)%s.",
	    job, how, j->poll_s, j->poll_from,
	    anon ? "anonymous memory of the task's cgroup" : "summed RSS of its processes", low, high,
	    r->peak_source == SUP_PEAK_CGROUP ? "" : "at least ", tree, answer_short(r), rest);
	finding_commit(c);
}

size_t findings_compute(const struct merged_run *m, struct finding *out, size_t cap)
{
	struct ctx c;
	memset(&c, 0, sizeof c);
	c.out = out;
	c.cap = cap;
	if (!m)
		return 0;
	rule_rusage_children(&c, m);
	rule_exec_floor(&c, m);
	rule_unsampled(&c, m);
	rule_transient(&c, m);
	rule_page_cache(&c, m);
	rule_non_heap(&c, m);
	rule_shared(&c, m);
	rule_heap_inherited(&c, m);
	rule_untouched(&c, m);
	rule_heap_not_seen(&c, m);
	rule_hugetlb(&c, m);
	rule_charged_elsewhere(&c, m);
	rule_fork_before_exec(&c, m);
	rule_untraced(&c, m);
	rule_escaped(&c, m);
	rule_budget(&c, m);
	rule_corrupt(&c, m);
	rule_implausible(&c, m);
	rule_gap(&c, m);
	rule_slurm(&c, m);
	return c.n;
}

/* ---- output ------------------------------------------------------------- */

static void put_mb(struct jsonw *w, const char *key, double bytes)
{
	jsonw_key(w, key);
	jsonw_double(w, bytes / UNITS_MB, 2);
}

static void put_argv(struct jsonw *w, const char *argv, size_t len)
{
	jsonw_array_begin(w);
	size_t i = 0;
	while (argv && i < len) {
		size_t n = strnlen(argv + i, len - i);
		jsonw_string_n(w, argv + i, n);
		i += n + 1;
	}
	jsonw_array_end(w);
}

static void put_process(struct jsonw *w, const struct image_view *im)
{
	jsonw_object_begin(w);
	jsonw_key(w, "pid");
	jsonw_int(w, im->pid);
	jsonw_key(w, "gen");
	jsonw_uint(w, im->gen);
	jsonw_key(w, "ppid");
	jsonw_int(w, im->ppid);
	jsonw_key(w, "argv");
	put_argv(w, im->argv, im->argv_len);
	jsonw_key(w, "exe");
	jsonw_string(w, im->exe);
	jsonw_key(w, "traced");
	jsonw_bool(w, im->traced);
	jsonw_key(w, "sampled");
	jsonw_bool(w, im->sampled);
	if (im->sampled)
		put_mb(w, "polled_peak_rss_mb", (double)im->polled_peak_rss);
	double hwm = img_hwm(im);
	if (hwm > 0)
		put_mb(w, "vm_hwm_mb", hwm);
	if (heap_known(im))
		put_mb(w, "heap_peak_mb", (double)im->rec.heap_peak);
	if (heap_foreign(im)) {
		jsonw_key(w, "heap_not_seen");
		jsonw_string(w, "malloc is another allocator's");
	}
	if (im->traced)
		put_mb(w, "mapped_peak_mb", (double)(im->rec.map_anon_peak + im->rec.map_file_peak));
	if (rec_ended(im) && im->rec.ru_maxrss_self_kb)
		put_mb(w, "ru_maxrss_mb", (double)im->rec.ru_maxrss_self_kb * UNITS_KIB);
	if (im->at_peak) {
		put_mb(w, "rss_at_peak_mb", (double)im->peak_rss);
		if (heap_known(im))
			put_mb(w, "heap_at_peak_mb", (double)im->peak_heap);
		if (im->have_smaps)
			put_mb(w, "pss_at_peak_mb", (double)im->peak_pss);
	}
	if (!im->traced && !im->record_error) {
		jsonw_key(w, "untraced_why");
		jsonw_string(w, merge_untraced_name(im->untraced_why));
	}
	if (im->record_error) {
		int e = im->record_error > 0 ? -im->record_error : im->record_error;
		jsonw_key(w, "record_error");
		jsonw_string(w, recordfile_strerror(e));
	}
	if (im->escaped) {
		jsonw_key(w, "escaped");
		jsonw_bool(w, 1);
		jsonw_key(w, "killed_by_memsup");
		jsonw_bool(w, im->leftover_killed);
	}
	jsonw_object_end(w);
}

void findings_write_json(struct jsonw *w, const struct finding *f, size_t n)
{
	jsonw_array_begin(w);
	for (size_t i = 0; i < n; i++) {
		const struct finding *x = &f[i];
		jsonw_object_begin(w);
		jsonw_key(w, "kind");
		jsonw_string(w, x->kind);
		jsonw_key(w, "sentence");
		jsonw_string(w, x->sentence);
		for (size_t k = 0; k < x->n_figures; k++) {
			jsonw_key(w, x->figures[k].key);
			if (x->figures[k].decimals)
				jsonw_double(w, x->figures[k].value, x->figures[k].decimals);
			else
				jsonw_int(w, (int64_t)(x->figures[k].value + (x->figures[k].value < 0 ? -0.5 : 0.5)));
		}
		if (x->why) {
			jsonw_key(w, "untraced_why");
			jsonw_string(w, x->why);
		}
		jsonw_key(w, "processes_total");
		jsonw_uint(w, x->procs_total);
		jsonw_key(w, "processes");
		jsonw_array_begin(w);
		for (size_t k = 0; k < x->n_procs; k++)
			put_process(w, x->procs[k]);
		jsonw_array_end(w);
		jsonw_object_end(w);
	}
	jsonw_array_end(w);
}

void findings_print(FILE *out, const struct finding *f, size_t n)
{
	for (size_t i = 0; i < n; i++)
		fprintf(out, "memsup: %s: %s\n", f[i].kind, f[i].sentence);
}

void findings_apply(struct sup_record *r, const struct merged_run *m, struct finding *buf,
		    size_t cap)
{
	int traced_at_peak = 0, heap_seen = 0;
	for (size_t i = 0; i < m->n_images; i++) {
		r->processes_traced += m->images[i].traced != 0;
		r->processes_sampled += m->images[i].sampled != 0;
		traced_at_peak |= m->images[i].traced && !heap_foreign(&m->images[i]) &&
				  m->images[i].at_peak;
		heap_seen |= m->images[i].traced && !heap_foreign(&m->images[i]);
	}
	/* No traced image at the peak (a static binary, env -i), or only
	 * images whose malloc the shim never saw: the heap was not measured,
	 * which is null, not 0. */
	if (m->peak.at_s >= 0 && m->tracing && traced_at_peak) {
		r->peak_heap_mb = (double)m->peak.heap / UNITS_MB;
		r->peak_mapped_mb = (double)(m->peak.map_anon + m->peak.map_file) / UNITS_MB;
	}
	/* the heap's own peak, exact where the shim's figure could be taken
	 * (merge.h: heap_peak_view), rather than the heap at the RSS peak */
	if (m->tracing && heap_seen && m->heap_peak.have && m->heap_peak.counted)
		r->peak_heap_mb = (double)m->heap_peak.heap / UNITS_MB;
	if (m->peak.at_s >= 0 && m->peak.have_smaps)
		r->peak_pss_mb = (double)m->peak.pss / UNITS_MB;
	/* the rules measure every other figure against the answer */
	answer_apply(r);
	size_t n = findings_compute(m, buf, cap);
	r->findings = buf;
	r->n_findings = n < cap ? n : cap;
}
