/* test_memsup_answersites.c: the tree's call sites at the moment the answer
 * counts, and each block counted once.
 *
 * The summary's site lines, flame.svg and stacks.json's tree.total_peak are
 * taken at the tree's peak of heap plus mappings (callsites.h): a program
 * whose memory is all anonymous mappings has its sites there, where the
 * heap peak of malloc's heap alone found none.  tests/progs/map_three maps
 * 50/33/17% of 300 MB from three functions; it runs under a shell, as
 * most commands do, so the tree has two images and the heap peak is no
 * image's own peak.
 *
 * A fork child's stacks table starts as its parent's live set, so the
 * parent's blocks are in both images' sites while both live:
 * tests/progs/fork_inherit's parent holds 100 MB and forks 2 children that
 * each add 20 MB.  The tree's sites must sum to its own 140 MB, not
 * 340 MB, the children's copies marked inherited.  When the parent frees
 * its copy, the children still share theirs: one of them counts them.  Each estimate is judged
 * by its own standard error (stacks.json's se_bytes).  The checks are
 * python3's: tests/py/memsup_answersites.py; they get memsup's stderr (the
 * summary) in a file.
 */
#include "test_memsup_util.h"
#include "test_py.h"

/* memsup's stderr into a file of the run's directory, for the check. */
static const char *save_err(const struct sup_run *r)
{
	const char *path = sup_tmp_path(r, "stderr.txt");
	FILE *f = fopen(path, "w");
	cr_assert_not_null(f, "%s: %s", path, strerror(errno));
	fputs(r->err, f);
	cr_assert_eq(fclose(f), 0);
	return path;
}

/* The three functions' shares at the default interval, each within 4 of
 * its own standard errors of its mapped bytes; the sites' sum within 4
 * standard errors of the 300 MB and not above the tree's traced heap plus
 * mappings; the summary names all three, and flame.svg and flame.folded
 * draw them. */
Test(memsup_answersites, mmap_only_program_by_default, .timeout = 180)
{
	struct sup_run r;
	char script[PATH_MAX + 64];
	snprintf(script, sizeof script, "'%s' 300 400; exit $?", prog("map_three"));
	const char *args[] = { "--", "sh", "-c", script, NULL };
	cr_assert_eq(memsup_run(&r, args), 0, "stderr: %s", r.err);
	sup_py_check(&r, "memsup_answersites.py", "mmap_only_program_by_default", save_err(&r));
	sup_done(&r);
}

/* The parent's 100 MB once: the sites not marked inherited sum to the
 * tree's 140 MB within 4 standard errors, the children's copies of
 * parent_hold's blocks are marked inherited, and neither the summary nor
 * flame.folded counts them. */
Test(memsup_answersites, fork_children_inherited_once, .timeout = 180)
{
	struct sup_run r;
	const char *args[] = { "--", prog("fork_inherit"), "100", "20", "2", "400", NULL };
	cr_assert_eq(memsup_run(&r, args), 0, "stderr: %s", r.err);
	sup_py_check(&r, "memsup_answersites.py", "fork_children_inherited_once", save_err(&r));
	sup_done(&r);
}

/* The parent frees its 100 MB once both children have forked, and the
 * children then add 80 MB each: the parent's blocks are the children's
 * alone, shared between them.  The sites not marked inherited sum to the
 * tree's 260 MB within 4 standard errors (not 360 MB), one child counting
 * the shared blocks and the other's copy marked. */
Test(memsup_answersites, fork_parent_freed_siblings_share, .timeout = 180)
{
	struct sup_run r;
	const char *args[] = { "--", prog("fork_inherit"), "100", "80", "2", "400", "1", NULL };
	cr_assert_eq(memsup_run(&r, args), 0, "stderr: %s", r.err);
	sup_py_check(&r, "memsup_answersites.py", "fork_parent_freed_siblings_share",
		     save_err(&r));
	sup_done(&r);
}
