/* tree.h: discovery and sampling of memsup's descendants, the engine of
 * the /proc scan backend (procscan.c).
 *
 * memsup is a child subreaper, so orphans and setsid() escapees re-parent to
 * memsup itself: the tree is "every descendant of `self`, `self` excluded".
 * Two discovery methods find it:
 *  - TREE_CHILDREN walks /proc/PID/task/TID/children from self's own tasks
 *    (needs CONFIG_PROC_CHILDREN);
 *  - TREE_SCAN lists /proc and follows ppid links.  Each update reads
 *    /proc/PID/stat only for pids that were not in the previous listing: a
 *    process cannot move into the tree later (its ancestors would have to be
 *    ours, and orphans come to us), so an old pid keeps its verdict until it
 *    vanishes from a listing.
 * Both give the same set (tests/unit/test_tree.c checks it on fixtures).
 * TREE_AUTO is the scan: it is the cheaper of the two per sample (see
 * tree_open in tree.c); the children files are walked only when asked for.
 *
 * RSS comes from /proc/PID/statm (the same figure as VmRSS, cheaper to
 * produce), through an fd held open per member and pread() at offset 0: the
 * fd names the process, not the number, so a reused pid can never be read by
 * mistake, and the path lookup is paid once.  A member that exits between
 * listing and reading is skipped, never counted as zero.
 *
 * Return convention: 0 or -errno.  Not thread-safe; one tree per caller.
 */
#ifndef MEMSUP_TREE_H
#define MEMSUP_TREE_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "contain/contain.h" /* enum tree_method, struct tree_member */

struct tree;

/* "children" or "scan" ("auto" for TREE_AUTO). */
const char *tree_method_name(enum tree_method m);

/* Which method works under `root` for `self`: TREE_CHILDREN when
 * root/self/task/self/children can be read, TREE_SCAN otherwise. */
enum tree_method tree_probe(const char *root, pid_t self);

/* Create a tree for the descendants of `self` under proc root `root` (NULL:
 * "/proc"; the string must outlive the tree).  TREE_AUTO resolves to
 * TREE_SCAN; TREE_CHILDREN where the kernel lacks the files is -ENOTSUP. */
int tree_open(struct tree **out, const char *root, pid_t self, enum tree_method m);
void tree_close(struct tree *t);

/* The method in use (never TREE_AUTO). */
enum tree_method tree_method_used(const struct tree *t);

/* Refresh membership from /proc (always lists). */
int tree_update(struct tree *t);

/* One sample: refresh when membership may have changed (a pid was allocated
 * since the last listing, per /proc/loadavg, or a member vanished), then sum
 * the RSS of every member that could be read.  *nprocs counts the members
 * that were read (gone ones are skipped). */
int tree_sample(struct tree *t, uint64_t *rss_bytes, unsigned *nprocs);

/* The members the last tree_sample() could read, with their RSS (the
 * terms of its sum), valid until the next tree_sample()/tree_close().
 * Returns how many. */
size_t tree_sampled(const struct tree *t, const struct tree_member **out);

/* Members after the last update, in no particular order.  Copies at most cap
 * pids into out and returns how many members there are. */
size_t tree_pids(const struct tree *t, pid_t *out, size_t cap);

/* Never count `pid` (memsup's own sentinel, a child memsup had before the
 * run) nor its descendants as members.  0, or -ENOSPC past
 * TREE_EXCLUDE_MAX pids. */
#define TREE_EXCLUDE_MAX 64
int tree_exclude(struct tree *t, pid_t pid);

/* A member as /proc/PID/stat named it at first sight: enough to find it
 * again, and to tell it from a later process with its number. */
struct tree_ident {
	pid_t pid;
	pid_t session;
	uint64_t start;            /* starttime, clock ticks after boot */
};

/* Bumped whenever membership changes. */
unsigned tree_generation(const struct tree *t);

/* The members' identities (at most cap into out); returns how many
 * members there are. */
size_t tree_idents(const struct tree *t, struct tree_ident *out, size_t cap);

#endif /* MEMSUP_TREE_H */
