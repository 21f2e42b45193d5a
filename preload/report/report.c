/* report.c: what the shim says when an image ends, and where (see
 * report.h); render.c makes the words, outfile.c opens and guards the
 * MEMTRACE_OUT file they go to. */
#include <errno.h>
#include <limits.h>

#include "base/config.h"
#include "base/errfd.h"
#include "base/sys.h"
#include "textbuf.h"
#include "report/outfile.h"
#include "report/render.h"
#include "report/report.h"
#include "report/summary.h"
#include "report/topsites.h"

int report_expand_path(const char *pattern, int pid, char *out, size_t cap)
{
	struct textbuf s;
	textbuf_init(&s, out, cap);
	for (const char *p = pattern; *p; p++) {
		if (p[0] == '%' && p[1] == 'p') {
			textbuf_add_u64(&s, (uint64_t)(uint32_t)pid);
			p++;
		} else if (p[0] == '%' && p[1] == '%') {
			textbuf_add(&s, "%");
			p++;
		} else {
			textbuf_add_n(&s, p, 1);
		}
	}
	return s.truncated ? -ENAMETOOLONG : 0;
}

static int report_speaks_alone(const struct mt_record *r);

void report_end(const struct mt_record *r)
{
	if (config.out[0] && config.out_per_image) {
		char path[PATH_MAX];
		int fd, rc;
		if (report_expand_path(config.out, r->pid, path, sizeof path) != 0) {
			outfile_failed(config.out, "the name with %p replaced", ENAMETOOLONG);
		} else if ((fd = outfile_open(path)) >= 0) {
			struct outfile_guard g;
			outfile_guard_begin(&g);
			rc = render_json(r, fd);
			outfile_guard_end(&g, rc);
			sys_close(fd);
			if (rc < 0)
				outfile_failed(path, "write", -rc);
		}
	}
	if (report_speaks_alone(r)) {
		char buf[1024];
		size_t n = render_summary(r, buf, sizeof buf);
		errfd_write(buf, n);
		topsites_write(r);
	}
	if (summary_is_root(r))
		summary_end(r);
}

/* Its own block: MEMTRACE_SUMMARY=each, or no tree could be made; never in
 * a user's own MEMTRACE_DIR nor with MEMTRACE_OUT (the records or the JSON
 * are the user's output). */
static int report_speaks_alone(const struct mt_record *r)
{
	(void)r;
	return !config.quiet && !config.out[0] &&
	       (!config.dir[0] || (config.tree_pid && config.summary_each));
}

int report_will_speak(const struct mt_record *r)
{
	return report_speaks_alone(r) ||
	       (!config.quiet && !config.summary_each && !config.out[0] && summary_is_root(r));
}
