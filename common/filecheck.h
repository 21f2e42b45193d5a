/* filecheck.h: the one check of each binary file the two halves share,
 * for every reader of them: the shim (reading its tree's records for the
 * stderr table, a parent's record for its lineage, a tree's stacks files)
 * and memsup (records, record mappings, records.fold, stacks files).
 *
 * What a check decides is the whole answer to "may this be read as a
 * record (a stacks table)?", and it makes what it lets through safe to
 * use: strings terminated, lengths and counts clamped to what the layout
 * and the bytes at hand hold, whatever the file said.  Whether a valid
 * record's figures can be true of one run is a further question that only
 * memsup asks (recordfile_plausible).  scripts/memsup.py makes the same
 * checks, by the same rules, on the offsets generated from these headers.
 *
 * Pure and async-signal-safe: no allocation, no system call, no errno.
 * Return convention: 0, or -FILECHECK_E*.
 */
#ifndef MEMTRACE_FILECHECK_H
#define MEMTRACE_FILECHECK_H

#include <stddef.h>
#include <stdint.h>

#include "record.h"
#include "stacks.h"

/* Why a file is not (yet) one of ours.  Far above errno values, so a
 * reader can return either. */
enum filecheck_error {
	FILECHECK_ESHORT = 4096, /* fewer bytes than the layout: cut, or being made */
	FILECHECK_ELONG,         /* more bytes than a record */
	FILECHECK_EMAGIC,        /* magic not set (being made) or foreign */
	FILECHECK_EVERSION,      /* another version of the layout */
	FILECHECK_ELAYOUT,       /* sizes or slots are not this build's */
	FILECHECK_ECORRUPT,      /* fields out of their range (pid, state, ...) */
	FILECHECK_EIDENTITY,     /* pid.gen inside is not that of its name */
	FILECHECK_ENAME,         /* not an image file's name (imagename.h) */
};

/* A record file holds exactly MT_RECORD_SIZE bytes: ESHORT below (cut, or
 * still being made), ELONG above. */
int filecheck_record_bytes(uint64_t file_bytes);
/* The fixed head of a record, readable alone (the shim reads a parent's
 * head and one field, not 8 KiB): magic, version, record_size. */
int filecheck_record_head(uint64_t magic, uint32_t version, uint32_t record_size);
/* A whole record copied out of its file or mapping: the head, then pid,
 * state, relation and parent in range; then in place: exe, argv and marker
 * labels NUL-terminated, argv_bytes clamped to MT_ARGV_BYTES. */
int filecheck_record(struct mt_record *r);
/* filecheck_record(), then EIDENTITY unless the record is of image
 * pid.gen (that of the file's name, or of the fold entry it came in). */
int filecheck_record_of(struct mt_record *r, int32_t pid, uint32_t gen);

/* A stacks file's header read from a file of file_bytes bytes (or the
 * bytes read of it, when fewer): magic, version, all six layout values and
 * max_frames; pid.gen when pid > 0 (that of the file's name); then in
 * place: module_count and stack_count clamped to their slots and to the
 * entries that lie whole inside file_bytes. */
int filecheck_stacks_header(struct mt_stacks_header *h, uint64_t file_bytes, int32_t pid,
			    uint32_t gen);
/* Entries read below a checked header's counts, made safe in place: module
 * paths terminated, build-id lengths over MT_STACKS_BUILD_ID_BYTES zeroed,
 * nframes clamped to MT_STACKS_FRAMES, modules_seen to module_count.
 * Either table may be NULL (not read). */
void filecheck_stacks_entries(struct mt_stacks_module *modules, uint32_t module_count,
			      struct mt_stack *stacks, uint32_t stack_count);
/* The code table's count made safe in place: 0 when the table is not of
 * this layout, else clamped to the slots and to a file of file_bytes.
 * And its entries, once read: names terminated, a line table length past
 * its slot made 0. */
void filecheck_stacks_codes(struct mt_stacks_header *h, uint64_t file_bytes);
void filecheck_stacks_code_entries(struct mt_stacks_code *codes, uint32_t n);

#endif /* MEMTRACE_FILECHECK_H */
