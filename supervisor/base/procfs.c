/* procfs.c: parsers for /proc/PID/{status,stat,statm} and children files, and
 * readers that feed them from read(2) into stack buffers.  No allocation, no
 * stdio: the readers run every sample for every process of the tree. */
#include "base/procfs.h"

#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static int is_digit(char c)
{
	return c >= '0' && c <= '9';
}

/* Parse an unsigned decimal at *p (below end), skipping leading blanks.
 * Advances *p past the digits.  -EINVAL when there is no digit or it
 * overflows. */
static int parse_u64(const char **p, const char *end, uint64_t *out)
{
	const char *s = *p;
	while (s < end && (*s == ' ' || *s == '\t'))
		s++;
	if (s >= end || !is_digit(*s))
		return -EINVAL;
	uint64_t v = 0;
	while (s < end && is_digit(*s)) {
		unsigned d = (unsigned)(*s - '0');
		if (v > (UINT64_MAX - d) / 10)
			return -EINVAL;
		v = v * 10 + d;
		s++;
	}
	*p = s;
	*out = v;
	return 0;
}

/* A field ends at whitespace or the end of the text. */
static int at_field_end(const char *p, const char *end)
{
	return p >= end || *p == ' ' || *p == '\t' || *p == '\n';
}

static int parse_pid(const char **p, const char *end, pid_t *out)
{
	uint64_t v;
	int rc = parse_u64(p, end, &v);
	if (rc < 0)
		return rc;
	if (v > INT_MAX || !at_field_end(*p, end))
		return -EINVAL;
	*out = (pid_t)v;
	return 0;
}

int procfs_parse_meminfo(const char *buf, size_t len, uint64_t *ram_swap_kb)
{
	const char *end = buf + len;
	uint64_t total = 0, swap = 0;
	int have_total = 0;
	for (const char *line = buf; line < end;) {
		const char *nl = memchr(line, '\n', (size_t)(end - line));
		const char *p;
		uint64_t v;
		if (!nl)
			break; /* a line cut off by a short read is not trusted */
		if ((size_t)(nl - line) > 9 && memcmp(line, "MemTotal:", 9) == 0) {
			p = line + 9;
			if (parse_u64(&p, nl, &v) == 0) {
				total = v;
				have_total = 1;
			}
		} else if ((size_t)(nl - line) > 10 && memcmp(line, "SwapTotal:", 10) == 0) {
			p = line + 10;
			if (parse_u64(&p, nl, &v) == 0)
				swap = v;
		}
		line = nl + 1;
	}
	if (!have_total || total > UINT64_MAX - swap)
		return -EINVAL;
	*ram_swap_kb = total + swap;
	return 0;
}

int procfs_parse_status(const char *buf, size_t len, struct procfs_status *out)
{
	static const struct {
		const char *key;
		size_t off;
		unsigned bit;
	} kb_keys[] = {
		{ "VmRSS:", offsetof(struct procfs_status, vm_rss_kb), PROCFS_HAVE_RSS },
		{ "VmHWM:", offsetof(struct procfs_status, vm_hwm_kb), PROCFS_HAVE_HWM },
		{ "VmPeak:", offsetof(struct procfs_status, vm_peak_kb), PROCFS_HAVE_PEAK },
		{ "VmSize:", offsetof(struct procfs_status, vm_size_kb), PROCFS_HAVE_SIZE },
		{ "RssAnon:", offsetof(struct procfs_status, rss_anon_kb), 1u << 16 },
		{ "RssFile:", offsetof(struct procfs_status, rss_file_kb), 1u << 17 },
		{ "RssShmem:", offsetof(struct procfs_status, rss_shmem_kb), 1u << 18 },
		{ "VmSwap:", offsetof(struct procfs_status, vm_swap_kb), PROCFS_HAVE_SWAP },
	};
	const char *end = buf + len;
	memset(out, 0, sizeof *out);
	for (const char *line = buf; line < end;) {
		const char *nl = memchr(line, '\n', (size_t)(end - line));
		const char *eol = nl ? nl : end;
		size_t n = (size_t)(eol - line);
		/* A line cut off by a short read (no newline) is not trusted for
		 * numbers: "VmRSS:  12" might have been "VmRSS:  123456 kB". */
		int complete = nl != NULL;
		for (size_t i = 0; i < sizeof kb_keys / sizeof kb_keys[0]; i++) {
			size_t kl = strlen(kb_keys[i].key);
			if (n > kl && memcmp(line, kb_keys[i].key, kl) == 0 && complete) {
				const char *p = line + kl;
				uint64_t v;
				if (parse_u64(&p, eol, &v) == 0) {
					memcpy((char *)out + kb_keys[i].off, &v, sizeof v);
					out->have |= kb_keys[i].bit;
				}
			}
		}
		if (complete && n > 4 && (memcmp(line, "Uid:", 4) == 0 ||
					  memcmp(line, "Gid:", 4) == 0)) {
			/* "Uid:\treal\teffective\tsaved\tfs" */
			const char *p = line + 4;
			uint64_t r, e;
			if (parse_u64(&p, eol, &r) == 0 && parse_u64(&p, eol, &e) == 0) {
				if (line[0] == 'U') {
					out->ruid = r;
					out->euid = e;
					out->have |= 1u << 19;
				} else {
					out->rgid = r;
					out->egid = e;
					out->have |= 1u << 20;
				}
			}
		}
		if (complete && n > 5 && memcmp(line, "Tgid:", 5) == 0) {
			const char *p = line + 5;
			if (parse_pid(&p, eol, &out->tgid) == 0)
				out->have |= PROCFS_HAVE_TGID;
		}
		if (complete && n > 6 && memcmp(line, "NSpid:", 6) == 0) {
			/* "NSpid:\t24911\t1": one pid per namespace level */
			const char *p = line + 6;
			pid_t v;
			out->nspid_levels = 0;
			while (parse_pid(&p, eol, &v) == 0) {
				out->nspid_inner = v;
				out->nspid_levels++;
			}
			if (out->nspid_levels)
				out->have |= PROCFS_HAVE_NSPID;
		}
		if (complete && n > 5 && memcmp(line, "PPid:", 5) == 0) {
			const char *p = line + 5;
			if (parse_pid(&p, eol, &out->ppid) == 0)
				out->have |= PROCFS_HAVE_PPID;
		}
		if (complete && n >= 5 && memcmp(line, "Name:", 5) == 0) {
			const char *p = line + 5;
			while (p < eol && (*p == ' ' || *p == '\t'))
				p++;
			size_t m = (size_t)(eol - p);
			if (m >= sizeof out->name)
				m = sizeof out->name - 1;
			memcpy(out->name, p, m);
			out->name[m] = '\0';
			out->have |= PROCFS_HAVE_NAME;
		}
		line = nl ? nl + 1 : end;
	}
	if ((out->have & (7u << 16)) == (7u << 16))
		out->have |= PROCFS_HAVE_RSS_PARTS;
	else
		out->rss_anon_kb = out->rss_file_kb = out->rss_shmem_kb = 0;
	/* Both lines or neither: half an identity (a Gid line without its
	 * Uid, found by tests/fuzz/fuzz_procfs) must not read as "uid 0". */
	if ((out->have & (3u << 19)) == (3u << 19))
		out->have |= PROCFS_HAVE_IDS;
	else
		out->ruid = out->euid = out->rgid = out->egid = 0;
	out->have &= ~(7u << 16 | 3u << 19);
	/* Every live process has Name and PPid; text without them is not a
	 * status file (or was cut before its second line). */
	if (!(out->have & PROCFS_HAVE_NAME) || !(out->have & PROCFS_HAVE_PPID))
		return -EINVAL;
	return 0;
}

int procfs_parse_stat(const char *buf, size_t len, struct procfs_stat *out)
{
	const char *end = buf + len;
	const char *p = buf;
	memset(out, 0, sizeof *out);
	if (parse_pid(&p, end, &out->pid) < 0)
		return -EINVAL;
	const char *open = memchr(p, '(', (size_t)(end - p));
	if (!open)
		return -EINVAL;
	/* comm is at most 15 bytes but may itself contain ')' and spaces: the
	 * last ')' in the text is the one that closes it. */
	const char *close = NULL;
	for (const char *q = end; q > open + 0;) {
		q--;
		if (*q == ')') {
			close = q;
			break;
		}
	}
	if (!close || close <= open)
		return -EINVAL;
	size_t m = (size_t)(close - open - 1);
	if (m >= sizeof out->comm)
		m = sizeof out->comm - 1;
	memcpy(out->comm, open + 1, m);
	out->comm[m] = '\0';

	p = close + 1;
	/* field 3: state */
	while (p < end && *p == ' ')
		p++;
	if (p >= end || *p == '\n')
		return -EINVAL;
	out->state = *p++;
	if (!at_field_end(p, end))
		return -EINVAL;
	/* field 4: ppid */
	if (parse_pid(&p, end, &out->ppid) < 0)
		return -EINVAL;
	/* fields 5 and 6: process group and session */
	if (parse_pid(&p, end, &out->pgrp) < 0 || parse_pid(&p, end, &out->session) < 0)
		return -EINVAL;
	/* fields 7..21 skipped (some may be negative, e.g. tty_nr, priority),
	 * field 22: starttime */
	for (int field = 7; field < 22; field++) {
		while (p < end && *p == ' ')
			p++;
		if (p >= end || *p == '\n')
			return -EINVAL;
		while (p < end && *p != ' ' && *p != '\n')
			p++;
	}
	uint64_t st;
	if (parse_u64(&p, end, &st) < 0 || !at_field_end(p, end))
		return -EINVAL;
	/* A short read could cut starttime itself; the kernel always prints more
	 * fields after it, so require that the text goes on. */
	if (p >= end)
		return -EINVAL;
	out->starttime = st;
	return 0;
}

int procfs_parse_statm(const char *buf, size_t len, struct procfs_statm *out)
{
	/* size resident shared text lib data dt: the first four, each ended by
	 * a space (the kernel prints all seven at once; a text cut short is a
	 * read gone wrong, not trusted) */
	const char *end = buf + len;
	const char *p = buf;
	uint64_t field[4];
	for (int i = 0; i < 4; i++)
		if (parse_u64(&p, end, &field[i]) < 0 || p >= end || *p != ' ')
			return -EINVAL;
	out->resident_pages = field[1];
	out->text_pages = field[3];
	return 0;
}

int procfs_parse_children(const char *buf, size_t len, pid_t *out, size_t cap,
			  size_t *n)
{
	const char *end = buf + len;
	const char *p = buf;
	size_t count = 0;
	for (;;) {
		while (p < end && (*p == ' ' || *p == '\n'))
			p++;
		if (p >= end)
			break;
		pid_t pid;
		if (parse_pid(&p, end, &pid) < 0 || pid <= 0)
			return -EINVAL;
		if (count < cap)
			out[count] = pid;
		count++;
	}
	*n = count;
	return count > cap ? -ENOSPC : 0;
}

int procfs_parse_rollup(const char *buf, size_t len, struct procfs_rollup *out)
{
	static const struct {
		const char *key;
		size_t off;
		unsigned bit;
		int add;    /* summed into the field rather than stored */
	} keys[] = {
		{ "Rss:", offsetof(struct procfs_rollup, rss_kb), PROCFS_ROLLUP_RSS, 0 },
		{ "Pss:", offsetof(struct procfs_rollup, pss_kb), PROCFS_ROLLUP_PSS, 0 },
		{ "Swap:", offsetof(struct procfs_rollup, swap_kb), PROCFS_ROLLUP_SWAP, 0 },
		{ "Anonymous:", offsetof(struct procfs_rollup, anon_kb), PROCFS_ROLLUP_ANON, 0 },
		{ "Pss_Anon:", offsetof(struct procfs_rollup, pss_anon_kb), 1u << 16, 0 },
		{ "Pss_File:", offsetof(struct procfs_rollup, pss_file_kb), 1u << 17, 0 },
		{ "Pss_Shmem:", offsetof(struct procfs_rollup, pss_shmem_kb), 1u << 18, 0 },
		{ "Shared_Clean:", offsetof(struct procfs_rollup, shared_kb), 0, 1 },
		{ "Shared_Dirty:", offsetof(struct procfs_rollup, shared_kb), 0, 1 },
		{ "Private_Clean:", offsetof(struct procfs_rollup, private_kb), 0, 1 },
		{ "Private_Dirty:", offsetof(struct procfs_rollup, private_kb), 0, 1 },
	};
	const char *end = buf + len;
	memset(out, 0, sizeof *out);
	for (const char *line = buf; line < end;) {
		const char *nl = memchr(line, '\n', (size_t)(end - line));
		if (!nl)
			break; /* cut off by a short read: not trusted */
		size_t n = (size_t)(nl - line);
		for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++) {
			size_t kl = strlen(keys[i].key);
			if (n <= kl || memcmp(line, keys[i].key, kl) != 0)
				continue;
			const char *p = line + kl;
			uint64_t v, *f = (uint64_t *)(void *)((char *)out + keys[i].off);
			if (parse_u64(&p, nl, &v) < 0)
				break;
			*f = keys[i].add ? *f + v : v;
			out->have |= keys[i].bit;
			break;
		}
		line = nl + 1;
	}
	if ((out->have & (7u << 16)) == (7u << 16))
		out->have |= PROCFS_ROLLUP_PSS_PARTS;
	out->have &= ~(7u << 16);
	if (!(out->have & PROCFS_ROLLUP_RSS) || !(out->have & PROCFS_ROLLUP_PSS))
		return -EINVAL;
	return 0;
}

static uint64_t elf_get(const unsigned char *p, unsigned size, int big)
{
	uint64_t v = 0;
	for (unsigned i = 0; i < size; i++)
		v |= (uint64_t)p[big ? size - 1 - i : i] << (8 * i);
	return v;
}

int procfs_parse_elf_interp(const unsigned char *buf, size_t len)
{
	if (len < 52 || memcmp(buf, "\177ELF", 4) != 0)
		return -EINVAL;
	int is64 = buf[4] == 2, big = buf[5] == 2;
	if ((buf[4] != 1 && buf[4] != 2) || (buf[5] != 1 && buf[5] != 2))
		return -EINVAL;
	if (is64 && len < 64)
		return -EINVAL;
	uint64_t phoff = is64 ? elf_get(buf + 32, 8, big) : elf_get(buf + 28, 4, big);
	uint64_t phentsize = elf_get(buf + (is64 ? 54 : 42), 2, big);
	uint64_t phnum = elf_get(buf + (is64 ? 56 : 44), 2, big);
	if (phentsize < (is64 ? 56u : 32u) || phoff > len || phnum > (len - phoff) / phentsize)
		return -EINVAL;
	for (uint64_t i = 0; i < phnum; i++)
		if (elf_get(buf + phoff + i * phentsize, 4, big) == 3) /* PT_INTERP */
			return 1;
	return 0;
}

static int gone_or(int err)
{
	return (err == ENOENT || err == ESRCH) ? PROCFS_GONE : -err;
}

/* Read until EOF or the buffer is full; the caller opened fd. */
/* until_eof 0: a file the kernel makes whole at its first read (statm,
 * stat, status: single_open), whose first short read is its end -- skipping
 * the read that would return 0 halves the syscalls of every sample.
 * until_eof 1: a list (cgroup.procs, children: a seq_file of one record a
 * line), which the kernel hands out about a page a read, so a short read
 * says nothing; read until one returns 0. */
static int read_all(int fd, int from_start, int until_eof, char *buf, size_t cap, size_t *len)
{
	size_t got = 0;
	while (got + 1 < cap) {
		ssize_t r = from_start ? pread(fd, buf + got, cap - 1 - got, (off_t)got)
				       : read(fd, buf + got, cap - 1 - got);
		if (r < 0) {
			if (errno == EINTR)
				continue;
			return gone_or(errno);
		}
		if (r == 0)
			break;
		got += (size_t)r;
		if (!until_eof && (size_t)r < cap - 1 - (got - (size_t)r))
			break;
	}
	buf[got] = '\0';
	*len = got;
	return 0;
}

static int read_path(const char *path, int until_eof, char *buf, size_t cap, size_t *len)
{
	if (cap == 0)
		return -EINVAL;
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return gone_or(errno);
	int rc = read_all(fd, 0, until_eof, buf, cap, len);
	close(fd);
	return rc;
}

int procfs_read_file(const char *path, char *buf, size_t cap, size_t *len)
{
	return read_path(path, 0, buf, cap, len);
}

int procfs_read_list(const char *path, char *buf, size_t cap, size_t *len)
{
	return read_path(path, 1, buf, cap, len);
}

int procfs_pread_fd(int fd, char *buf, size_t cap, size_t *len)
{
	if (cap == 0)
		return -EINVAL;
	return read_all(fd, 1, 0, buf, cap, len);
}

int procfs_pread_list(int fd, char *buf, size_t cap, size_t *len)
{
	if (cap == 0)
		return -EINVAL;
	return read_all(fd, 1, 1, buf, cap, len);
}

static int pid_path(char *path, size_t cap, const char *root, pid_t pid,
		    const char *name)
{
	int n = snprintf(path, cap, "%s/%d/%s", root ? root : "/proc", (int)pid, name);
	return (n < 0 || (size_t)n >= cap) ? -ENAMETOOLONG : 0;
}

int procfs_read_meminfo(const char *root, uint64_t *ram_swap_kb)
{
	char path[PATH_MAX], buf[8192];
	size_t len;
	snprintf(path, sizeof path, "%s/meminfo", root ? root : "/proc");
	int rc = procfs_read_file(path, buf, sizeof buf, &len);
	return rc < 0 ? rc : procfs_parse_meminfo(buf, len, ram_swap_kb);
}

int procfs_read_status(const char *root, pid_t pid, struct procfs_status *out)
{
	char path[PATH_MAX], buf[4096];
	size_t len;
	int rc = pid_path(path, sizeof path, root, pid, "status");
	if (rc == 0)
		rc = procfs_read_file(path, buf, sizeof buf, &len);
	return rc < 0 ? rc : procfs_parse_status(buf, len, out);
}

int procfs_read_stat(const char *root, pid_t pid, struct procfs_stat *out)
{
	char path[PATH_MAX], buf[1024];
	size_t len;
	int rc = pid_path(path, sizeof path, root, pid, "stat");
	if (rc == 0)
		rc = procfs_read_file(path, buf, sizeof buf, &len);
	if (rc == 0 && len == 0)
		return PROCFS_GONE; /* the task exited between open and read */
	return rc < 0 ? rc : procfs_parse_stat(buf, len, out);
}

uint64_t procfs_page_size(void)
{
	static uint64_t page;
	if (!page) {
		long v = sysconf(_SC_PAGESIZE);
		page = v > 0 ? (uint64_t)v : 4096;
	}
	return page;
}

int procfs_pread_statm(int fd, uint64_t *rss_bytes, uint64_t *text_pages)
{
	char buf[256];
	size_t len;
	struct procfs_statm sm;
	int rc = procfs_pread_fd(fd, buf, sizeof buf, &len);
	if (rc == 0 && len == 0)
		rc = PROCFS_GONE; /* a dead process's statm reads empty */
	if (rc == 0)
		rc = procfs_parse_statm(buf, len, &sm);
	if (rc == 0) {
		*rss_bytes = sm.resident_pages * procfs_page_size();
		*text_pages = sm.text_pages;
	}
	return rc;
}

int procfs_open_statm(int proc_fd, pid_t pid)
{
	char name[32];
	snprintf(name, sizeof name, "%d/statm", (int)pid);
	int fd = openat(proc_fd, name, O_RDONLY | O_CLOEXEC);
	return fd >= 0 ? fd : gone_or(errno);
}

int procfs_read_children(const char *root, pid_t pid, pid_t tid, pid_t *out,
			 size_t cap, size_t *n)
{
	char path[PATH_MAX], buf[32768];
	size_t len;
	int w = snprintf(path, sizeof path, "%s/%d/task/%d/children",
			 root ? root : "/proc", (int)pid, (int)tid);
	if (w < 0 || (size_t)w >= sizeof path)
		return -ENAMETOOLONG;
	int rc = procfs_read_list(path, buf, sizeof buf, &len);
	if (rc < 0)
		return rc;
	if (len + 1 >= sizeof buf)
		return -EFBIG; /* more children than the buffer holds: not cut silently */
	return procfs_parse_children(buf, len, out, cap, n);
}

int procfs_read_rollup(const char *root, pid_t pid, struct procfs_rollup *out)
{
	char path[PATH_MAX], buf[4096];
	size_t len;
	int rc = pid_path(path, sizeof path, root, pid, "smaps_rollup");
	if (rc == 0)
		rc = procfs_read_file(path, buf, sizeof buf, &len);
	if (rc == 0 && len == 0)
		return PROCFS_GONE; /* a zombie, or exited between open and read */
	return rc < 0 ? rc : procfs_parse_rollup(buf, len, out);
}

int procfs_environ_has(const char *root, pid_t pid, const char *key, const char *needle)
{
	char path[PATH_MAX], buf[65536];
	size_t len, kl = strlen(key);
	int rc = pid_path(path, sizeof path, root, pid, "environ");
	if (rc == 0)
		rc = procfs_read_file(path, buf, sizeof buf, &len);
	if (rc < 0)
		return rc;
	if (len == 0)
		return -ENODATA;
	for (size_t i = 0; i < len;) {
		const char *e = buf + i;
		size_t n = strnlen(e, len - i);
		if (n > kl && memcmp(e, key, kl) == 0 && e[kl] == '=')
			return memmem(e + kl + 1, n - kl - 1, needle, strlen(needle)) != NULL;
		i += n + 1;
	}
	return 0;
}

int procfs_read_argv(const char *root, pid_t pid, char buf[PROCFS_ARGV_BYTES], size_t *len)
{
	char path[PATH_MAX];
	size_t got = 0;
	int rc = pid_path(path, sizeof path, root, pid, "cmdline");
	if (rc == 0)
		rc = procfs_read_file(path, buf, PROCFS_ARGV_BYTES, &got);
	*len = 0;
	if (rc < 0)
		return rc;
	/* a cut (or rewritten) last argument ends at read_all's terminator */
	*len = got && buf[got - 1] != '\0' ? got + 1 : got;
	return 0;
}

int procfs_read_cmdline(const char *root, pid_t pid, char *buf, size_t cap,
			size_t *len)
{
	char path[PATH_MAX];
	int rc = pid_path(path, sizeof path, root, pid, "cmdline");
	if (rc == 0)
		rc = procfs_read_file(path, buf, cap, len);
	/* cmdline ends with a NUL; drop it so the text is "a\0b" */
	if (rc == 0 && *len > 0 && buf[*len - 1] == '\0')
		(*len)--;
	return rc;
}
