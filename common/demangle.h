/* demangle.h: the common Itanium C++ ABI names as a person reads them in a
 * summary line, without a demangler library: the shim's standalone summary
 * (preload/report/topsites.c) calls it on its exit path.
 *
 * What it gives is the qualified name of the function as c++filt prints
 * it, with every template argument list folded to "<>" (as memsup's
 * summary folds them, supervisor/analyze/shortname.h), the parameters, the
 * return type of a function template and the cv-qualifiers dropped, and a
 * compiler clone's suffix kept as c++filt keeps it:
 *   _ZNSt6vectorIiSaIiEE17_M_default_appendEm  std::vector<>::_M_default_append
 *   _ZN5store4PoolIiE4growEm.constprop.0       store::Pool<>::grow [clone .constprop.0]
 *   _Znwm                                      operator new
 * It reads nested names, std:: and its abbreviations (St, Sa, Sb, Ss, Si,
 * So, Sd), constructors and destructors, operators, ABI tags and the
 * anonymous namespace, and skips template arguments without naming them.
 * What it does not read (a back-reference or template parameter in the
 * name itself, a local name such as a lambda's, a conversion operator,
 * expressions in template arguments) it refuses rather than guess: the
 * caller then shows the mangled name.
 *
 * Pure: no allocation, no stdio, no locale, bounded by the input's length;
 * async-signal-safe.
 */
#ifndef MEMTRACE_DEMANGLE_H
#define MEMTRACE_DEMANGLE_H

#include <stddef.h>
#include <sys/types.h>

/* The name of `mangled` (NUL-terminated, "_Z...") into out[0..cap),
 * NUL-terminated; its length, or -1 when the name is not one this reader
 * names (not mangled, a form it refuses, or no room in cap). */
ssize_t demangle_short(const char *mangled, char *out, size_t cap);

#endif /* MEMTRACE_DEMANGLE_H */
