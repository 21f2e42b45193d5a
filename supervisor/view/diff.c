/* diff.c: `memsup diff BASE NEW` -- a regression gate between two runs.
 *
 * The answer (peak_mb) and each process image are compared.  Pids differ
 * from run to run, so an image is matched by its whole command line, its
 * parent's program and its rank among equals; those left over (an argument
 * changed: a size, a temporary path) then by their program instead.  The
 * call sites, each image's at its own peak, are matched by their symbolized
 * stack and summed over images, and a sweep run by run, paired by its
 * --meta labels.  The answer is held to --max-increase, processes and
 * sites to --process-max-increase (a percent or MB) and must also grow by
 * --floor MB, so that the noise of tiny ones never fails a gate.  What the
 * tree and each image still held in heap when they ended by exit
 * (record.heap_current), and each site as its images ended (stacks.json's
 * at_exit), is compared the same way: a slow leak shows there before it
 * moves a peak.  A run the kernel's OOM killer cut short where its
 * baseline ran whole regresses too, whatever its peak: a kill often lowers
 * the peak it ended.  Exit 0 / 1 (a regression) / 125 (bad usage or input).  A
 * baseline that is missing or broken is 125, never a pass: a gate that
 * passes when its baseline is gone guards nothing; so is a run, either
 * side, whose command could not start (it has no peak).
 *
 * Everything is read and compared before anything is written, so bad input
 * leaves stdout empty and creates no --junit file.  The command line is
 * cmd_diff.c's. */
#include "evidence/files.h"
#include "view/diff.h"
#include "base/rootsq.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <limits.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "base/cleanup.h"
#include "evidence/read.h"
#include "base/clock.h"
#include "base/grow.h"
#include "jsonw.h"
#include "base/number.h"
#include "evidence/jsonr.h"
#include "view/report.h"
#include "analyze/runrecord.h"

/* As memsup report: a stray huge file is refused, not read. */
#define DIFF_MAX_FILE_BYTES (256u << 20)
/* The human output names at most this many processes. */
#define DIFF_SHOW_ROWS 10
/* ... and shows at most this many bytes of a command. */
#define DIFF_NAME_WIDTH 60
/* A process whose peak moved by less than this, or than --floor when that
 * is larger, is not listed: its figures move by that much from run to run
 * (a polled RSS by a page table's worth, 0.1 MB, in a loaded test), and a
 * change that could never regress is not one of "the lines that changed". */
#define DIFF_NOISE_MB 0.1

/* How a row is named in the text verdict, after its change. */
static const char *const diff_kind_word[] = { [DIFF_PROCESS] = "", [DIFF_SITE] = "site ",
					      [DIFF_LIVE] = "live at exit ",
					      [DIFF_SITE_LIVE] = "site live at exit " };

/* ---- the limit ---- */

int diff_limit_parse(const char *s, struct diff_limit *out)
{
	static const struct {
		const char *suffix;
		double mb;      /* MB per unit; 0: a percent */
		double hi;
	} units[] = {
		{ "%", 0, 1e6 }, { "KB", 1e-3, 1e12 }, { "MB", 1, 1e9 }, { "GB", 1e3, 1e6 },
	};
	char num[64];

	if (!s)
		return -EINVAL;
	size_t len = strlen(s);
	for (size_t i = 0; i < sizeof units / sizeof units[0]; i++) {
		size_t sl = strlen(units[i].suffix);
		if (len <= sl || len - sl >= sizeof num || strcmp(s + len - sl, units[i].suffix) != 0)
			continue;
		memcpy(num, s, len - sl);
		num[len - sl] = '\0';
		double v;
		int rc = number_real(num, 0, 0, units[i].hi, &v);
		if (rc < 0)
			return rc;
		out->percent = units[i].mb == 0;
		out->value = out->percent ? v : v * units[i].mb;
		return 0;
	}
	return -EINVAL;
}

int diff_exceeds(const struct diff_limit *lim, double floor_mb, double base_mb, double new_mb)
{
	if (isnan(new_mb))
		return 0; /* gone: never a regression */
	if (isnan(base_mb))
		base_mb = 0; /* new: all of it is growth */
	double grew = new_mb - base_mb;
	double allowed = lim->percent ? base_mb * lim->value / 100 : lim->value;
	return grew > allowed && grew >= floor_mb && grew > 0;
}

/* ---- reading a run ---- */

static void diff_err(char *err, size_t errlen, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

static void diff_err(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
}

/* One image as read, before its key is known. */
struct diff_image {
	long long pid, gen, parent_pid, parent_gen;
	char *cmd;      /* argv joined by spaces, else exe, else "?" (owned) */
	char *prog;     /* basename of argv[0] (owned) */
	double mb;
	double live_mb; /* heap_current of an image that ended by exit or _exit, else NAN */
	size_t order;   /* position in processes.json */
	const char *parent_prog; /* the parent's prog, "" for none */
	size_t rank, rank2; /* 1 for the first of equal (parent_prog, cmd) / (parent_prog, prog) */
};

struct diff_images {
	struct diff_image *v;
	size_t n, cap;
};

static char *diff_command(const struct evidence_process *p)
{
	const struct jsonr_value *argv = p->argv;
	size_t len = 0;

	for (size_t i = 0; argv && i < argv->n; i++)
		if (argv->items[i].type == JSONR_STRING)
			len += argv->items[i].len + 1;
	if (!len) {
		const char *exe = p->exe ? p->exe : "?";
		return strdup(*exe && !memchr(exe, '\x1f', strlen(exe)) ? exe : "?");
	}
	char *s = malloc(len), *o = s;
	if (!s)
		return NULL;
	for (size_t i = 0; i < argv->n; i++) {
		const struct jsonr_value *a = &argv->items[i];
		if (a->type != JSONR_STRING)
			continue;
		if (o != s)
			*o++ = ' ';
		/* a NUL inside an argument would end the key early: shown as '?' */
		for (size_t k = 0; k < a->len; k++)
			*o++ = a->string[k] && a->string[k] != '\x1f' ? a->string[k] : '?';
	}
	*o = '\0';
	return s;
}

static int diff_image_add(const struct evidence_process *p, void *ctx)
{
	struct diff_images *im = ctx;

	if (im->n == im->cap) {
		size_t cap = im->cap ? im->cap * 2 : 16;
		struct diff_image *v = realloc(im->v, cap * sizeof *v);
		if (!v)
			return -ENOMEM;
		im->v = v;
		im->cap = cap;
	}
	struct diff_image *d = &im->v[im->n];
	memset(d, 0, sizeof *d);
	d->pid = p->pid;
	d->gen = p->gen;
	d->parent_pid = p->parent_pid;
	d->parent_gen = p->parent_gen;
	/* VmHWM, else the polled peak; an image with neither held nothing
	 * the gate can hold it to */
	d->mb = (p->peak_bytes >= 0 ? p->peak_bytes : 0) / 1e6;
	/* what the image still held when it chose to end: a slow leak shows
	 * here long before it moves a peak */
	d->live_mb = p->live_bytes / 1e6;
	d->order = im->n;
	if (!(d->cmd = diff_command(p)))
		return -ENOMEM;
	/* the program: argv[0]'s basename, the first word of cmd */
	size_t w = strcspn(d->cmd, " ");
	const char *base = d->cmd;
	for (size_t k = 0; k < w; k++)
		if (d->cmd[k] == '/' && k + 1 < w)
			base = d->cmd + k + 1;
	if (!(d->prog = strndup(base, w - (size_t)(base - d->cmd)))) {
		free(d->cmd);
		return -ENOMEM;
	}
	im->n++;
	return 0;
}

static int image_by_id(const void *a, const void *b)
{
	const struct diff_image *x = *(const struct diff_image *const *)a, *y = *(const struct diff_image *const *)b;
	if (x->pid != y->pid)
		return x->pid < y->pid ? -1 : 1;
	return (x->gen > y->gen) - (x->gen < y->gen);
}

/* By (parent's program, cmd or prog), then the order of the file. */
static int image_by_name(const void *a, const void *b, void *by_prog)
{
	const struct diff_image *x = *(const struct diff_image *const *)a, *y = *(const struct diff_image *const *)b;
	int c = strcmp(x->parent_prog, y->parent_prog);
	if (!c)
		c = *(const int *)by_prog ? strcmp(x->prog, y->prog) : strcmp(x->cmd, y->cmd);
	if (!c)
		c = (x->order > y->order) - (x->order < y->order);
	return c;
}

/* Rank among equal names: 1, 2, ... in the order of the file. */
static void diff_images_rank(struct diff_image **ix, size_t n, int by_prog)
{
	qsort_r(ix, n, sizeof *ix, image_by_name, &by_prog);
	for (size_t i = 0; i < n; i++) {
		size_t r = 1;
		if (i && strcmp(ix[i]->parent_prog, ix[i - 1]->parent_prog) == 0 &&
		    strcmp(by_prog ? ix[i]->prog : ix[i]->cmd, by_prog ? ix[i - 1]->prog : ix[i - 1]->cmd) == 0)
			r = (by_prog ? ix[i - 1]->rank2 : ix[i - 1]->rank) + 1;
		if (by_prog)
			ix[i]->rank2 = r;
		else
			ix[i]->rank = r;
	}
}

/* Keys from images: the parent found by (pid, gen) through a sorted index,
 * then the rank among images of equal names.  0 or -ENOMEM. */
static int diff_images_key(struct diff_images *im, struct diff_run *out)
{
	struct diff_image **ix CLEANUP_FREE = malloc((im->n ? im->n : 1) * sizeof *ix);
	if (!ix)
		return -ENOMEM;
	for (size_t i = 0; i < im->n; i++)
		ix[i] = &im->v[i];
	qsort(ix, im->n, sizeof *ix, image_by_id);
	for (size_t i = 0; i < im->n; i++) {
		struct diff_image key = { .pid = im->v[i].parent_pid, .gen = im->v[i].parent_gen }, *kp = &key;
		struct diff_image **hit = im->v[i].parent_pid < 0 ? NULL
					  : bsearch(&kp, ix, im->n, sizeof *ix, image_by_id);
		im->v[i].parent_prog = hit ? (*hit)->prog : "";
	}
	diff_images_rank(ix, im->n, 0);
	diff_images_rank(ix, im->n, 1);
	if (!(out->procs = calloc(im->n ? im->n : 1, sizeof *out->procs)))
		return -ENOMEM;
	for (size_t i = 0; i < im->n; i++) {
		const struct diff_image *d = &im->v[i];
		struct diff_proc *p = &out->procs[out->n_procs++];
		p->mb = d->mb;
		p->live_mb = d->live_mb;
		if (!isnan(d->live_mb))
			out->live_mb = (isnan(out->live_mb) ? 0 : out->live_mb) + d->live_mb;
		/* \x1f cannot occur in the names (diff_command) */
		if (asprintf(&p->key, "%s\x1f%s\x1f%zu", d->parent_prog, d->cmd, d->rank) < 0)
			p->key = NULL;
		if (asprintf(&p->key2, "%s\x1f%s\x1f%zu", d->parent_prog, d->prog, d->rank2) < 0)
			p->key2 = NULL;
		if ((d->rank > 1 ? asprintf(&p->name, "%s #%zu", d->cmd, d->rank) : asprintf(&p->name, "%s", d->cmd)) < 0)
			p->name = NULL;
		if (!p->key || !p->key2 || !p->name)
			return -ENOMEM;
	}
	return 0;
}

/* ---- call sites (stacks.json) ---- */

/* Frames of a site's stack named, innermost first; at most this many. */
#define DIFF_SITE_FRAMES 8

/* One site of an image, at its own peak or live as it ended, as read
 * before the frames are (they follow the images in stacks.json): its
 * frame indexes and bytes. */
struct diff_raw_site {
	double frames[DIFF_SITE_FRAMES];
	size_t nframes;
	double bytes;
	double se;      /* its standard error, bytes (0: not said) */
	int at_exit;
};

struct diff_raw_sites {
	struct diff_raw_site *v;
	size_t n, cap;
};

/* jsonr_item_fn over stacks.json's images: each one's sites at its own
 * peak (at_peak) and live as it ended (at_exit), kept by frame index until
 * the frames are read. */
static int diff_image_sites(const struct jsonr_value *image, void *ctx)
{
	struct diff_raw_sites *raw = ctx;
	for (int at_exit = 0; at_exit < 2; at_exit++) {
		const struct jsonr_value *sites =
			jsonr_get(jsonr_get(image, at_exit ? "at_exit" : "at_peak"), "sites");
		for (size_t i = 0; sites && sites->type == JSONR_ARRAY && i < sites->n; i++) {
			const struct jsonr_value *st = &sites->items[i], *frames = jsonr_get(st, "frames");
			if (grow_array((void **)&raw->v, &raw->cap, raw->n + 1, sizeof *raw->v) < 0)
				return -ENOMEM;
			struct diff_raw_site *r = &raw->v[raw->n++];
			r->nframes = 0;
			for (size_t k = 0; frames && k < frames->n && k < DIFF_SITE_FRAMES; k++)
				r->frames[r->nframes++] = jsonr_num(&frames->items[k], -1);
			r->bytes = jsonr_num(jsonr_get(st, "bytes"), 0);
			r->se = jsonr_num(jsonr_get(st, "se_bytes"), 0);
			r->at_exit = at_exit;
		}
	}
	return 0;
}

static int site_by_key(const void *a, const void *b)
{
	return strcmp(((const struct diff_proc *)a)->key, ((const struct diff_proc *)b)->key);
}

/* A frame as text: its function, else its module's file name (an offset
 * would change with every build, which is what a gate compares across). */
static const char *frame_text(const struct jsonr_value *doc, double index, char *buf, size_t len)
{
	const struct jsonr_value *f = jsonr_at(jsonr_get(doc, "frames"), (size_t)index);
	const char *fn = jsonr_str(jsonr_get(f, "function"), NULL);
	if (fn && *fn && !strchr(fn, '\x1f'))
		return fn;
	const struct jsonr_value *m = jsonr_at(jsonr_get(doc, "modules"), (size_t)jsonr_num(jsonr_get(f, "module"), -1));
	const char *path = jsonr_str(jsonr_get(m, "path"), "?"), *slash = strrchr(path, '/');
	snprintf(buf, len, "[%s]", slash ? slash + 1 : path);
	return buf;
}

/* The call sites of every image at its own peak (images[].at_peak),
 * summed over images by their symbolized stack.  Not the tree's set at its
 * heap peak: which images that sample caught depends on when the poll
 * fell (a child that had not yet mapped its memory is absent), and a gate
 * must compare what each site costs, not which processes overlapped in
 * one run.  No stacks.json: none, has_sites 0.  0 or -errno with err. */
static int diff_read_sites(int dirfd, const char *path, struct diff_run *out, char *err, size_t errlen)
{
	struct jsonr_value *doc = NULL;
	struct diff_raw_sites raw = { 0 };
	char e[400];
	int rc = jsonr_read_file_streaming(dirfd, EVIDENCE_STACKS, DIFF_MAX_FILE_BYTES, "images", diff_image_sites,
					   &raw, &doc, e, sizeof e);
	if (rc == -ENOENT)
		return 0;
	if (rc < 0) {
		free(raw.v);
		diff_err(err, errlen, "%s/%s", path, *e ? e : strerror(-rc));
		return rc;
	}
	if (!(out->sites = calloc(raw.n + 1, sizeof *out->sites)))
		rc = -ENOMEM;
	for (size_t i = 0; rc == 0 && i < raw.n; i++) {
		char key[2048], buf[300];
		size_t kl = 0;
		key[0] = '\0';
		for (size_t k = 0; k < raw.v[i].nframes; k++) {
			const char *t = frame_text(doc, raw.v[i].frames[k], buf, sizeof buf);
			int w = snprintf(key + kl, sizeof key - kl, "%s%s", k ? " <- " : "", t);
			if (w < 0 || (size_t)w >= sizeof key - kl)
				break;
			kl += (size_t)w;
		}
		struct diff_proc *p = &out->sites[out->n_sites++];
		/* a traced run knows a site it does not list: 0 bytes there */
		p->mb = raw.v[i].at_exit ? 0 : raw.v[i].bytes / 1e6;
		p->live_mb = raw.v[i].at_exit ? raw.v[i].bytes / 1e6 : 0;
		p->se_mb = raw.v[i].at_exit ? 0 : raw.v[i].se / 1e6;
		p->live_se_mb = raw.v[i].at_exit ? raw.v[i].se / 1e6 : 0;
		if (!(p->key = strdup(*key ? key : "?")) || !(p->name = strdup(p->key)) || !(p->key2 = strdup(p->key)))
			rc = -ENOMEM;
	}
	free(raw.v);
	jsonr_free(doc);
	if (rc < 0) {
		diff_err(err, errlen, "%s: %s", path, strerror(-rc));
		return rc;
	}
	/* one row per stack: the same stack in several processes is summed */
	qsort(out->sites, out->n_sites, sizeof *out->sites, site_by_key);
	size_t w = 0;
	for (size_t i = 0; i < out->n_sites; i++) {
		if (w && strcmp(out->sites[w - 1].key, out->sites[i].key) == 0) {
			out->sites[w - 1].mb += out->sites[i].mb;
			out->sites[w - 1].live_mb += out->sites[i].live_mb;
			/* independent samples: errors add in quadrature */
			out->sites[w - 1].se_mb = rootsq_sum(out->sites[w - 1].se_mb, out->sites[i].se_mb);
			out->sites[w - 1].live_se_mb =
				rootsq_sum(out->sites[w - 1].live_se_mb, out->sites[i].live_se_mb);
			free(out->sites[i].key);
			free(out->sites[i].key2);
			free(out->sites[i].name);
			continue;
		}
		out->sites[w++] = out->sites[i];
	}
	out->n_sites = w;
	out->has_sites = 1;
	return 0;
}

/* The baseline that `memsup report --json` wrote: an array of one run,
 * read by report.c, the one owner of that format. */
static int diff_read_report(const char *path, struct diff_run *out, char *err, size_t errlen)
{
	int rc = report_read_baseline(path, &out->peak_mb, &out->oom, err, errlen);
	if (rc == -ENOMEM)
		diff_err(err, errlen, "%s: %s", path, strerror(ENOMEM));
	return rc;
}

/* The run's answer and OOM kills, by the evidence reader's rules
 * (evidence/read.h): a run that has not ended, whose command could not
 * start or whose record is broken is bad input, never a pass.  1 when its
 * processes are to be read too, 0 when the run has none (memsup was
 * killed before it wrote them: the answer is compared alone), or -errno
 * with err. */
static int diff_read_answer(int dirfd, const char *path, struct diff_run *out, char *err,
			    size_t errlen)
{
	struct evidence_run run;
	char e[400];
	int rc = evidence_read_run(dirfd, &run, e, sizeof e);
	if (rc < 0) {
		diff_err(err, errlen, "%s/%s", path, e);
		evidence_run_free(&run);
		return rc;
	}
	rc = -EINVAL;
	if (run.broken[0])
		diff_err(err, errlen, "%s/%s", path, run.broken);
	else if (run.state == EVIDENCE_RUNNING)
		diff_err(err, errlen, "%s: the run has not ended (reason \"%s\")", path, run.reason);
	/* its figures end where memsup did: a lower bound, which would pass
	 * a gate as NEW and make one fail as BASE, whatever the command does */
	else if (run.state == EVIDENCE_KILLED)
		diff_err(err, errlen, "%s: memsup was killed before the run ended (reason "
			 "\"supervisor_killed\"): its figures until then are a lower bound, not a "
			 "run to compare", path);
	/* as memsup report's "start failed" row: a command that never ran
	 * has no peak to hold a baseline to, nor to be held to one */
	else if (run.state == EVIDENCE_START_FAILED)
		diff_err(err, errlen, "%s: the command could not start (%s): there is no peak to compare",
			 path, run.error ? run.error : "no reason recorded");
	else if (!evidence_run_comparable(&run))
		diff_err(err, errlen, "%s/" EVIDENCE_RESOURCES ": no answer to compare", path);
	else {
		out->peak_mb = run.answer_mb;
		/* a forged "oom" broke the run above: a gate that cannot tell
		 * whether the run was OOM killed cannot pass it */
		out->oom = run.oom;
		memset(&run.oom, 0, sizeof run.oom);
		rc = run.has_processes;
	}
	evidence_run_free(&run);
	return rc;
}

int diff_run_read(const char *path, struct diff_run *out, char *err, size_t errlen)
{
	struct stat st;
	char e[400];
	int rc;

	memset(out, 0, sizeof *out);
	out->peak_mb = NAN;
	out->live_mb = NAN;
	if (stat(path, &st) < 0) {
		rc = -errno;
		diff_err(err, errlen, "%s: %s", path, strerror(errno));
		return rc;
	}
	if (!S_ISDIR(st.st_mode)) {
		rc = diff_read_report(path, out, err, errlen);
		if (rc < 0)
			diff_run_free(out);
		return rc;
	}
	int dirfd CLEANUP_CLOSE = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dirfd < 0) {
		rc = -errno;
		diff_err(err, errlen, "%s: %s", path, strerror(errno));
		return rc;
	}
	out->from_dir = 1;
	if ((rc = diff_read_answer(dirfd, path, out, err, errlen)) <= 0) {
		if (rc < 0)
			diff_run_free(out);
		return rc;
	}

	struct diff_images im = { 0 };
	rc = evidence_read_processes(dirfd, diff_image_add, &im, e, sizeof e);
	if (rc < 0)
		diff_err(err, errlen, "%s/%s", path, *e ? e : strerror(-rc));
	else if ((rc = diff_images_key(&im, out)) < 0)
		diff_err(err, errlen, "%s: %s", path, strerror(-rc));
	for (size_t i = 0; i < im.n; i++) {
		free(im.v[i].cmd);
		free(im.v[i].prog);
	}
	free(im.v);
	out->has_procs = rc == 0;
	if (rc == 0)
		rc = diff_read_sites(dirfd, path, out, err, errlen);
	if (rc < 0)
		diff_run_free(out);
	return rc;
}

void diff_run_free(struct diff_run *r)
{
	for (size_t i = 0; r->procs && i < r->n_procs; i++) {
		free(r->procs[i].key);
		free(r->procs[i].key2);
		free(r->procs[i].name);
	}
	free(r->procs);
	r->procs = NULL;
	r->n_procs = 0;
	for (size_t i = 0; r->sites && i < r->n_sites; i++) {
		free(r->sites[i].key);
		free(r->sites[i].key2);
		free(r->sites[i].name);
	}
	free(r->sites);
	r->sites = NULL;
	r->n_sites = 0;
	oomkills_free(&r->oom);
}

/* ---- comparing ---- */

static int proc_by_key(const void *a, const void *b, void *by_prog)
{
	const struct diff_proc *x = *(const struct diff_proc *const *)a, *y = *(const struct diff_proc *const *)b;
	return *(const int *)by_prog ? strcmp(x->key2, y->key2) : strcmp(x->key, y->key);
}

static double row_change(const struct diff_row *r)
{
	return (isnan(r->new_mb) ? 0 : r->new_mb) - (isnan(r->base_mb) ? 0 : r->base_mb);
}

/* Regressions first, then the largest change either way. */
static int row_order(const void *a, const void *b)
{
	const struct diff_row *x = a, *y = b;
	if (x->regressed != y->regressed)
		return y->regressed - x->regressed;
	double cx = fabs(row_change(x)), cy = fabs(row_change(y));
	if (cx != cy)
		return cx > cy ? -1 : 1;
	return strcmp(x->name, y->name);
}

/* Rows for the figures of bp and np that changed: pass 0 by key, pass 1
 * over what is left by key2.  0 or -ENOMEM. */
static int diff_match(struct diff_result *out, const struct diff_proc *bp, size_t n_base,
		      const struct diff_proc *np, size_t n_new, const struct diff_limit *lim, double floor_mb,
		      enum diff_kind kind)
{
	size_t nb = n_base, nn = n_new;
	const struct diff_proc **b CLEANUP_FREE = malloc((nb + 1) * sizeof *b);
	const struct diff_proc **n CLEANUP_FREE = malloc((nn + 1) * sizeof *n);
	if (!b || !n)
		return -ENOMEM;
	for (size_t i = 0; i < nb; i++)
		b[i] = &bp[i];
	for (size_t j = 0; j < nn; j++)
		n[j] = &np[j];
	/* pass 0 by the whole command; pass 1, over what is left, by program;
	 * after pass 1 whatever is left is gone (base) or new */
	for (int pass = 0; pass < 2; pass++) {
		int by_prog = pass;
		qsort_r(b, nb, sizeof *b, proc_by_key, &by_prog);
		qsort_r(n, nn, sizeof *n, proc_by_key, &by_prog);
		size_t i = 0, j = 0, lb = 0, ln = 0;
		while (i < nb || j < nn) {
			int c = i == nb ? 1 : j == nn ? -1 : proc_by_key(&b[i], &n[j], &by_prog);
			if (c && !pass) {
				/* unmatched: kept for pass 1 */
				if (c < 0)
					b[lb++] = b[i++];
				else
					n[ln++] = n[j++];
				continue;
			}
			struct diff_row r = { NULL, NAN, NAN, 0, kind, NAN };
			int known = 1, live = kind == DIFF_LIVE || kind == DIFF_SITE_LIVE;
			double se_b = 0, se_n = 0;
			if (c <= 0) {
				r.name = b[i]->name;
				r.base_mb = live ? b[i]->live_mb : b[i]->mb;
				se_b = live ? b[i]->live_se_mb : b[i]->se_mb;
				known &= !isnan(r.base_mb);
				i++;
			}
			if (c >= 0) {
				r.name = n[j]->name; /* NEW's words for it */
				r.new_mb = live ? n[j]->live_mb : n[j]->mb;
				se_n = live ? n[j]->live_se_mb : n[j]->se_mb;
				known &= !isnan(r.new_mb);
				j++;
			}
			/* live at exit: only images that ended by exit on each
			 * side they are on have the figure */
			if (!known)
				continue;
			/* a change too small to print is no change */
			double noise = floor_mb > DIFF_NOISE_MB ? floor_mb : DIFF_NOISE_MB;
			if (isnan(r.base_mb) == isnan(r.new_mb) && fabs(r.new_mb - r.base_mb) < noise)
				continue;
			r.regressed = diff_exceeds(lim, floor_mb, r.base_mb, r.new_mb);
			/* a sampled site's growth must be more than chance:
			 * two runs of one program draw different blocks, and
			 * a fixed floor failed identical runs (a 1.2 MB
			 * Python arena, one sample, "new"; a large site 18%
			 * up).  Exact sites (every block sampled) keep the
			 * limits alone */
			double se = rootsq_sum(se_b, se_n);
			if (se > 0) {
				double grew = (isnan(r.new_mb) ? 0 : r.new_mb) -
					      (isnan(r.base_mb) ? 0 : r.base_mb);
				r.sigmas = grew / se;
				r.regressed &= r.sigmas > DIFF_SITE_SIGMAS;
			}
			out->n_regressed += (size_t)r.regressed;
			out->rows[out->n_rows++] = r;
		}
		nb = lb;
		nn = ln;
	}
	return 0;
}

static const char *const oom_change_names[DIFF_OOM_COUNT] = {
	[DIFF_OOM_NONE] = "none", [DIFF_OOM_NEW] = "new",       [DIFF_OOM_GONE] = "gone",
	[DIFF_OOM_BOTH] = "both", [DIFF_OOM_UNSEEN] = "unseen",
};

const char *diff_oom_change_name(enum diff_oom_change c)
{
	return (unsigned)c < DIFF_OOM_COUNT ? oom_change_names[c] : oom_change_names[DIFF_OOM_NONE];
}

/* NEW's kills against BASE's.  A side that could not see OOM kills (no
 * memory cgroup, no kernel log) counts as none for BASE: NEW killed where
 * nothing says BASE was, and a gate fails on what it sees; for NEW it
 * decides nothing, but a BASE that had kills is said. */
static void diff_compare_oom(const struct diff_run *base, const struct diff_run *nw, struct diff_oom *out)
{
	int b = base->oom.known && base->oom.count > 0, n = nw->oom.known && nw->oom.count > 0;

	out->base = &base->oom;
	out->nw = &nw->oom;
	out->change = n ? (b ? DIFF_OOM_BOTH : DIFF_OOM_NEW)
		      : b ? (nw->oom.known ? DIFF_OOM_GONE : DIFF_OOM_UNSEEN) : DIFF_OOM_NONE;
	out->regressed = out->change == DIFF_OOM_NEW;
}

int diff_compare(const struct diff_run *base, const struct diff_run *nw, const struct diff_limit *lim,
		 const struct diff_limit *proc_lim, double floor_mb, struct diff_result *out)
{
	memset(out, 0, sizeof *out);
	diff_compare_oom(base, nw, &out->oom);
	out->peak = (struct diff_row){ "peak", base->peak_mb, nw->peak_mb, 0, 0, NAN };
	out->peak.regressed = diff_exceeds(lim, 0, base->peak_mb, nw->peak_mb);
	out->n_regressed = (size_t)out->peak.regressed + (size_t)out->oom.regressed;
	/* the tree's live heap at exit: a limit of the answer's, and the
	 * floor, since it is often a few kB that any change doubles */
	out->live = (struct diff_row){ "live at exit", base->live_mb, nw->live_mb, 0, DIFF_LIVE, NAN };
	if (!isnan(base->live_mb) && !isnan(nw->live_mb)) {
		out->live.regressed = diff_exceeds(lim, floor_mb, base->live_mb, nw->live_mb);
		out->n_regressed += (size_t)out->live.regressed;
	}
	/* a report baseline has no processes, nor has a run whose memsup was
	 * killed: comparing with none would call every process new */
	if (!base->has_procs || !nw->has_procs)
		return 0;
	/* an untraced run has no call sites: then none are compared */
	int both_sites = base->has_sites && nw->has_sites;
	size_t cap = 2 * (base->n_procs + nw->n_procs) + (both_sites ? 2 * (base->n_sites + nw->n_sites) : 0) + 1;
	if (!(out->rows = calloc(cap, sizeof *out->rows)))
		return -ENOMEM;
	int rc = diff_match(out, base->procs, base->n_procs, nw->procs, nw->n_procs, proc_lim, floor_mb,
			    DIFF_PROCESS);
	if (rc == 0)
		rc = diff_match(out, base->procs, base->n_procs, nw->procs, nw->n_procs, proc_lim, floor_mb,
				DIFF_LIVE);
	if (rc == 0 && both_sites)
		rc = diff_match(out, base->sites, base->n_sites, nw->sites, nw->n_sites, proc_lim, floor_mb,
				DIFF_SITE);
	if (rc == 0 && both_sites)
		rc = diff_match(out, base->sites, base->n_sites, nw->sites, nw->n_sites, proc_lim, floor_mb,
				DIFF_SITE_LIVE);
	if (rc < 0)
		return rc;
	qsort(out->rows, out->n_rows, sizeof *out->rows, row_order);
	return 0;
}

void diff_result_free(struct diff_result *r)
{
	free(r->rows);
	r->rows = NULL;
	r->n_rows = 0;
}

/* ---- writing ---- */

static void limit_text(const struct diff_limit *lim, char *buf, size_t len)
{
	snprintf(buf, len, lim->percent ? "%g%%" : "%g MB", lim->value);
}

/* "+30.1 MB", "-0.2 MB", "new", "gone" */
static void change_text(const struct diff_row *r, char *buf, size_t len)
{
	if (isnan(r->base_mb))
		snprintf(buf, len, "new");
	else if (isnan(r->new_mb))
		snprintf(buf, len, "gone");
	else
		snprintf(buf, len, "%+.1f MB", r->new_mb - r->base_mb);
}

static void percent_text(const struct diff_row *r, char *buf, size_t len)
{
	if (isnan(r->base_mb) || isnan(r->new_mb) || r->base_mb <= 0)
		snprintf(buf, len, "-");
	else
		snprintf(buf, len, "%+.0f%%", (r->new_mb - r->base_mb) / r->base_mb * 100);
}

static void mb_text(double mb, char *buf, size_t len)
{
	if (isnan(mb))
		snprintf(buf, len, "(none)");
	else
		snprintf(buf, len, "%.1f MB", mb);
}

/* A command cut to DIFF_NAME_WIDTH bytes, never inside a UTF-8 sequence.
 * Too long, its program is named by its file name alone first: the
 * arguments tell two processes apart, a build tree's path does not. */
static void name_text(const char *name, char *buf, size_t len)
{
	size_t n = strlen(name);
	if (n > DIFF_NAME_WIDTH) {
		const char *end = strchr(name, ' ');
		const char *slash = NULL;
		for (const char *c = name; *c && c != end; c++)
			if (*c == '/')
				slash = c;
		if (slash && slash[1] && slash[1] != ' ') {
			name = slash + 1;
			n = strlen(name);
		}
	}
	if (n <= DIFF_NAME_WIDTH) {
		snprintf(buf, len, "%s", name);
		return;
	}
	n = DIFF_NAME_WIDTH - 3;
	while (n && ((unsigned char)name[n] & 0xc0) == 0x80)
		n--;
	snprintf(buf, len, "%.*s...", (int)n, name);
}

/* What the kernel did to a run, for people: "the kernel killed pid 4242
 * 'python' (limit: run's cgroup, 150 MB)", and how many in all when more
 * than one; "the kernel killed 2 processes" when none is listed. */
static void oom_kills_text(const struct oomkills *k, char *buf, size_t len)
{
	char v[160], l[300], more[48] = "";

	if (!k->n) {
		snprintf(buf, len, "the kernel killed %llu process%s", (unsigned long long)k->count,
			 k->count == 1 ? "" : "es");
		return;
	}
	oomkills_victim_text(&k->v[0], v, sizeof v);
	oomkills_limit_text(&k->v[0], l, sizeof l);
	if (k->count > 1)
		snprintf(more, sizeof more, ", %llu kills in all", (unsigned long long)k->count);
	snprintf(buf, len, "the kernel killed %s (limit: %s)%s", v, l, more);
}

/* The OOM line of the verdict, without its first column ("REGRESSED" ...)
 * and newline; "" when there is none. */
static void oom_line(const struct diff_oom *o, char *buf, size_t len)
{
	char t[600];

	switch (o->change) {
	case DIFF_OOM_NONE:
	case DIFF_OOM_COUNT:
		snprintf(buf, len, "%s", "");
		return;
	case DIFF_OOM_NEW:
		oom_kills_text(o->nw, t, sizeof t);
		snprintf(buf, len, "NEW newly OOMs: %s%s", t,
			 o->base->known ? "" : "; BASE could not see OOM kills");
		return;
	case DIFF_OOM_GONE:
		oom_kills_text(o->base, t, sizeof t);
		snprintf(buf, len, "NEW no longer OOMs: in BASE %s", t);
		return;
	case DIFF_OOM_BOTH:
		oom_kills_text(o->nw, t, sizeof t);
		snprintf(buf, len, "both OOM (kills %llu -> %llu): in NEW %s",
			 (unsigned long long)o->base->count, (unsigned long long)o->nw->count, t);
		return;
	case DIFF_OOM_UNSEEN:
		oom_kills_text(o->base, t, sizeof t);
		snprintf(buf, len, "NEW could not see OOM kills; in BASE %s", t);
		return;
	}
}

static void diff_human(FILE *f, const char *label, const struct diff_result *r, const struct diff_limit *lim,
		       const struct diff_limit *proc_lim)
{
	char lt[40], plt[48], ch[40], pc[16], b[24], n[24], nm[DIFF_NAME_WIDTH + 8];

	limit_text(lim, lt, sizeof lt);
	plt[0] = '\0';
	if (proc_lim->percent != lim->percent || proc_lim->value != lim->value) {
		strcpy(plt, ", processes +");
		limit_text(proc_lim, plt + strlen(plt), sizeof plt - strlen(plt));
	}
	change_text(&r->peak, ch, sizeof ch);
	percent_text(&r->peak, pc, sizeof pc);
	fprintf(f, "%s%s%s: peak %.1f MB -> %.1f MB (%s, %s), limit +%s%s; %zu regressed\n", label ? label : "",
		label ? ": " : "", r->n_regressed ? "REGRESSION" : "ok", r->peak.base_mb, r->peak.new_mb, ch, pc, lt, plt,
		r->n_regressed);
	/* first after the verdict: a kill says more than any size */
	char ol[800];
	oom_line(&r->oom, ol, sizeof ol);
	if (*ol)
		fprintf(f, "  %-9s %s\n", r->oom.regressed ? "REGRESSED" : r->oom.change == DIFF_OOM_GONE ? "changed" : "oom", ol);
	if (!isnan(r->live.base_mb) && !isnan(r->live.new_mb)) {
		change_text(&r->live, ch, sizeof ch);
		fprintf(f, "  %-9s %10s %6s  live heap at exit %.3f MB -> %.3f MB\n",
			r->live.regressed ? "REGRESSED" : "tree", ch, "", r->live.base_mb, r->live.new_mb);
	}
	size_t shown = r->n_rows < DIFF_SHOW_ROWS ? r->n_rows : DIFF_SHOW_ROWS;
	for (size_t i = 0; i < shown; i++) {
		const struct diff_row *w = &r->rows[i];
		change_text(w, ch, sizeof ch);
		percent_text(w, pc, sizeof pc);
		mb_text(w->base_mb, b, sizeof b);
		mb_text(w->new_mb, n, sizeof n);
		name_text(w->name, nm, sizeof nm);
		char sure[48] = "";
		if (!isnan(w->sigmas))
			snprintf(sure, sizeof sure, " (%+.1f SE%s)", w->sigmas,
				 w->sigmas > DIFF_SITE_SIGMAS ? "" : ": sampling noise");
		fprintf(f, "  %-9s %10s %6s  %10s -> %-10s  %s%s%s\n", w->regressed ? "REGRESSED" : "changed", ch,
			pc, b, n, diff_kind_word[w->kind], nm, sure);
	}
	if (r->n_rows > shown)
		fprintf(f, "  ... and %zu more changed (--json lists them all)\n", r->n_rows - shown);
}

static void json_mb(struct jsonw *w, const char *key, double mb)
{
	jsonw_key(w, key);
	if (isnan(mb))
		jsonw_null(w);
	else
		jsonw_double(w, mb, 6);
}

static void json_row(struct jsonw *w, const struct diff_row *r, int with_name)
{
	jsonw_object_begin(w);
	if (with_name) {
		jsonw_key(w, r->kind == DIFF_SITE || r->kind == DIFF_SITE_LIVE ? "stack" : "command");
		jsonw_string(w, r->name);
	}
	json_mb(w, "base_mb", r->base_mb);
	json_mb(w, "new_mb", r->new_mb);
	json_mb(w, "change_mb", row_change(r));
	if (!isnan(r->sigmas)) {
		/* a sampled site: its change in standard errors */
		jsonw_key(w, "change_se");
		jsonw_double(w, r->sigmas, 2);
	}
	jsonw_key(w, "regressed");
	jsonw_bool(w, r->regressed);
	jsonw_object_end(w);
}

/* A side's count (null: it could not see OOM kills) and first victim. */
static void json_oom_side(struct jsonw *w, const char *count_key, const char *first_key,
			  const struct oomkills *k)
{
	jsonw_key(w, count_key);
	if (k->known)
		jsonw_uint(w, k->count);
	else
		jsonw_null(w);
	jsonw_key(w, first_key);
	if (!k->n) {
		jsonw_null(w);
		return;
	}
	const struct oomkills_kill *v = &k->v[0];
	jsonw_object_begin(w);
	jsonw_key(w, "pid");
	if (v->pid >= 0)
		jsonw_int(w, v->pid);
	else
		jsonw_null(w);
	jsonw_key(w, "comm");
	jsonw_string(w, v->comm);
	jsonw_key(w, "limit_by");
	jsonw_string(w, oomlimit_by_name(v->by));
	jsonw_key(w, "cgroup");
	jsonw_string(w, v->cgroup);
	json_mb(w, "limit_mb", v->limit_mb);
	jsonw_object_end(w);
}

static void diff_json_one(struct jsonw *w, const char *label, const struct diff_result *r,
			  const struct diff_limit *lim, const struct diff_limit *proc_lim, double floor_mb)
{
	char lt[40];

	limit_text(lim, lt, sizeof lt);
	jsonw_object_begin(w);
	if (label) {
		jsonw_key(w, "meta");
		jsonw_string(w, label);
	}
	jsonw_key(w, "verdict");
	jsonw_string(w, r->n_regressed ? "regression" : "ok");
	jsonw_key(w, "regressed");
	jsonw_uint(w, r->n_regressed);
	jsonw_key(w, "max_increase");
	jsonw_string(w, lt);
	limit_text(proc_lim, lt, sizeof lt);
	jsonw_key(w, "process_max_increase");
	jsonw_string(w, lt);
	json_mb(w, "floor_mb", floor_mb);
	jsonw_key(w, "oom");
	jsonw_object_begin(w);
	jsonw_key(w, "change");
	jsonw_string(w, diff_oom_change_name(r->oom.change));
	jsonw_key(w, "regressed");
	jsonw_bool(w, r->oom.regressed);
	json_oom_side(w, "base_kills", "base_first", r->oom.base);
	json_oom_side(w, "new_kills", "new_first", r->oom.nw);
	jsonw_object_end(w);
	jsonw_key(w, "peak");
	json_row(w, &r->peak, 0);
	jsonw_key(w, "live_at_exit");
	json_row(w, &r->live, 0);
	static const char *const lists[] = { [DIFF_PROCESS] = "processes", [DIFF_SITE] = "sites",
					     [DIFF_LIVE] = "processes_live_at_exit",
					     [DIFF_SITE_LIVE] = "sites_live_at_exit" };
	for (int kind = DIFF_PROCESS; kind <= DIFF_SITE_LIVE; kind++) {
		jsonw_key(w, lists[kind]);
		jsonw_array_begin(w);
		for (size_t i = 0; i < r->n_rows; i++)
			if (r->rows[i].kind == (enum diff_kind)kind)
				json_row(w, &r->rows[i], 1);
		jsonw_array_end(w);
	}
	jsonw_object_end(w);
}

/* One compared pair: the single BASE and NEW, or a run of a sweep and its
 * baseline, of the same --meta label. */
struct diff_pair {
	char *label;   /* NULL for a single pair (owned) */
	char *base_path, *new_path; /* owned */
	struct diff_run base, nw;
	struct diff_result res;
	uint64_t ns;   /* reading and comparing it took (the suite's time) */
};

/* ---- JUnit XML ----
 *
 * The shape is the one both schemas that CI systems hold JUnit to accept:
 * Jenkins' junit-10 (a <testsuite> or a <testsuites> root; of a suite only
 * "name" and "tests" required) and the report of Ant's junit task (a
 * <testsuite> root with name, tests, failures, errors, time, timestamp and
 * hostname, and <properties>, <system-out> and <system-err> in it; several
 * suites as a <testsuites>, without attributes, whose suites also carry
 * "package" and "id").  So one pair is a <testsuite> document and a sweep
 * a <testsuites> of one suite per label.  "skipped" is not written:
 * nothing is skipped, and not every Ant schema in use declares it.
 * tests/data/junit/ has both schemas as tests/junit_schema.sh checks them. */

/* Character data of XML 1.0, as text (attr 0) or an attribute's value
 * (attr 1): markup escaped; in a value a tab or newline as a reference,
 * which a parser keeps where it turns a literal one into a space; a CR as
 * one everywhere, which a parser would otherwise make a newline.  What XML
 * 1.0 cannot carry at all, not even as a reference -- a control character,
 * a byte that is not UTF-8 (a command may hold any byte; each such byte),
 * U+FFFE, U+FFFF -- becomes U+FFFD. */
static void xml_put(FILE *f, const char *s, int attr)
{
	const unsigned char *u = (const unsigned char *)s;
	size_t n = strlen(s);

	for (size_t i = 0; i < n;) {
		unsigned char c = u[i];
		size_t l = jsonw_utf8_len(u + i, n - i);
		if (c == '&')
			fputs("&amp;", f);
		else if (c == '<')
			fputs("&lt;", f);
		else if (c == '>')
			fputs("&gt;", f);
		else if (c == '"')
			fputs("&quot;", f);
		else if (c == '\'')
			fputs("&apos;", f);
		else if (c == '\r' || (attr && (c == '\t' || c == '\n')))
			fprintf(f, "&#%u;", (unsigned)c);
		else if (c == '\t' || c == '\n')
			fputc(c, f);
		else if (!l || c < 0x20 || (l == 3 && c == 0xef && u[i + 1] == 0xbf && u[i + 2] >= 0xbe)) {
			fputs("\xef\xbf\xbd", f);
			l = l ? l : 1;
		} else
			fwrite(s + i, 1, l, f);
		i += l ? l : 1;
	}
}

/* A test case's name, as a value (attr 1) or text: what it compared, the
 * command or stack when it is one of many (subject), and in a sweep the
 * run's label, so that one name never stands for two figures in a CI
 * system's history. */
static void junit_name(FILE *f, const char *what, const char *subject, const char *label, int attr)
{
	xml_put(f, what, attr);
	if (subject) {
		fputc(' ', f);
		xml_put(f, subject, attr);
	}
	if (label) {
		fputs(" [", f);
		xml_put(f, label, attr);
		fputc(']', f);
	}
}

/* <testcase ... name="...": the caller ends the start tag. */
static void junit_case_begin(FILE *f, const char *what, const char *subject, const char *label)
{
	fputs("  <testcase classname=\"memsup.diff\" name=\"", f);
	junit_name(f, what, subject, label, 1);
	fputs("\" time=\"0\"", f);
}

/* <failure> of one type: message as its message and, after the case's
 * name, as its text (what a CI system shows of a failed test). */
static void junit_failure(FILE *f, const char *type, const char *message, const char *what, const char *subject,
			  const char *label)
{
	fprintf(f, ">\n    <failure type=\"%s\" message=\"", type);
	xml_put(f, message, 1);
	fputs("\">", f);
	junit_name(f, what, subject, label, 0);
	fputs(": ", f);
	xml_put(f, message, 0);
	fputs("</failure>\n  </testcase>\n", f);
}

/* A figure's case: failed when it regressed, the figures said. */
static void junit_case(FILE *f, const char *what, const char *subject, const char *label, const struct diff_row *r,
		       const char *lt)
{
	char ch[40], pc[16], b[24], n[24], msg[160];

	junit_case_begin(f, what, subject, label);
	if (!r->regressed) {
		fputs("/>\n", f);
		return;
	}
	change_text(r, ch, sizeof ch);
	percent_text(r, pc, sizeof pc);
	mb_text(r->base_mb, b, sizeof b);
	mb_text(r->new_mb, n, sizeof n);
	snprintf(msg, sizeof msg, "%s -> %s (%s, %s), limit +%s", b, n, ch, pc, lt);
	junit_failure(f, "regression", msg, what, subject, label);
}

static void junit_property(FILE *f, const char *name, const char *value)
{
	fprintf(f, "    <property name=\"%s\" value=\"", name);
	xml_put(f, value, 1);
	fputs("\"/>\n", f);
}

/* What every suite of one file says of where and when. */
struct junit_stamp {
	char timestamp[32]; /* UTC, YYYY-MM-DDTHH:MM:SS: the formats want no zone */
	char hostname[256];
	const char *lt, *plt; /* the limits as text */
	double floor_mb;
};

/* One pair's suite; id >= 0 inside a <testsuites> (Ant's aggregate wants
 * "package" and "id" there). */
static void junit_suite(FILE *f, const struct diff_pair *p, int id, const struct junit_stamp *st,
			const struct diff_limit *lim, const struct diff_limit *proc_lim)
{
	const struct diff_result *r = &p->res;
	int live = !isnan(r->live.base_mb) && !isnan(r->live.new_mb);
	int oom = r->oom.base->known || r->oom.nw->known;
	char fl[32];

	fputs("<testsuite name=\"memsup diff", f);
	if (p->label) {
		fputc(' ', f);
		xml_put(f, p->label, 1);
	}
	/* a case per figure: the OOM kills, the answer, the tree's live heap,
	 * the rows; n_regressed counts the failed ones among them */
	fprintf(f, "\" tests=\"%zu\" failures=\"%zu\" errors=\"0\" time=\"%.3f\" timestamp=\"%s\" hostname=\"",
		r->n_rows + 1 + (size_t)live + (size_t)oom, r->n_regressed, (double)p->ns / 1e9, st->timestamp);
	xml_put(f, st->hostname, 1);
	fputc('"', f);
	if (id >= 0)
		fprintf(f, " package=\"memsup.diff\" id=\"%d\"", id);
	fputs(">\n  <properties>\n", f);
	junit_property(f, "base", p->base_path);
	junit_property(f, "new", p->new_path);
	if (p->label)
		junit_property(f, "meta", p->label);
	junit_property(f, "max_increase", st->lt);
	junit_property(f, "process_max_increase", st->plt);
	snprintf(fl, sizeof fl, "%g", st->floor_mb);
	junit_property(f, "floor_mb", fl);
	fputs("  </properties>\n", f);
	if (oom) {
		/* a case whichever side could tell, failed by a new OOM */
		char ol[800];
		oom_line(&r->oom, ol, sizeof ol);
		junit_case_begin(f, "oom kills", NULL, p->label);
		if (r->oom.regressed)
			junit_failure(f, "oom", ol, "oom kills", NULL, p->label);
		else
			fputs("/>\n", f);
	}
	/* each case named by what it compared: the run-wide figures by a
	 * fixed name, a row by its kind and its command or stack */
	junit_case(f, "peak_mb", NULL, p->label, &r->peak, st->lt);
	if (live)
		junit_case(f, "live heap at exit: tree", NULL, p->label, &r->live, st->lt);
	static const char *const what[] = { [DIFF_PROCESS] = "process", [DIFF_SITE] = "site",
					    [DIFF_LIVE] = "live heap at exit: process",
					    [DIFF_SITE_LIVE] = "live heap at exit: site" };
	for (size_t i = 0; i < r->n_rows; i++)
		junit_case(f, what[r->rows[i].kind], r->rows[i].name, p->label, &r->rows[i], st->plt);
	/* the verdict as people read it, where a CI system shows a suite's
	 * output; Ant's schema wants the element, empty or not */
	char *text = NULL;
	size_t len = 0;
	FILE *m = open_memstream(&text, &len);
	if (m) {
		diff_human(m, p->label, r, lim, proc_lim);
		if (fclose(m) != 0) {
			free(text);
			text = NULL;
		}
	}
	fputs("  <system-out>", f);
	if (text)
		xml_put(f, text, 0);
	free(text);
	fputs("</system-out>\n  <system-err></system-err>\n</testsuite>\n", f);
}

/* JUnit XML into path.tmp, then renamed: a CI system never reads half a
 * file.  0 or -errno. */
static int diff_junit(const char *path, const struct diff_pair *pairs, size_t n, int sweep, const struct diff_opts *o)
{
	char tmp[4096], lt[40], plt[40];
	struct junit_stamp st = { .lt = lt, .plt = plt, .floor_mb = o->floor_mb };
	struct tm tm;
	time_t now = time(NULL);

	if ((size_t)snprintf(tmp, sizeof tmp, "%s" EVIDENCE_TMP_SUFFIX, path) >= sizeof tmp)
		return -ENAMETOOLONG;
	limit_text(&o->lim, lt, sizeof lt);
	limit_text(&o->proc_lim, plt, sizeof plt);
	if (!gmtime_r(&now, &tm) || !strftime(st.timestamp, sizeof st.timestamp, "%Y-%m-%dT%H:%M:%S", &tm))
		snprintf(st.timestamp, sizeof st.timestamp, "1970-01-01T00:00:00");
	/* the name may be cut without a NUL; Ant's schema wants one */
	if (gethostname(st.hostname, sizeof st.hostname - 1) < 0)
		st.hostname[0] = '\0';
	st.hostname[sizeof st.hostname - 1] = '\0';
	if (!st.hostname[0])
		snprintf(st.hostname, sizeof st.hostname, "localhost");
	FILE *f = fopen(tmp, "we");
	if (!f)
		return -errno;
	fputs("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n", f);
	if (sweep)
		fputs("<testsuites>\n", f);
	for (size_t i = 0; i < n; i++)
		junit_suite(f, &pairs[i], sweep ? (int)i : -1, &st, &o->lim, &o->proc_lim);
	if (sweep)
		fputs("</testsuites>\n", f);
	int rc = ferror(f) ? -EIO : 0;
	if (fclose(f) != 0 && !rc)
		rc = -errno;
	if (!rc && rename(tmp, path) < 0)
		rc = -errno;
	if (rc)
		unlink(tmp);
	return rc;
}

/* ---- sweeps ---- */

/* Whether path is a directory of runs rather than a run: a directory
 * without resources.json, with a subdirectory that has one.  Anything
 * else is read as a run, and says what it lacks. */
static int diff_is_sweep(const char *path)
{
	struct stat st;
	char f[PATH_MAX + 300];

	if (stat(path, &st) < 0 || !S_ISDIR(st.st_mode))
		return 0;
	snprintf(f, sizeof f, "%s/" EVIDENCE_RESOURCES, path);
	if (access(f, F_OK) == 0 || errno != ENOENT)
		return 0;
	DIR *d = opendir(path);
	if (!d)
		return 0;
	int found = 0;
	for (struct dirent *e; !found && (e = readdir(d));)
		if (e->d_name[0] != '.' && (size_t)snprintf(f, sizeof f, "%s/%s/" EVIDENCE_RESOURCES, path, e->d_name) < sizeof f)
			found = access(f, F_OK) == 0;
	closedir(d);
	return found;
}

static int str_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* A run's --meta labels as one string, keys sorted: "lr=0.1,mb=20".  NULL
 * with err when the run has none or its record is broken. */
static char *diff_label(const char *dir, char *err, size_t errlen)
{
	struct evidence_run run;
	char **parts CLEANUP_FREE = NULL;
	char e[400];
	int dfd CLEANUP_CLOSE = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0) {
		diff_err(err, errlen, "%s: %s", dir, strerror(errno));
		return NULL;
	}
	if (evidence_read_run(dfd, &run, e, sizeof e) < 0) {
		diff_err(err, errlen, "%s/%s", dir, e);
		evidence_run_free(&run);
		return NULL;
	}
	const struct jsonr_value *meta = run.meta;
	char *label = NULL;
	if (!meta || !meta->n) {
		diff_err(err, errlen, "%s: no --meta label to match it by", dir);
		goto out;
	}
	parts = calloc(meta->n, sizeof *parts);
	size_t len = 1;
	for (size_t i = 0; parts && i < meta->n; i++) {
		const struct jsonr_value *v = &meta->items[i];
		char num[40];
		const char *t = v->type == JSONR_STRING ? v->string : v->type == JSONR_BOOL ? (v->boolean ? "true" : "false") : "";
		if (v->type == JSONR_NUMBER) {
			snprintf(num, sizeof num, "%.17g", v->number);
			t = num;
		}
		if (asprintf(&parts[i], "%s=%s", meta->keys[i], t) < 0)
			parts[i] = NULL;
		len += parts[i] ? strlen(parts[i]) + 1 : 0;
	}
	if (parts && (label = calloc(1, len))) {
		qsort(parts, meta->n, sizeof *parts, str_cmp);
		for (size_t i = 0; i < meta->n; i++) {
			if (i)
				strcat(label, ",");
			strcat(label, parts[i] ? parts[i] : "?");
		}
	}
	for (size_t i = 0; parts && i < meta->n; i++)
		free(parts[i]);
	if (!label)
		diff_err(err, errlen, "%s: %s", dir, strerror(ENOMEM));
out:
	evidence_run_free(&run);
	return label;
}

struct diff_labelled {
	char *label, *path;
};

static int labelled_cmp(const void *a, const void *b)
{
	return strcmp(((const struct diff_labelled *)a)->label, ((const struct diff_labelled *)b)->label);
}

static void labelled_free(struct diff_labelled *v, size_t n)
{
	for (size_t i = 0; v && i < n; i++) {
		free(v[i].label);
		free(v[i].path);
	}
	free(v);
}

/* The runs in sweep directory dir (its subdirectories with a
 * resources.json), sorted by label.  0 or -errno with err: a run without a
 * label, two runs of one label, no run at all. */
static int diff_sweep_list(const char *dir, struct diff_labelled **out, size_t *n_out, char *err, size_t errlen)
{
	struct dirent **ents = NULL;
	int n = scandir(dir, &ents, NULL, alphasort);
	struct diff_labelled *v = NULL;
	size_t nv = 0;
	int rc = 0;

	if (n < 0) {
		rc = -errno;
		diff_err(err, errlen, "%s: %s", dir, strerror(errno));
		return rc;
	}
	if (!(v = calloc((size_t)n + 1, sizeof *v)))
		rc = -ENOMEM;
	for (int i = 0; i < n; i++) {
		char path[PATH_MAX], rf[PATH_MAX + 32];
		struct stat st;
		if (rc == 0 && ents[i]->d_name[0] != '.' &&
		    (size_t)snprintf(path, sizeof path, "%s/%s", dir, ents[i]->d_name) < sizeof path &&
		    stat(path, &st) == 0 && S_ISDIR(st.st_mode)) {
			snprintf(rf, sizeof rf, "%s/" EVIDENCE_RESOURCES, path);
			if (access(rf, F_OK) == 0) {
				if (!(v[nv].label = diff_label(path, err, errlen)))
					rc = -EINVAL;
				else if (!(v[nv].path = strdup(path)))
					rc = -ENOMEM;
				nv++;
			}
		}
		free(ents[i]);
	}
	free(ents);
	if (rc == -ENOMEM)
		diff_err(err, errlen, "%s: %s", dir, strerror(ENOMEM));
	if (rc == 0 && !nv) {
		diff_err(err, errlen, "%s: neither a run nor a directory of runs", dir);
		rc = -ENOENT;
	}
	if (rc == 0) {
		qsort(v, nv, sizeof *v, labelled_cmp);
		for (size_t i = 1; i < nv; i++)
			if (strcmp(v[i].label, v[i - 1].label) == 0) {
				diff_err(err, errlen, "%s and %s have one label, %s", v[i - 1].path, v[i].path, v[i].label);
				rc = -EINVAL;
				break;
			}
	}
	if (rc < 0) {
		labelled_free(v, nv);
		return rc;
	}
	*out = v;
	*n_out = nv;
	return 0;
}

/* ---- the gate ---- */

/* What makes the gate fail before a verdict: the line for err, and
 * -EINVAL (bad input) unless code says otherwise. */
static int gate_fail(int code, char *err, size_t errlen, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

static int gate_fail(int code, char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	if (errlen)
		vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
	return code;
}

int diff_gate(const char *base_path, const char *new_path, const struct diff_opts *o, char *err,
	      size_t errlen)
{
	const char *paths[2] = { base_path, new_path };
	const struct diff_limit *lim = &o->lim, *proc_lim = &o->proc_lim;
	char msg[512];

	/* the pairs to compare: one, or a sweep's runs matched by label */
	int sweep = diff_is_sweep(paths[0]);
	if (sweep != diff_is_sweep(paths[1]))
		return gate_fail(-EINVAL, err, errlen, "'%s' is %s, '%s' is not", paths[sweep ? 0 : 1],
				 "a directory of runs", paths[sweep ? 1 : 0]);
	struct diff_pair *pairs = NULL;
	size_t n_pairs = 0;
	int rc = 0;
	if (!sweep) {
		if (!(pairs = calloc(1, sizeof *pairs)) || !(pairs[0].base_path = strdup(paths[0])) ||
		    !(pairs[0].new_path = strdup(paths[1])))
			rc = gate_fail(-ENOMEM, err, errlen, "%s", strerror(ENOMEM));
		n_pairs = pairs ? 1 : 0;
	} else {
		struct diff_labelled *bl = NULL, *nl = NULL;
		size_t nb = 0, nn = 0;
		if (diff_sweep_list(paths[0], &bl, &nb, msg, sizeof msg) < 0)
			rc = gate_fail(-EINVAL, err, errlen, "baseline %s", msg);
		else if (diff_sweep_list(paths[1], &nl, &nn, msg, sizeof msg) < 0)
			rc = gate_fail(-EINVAL, err, errlen, "new run %s", msg);
		/* both sorted by label: every label must be in both, or the
		 * sweep is incomplete and cannot be judged */
		else if (!(pairs = calloc(nn + 1, sizeof *pairs)))
			rc = gate_fail(-ENOMEM, err, errlen, "%s", strerror(ENOMEM));
		for (size_t i = 0; rc == 0 && (i < nb || i < nn); i++) {
			if (i >= nb || (i < nn && strcmp(bl[i].label, nl[i].label) > 0))
				rc = gate_fail(-EINVAL, err, errlen, "new run %s (%s) has no baseline in %s", nl[i].path,
					       nl[i].label, paths[0]);
			else if (i >= nn || strcmp(bl[i].label, nl[i].label) < 0)
				rc = gate_fail(-EINVAL, err, errlen, "baseline %s (%s) has no run in %s", bl[i].path,
					       bl[i].label, paths[1]);
			else {
				pairs[i].label = bl[i].label;
				pairs[i].base_path = bl[i].path;
				pairs[i].new_path = nl[i].path;
				bl[i].label = bl[i].path = nl[i].path = NULL;
				n_pairs++;
			}
		}
		labelled_free(bl, nb);
		labelled_free(nl, nn);
	}
	for (size_t i = 0; rc == 0 && i < n_pairs; i++) {
		struct diff_pair *p = &pairs[i];
		uint64_t t0 = clock_mono_ns();
		if (diff_run_read(p->base_path, &p->base, msg, sizeof msg) < 0)
			rc = gate_fail(-EINVAL, err, errlen, "baseline %s", msg);
		else if (diff_run_read(p->new_path, &p->nw, msg, sizeof msg) < 0)
			rc = gate_fail(-EINVAL, err, errlen, "new run %s", msg);
		else if (!p->nw.from_dir)
			rc = gate_fail(-EINVAL, err, errlen, "NEW '%s' is not an evidence directory", p->new_path);
		else if ((rc = diff_compare(&p->base, &p->nw, lim, proc_lim, o->floor_mb, &p->res)) < 0)
			rc = gate_fail(rc, err, errlen, "%s", strerror(-rc));
		p->ns = clock_mono_ns() - t0;
	}
	if (rc)
		goto out;
	size_t regressed = 0;
	for (size_t i = 0; i < n_pairs; i++)
		regressed += pairs[i].res.n_regressed;
	if (o->junit && (rc = diff_junit(o->junit, pairs, n_pairs, sweep, o)) < 0) {
		rc = gate_fail(rc, err, errlen, "--junit %s: %s", o->junit, strerror(-rc));
		goto out;
	}
	if (o->json) {
		struct jsonw w;
		rc = fflush(stdout) == 0 ? 0 : -errno;
		if (rc == 0) {
			jsonw_init(&w, STDOUT_FILENO, 2);
			if (sweep)
				jsonw_array_begin(&w);
			for (size_t i = 0; i < n_pairs; i++)
				diff_json_one(&w, pairs[i].label, &pairs[i].res, lim, proc_lim, o->floor_mb);
			if (sweep)
				jsonw_array_end(&w);
			rc = jsonw_finish_line(&w);
		}
	} else {
		for (size_t i = 0; i < n_pairs; i++)
			diff_human(stdout, pairs[i].label, &pairs[i].res, lim, proc_lim);
	}
	if (rc == 0 && (fflush(stdout) != 0 || ferror(stdout)))
		rc = errno ? -errno : -EIO;
	if (rc < 0)
		rc = gate_fail(rc, err, errlen, "writing the comparison: %s", strerror(-rc));
	else
		rc = regressed ? 1 : 0;
out:
	for (size_t i = 0; pairs && i < n_pairs; i++) {
		diff_result_free(&pairs[i].res);
		diff_run_free(&pairs[i].base);
		diff_run_free(&pairs[i].nw);
		free(pairs[i].label);
		free(pairs[i].base_path);
		free(pairs[i].new_path);
	}
	free(pairs);
	return rc;
}
