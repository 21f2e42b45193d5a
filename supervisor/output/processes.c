/* processes.c: processes.json and the summary's per-process table (see
 * processes.h).  Every figure is bytes unless its key says otherwise
 * (_kb: KiB as the kernel prints them, _s: seconds since the launch). */
#include "output/processes.h"
#include "collect/procfs.h"
#include "collect/recordfile.h"
#include "jsonw.h"
#include "names.h"
#include "output/evidence.h"
#include "recordjson.h"
#include "units.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static void put_s(struct jsonw *w, double s)
{
	if (s < 0)
		jsonw_null(w);
	else
		jsonw_double(w, s, 6);
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

/* "lineage": how the image came to be, as the shim saw it, or as far as
 * the poller can tell. */
static void put_lineage(struct jsonw *w, const struct image_view *iv)
{
	const struct image_rec *r = &iv->rec;
	jsonw_object_begin(w);
	jsonw_key(w, "relation");
	if (iv->traced) {
		jsonw_string(w, names_relation(r->relation));
		jsonw_key(w, "parent_pid");
		if (r->relation == MT_REL_ROOT)
			jsonw_null(w);
		else
			jsonw_int(w, r->parent_pid);
		jsonw_key(w, "parent_gen");
		if (r->relation == MT_REL_ROOT)
			jsonw_null(w);
		else
			jsonw_uint(w, r->parent_gen);
		jsonw_key(w, "guessed");
		jsonw_bool(w, (r->flags & MT_FLAG_LINEAGE_GUESSED) != 0);
	} else if (iv->gen > 0) {
		/* an image without the shim that replaced a traced one */
		jsonw_string(w, "exec");
		jsonw_key(w, "parent_pid");
		jsonw_int(w, iv->pid);
		jsonw_key(w, "parent_gen");
		jsonw_uint(w, iv->gen - 1);
		jsonw_key(w, "guessed");
		jsonw_bool(w, 0);
	} else {
		/* only the poller's ppid is known */
		jsonw_null(w);
		jsonw_key(w, "parent_pid");
		if (iv->ppid > 0)
			jsonw_int(w, iv->ppid);
		else
			jsonw_null(w);
		jsonw_key(w, "parent_gen");
		jsonw_null(w);
		jsonw_key(w, "guessed");
		jsonw_bool(w, 1);
	}
	jsonw_object_end(w);
}

/* "argv", "argv_truncated", "argc": never cut silently.  The record keeps
 * MT_ARGV_BYTES of argv (and the real argc), the poller PROCFS_ARGV_BYTES
 * of /proc/PID/cmdline. */
static void put_command(struct jsonw *w, const struct image_view *iv)
{
	jsonw_key(w, "argv");
	put_argv(w, iv->argv, iv->argv_len);
	int cut = iv->traced ? (iv->rec.flags & MT_FLAG_ARGV_TRUNCATED) != 0
			     : iv->argv_len >= PROCFS_ARGV_BYTES - 1;
	jsonw_key(w, "argv_truncated");
	jsonw_bool(w, cut);
	jsonw_key(w, "argc");
	if (iv->traced) {
		jsonw_uint(w, iv->rec.argc);
	} else if (iv->argv && !cut) {
		size_t argc = 0;
		for (size_t i = 0; i < iv->argv_len; i++)
			argc += iv->argv[i] == '\0'; /* each argument ends in one */
		jsonw_uint(w, argc);
	} else {
		jsonw_null(w);
	}
}

/* The poller's view: when it saw the image, its polled peak, its session,
 * how it ended, its VmHWM. */
static void put_polled(struct jsonw *w, const struct image_view *iv)
{
	const char *src;
	int code;
	jsonw_key(w, "first_seen_s");
	put_s(w, iv->sampled ? iv->first_seen_s : -1);
	jsonw_key(w, "last_seen_s");
	put_s(w, iv->sampled ? iv->last_seen_s : -1);
	jsonw_key(w, "samples");
	jsonw_uint(w, iv->samples_seen);
	jsonw_key(w, "polled_peak_rss");
	if (iv->sampled)
		jsonw_uint(w, iv->polled_peak_rss);
	else
		jsonw_null(w);
	jsonw_key(w, "polled_peak_at_s");
	put_s(w, iv->sampled ? iv->polled_peak_at_s : -1);
	jsonw_key(w, "session");
	if (iv->sid > 0)
		jsonw_int(w, iv->sid);
	else
		jsonw_null(w);
	jsonw_key(w, "escaped");
	jsonw_bool(w, iv->escaped);
	jsonw_key(w, "leftover_killed");
	jsonw_bool(w, iv->leftover_killed);
	jsonw_key(w, "exit_code");
	if (exit_of(iv, &code))
		jsonw_int(w, code);
	else
		jsonw_null(w);
	uint64_t hwm = merge_image_hwm_kb(iv, &src);
	jsonw_key(w, "vm_hwm_kb");
	if (hwm)
		jsonw_uint(w, hwm);
	else
		jsonw_null(w);
	jsonw_key(w, "vm_hwm_from");
	jsonw_string(w, src);
}

/* "record": the figures of a traced image's record, in the one layout of
 * common/recordjson.h (null untraced); its identity is the image's own keys. */
static void put_record(struct jsonw *w, const struct image_view *iv)
{
	static struct mt_record r; /* 8 KiB: not on the stack of every image */
	if (!iv->traced) {
		jsonw_null(w);
		return;
	}
	merge_record_of(iv, &r);
	recordjson_write_figures(w, &r);
}

/* "start_s", "end_s": the image's life in seconds since the launch, from
 * its record (null untraced; end_s null while it runs). */
static void put_life(struct jsonw *w, const struct merged_run *m, const struct image_view *iv)
{
	const struct image_rec *r = &iv->rec;
	jsonw_key(w, "start_s");
	if (iv->traced)
		put_s(w, merge_mono_s(m, r->start_mono_ns));
	else
		jsonw_null(w);
	jsonw_key(w, "end_s");
	if (iv->traced && r->state != MT_STATE_RUNNING)
		put_s(w, merge_mono_s(m, r->end_mono_ns));
	else
		jsonw_null(w);
}

/* "at_peak": the image at the tree's peak sample (null if not alive then). */
static void put_at_peak(struct jsonw *w, const struct image_view *iv)
{
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

static void put_image(struct jsonw *w, const struct merged_run *m, const struct image_view *iv)
{
	jsonw_object_begin(w);
	jsonw_key(w, "pid");
	jsonw_int(w, iv->pid);
	jsonw_key(w, "gen");
	jsonw_uint(w, iv->gen);
	jsonw_key(w, "ppid");
	if (iv->ppid > 0)
		jsonw_int(w, iv->ppid);
	else
		jsonw_null(w);
	jsonw_key(w, "lineage");
	put_lineage(w, iv);
	put_command(w, iv);
	jsonw_key(w, "exe");
	jsonw_string(w, iv->exe);
	jsonw_key(w, "traced");
	jsonw_bool(w, iv->traced);
	jsonw_key(w, "sampled");
	jsonw_bool(w, iv->sampled);
	jsonw_key(w, "record_error");
	jsonw_string(w, iv->record_error ? recordfile_strerror(iv->record_error) : NULL);
	jsonw_key(w, "untraced_why");
	jsonw_string(w, iv->traced ? NULL : merge_untraced_name(iv->untraced_why));
	put_life(w, m, iv);
	put_polled(w, iv);
	jsonw_key(w, "record");
	put_record(w, iv);
	jsonw_key(w, "at_peak");
	put_at_peak(w, iv);
	jsonw_object_end(w);
}

static void put_all(struct jsonw *w, const void *ctx)
{
	const struct merged_run *m = ctx;
	jsonw_array_begin(w);
	for (size_t i = 0; i < m->n_images; i++)
		put_image(w, m, &m->images[i]);
	jsonw_array_end(w);
}

int processes_write(int dirfd, const struct merged_run *m)
{
	/* compact, one image per line: a run of 100,000 images stays one JSON
	 * document that line tools can still grep (1 KB an image instead of
	 * 1.5) */
	return evidence_write_json(dirfd, "processes.json", 0, 1, put_all, m);
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
