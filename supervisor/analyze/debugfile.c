/* debugfile.c: finding a module's separate debug file (see debugfile.h). */
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "analyze/debugfile.h"

static ssize_t debugfile_pread(void *ctx, void *buf, size_t n, uint64_t off)
{
	ssize_t r;
	do
		r = pread(*(int *)ctx, buf, n, (off_t)off);
	while (r < 0 && errno == EINTR);
	return r < 0 ? -errno : r;
}

static int debugfile_section_has_bytes(const struct elfsym *e, const char *name)
{
	struct elfsym_section s;
	return elfsym_section(e, name, &s) == 0 && s.type != SHT_NOBITS && s.size > 0;
}

int debugfile_has_dwarf(const struct elfsym *e)
{
	return debugfile_section_has_bytes(e, ".debug_info") &&
	       debugfile_section_has_bytes(e, ".debug_line");
}

int debugfile_crc32(int fd, uint32_t *crc)
{
	static uint32_t table[256];
	static int have_table;
	unsigned char buf[65536];
	uint32_t c = 0xFFFFFFFFu;
	uint64_t off = 0;
	if (!have_table) {
		for (uint32_t i = 0; i < 256; i++) {
			uint32_t v = i;
			for (int k = 0; k < 8; k++)
				v = v & 1 ? 0xEDB88320u ^ (v >> 1) : v >> 1;
			table[i] = v;
		}
		have_table = 1;
	}
	for (;;) {
		ssize_t n = debugfile_pread(&fd, buf, sizeof buf, off);
		if (n < 0)
			return (int)n;
		if (n == 0)
			break;
		for (ssize_t i = 0; i < n; i++)
			c = table[(c ^ buf[i]) & 0xFF] ^ (c >> 8);
		off += (uint64_t)n;
	}
	*crc = c ^ 0xFFFFFFFFu;
	return 0;
}

/* The build-id of a debug file: its note sections, else its notes by
 * program header (a file that is both the code and the debug info). */
static int debugfile_build_id(const struct elfsym *e, uint8_t *id, size_t cap)
{
	int n = elfsym_build_id_sections(e, id, cap);
	return n > 0 ? n : elfsym_build_id(e, 0, id, cap);
}

/* Is the candidate at `path` the module's debug file?  1 yes, 0 no such
 * file or no DWARF in it, -1 a file of another build.  crc_want is
 * checked only when build-ids cannot be compared (have_crc). */
static int debugfile_try(const char *path, const struct stat *module, const uint8_t *id,
			 size_t idlen, int have_crc, uint32_t crc_want)
{
	struct elfsym c;
	struct stat st;
	uint8_t cid[64];
	int fd = open(path, O_RDONLY | O_CLOEXEC), ok = 0, n;
	if (fd < 0)
		return 0;
	if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) ||
	    (st.st_dev == module->st_dev && st.st_ino == module->st_ino))
		goto out; /* a debuglink naming the file itself is no help */
	if (elfsym_open(&c, debugfile_pread, &fd) != 0 || !debugfile_has_dwarf(&c))
		goto out;
	n = debugfile_build_id(&c, cid, sizeof cid);
	if (idlen && n > 0) {
		ok = (size_t)n == idlen && memcmp(cid, id, idlen) == 0 ? 1 : -1;
	} else if (have_crc) {
		uint32_t crc;
		ok = debugfile_crc32(fd, &crc) == 0 && crc == crc_want ? 1 : -1;
	} else {
		ok = 1; /* named by the build-id, which it does not contradict */
	}
out:
	close(fd);
	return ok;
}

static int debugfile_take(struct debugfile *out, enum debugfile_how how, const char *path)
{
	out->how = how;
	snprintf(out->path, sizeof out->path, "%s", path);
	return 0;
}

int debugfile_find(const char *path, const struct elfsym *e, const uint8_t *id, size_t idlen,
		   const char *root, struct debugfile *out)
{
	char cand[PATH_MAX], dir[PATH_MAX], link[256];
	struct elfsym_section s;
	struct stat module;
	const char *slash;
	uint32_t crc = 0;
	int have_crc = 0, r;

	memset(out, 0, sizeof *out);
	if (!root)
		root = DEBUGFILE_ROOT;
	if (stat(path, &module) != 0)
		return -errno;
	if (debugfile_has_dwarf(e))
		return debugfile_take(out, DEBUGFILE_IN_FILE, path);

	if (idlen >= 2) {
		char hex[2 * 64 + 1];
		size_t n = idlen < 64 ? idlen : 64;
		for (size_t k = 0; k < n; k++)
			snprintf(hex + 2 * k, 3, "%02x", id[k]);
		if (snprintf(cand, sizeof cand, "%s/.build-id/%.2s/%s.debug", root, hex, hex + 2) <
		    (int)sizeof cand) {
			r = debugfile_try(cand, &module, id, idlen, 0, 0);
			if (r > 0)
				return debugfile_take(out, DEBUGFILE_BUILD_ID, cand);
			if (r < 0)
				debugfile_take(out, DEBUGFILE_MISMATCH, cand);
		}
	}

	/* .gnu_debuglink: a NUL-terminated name, padding to 4, a CRC-32 */
	if (elfsym_section(e, ".gnu_debuglink", &s) != 0 || s.type == SHT_NOBITS || s.size < 8 ||
	    s.size > sizeof link)
		return 0;
	if (e->read(e->ctx, link, (size_t)s.size, s.offset) != (ssize_t)s.size)
		return 0;
	size_t len = strnlen(link, (size_t)s.size);
	if (len == 0 || len == s.size || strchr(link, '/'))
		return 0;
	size_t at = (len + 4) & ~(size_t)3;
	if (at + 4 <= s.size) {
		memcpy(&crc, link + at, 4); /* the file's byte order: little-endian, as elfsym */
		have_crc = 1;
	}
	slash = strrchr(path, '/');
	if (!slash)
		snprintf(dir, sizeof dir, ".");
	else
		snprintf(dir, sizeof dir, "%.*s", (int)(slash - path), path);
	for (int k = 0; k < 3; k++) {
		int w = k == 0   ? snprintf(cand, sizeof cand, "%s/%s", dir, link)
			: k == 1 ? snprintf(cand, sizeof cand, "%s/.debug/%s", dir, link)
				 : snprintf(cand, sizeof cand, "%s%s%s/%s", root,
					    dir[0] == '/' ? "" : "/", dir, link);
		if (w >= (int)sizeof cand)
			continue;
		r = debugfile_try(cand, &module, id, idlen, have_crc, crc);
		if (r > 0)
			return debugfile_take(out, DEBUGFILE_DEBUGLINK, cand);
		if (r < 0 && out->how == DEBUGFILE_NONE)
			debugfile_take(out, DEBUGFILE_MISMATCH, cand);
	}
	return 0;
}

const char *debugfile_how_name(enum debugfile_how how)
{
	static const char *const names[] = { "none", "in_file", "build_id", "debuglink",
					     "mismatch" };
	return (unsigned)how < sizeof names / sizeof names[0] ? names[how] : "?";
}
