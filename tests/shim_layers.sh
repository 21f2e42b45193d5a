#!/bin/sh
# shim_layers.sh: the shim's folders are its call order.  scripts/layers.py
# reads preload/LAYERS (the layers, bottom first), resolves every undefined
# symbol of the shim's objects to the object that defines it (nm) and every
# #include "..." to its header, and fails on an edge from a file to one of
# a higher layer, or on a call cycle that preload/LAYERS does not list as a
# deliberate pair (--max-cycle 1: with the listed edges out, none).  So a lower
# module that names a higher one (a weak symbol as a back door included)
# fails here, not in a reviewer's reading.  Output: TAP.  Needs MT_SRCDIR,
# MT_BUILDDIR (the objects of libmtcore.la and libmemtrace.la).
: "${MT_SRCDIR:?MT_SRCDIR is not set}"
: "${MT_BUILDDIR:?MT_BUILDDIR is not set}"
for tool in python3 nm; do
	if ! command -v "$tool" >/dev/null 2>&1; then
		echo "1..0 # SKIP no $tool"
		exit 0
	fi
done
if [ ! -f "$MT_BUILDDIR/preload/libmemtrace.la" ]; then
	echo "1..0 # SKIP the shim is not built"
	exit 0
fi
exec python3 "$MT_SRCDIR/scripts/layers.py" --tap --max-cycle 1 --srcdir "$MT_SRCDIR" \
	--objdir "$MT_BUILDDIR" "$MT_SRCDIR/preload/LAYERS"
