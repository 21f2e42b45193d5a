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
. "${MT_SRCDIR:?MT_SRCDIR is not set}/tests/common/layers_test.sh"
layers_test supervisor/LAYERS 8 supervisor/libmemsup.a memsup
