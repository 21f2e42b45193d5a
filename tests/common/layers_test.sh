# layers_test.sh: sourced by tests/shim_layers.sh and tests/sup_layers.sh,
# which each say what they check.  layers_test SPEC MAX_CYCLE BUILT WHAT:
# scripts/layers.py over SPEC (a path under the source tree) and the
# objects of the build tree, as TAP; skipped, saying why, without python3
# or nm, or before BUILT (a path under the build tree) is built.  Needs
# MT_SRCDIR, MT_BUILDDIR.
layers_test() {
	: "${MT_SRCDIR:?MT_SRCDIR is not set}"
	: "${MT_BUILDDIR:?MT_BUILDDIR is not set}"
	for tool in python3 nm; do
		if ! command -v "$tool" >/dev/null 2>&1; then
			echo "1..0 # SKIP no $tool"
			exit 0
		fi
	done
	if [ ! -f "$MT_BUILDDIR/$3" ]; then
		echo "1..0 # SKIP $4 is not built"
		exit 0
	fi
	exec python3 "$MT_SRCDIR/scripts/layers.py" --tap --max-cycle "$2" \
		--srcdir "$MT_SRCDIR" --objdir "$MT_BUILDDIR" "$MT_SRCDIR/$1"
}
