/* version.h: the version string memsup reports and records. */
#ifndef MEMSUP_VERSION_H
#define MEMSUP_VERSION_H

/* "memtrace X.Y.Z", from configure's AC_INIT. Never NULL. */
const char *memsup_version(void);

#endif
