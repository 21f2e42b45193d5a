/* image.h: one image's life, start to end, and the one place that orders
 * what each module does then: the configuration, the record's identity
 * (store.h), the standalone tree (summary.h), the lineage (lineage.h),
 * the record file (store.h), sampling (sites.h) and, at the end, what the
 * shim says (report.h).  Every way an image starts or ends (constructor;
 * exit, quick_exit, _exit, the destructor's fallback; an exec and its
 * failure) is one call here, so no other module calls both the record's
 * and the report's side.  Async-signal-safe like the modules it calls.
 */
#ifndef MEMTRACE_IMAGE_H
#define MEMTRACE_IMAGE_H

/* Constructor: the record of this image made, published, sampled. */
void image_start(int argc, char **argv);
/* The image ends with `state` (MT_STATE_EXITED, MT_STATE_UNDERSCORE_EXIT)
 * and exit_code: its record's end block, then its reports, once (only the
 * first call of the owning process does anything). */
void image_end(unsigned state, int exit_code);
/* Exec hooks: the relation to hand on (EXEC for the owner of the record,
 * VFORK for a child sharing its memory) and, for the owner, the record
 * marked EXECED with its end block filled.  Returns 1 if it marked. */
int image_exec_begin(unsigned *relation);
/* The exec returned (failed): undo image_exec_begin.  Keeps errno. */
void image_exec_end(int marked);

#endif /* MEMTRACE_IMAGE_H */
