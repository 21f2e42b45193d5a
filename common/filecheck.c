/* filecheck.c: the checks of the shared binary files (see filecheck.h). */
#include "filecheck.h"

int filecheck_record_bytes(uint64_t file_bytes)
{
	if (file_bytes < MT_RECORD_SIZE)
		return -FILECHECK_ESHORT;
	return file_bytes > MT_RECORD_SIZE ? -FILECHECK_ELONG : 0;
}

int filecheck_record_head(uint64_t magic, uint32_t version, uint32_t record_size)
{
	if (magic != MT_RECORD_MAGIC)
		return -FILECHECK_EMAGIC;
	if (version != MT_RECORD_VERSION)
		return -FILECHECK_EVERSION;
	if (record_size != MT_RECORD_SIZE)
		return -FILECHECK_ELAYOUT;
	return 0;
}

int filecheck_record(struct mt_record *r)
{
	int rc = filecheck_record_head(r->magic, r->version, r->record_size);
	if (rc)
		return rc;
	if (r->pid <= 0 || r->state >= MT_STATE_COUNT || r->relation >= MT_REL_COUNT ||
	    r->parent_pid < 0)
		return -FILECHECK_ECORRUPT;
	r->exe[MT_EXE_BYTES - 1] = '\0';
	if (r->argv_bytes > MT_ARGV_BYTES)
		r->argv_bytes = MT_ARGV_BYTES;
	if (r->argv_bytes > 0)
		r->argv[r->argv_bytes - 1] = '\0';
	for (unsigned i = 0; i < MT_MARKERS; i++)
		r->markers[i].label[MT_LABEL_BYTES - 1] = '\0';
	return 0;
}

int filecheck_record_of(struct mt_record *r, int32_t pid, uint32_t gen)
{
	int rc = filecheck_record(r);
	if (rc)
		return rc;
	return r->pid == pid && r->gen == gen ? 0 : -FILECHECK_EIDENTITY;
}

/* Whole entries of `bytes` each that lie in a file of file_bytes from
 * offset `at` on. */
static uint64_t filecheck_room(uint64_t file_bytes, uint64_t at, uint64_t bytes)
{
	return file_bytes > at ? (file_bytes - at) / bytes : 0;
}

int filecheck_stacks_header(struct mt_stacks_header *h, uint64_t file_bytes, int32_t pid,
			    uint32_t gen)
{
	uint64_t room;
	if (file_bytes < MT_STACKS_HEADER_BYTES)
		return -FILECHECK_ESHORT;
	if (h->magic != MT_STACKS_MAGIC)
		return -FILECHECK_EMAGIC;
	if (h->version != MT_STACKS_VERSION)
		return -FILECHECK_EVERSION;
	if (!mt_stacks_layout_ok(h))
		return -FILECHECK_ELAYOUT;
	if (pid > 0 && (h->pid != pid || h->gen != gen))
		return -FILECHECK_EIDENTITY;
	/* Published entries lie inside the file (stacks.h); a count that says
	 * otherwise is cut to what the file holds. */
	room = filecheck_room(file_bytes, MT_STACKS_MODULES_OFFSET, MT_STACKS_MODULE_BYTES);
	if (h->module_count > MT_STACKS_MODULE_SLOTS)
		h->module_count = MT_STACKS_MODULE_SLOTS;
	if (h->module_count > room)
		h->module_count = (uint32_t)room;
	room = filecheck_room(file_bytes, MT_STACKS_STACKS_OFFSET, MT_STACKS_STACK_BYTES);
	if (h->stack_count > MT_STACKS_SLOTS)
		h->stack_count = MT_STACKS_SLOTS;
	if (h->stack_count > room)
		h->stack_count = (uint32_t)room;
	return 0;
}

void filecheck_stacks_entries(struct mt_stacks_module *modules, uint32_t module_count,
			      struct mt_stack *stacks, uint32_t stack_count)
{
	for (uint32_t i = 0; modules && i < module_count; i++) {
		modules[i].path[MT_STACKS_PATH_BYTES - 1] = '\0';
		if (modules[i].build_id_len > MT_STACKS_BUILD_ID_BYTES)
			modules[i].build_id_len = 0;
	}
	for (uint32_t i = 0; stacks && i < stack_count; i++) {
		if (stacks[i].nframes > MT_STACKS_FRAMES)
			stacks[i].nframes = MT_STACKS_FRAMES;
		if (stacks[i].modules_seen > module_count)
			stacks[i].modules_seen = module_count;
	}
}

void filecheck_stacks_codes(struct mt_stacks_header *h, uint64_t file_bytes)
{
	uint64_t room = 0;
	/* a code table of another layout is not read (stacks.h) */
	if (!mt_stacks_codes_ok(h) || h->code_count > MT_STACKS_CODE_SLOTS)
		h->code_count = mt_stacks_codes_ok(h) ? MT_STACKS_CODE_SLOTS : 0;
	if (file_bytes > MT_STACKS_CODES_OFFSET)
		room = (file_bytes - MT_STACKS_CODES_OFFSET) / MT_STACKS_CODE_BYTES;
	if (h->code_count > room)
		h->code_count = (uint32_t)room;
}

void filecheck_stacks_code_entries(struct mt_stacks_code *codes, uint32_t n)
{
	for (uint32_t i = 0; i < n; i++) {
		codes[i].name[MT_STACKS_CODE_NAME_BYTES - 1] = '\0';
		codes[i].file[MT_STACKS_CODE_FILE_BYTES - 1] = '\0';
		if (codes[i].lines_len > MT_STACKS_CODE_LINES_BYTES)
			codes[i].lines_len = 0;
	}
}
