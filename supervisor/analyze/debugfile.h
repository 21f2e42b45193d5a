/* debugfile.h: where a module's DWARF is, looked for where debuggers look
 * (gdb's "Separate Debug Files"), for symbols.c to hand to addr2line:
 *
 *   1. the file itself, when it has .debug_info and .debug_line with bytes;
 *   2. ROOT/.build-id/xx/yyyy.debug, named by the module's build-id (the
 *      -dbg / -dbgsym packages' layout);
 *   3. its .gnu_debuglink name next to the file, in .debug/ beside it, and
 *      under ROOT/<the file's directory>.
 *
 * ROOT is /usr/lib/debug (DEBUGFILE_ROOT) unless the caller names another.
 * A candidate is believed only when it is the module's: its build-id equals
 * the module's when both have one, else the CRC-32 its .gnu_debuglink
 * records matches the candidate's bytes.  A candidate that exists but is
 * another build's is not used and is said (DEBUGFILE_MISMATCH), so that the
 * record can tell "no debug file" from "a stale one".
 *
 * Reads files only; no allocation beyond the stack.  Return convention:
 * 0, or -errno for a failure to read the module itself.
 */
#ifndef MEMSUP_DEBUGFILE_H
#define MEMSUP_DEBUGFILE_H

#include <limits.h>
#include <stddef.h>
#include <stdint.h>

#include "elfsym.h"

#define DEBUGFILE_ROOT "/usr/lib/debug"

enum debugfile_how {
	DEBUGFILE_NONE = 0, /* no DWARF found anywhere */
	DEBUGFILE_IN_FILE,  /* the module's own sections */
	DEBUGFILE_BUILD_ID, /* ROOT/.build-id/xx/yyyy.debug */
	DEBUGFILE_DEBUGLINK,/* its .gnu_debuglink */
	DEBUGFILE_MISMATCH, /* only a candidate of another build */
};

struct debugfile {
	enum debugfile_how how;
	char path[PATH_MAX];  /* the file to read DWARF from (how 1-3), or the
				 mismatched candidate (4) */
};

/* Whether the ELF e has DWARF line tables: .debug_info and .debug_line,
 * both with bytes in the file (compressed or not). */
int debugfile_has_dwarf(const struct elfsym *e);

/* Finds the DWARF of the module at `path`, opened as e (its reader reads
 * the file), whose build-id is id[0..idlen) (idlen 0: none known); root
 * NULL for DEBUGFILE_ROOT. */
int debugfile_find(const char *path, const struct elfsym *e, const uint8_t *id, size_t idlen,
		   const char *root, struct debugfile *out);

/* The CRC-32 .gnu_debuglink uses (zlib's: reflected 0xEDB88320), of the
 * file open at fd from its start; -errno on a read error. */
int debugfile_crc32(int fd, uint32_t *crc);

/* The words of enum debugfile_how, for stacks.json. */
const char *debugfile_how_name(enum debugfile_how how);

#endif /* MEMSUP_DEBUGFILE_H */
