/* record_verdicts.c: what one half's reader of records makes of each file
 * in records/ of a directory laid out as an evidence directory: one line
 * "<name> <verdict>" per entry, the verdict "ok" or why it was refused
 * (short, long, magic, version, layout, corrupt, identity, name; "error"
 * for a system error, such as ELOOP for a symbolic link).
 * Built twice: with READER_SHIM it reads as the shim reads its tree's
 * records (summary_read_record), otherwise as memsup reads finished
 * evidence (recordfile_parse_name, then fold_read_record).
 * tests/python/test_readers_agree.py runs both beside scripts/memsup.py on
 * the same files.  Exit 0, or 2 for a directory it cannot read.
 */
#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <unistd.h>

#include "filecheck.h"
#include "record.h"
#ifdef READER_SHIM
#include "report/summary.h"
#else
#include "collect/fold.h"
#include "collect/recordfile.h"
#endif

static const char *verdict(int rc)
{
	static const char *const words[] = {
		[FILECHECK_ESHORT - FILECHECK_ESHORT] = "short",
		[FILECHECK_ELONG - FILECHECK_ESHORT] = "long",
		[FILECHECK_EMAGIC - FILECHECK_ESHORT] = "magic",
		[FILECHECK_EVERSION - FILECHECK_ESHORT] = "version",
		[FILECHECK_ELAYOUT - FILECHECK_ESHORT] = "layout",
		[FILECHECK_ECORRUPT - FILECHECK_ESHORT] = "corrupt",
		[FILECHECK_EIDENTITY - FILECHECK_ESHORT] = "identity",
		[FILECHECK_ENAME - FILECHECK_ESHORT] = "name",
	};
	if (rc == 0)
		return "ok";
	if (-rc >= FILECHECK_ESHORT && -rc <= FILECHECK_ENAME)
		return words[-rc - FILECHECK_ESHORT];
	return "error";
}

int main(int argc, char **argv)
{
	char records[4096];
	struct mt_record r;
	struct dirent *e;
	DIR *d;
	int evfd;
	if (argc != 2) {
		fprintf(stderr, "usage: record_verdicts DIR (with DIR/records/)\n");
		return 2;
	}
	snprintf(records, sizeof records, "%s/records", argv[1]);
	evfd = open(argv[1], O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	d = opendir(records);
	if (evfd < 0 || !d) {
		perror(argv[1]);
		return 2;
	}
	while ((e = readdir(d)) != NULL) {
		int rc;
		if (e->d_name[0] == '.')
			continue;
#ifdef READER_SHIM
		rc = summary_read_record(dirfd(d), e->d_name, &r);
#else
		int32_t pid;
		uint32_t gen;
		rc = recordfile_parse_name(e->d_name, &pid, &gen);
		if (rc == 0)
			rc = fold_read_record(evfd, pid, gen, &r);
#endif
		printf("%s %s\n", e->d_name, verdict(rc));
	}
	closedir(d);
	close(evfd);
	return 0;
}
