/* test_memsup_harden_output.c: the command's output and a command that
 * fights back.  300 MB of stdout arrive whole in stdout.log; a tree that
 * closes or redirects its stdout/stderr, ignores SIGTERM, or leaves its
 * process group or session is still measured and killed by a budget, with
 * no process of it left alive or unreaped. */
#include "test_memsup_harden.h"
#include <stdint.h>

/* The h_flood stream (tests/progs/h_flood.c), regenerated here. */
static void flood_fill(uint64_t *state, unsigned char *buf, size_t n)
{
	for (size_t i = 0; i < n; i += 8) {
		uint64_t x = *state;
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		*state = x;
		for (size_t b = 0; b < 8 && i + b < n; b++)
			buf[i + b] = (unsigned char)(x >> (8 * b));
	}
}

/* `path` holds the h_flood stream of `seed`, `total` bytes, byte for byte. */
static void expect_flood(const char *path, uint64_t seed, size_t total)
{
	enum { CHUNK = 65536 };
	struct stat st;
	cr_assert_eq(stat(path, &st), 0, "%s: %s", path, strerror(errno));
	cr_expect_eq((size_t)st.st_size, total, "%s has %lld bytes, not %zu", path,
		     (long long)st.st_size, total);
	int fd = open(path, O_RDONLY);
	cr_assert_geq(fd, 0);
	static unsigned char want[CHUNK], got[CHUNK];
	uint64_t state = seed * 0x9e3779b97f4a7c15ull | 1;
	size_t off = 0;
	while (off < total) {
		size_t n = total - off < CHUNK ? total - off : CHUNK;
		flood_fill(&state, want, CHUNK);
		size_t have = 0;
		while (have < n) {
			ssize_t k = read(fd, got + have, n - have);
			cr_assert_gt(k, 0, "%s ends at byte %zu", path, off + have);
			have += (size_t)k;
		}
		if (memcmp(want, got, n) != 0) {
			size_t i = 0;
			while (want[i] == got[i])
				i++;
			cr_assert_fail("%s differs at byte %zu", path, off + i);
		}
		off += n;
	}
	close(fd);
}

/* 300 MB to stdout: stdout.log has every byte, in order, and so has
 * memsup's own stdout (--output tee, the default; --log-max unlimited: by
 * default the log keeps the first and last MiB, test_memsup_logmax.c). */
Test(harden_output, flood_300mb_reaches_stdout_log_whole, .timeout = 180)
{
	enum { MB = 300, SEED = 7 };
	struct sup_run r;
	const char *args[] = { "-q", "--log-max", "unlimited", "--", prog("h_flood"), "300", "7",
			       NULL };
	cr_assert_eq(memsup_run(&r, args), 0, "stderr: %s", r.err);
	char path[PATH_MAX + 16], passed[PATH_MAX + 16];
	snprintf(path, sizeof path, "%s/stdout.log", r.dir);
	snprintf(passed, sizeof passed, "%s/memsup.stdout", r.tmp);
	expect_flood(path, SEED, (size_t)MB * 1000000u);
	unlink(path); /* 300 MB of /tmp back */
	expect_flood(passed, SEED, (size_t)MB * 1000000u);
	unlink(passed);
	rec_load(&r);
	cr_expect_str_eq(rec_str(&r, "reason"), "null");
	cr_expect_eq(rec_num(&r, "exit_code"), 0);
}

/* h_hostile MODE with 3 processes of 30 MB under --rss-mb 75: the budget is
 * crossed only once all three hold their block, after all wrote their pid. */
static void hostile_run(struct sup_run *r, const char *mode, const char *grace)
{
	char pidfile[PATH_MAX + 16];
	tmp_make(r);
	snprintf(pidfile, sizeof pidfile, "%s/pids", r->tmp);
	const char *argv[16];
	int n = 0;
	argv[n++] = env_or_skip("MEMSUP");
	argv[n++] = "-o";
	argv[n++] = r->dir;
	argv[n++] = "--rss-mb";
	argv[n++] = "75";
	if (grace) {
		argv[n++] = "--grace-s";
		argv[n++] = grace;
	}
	const char *tail[] = { "--", prog("h_hostile"), mode, pidfile, "30", "3", NULL };
	for (size_t i = 0; i < sizeof tail / sizeof tail[0]; i++)
		argv[n++] = tail[i];
	harden_start(r, NULL, argv);
	cr_assert_eq(memsup_wait(r), 123, "%s: stderr: %s", mode, r->err);
	no_children_left();
	cr_expect_eq(all_pids_gone(pidfile), 3, "%s: not every process wrote its pid", mode);
	rec_load(r);
	cr_expect_str_eq(rec_str(r, "reason"), "\"rss_budget_exceeded\"");
	double peak = rec_num(r, "peak_tree_rss_mb");
	cr_expect(peak >= 75, "%s: peak %.1f MB: the tree was not measured whole", mode, peak);
	cr_expect_geq(rec_num(r, "max_processes"), 3, "%s", mode);
	cr_expect_eq(rec_num(r, "exit_status"), 123);
}

static void log_has(const struct sup_run *r, const char *text, int count)
{
	char path[PATH_MAX + 16], log[8192];
	snprintf(path, sizeof path, "%s/stdout.log", r->dir);
	slurp(path, log, sizeof log);
	int n = 0;
	for (const char *p = log; (p = strstr(p, text)) != NULL; p += strlen(text))
		n++;
	cr_expect_eq(n, count, "'%s' %d times in stdout.log, not %d: %s", text, n, count, log);
}

/* stdin, stdout and stderr closed in every process. */
Test(harden_output, closed_stdio_still_measured_and_killed, .timeout = 60)
{
	struct sup_run r;
	hostile_run(&r, "close", NULL);
	log_has(&r, "closing stdin", 3);
}

/* stdout and stderr pointed at /dev/null: what follows is not in the log. */
Test(harden_output, redirected_stdio_still_measured_and_killed, .timeout = 60)
{
	struct sup_run r;
	hostile_run(&r, "redirect", NULL);
	log_has(&r, "redirecting", 3);
	log_has(&r, "must not reach", 0);
}

/* SIGTERM ignored: --grace-s ends in SIGKILL (exit_code -9, not -15). */
Test(harden_output, sigterm_ignored_killed_after_grace, .timeout = 60)
{
	struct sup_run r;
	hostile_run(&r, "ignterm", "1");
	cr_expect_eq(rec_num(&r, "exit_code"), -SIGKILL);
	cr_expect_eq(rec_num(&r, "grace_s"), 1);
}

/* Children in process groups of their own: not reached by a group kill,
 * killed by memsup all the same. */
Test(harden_output, setpgid_children_killed, .timeout = 60)
{
	struct sup_run r;
	hostile_run(&r, "setpgid", NULL);
}

/* Children in sessions of their own. */
Test(harden_output, setsid_children_killed, .timeout = 60)
{
	struct sup_run r;
	hostile_run(&r, "setsid", NULL);
}
