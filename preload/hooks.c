/* hooks.c: placeholder until the shim lands. */
#include "record.h"
