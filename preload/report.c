/* report.c: what the shim says when an image ends, and where (see
 * report.h); render.c makes the words. */
#include <errno.h>
#include <fcntl.h>
#include <string.h>

#include "config.h"
#include "errfd.h"
#include "render.h"
#include "report.h"
#include "summary.h"
#include "sys.h"
#include "topsites.h"

int report_expand_path(const char *pattern, int pid, char *out, size_t cap)
{
	struct sys_str s;
	sys_str_init(&s, out, cap);
	for (const char *p = pattern; *p; p++) {
		if (p[0] == '%' && p[1] == 'p') {
			sys_str_add_u64(&s, (uint64_t)(uint32_t)pid);
			p++;
		} else if (p[0] == '%' && p[1] == '%') {
			sys_str_add(&s, "%");
			p++;
		} else {
			sys_str_add_n(&s, p, 1);
		}
	}
	return s.truncated ? -ENAMETOOLONG : 0;
}

static int report_speaks_alone(const struct mt_record *r);

void report_end(const struct mt_record *r)
{
	if (config.out[0] && config.out_per_image) {
		char path[PATH_MAX];
		int fd;
		if (report_expand_path(config.out, r->pid, path, sizeof path) == 0 &&
		    (fd = sys_open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW,
				   0644)) >= 0) {
			render_json(r, fd);
			sys_close(fd);
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
