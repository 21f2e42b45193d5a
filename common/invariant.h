/* invariant.h: MT_ASSERT, the invariants a debug build checks at run time.
 *
 * `./configure --enable-debug` defines MT_DEBUG in config.h (which every
 * file gets through -include).  There MT_ASSERT(cond) evaluates cond and,
 * when it is false, writes one line
 *
 *     memtrace: invariant broken at FILE:LINE: COND
 *
 * to fd 2 and calls abort().  MT_ASSERT_MSG(cond, "why") adds " (why)".
 * The report is safe wherever either half runs, the shim's malloc hooks,
 * signal handlers, fork children and the time before the constructor
 * included: the line is built in a stack buffer and written with one raw
 * write system call (no stdio, no allocation, no lock, no interposable
 * libc wrapper); abort() is async-signal-safe.
 *
 * In a normal build MT_ASSERT(cond) compiles to nothing: cond is still
 * type-checked (its variables count as used) but never evaluated, so the
 * release hot path is what it was.  cond must therefore have no side
 * effect the program needs.
 *
 * Assert only what the code itself guarantees: a hostile or forged file, a
 * racing reader or the program's own misbehaviour must never trip one.
 * Input is validated with error returns, as before.
 */
#ifndef MEMTRACE_INVARIANT_H
#define MEMTRACE_INVARIANT_H

#if defined(MT_DEBUG) && MT_DEBUG

#include <stdlib.h>
#include <sys/syscall.h>
#include <unistd.h>

/* Appends the NUL-terminated s to buf[*o..cap), truncating. */
static inline void mt_invariant_put(char *buf, size_t cap, size_t *o, const char *s)
{
	while (s && *s && *o < cap)
		buf[(*o)++] = *s++;
}

/* Out of line and cold: the check costs the caller a test and a branch. */
static __attribute__((unused, noinline, cold, noreturn)) void
mt_invariant_fail(const char *file, int line, const char *expr, const char *why)
{
	char buf[512], num[12];
	size_t o = 0, k = sizeof num;
	unsigned v = line > 0 ? (unsigned)line : 0u;
	num[--k] = '\0';
	do {
		num[--k] = (char)('0' + v % 10u);
		v /= 10u;
	} while (v && k > 0);
	/* one line whatever the lengths: the newline has its byte kept */
	mt_invariant_put(buf, sizeof buf - 1, &o, "memtrace: invariant broken at ");
	mt_invariant_put(buf, sizeof buf - 1, &o, file);
	mt_invariant_put(buf, sizeof buf - 1, &o, ":");
	mt_invariant_put(buf, sizeof buf - 1, &o, num + k);
	mt_invariant_put(buf, sizeof buf - 1, &o, ": ");
	mt_invariant_put(buf, sizeof buf - 1, &o, expr);
	if (why) {
		mt_invariant_put(buf, sizeof buf - 1, &o, " (");
		mt_invariant_put(buf, sizeof buf - 1, &o, why);
		mt_invariant_put(buf, sizeof buf - 1, &o, ")");
	}
	buf[o++] = '\n';
	/* the raw system call: another preload may interpose write() */
	(void)syscall(SYS_write, 2, buf, o);
	abort();
}

#define MT_ASSERT(cond)                                                                  \
	(__builtin_expect(!!(cond), 1) ? (void)0                                         \
				       : mt_invariant_fail(__FILE__, __LINE__, #cond, NULL))
#define MT_ASSERT_MSG(cond, why)                                                         \
	(__builtin_expect(!!(cond), 1) ? (void)0                                         \
				       : mt_invariant_fail(__FILE__, __LINE__, #cond, (why)))

#else /* !MT_DEBUG */

/* Type-checked, never evaluated: sizeof does not evaluate its operand. */
#define MT_ASSERT(cond) ((void)sizeof(!(cond)))
#define MT_ASSERT_MSG(cond, why) ((void)sizeof(!(cond)), (void)sizeof(why))

#endif /* MT_DEBUG */

#endif /* MEMTRACE_INVARIANT_H */
