#!/bin/sh
# sup_layers.sh: memsup's folders are its call order.  scripts/layers.py
# reads supervisor/LAYERS (base, contain, stdio, collect, analyze, evidence,
# view, then the top), resolves every undefined symbol of libmemsup.a's
# objects to the object that defines it (nm) and every #include "..." to
# its header, and fails on an edge from a file to one of a higher layer, or
# on a call cycle larger than the largest there is (8 files: contain.c and
# its backends).  So a stage that reaches above itself (contain/ reading
# /proc through collect/, a writer calling a view) fails here.  Output: TAP.
# Needs MT_SRCDIR, MT_BUILDDIR (the objects of libmemsup.a).
: "${MT_SRCDIR:?MT_SRCDIR is not set}"
: "${MT_BUILDDIR:?MT_BUILDDIR is not set}"
for tool in python3 nm; do
	if ! command -v "$tool" >/dev/null 2>&1; then
		echo "1..0 # SKIP no $tool"
		exit 0
	fi
done
if [ ! -f "$MT_BUILDDIR/supervisor/libmemsup.a" ]; then
	echo "1..0 # SKIP memsup is not built"
	exit 0
fi
exec python3 "$MT_SRCDIR/scripts/layers.py" --tap --max-cycle 8 --srcdir "$MT_SRCDIR" \
	--objdir "$MT_BUILDDIR" "$MT_SRCDIR/supervisor/LAYERS"
