/* files.h: the name of every file and folder memsup makes in an evidence
 * directory, spelled here and nowhere else.  The names are part of the
 * record's contract (memsup(1), FILES; scripts/memsup.py reads the same
 * ones): a writer opens EVIDENCE_RESOURCES, a reader reads it, a message
 * says "%s/" EVIDENCE_RESOURCES, and none of them spells the name. */
#ifndef MEMSUP_EVIDENCE_FILES_H
#define MEMSUP_EVIDENCE_FILES_H

/* Written at the end (and resources.json from the start, rewritten as the
 * run goes on). */
#define EVIDENCE_RESOURCES "resources.json"   /* the run record */
#define EVIDENCE_PROCESSES "processes.json"   /* one object per process image */
#define EVIDENCE_STACKS "stacks.json"         /* the sampled call sites */

/* Appended to while the run goes on, one JSON object a line. */
#define EVIDENCE_RSS "rss.jsonl"              /* the tree's RSS, sample by sample */
#define EVIDENCE_TIMELINE "timeline.jsonl"    /* each process's figures, sample by sample */
#define EVIDENCE_STDOUT_LOG "stdout.log"      /* the command's stdout and stderr */

/* Drawn at the end, and by memsup plot and memsup flame. */
#define EVIDENCE_TIMELINE_SVG "timeline.svg"
#define EVIDENCE_FLAME_SVG "flame.svg"
#define EVIDENCE_FLAME_FOLDED "flame.folded"

/* The shim's files: ended images' records and stacks files packed into one
 * file each, the rest moved into a folder at the end. */
#define EVIDENCE_RECORDS_FOLD "records.fold"
#define EVIDENCE_STACKS_FOLD "stacks.fold"
#define EVIDENCE_RECORDS_DIR "records"

/* The phase markers' file, which $MEMSUP_MARK names. */
#define EVIDENCE_MARKS "marks"

/* A file is written under its name with this suffix, then renamed over. */
#define EVIDENCE_TMP_SUFFIX ".tmp"

#endif /* MEMSUP_EVIDENCE_FILES_H */
