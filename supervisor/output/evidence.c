/* evidence.c: the evidence directory, rss.jsonl lines and the record.
 *
 * Numbers are written the way Python writes them (pyfloat.h for floats,
 * plain integers) so that files memsup writes are byte-compatible with
 * what the seed's measure_command() wrote for the same values. */
#include "output/evidence.h"
#include "analyze/findings.h"
#include "analyze/phases.h"
#include "jsonw.h"
#include "output/pyfloat.h"
#include "version.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

const char evidence_scope[] =
	"command launch through exit; simultaneous descendants; observer excluded";
const char evidence_limitation[] =
	"polled observations do not bound arbitrary transient allocations";

void evidence_record_init(struct sup_record *r)
{
	memset(r, 0, sizeof *r);
	r->reason = "running";
	r->exit_status = -1;
	r->peak_at_s = -1;
	r->rusage_children_maxrss_mb = -1;
	r->memsup_cpu_s = -1;
	r->poll_interval_p99_s = -1;
	r->peak_heap_mb = r->peak_mapped_mb = r->peak_pss_mb = -1;
}

void evidence_record_note(struct sup_record *r, const char *note)
{
	if (r->n_notes < EVIDENCE_MAX_NOTES)
		r->notes[r->n_notes++] = note;
}

void evidence_record_free(struct sup_record *r)
{
	for (size_t i = 0; i < r->n_leftovers; i++)
		free(r->leftovers[i].argv);
	free(r->leftovers);
	r->leftovers = NULL;
	r->n_leftovers = 0;
}

/* ---- numbers ----------------------------------------------------------------- */

size_t evidence_format_sample(double elapsed_s, uint64_t bytes, char *buf, size_t cap)
{
	char f[40];
	pyfloat_format(elapsed_s, f, sizeof f);
	int n = snprintf(buf, cap, "[%s, %" PRIu64 "]\n", f, bytes);
	return n < 0 ? 0 : (size_t)n;
}

static void put_float(struct jsonw *w, double v)
{
	char f[40];
	size_t n = pyfloat_format(v, f, sizeof f);
	jsonw_raw(w, f, n);
}

static void put_float_or_null(struct jsonw *w, double v, int present)
{
	if (present)
		put_float(w, v);
	else
		jsonw_null(w);
}

/* ---- directory --------------------------------------------------------------- */

static int mkdir_parents(char *path)
{
	/* Every component but the last; EEXIST is fine for them. */
	for (char *s = path + 1; *s; s++) {
		if (*s != '/')
			continue;
		*s = '\0';
		int rc = mkdir(path, 0777) < 0 && errno != EEXIST ? -errno : 0;
		*s = '/';
		if (rc < 0)
			return rc;
	}
	return 0;
}

int evidence_create(struct evidence *ev, const char *path, const char **failed_at)
{
	char tmp[PATH_MAX];
	int rc;
	ev->dirfd = ev->log_fd = ev->rss_fd = ev->tl_fd = -1;
	ev->rss_whole = ev->tl_whole = 0;
	ev->fail_op = ev->fail_name = NULL;
	ev->fail_err = 0;
	size_t n = strlen(path);
	if (n == 0 || n >= sizeof tmp) {
		*failed_at = "evidence directory name";
		return -ENAMETOOLONG;
	}
	memcpy(tmp, path, n + 1);
	while (n > 1 && tmp[n - 1] == '/')
		tmp[--n] = '\0';
	*failed_at = "create parent directories";
	if ((rc = mkdir_parents(tmp)) < 0)
		return rc;
	*failed_at = "create evidence directory";
	if (mkdir(tmp, 0777) < 0)
		return -errno;
	*failed_at = "open evidence directory";
	ev->dirfd = open(tmp, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (ev->dirfd < 0 || !realpath(tmp, ev->path))
		goto fail;
	*failed_at = "create stdout.log";
	ev->log_fd = openat(ev->dirfd, "stdout.log",
			    O_WRONLY | O_CREAT | O_EXCL | O_APPEND | O_CLOEXEC, 0666);
	if (ev->log_fd < 0)
		goto fail;
	*failed_at = "create rss.jsonl";
	ev->rss_fd = openat(ev->dirfd, "rss.jsonl",
			    O_WRONLY | O_CREAT | O_EXCL | O_APPEND | O_CLOEXEC, 0666);
	if (ev->rss_fd < 0)
		goto fail;
	jsonw_init(&ev->rss_w, ev->rss_fd, 0);
	*failed_at = "create timeline.jsonl";
	ev->tl_fd = openat(ev->dirfd, "timeline.jsonl",
			   O_WRONLY | O_CREAT | O_EXCL | O_APPEND | O_CLOEXEC, 0666);
	if (ev->tl_fd < 0)
		goto fail;
	jsonw_init(&ev->tl_w, ev->tl_fd, 0);
	*failed_at = NULL;
	return 0;
fail:
	rc = -errno;
	evidence_close(ev);
	return rc;
}

static void note_failure(struct evidence *ev, const char *op, const char *name, int err)
{
	if (ev->fail_op)
		return; /* the first failure is the cause; later ones follow from it */
	ev->fail_op = op;
	ev->fail_name = name;
	ev->fail_err = err;
}

int evidence_fail_describe(const struct evidence *ev, char *buf, size_t cap)
{
	if (!ev->fail_op) {
		if (cap)
			buf[0] = '\0';
		return -1;
	}
	snprintf(buf, cap, "%s %s/%s: %s", ev->fail_op, ev->path, ev->fail_name,
		 strerror(-ev->fail_err));
	return 0;
}

/* Write out a line file's buffer (whole lines only).  When the write fails
 * part way (ENOSPC, EFBIG), cut the file back to the lines written whole
 * before: readers of rss.jsonl must never meet half a line.  jsonw keeps
 * the error, so nothing is written to this file after. */
static int flush_lines(struct evidence *ev, struct jsonw *w, off_t *whole, const char *name)
{
	size_t n = w->len;
	int rc = jsonw_finish(w);
	if (rc == 0) {
		*whole += (off_t)n;
		return 0;
	}
	if (n > 0)
		(void)!ftruncate(w->fd, *whole); /* best effort: the error is already the news */
	note_failure(ev, "write", name, rc);
	return rc;
}

void evidence_close(struct evidence *ev)
{
	if (ev->rss_fd >= 0) {
		evidence_flush_samples(ev);
		close(ev->rss_fd);
	}
	if (ev->tl_fd >= 0) {
		flush_lines(ev, &ev->tl_w, &ev->tl_whole, "timeline.jsonl");
		close(ev->tl_fd);
	}
	if (ev->log_fd >= 0)
		close(ev->log_fd);
	if (ev->dirfd >= 0)
		close(ev->dirfd);
	ev->dirfd = ev->log_fd = ev->rss_fd = ev->tl_fd = -1;
}

int evidence_append_sample(struct evidence *ev, double elapsed_s, uint64_t bytes)
{
	char line[96];
	size_t n = evidence_format_sample(elapsed_s, bytes, line, sizeof line);
	/* Through jsonw (raw: its compact mode has no space after the comma,
	 * and the seed's lines have one).  Flushing before a line that would
	 * not fit keeps the file made of whole lines whatever kills memsup. */
	if (ev->rss_w.len + n > sizeof ev->rss_w.buf)
		flush_lines(ev, &ev->rss_w, &ev->rss_whole, "rss.jsonl");
	jsonw_raw(&ev->rss_w, line, n);
	return ev->rss_w.err;
}

int evidence_flush_samples(struct evidence *ev)
{
	int rc = flush_lines(ev, &ev->rss_w, &ev->rss_whole, "rss.jsonl");
	if (ev->tl_fd >= 0) {
		int r2 = flush_lines(ev, &ev->tl_w, &ev->tl_whole, "timeline.jsonl");
		if (rc == 0)
			rc = r2;
	}
	return rc;
}

int evidence_append_timeline(struct evidence *ev, const struct evidence_tl *s)
{
	char line[768], f[40]; /* the longest line is about 420 bytes */
	size_t n;
	if (ev->tl_fd < 0)
		return 0;
	pyfloat_format(s->t, f, sizeof f);
	n = (size_t)snprintf(line, sizeof line, "{\"t\": %s, \"rss\": %" PRIu64
			     ", \"processes\": %u", f, s->rss, s->processes);
	if (s->traced)
		n += (size_t)snprintf(line + n, sizeof line - n,
				      ", \"heap\": %" PRIu64 ", \"mapped_anon\": %" PRIu64
				      ", \"mapped_file\": %" PRIu64,
				      s->heap, s->mapped_anon, s->mapped_file);
	else
		n += (size_t)snprintf(line + n, sizeof line - n,
				      ", \"heap\": null, \"mapped_anon\": null, \"mapped_file\": null");
	if (s->have_pss)
		n += (size_t)snprintf(line + n, sizeof line - n, ", \"pss\": %" PRIu64, s->pss);
	n += (size_t)snprintf(line + n, sizeof line - n, ", \"top\": [");
	for (size_t i = 0; i < s->n_top && i < EVIDENCE_TL_TOP; i++)
		n += (size_t)snprintf(line + n, sizeof line - n, "%s[%d, %" PRIu64 "]",
				      i ? ", " : "", (int)s->top[i].pid, s->top[i].rss);
	n += (size_t)snprintf(line + n, sizeof line - n, "]}\n");
	/* whole lines only, as for rss.jsonl */
	if (ev->tl_w.len + n > sizeof ev->tl_w.buf)
		flush_lines(ev, &ev->tl_w, &ev->tl_whole, "timeline.jsonl");
	jsonw_raw(&ev->tl_w, line, n);
	return ev->tl_w.err;
}

/* ---- the record -------------------------------------------------------------- */

static void put_env(struct jsonw *w, char *const *env, size_t n)
{
	jsonw_object_begin(w);
	for (size_t i = 0; i < n; i++) {
		const char *eq = strchr(env[i], '=');
		size_t kl = (size_t)(eq - env[i]);
		/* -e may repeat a key: the last one is what the command gets. */
		int later = 0;
		for (size_t j = i + 1; j < n && !later; j++)
			later = strncmp(env[j], env[i], kl + 1) == 0;
		if (later)
			continue;
		char key[256];
		if (kl >= sizeof key) {
			/* keys this long are odd but legal: write without the
			 * NUL-terminated copy */
			jsonw_key(w, "");
			jsonw_string(w, env[i]);
			continue;
		}
		memcpy(key, env[i], kl);
		key[kl] = '\0';
		jsonw_key(w, key);
		jsonw_string(w, eq + 1);
	}
	jsonw_object_end(w);
}

int evidence_record_json(int fd, const struct sup_record *r)
{
	struct jsonw w;
	jsonw_init(&w, fd, 2);
	jsonw_object_begin(&w);

	/* The seed's keys first, in the seed's order, same meaning and units. */
	jsonw_key(&w, "command");
	jsonw_array_begin(&w);
	for (int i = 0; i < r->command_argc; i++)
		jsonw_string(&w, r->command[i]);
	jsonw_array_end(&w);
	jsonw_key(&w, "exit_code");
	if (r->have_exit)
		jsonw_int(&w, r->exit_code);
	else
		jsonw_null(&w);
	jsonw_key(&w, "reason");
	jsonw_string(&w, r->reason);
	jsonw_key(&w, "wall_s");
	put_float(&w, r->wall_s);
	jsonw_key(&w, "peak_tree_rss_mb");
	put_float(&w, (double)r->peak_bytes / 1e6);
	jsonw_key(&w, "poll_s");
	put_float(&w, r->poll_s);
	jsonw_key(&w, "rss_budget_mb");
	put_float_or_null(&w, r->rss_budget_mb, r->rss_budget_mb > 0);
	jsonw_key(&w, "wall_budget_s");
	put_float_or_null(&w, r->wall_budget_s, r->wall_budget_s > 0);
	jsonw_key(&w, "scope");
	jsonw_string(&w, evidence_scope);
	jsonw_key(&w, "limitation");
	jsonw_string(&w, evidence_limitation);

	/* memsup's additions. */
	jsonw_key(&w, "max_procs_budget");
	if (r->max_procs_budget)
		jsonw_uint(&w, r->max_procs_budget);
	else
		jsonw_null(&w);
	jsonw_key(&w, "signal");
	if (r->have_exit && r->signal)
		jsonw_int(&w, r->signal);
	else
		jsonw_null(&w);
	jsonw_key(&w, "exit_status");
	if (r->exit_status >= 0)
		jsonw_int(&w, r->exit_status);
	else
		jsonw_null(&w);
	jsonw_key(&w, "error");
	jsonw_string(&w, r->error);
	jsonw_key(&w, "pid");
	if (r->pid > 0)
		jsonw_int(&w, r->pid);
	else
		jsonw_null(&w);
	jsonw_key(&w, "peak_tree_rss_at_s");
	put_float_or_null(&w, r->peak_at_s, r->peak_at_s >= 0);
	jsonw_key(&w, "samples");
	jsonw_uint(&w, r->samples);
	jsonw_key(&w, "max_processes");
	jsonw_uint(&w, r->max_processes);
	jsonw_key(&w, "leftover_processes_killed");
	jsonw_array_begin(&w);
	for (size_t i = 0; i < r->n_leftovers; i++) {
		const struct sup_leftover *l = &r->leftovers[i];
		jsonw_object_begin(&w);
		jsonw_key(&w, "pid");
		jsonw_int(&w, l->pid);
		jsonw_key(&w, "argv");
		jsonw_array_begin(&w);
		for (size_t s = 0; s < l->argv_len;) {
			size_t m = strnlen(l->argv + s, l->argv_len - s);
			jsonw_string_n(&w, l->argv + s, m);
			s += m + 1;
		}
		jsonw_array_end(&w);
		jsonw_object_end(&w);
	}
	jsonw_array_end(&w);
	jsonw_key(&w, "orphans_reaped");
	jsonw_array_begin(&w);
	for (size_t i = 0; i < r->n_reaped && i < EVIDENCE_MAX_REAPED; i++) {
		jsonw_object_begin(&w);
		jsonw_key(&w, "pid");
		jsonw_int(&w, r->reaped[i].pid);
		jsonw_key(&w, "exit_code");
		jsonw_int(&w, r->reaped[i].exit_code);
		jsonw_object_end(&w);
	}
	jsonw_array_end(&w);
	jsonw_key(&w, "orphans_reaped_total");
	jsonw_uint(&w, r->n_reaped);
	jsonw_key(&w, "rusage_children_maxrss_mb");
	put_float_or_null(&w, r->rusage_children_maxrss_mb, r->rusage_children_maxrss_mb >= 0);
	jsonw_key(&w, "poll_interval_p99_s");
	put_float_or_null(&w, r->poll_interval_p99_s, r->poll_interval_p99_s >= 0);
	jsonw_key(&w, "memsup_cpu_s");
	put_float_or_null(&w, r->memsup_cpu_s, r->memsup_cpu_s >= 0);
	jsonw_key(&w, "discovery");
	jsonw_string(&w, r->discovery);
	jsonw_key(&w, "notes");
	jsonw_array_begin(&w);
	for (size_t i = 0; i < r->n_notes; i++)
		jsonw_string(&w, r->notes[i]);
	jsonw_array_end(&w);
	jsonw_key(&w, "grace_s");
	put_float_or_null(&w, r->grace_s, r->grace_s > 0);
	jsonw_key(&w, "cwd");
	jsonw_string(&w, r->cwd);
	jsonw_key(&w, "env");
	put_env(&w, r->env, r->n_env);
	jsonw_key(&w, "meta");
	put_env(&w, r->meta, r->n_meta);
	jsonw_key(&w, "memsup_version");
	jsonw_string(&w, memsup_version());
	jsonw_key(&w, "started_at");
	jsonw_string(&w, r->started_at);

	/* the merged view */
	jsonw_key(&w, "traced");
	jsonw_bool(&w, r->traced);
	jsonw_key(&w, "processes_traced");
	jsonw_uint(&w, r->processes_traced);
	jsonw_key(&w, "processes_sampled");
	jsonw_uint(&w, r->processes_sampled);
	jsonw_key(&w, "peak_heap_mb");
	put_float_or_null(&w, r->peak_heap_mb, r->peak_heap_mb >= 0);
	jsonw_key(&w, "peak_mapped_mb");
	put_float_or_null(&w, r->peak_mapped_mb, r->peak_mapped_mb >= 0);
	jsonw_key(&w, "peak_pss_mb");
	put_float_or_null(&w, r->peak_pss_mb, r->peak_pss_mb >= 0);
	/* phases: "markers", "markers_dropped", "phases" */
	phases_write_json(&w, r->phases, r->wall_s, r->exit_status >= 0);
	jsonw_key(&w, "blind_spots");
	if (r->n_findings)
		findings_write_json(&w, r->findings, r->n_findings);
	else {
		jsonw_array_begin(&w);
		jsonw_array_end(&w);
	}

	jsonw_object_end(&w);
	return jsonw_finish_line(&w);
}

int evidence_write_record(struct evidence *ev, const struct sup_record *r, int durable)
{
	static const char tmp[] = "resources.json.tmp";
	int fd = openat(ev->dirfd, tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
	if (fd < 0) {
		/* ENOENT: the directory was removed under us */
		int rc = -errno;
		note_failure(ev, "create", tmp, rc);
		return rc;
	}
	const char *op = "write";
	int rc = evidence_record_json(fd, r);
	/* fsync only when asked: the once-a-second rewrites while running must
	 * not stall sampling on the disk; rename alone already makes every
	 * reader see a whole old or a whole new file. */
	if (rc == 0 && durable && fsync(fd) < 0) {
		rc = -errno;
		op = "fsync";
	}
	if (close(fd) < 0 && rc == 0) {
		rc = -errno;
		op = "close";
	}
	if (rc < 0) {
		note_failure(ev, op, tmp, rc);
	} else if (renameat(ev->dirfd, tmp, ev->dirfd, "resources.json") < 0) {
		rc = -errno;
		note_failure(ev, "rename", tmp, rc);
	} else if (durable && fsync(ev->dirfd) < 0) {
		rc = -errno;
		note_failure(ev, "fsync", ".", rc);
	}
	/* a half-written temporary file is never left for a reader to find */
	if (rc < 0)
		unlinkat(ev->dirfd, tmp, 0);
	return rc;
}
