/* processes.c: processes.json and the summary's per-process table (see
 * processes.h).  Every figure is bytes unless its key says otherwise
 * (_kb: KiB as the kernel prints them, _s: seconds since the launch). */
#include "evidence/files.h"
#include "evidence/processes.h"
#include "base/procfs.h"
#include "collect/recordfile.h"
#include "jsonw.h"
#include "names.h"
#include "evidence/evidence.h"
#include "evidence/jsonr.h"
#include "recordjson.h"
#include "units.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

/* What every image's object of processes.json holds where a key is left
 * out.  The lean form (the one memsup writes) leaves out each key whose
 * value is its default here; the whole form writes every key, as memsup
 * did before the lean one.  Inside "lineage" and the image's "record" (an
 * object when traced) the same, by record_defaults for the latter
 * (recordjson.h says what its lean form leaves out).  Five keys have a
 * default that another key of the image says (processes_fill):
 *   traced            whether "record" is an object
 *   sampled           whether "polled_peak_rss" is a number
 *   lineage.parent_pid  the image's "ppid"
 *   vm_hwm_kb, vm_hwm_from  the record's kernel.vm_hwm_kb and "shim", when
 *                     the record is an object whose state is not "running"
 *                     and that figure is not 0 (the shim's VmHWM at the
 *                     image's end, merge_image_hwm_kb); else null and null
 * memsup(1) lists these defaults, and scripts/memsup.py's read_processes()
 * holds the same.  A test writes a run both ways and reads them back the
 * same (tests/unit/test_processes.c). */
static const char image_defaults[] =
	"{\"gen\": 0, \"ppid\": null,"
	" \"lineage\": {\"relation\": null, \"parent_gen\": 0,"
	" \"guessed\": false},"
	" \"argv\": [], \"argv_truncated\": false, \"argc\": null, \"exe\": null,"
	" \"record_error\": null, \"untraced_why\": null,"
	" \"start_s\": null, \"end_s\": null, \"first_seen_s\": null, \"last_seen_s\": null,"
	" \"samples\": 0, \"polled_peak_rss\": null, \"polled_peak_at_s\": null,"
	" \"session\": null, \"escaped\": false, \"leftover_killed\": false,"
	" \"exit_code\": null,"
	" \"record\": null, \"at_peak\": null}";
static const char record_defaults[] =
	"{\"flags\": 0, \"exit_code\": 0, \"exit_signal\": null,"
	" \"start_real_ns\": 0, \"start_mono_ns\": 0, \"end_mono_ns\": 0,"
	" \"heap\": {\"current\": 0, \"peak\": 0, \"peak_mono_ns\": 0, \"requested_total\": 0,"
	" \"largest_request\": 0, \"at_fork\": 0, \"hist\": []},"
	" \"calls\": {},"
	" \"maps\": {\"anon_current\": 0, \"anon_peak\": 0, \"anon_at_fork\": 0,"
	" \"file_current\": 0, \"file_peak\": 0, \"largest\": 0, \"untracked_calls\": 0,"
	" \"untracked_bytes\": 0},"
	" \"total\": {\"current\": 0, \"peak\": 0, \"peak_mono_ns\": 0},"
	" \"kernel\": {\"vm_hwm_kb\": 0, \"vm_rss_kb\": 0, \"vm_peak_kb\": 0,"
	" \"ru_maxrss_self_kb\": 0, \"ru_maxrss_children_kb\": 0},"
	" \"marker_count\": 0, \"markers\": []}";

/* The writer and its form: lean leaves out a key whose value is the
 * default above. */
struct pout {
	struct jsonw *w;
	int lean;
};

/* The key, unless the lean form leaves it out: 1 when the value must follow. */
static int key_of(const struct pout *o, const char *key, int is_default)
{
	if (o->lean && is_default)
		return 0;
	jsonw_key(o->w, key);
	return 1;
}

/* Seconds since the launch; < 0 is null, the default of every _s key. */
static void put_s(const struct pout *o, const char *key, double s)
{
	if (!key_of(o, key, s < 0))
		return;
	if (s < 0)
		jsonw_null(o->w);
	else
		jsonw_double(o->w, s, 6);
}

static void put_bool(const struct pout *o, const char *key, int v)
{
	if (key_of(o, key, !v))
		jsonw_bool(o->w, v);
}

/* A count or size whose default is null: known, or not (null). */
static void put_known(const struct pout *o, const char *key, int known, int64_t v)
{
	if (!key_of(o, key, !known))
		return;
	if (known)
		jsonw_int(o->w, v);
	else
		jsonw_null(o->w);
}

static void put_string(const struct pout *o, const char *key, const char *s)
{
	if (key_of(o, key, !s))
		jsonw_string(o->w, s);
}

static void put_argv(struct jsonw *w, const char *argv, size_t len)
{
	jsonw_array_begin(w);
	for (size_t s = 0; argv && s < len;) {
		size_t n = strnlen(argv + s, len - s);
		jsonw_string_n(w, argv + s, n);
		s += n + 1;
	}
	jsonw_array_end(w);
}

/* Exit status in the record's convention (code, or -signal); 0 when
 * unknown, 1 when *code is set. */
static int exit_of(const struct image_view *iv, int *code)
{
	if (iv->have_status) {
		*code = WIFEXITED(iv->wait_status) ? WEXITSTATUS(iv->wait_status)
						   : -WTERMSIG(iv->wait_status);
		return 1;
	}
	if (iv->traced && (iv->rec.state == MT_STATE_EXITED ||
			   iv->rec.state == MT_STATE_UNDERSCORE_EXIT)) {
		*code = iv->rec.exit_code;
		return 1;
	}
	if (iv->traced && iv->rec.state == MT_STATE_SIGNALED) {
		*code = -iv->rec.exit_signal;
		return 1;
	}
	return 0;
}

/* "parent_pid" (null: none known), left out by the lean form when it is
 * the image's ppid as written. */
static void put_parent_pid(const struct pout *o, const struct image_view *iv, int known, pid_t pid)
{
	int is_ppid = known == (iv->ppid > 0) && (!known || pid == iv->ppid);
	if (!key_of(o, "parent_pid", is_ppid))
		return;
	if (known)
		jsonw_int(o->w, pid);
	else
		jsonw_null(o->w);
}

/* "lineage": how the image came to be, as the shim saw it, or as far as
 * the poller can tell. */
static void put_lineage(const struct pout *o, const struct image_view *iv)
{
	const struct image_rec *r = &iv->rec;
	struct jsonw *w = o->w;
	jsonw_key(w, "lineage");
	jsonw_object_begin(w);
	if (iv->traced) {
		int root = r->relation == MT_REL_ROOT;
		put_string(o, "relation", names_relation(r->relation));
		put_parent_pid(o, iv, !root, r->parent_pid);
		/* a root's parent_gen is null, not the default 0 */
		if (root) {
			jsonw_key(w, "parent_gen");
			jsonw_null(w);
		} else if (key_of(o, "parent_gen", r->parent_gen == 0)) {
			jsonw_uint(w, r->parent_gen);
		}
		put_bool(o, "guessed", (r->flags & MT_FLAG_LINEAGE_GUESSED) != 0);
	} else if (iv->gen > 0) {
		/* an image without the shim that replaced a traced one */
		put_string(o, "relation", "exec");
		put_parent_pid(o, iv, 1, iv->pid);
		if (key_of(o, "parent_gen", iv->gen - 1 == 0))
			jsonw_uint(w, iv->gen - 1);
		put_bool(o, "guessed", 0);
	} else {
		/* only the poller's ppid is known */
		put_string(o, "relation", NULL);
		put_parent_pid(o, iv, iv->ppid > 0, iv->ppid);
		jsonw_key(w, "parent_gen");
		jsonw_null(w);
		put_bool(o, "guessed", 1);
	}
	jsonw_object_end(w);
}

/* "argv", "argv_truncated", "argc": never cut silently.  The record keeps
 * MT_ARGV_BYTES of argv (and the real argc), the poller PROCFS_ARGV_BYTES
 * of /proc/PID/cmdline. */
static void put_command(const struct pout *o, const struct image_view *iv)
{
	if (key_of(o, "argv", !iv->argv || !iv->argv_len))
		put_argv(o->w, iv->argv, iv->argv_len);
	int cut = iv->traced ? (iv->rec.flags & MT_FLAG_ARGV_TRUNCATED) != 0
			     : iv->argv_len >= PROCFS_ARGV_BYTES - 1;
	put_bool(o, "argv_truncated", cut);
	if (iv->traced) {
		put_known(o, "argc", 1, iv->rec.argc);
	} else if (iv->argv && !cut) {
		size_t argc = 0;
		for (size_t i = 0; i < iv->argv_len; i++)
			argc += iv->argv[i] == '\0'; /* each argument ends in one */
		put_known(o, "argc", 1, (int64_t)argc);
	} else {
		put_known(o, "argc", 0, 0);
	}
}

/* The poller's view: when it saw the image, its polled peak, its session,
 * how it ended, its VmHWM. */
static void put_polled(const struct pout *o, const struct image_view *iv)
{
	const char *src;
	int code = 0;
	put_s(o, "first_seen_s", iv->sampled ? iv->first_seen_s : -1);
	put_s(o, "last_seen_s", iv->sampled ? iv->last_seen_s : -1);
	if (key_of(o, "samples", iv->samples_seen == 0))
		jsonw_uint(o->w, iv->samples_seen);
	if (key_of(o, "polled_peak_rss", !iv->sampled)) {
		if (iv->sampled)
			jsonw_uint(o->w, iv->polled_peak_rss);
		else
			jsonw_null(o->w);
	}
	put_s(o, "polled_peak_at_s", iv->sampled ? iv->polled_peak_at_s : -1);
	put_known(o, "session", iv->sid > 0, iv->sid);
	put_bool(o, "escaped", iv->escaped);
	put_bool(o, "leftover_killed", iv->leftover_killed);
	int known = exit_of(iv, &code);
	put_known(o, "exit_code", known, code);
	/* the shim's figure is the record's own kernel.vm_hwm_kb: the lean
	 * form says it once, there */
	uint64_t hwm = merge_image_hwm_kb(iv, &src);
	int from_record = src && strcmp(src, "shim") == 0;
	if (key_of(o, "vm_hwm_kb", from_record)) {
		if (hwm)
			jsonw_uint(o->w, hwm);
		else
			jsonw_null(o->w);
	}
	if (key_of(o, "vm_hwm_from", from_record))
		jsonw_string(o->w, src);
}

/* "record": the figures of a traced image's record, in the one layout of
 * common/recordjson.h (null untraced); its identity is the image's own keys. */
static void put_record(const struct pout *o, const struct image_view *iv)
{
	static struct mt_record r; /* 8 KiB: not on the stack of every image */
	if (!key_of(o, "record", !iv->traced))
		return;
	if (!iv->traced) {
		jsonw_null(o->w);
		return;
	}
	merge_record_of(iv, &r);
	recordjson_write_figures(o->w, &r, o->lean ? RECORDJSON_LEAN : RECORDJSON_ALL);
}

/* "start_s", "end_s": the image's life in seconds since the launch, from
 * its record (null untraced; end_s null while it runs). */
static void put_life(const struct pout *o, const struct merged_run *m, const struct image_view *iv)
{
	const struct image_rec *r = &iv->rec;
	put_s(o, "start_s", iv->traced ? merge_mono_s(m, r->start_mono_ns) : -1);
	put_s(o, "end_s", iv->traced && r->state != MT_STATE_RUNNING
				  ? merge_mono_s(m, r->end_mono_ns) : -1);
}

/* "at_peak": the image at the tree's peak sample (null if not alive then). */
static void put_at_peak(const struct pout *o, const struct image_view *iv)
{
	struct jsonw *w = o->w;
	if (!key_of(o, "at_peak", !iv->at_peak))
		return;
	if (!iv->at_peak) {
		jsonw_null(w);
		return;
	}
	jsonw_object_begin(w);
	jsonw_key(w, "rss");
	jsonw_uint(w, iv->peak_rss);
	jsonw_key(w, "heap");
	jsonw_uint(w, iv->peak_heap);
	jsonw_key(w, "mapped");
	jsonw_uint(w, iv->peak_map);
	if (iv->have_smaps) {
		jsonw_key(w, "pss");
		jsonw_uint(w, iv->peak_pss);
		jsonw_key(w, "rss_anon");
		jsonw_uint(w, iv->peak_anon);
		jsonw_key(w, "rss_file");
		jsonw_uint(w, iv->peak_file);
		jsonw_key(w, "rss_shmem");
		jsonw_uint(w, iv->peak_shmem);
		jsonw_key(w, "swap");
		jsonw_uint(w, iv->peak_swap);
	}
	jsonw_object_end(w);
}

static void put_image(const struct pout *o, const struct merged_run *m, const struct image_view *iv)
{
	struct jsonw *w = o->w;
	jsonw_object_begin(w);
	jsonw_key(w, "pid");
	jsonw_int(w, iv->pid);
	if (key_of(o, "gen", iv->gen == 0))
		jsonw_uint(w, iv->gen);
	put_known(o, "ppid", iv->ppid > 0, iv->ppid);
	put_lineage(o, iv);
	put_command(o, iv);
	put_string(o, "exe", iv->exe);
	/* said by "record" and "polled_peak_rss" (null unless so) */
	if (key_of(o, "traced", 1))
		jsonw_bool(w, iv->traced);
	if (key_of(o, "sampled", 1))
		jsonw_bool(w, iv->sampled);
	put_string(o, "record_error", iv->record_error ? recordfile_strerror(iv->record_error) : NULL);
	put_string(o, "untraced_why", iv->traced ? NULL : merge_untraced_name(iv->untraced_why));
	put_life(o, m, iv);
	put_polled(o, iv);
	put_record(o, iv);
	put_at_peak(o, iv);
	jsonw_object_end(w);
}

struct pdoc {
	const struct merged_run *m;
	int lean;
};

static void put_all(struct jsonw *w, const void *ctx)
{
	const struct pdoc *d = ctx;
	const struct pout o = { w, d->lean };
	jsonw_array_begin(w);
	for (size_t i = 0; i < d->m->n_images; i++)
		put_image(&o, d->m, &d->m->images[i]);
	jsonw_array_end(w);
}

int processes_write_form(int dirfd, const struct merged_run *m, enum processes_form form)
{
	/* compact, one image per line: a run of 100,000 images stays one JSON
	 * document that line tools can still grep */
	const struct pdoc d = { m, form == PROCESSES_LEAN };
	return evidence_write_json(dirfd, EVIDENCE_PROCESSES, 0, 1, put_all, &d);
}

int processes_write(int dirfd, const struct merged_run *m)
{
	return processes_write_form(dirfd, m, PROCESSES_LEAN);
}

/* The two tables, parsed once (memsup reads processes.json from one
 * thread). */
static int defaults_of(const struct jsonr_value **image, const struct jsonr_value **record)
{
	static struct jsonr_value *img, *rec;
	if (!img && jsonr_parse(image_defaults, sizeof image_defaults - 1, &img, NULL, 0) < 0)
		return -ENOMEM; /* the text is fixed and valid: only memory fails */
	if (!rec && jsonr_parse(record_defaults, sizeof record_defaults - 1, &rec, NULL, 0) < 0)
		return -ENOMEM;
	*image = img;
	*record = rec;
	return 0;
}

/* obj's `key`, when it lacks one, as v. */
static int put_missing(struct jsonr_value *obj, const char *key, const struct jsonr_value *v)
{
	if (!obj || obj->type != JSONR_OBJECT || jsonr_get(obj, key))
		return 0;
	return jsonr_put(obj, key, v);
}

int processes_fill(struct jsonr_value *image)
{
	const struct jsonr_value *img, *recd;
	int rc = defaults_of(&img, &recd);
	if (rc < 0)
		return rc;
	if (!image || image->type != JSONR_OBJECT)
		return 0;
	if ((rc = jsonr_fill(image, img)) < 0)
		return rc;
	/* "record" is null by default; a traced image's object gets its own
	 * figures' defaults */
	struct jsonr_value *rec = (struct jsonr_value *)jsonr_get(image, "record");
	if ((rc = jsonr_fill(rec, recd)) < 0)
		return rc;

	/* the defaults another key says (image_defaults' comment), taken as
	 * values first: a member put into image moves its members */
	const struct jsonr_value null = { .type = JSONR_NULL };
	const struct jsonr_value *ppid = jsonr_get(image, "ppid");
	const struct jsonr_value *peak = jsonr_get(image, "polled_peak_rss");
	const struct jsonr_value *hwm = jsonr_get(jsonr_get(rec, "kernel"), "vm_hwm_kb");
	const char *state = jsonr_str(jsonr_get(rec, "state"), "running");
	const struct jsonr_value traced = { .type = JSONR_BOOL,
					    .boolean = rec && rec->type == JSONR_OBJECT };
	const struct jsonr_value sampled = { .type = JSONR_BOOL,
					     .boolean = peak && peak->type == JSONR_NUMBER };
	int shim = traced.boolean && strcmp(state, "running") != 0 && jsonr_num(hwm, 0) != 0;
	const struct jsonr_value hwm_kb = shim ? *hwm : null;
	const struct jsonr_value from = shim ? (struct jsonr_value){ .type = JSONR_STRING,
								     .string = (char *)"shim",
								     .len = 4 }
					     : null;
	/* the lineage's own members move, not the image's */
	if ((rc = put_missing((struct jsonr_value *)jsonr_get(image, "lineage"), "parent_pid",
			      ppid ? ppid : &null)) < 0 ||
	    (rc = put_missing(image, "traced", &traced)) < 0 ||
	    (rc = put_missing(image, "sampled", &sampled)) < 0 ||
	    (rc = put_missing(image, "vm_hwm_kb", &hwm_kb)) < 0 ||
	    (rc = put_missing(image, "vm_hwm_from", &from)) < 0)
		return rc;
	return 0;
}

struct pread {
	jsonr_item_fn *fn;
	void *ctx;
};

static int fill_then(const struct jsonr_value *item, void *ctx)
{
	const struct pread *r = ctx;
	/* the walker's own item, freed when this returns (jsonr.h) */
	int rc = processes_fill((struct jsonr_value *)item);
	return rc < 0 ? rc : r->fn(item, r->ctx);
}

int processes_read_each(int dirfd, size_t max_bytes, jsonr_item_fn *fn, void *ctx, char *err,
			size_t errlen)
{
	struct pread r = { fn, ctx };
	return jsonr_read_file_each(dirfd, EVIDENCE_PROCESSES, max_bytes, fill_then, &r, err, errlen);
}

static uint64_t peak_of(const struct image_view *iv)
{
	const char *src;
	uint64_t h = merge_image_hwm_kb(iv, &src) * 1024;
	return h > iv->polled_peak_rss ? h : iv->polled_peak_rss;
}

static void print_mb(FILE *out, int known, uint64_t bytes)
{
	if (known)
		fprintf(out, " %9.1f", (double)bytes / UNITS_MB);
	else
		fprintf(out, " %9s", "-");
}

void processes_print_table(FILE *out, const struct merged_run *m, size_t max_rows)
{
	size_t n = m->n_images, rows = n < max_rows ? n : max_rows;
	if (!rows)
		return;
	const struct image_view **top = calloc(rows, sizeof *top);
	if (!top)
		return;
	/* selection of the largest `rows`: n x rows, rows is small */
	size_t got = 0;
	for (size_t i = 0; i < n; i++) {
		const struct image_view *iv = &m->images[i];
		uint64_t p = peak_of(iv);
		size_t at = got;
		while (at > 0 && peak_of(top[at - 1]) < p)
			at--;
		if (at >= rows)
			continue;
		size_t last = got < rows ? got : rows - 1;
		memmove(&top[at + 1], &top[at], (last - at) * sizeof *top);
		top[at] = iv;
		if (got < rows)
			got++;
	}
	fprintf(out, "memsup: %zu process image%s (%zu largest; MB):\n", n, n == 1 ? "" : "s", got);
	fprintf(out, "memsup: %8s %9s %9s %9s  %s\n", "pid", "polled", "VmHWM", "heap", "command");
	for (size_t i = 0; i < got; i++) {
		const struct image_view *iv = top[i];
		const char *src;
		uint64_t hwm = merge_image_hwm_kb(iv, &src);
		fprintf(out, "memsup: %8d", (int)iv->pid);
		print_mb(out, iv->sampled, iv->polled_peak_rss);
		print_mb(out, hwm != 0, hwm * 1024);
		/* a heap the shim never saw (another allocator's malloc) is
		 * unknown, not 0 */
		print_mb(out, iv->traced && !(iv->rec.flags & MT_FLAG_HEAP_FOREIGN),
			 iv->rec.heap_peak);
		char cmd[64];
		size_t o = 0;
		for (size_t s = 0; iv->argv && s < iv->argv_len && o + 1 < sizeof cmd; s++)
			cmd[o++] = iv->argv[s] ? iv->argv[s] : ' ';
		cmd[o] = '\0';
		if (iv->argv && iv->argv_len >= sizeof cmd - 1 && o >= 3)
			memcpy(cmd + o - 3, "...", 3);
		fprintf(out, "  %s%s\n", o ? cmd : "?", iv->traced ? "" : " (untraced)");
	}
	free(top);
}
