/* bs_corrupt.c: writes a record file that must not be trusted into
 * $MEMTRACE_DIR -- "<own pid>.7.mtr", full size, with the record magic but
 * version 99 -- then holds MB (default 10) for HOLD_MS (default 300).
 * Usage: bs_corrupt [MB [HOLD_MS]].  Exit 2 without MEMTRACE_DIR. */
#include "workload.h"
#include "record.h"

int main(int argc, char **argv)
{
	long mb = wl_arg(argc, argv, 1, 10), ms = wl_arg(argc, argv, 2, 300);
	const char *dir = getenv(MT_ENV_DIR);
	if (!dir || !*dir) {
		fprintf(stderr, "bs_corrupt: %s is not set\n", MT_ENV_DIR);
		return 2;
	}
	static struct {
		struct mt_record r;
		char pad[MT_RECORD_SIZE - sizeof(struct mt_record)];
	} bad;
	bad.r.magic = MT_RECORD_MAGIC;
	bad.r.version = 99;
	bad.r.record_size = MT_RECORD_SIZE;
	bad.r.pid = (int32_t)getpid();
	bad.r.gen = 7;
	char path[4096];
	snprintf(path, sizeof path, "%s/%d.7%s", dir, (int)getpid(), MT_RECORD_SUFFIX);
	int fd = open(path, O_WRONLY | O_CREAT | O_EXCL, 0644);
	if (fd < 0)
		wl_die(path);
	if (write(fd, &bad, sizeof bad) != (ssize_t)sizeof bad)
		wl_die("write");
	close(fd);
	wl_hold((size_t)mb * WL_MB);
	wl_sleep_ms(ms);
	return 0;
}
