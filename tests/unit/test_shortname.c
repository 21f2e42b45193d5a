/* test_shortname.c: C++ names as a summary line shows them (shortname.h):
 * template arguments folded to "<>", operators kept, other names as they
 * are, and the room of the buffer never passed. */
#include <criterion/criterion.h>
#include <string.h>

#include "analyze/shortname.h"

static const char *fold(const char *name)
{
	static char out[512];
	size_t n = shortname_fold(name, out, sizeof out);
	cr_assert_eq(n, strlen(out));
	return out;
}

Test(shortname, templates_fold)
{
	cr_expect_str_eq(fold("std::_Rb_tree<int, std::pair<int const, std::string>, "
			      "std::_Select1st<std::pair<int const, std::string> >, std::less<int>, "
			      "std::allocator<std::pair<int const, std::string> > >::_M_get_node()"),
			 "std::_Rb_tree<>::_M_get_node()");
	cr_expect_str_eq(fold("std::vector<int, std::allocator<int> >::_M_realloc_insert<int const&>("
			      "__gnu_cxx::__normal_iterator<int*, std::vector<int, std::allocator<int> > >, "
			      "int const&)"),
			 "std::vector<>::_M_realloc_insert<>(__gnu_cxx::__normal_iterator<>, int const&)");
}

Test(shortname, operators_are_kept)
{
	/* the GNU demangler's spelling of a template operator< */
	cr_expect_str_eq(fold("bool operator< <int>(Foo<int> const&, Foo<int> const&)"),
			 "bool operator< <>(Foo<> const&, Foo<> const&)");
	cr_expect_str_eq(fold("std::ostream::operator<<(int)"), "std::ostream::operator<<(int)");
	cr_expect_str_eq(fold("Ptr<T>::operator->() const"), "Ptr<>::operator->() const");
	cr_expect_str_eq(fold("a::operator<=>(b const&)"), "a::operator<=>(b const&)");
	cr_expect_str_eq(fold("x::operator>>=(int)"), "x::operator>>=(int)");
}

Test(shortname, other_names_as_they_are)
{
	cr_expect_str_eq(fold("main"), "main");
	cr_expect_str_eq(fold("load_table"), "load_table");
	cr_expect_str_eq(fold("a < b"), "a < b", "an unbalanced '<' is copied");
	cr_expect_str_eq(fold(""), "");
	cr_expect_str_eq(fold("{lambda(int)#1}::operator()(int) const"),
			 "{lambda(int)#1}::operator()(int) const");
}

Test(shortname, never_past_the_room)
{
	char out[8];
	memset(out, 'x', sizeof out);
	size_t n = shortname_fold("std::vector<int>::push_back(int)", out, 6);
	cr_expect_eq(n, 5);
	cr_expect_str_eq(out, "std::");
	cr_expect_eq(out[6], 'x', "a byte past the room was written");
	cr_expect_eq(shortname_fold("abc", out, 0), 0);
	cr_expect_eq(shortname_fold("a<b>", out, 3), 1, "no room for \"<>\": cut before it");
	cr_expect_str_eq(out, "a");
}
