/* test_evidence.c: the evidence directory's creation rules, and the record
 * written to it as valid JSON (parsed by python3, not by us). */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <grp.h>
#include <unistd.h>
#include "evidence/evidence.h"
#include "evidence/resources.h"
#include "evidence/timeline.h"
#include "test_memsup_util.h"
#include "test_py.h"

/* A temporary directory of the test's own, removed when its process
 * exits, passed or failed (tmp_adopt). */
static void mktmp(char *dir, size_t cap)
{
	snprintf(dir, cap, "/tmp/memsup-evidence-XXXXXX");
	cr_assert_not_null(mkdtemp(dir));
	tmp_adopt(dir);
}

/* A fresh evidence directory `path` = TMP/ev, in a new TMP. */
static void fresh_evidence(struct evidence *ev, char *tmp, size_t tmp_cap, char *path,
			   size_t path_cap, int with_log)
{
	const char *at = "?";
	mktmp(tmp, tmp_cap);
	snprintf(path, path_cap, "%s/ev", tmp);
	cr_assert_eq(evidence_create(ev, path, with_log, &at), 0, "evidence_create: %s", at);
}

Test(evidence, create_makes_parents_and_refuses_existing)
{
	char tmp[PATH_MAX], path[PATH_MAX + 64];
	mktmp(tmp, sizeof tmp);
	snprintf(path, sizeof path, "%s/a/b/ev/", tmp);
	struct evidence ev;
	const char *at;
	cr_assert_eq(evidence_create(&ev, path, 1, &at), 0);
	cr_expect_null(at);
	cr_expect_eq(ev.path[0], '/');
	evidence_close(&ev);
	char f[PATH_MAX + 96];
	snprintf(f, sizeof f, "%s/a/b/ev/stdout.log", tmp);
	cr_expect_eq(access(f, F_OK), 0);
	snprintf(f, sizeof f, "%s/a/b/ev/rss.jsonl", tmp);
	cr_expect_eq(access(f, F_OK), 0);
	cr_expect_eq(evidence_create(&ev, path, 1, &at), -EEXIST);
}

Test(evidence, record_is_valid_json_and_atomic, .timeout = 20)
{
	char tmp[PATH_MAX], path[PATH_MAX + 64];
	struct evidence ev;
	fresh_evidence(&ev, tmp, sizeof tmp, path, sizeof path, 1);

	struct sup_record r;
	char *cmd[] = { "prog", "we\"ird\n", "\x01\xff", NULL };
	char *env[] = { "A=1", "B=two words", "A=3" };
	runrecord_init(&r);
	r.command = cmd;
	r.command_argc = 3;
	r.poll_s = 0.01;
	r.env = env;
	r.n_env = 3;
	r.cwd = "/";
	r.started_at = "2026-12-02T10:00:00.000Z";
	cr_assert_eq(evidence_write_record(&ev, &r, 1), 0);
	r.reason = SUP_REASON_NONE;
	r.have_exit = 1;
	r.exit_code = -9;
	r.signal = 9;
	r.exit_status = 123;
	r.rss_budget_mb = 100;
	r.peak_bytes = 123456789;
	r.peak_at_s = 0.25;
	r.leftovers = calloc(1, sizeof *r.leftovers);
	r.leftovers[0].pid = 42;
	r.leftovers[0].argv = malloc(6);
	memcpy(r.leftovers[0].argv, "ab\0cd", 5);
	r.leftovers[0].argv_len = 5;
	r.n_leftovers = 1;
	runrecord_note(&r, "a note");
	cr_assert_eq(evidence_write_record(&ev, &r, 1), 0);
	runrecord_free(&r);
	evidence_close(&ev);

	char cmdline[2 * PATH_MAX + 1024];
	snprintf(cmdline, sizeof cmdline, "python3 '%s' '%s/resources.json'",
		 py_script("evidence_record.py"), path);
	cr_expect_eq(system(cmdline), 0, "python3 rejected the record");
}

/* rss.jsonl under a file size limit, its lines 16 bytes long so that 256
 * of them fill the line buffer exactly.  A buffer filled exactly was
 * written out by the buffer itself, unseen by the count of whole bytes the
 * cut-back after a failed write goes back to: the count stayed 0, and
 * the failure at the limit emptied the file (a torn line with lines of
 * other lengths: CI saw one in timeline.jsonl).  The file must keep every
 * line written whole before the failing write. */
Test(evidence, failed_write_after_exact_buffers_keeps_whole_lines, .timeout = 20)
{
	char dir[PATH_MAX], path[PATH_MAX + 16], line[TIMELINE_RSS_LINE_MAX];
	const uint64_t bytes = 10000000u; /* "[0.5, 10000000]\n": 16 bytes */
	const off_t limit = 3 * 4096 + 100;
	mktmp(dir, sizeof dir);
	cr_assert_eq(timeline_format_rss(0.5, bytes, line, sizeof line), 16);
	snprintf(path, sizeof path, "%s/ev", dir);
	pid_t pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		struct rlimit rl = { (rlim_t)limit, (rlim_t)limit };
		struct evidence ev;
		const char *at;
		signal(SIGXFSZ, SIG_IGN);
		if (setrlimit(RLIMIT_FSIZE, &rl) < 0 || evidence_create(&ev, path, 0, &at) < 0)
			_exit(90);
		int failed = 0;
		for (int i = 0; i < 5000 && !failed; i++)
			failed = evidence_append_sample(&ev, 0.5, bytes) < 0;
		evidence_close(&ev);
		_exit(failed ? 0 : 91);
	}
	int st;
	cr_assert_eq(waitpid(pid, &st, 0), pid);
	cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "child: %#x", st);
	snprintf(path, sizeof path, "%s/ev/rss.jsonl", dir);
	struct stat sb;
	cr_assert_eq(stat(path, &sb), 0);
	cr_expect_eq(sb.st_size % 16, 0, "%lld bytes: a torn line", (long long)sb.st_size);
	cr_expect_gt(sb.st_size, limit - 4096, "%lld bytes: whole lines were cut away",
		     (long long)sb.st_size);
}

/* The least record memsup writes: the command is "prog", from a static array. */
static void prog_record(struct sup_record *r)
{
	static char *cmd[] = { "prog", NULL };
	runrecord_init(r);
	r->command = cmd;
	r->command_argc = 1;
	r->started_at = "2026-12-04T10:00:00.000Z";
}

/* A record rewrite whose rename fails (resources.json is a directory, so
 * EISDIR) removes its temporary file: a reader never finds one. */
Test(evidence, failed_rename_removes_temporary_record, .timeout = 20)
{
	char tmp[PATH_MAX], path[PATH_MAX + 64], want[PATH_MAX + 128], said[PATH_MAX + 256];
	struct evidence ev;
	fresh_evidence(&ev, tmp, sizeof tmp, path, sizeof path, 0);
	/* a directory with an entry: rename(2) cannot replace it */
	snprintf(want, sizeof want, "%s/resources.json", path);
	cr_assert_eq(mkdir(want, 0755), 0);
	snprintf(want, sizeof want, "%s/resources.json/x", path);
	cr_assert_eq(mkdir(want, 0755), 0);
	struct sup_record r;
	prog_record(&r);
	cr_expect_eq(evidence_write_record(&ev, &r, 0), -EISDIR);
	snprintf(want, sizeof want, "%s/resources.json.tmp", path);
	cr_expect(access(want, F_OK) < 0 && errno == ENOENT, "%s was left behind", want);
	cr_assert_eq(evidence_fail_describe(&ev, said, sizeof said), 0);
	snprintf(want, sizeof want, "rename %s/resources.json.tmp: %s", ev.path,
		 strerror(EISDIR));
	cr_expect_str_eq(said, want);
	runrecord_free(&r);
	evidence_close(&ev);
}

/* The directory made read-only between the record's create and its rename
 * (memsup's evidence directory chmod'ed mid-run): neither the rename nor
 * the removal can happen, so the failure names the whole record left in
 * resources.json.tmp.  The temporary file exists beforehand, writable, so
 * that its create succeeds in the read-only directory; as root the write
 * runs as nobody, for root ignores permission bits. */
Test(evidence, unremovable_temporary_record_is_named, .timeout = 20)
{
	char tmp[PATH_MAX], path[PATH_MAX + 64], tmpfile[PATH_MAX + 96];
	struct evidence ev;
	fresh_evidence(&ev, tmp, sizeof tmp, path, sizeof path, 0);
	snprintf(tmpfile, sizeof tmpfile, "%s/resources.json.tmp", path);
	int fd = open(tmpfile, O_WRONLY | O_CREAT | O_EXCL, 0666);
	cr_assert_geq(fd, 0);
	close(fd);
	cr_assert_eq(chmod(tmpfile, 0666), 0);
	cr_assert_eq(chmod(tmp, 0755), 0);
	cr_assert_eq(chmod(path, 0555), 0);
	int pipefd[2];
	cr_assert_eq(pipe(pipefd), 0);
	pid_t pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		struct sup_record r;
		char said[PATH_MAX + 256];
		if (geteuid() == 0 && (setgroups(0, NULL) < 0 || setgid(65534) < 0 ||
				       setuid(65534) < 0))
			_exit(90);
		prog_record(&r);
		if (evidence_write_record(&ev, &r, 0) != -EACCES)
			_exit(91);
		evidence_fail_describe(&ev, said, sizeof said);
		if (write(pipefd[1], said, strlen(said)) < 0)
			_exit(92);
		_exit(0);
	}
	close(pipefd[1]);
	char said[PATH_MAX + 256] = "";
	ssize_t n = read(pipefd[0], said, sizeof said - 1);
	said[n > 0 ? n : 0] = '\0';
	close(pipefd[0]);
	int st;
	cr_assert_eq(waitpid(pid, &st, 0), pid);
	chmod(path, 0755);
	cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "child: %#x (said '%s')", st, said);
	char want[2 * PATH_MAX + 256];
	snprintf(want, sizeof want, "rename %s/resources.json.tmp: %s; resources.json.tmp is left "
		 "behind (whole) and cannot be removed: %s", ev.path, strerror(EACCES),
		 strerror(EACCES));
	cr_expect_str_eq(said, want);
	/* and it is the whole record, as it says */
	char cmdline[PATH_MAX + 200];
	snprintf(cmdline, sizeof cmdline, "python3 -c 'import json,sys; "
		 "assert json.load(open(sys.argv[1]))[\"command\"]==[\"prog\"]' '%s'", tmpfile);
	cr_expect_eq(system(cmdline), 0, "the record left behind is not whole");
	evidence_close(&ev);
}
