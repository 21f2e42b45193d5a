/* test_kmsg.c: the OOM killer's lines as /dev/kmsg gives them (kmsg.h):
 * lines captured on Linux 6.18, the shapes older kernels print, comms and
 * cgroup names that hold the very markers the parser looks for, lines cut
 * at every byte, numbers out of range; then the reader over files and
 * FIFOs (records split anywhere, dictionaries, interleaved kills, forged
 * facilities, a full table) and over the real /dev/kmsg. */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/capability.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "collect/kmsg.h"
#include "test_tmp.h"

/* Captured on this project's test machine (kernel 6.18). */
#define REAL_SUMMARY                                                                       \
	"oom-kill:constraint=CONSTRAINT_MEMCG,nodemask=(null),cpuset=/,mems_allowed=0,"    \
	"oom_memcg=/process_api/fc378586e852fd0c420c7f94b59817c0/memsup-2477-run,"         \
	"task_memcg=/process_api/fc378586e852fd0c420c7f94b59817c0/memsup-2477-run,"        \
	"task=grower,pid=2479,uid=0"
#define REAL_KILLED                                                                        \
	"Memory cgroup out of memory: Killed process 2479 (grower) total-vm:125232kB, "    \
	"anon-rss:97384kB, file-rss:1084kB, shmem-rss:0kB, UID:0 pgtables:228kB "          \
	"oom_score_adj:0"
#define REAL_CG "/process_api/fc378586e852fd0c420c7f94b59817c0/memsup-2477-run"

static int summary(const char *msg, struct kmsg_oom *o)
{
	return kmsg_parse_summary(msg, strlen(msg), o);
}

static int killed(const char *msg, struct kmsg_oom *o)
{
	return kmsg_parse_killed(msg, strlen(msg), o);
}

/* ---- records ---------------------------------------------------------------- */

Test(kmsg, record_fields_and_message)
{
	static const char rec[] = "6,3076,7672463244,-;" REAL_SUMMARY "\n";
	struct kmsg_record r;
	cr_assert_eq(kmsg_parse_record(rec, strlen(rec), &r), 0);
	cr_assert_eq(r.pri, 6);
	cr_assert_eq(r.seq, 3076);
	cr_assert_eq(r.ts_us, 7672463244ull);
	cr_assert_eq(r.msg_len, strlen(REAL_SUMMARY));
	cr_assert_eq(memcmp(r.msg, REAL_SUMMARY, r.msg_len), 0);
	cr_assert(KMSG_FROM_KERNEL(r.pri));
}

Test(kmsg, record_with_dictionary_and_more_fields)
{
	/* CONFIG_PRINTK_CALLER adds a field before ';'; a dictionary follows */
	static const char rec[] = "3,12,345,c,caller=T42;usb 1-1: new device\n"
				  " SUBSYSTEM=usb\n DEVICE=c189:1\n";
	struct kmsg_record r;
	cr_assert_eq(kmsg_parse_record(rec, strlen(rec), &r), 0);
	cr_assert_eq(r.pri, 3);
	cr_assert_eq(r.seq, 12);
	cr_assert_eq(r.ts_us, 345);
	cr_assert_eq(r.msg_len, strlen("usb 1-1: new device"));
	/* a message may be empty */
	cr_assert_eq(kmsg_parse_record("6,1,2,-;\n", 9, &r), 0);
	cr_assert_eq(r.msg_len, 0);
}

Test(kmsg, record_garbage_and_every_cut)
{
	static const char *const bad[] = {
		"", "\n", "x,1,2,-;m\n", "6,1,2;m\n", "6,1,2,-m\n", "6;1,2,-;m\n", "-6,1,2,-;m\n",
		"6,99999999999999999999,2,-;m\n", "6,1,18446744073709551616,-;m\n",
		"4294967296,1,2,-;m\n", "6,,2,-;m\n", " SUBSYSTEM=usb\n",
	};
	struct kmsg_record r;
	for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
		cr_assert_eq(kmsg_parse_record(bad[i], strlen(bad[i]), &r), -EINVAL, "%s", bad[i]);
	/* a record without its '\n' may have lost digits: every cut fails */
	static const char rec[] = "6,3076,7672463244,-;" REAL_SUMMARY "\n";
	for (size_t n = 0; n < strlen(rec); n++) {
		char *cut = malloc(n ? n : 1); /* exact size: ASan sees any overread */
		memcpy(cut, rec, n);
		cr_assert_eq(kmsg_parse_record(cut, n, &r), -EINVAL, "cut at %zu", n);
		free(cut);
	}
}

/* ---- the summary line ----------------------------------------------------------- */

Test(kmsg, summary_real_memcg_line)
{
	struct kmsg_oom o;
	cr_assert_eq(summary(REAL_SUMMARY, &o), 1);
	cr_assert(o.have_summary);
	cr_assert_not(o.have_killed);
	cr_assert_str_eq(o.constraint, "CONSTRAINT_MEMCG");
	cr_assert_not(o.global);
	cr_assert_str_eq(o.oom_memcg, REAL_CG);
	cr_assert_str_eq(o.task_memcg, REAL_CG);
	cr_assert_str_eq(o.comm, "grower");
	cr_assert_eq(o.pid, 2479);
	cr_assert_eq(o.uid, 0);
	/* what only the killed line says stays unknown */
	cr_assert_eq(o.total_vm_kb, UINT64_MAX);
	cr_assert_eq(o.pgtables_kb, UINT64_MAX);
	cr_assert_not(o.have_score_adj);
	/* a killed line is not a summary, nor the reverse */
	cr_assert_eq(summary(REAL_KILLED, &o), 0);
	cr_assert_eq(killed(REAL_SUMMARY, &o), 0);
}

Test(kmsg, summary_slurm_limit_above_the_task)
{
	/* the limit that fired is the job's, an ancestor of the task's cgroup */
	struct kmsg_oom o;
	cr_assert_eq(summary("oom-kill:constraint=CONSTRAINT_MEMCG,nodemask=(null),cpuset=/,"
			     "mems_allowed=0,oom_memcg=/slurm_mt32595/uid_0/job_10,task_memcg=/"
			     "slurm_mt32595/uid_0/job_10/step_0/task_0/memsup-1775-run,task=grower,"
			     "pid=1777,uid=1000",
			     &o),
		     1);
	cr_assert_str_eq(o.oom_memcg, "/slurm_mt32595/uid_0/job_10");
	cr_assert_str_eq(o.task_memcg, "/slurm_mt32595/uid_0/job_10/step_0/task_0/memsup-1775-run");
	cr_assert_eq(o.pid, 1777);
	cr_assert_eq(o.uid, 1000);
}

Test(kmsg, summary_global_and_other_constraints)
{
	struct kmsg_oom o;
	cr_assert_eq(summary("oom-kill:constraint=CONSTRAINT_NONE,nodemask=(null),cpuset=/,"
			     "mems_allowed=0,global_oom,task_memcg=/x,task=foo,pid=12,uid=7",
			     &o),
		     1);
	cr_assert_str_eq(o.constraint, "CONSTRAINT_NONE");
	cr_assert(o.global);
	cr_assert_str_eq(o.oom_memcg, "");
	cr_assert_str_eq(o.task_memcg, "/x");
	cr_assert_str_eq(o.comm, "foo");
	cr_assert_eq(o.pid, 12);
	cr_assert_eq(o.uid, 7);

	/* a cpuset ran out: node lists hold commas, the cpuset is a name */
	cr_assert_eq(summary("oom-kill:constraint=CONSTRAINT_CPUSET,nodemask=0-1,3,cpuset=batch,"
			     "mems_allowed=0-1,3,global_oom,task_memcg=/user.slice/u.service,"
			     "task=bar,pid=4194303,uid=1000",
			     &o),
		     1);
	cr_assert_str_eq(o.constraint, "CONSTRAINT_CPUSET");
	cr_assert(o.global);
	cr_assert_str_eq(o.oom_memcg, "");
	cr_assert_str_eq(o.task_memcg, "/user.slice/u.service");
	cr_assert_eq(o.pid, 4194303);

	cr_assert_eq(summary("oom-kill:constraint=CONSTRAINT_MEMORY_POLICY,nodemask=1,cpuset=/,"
			     "mems_allowed=0-1,global_oom,task_memcg=/,task=baz,pid=3,uid=0",
			     &o),
		     1);
	cr_assert_str_eq(o.constraint, "CONSTRAINT_MEMORY_POLICY");
	cr_assert(o.global);
	cr_assert_str_eq(o.task_memcg, "/");

	/* a kernel without memory cgroups names none: still a global OOM */
	cr_assert_eq(summary("oom-kill:constraint=CONSTRAINT_NONE,nodemask=(null),cpuset=/,"
			     "mems_allowed=0,task=q,pid=9,uid=0",
			     &o),
		     1);
	cr_assert(o.global);
	cr_assert_str_eq(o.oom_memcg, "");
	cr_assert_str_eq(o.task_memcg, "");
	cr_assert_str_eq(o.comm, "q");
	/* there, a cpuset named like the memcg fields names no limit */
	cr_assert_eq(summary("oom-kill:constraint=CONSTRAINT_CPUSET,nodemask=0,cpuset=x,"
			     "oom_memcg=,task_memcg=,mems_allowed=0,task=q,pid=9,uid=0",
			     &o),
		     1);
	cr_assert(o.global);
	cr_assert_str_eq(o.oom_memcg, "");
	cr_assert_str_eq(o.task_memcg, "");
}

Test(kmsg, summary_uid_as_the_kernel_prints_it)
{
	/* "%d" of a uid: above INT32_MAX it prints negative, and -1 is the
	 * kernel's invalid uid; both are uids again here */
	struct kmsg_oom o;
	cr_assert_eq(summary("oom-kill:constraint=CONSTRAINT_NONE,nodemask=(null),cpuset=/,"
			     "mems_allowed=0,global_oom,task_memcg=/,task=a,pid=5,uid=-2",
			     &o),
		     1);
	cr_assert_eq(o.uid, 4294967294ll);
	cr_assert_eq(summary("oom-kill:constraint=CONSTRAINT_NONE,nodemask=(null),cpuset=/,"
			     "mems_allowed=0,global_oom,task_memcg=/,task=a,pid=5,uid=-1",
			     &o),
		     1);
	cr_assert_eq(o.uid, 4294967295ll);
}

Test(kmsg, summary_comm_holding_the_markers)
{
	/* prctl(PR_SET_NAME) takes any 15 bytes: ",pid=" and ",task=" too */
	struct kmsg_oom o;
	cr_assert_eq(summary("oom-kill:constraint=CONSTRAINT_MEMCG,nodemask=(null),cpuset=/,"
			     "mems_allowed=0,oom_memcg=/r,task_memcg=/r,task=a,task=b,pid=7,"
			     "pid=2479,uid=0",
			     &o),
		     1);
	cr_assert_str_eq(o.comm, "a,task=b,pid=7");
	cr_assert_eq(o.pid, 2479);
	cr_assert_str_eq(o.task_memcg, "/r");

	cr_assert_eq(summary("oom-kill:constraint=CONSTRAINT_MEMCG,nodemask=(null),cpuset=/,"
			     "mems_allowed=0,oom_memcg=/r,task_memcg=/r,task=x,pid=1,uid=2,"
			     "pid=31,uid=1000",
			     &o),
		     1);
	cr_assert_str_eq(o.comm, "x,pid=1,uid=2");
	cr_assert_eq(o.pid, 31);
	cr_assert_eq(o.uid, 1000);

	/* ')', ' (' and spaces */
	cr_assert_eq(summary("oom-kill:constraint=CONSTRAINT_MEMCG,nodemask=(null),cpuset=/,"
			     "mems_allowed=0,oom_memcg=/r,task_memcg=/r,task=a (b) c,pid=8,uid=0",
			     &o),
		     1);
	cr_assert_str_eq(o.comm, "a (b) c");

	/* the empty name, and fifteen escaped bytes (sixty characters) */
	cr_assert_eq(summary("oom-kill:constraint=CONSTRAINT_MEMCG,nodemask=(null),cpuset=/,"
			     "mems_allowed=0,oom_memcg=/r,task_memcg=/r,task=,pid=8,uid=0",
			     &o),
		     1);
	cr_assert_str_eq(o.comm, "");
	static const char esc15[] = "\\x01\\x02\\x03\\x04\\x05\\x06\\x07\\x08\\x09\\x0a\\x0b"
				    "\\x0c\\x0d\\x0e\\x5c";
	char line[512];
	snprintf(line, sizeof line,
		 "oom-kill:constraint=CONSTRAINT_MEMCG,nodemask=(null),cpuset=/,"
		 "mems_allowed=0,oom_memcg=/r,task_memcg=/r,task=%s,pid=8,uid=0",
		 esc15);
	cr_assert_eq(summary(line, &o), 1);
	cr_assert_str_eq(o.comm, esc15);
	/* sixteen is no comm */
	snprintf(line, sizeof line,
		 "oom-kill:constraint=CONSTRAINT_MEMCG,nodemask=(null),cpuset=/,"
		 "mems_allowed=0,oom_memcg=/r,task_memcg=/r,task=%sx,pid=8,uid=0",
		 esc15);
	cr_assert_eq(summary(line, &o), -EINVAL);
}

Test(kmsg, summary_cgroups_named_after_the_markers)
{
	struct kmsg_oom o;
	/* the victim's own cgroup (delegated to it) named to look like a field */
	cr_assert_eq(summary("oom-kill:constraint=CONSTRAINT_MEMCG,nodemask=(null),cpuset=/,"
			     "mems_allowed=0,oom_memcg=/d,task_memcg=/d/x,task_memcg=/e,task=t,"
			     "pid=5,uid=0",
			     &o),
		     1);
	cr_assert_str_eq(o.oom_memcg, "/d");
	cr_assert_str_eq(o.task_memcg, "/d/x,task_memcg=/e");

	/* the limit on such a cgroup: task_memcg is oom_memcg or below it */
	cr_assert_eq(summary("oom-kill:constraint=CONSTRAINT_MEMCG,nodemask=(null),cpuset=/,"
			     "mems_allowed=0,oom_memcg=/d/x,task_memcg=/e,task_memcg=/d/x,"
			     "task_memcg=/e,task=t,pid=5,uid=0",
			     &o),
		     1);
	cr_assert_str_eq(o.oom_memcg, "/d/x,task_memcg=/e");
	cr_assert_str_eq(o.task_memcg, "/d/x,task_memcg=/e");

	/* a cpuset name (no '/') holding ",oom_memcg=" */
	cr_assert_eq(summary("oom-kill:constraint=CONSTRAINT_MEMCG,nodemask=(null),"
			     "cpuset=c,oom_memcg=,task_memcg=z,mems_allowed=0,oom_memcg=/real,"
			     "task_memcg=/real/v,task=t,pid=5,uid=0",
			     &o),
		     1);
	cr_assert_str_eq(o.oom_memcg, "/real");
	cr_assert_str_eq(o.task_memcg, "/real/v");

	/* a global OOM whose victim's cgroup reads like a limit that fired:
	 * the constraint, first and free of commas, decides */
	cr_assert_eq(summary("oom-kill:constraint=CONSTRAINT_NONE,nodemask=(null),cpuset=/,"
			     "mems_allowed=0,global_oom,task_memcg=/d/x,oom_memcg=/d,"
			     "task_memcg=/d/x,task=t,pid=5,uid=0",
			     &o),
		     1);
	cr_assert(o.global);
	cr_assert_str_eq(o.oom_memcg, "");
	cr_assert_str_eq(o.task_memcg, "/d/x,oom_memcg=/d,task_memcg=/d/x");

	/* a cpuset name holding ",global_oom,task_memcg=": a path starts
	 * with '/', which no name holds */
	cr_assert_eq(summary("oom-kill:constraint=CONSTRAINT_NONE,nodemask=(null),"
			     "cpuset=c,global_oom,task_memcg=,mems_allowed=0,global_oom,"
			     "task_memcg=/real/v,task=t,pid=5,uid=0",
			     &o),
		     1);
	cr_assert(o.global);
	cr_assert_str_eq(o.task_memcg, "/real/v");

	/* a path the kernel could not print: the markers as they stand */
	cr_assert_eq(summary("oom-kill:constraint=CONSTRAINT_MEMCG,nodemask=(null),cpuset=/,"
			     "mems_allowed=0,oom_memcg=(name too long),task_memcg=(name too long),"
			     "task=t,pid=5,uid=0",
			     &o),
		     1);
	cr_assert_str_eq(o.oom_memcg, "(name too long)");
	cr_assert_str_eq(o.task_memcg, "(name too long)");
}

Test(kmsg, summary_malformed)
{
	static const char *const bad[] = {
		"oom-kill:",
		"oom-kill:constraint=",
		"oom-kill:constraint=CONSTRAINT_MEMCG",
		"oom-kill:constraint=constraint_memcg,task=a,pid=1,uid=0",
		"oom-kill:constraint=CONSTRAINT_THAT_IS_FAR_TOO_LONG_FOR_ITS_FIELD,nodemask=(null),"
		"cpuset=/,mems_allowed=0,global_oom,task_memcg=/,task=a,pid=1,uid=0",
		/* a memcg OOM without its memcg */
		"oom-kill:constraint=CONSTRAINT_MEMCG,nodemask=(null),cpuset=/,mems_allowed=0,"
		"global_oom,task_memcg=/,task=a,pid=1,uid=0",
		/* pids out of range */
		"oom-kill:constraint=CONSTRAINT_NONE,nodemask=(null),cpuset=/,mems_allowed=0,"
		"global_oom,task_memcg=/,task=a,pid=0,uid=0",
		"oom-kill:constraint=CONSTRAINT_NONE,nodemask=(null),cpuset=/,mems_allowed=0,"
		"global_oom,task_memcg=/,task=a,pid=-5,uid=0",
		"oom-kill:constraint=CONSTRAINT_NONE,nodemask=(null),cpuset=/,mems_allowed=0,"
		"global_oom,task_memcg=/,task=a,pid=4194304,uid=0",
		"oom-kill:constraint=CONSTRAINT_NONE,nodemask=(null),cpuset=/,mems_allowed=0,"
		"global_oom,task_memcg=/,task=a,pid=18446744073709551617,uid=0",
		/* uids that no "%d" prints */
		"oom-kill:constraint=CONSTRAINT_NONE,nodemask=(null),cpuset=/,mems_allowed=0,"
		"global_oom,task_memcg=/,task=a,pid=1,uid=2147483648",
		"oom-kill:constraint=CONSTRAINT_NONE,nodemask=(null),cpuset=/,mems_allowed=0,"
		"global_oom,task_memcg=/,task=a,pid=1,uid=99999999999999999999999",
		"oom-kill:constraint=CONSTRAINT_NONE,nodemask=(null),cpuset=/,mems_allowed=0,"
		"global_oom,task_memcg=/,task=a,pid=1,uid=0x",
		"oom-kill:constraint=CONSTRAINT_NONE,nodemask=(null),cpuset=/,mems_allowed=0,"
		"global_oom,task_memcg=/,task=a,pid=1,uid=",
		/* no ",task=" within a comm's reach of ",pid=" */
		"oom-kill:constraint=CONSTRAINT_NONE,nodemask=(null),cpuset=/,mems_allowed=0,"
		"global_oom,task_memcg=/,task=aaaaaaaaaaaaaaaa,pid=1,uid=0",
		"oom-kill:constraint=CONSTRAINT_NONE,pid=1,uid=0",
	};
	for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
		struct kmsg_oom o;
		cr_assert_eq(summary(bad[i], &o), -EINVAL, "%s", bad[i]);
		/* nothing half-filled is left behind */
		cr_assert_eq(o.pid, 0, "%s", bad[i]);
		cr_assert_str_eq(o.constraint, "", "%s", bad[i]);
		cr_assert_not(o.have_summary);
	}
}

Test(kmsg, summary_path_longer_than_its_field)
{
	/* the kernel cannot print one (a record is at most 1 KiB raw) */
	size_t n = PATH_MAX + 10;
	char *line = malloc(n + 256);
	char *path = malloc(n + 1);
	memset(path, 'p', n);
	path[0] = '/';
	path[n] = '\0';
	snprintf(line, n + 256,
		 "oom-kill:constraint=CONSTRAINT_NONE,nodemask=(null),cpuset=/,mems_allowed=0,"
		 "global_oom,task_memcg=%s,task=a,pid=1,uid=0",
		 path);
	struct kmsg_oom o;
	cr_assert_eq(summary(line, &o), -EINVAL);
	free(line);
	free(path);
}

Test(kmsg, summary_every_cut_is_refused)
{
	/* Only the whole line parses; an exactly-sized copy lets ASan see an
	 * overread at every length. */
	const char *full = REAL_SUMMARY;
	for (size_t n = 0; n < strlen(full); n++) {
		char *cut = malloc(n ? n : 1);
		memcpy(cut, full, n);
		struct kmsg_oom o;
		int rc = kmsg_parse_summary(cut, n, &o);
		cr_assert(rc == 0 || rc == -EINVAL, "cut at %zu: %d", n, rc);
		cr_assert_eq(rc, n < strlen("oom-kill:") ? 0 : -EINVAL, "cut at %zu", n);
		cr_assert_eq(kmsg_parse_killed(cut, n, &o), 0, "cut at %zu", n);
		free(cut);
	}
}

/* ---- the killed line ------------------------------------------------------------- */

Test(kmsg, killed_real_line)
{
	struct kmsg_oom o;
	cr_assert_eq(killed(REAL_KILLED, &o), 1);
	cr_assert(o.have_killed);
	cr_assert_not(o.have_summary);
	cr_assert_str_eq(o.reason, "Memory cgroup out of memory");
	cr_assert_eq(o.pid, 2479);
	cr_assert_str_eq(o.comm, "grower");
	cr_assert_eq(o.total_vm_kb, 125232);
	cr_assert_eq(o.anon_rss_kb, 97384);
	cr_assert_eq(o.file_rss_kb, 1084);
	cr_assert_eq(o.shmem_rss_kb, 0);
	cr_assert_eq(o.pgtables_kb, 228);
	cr_assert_eq(o.uid, 0);
	cr_assert(o.have_score_adj);
	cr_assert_eq(o.oom_score_adj, 0);
	/* what only the summary says stays unknown */
	cr_assert_str_eq(o.constraint, "");
	cr_assert_str_eq(o.oom_memcg, "");
	cr_assert_not(o.global);
}

Test(kmsg, killed_older_formats)
{
	struct kmsg_oom o;
	/* UID, no pgtables or oom_score_adj */
	cr_assert_eq(killed("Out of memory: Killed process 812 (java) total-vm:4194304kB, "
			    "anon-rss:2097152kB, file-rss:0kB, shmem-rss:16kB, UID:1000",
			    &o),
		     1);
	cr_assert_str_eq(o.reason, "Out of memory");
	cr_assert_eq(o.pid, 812);
	cr_assert_eq(o.uid, 1000);
	cr_assert_eq(o.shmem_rss_kb, 16);
	cr_assert_eq(o.pgtables_kb, UINT64_MAX);
	cr_assert_not(o.have_score_adj);
	/* no reason before it, four sizes */
	cr_assert_eq(killed("Killed process 77 (python3) total-vm:1000kB, anon-rss:800kB, "
			    "file-rss:12kB, shmem-rss:0kB",
			    &o),
		     1);
	cr_assert_str_eq(o.reason, "");
	cr_assert_str_eq(o.comm, "python3");
	cr_assert_eq(o.anon_rss_kb, 800);
	cr_assert_eq(o.uid, -1);
	/* the oldest: three */
	cr_assert_eq(killed("Killed process 77 (a) total-vm:1kB, anon-rss:2kB, file-rss:3kB", &o), 1);
	cr_assert_eq(o.file_rss_kb, 3);
	cr_assert_eq(o.shmem_rss_kb, UINT64_MAX);
	/* oom_kill_allocating_task, and a negative oom_score_adj */
	cr_assert_eq(killed("Out of memory (oom_kill_allocating_task): Killed process 5 (x) "
			    "total-vm:1kB, anon-rss:2kB, file-rss:3kB, shmem-rss:4kB, UID:0 "
			    "pgtables:5kB oom_score_adj:-1000",
			    &o),
		     1);
	cr_assert_str_eq(o.reason, "Out of memory (oom_kill_allocating_task)");
	cr_assert_eq(o.oom_score_adj, -1000);
	/* an item a later kernel may add is skipped */
	cr_assert_eq(killed("Out of memory: Killed process 5 (x) total-vm:1kB, anon-rss:2kB, "
			    "file-rss:3kB, shmem-rss:4kB, UID:0 pgtables:5kB oom_score_adj:1000 "
			    "swapents:7",
			    &o),
		     1);
	cr_assert_eq(o.oom_score_adj, 1000);
	cr_assert_eq(o.pgtables_kb, 5);
}

Test(kmsg, killed_comm_holding_the_markers)
{
	struct kmsg_oom o;
	/* ") total-vm:" itself, in fifteen bytes */
	cr_assert_eq(killed("Out of memory: Killed process 9 (x) total-vm:1kB) total-vm:5kB, "
			    "anon-rss:6kB, file-rss:7kB, shmem-rss:0kB",
			    &o),
		     1);
	cr_assert_str_eq(o.comm, "x) total-vm:1kB");
	cr_assert_eq(o.total_vm_kb, 5);
	/* parentheses, spaces, commas, "pid=" */
	cr_assert_eq(killed("Out of memory: Killed process 9 (a (b) c,pid=1) total-vm:5kB, "
			    "anon-rss:6kB, file-rss:7kB",
			    &o),
		     1);
	cr_assert_str_eq(o.comm, "a (b) c,pid=1");
	/* "Killed process " in the comm */
	cr_assert_eq(killed("Out of memory: Killed process 9 (Killed process ) total-vm:5kB, "
			    "anon-rss:6kB, file-rss:7kB",
			    &o),
		     1);
	cr_assert_str_eq(o.comm, "Killed process ");
	cr_assert_eq(o.pid, 9);
	/* escapes kept as printed */
	cr_assert_eq(killed("Out of memory: Killed process 9 (a\\x0ab\\x5c) total-vm:5kB, "
			    "anon-rss:6kB, file-rss:7kB",
			    &o),
		     1);
	cr_assert_str_eq(o.comm, "a\\x0ab\\x5c");
	/* sixteen bytes is no comm */
	cr_assert_eq(killed("Out of memory: Killed process 9 (0123456789abcdef) total-vm:5kB, "
			    "anon-rss:6kB, file-rss:7kB",
			    &o),
		     -EINVAL);
}

Test(kmsg, killed_malformed)
{
	static const char *const bad[] = {
		"Out of memory: Killed process ",
		"Out of memory: Killed process 5",
		"Out of memory: Killed process 5 (x",
		"Out of memory: Killed process 5 (x)",
		"Out of memory: Killed process 5 (x) ",
		"Out of memory: Killed process 5 (x) total-vm:",
		"Out of memory: Killed process 5 (x) total-vm:1kB",
		"Out of memory: Killed process 5 (x) total-vm:1kB, anon-rss:2kB, file-rss:3kB,",
		"Out of memory: Killed process 5 (x) total-vm:1kB, anon-rss:2kB, file-rss:3k",
		"Out of memory: Killed process 5 (x) total-vm:1, anon-rss:2kB, file-rss:3kB",
		"Out of memory: Killed process 5 (x) total-vm:kB, anon-rss:2kB, file-rss:3kB",
		"Out of memory: Killed process 5 (x) total-vm:-1kB, anon-rss:2kB, file-rss:3kB",
		"Out of memory: Killed process 5 (x) total-vm:1kB, anon-rss:2kB, file-rss:3kB, stray",
		/* overflow */
		"Out of memory: Killed process 5 (x) total-vm:18446744073709551616kB, anon-rss:2kB, "
		"file-rss:3kB",
		"Out of memory: Killed process 5 (x) total-vm:1kB, anon-rss:2kB, file-rss:3kB, "
		"UID:4294967296",
		"Out of memory: Killed process 5 (x) total-vm:1kB, anon-rss:2kB, file-rss:3kB, "
		"UID:-1",
		"Out of memory: Killed process 5 (x) total-vm:1kB, anon-rss:2kB, file-rss:3kB, "
		"UID:0 pgtables:1kB oom_score_adj:1001",
		"Out of memory: Killed process 5 (x) total-vm:1kB, anon-rss:2kB, file-rss:3kB, "
		"UID:0 pgtables:1kB oom_score_adj:",
		/* said twice */
		"Out of memory: Killed process 5 (x) total-vm:1kB, anon-rss:2kB, file-rss:3kB, "
		"total-vm:9kB",
		/* pids */
		"Out of memory: Killed process 0 (x) total-vm:1kB, anon-rss:2kB, file-rss:3kB",
		"Out of memory: Killed process -5 (x) total-vm:1kB, anon-rss:2kB, file-rss:3kB",
		"Out of memory: Killed process 4194304 (x) total-vm:1kB, anon-rss:2kB, file-rss:3kB",
		"Out of memory: Killed process 99999999999999999999999 (x) total-vm:1kB, anon-rss:2kB, "
		"file-rss:3kB",
		"Out of memory: Killed process 5(x) total-vm:1kB, anon-rss:2kB, file-rss:3kB",
	};
	for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
		struct kmsg_oom o;
		cr_assert_eq(killed(bad[i], &o), -EINVAL, "%s", bad[i]);
		cr_assert_eq(o.pid, 0, "%s", bad[i]);
		cr_assert_eq(o.total_vm_kb, UINT64_MAX, "%s", bad[i]);
		cr_assert_not(o.have_killed);
	}
}

Test(kmsg, killed_every_cut_is_refused_or_an_older_line)
{
	/* A cut at the end of an item reads as an older kernel's line (they
	 * end at file-rss, shmem-rss or UID), and no whole message of those
	 * can be told from it; any other cut is refused, and no cut yields a
	 * number the whole line does not have. */
	const char *full = REAL_KILLED;
	struct kmsg_oom whole;
	cr_assert_eq(killed(full, &whole), 1);
	const char *ends[] = { "file-rss:1084kB", "shmem-rss:0kB", "UID:0", "pgtables:228kB" };
	size_t accepted = 0;
	for (size_t n = 0; n < strlen(full); n++) {
		char *cut = malloc(n ? n : 1);
		memcpy(cut, full, n);
		struct kmsg_oom o;
		int rc = kmsg_parse_killed(cut, n, &o);
		cr_assert(rc == 0 || rc == -EINVAL || rc == 1, "cut at %zu: %d", n, rc);
		if (rc == 1) {
			int at_end = 0;
			for (size_t i = 0; i < sizeof ends / sizeof *ends; i++) {
				const char *at = strstr(full, ends[i]);
				at_end |= (size_t)(at + strlen(ends[i]) - full) == n;
			}
			cr_assert(at_end, "cut at %zu parsed: %.*s", n, (int)n, full);
			accepted++;
			cr_assert_eq(o.pid, whole.pid);
			cr_assert_str_eq(o.comm, whole.comm);
			cr_assert_eq(o.total_vm_kb, whole.total_vm_kb);
			cr_assert_eq(o.anon_rss_kb, whole.anon_rss_kb);
			cr_assert_eq(o.file_rss_kb, whole.file_rss_kb);
			cr_assert(o.shmem_rss_kb == UINT64_MAX || o.shmem_rss_kb == whole.shmem_rss_kb);
			cr_assert(o.pgtables_kb == UINT64_MAX || o.pgtables_kb == whole.pgtables_kb);
			cr_assert(o.uid == -1 || o.uid == whole.uid);
			cr_assert_not(o.have_score_adj);
		}
		cr_assert_eq(kmsg_parse_summary(cut, n, &o), 0);
		free(cut);
	}
	cr_assert_eq(accepted, sizeof ends / sizeof *ends);
}

Test(kmsg, other_lines_are_not_kills)
{
	static const char *const other[] = {
		"oom_reaper: reaped process 2479 (grower), now anon-rss:0kB, file-rss:0kB, "
		"shmem-rss:0kB",
		"grower invoked oom-killer: gfp_mask=0xcc0(GFP_KERNEL), order=0, oom_score_adj=0",
		"[  pid  ]   uid  tgid total_vm      rss rss_anon rss_file rss_shmem pgtables_bytes "
		"swapents oom_score_adj name",
		"Memory cgroup stats for /process_api:",
		"Out of memory: Kill process 5 (x) score 900 or sacrifice child",
		"Tasks in /a are going to be killed due to memory.oom.group set",
		"someone said Killed process 5 (x) total-vm:1kB, anon-rss:2kB, file-rss:3kB",
		" oom-kill:constraint=CONSTRAINT_NONE,task=a,pid=1,uid=0",
		"",
	};
	for (size_t i = 0; i < sizeof other / sizeof *other; i++) {
		struct kmsg_oom o;
		cr_assert_eq(summary(other[i], &o), 0, "%s", other[i]);
		cr_assert_eq(killed(other[i], &o), 0, "%s", other[i]);
	}
}

/* ---- why it cannot be read ---------------------------------------------------------- */

Test(kmsg, explain_in_words)
{
	char why[KMSG_WHY_BYTES];
	kmsg_explain(-EPERM, 1, why, sizeof why);
	cr_assert(strstr(why, "kernel.dmesg_restrict=1 and memsup lacks CAP_SYSLOG"), "%s", why);
	kmsg_explain(-EPERM, 0, why, sizeof why);
	cr_assert(strstr(why, "dmesg_restrict=0"), "%s", why);
	kmsg_explain(-EPERM, -1, why, sizeof why);
	cr_assert(strstr(why, "CAP_SYSLOG"), "%s", why);
	kmsg_explain(-ENOENT, -1, why, sizeof why);
	cr_assert(strstr(why, "container"), "%s", why);
	kmsg_explain(-EMFILE, -1, why, sizeof why);
	cr_assert(strstr(why, strerror(EMFILE)), "%s", why);
	/* cut to fit, NUL-terminated */
	char small[8];
	kmsg_explain(-EPERM, 1, small, sizeof small);
	cr_assert_eq(strlen(small), sizeof small - 1);
}

/* ---- the reader over files and FIFOs --------------------------------------------------- */

static char tmpdir[] = "/tmp/test_kmsg.XXXXXX";

static const char *tmp_path(const char *name)
{
	static char path[512];
	if (strstr(tmpdir, "XXXXXX")) {
		cr_assert_not_null(mkdtemp(tmpdir));
		tmp_adopt(tmpdir);
	}
	snprintf(path, sizeof path, "%s/%s", tmpdir, name);
	return path;
}

static void put(int fd, const char *text)
{
	size_t n = strlen(text);
	cr_assert_eq(write(fd, text, n), (ssize_t)n);
}

/* A reader over a file holding `text` (read from its start). */
static struct kmsg *over_file(const char *text)
{
	int fd = open(tmp_path("log"), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	cr_assert_geq(fd, 0);
	put(fd, text);
	cr_assert_eq(lseek(fd, 0, SEEK_SET), 0);
	struct kmsg *k;
	cr_assert_eq(kmsg_open_fd(&k, fd, 0), 0);
	return k;
}

/* The summary and killed records of one kill, as the kernel numbers them. */
static void kill_lines(char *s, size_t cap, unsigned seq, int pid, const char *comm)
{
	snprintf(s, cap,
		 "6,%u,%u000,-;oom-kill:constraint=CONSTRAINT_MEMCG,nodemask=(null),cpuset=/,"
		 "mems_allowed=0,oom_memcg=/j,task_memcg=/j/t,task=%s,pid=%d,uid=1\n"
		 "3,%u,%u001,-;Memory cgroup out of memory: Killed process %d (%s) total-vm:10kB, "
		 "anon-rss:%dkB, file-rss:1kB, shmem-rss:0kB, UID:1 pgtables:4kB oom_score_adj:0\n",
		 seq, seq, comm, pid, seq + 1, seq, pid, comm, pid);
}

Test(kmsg, reader_real_pair_in_one_buffer)
{
	/* a file gives several records a read: split by lines; dictionaries
	 * and other records between them are passed over */
	struct kmsg *k = over_file(
		"4,3079,7679003580,-;grower invoked oom-killer: gfp_mask=0xcc0(GFP_KERNEL)\n"
		" SUBSYSTEM=memory\n"
		" oom-kill:constraint=CONSTRAINT_NONE,task=dict,pid=1,uid=0\n"
		"6,3076,7672463244,-;" REAL_SUMMARY "\n"
		"6,3077,7672463250,-;[ 2479]     0  2479    31308    24617    24346      271"
		"         0   229376        0             0 grower\n"
		"3,3078,7672463267,-;" REAL_KILLED "\n"
		" DEVICE=+memory:x\n"
		"6,3079,7672463300,-;oom_reaper: reaped process 2479 (grower), now anon-rss:0kB, "
		"file-rss:0kB, shmem-rss:0kB\n");
	cr_assert_eq(kmsg_read_new(k), 1);
	const struct kmsg_oom *v;
	cr_assert_eq(kmsg_kills(k, &v), 1);
	cr_assert(v[0].have_summary && v[0].have_killed);
	cr_assert_eq(v[0].seq, 3076);
	cr_assert_eq(v[0].ts_us, 7672463244ull);
	cr_assert_eq(v[0].pid, 2479);
	cr_assert_str_eq(v[0].comm, "grower");
	cr_assert_str_eq(v[0].oom_memcg, REAL_CG);
	cr_assert_str_eq(v[0].reason, "Memory cgroup out of memory");
	cr_assert_eq(v[0].anon_rss_kb, 97384);
	cr_assert_eq(v[0].uid, 0);
	/* nothing more: 0, and the kill stays */
	cr_assert_eq(kmsg_read_new(k), 0);
	cr_assert_eq(kmsg_kills(k, &v), 1);
	struct kmsg_stats st;
	kmsg_stats(k, &st);
	cr_assert_eq(st.bad, 0);
	cr_assert_eq(st.forged, 0);
	kmsg_close(k);
}

Test(kmsg, reader_summary_alone_then_killed_line)
{
	/* woken by the oom_kill counter between the two lines */
	int fd = open(tmp_path("log"), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	int wfd = open(tmp_path("log"), O_WRONLY | O_APPEND | O_CLOEXEC);
	cr_assert(fd >= 0 && wfd >= 0);
	struct kmsg *k;
	cr_assert_eq(kmsg_open_fd(&k, fd, 0), 0);
	put(wfd, "6,3076,7672463244,-;" REAL_SUMMARY "\n");
	cr_assert_eq(kmsg_read_new(k), 1);
	const struct kmsg_oom *v;
	cr_assert_eq(kmsg_kills(k, &v), 1);
	cr_assert(v[0].have_summary);
	cr_assert_not(v[0].have_killed);
	cr_assert_eq(v[0].total_vm_kb, UINT64_MAX);
	put(wfd, "3,3077,7672463267,-;" REAL_KILLED "\n");
	cr_assert_eq(kmsg_read_new(k), 1, "the kill completed counts");
	cr_assert_eq(kmsg_kills(k, &v), 1);
	cr_assert(v[0].have_killed);
	cr_assert_eq(v[0].seq, 3076);
	cr_assert_eq(v[0].total_vm_kb, 125232);
	close(wfd);
	kmsg_close(k);
}

Test(kmsg, reader_killed_line_settles_the_comm)
{
	/* a cgroup path ending in ",task=b" reads, in the summary alone, as
	 * the comm "b,task=grower"; the killed line's comm, fixed at both
	 * ends, settles it and gives the path its end back */
	struct kmsg *k = over_file(
		"6,10,1000,-;oom-kill:constraint=CONSTRAINT_MEMCG,nodemask=(null),cpuset=/,"
		"mems_allowed=0,oom_memcg=/j,task_memcg=/j/a,task=b,task=grower,pid=5,uid=0\n");
	cr_assert_eq(kmsg_read_new(k), 1);
	const struct kmsg_oom *v;
	cr_assert_eq(kmsg_kills(k, &v), 1);
	cr_assert_str_eq(v[0].comm, "b,task=grower");
	cr_assert_str_eq(v[0].task_memcg, "/j/a");
	kmsg_close(k);
	k = over_file(
		"6,10,1000,-;oom-kill:constraint=CONSTRAINT_MEMCG,nodemask=(null),cpuset=/,"
		"mems_allowed=0,oom_memcg=/j,task_memcg=/j/a,task=b,task=grower,pid=5,uid=0\n"
		"3,11,1001,-;Memory cgroup out of memory: Killed process 5 (grower) total-vm:1kB, "
		"anon-rss:1kB, file-rss:0kB\n");
	cr_assert_eq(kmsg_read_new(k), 1);
	cr_assert_eq(kmsg_kills(k, &v), 1);
	cr_assert_str_eq(v[0].comm, "grower");
	cr_assert_str_eq(v[0].task_memcg, "/j/a,task=b");
	cr_assert_str_eq(v[0].oom_memcg, "/j");
	kmsg_close(k);
	/* the same comm both ways: nothing moves */
	k = over_file(
		"6,10,1000,-;oom-kill:constraint=CONSTRAINT_MEMCG,nodemask=(null),cpuset=/,"
		"mems_allowed=0,oom_memcg=/j,task_memcg=/j/a,task=x,task=y,pid=5,uid=0\n"
		"3,11,1001,-;Memory cgroup out of memory: Killed process 5 (x,task=y) total-vm:1kB, "
		"anon-rss:1kB, file-rss:0kB\n");
	cr_assert_eq(kmsg_read_new(k), 1);
	cr_assert_eq(kmsg_kills(k, &v), 1);
	cr_assert_str_eq(v[0].comm, "x,task=y");
	cr_assert_str_eq(v[0].task_memcg, "/j/a");
	kmsg_close(k);
}

Test(kmsg, reader_killed_line_alone)
{
	struct kmsg *k = over_file("3,3077,7672463267,-;" REAL_KILLED "\n");
	cr_assert_eq(kmsg_read_new(k), 1);
	const struct kmsg_oom *v;
	cr_assert_eq(kmsg_kills(k, &v), 1);
	cr_assert_not(v[0].have_summary);
	cr_assert(v[0].have_killed);
	cr_assert_eq(v[0].seq, 3077);
	cr_assert_eq(v[0].ts_us, 7672463267ull);
	cr_assert_eq(v[0].pid, 2479);
	cr_assert_str_eq(v[0].oom_memcg, "");
	kmsg_close(k);
}

Test(kmsg, reader_interleaved_kills)
{
	/* two cgroups' OOMs on two CPUs: summaries A, B, then B's and A's
	 * killed lines; and an oom.group member killed under A's summary */
	struct kmsg *k = over_file(
		"6,10,1000,-;oom-kill:constraint=CONSTRAINT_MEMCG,nodemask=(null),cpuset=/,"
		"mems_allowed=0,oom_memcg=/a,task_memcg=/a,task=one,pid=100,uid=0\n"
		"6,11,1001,-;oom-kill:constraint=CONSTRAINT_MEMCG,nodemask=(null),cpuset=/,"
		"mems_allowed=0,oom_memcg=/b,task_memcg=/b/c,task=two,pid=200,uid=0\n"
		"3,12,1002,-;Memory cgroup out of memory: Killed process 200 (two) total-vm:2kB, "
		"anon-rss:2kB, file-rss:0kB, shmem-rss:0kB, UID:0 pgtables:4kB oom_score_adj:0\n"
		"3,13,1003,-;Memory cgroup out of memory: Killed process 100 (one) total-vm:1kB, "
		"anon-rss:1kB, file-rss:0kB, shmem-rss:0kB, UID:0 pgtables:4kB oom_score_adj:0\n"
		"3,14,1004,-;Memory cgroup out of memory: Killed process 101 (one-helper) "
		"total-vm:3kB, anon-rss:3kB, file-rss:0kB, shmem-rss:0kB, UID:0 pgtables:4kB "
		"oom_score_adj:0\n");
	cr_assert_eq(kmsg_read_new(k), 3);
	const struct kmsg_oom *v;
	cr_assert_eq(kmsg_kills(k, &v), 3);
	cr_assert_eq(v[0].pid, 100);
	cr_assert_str_eq(v[0].oom_memcg, "/a");
	cr_assert(v[0].have_killed);
	cr_assert_eq(v[0].anon_rss_kb, 1);
	cr_assert_eq(v[1].pid, 200);
	cr_assert_str_eq(v[1].oom_memcg, "/b");
	cr_assert_str_eq(v[1].task_memcg, "/b/c");
	cr_assert(v[1].have_killed);
	cr_assert_eq(v[1].anon_rss_kb, 2);
	cr_assert_eq(v[2].pid, 101);
	cr_assert_not(v[2].have_summary);
	cr_assert_eq(v[2].anon_rss_kb, 3);
	kmsg_close(k);
}

Test(kmsg, reader_a_reused_pid_is_another_kill)
{
	/* a summary whose killed line was lost, and much later another
	 * process with that pid killed */
	char later[1024];
	snprintf(later, sizeof later,
		 "6,10,1000,-;oom-kill:constraint=CONSTRAINT_MEMCG,nodemask=(null),cpuset=/,"
		 "mems_allowed=0,oom_memcg=/a,task_memcg=/a,task=one,pid=100,uid=0\n"
		 "3,90000,9000,-;Out of memory: Killed process 100 (other) total-vm:1kB, "
		 "anon-rss:1kB, file-rss:0kB\n"
		 "3,90001,9001,-;Out of memory: Killed process 100 (other) total-vm:1kB, "
		 "anon-rss:1kB, file-rss:0kB\n");
	struct kmsg *k = over_file(later);
	cr_assert_eq(kmsg_read_new(k), 3);
	const struct kmsg_oom *v;
	cr_assert_eq(kmsg_kills(k, &v), 3);
	cr_assert(v[0].have_summary);
	cr_assert_not(v[0].have_killed);
	cr_assert_str_eq(v[1].comm, "other");
	cr_assert_not(v[1].have_summary);
	cr_assert_not(v[2].have_summary);
	kmsg_close(k);
}

Test(kmsg, reader_forged_and_broken_lines)
{
	/* facility 1 (LOG_USER): what a process writing to /dev/kmsg gets */
	struct kmsg *k = over_file(
		"14,20,1000,-;" REAL_SUMMARY "\n"
		"11,21,1000,-;" REAL_KILLED "\n"
		"6,22,1000,-;oom-kill:constraint=CONSTRAINT_MEMCG,pid=0,uid=0\n"
		"3,23,1000,-;Out of memory: Killed process 5 (x) total-vm:1kB\n"
		"garbage without a header\n"
		"\n");
	cr_assert_eq(kmsg_read_new(k), 0);
	const struct kmsg_oom *v;
	cr_assert_eq(kmsg_kills(k, &v), 0);
	struct kmsg_stats st;
	kmsg_stats(k, &st);
	cr_assert_eq(st.forged, 2);
	cr_assert_eq(st.bad, 2);
	kmsg_close(k);
}

Test(kmsg, reader_partial_line_waits_for_its_end, .timeout = 10)
{
	const char *fifo = tmp_path("fifo");
	cr_assert_eq(mkfifo(fifo, 0600), 0);
	int fd = open(fifo, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	int wfd = open(fifo, O_WRONLY | O_CLOEXEC);
	cr_assert(fd >= 0 && wfd >= 0);
	struct kmsg *k;
	cr_assert_eq(kmsg_open_fd(&k, fd, 1), 0, "a FIFO has no past to skip");
	/* nothing yet: EAGAIN, no block */
	cr_assert_eq(kmsg_read_new(k), 0);
	/* cut inside the uid: "uid=1" must not be taken for "uid=1000" */
	static const char rec[] = "6,3076,7672463244,-;oom-kill:constraint=CONSTRAINT_MEMCG,"
				  "nodemask=(null),cpuset=/,mems_allowed=0,oom_memcg=/r,"
				  "task_memcg=/r,task=grower,pid=2479,uid=1000\n";
	size_t cut = strstr(rec, "uid=1") + 5 - rec;
	cr_assert_eq(write(wfd, rec, cut), (ssize_t)cut);
	cr_assert_eq(kmsg_read_new(k), 0);
	const struct kmsg_oom *v;
	cr_assert_eq(kmsg_kills(k, &v), 0);
	put(wfd, rec + cut);
	cr_assert_eq(kmsg_read_new(k), 1);
	cr_assert_eq(kmsg_kills(k, &v), 1);
	cr_assert_eq(v[0].uid, 1000);
	/* byte by byte, a dictionary line cut too */
	char both[2048];
	kill_lines(both, sizeof both, 500, 77, "bytewise");
	strcat(both, " SUBSYSTEM=x\n");
	for (size_t i = 0; both[i]; i++) {
		cr_assert_eq(write(wfd, both + i, 1), 1);
		cr_assert_geq(kmsg_read_new(k), 0);
	}
	cr_assert_eq(kmsg_kills(k, &v), 2);
	cr_assert_str_eq(v[1].comm, "bytewise");
	cr_assert(v[1].have_summary && v[1].have_killed);
	close(wfd);
	kmsg_close(k);
}

Test(kmsg, reader_overlong_line_is_dropped)
{
	size_t n = 3 * KMSG_RECORD_MAX;
	char *text = malloc(n + 1024);
	strcpy(text, "6,1,1,-;");
	memset(text + 8, 'x', n);
	text[8 + n] = '\0';
	strcat(text, "\n3,2,2,-;" REAL_KILLED "\n");
	struct kmsg *k = over_file(text);
	cr_assert_eq(kmsg_read_new(k), 1);
	const struct kmsg_oom *v;
	cr_assert_eq(kmsg_kills(k, &v), 1);
	cr_assert_eq(v[0].pid, 2479);
	struct kmsg_stats st;
	kmsg_stats(k, &st);
	cr_assert_eq(st.bad, 1);
	kmsg_close(k);
	free(text);
}

Test(kmsg, reader_overlong_line_tail_is_not_a_record, .timeout = 10)
{
	/* what follows the cut of a dropped line is that line's rest, even
	 * when it reads like a record */
	const char *fifo = tmp_path("fifo");
	cr_assert_eq(mkfifo(fifo, 0600), 0);
	int fd = open(fifo, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	int wfd = open(fifo, O_WRONLY | O_CLOEXEC);
	cr_assert(fd >= 0 && wfd >= 0);
	struct kmsg *k;
	cr_assert_eq(kmsg_open_fd(&k, fd, 0), 0);
	size_t n = KMSG_RECORD_MAX + 100;
	char *head = malloc(n + 1);
	memset(head, 'x', n);
	memcpy(head, "6,1,1,-;", 8);
	head[n] = '\0';
	put(wfd, head);
	cr_assert_eq(kmsg_read_new(k), 0);
	put(wfd, "3,2,2,-;" REAL_KILLED "\n");
	cr_assert_eq(kmsg_read_new(k), 0);
	const struct kmsg_oom *v;
	cr_assert_eq(kmsg_kills(k, &v), 0);
	put(wfd, "3,3,3,-;" REAL_KILLED "\n");
	cr_assert_eq(kmsg_read_new(k), 1);
	struct kmsg_stats st;
	kmsg_stats(k, &st);
	cr_assert_eq(st.bad, 1);
	close(wfd);
	kmsg_close(k);
	free(head);
}

Test(kmsg, reader_table_keeps_the_latest)
{
	size_t total = KMSG_KILLS_MAX + 8, cap = total * 1024;
	char *text = malloc(cap), *p = text;
	for (size_t i = 0; i < total; i++) {
		char name[16];
		snprintf(name, sizeof name, "k%zu", i);
		kill_lines(p, cap - (size_t)(p - text), (unsigned)(10 + 2 * i), (int)(1000 + i), name);
		p += strlen(p);
	}
	struct kmsg *k = over_file(text);
	cr_assert_eq(kmsg_read_new(k), (int)total);
	const struct kmsg_oom *v;
	cr_assert_eq(kmsg_kills(k, &v), KMSG_KILLS_MAX);
	for (size_t i = 0; i < KMSG_KILLS_MAX; i++) {
		cr_assert_eq(v[i].pid, (int)(1000 + 8 + i), "oldest first");
		cr_assert(v[i].have_summary && v[i].have_killed);
	}
	struct kmsg_stats st;
	kmsg_stats(k, &st);
	cr_assert_eq(st.dropped, 8);
	kmsg_close(k);
	free(text);
}

Test(kmsg, open_a_file_skips_what_it_held)
{
	const char *path = tmp_path("old");
	int wfd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	cr_assert_geq(wfd, 0);
	put(wfd, "3,1,1,-;" REAL_KILLED "\n");
	struct kmsg *k;
	char why[KMSG_WHY_BYTES];
	cr_assert_eq(kmsg_open(&k, path, why, sizeof why), 0, "%s", why);
	cr_assert_eq(kmsg_read_new(k), 0, "a kill before opening is not this run's");
	put(wfd, "3,2,2,-;" REAL_KILLED "\n");
	cr_assert_eq(kmsg_read_new(k), 1);
	close(wfd);
	kmsg_close(k);
	/* a missing path: -ENOENT and words */
	cr_assert_eq(kmsg_open(&k, tmp_path("none"), why, sizeof why), -ENOENT);
	cr_assert_neq(why[0], '\0');
	kmsg_close(NULL);
}

/* ---- the real /dev/kmsg --------------------------------------------------------------- */

Test(kmsg, real_dev_kmsg_never_blocks, .timeout = 10)
{
	struct kmsg *k;
	char why[KMSG_WHY_BYTES];
	int rc = kmsg_open(&k, NULL, why, sizeof why);
	if (rc == -EPERM || rc == -ENOENT || rc == -EACCES)
		cr_skip_test("%s", why);
	cr_assert_eq(rc, 0, "%s", why);
	/* from the end: whatever the kernel logs meanwhile, then EAGAIN */
	cr_assert_geq(kmsg_read_new(k), 0);
	cr_assert_geq(kmsg_read_new(k), 0);
	kmsg_close(k);
}

/* Without CAP_SYSLOG (and CAP_SYS_ADMIN, which the kernel also accepts)
 * and with kernel.dmesg_restrict=1, opening fails with EPERM, and the
 * words say why. */
Test(kmsg, real_dev_kmsg_without_cap_syslog, .timeout = 10)
{
	FILE *f = fopen("/proc/sys/kernel/dmesg_restrict", "r");
	int restrict_ = -1;
	if (f) {
		if (fscanf(f, "%d", &restrict_) != 1)
			restrict_ = -1;
		fclose(f);
	}
	if (restrict_ != 1)
		cr_skip_test("kernel.dmesg_restrict is not 1 here");
	if (access(KMSG_DEFAULT_PATH, F_OK) != 0)
		cr_skip_test("no %s", KMSG_DEFAULT_PATH);
	struct __user_cap_header_struct h = { _LINUX_CAPABILITY_VERSION_3, 0 };
	struct __user_cap_data_struct d[2];
	cr_assert_eq(syscall(SYS_capget, &h, d), 0);
	d[CAP_SYSLOG / 32].effective &= ~(1u << (CAP_SYSLOG % 32));
	d[CAP_SYS_ADMIN / 32].effective &= ~(1u << (CAP_SYS_ADMIN % 32));
	if (syscall(SYS_capset, &h, d) != 0)
		cr_skip_test("cannot drop capabilities: %s", strerror(errno));
	struct kmsg *k;
	char why[KMSG_WHY_BYTES];
	int rc = kmsg_open(&k, NULL, why, sizeof why);
	if (rc == -ENOENT)
		cr_skip_test("%s", why);
	cr_assert_eq(rc, -EPERM, "%d: %s", rc, why);
	cr_assert(strstr(why, "kernel.dmesg_restrict=1 and memsup lacks CAP_SYSLOG"), "%s", why);
}
