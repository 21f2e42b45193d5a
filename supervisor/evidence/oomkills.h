/* oomkills.h: the run record's "oom" key read back -- the OOM kills of the
 * tree, each with its victim and the limit that fired (man/memsup.1,
 * RECORD KEYS) -- for memsup report, memsup diff and timeline.svg alike,
 * so that the three say the same of one record.  scripts/memsup.py's
 * read_oom is its Python twin: the same rules, the same messages.
 *
 * Pure: it reads a parsed resources.json (jsonr.h), no I/O.  Every key of
 * the contract is checked for its type, nested ones too; a key that is
 * absent reads as null (a memsup before the key, or one that grew a key
 * later), a key of the wrong type makes the whole "oom" unreadable, with a
 * message naming it.  Nothing of a forged list is half-used.
 *
 * Return convention: 0 or -errno.
 */
#ifndef MEMSUP_OOMKILLS_H
#define MEMSUP_OOMKILLS_H

#include <stddef.h>
#include <stdint.h>

#include "contain/oomlimit.h" /* enum oom_by, oomlimit_by_name: the writer's */

struct jsonr_value;

/* The limit.by a name gives, by the writer's own table (oomlimit_by_name);
 * OOM_BY_UNKNOWN for NULL and for a name it does not have (a newer
 * memsup's). */
enum oom_by oomkills_by_parse(const char *name);

/* One kill as the record lists it: what the readers show of it. */
struct oomkills_kill {
	double at_s;               /* the sample that saw it; NAN: absent */
	long long pid;             /* the victim; < 0: null (inferred, no candidate) */
	char *comm;                /* NULL: null; any bytes but NUL (owned) */
	double rss_mb;             /* NAN: null */
	enum oom_by by;
	char *cgroup;              /* the cgroup whose limit fired; NULL: null (owned) */
	double limit_mb;           /* NAN: null */
};

/* The record's OOM kills. */
struct oomkills {
	int known;                 /* 0: memsup could not see OOM kills ("oom"
				      null: no memory cgroup, no kernel log),
				      or a record without "oom" and without a
				      numeric "oom_kills" */
	uint64_t count;            /* known: the kernel's count ("oom_kills"),
				      or the kills memsup saw when more are:
				      those listed and "oom_unlisted" */
	struct oomkills_kill *v;   /* the listed ones, in the record's order (owned) */
	size_t n;
};

/* record's "oom", "oom_kills" and "oom_unlisted" into *out (freed with
 * oomkills_free, also after an error).  0; -EINVAL when "oom" or a key inside it has the
 * wrong type, err (errlen may be 0) naming it: "\"oom\"[1].victim: not
 * an object or null"; -ENOMEM.  On an error *out is empty, not known. */
int oomkills_read(const struct jsonr_value *record, struct oomkills *out, char *err, size_t errlen);
void oomkills_free(struct oomkills *k);

/* The victim for people, NUL-terminated, cut to fit len: "pid 4242
 * 'python'", "pid 4242" (no comm) or "an unidentified process" (no pid).
 * A control byte of the comm shows as '?'. */
void oomkills_victim_text(const struct oomkills_kill *k, char *buf, size_t len);
/* The limit that fired, for people: "run's cgroup, 150 MB", "a cgroup
 * above the run's (/slurm/step_0), 4000 MB", "the whole machine",
 * "unknown". */
void oomkills_limit_text(const struct oomkills_kill *k, char *buf, size_t len);

#endif /* MEMSUP_OOMKILLS_H */
