/* render.c: an image's record as people and programs read it (see
 * render.h). */
#include <string.h>

#include "base/sys.h"
#include "textbuf.h"
#include "jsonw.h"
#include "names.h"
#include "recordjson.h"
#include "report/render.h"
#include "units.h"

/* Bytes as "12345 B" below 10 KiB, else with one decimal (truncated) in the
 * largest of KiB/MiB/GiB/TiB that keeps the whole part at or above 1. */
void render_bytes(struct textbuf *s, uint64_t v)
{
	char buf[UNITS_BYTES_MAX];
	units_format_bytes(buf, sizeof buf, v);
	textbuf_add(s, buf);
}

size_t render_summary(const struct mt_record *r, char *buf, size_t cap)
{
	struct textbuf s;
	textbuf_init(&s, buf, cap);
	textbuf_add(&s, "memtrace: pid ");
	textbuf_add_u64(&s, (uint64_t)(uint32_t)r->pid);
	textbuf_add(&s, " ");
	textbuf_add(&s, r->argv_bytes ? r->argv : r->exe);
	textbuf_add(&s, "\nmemtrace:   heap peak ");
	render_bytes(&s, r->heap_peak);
	textbuf_add(&s, ", at exit ");
	render_bytes(&s, r->heap_current);
	/* The heap is counted in usable bytes (what malloc handed out, its
	 * rounding included: the size of a block at free() is only known
	 * that way), the requests in the bytes asked for; small blocks make
	 * the first the larger, even above the total of every request. */
	textbuf_add(&s, " (usable sizes, malloc's rounding included); requested ");
	render_bytes(&s, r->heap_requested_total);
	textbuf_add(&s, " in all (sizes asked for), largest ");
	render_bytes(&s, r->heap_largest_request);
	textbuf_add(&s, "\nmemtrace:   mmap peak anon ");
	render_bytes(&s, r->map_anon_peak);
	textbuf_add(&s, ", file ");
	render_bytes(&s, r->map_file_peak);
	textbuf_add(&s, "; heap+mmap peak ");
	render_bytes(&s, r->total_peak);
	textbuf_add(&s, "; VmHWM ");
	render_bytes(&s, r->vm_hwm_kb * 1024); /* the kernel's kB are KiB */
	textbuf_add(&s, "\nmemtrace:   calls");
	for (unsigned i = 0; i < MT_CALL_COUNT; i++) {
		if (!r->calls[i])
			continue;
		textbuf_add(&s, " ");
		textbuf_add(&s, names_call(i));
		textbuf_add(&s, "=");
		textbuf_add_u64(&s, r->calls[i]);
	}
	textbuf_add(&s, "\n");
	if (s.truncated && cap > 1)
		buf[cap - 2] = '\n';
	return s.len;
}

int render_json(const struct mt_record *r, int fd)
{
	struct jsonw w;
	jsonw_init(&w, fd, 0);
	recordjson_write(&w, r);
	return jsonw_finish_line(&w);
}
