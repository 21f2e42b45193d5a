/* fuzz_procfs.c: libFuzzer harness for the pure /proc parsers of
 * supervisor/collect/procfs.h (status, stat, statm, children, smaps_rollup
 * and the ELF interpreter probe).
 *
 * Every parser sees every input: the seeds are real /proc text of each kind,
 * and a mutated status file is as good a hostile stat file as any.  The
 * buffer libFuzzer hands over is exactly `size` bytes and not NUL-terminated,
 * so ASan reports any read past `len`.  After a successful parse the harness
 * checks what the header promises (NUL-terminated names, pids in range, `have`
 * bits only from the documented set, the children count contract) and aborts
 * on a violation, which libFuzzer reports as a crash.
 *
 * Fuzz harnesses (tests/fuzz/): built and run by scripts/fuzz.sh with clang
 * -fsanitize=fuzzer,address,undefined; seeds in tests/fuzz/corpus/<harness>/
 * (never grown by runs: the script fuzzes a copy); minimized reproducers of
 * bugs found, for their owners to fix, in tests/fuzz/crashers/.
 */
#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/procfs.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CHECK(cond)                                                              \
	do {                                                                     \
		if (!(cond)) {                                                   \
			fprintf(stderr, "fuzz_procfs: %s:%d: invariant broken: %s\n", \
				__FILE__, __LINE__, #cond);                      \
			abort();                                                 \
		}                                                                \
	} while (0)

/* A name field: NUL-terminated inside its array, and no newline (the parsers
 * cut at the end of the line). */
static void check_name(const char *s, size_t cap)
{
	const char *nul = memchr(s, '\0', cap);
	CHECK(nul != NULL);
	CHECK(memchr(s, '\n', (size_t)(nul - s)) == NULL);
}

static void fuzz_status(const char *buf, size_t len)
{
	struct procfs_status st;
	int rc = procfs_parse_status(buf, len, &st);
	CHECK(rc == 0 || rc == -EINVAL);
	if (rc != 0)
		return;
	const unsigned known = PROCFS_HAVE_RSS | PROCFS_HAVE_HWM | PROCFS_HAVE_PEAK |
			       PROCFS_HAVE_SIZE | PROCFS_HAVE_PPID | PROCFS_HAVE_NAME |
			       PROCFS_HAVE_TGID | PROCFS_HAVE_RSS_PARTS | PROCFS_HAVE_IDS |
			       PROCFS_HAVE_SWAP | PROCFS_HAVE_NSPID;
	CHECK((st.have & ~known) == 0);
	CHECK(st.have & PROCFS_HAVE_NAME);
	CHECK(st.have & PROCFS_HAVE_PPID);
	CHECK(st.ppid >= 0);
	CHECK(st.tgid >= 0);
	if (!(st.have & PROCFS_HAVE_TGID))
		CHECK(st.tgid == 0);
	if (!(st.have & PROCFS_HAVE_RSS_PARTS))
		CHECK(st.rss_anon_kb == 0 && st.rss_file_kb == 0 && st.rss_shmem_kb == 0);
	if (!(st.have & PROCFS_HAVE_IDS))
		CHECK(st.ruid == 0 && st.euid == 0 && st.rgid == 0 && st.egid == 0);
	if (!(st.have & PROCFS_HAVE_RSS))
		CHECK(st.vm_rss_kb == 0);
	if (!(st.have & PROCFS_HAVE_HWM))
		CHECK(st.vm_hwm_kb == 0);
	check_name(st.name, sizeof st.name);
	/* Only complete lines count: the text without its last, unterminated
	 * line must parse to the same figures. */
	const char *last_nl = len ? memrchr(buf, '\n', len) : NULL;
	size_t whole = last_nl ? (size_t)(last_nl - buf) + 1 : 0;
	struct procfs_status st2;
	CHECK(procfs_parse_status(buf, whole, &st2) == 0);
	CHECK(memcmp(&st, &st2, sizeof st) == 0);
}

static void fuzz_stat(const char *buf, size_t len)
{
	struct procfs_stat st;
	int rc = procfs_parse_stat(buf, len, &st);
	CHECK(rc == 0 || rc == -EINVAL);
	if (rc != 0)
		return;
	CHECK(st.pid >= 0 && st.ppid >= 0 && st.pgrp >= 0 && st.session >= 0);
	CHECK(st.state != ' ' && st.state != '\n');
	/* comm may hold newlines in principle (prctl(PR_SET_NAME)), so only
	 * termination is checked. */
	CHECK(memchr(st.comm, '\0', sizeof st.comm) != NULL);
	/* The fields after comm come from the LAST ')': the text must hold one,
	 * after a '('. */
	const char *open = memchr(buf, '(', len);
	const char *close = memrchr(buf, ')', len);
	CHECK(open && close && close > open);
	CHECK(strlen(st.comm) <= (size_t)(close - open - 1));
}

static void fuzz_statm(const char *buf, size_t len)
{
	struct procfs_statm sm = { 12345, 678 };
	int rc = procfs_parse_statm(buf, len, &sm);
	CHECK(rc == 0 || rc == -EINVAL);
	if (rc != 0) {
		CHECK(sm.resident_pages == 12345 && sm.text_pages == 678); /* untouched */
		return;
	}
	/* The text goes on after the fourth field (a cut one is refused). */
	CHECK(len >= 8);
}

static void fuzz_children(const char *buf, size_t len)
{
	static const size_t caps[] = { 0, 1, 3, 64 };
	pid_t ref[64];
	size_t ref_n = 0;
	int ref_rc = 0;
	for (size_t k = 0; k < sizeof caps / sizeof caps[0]; k++) {
		size_t cap = caps[k];
		/* Exactly cap elements on the heap, so ASan sees a write past
		 * the end; cap 0 still gets a valid (1-element) pointer. */
		pid_t *out = malloc((cap ? cap : 1) * sizeof *out);
		CHECK(out != NULL);
		size_t n = (size_t)-1;
		int rc = procfs_parse_children(buf, len, out, cap, &n);
		CHECK(rc == 0 || rc == -EINVAL || rc == -ENOSPC);
		if (rc == -EINVAL) {
			free(out);
			if (k > 0)
				CHECK(ref_rc == -EINVAL);
			ref_rc = rc;
			continue;
		}
		CHECK(n != (size_t)-1);
		CHECK((rc == -ENOSPC) == (n > cap));
		for (size_t i = 0; i < n && i < cap; i++)
			CHECK(out[i] > 0);
		if (k == 0) {
			ref_rc = rc;
			ref_n = n;
		} else {
			CHECK(ref_rc != -EINVAL);
			CHECK(n == ref_n); /* the count does not depend on cap */
		}
		if (cap == 64 && n <= 64) {
			memcpy(ref, out, n * sizeof *out);
			/* Every stored pid is a number of the text. */
			for (size_t i = 0; i < n; i++) {
				char num[16];
				int m = snprintf(num, sizeof num, "%d", (int)ref[i]);
				CHECK(m > 0 && memmem(buf, len, num, (size_t)m) != NULL);
			}
		}
		free(out);
	}
}

static void fuzz_rollup(const char *buf, size_t len)
{
	struct procfs_rollup r;
	int rc = procfs_parse_rollup(buf, len, &r);
	CHECK(rc == 0 || rc == -EINVAL);
	if (rc != 0)
		return;
	const unsigned known = PROCFS_ROLLUP_RSS | PROCFS_ROLLUP_PSS | PROCFS_ROLLUP_SWAP |
			       PROCFS_ROLLUP_ANON | PROCFS_ROLLUP_PSS_PARTS;
	CHECK((r.have & ~known) == 0);
	CHECK((r.have & PROCFS_ROLLUP_RSS) && (r.have & PROCFS_ROLLUP_PSS));
	/* A cut last line is not trusted: same result without it. */
	const char *last_nl = memrchr(buf, '\n', len);
	CHECK(last_nl != NULL);
	struct procfs_rollup r2;
	CHECK(procfs_parse_rollup(buf, (size_t)(last_nl - buf) + 1, &r2) == 0);
	CHECK(memcmp(&r, &r2, sizeof r) == 0);
}

static void fuzz_elf(const char *buf, size_t len)
{
	int rc = procfs_parse_elf_interp((const unsigned char *)buf, len);
	CHECK(rc == 0 || rc == 1 || rc == -EINVAL);
	if (rc >= 0)
		CHECK(len >= 52 && memcmp(buf, "\177ELF", 4) == 0);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *buf = (const char *)data;
	fuzz_status(buf, size);
	fuzz_stat(buf, size);
	fuzz_statm(buf, size);
	fuzz_children(buf, size);
	fuzz_rollup(buf, size);
	fuzz_elf(buf, size);
	return 0;
}
