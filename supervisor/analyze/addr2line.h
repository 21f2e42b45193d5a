/* addr2line.h: function, source file and line of many addresses of one ELF
 * file, asked of binutils' addr2line (as the sanitizers ask an external
 * symbolizer), once per file with every address batched.
 *
 * `addr2line -a -f -C [-i] -e FILE` reads the addresses (hex, one a line)
 * from a memfd given as its stdin (a file, not a pipe: no writer to
 * interleave with the reader, no deadlock on full pipes) and writes, for
 * each, the address, then a function line and a "file:line" line per
 * frame, innermost first (-i: the functions inlined at that address, then
 * the one they were inlined into).  Its stderr goes to /dev/null.  It is
 * started with posix_spawn (no copy of a large memsup's page tables; an
 * exec failure is the call's own error), with memsup's signals unblocked
 * and the signals memsup ignores at their defaults, and is killed when
 * the deadline passes, whether it is still writing or has closed its
 * output and not exited.
 *
 * The tool: $MEMSUP_ADDR2LINE when set (a path, or a name looked up in
 * PATH; empty: none), else `addr2line` in PATH.
 *
 * Not thread-safe (it reaps its child by pid).  Return convention: 0, -ENOENT (no tool, or
 * it could not be executed), -ETIMEDOUT, -EPROTO (it failed, or answered
 * what was not asked), -ENOMEM, or another -errno of fork, pipe, memfd.
 */
#ifndef MEMSUP_ADDR2LINE_H
#define MEMSUP_ADDR2LINE_H

#include <stddef.h>
#include <stdint.h>

#define ADDR2LINE_ENV "MEMSUP_ADDR2LINE"
/* the most output read of one file: beyond it the tool is killed */
#define ADDR2LINE_MAX_OUTPUT (256u << 20)

struct addr2line_frame {
	const char *function;   /* NULL: "??" */
	const char *file;       /* NULL: "??" */
	uint32_t line;          /* 0: unknown */
};

struct addr2line_result {
	char *text;             /* the tool's output, split in place: owns the strings */
	struct addr2line_frame *frames;
	size_t n_frames;
	uint32_t *first, *count; /* address i's frames: frames[first[i]..+count[i]) */
	size_t n;
};

/* The tool to run into buf: 1 found, 0 none (*why says: "MEMSUP_ADDR2LINE
 * is empty", "not in PATH", ...). */
int addr2line_tool(char *buf, size_t cap, const char **why);

/* Asks `tool` about addrs[0..n) of `file` (virtual addresses of the ELF),
 * expanding inlined frames when `inlines`; gives up at deadline_ns
 * (clock.h).  On success *out holds n answers (free with addr2line_free);
 * on failure *out is empty. */
int addr2line_run(const char *tool, const char *file, const uint64_t *addrs, size_t n,
		  int inlines, uint64_t deadline_ns, struct addr2line_result *out);
void addr2line_free(struct addr2line_result *r);

/* Parses the tool's output (text, NUL-terminated, modified in place) as
 * the answers for addrs[0..n); pure, for the tests.  0 or -EPROTO /
 * -ENOMEM; out->text is not set. */
int addr2line_parse(char *text, const uint64_t *addrs, size_t n, struct addr2line_result *out);

#endif /* MEMSUP_ADDR2LINE_H */
