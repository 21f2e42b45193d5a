/* fold.h: the records of images that have ended, folded into one file.
 *
 * A run of 100,000 short processes left 100,000 record files of 8 KiB each
 * (800 MB), all mapped (vm.max_map_count stops at about 65,000 mappings)
 * and all read at every sample.  Once an image can no longer change its
 * record (its process is gone, or its exec replaced it), live.c appends
 * the record here, unmaps it, and truncates its file to nothing: the name
 * stays, so the shim's first-free-generation rule and the lineage look-ups
 * see what they always saw, but the records directory holds only the
 * images still running.  Nothing is lost if memsup dies at any point: a
 * record is appended (one write) before its file is truncated, and a
 * reader takes the newest copy of a (pid, gen, start) it finds twice.
 *
 * The file, `records.fold` in the evidence directory, is a sequence of
 * entries, each written with one write(2) on an O_APPEND descriptor:
 *
 *     u32 magic "MTF2"   u32 n        i32 pid   u32 gen
 *     n bytes: struct mt_record (record.h; the file's padding to 8192
 *              bytes is zeros and is not kept), zero runs encoded
 *     u32 CRC-32 (IEEE) of pid, gen and the n bytes
 *
 * all little-endian.  The encoding is a stream of control bytes: c < 0x80
 * is followed by c+1 literal bytes; 0x80 <= c < 0xff stands for c-0x7f
 * zero bytes; 0xff is followed by a u16 count of zero bytes.  An ended
 * record takes 110 to 600 bytes (a `true`: 116).  Version 1 ("MTF1",
 * written by earlier builds) had no long runs (0xff: 128 zeros) and is
 * still read: the magic's last byte is the version.  A torn last
 * entry (memsup killed while writing) fails its length or CRC and ends the
 * reading there; nothing before it is affected.
 *
 * This module owns the format in both directions (fold_encode and
 * fold_decode are pure; tests/unit/test_fold.c writes then reads).
 * Return convention: 0 or -errno; -EBADMSG for an entry that is not whole.
 */
#ifndef MEMSUP_FOLD_H
#define MEMSUP_FOLD_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "evidence/files.h"
#include "record.h"

#define FOLD_MAGIC UINT32_C(0x3246544d) /* "MTF2" */
#define FOLD_VERSION 2u
/* a magic without its version byte: the file kind */
#define FOLD_MAGIC_FAMILY(m) ((uint32_t)(m) & UINT32_C(0x00ffffff))
#define FOLD_SHORT_RUN_MAX 127u    /* zeros in one control byte */
#define FOLD_LONG_RUN 0xffu        /* then a u16 count of zeros */
#define FOLD_LONG_RUN_MAX 65535u
#define FOLD_HEADER_BYTES 16u
#define FOLD_RECORD_BYTES (sizeof(struct mt_record))
/* the largest encoding of n bytes (every byte literal), and of a record */
#define FOLD_ENCODED_MAX(n) ((n) + (n) / 128u + 1u)
#define FOLD_MAX_PAYLOAD FOLD_ENCODED_MAX(FOLD_RECORD_BYTES)
#define FOLD_MAX_ENTRY (FOLD_HEADER_BYTES + FOLD_MAX_PAYLOAD + 4u)

/* The zero-run encoding (above) of any n bytes into out, which holds
 * FOLD_ENCODED_MAX(n) bytes; returns the encoding's length.  Shared with
 * the stacks fold (stackfold.h). */
size_t fold_encode_bytes(const void *in, size_t n, unsigned char *out);
/* Back into dst (cap bytes); 0 with the decoded length in *len, or
 * -EBADMSG when the encoding is broken or decodes to more than cap. */
int fold_decode_bytes(const unsigned char *in, size_t n, void *dst, size_t cap, size_t *len);
/* An entry of this format for any payload (the stacks fold's too, with
 * its own magic): n bytes at src, encoded, framed and CRC'd into buf
 * (FOLD_HEADER_BYTES + FOLD_ENCODED_MAX(n) + 4 bytes).  Returns its
 * length. */
size_t fold_entry_bytes(uint32_t magic, int32_t pid, uint32_t gen, const void *src, size_t n,
			unsigned char *buf);
/* The entry at `off` of an open file of entries with `magic` (or its
 * version 1, the same but for the last byte): its payload
 * decoded into dst (at most cap bytes, *len of them), its pid and gen, and
 * the next entry's offset.  1 when an entry was read, 0 at the end of the
 * file, -EBADMSG when the entry there is torn, damaged or decodes to more
 * than cap, or -errno. */
int fold_read_entry(int fd, off_t off, uint32_t magic, size_t cap, void *dst, size_t *len,
		    int32_t *pid, uint32_t *gen, off_t *next);
/* The frame of the entry at `off` alone (nothing decoded, nothing
 * checked but the magic): its pid, gen and the next entry's offset, for an
 * index of the file.  1, 0 at the end of the file, -EBADMSG, or -errno. */
int fold_peek_entry(int fd, off_t off, uint32_t magic, int32_t *pid, uint32_t *gen, off_t *next);

/* The zero-run encoding of the FOLD_RECORD_BYTES at `rec` into out
 * (FOLD_MAX_PAYLOAD bytes); returns its length. */
size_t fold_encode(const struct mt_record *rec, unsigned char *out);
/* Back into *out; 0, or -EBADMSG when `in` does not decode to exactly
 * FOLD_RECORD_BYTES bytes. */
int fold_decode(const unsigned char *in, size_t n, struct mt_record *out);

/* One whole entry for record r into buf (FOLD_MAX_ENTRY bytes); returns
 * its length. */
size_t fold_entry(const struct mt_record *r, unsigned char *buf);
/* The entry at `off` of an open fold file: the record into *out (not
 * validated: filecheck_record is the caller's) and the offset of the
 * next entry into *next.  1 when an entry was read, 0 at the end of the
 * file, -EBADMSG when the entry there is torn or damaged, or -errno. */
int fold_read_at(int fd, off_t off, struct mt_record *out, off_t *next);

/* The record of image (pid, gen) of an evidence directory (open at
 * evdirfd), wherever it is: records/<pid>.<gen>.mtr while it is whole,
 * else its newest entry in records.fold (a run whose records were staged
 * on a tmpfs, staging.h, leaves no name in records/ for a folded image).
 * 0, or a recordfile.h error (-ENOENT when neither has it).  For readers of finished evidence: tests,
 * tools. */
int fold_read_record(int evdirfd, int32_t pid, uint32_t gen, struct mt_record *out);

/* Every image with a record in an evidence directory (open at evdirfd):
 * records.fold's and records/'s, each (pid, gen) once, sorted, in a
 * malloc'd array the caller frees (NULL when empty).  0 or -errno.  For
 * readers of finished evidence. */
struct recordfile_entry;
int fold_list_images(int evdirfd, struct recordfile_entry **out, size_t *count);

#endif /* MEMSUP_FOLD_H */
