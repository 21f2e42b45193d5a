/* test_shim_lineage.c: the process-tree tags across fork, every exec
 * variant, posix_spawn, system, popen, vfork, and scrubbed environments. */
#include <criterion/criterion.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "test_shim_harness.h"

struct tree {
	struct shim_run run;
	struct mt_record *recs;
	size_t n;
};

static void tree_run(struct tree *t, const char *mode, const char *const *env, unsigned flags)
{
	const char *argv[] = { "shim_tree", mode, NULL };
	shim_run(&t->run, argv, env, flags);
	cr_assert(WIFEXITED(t->run.status) && WEXITSTATUS(t->run.status) == 0,
		  "%s: status %#x\n%s%s", mode, t->run.status, t->run.out, t->run.err);
	t->n = shim_records(&t->run, &t->recs);
}

static void tree_done(struct tree *t)
{
	free(t->recs);
	shim_done(&t->run);
}

static const struct mt_record *tree_find(const struct tree *t, pid_t pid, uint32_t gen)
{
	for (size_t i = 0; i < t->n; i++)
		if (t->recs[i].pid == pid && t->recs[i].gen == gen)
			return &t->recs[i];
	cr_assert_fail("no record %d.%u among %zu", (int)pid, gen, t->n);
	return NULL;
}

/* The record whose argv[1] is `mode` (the only one). */
static const struct mt_record *tree_mode(const struct tree *t, const char *mode)
{
	const struct mt_record *found = NULL;
	for (size_t i = 0; i < t->n; i++) {
		const char *a1 = shim_argv(&t->recs[i], 1);
		if (a1 && !strcmp(a1, mode)) {
			cr_assert_null(found, "two records run %s", mode);
			found = &t->recs[i];
		}
	}
	cr_assert_not_null(found, "no record runs %s", mode);
	return found;
}

static void expect_parent(const struct mt_record *child, const struct mt_record *parent,
			  unsigned relation)
{
	cr_expect_eq(child->relation, relation, "%d.%u: relation %u, want %u", child->pid,
		     child->gen, child->relation, relation);
	cr_expect_eq(child->parent_pid, parent->pid, "%d.%u: parent %d, want %d", child->pid,
		     child->gen, child->parent_pid, parent->pid);
	cr_expect_eq(child->parent_gen, parent->gen);
}

Test(shim_lineage, fork_child_has_its_own_record, .timeout = 20)
{
	struct tree t;
	tree_run(&t, "fork", NULL, 0);
	cr_assert_eq(t.n, 2);
	const struct mt_record *p = tree_find(&t, t.run.pid, 0);
	const struct mt_record *c = tree_find(&t, (pid_t)shim_value(t.run.out, "forkchild pid"), 0);
	cr_expect_eq(p->relation, MT_REL_ROOT);
	expect_parent(c, p, MT_REL_FORK);
	cr_expect_eq(c->state, MT_STATE_EXITED);
	cr_expect_eq(p->state, MT_STATE_EXITED);
	/* The child inherited the parent's live memory, not its activity. */
	cr_expect_geq(c->heap_peak, c->heap_current);
	cr_expect_leq(c->calls[MT_CALL_MALLOC], p->calls[MT_CALL_MALLOC]);
	tree_done(&t);
}

/* The child inherits what the parent held at fork(), not what the parent
 * allocated after it (the record file is shared until the child's handler
 * runs, so the figures must come from a snapshot taken before the fork). */
Test(shim_lineage, fork_child_starts_from_the_parent_at_fork, .timeout = 20)
{
	struct tree t;
	tree_run(&t, "forkrace", NULL, 0);
	cr_assert_eq(t.n, 2);
	const struct mt_record *p = tree_find(&t, t.run.pid, 0);
	const struct mt_record *c = tree_find(&t, (pid_t)shim_value(t.run.out, "forkchild pid"), 0);
	cr_expect_geq(p->heap_peak, 50u << 20, "the parent's late 50 MB is its own");
	cr_expect_lt(c->heap_peak, 10u << 20, "child peak %llu: the parent's later malloc leaked in",
		     (unsigned long long)c->heap_peak);
	tree_done(&t);
}

Test(shim_lineage, fork_then_exec, .timeout = 20)
{
	struct tree t;
	tree_run(&t, "forkexec", NULL, 0);
	cr_assert_eq(t.n, 3);
	const struct mt_record *p = tree_find(&t, t.run.pid, 0);
	const struct mt_record *leaf = tree_mode(&t, "leaf");
	cr_expect_eq(leaf->gen, 1);
	const struct mt_record *c0 = tree_find(&t, leaf->pid, 0);
	expect_parent(c0, p, MT_REL_FORK);
	cr_expect_eq(c0->state, MT_STATE_EXECED);
	expect_parent(leaf, c0, MT_REL_EXEC);
	cr_expect_eq(leaf->state, MT_STATE_EXITED);
	cr_expect_eq(shim_value(t.run.out, "leaf pid"), (uint64_t)leaf->pid);
	tree_done(&t);
}

Test(shim_lineage, every_exec_variant_keeps_the_chain, .timeout = 20)
{
	struct tree t;
	tree_run(&t, "execs", NULL, 0);
	/* execs(0) -> 9 variants -> leaf: gens 0..10 of one pid. */
	cr_assert_eq(t.n, 11, "records: %zu\n%s%s", t.n, t.run.out, t.run.err);
	for (uint32_t g = 0; g < 11; g++) {
		const struct mt_record *r = tree_find(&t, t.run.pid, g);
		if (g == 0) {
			cr_expect_eq(r->relation, MT_REL_ROOT);
		} else {
			const struct mt_record *prev = tree_find(&t, t.run.pid, g - 1);
			expect_parent(r, prev, MT_REL_EXEC);
			cr_expect_eq(prev->state, MT_STATE_EXECED, "gen %u", g - 1);
		}
	}
	cr_expect_eq(tree_find(&t, t.run.pid, 10)->state, MT_STATE_EXITED);
	cr_expect_str_eq(shim_argv(tree_find(&t, t.run.pid, 10), 1), "leaf");
	tree_done(&t);
}

Test(shim_lineage, posix_spawn_and_spawnp, .timeout = 20)
{
	struct tree t;
	tree_run(&t, "spawn", NULL, 0);
	cr_assert_eq(t.n, 3);
	const struct mt_record *p = tree_find(&t, t.run.pid, 0);
	for (size_t i = 0; i < t.n; i++)
		if (t.recs[i].pid != p->pid) {
			expect_parent(&t.recs[i], p, MT_REL_SPAWN);
			cr_expect_eq(t.recs[i].gen, 0);
			cr_expect_str_eq(shim_argv(&t.recs[i], 1), "leaf");
			cr_expect_eq(t.recs[i].flags & MT_FLAG_LINEAGE_GUESSED, 0);
		}
	tree_done(&t);
}

/* system/popen: /bin/sh is the child (tagged), and leaf descends from it. */
static void check_shell_child(const char *mode, unsigned relation)
{
	struct tree t;
	tree_run(&t, mode, NULL, 0);
	const struct mt_record *p = tree_find(&t, t.run.pid, 0);
	const struct mt_record *leaf = tree_mode(&t, "leaf");
	const struct mt_record *sh = NULL;
	/* Walk up from leaf to the record whose parent is p. */
	const struct mt_record *cur = leaf;
	for (int hops = 0; hops < 5 && cur->parent_pid != p->pid; hops++)
		cur = tree_find(&t, cur->parent_pid, cur->parent_gen);
	sh = cur;
	expect_parent(sh, p, relation);
	cr_expect(sh->flags & MT_FLAG_LINEAGE_GUESSED);
	cr_expect_eq(p->spawn_relation, 0, "tag cleared after the call");
	tree_done(&t);
}

Test(shim_lineage, system_child_is_tagged, .timeout = 20)
{
	check_shell_child("system", MT_REL_SYSTEM);
}

Test(shim_lineage, popen_child_is_tagged, .timeout = 20)
{
	check_shell_child("popen", MT_REL_POPEN);
}

/* MEMTRACE_DEBUG=1: each image says how it got its lineage and where its
 * record went (system()'s shell: guessed, glibc spawns it past the hooks);
 * without it, not a word. */
Test(shim_lineage, debug_says_each_decision, .timeout = 20)
{
	const char *env[] = { "MEMTRACE_DEBUG=1", NULL };
	char want[PATH_MAX + 128];
	struct tree t;
	tree_run(&t, "system", env, 0);
	snprintf(want, sizeof want, "memtrace[%d]: debug: lineage: root, no traced parent\n",
		 (int)t.run.pid);
	cr_expect_not_null(strstr(t.run.err, want), "%s", t.run.err);
	snprintf(want, sizeof want, "memtrace[%d]: debug: record: %s/%d.0.mtr\n", (int)t.run.pid,
		 t.run.dir, (int)t.run.pid);
	cr_expect_not_null(strstr(t.run.err, want), "want %s in:\n%s", want, t.run.err);
	snprintf(want, sizeof want, "debug: lineage: system of %d.0, guessed from the parent's "
		 "newest record (no MEMTRACE_PARENT)\n", (int)t.run.pid);
	cr_expect_not_null(strstr(t.run.err, want), "want %s in:\n%s", want, t.run.err);
	tree_done(&t);
	tree_run(&t, "system", NULL, 0);
	cr_expect_null(strstr(t.run.err, "debug:"), "%s", t.run.err);
	tree_done(&t);
}

Test(shim_lineage, vfork_exec, .timeout = 20)
{
	struct tree t;
	tree_run(&t, "vfork", NULL, 0);
	cr_assert_eq(t.n, 2);
	const struct mt_record *p = tree_find(&t, t.run.pid, 0);
	const struct mt_record *leaf = tree_mode(&t, "leaf");
	expect_parent(leaf, p, MT_REL_VFORK);
	/* The vfork child shared p's memory but must not have marked it. */
	cr_expect_eq(p->state, MT_STATE_EXITED);
	tree_done(&t);
}

Test(shim_lineage, scrubbed_env_child_is_untraced, .timeout = 20)
{
	struct tree t;
	tree_run(&t, "envi", NULL, 0);
	cr_expect_eq(t.n, 1, "env -i child must not be traced by default");
	cr_expect_eq(t.recs[0].state, MT_STATE_EXECED);
	cr_expect_eq(t.recs[0].flags & MT_FLAG_FOLLOWED, 0);
	cr_expect_eq(shim_value(t.run.out, "leaf pid"), (uint64_t)t.run.pid);
	tree_done(&t);
}

Test(shim_lineage, scrubbed_env_child_followed, .timeout = 20)
{
	const char *env[] = { "MEMTRACE_FOLLOW=1", NULL };
	struct tree t;
	tree_run(&t, "envi", env, 0);
	cr_assert_eq(t.n, 2);
	const struct mt_record *p = tree_find(&t, t.run.pid, 0);
	const struct mt_record *c = tree_find(&t, t.run.pid, 1);
	cr_expect(p->flags & MT_FLAG_FOLLOWED);
	expect_parent(c, p, MT_REL_EXEC);
	cr_expect_str_eq(shim_argv(c, 1), "leaf");
	tree_done(&t);
}

Test(shim_lineage, threads_then_fork, .timeout = 30)
{
	struct tree t;
	tree_run(&t, "threadfork", NULL, 0);
	cr_assert_eq(t.n, 4);
	const struct mt_record *p = tree_find(&t, t.run.pid, 0);
	cr_expect(p->flags & MT_FLAG_MULTITHREADED);
	for (size_t i = 0; i < t.n; i++) {
		const struct mt_record *c = &t.recs[i];
		if (c == p)
			continue;
		expect_parent(c, p, MT_REL_FORK);
		cr_expect_eq(c->state, MT_STATE_EXITED);
		cr_expect_eq(c->flags & MT_FLAG_MULTITHREADED, 0);
		/* The child's own activity: exactly its malloc and free. */
		cr_expect_eq(c->calls[MT_CALL_MALLOC], 1);
		cr_expect_eq(c->calls[MT_CALL_FREE], 1);
	}
	tree_done(&t);
}

/* Relative MEMTRACE_DIR, then chdir("/") and every fd closed: the records
 * still land in the same directory, and the shim holds no descriptor. */
Test(shim_lineage, chdir_and_closed_fds, .timeout = 20)
{
	struct tree t;
	tree_run(&t, "chdirclose", NULL, SHIM_RELATIVE_DIR);
	cr_expect_eq(shim_value(t.run.out, "fds"), 0, "the shim keeps no fd open");
	cr_assert_eq(t.n, 3);
	const struct mt_record *p = tree_find(&t, t.run.pid, 0);
	const struct mt_record *leaf = tree_mode(&t, "leaf");
	expect_parent(leaf, tree_find(&t, leaf->pid, 0), MT_REL_EXEC);
	expect_parent(tree_find(&t, leaf->pid, 0), p, MT_REL_FORK);
	tree_done(&t);
}
