/* marks.c: the marks file (see marks.h). */
#include "collect/marks.h"
#include "evidence/files.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <unistd.h>

struct marks_file {
	int fd;                    /* DIR/marks, read-only */
	int ino_fd;                /* inotify on it, or -1 */
	off_t read_off;
	char line[MARKS_LINE_BYTES];
	size_t line_len;
	int line_cut;
	char env[PATH_MAX + 16];
};

int marks_open(struct marks_file **out, int dirfd, const char *dirpath)
{
	struct marks_file *mf = calloc(1, sizeof *mf);
	if (!mf)
		return -ENOMEM;
	mf->ino_fd = -1;
	if ((size_t)snprintf(mf->env, sizeof mf->env, "MEMSUP_MARK=%s/" EVIDENCE_MARKS, dirpath) >=
	    sizeof mf->env) {
		free(mf);
		return -ENAMETOOLONG;
	}
	/* 0666 (less the umask): any process of the tree, whatever it did to
	 * its credentials within the same user, can append. */
	int wfd = openat(dirfd, EVIDENCE_MARKS, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
	if (wfd < 0) {
		int err = errno;
		free(mf);
		return -err;
	}
	close(wfd);
	mf->fd = openat(dirfd, EVIDENCE_MARKS, O_RDONLY | O_CLOEXEC);
	if (mf->fd < 0) {
		int err = errno;
		free(mf);
		return -err;
	}
	/* IN_MODIFY wakes memsup at the write; IN_ATTRIB|IN_DELETE_SELF would
	 * not help (writers that follow the rules never replace the file). */
	mf->ino_fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
	if (mf->ino_fd >= 0 &&
	    inotify_add_watch(mf->ino_fd, mf->env + strlen("MEMSUP_MARK="), IN_MODIFY) < 0) {
		close(mf->ino_fd);
		mf->ino_fd = -1;
	}
	*out = mf;
	return 0;
}

void marks_close(struct marks_file *mf)
{
	if (!mf)
		return;
	close(mf->fd);
	if (mf->ino_fd >= 0)
		close(mf->ino_fd);
	free(mf);
}

const char *marks_env_entry(const struct marks_file *mf)
{
	return mf->env;
}

int marks_fd(const struct marks_file *mf)
{
	return mf ? mf->ino_fd : -1;
}

/* "key=N" with N plain decimal. */
static int field_int(const char *f, size_t len, const char *key, int64_t *out)
{
	size_t kl = strlen(key);
	if (len <= kl + 1 || memcmp(f, key, kl) != 0 || f[kl] != '=')
		return 0;
	int64_t v = 0;
	for (size_t i = kl + 1; i < len; i++) {
		if (f[i] < '0' || f[i] > '9' || v > (INT64_MAX - 9) / 10)
			return 0;
		v = v * 10 + (f[i] - '0');
	}
	*out = v;
	return 1;
}

void marks_parse(const char *s, size_t len, struct marks_line *out)
{
	if (len && s[len - 1] == '\r')
		len--;
	const char *tab = memchr(s, '\t', len);
	memset(out, 0, sizeof *out);
	out->label = s;
	out->label_len = tab ? (size_t)(tab - s) : len;
	out->maxrss_kb = out->maxrss_children_kb = out->mono_ns = -1;
	for (const char *f = tab; f && f < s + len;) {
		f++;
		const char *next = memchr(f, '\t', (size_t)(s + len - f));
		size_t fl = next ? (size_t)(next - f) : (size_t)(s + len - f);
		int64_t v;
		if (field_int(f, fl, "pid", &v) && v > 0 && v <= INT32_MAX)
			out->pid = (int32_t)v;
		else if (field_int(f, fl, "maxrss_kb", &v))
			out->maxrss_kb = v;
		else if (field_int(f, fl, "maxrss_children_kb", &v))
			out->maxrss_children_kb = v;
		else if (field_int(f, fl, "mono_ns", &v))
			out->mono_ns = v;
		f = next;
	}
}

static void take(struct marks_file *mf, marks_take_fn fn, void *ctx)
{
	struct marks_line l;
	marks_parse(mf->line, mf->line_len, &l);
	/* a line cut with no TAB in what was kept lost the end of its label */
	l.label_cut = mf->line_cut && !memchr(mf->line, '\t', mf->line_len);
	fn(ctx, &l);
	mf->line_len = 0;
	mf->line_cut = 0;
}

void marks_read(struct marks_file *mf, int final, marks_take_fn fn, void *ctx)
{
	char buf[4096];
	size_t budget = MARKS_READ_BUDGET;
	if (!mf)
		return;
	if (mf->ino_fd >= 0) {
		/* drain the events; the file itself says what is new */
		char ev[1024];
		while (read(mf->ino_fd, ev, sizeof ev) > 0)
			;
	}
	while (budget || final) {
		ssize_t got = pread(mf->fd, buf, sizeof buf, mf->read_off);
		if (got <= 0)
			break;
		mf->read_off += got;
		budget = (size_t)got < budget ? budget - (size_t)got : 0;
		for (ssize_t i = 0; i < got; i++) {
			if (buf[i] == '\n')
				take(mf, fn, ctx);
			else if (mf->line_len < sizeof mf->line)
				mf->line[mf->line_len++] = buf[i];
			else
				mf->line_cut = 1;
		}
	}
	if (final && mf->line_len)
		take(mf, fn, ctx);
}
