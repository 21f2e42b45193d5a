/* shortname.h: a C++ function's name as a person reads it in a line of
 * text: template arguments folded to "<>", as heaptrack prints them
 * ("std::_Rb_tree<>::_M_get_node()"), so that a site line shows the
 * frames the user wrote before it is cut (expanded, a line runs
 * to 400 characters of template arguments).  stacks.json keeps the whole name.
 *
 * Pure: no allocation. */
#ifndef MEMSUP_SHORTNAME_H
#define MEMSUP_SHORTNAME_H

#include <stddef.h>

/* `name` with every outermost template argument list replaced by "<>"
 * ("operator<", "operator<<", "operator<=", "operator->" and the like kept
 * as they are) into out[0..cap), NUL-terminated, cut to fit.  An
 * unbalanced '<' (a name that is not C++'s) is copied as it is.  Returns
 * the length written. */
size_t shortname_fold(const char *name, char *out, size_t cap);

#endif /* MEMSUP_SHORTNAME_H */
