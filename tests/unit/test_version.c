/* test_version.c: the version string is configure's. */
#include <criterion/criterion.h>
#include <string.h>
#include "base/version.h"

Test(version, matches_configure)
{
	cr_assert_str_eq(memsup_version(), PACKAGE_VERSION);
	cr_assert_neq(strlen(memsup_version()), 0);
}
