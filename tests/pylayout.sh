#!/bin/bash
# pylayout.sh: the layout block of scripts/memsup.py (the offsets, magics
# and names it reads records, stacks files and fold files with) is the one
# scripts/pylayout prints from the C headers today: a header that changes
# without the Python reader fails here, with the difference shown.  `make
# update-pylayout` rewrites the block.  Output: TAP.  Needs MT_SRCDIR and
# MT_BUILDDIR.
set -u

: "${MT_SRCDIR:?MT_SRCDIR is not set}" "${MT_BUILDDIR:?MT_BUILDDIR is not set}"
echo "1..1"
want=$("$MT_BUILDDIR/scripts/pylayout") || { echo "not ok 1 - scripts/pylayout failed"; exit 1; }
have=$(sed -n '/^# -- layout:/,/^# -- end of layout --$/p' "$MT_SRCDIR/scripts/memsup.py")
if [ "$want" = "$have" ]; then
	echo "ok 1 - scripts/memsup.py's layout block is the headers' own"
	exit 0
fi
echo "not ok 1 - scripts/memsup.py's layout block differs from the headers (make update-pylayout)"
diff <(printf '%s\n' "$have") <(printf '%s\n' "$want") | sed 's/^/# /'
exit 1
