/* version.c: one place for the version string (config.h's PACKAGE_VERSION). */
#include "base/version.h"

const char *memsup_version(void)
{
	return PACKAGE_VERSION;
}
