/* keep.h: what stdout.log keeps of the command's output (--log-max).
 *
 * Bounded to `max` bytes, the log holds the first head = max - max/2 bytes
 * of the output and its last tail = max/2, in the order the relay took
 * them from the command's pipes (both streams, interleaved as they came).
 * The head is written as it comes.  The tail lives in a ring in memory
 * while the run goes on and is written at the end (keep_finish); until
 * bytes have to be left out, the ring's bytes are also written as they
 * come, so that a log of at most `max` bytes is whole and current during
 * the run.  Once more than `max` bytes have come, the log stops growing at
 * `max` bytes; keep_finish() then cuts it back to the head and appends the
 * marker line (keep_marker) and the ring.  So the log is
 *
 *   head | "\n[memsup: N bytes left out]\n" | tail      (N > 0)
 *   the whole output                                     (nothing left out)
 *
 * From a pipe (keep_from), bytes that cannot end up in the tail are
 * dropped with splice(2) into /dev/null, never copied; the head moves with
 * splice(2) into the log; only the bytes that may be in the tail are read
 * into memory.  Bytes already in memory (keep_from_buf: the transcript's
 * pty) take the same ways with write(2) and memcpy.
 *
 * KEEP_UNLIMITED keeps everything: every byte is spliced into the log.
 * Counts are per stream (0: stdout, 1: stderr): logged + left_out is what
 * was taken.  Return convention: 0 or -errno (a failed write of the log,
 * or no memory for the ring's bookkeeping).
 */
#ifndef MEMSUP_KEEP_H
#define MEMSUP_KEEP_H

#include <stddef.h>
#include <stdint.h>

#define KEEP_UNLIMITED UINT64_MAX
#define KEEP_STREAMS 2
/* The longest marker line keep_marker() writes, with its two newlines. */
#define KEEP_MARKER_MAX 64

/* A run of one stream's bytes in the ring, oldest first. */
struct keep_run {
	size_t len;
	int stream;
};

struct keep {
	uint64_t head_max, tail_max; /* KEEP_UNLIMITED: head_max, tail_max 0 */
	int log_fd;          /* stdout.log, written at its file offset; -1: not yet */
	int null_fd;         /* /dev/null, where dropped bytes go; -1: read and forget */
	uint64_t head_used;  /* bytes of the head in the log */
	char *ring;          /* tail_max bytes (NULL when tail_max is 0) */
	size_t start, len;   /* the ring's oldest byte, and how many it holds */
	uint64_t live;       /* ring bytes also written to the log as they came */
	int cut;             /* bytes were left out: the log waits for keep_finish */
	int finished;
	struct keep_run *runs; /* the ring's bytes by stream, runs[first..n_runs) */
	size_t first, n_runs, cap_runs;
	uint64_t logged[KEEP_STREAMS];   /* in the head, or in the ring now */
	uint64_t left_out[KEEP_STREAMS];
};

/* Ready to keep `max` bytes (KEEP_UNLIMITED: all).  The ring is allocated
 * here, untouched (its pages cost nothing until bytes reach them);
 * /dev/null is opened close-on-exec.  -ENOMEM when the ring cannot be had. */
int keep_init(struct keep *k, uint64_t max);
/* The log's fd, written from its current offset on (O_APPEND cleared by
 * the caller: splice(2) refuses such a target). */
void keep_set_log(struct keep *k, int log_fd);

/* Exactly n bytes of `stream`, known to be in the pipe `from` (read or
 * spliced without waiting), taken out of it into the head, the ring or
 * nowhere.  0 or -errno of the log. */
int keep_from(struct keep *k, int stream, int from, size_t n);

/* The same for n bytes already read into memory (transcript.c: what the
 * pty showed), written or copied instead of spliced. */
int keep_from_buf(struct keep *k, int stream, const char *buf, size_t n);

/* The end: when bytes were left out, the log cut back to the head, then
 * the marker and the tail.  Once; 0 or -errno of the log. */
int keep_finish(struct keep *k);

/* The marker line for `left_out` bytes into buf (at least
 * KEEP_MARKER_MAX); its length. */
size_t keep_marker(char *buf, size_t cap, uint64_t left_out);

/* Bytes of `stream` in the log (so far), and left out of it. */
uint64_t keep_logged(const struct keep *k, int stream);
uint64_t keep_left_out(const struct keep *k, int stream);

void keep_free(struct keep *k);

#endif /* MEMSUP_KEEP_H */
