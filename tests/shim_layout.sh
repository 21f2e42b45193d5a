#!/bin/bash
# shim_layout.sh: the code a traced image runs at its start and end lies in
# the first 64 KB of libmemtrace.so's .text.  The kernel maps a read fault's
# 64 KB neighbourhood of a file, so start code linked past that window costs
# every traced image one page fault more (bench/start_cost.py; the
# target is 12 or fewer over bare).  Start code goes in the files that
# Makefile.am's SHIM_CORE_SOURCES lists first.
#
# callgrind says which of the shim's functions ran in three images: `true`
# with MEMTRACE_QUIET (no record file), `true` with MEMTRACE_DIR (a record
# file), and alloc_script (every allocation function, the first allocation's
# chunk probe) with an interval no allocation reaches: sampling is on, as
# by default, but the sampled path, which is not start code, never runs.
# MT_LAYOUT_WINDOW (bytes) narrows the window, to see the test fail.
# Output: TAP.  Needs MEMTRACE_SO, MT_PROGS, MT_SRCDIR.
set -u

: "${MEMTRACE_SO:?MEMTRACE_SO is not set}"
: "${MT_PROGS:?MT_PROGS is not set}"
: "${MT_SRCDIR:?MT_SRCDIR is not set}"
for tool in valgrind readelf nm python3; do
	if ! command -v "$tool" >/dev/null 2>&1; then
		echo "1..0 # SKIP no $tool"
		exit 0
	fi
done
if grep -qs '^#define MT_DEBUG 1' "${MT_BUILDDIR:-.}/config.h"; then
	echo "1..0 # SKIP a debug build (--enable-debug): its assertions make start code longer; the layout is the release build's"
	exit 0
fi
if [ ! -f "$MEMTRACE_SO" ]; then
	echo "1..0 # SKIP $MEMTRACE_SO not built"
	exit 0
fi

work=$(mktemp -d "${TMPDIR:-/tmp}/memtrace-layout.XXXXXX") || exit 1
trap 'rm -rf "$work"' EXIT
window=${MT_LAYOUT_WINDOW:-65536}
never=1099511627776 # 1 TiB between samples: none is taken

echo "1..3"
fail=0
n=0
check() {
	local what=$1
	shift
	n=$((n + 1))
	rm -f "$work"/cg.* && mkdir -p "$work/dir" || exit 1
	# env execs the command in the same process: one callgrind file
	if ! valgrind -q --tool=callgrind --trace-children=yes \
		--callgrind-out-file="$work/cg.%p" \
		env LD_PRELOAD="$MEMTRACE_SO" "$@" >"$work/out" 2>"$work/err"; then
		echo "not ok $n - $what: valgrind failed: $(head -c 300 "$work/err")"
		fail=1
		return
	fi
	local files=("$work"/cg.*)
	if [ "${#files[@]}" -ne 1 ]; then
		echo "not ok $n - $what: ${#files[@]} callgrind files, expected 1"
		fail=1
		return
	fi
	local verdict
	verdict=$(python3 "$MT_SRCDIR/tests/py/shim_layout.py" "$MEMTRACE_SO" "${files[0]}" "$window")
	local rc=$?
	if [ "$rc" -eq 0 ]; then
		echo "ok $n - $what: $(tail -n 1 <<<"$verdict") (past: ends beyond the first $window bytes of .text)"
	else
		echo "not ok $n - $what:"
		sed 's/^/#   /' <<<"$verdict"
		fail=1
	fi
}

check "true, MEMTRACE_QUIET" MEMTRACE_QUIET=1 /bin/true
check "true, MEMTRACE_DIR" MEMTRACE_DIR="$work/dir" /bin/true
check "alloc_script, MEMTRACE_DIR, sampling on" \
	MEMTRACE_DIR="$work/dir" MEMTRACE_SAMPLE_BYTES=$never "$MT_PROGS/alloc_script"
exit "$fail"
