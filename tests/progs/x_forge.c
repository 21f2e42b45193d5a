/* x_forge.c: a command that writes records of its own into $MEMTRACE_DIR
 * with valid headers and false contents, and a marker naming init, then
 * holds MB (default 10) for HOLD_MS (default 300).  memsup must believe
 * none of it (tests/e2e/test_memsup_findings.c):
 *   1.0.mtr          pid 1, never in the tree: VmHWM of 9.4e18 kB and
 *                    4,294,967,287 markers
 *   4190000.0.mtr    claims to be a fork child of this process's own
 *                    record (so its lineage leads into the tree), with a
 *                    VmHWM of 2^50 kB: more than any machine here holds
 *   $MEMSUP_MARK     "forged<TAB>pid=1<TAB>maxrss_kb=123"
 * Usage: x_forge [MB [HOLD_MS]].  Exit 2 without MEMTRACE_DIR. */
#include "workload.h"
#include "record.h"

static void forge(const char *dir, int32_t pid, int32_t parent, uint32_t relation,
		  uint64_t hwm_kb, uint32_t markers)
{
	static struct {
		struct mt_record r;
		char pad[MT_RECORD_SIZE - sizeof(struct mt_record)];
	} rec;
	struct timespec ts;
	char path[4096];
	clock_gettime(CLOCK_MONOTONIC, &ts);
	memset(&rec, 0, sizeof rec);
	rec.r.magic = MT_RECORD_MAGIC;
	rec.r.version = MT_RECORD_VERSION;
	rec.r.record_size = MT_RECORD_SIZE;
	rec.r.pid = pid;
	rec.r.ppid = parent;
	rec.r.relation = relation;
	rec.r.parent_pid = parent;
	rec.r.state = MT_STATE_EXITED;
	rec.r.start_mono_ns = (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
	rec.r.end_mono_ns = rec.r.start_mono_ns + 1000;
	rec.r.vm_hwm_kb = hwm_kb;
	rec.r.marker_count = markers;
	rec.r.heap_peak = 4096;
	memcpy(rec.r.argv, "forged", 7);
	rec.r.argv_bytes = 7;
	rec.r.argc = 1;
	snprintf(path, sizeof path, "%s/%d.0%s", dir, (int)pid, MT_RECORD_SUFFIX);
	int fd = open(path, O_WRONLY | O_CREAT | O_EXCL, 0644);
	if (fd < 0)
		wl_die(path);
	if (write(fd, &rec, sizeof rec) != (ssize_t)sizeof rec)
		wl_die("write");
	close(fd);
}

int main(int argc, char **argv)
{
	long mb = wl_arg(argc, argv, 1, 10), ms = wl_arg(argc, argv, 2, 300);
	const char *dir = getenv(MT_ENV_DIR), *marks = getenv("MEMSUP_MARK");
	if (!dir || !*dir) {
		fprintf(stderr, "x_forge: %s is not set\n", MT_ENV_DIR);
		return 2;
	}
	forge(dir, 1, 0, MT_REL_ROOT, UINT64_C(9444732965739290), 0xFFFFFFF7u);
	forge(dir, 4190000, (int32_t)getpid(), MT_REL_FORK, UINT64_C(1) << 50, 0);
	if (marks && *marks) {
		static const char line[] = "forged\tpid=1\tmaxrss_kb=123\n";
		int fd = open(marks, O_WRONLY | O_APPEND);
		if (fd < 0 || write(fd, line, sizeof line - 1) != (ssize_t)sizeof line - 1)
			wl_die("marks");
		close(fd);
	}
	wl_hold((size_t)mb * WL_MB);
	wl_sleep_ms(ms);
	return 0;
}
