/* stackfold.h: the stacks files of ended images, packed into one file.
 *
 * A stacks file ("<pid>.<gen>.mts", common/stacks.h) keeps fixed offsets
 * so that the shim can update it in place: 512 KiB of module slots sit
 * between the header and the stack table, so even a file with three
 * modules and ten stacks is 544 KiB long (sparse, about 36 KiB on disk).
 * A build that sampled in 1,000 compiler images left 600 MB of them.  As
 * each image ends (live.c folds its record) and, for what is left, once
 * stacks.json is written, memsup packs its stacks file into `stacks.fold`
 * of the evidence directory and removes it: only the published part (the
 * header, the module_count modules, the stack_count stacks, the code_count
 * Python code objects) is kept, with
 * its zero runs encoded.  stacks.json reads them back by image through an
 * index of the file (stackfold_index_*).
 *
 * The file is a sequence of entries, each one write(2) on an O_APPEND
 * descriptor, all little-endian:
 *
 *     u32 magic "MSF2"   u32 n        i32 pid   u32 gen
 *     n bytes: the stacks file's header (header_bytes), then its first
 *              module_count module entries, then its first stack_count
 *              stack entries, then its first code_count code entries (none
 *              in a file without Python frames), zero runs encoded as in records.fold
 *              (fold.h); the header's own sizes and counts say where
 *              each part ends
 *     u32 CRC-32 (IEEE) of pid, gen and the n bytes
 *
 * A stacks file is removed only after its entry is written whole; one
 * that cannot be read as a stacks file of this layout stays as it is.
 * memsup.py's read_stacks(dir) reads both places.
 *
 * Return convention: 0 or -errno; -EBADMSG for an entry that is not whole
 * or does not decode to its header's sizes.
 */
#ifndef MEMSUP_STACKFOLD_H
#define MEMSUP_STACKFOLD_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define STACKFOLD_MAGIC UINT32_C(0x3246534d) /* "MSF2"; "MSF1" still read (fold.h) */

/* The published part of a stacks file, as packed (decoded). */
struct stackfold_image {
	int32_t pid;
	uint32_t gen;
	unsigned char *bytes; /* header, modules, stacks; malloc'd */
	size_t len;
};

/* Packs the stacks file of image (pid, gen), if it has one, from the
 * records directory (open at records_dirfd) into the stacks fold open at
 * fold_fd (O_APPEND), and removes it: live.c does it for each image it
 * folds, so that the stacks files of ended images do not stay (in a tmpfs
 * staging directory, in memory: staging.h).  1 when packed, 0 when there
 * was none or it is not of this layout (it stays), or -errno. */
int stackfold_pack_image(int records_dirfd, int fold_fd, int32_t pid, uint32_t gen);

/* Packs every stacks file of the records directory (open at records_dirfd)
 * into evdirfd's stacks.fold, removing each one once its entry is written.
 * *packed and *left (may be NULL) count the files packed and those left in
 * place (not a stacks file of this layout, or unreadable).  0, or the
 * first -errno that stopped it (the files not packed yet stay). */
int stackfold_pack(int records_dirfd, int evdirfd, size_t *packed, size_t *left);

/* The entry at `off` of an open stacks.fold, decoded into *out (out->bytes
 * the caller's to free), and the offset of the next entry into *next.  1
 * when an entry was read, 0 at the end of the file, -EBADMSG when the entry
 * there is torn or damaged, or -errno. */
int stackfold_read_at(int fd, off_t off, struct stackfold_image *out, off_t *next);

/* Reading a run's packed stacks back by image: an index of stacks.fold
 * (each image's newest entry; the file's frames only, so it is cheap) and
 * a read of one image's entry as a stacks file (stackfile.h). */
struct stackfold_slot;
struct stackfold_index {
	int fd;                    /* stacks.fold, or -1: none */
	struct stackfold_slot *e;  /* sorted by pid, gen */
	size_t n;
	unsigned char *scratch;    /* MT_STACKS_SIZE bytes when n > 0: each
				      read decodes here */
};
struct stackfile;

/* The index of evdirfd's stacks.fold (an empty one when there is none).
 * A torn or damaged entry ends it (what follows is not trusted).  0 or
 * -errno. */
int stackfold_index_open(struct stackfold_index *ix, int evdirfd);
/* Image (pid, gen)'s packed stacks as a stacks file: 0, -ENOENT when the
 * fold has none, -EBADMSG when its entry is damaged, or -errno.  Reads
 * decode into the index's one buffer: one at a time. */
int stackfold_index_read(const struct stackfold_index *ix, int32_t pid, uint32_t gen,
			 struct stackfile *out);
void stackfold_index_close(struct stackfold_index *ix);

#endif /* MEMSUP_STACKFOLD_H */
