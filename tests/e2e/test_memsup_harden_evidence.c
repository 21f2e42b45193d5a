/* test_memsup_harden_evidence.c: memsup when its evidence cannot be
 * written -- a full file system, a file size limit, the directory removed or
 * made read-only under it, a read-only parent.  Wanted every time: the tree
 * killed (no pid of it left, nothing re-parented to the test), one stderr
 * line naming the path and the error, exit 125, and no torn JSON (the
 * record absent or whole, every .jsonl line whole).
 *
 * The full-disk cases mount a small tmpfs in a user + mount namespace
 * (unshare -rm); where that is not allowed they skip and say so, and the
 * file size limit case covers the same write path (EFBIG). */
#include "test_memsup_harden.h"
#include <sys/resource.h>

/* Can this machine mount a tmpfs in a user + mount namespace? */
static int tmpfs_possible(const struct sup_run *r)
{
	char cmd[PATH_MAX + 200];
	snprintf(cmd, sizeof cmd, "mkdir -p '%s/probe' && unshare -rm sh -c "
		 "'mount -t tmpfs -o size=64k tmpfs \"$1\"' sh '%s/probe' >/dev/null 2>&1",
		 r->tmp, r->tmp);
	return system(cmd) == 0;
}

static void expect_json_file(const char *path, const char *what)
{
	char cmd[PATH_MAX + 96];
	snprintf(cmd, sizeof cmd, "python3 -c 'import json,sys; json.load(open(sys.argv[1]))' "
		 "'%s'", path);
	cr_expect_eq(system(cmd), 0, "%s is not valid JSON", what);
}

/* `tmp_record_said`: memsup said it could not remove a whole
 * resources.json.tmp, so one may be there, and whole. */
static void expect_evidence_whole(const char *dir, int tmp_record_said)
{
	char path[PATH_MAX + 32];
	snprintf(path, sizeof path, "%s/rss.jsonl", dir);
	if (path_exists(path))
		jsonl_whole_lines(path);
	snprintf(path, sizeof path, "%s/timeline.jsonl", dir);
	if (path_exists(path))
		jsonl_whole_lines(path);
	snprintf(path, sizeof path, "%s/resources.json.tmp", dir);
	if (tmp_record_said)
		expect_json_file(path, "the temporary record left behind");
	else
		cr_expect(!path_exists(path), "a temporary record was left behind");
	snprintf(path, sizeof path, "%s/processes.json.tmp", dir);
	cr_expect(!path_exists(path), "a temporary processes.json was left behind");
	/* processes.json: absent (written at the end, when the disk may be
	 * full) or whole */
	snprintf(path, sizeof path, "%s/processes.json", dir);
	if (path_exists(path))
		expect_json_file(path, "processes.json");
}

/* A full file system (the command's stdout.log fills a 2 MB tmpfs): the
 * next evidence write fails with ENOSPC and memsup ends the run.  `mode` is
 * --output: with tee memsup's own write into stdout.log is the one that
 * fails; with log the command's writes fail and memsup's next one does.
 * --log-max unlimited: a bounded log (tee's default) would not fill it. */
static void full_disk_run(const char *mode)
{
	struct sup_run r;
	char mnt[512], pidfile[PATH_MAX + 16], want[PATH_MAX + 16];
	tmp_make(&r);
	if (!tmpfs_possible(&r))
		cr_skip_test("cannot mount a tmpfs here (unshare -rm refused): "
			     "file_size_limit_is_reported covers the same write path");
	snprintf(mnt, sizeof mnt, "%s/mnt", r.tmp);
	snprintf(pidfile, sizeof pidfile, "%s/pids", r.tmp);
	cr_assert_eq(mkdir(mnt, 0755), 0);
	/* the namespace (and the tmpfs) ends with the shell: copy the evidence
	 * out first, to TMP/ev where the helpers look */
	static const char script[] =
		"mount -t tmpfs -o size=2m tmpfs \"$1\" || exit 90\n"
		"\"$2\" -o \"$1/ev\" --output \"$6\" --log-max unlimited -- \"$3\" \"$4\"\n"
		"st=$?\n"
		"cp -a \"$1/ev\" \"$5/\"\n"
		"exit $st\n";
	const char *argv[] = { "unshare", "-rm", "sh", "-c", script, "sh", mnt,
			       env_or_skip("MEMSUP"), prog("h_fill"), pidfile, r.tmp, mode, NULL };
	harden_start(&r, NULL, argv);
	cr_assert_eq(memsup_wait(&r), 125, "stderr: %s", r.err);
	no_children_left();
	cr_expect_eq(all_pids_gone(pidfile), 2);
	snprintf(want, sizeof want, "memsup: write %s/ev/", mnt);
	cr_expect_not_null(strstr(r.err, want), "no '%s...' line: %s", want, r.err);
	expect_error_line(&r, "", ENOSPC);
	/* one line for the failure, as the README promises: the later writes
	 * that fail on the same full disk are its consequences */
	int lines = 0;
	for (const char *p = r.err; p; p = strchr(p, '\n'), p = p ? p + 1 : NULL)
		lines += strncmp(p, "memsup: write ", 14) == 0 ||
			 strncmp(p, "memsup: /", 9) == 0; /* the picture's line */
	cr_expect_eq(lines, 1, "more than one line for one full disk:\n%s", r.err);
	cr_assert(path_exists(r.dir), "the evidence was not copied out");
	expect_evidence_whole(r.dir, 0);
	char rec[PATH_MAX + 32];
	snprintf(rec, sizeof rec, "%s/resources.json", r.dir);
	if (path_exists(rec)) {
		rec_load(&r);
		/* the last record that could be written: the start or a rewrite */
		cr_expect_str_eq(rec_str(&r, "reason"), "\"running\"");
	}
}

Test(harden_evidence, full_disk_kills_tree_and_says_enospc, .timeout = 60)
{
	full_disk_run("tee");
}

Test(harden_evidence, full_disk_in_log_mode_too, .timeout = 60)
{
	full_disk_run("log");
}

static void limit_file_size(const struct sup_run *r)
{
	(void)r;
	struct rlimit rl = { 16384, 16384 };
	if (setrlimit(RLIMIT_FSIZE, &rl) < 0)
		_exit(97);
}

/* RLIMIT_FSIZE (ulimit -f): timeline.jsonl hits 16 KiB, write(2) fails
 * with EFBIG.  memsup ignores SIGXFSZ (else the signal would kill it without
 * a word), cuts the file back to its last whole line, kills the tree and
 * says why; the record, far below the limit, is written and says it too. */
Test(harden_evidence, file_size_limit_is_reported, .timeout = 60)
{
	struct sup_run r;
	char pidfile[PATH_MAX + 16], path[PATH_MAX + 32];
	tmp_make(&r);
	snprintf(pidfile, sizeof pidfile, "%s/pids", r.tmp);
	/* --sparse-ms 0: a line every sample, so the limit comes in about a
	 * second, not after 40 of a flat tree's sparse samples */
	const char *argv[] = { env_or_skip("MEMSUP"), "-q", "-o", r.dir, "--sparse-ms", "0",
			       "--", prog("sleeper"), "120", "2", pidfile, NULL };
	harden_start(&r, limit_file_size, argv);
	int st = memsup_wait(&r);
	cr_assert_neq(st, 1000 + SIGXFSZ, "SIGXFSZ killed memsup");
	cr_assert_eq(st, 125, "stderr: %s", r.err);
	no_children_left();
	cr_expect_eq(all_pids_gone(pidfile), 3);
	snprintf(path, sizeof path, "%s/timeline.jsonl", r.dir);
	char want[PATH_MAX + 64];
	snprintf(want, sizeof want, "memsup: write %s: %s\n", path, strerror(EFBIG));
	cr_expect_not_null(strstr(r.err, want), "stderr does not say '%s': %s", want, r.err);
	struct stat sb;
	cr_assert_eq(stat(path, &sb), 0);
	cr_expect(sb.st_size > 12000 && sb.st_size <= 16384,
		  "timeline.jsonl is %lld bytes: the limit was not what stopped it",
		  (long long)sb.st_size);
	expect_evidence_whole(r.dir, 0);
	rec_load(&r);
	cr_expect_str_eq(rec_str(&r, "reason"), "\"evidence_failed\"");
	cr_expect_eq(rec_num(&r, "exit_status"), 125);
	cr_expect_eq(rec_num(&r, "exit_code"), -SIGKILL);
	cr_expect_not_null(strstr(rec_str(&r, "error"), strerror(EFBIG)), "error: %s",
			   rec_str(&r, "error"));
}

/* rm -rf of the evidence directory mid-run: the next record rewrite cannot
 * create its temporary file (ENOENT); memsup stops, does not recreate the
 * directory, and leaves nothing in its staging directory's root (the
 * empty names of folded records have no records/ to go to, and go). */
Test(harden_evidence, removed_directory_kills_tree, .timeout = 60)
{
	struct sup_run r;
	char pidfile[PATH_MAX + 16], cmd[PATH_MAX + 32], want[PATH_MAX + 128];
	char stage[PATH_MAX + 16];
	tmp_make(&r);
	snprintf(pidfile, sizeof pidfile, "%s/pids", r.tmp);
	snprintf(stage, sizeof stage, "%s/stage", r.tmp);
	cr_assert_eq(mkdir(stage, 0755), 0);
	cr_assert_eq(setenv("MEMSUP_STAGING_DIR", stage, 1), 0);
	const char *argv[] = { env_or_skip("MEMSUP"), "-o", r.dir, "--", prog("sleeper"), "120",
			       "2", pidfile, NULL };
	harden_start(&r, NULL, argv);
	cr_assert(wait_for_file(pidfile), "sleeper never wrote its pids");
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", r.dir);
	cr_assert_eq(system(cmd), 0);
	cr_assert_eq(memsup_wait(&r), 125, "stderr: %s", r.err);
	no_children_left();
	cr_expect_eq(all_pids_gone(pidfile), 3);
	snprintf(want, sizeof want, "memsup: create %s/resources.json.tmp: %s\n", r.dir,
		 strerror(ENOENT));
	cr_expect_not_null(strstr(r.err, want), "stderr does not say '%s': %s", want, r.err);
	cr_expect(!path_exists(r.dir), "memsup recreated the removed directory");
	unsetenv("MEMSUP_STAGING_DIR");
	snprintf(cmd, sizeof cmd, "rmdir '%s'", stage);
	cr_expect_eq(system(cmd), 0, "the staging directory was left in %s", stage);
}

/* -o under a read-only parent (mode 0555): refused before anything runs. */
Test(harden_evidence, readonly_parent_refused_before_start, .timeout = 30)
{
	struct sup_run r;
	char ro[512], shared[512], marker[PATH_MAX + 16], want[PATH_MAX + 128];
	tmp_make(&r);
	if (geteuid() == 0 && !nobody_can_run())
		cr_skip_test("running as root, and user nobody cannot run memsup from this "
			     "build tree: permission bits would not stop root");
	open_tmp_to_nobody(&r, shared, sizeof shared);
	snprintf(ro, sizeof ro, "%s/ro", r.tmp);
	snprintf(marker, sizeof marker, "%s/ran", shared);
	cr_assert_eq(mkdir(ro, 0555), 0);
	cr_assert_eq(chmod(ro, 0555), 0);
	snprintf(r.dir, sizeof r.dir, "%s/ev", ro);
	const char *argv[] = { env_or_skip("MEMSUP"), "-o", r.dir, "--", "touch", marker, NULL };
	harden_start(&r, become_nobody, argv);
	cr_assert_eq(memsup_wait(&r), 125, "stderr: %s", r.err);
	snprintf(want, sizeof want, "memsup: create evidence directory '%s': %s\n", r.dir,
		 strerror(EACCES));
	cr_expect_str_eq(r.err, want);
	cr_expect(!path_exists(r.dir), "an evidence directory appeared");
	cr_expect(!path_exists(marker), "the command ran without evidence");
	no_children_left();
}

/* The same under a read-only mount (EROFS), which stops root too. */
Test(harden_evidence, readonly_mount_refused_before_start, .timeout = 30)
{
	struct sup_run r;
	char mnt[512], marker[PATH_MAX + 16], want[PATH_MAX + 128];
	tmp_make(&r);
	if (!tmpfs_possible(&r))
		cr_skip_test("cannot mount a tmpfs here (unshare -rm refused): "
			     "readonly_parent_refused_before_start covers the same path");
	snprintf(mnt, sizeof mnt, "%s/mnt", r.tmp);
	snprintf(marker, sizeof marker, "%s/ran", r.tmp);
	cr_assert_eq(mkdir(mnt, 0755), 0);
	static const char script[] =
		"mount -t tmpfs -o ro,size=64k tmpfs \"$1\" || exit 90\n"
		"exec \"$2\" -o \"$1/ev\" -- touch \"$3\"\n";
	const char *argv[] = { "unshare", "-rm", "sh", "-c", script, "sh", mnt,
			       env_or_skip("MEMSUP"), marker, NULL };
	harden_start(&r, NULL, argv);
	cr_assert_eq(memsup_wait(&r), 125, "stderr: %s", r.err);
	snprintf(want, sizeof want, "memsup: create evidence directory '%s/ev': %s\n", mnt,
		 strerror(EROFS));
	cr_expect_str_eq(r.err, want);
	cr_expect(!path_exists(marker), "the command ran without evidence");
	no_children_left();
}

/* The evidence directory made read-only (0555) mid-run: the rewrite fails
 * with EACCES, and the record of the last rewrite stays whole.  The chmod
 * mostly lands between two rewrites, and the next create fails; when it
 * lands between a rewrite's create and its rename (CI saw it), the whole
 * new record stays in resources.json.tmp, which the read-only directory
 * will not let memsup remove either, and the error says so. */
Test(harden_evidence, readonly_directory_mid_run_kills_tree, .timeout = 60)
{
	struct sup_run r;
	char shared[512], pidfile[PATH_MAX + 16], want[PATH_MAX + 128], raced_want[PATH_MAX + 256];
	tmp_make(&r);
	if (geteuid() == 0 && !nobody_can_run())
		cr_skip_test("running as root, and user nobody cannot run memsup from this "
			     "build tree: permission bits would not stop root");
	open_tmp_to_nobody(&r, shared, sizeof shared);
	snprintf(pidfile, sizeof pidfile, "%s/pids", shared);
	snprintf(r.dir, sizeof r.dir, "%s/ev", shared);
	const char *argv[] = { env_or_skip("MEMSUP"), "-o", r.dir, "--", prog("sleeper"), "120",
			       "2", pidfile, NULL };
	harden_start(&r, become_nobody, argv);
	cr_assert(wait_for_file(pidfile), "sleeper never wrote its pids");
	cr_assert_eq(chmod(r.dir, 0555), 0);
	cr_assert_eq(memsup_wait(&r), 125, "stderr: %s", r.err);
	chmod(r.dir, 0755);
	no_children_left();
	cr_expect_eq(all_pids_gone(pidfile), 3);
	snprintf(want, sizeof want, "memsup: create %s/resources.json.tmp: %s\n", r.dir,
		 strerror(EACCES));
	snprintf(raced_want, sizeof raced_want, "memsup: rename %s/resources.json.tmp: %s; "
		 "resources.json.tmp is left behind (whole) and cannot be removed: %s\n", r.dir,
		 strerror(EACCES), strerror(EACCES));
	int raced = strstr(r.err, raced_want) != NULL;
	cr_expect(raced || strstr(r.err, want), "stderr says neither '%s' nor '%s': %s", want,
		  raced_want, r.err);
	expect_evidence_whole(r.dir, raced);
	rec_load(&r);
	cr_expect_str_eq(rec_str(&r, "reason"), "\"running\"");
}
