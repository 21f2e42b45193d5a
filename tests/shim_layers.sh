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
. "${MT_SRCDIR:?MT_SRCDIR is not set}/tests/common/layers_test.sh"
layers_test preload/LAYERS 1 preload/libmemtrace.la "the shim"
