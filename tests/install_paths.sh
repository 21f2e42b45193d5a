#!/bin/bash
# install_paths.sh: an installed memsup traces, and an installed memsup.py
# imports, after a configure with another --prefix in a built tree.
#
# A copy of the distributed sources (make distdir) is configured with
# --prefix=P1, memsup and the shim built and installed, then configured
# again with --prefix=P2 (the tree is not cleaned) and installed under
# DESTDIR.  Then:
#   1. P2's memsup, copied where no shim lies beside it, finds P2's shim by
#      the path compiled into it (the stale P1 path once left it untraced);
#   2. the DESTDIR-staged memsup finds the staged shim beside itself;
#   3. with no shim anywhere it says it was not found and where it looked,
#      never that it ran with --no-trace;
#   4. with PYTHON=/usr/bin/python3 (Debian's) and --prefix=/usr/local,
#      memsup.py goes to a directory that interpreter searches, and imports
#      from there.
# Builds memsup and the shim once (about a minute on two cores).
# Output: TAP.  Needs MT_BUILDDIR.
set -u

: "${MT_BUILDDIR:?MT_BUILDDIR is not set}"
tmp=$(mktemp -d /tmp/install-paths.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
log=$tmp/log

if ! make -s -C "$MT_BUILDDIR" distdir distdir="$tmp/src" >"$log" 2>&1; then
	echo "1..1"
	echo "not ok 1 - make distdir failed"
	sed 's/^/# /' "$log" | tail -20
	exit 1
fi
fail=0
n=0
say() { # ok|not-ok text
	n=$((n + 1))
	if [ "$1" = ok ]; then
		echo "ok $n - $2"
	else
		echo "not ok $n - $2"
		fail=1
	fi
}
# configure/make in the copy, quietly; on failure the log's end, and stop
run() {
	if ! (cd "$tmp/src" && "$@") >"$log" 2>&1; then
		say not-ok "$*"
		sed 's/^/# /' "$log" | tail -30
		exit 1
	fi
}
traced() { # evidence dir: 1 when its record says traced
	python3 -c 'import json, sys; sys.exit(0 if json.load(open(sys.argv[1] + "/resources.json"))["traced"] else 1)' "$1"
}
pieces=(install-binPROGRAMS install-pkglibLTLIBRARIES)

echo "1..6"
p1=$tmp/p1 p2=$tmp/p2
run ./configure --quiet --prefix="$p1"
run make -j2 supervisor/memsup preload/libmemtrace.la
run make "${pieces[@]}"
run ./configure --quiet --prefix="$p2"
run make -j2 supervisor/memsup preload/libmemtrace.la
run make "${pieces[@]}"

# 1: the compiled path, alone (no shim beside the copy)
mkdir "$tmp/elsewhere"
cp "$p2/bin/memsup" "$tmp/elsewhere/memsup"
"$tmp/elsewhere/memsup" -q -o "$tmp/ev1" -- true 2>"$log"
if traced "$tmp/ev1"; then
	say ok "after a configure with another --prefix, memsup finds the shim in the new prefix"
else
	say not-ok "after a configure with another --prefix, memsup finds the shim in the new prefix"
	sed 's/^/# /' "$log"
	grep -ao '/[^"]*lib/memtrace' "$tmp/elsewhere/memsup" | sort -u | sed 's/^/# compiled in: /'
fi

# 2: staged with DESTDIR: the shim beside the staged memsup
run make "${pieces[@]}" DESTDIR="$tmp/stage"
"$tmp/stage$p2/bin/memsup" -q -o "$tmp/ev2" -- true 2>"$log"
if traced "$tmp/ev2"; then
	say ok "a memsup staged with DESTDIR traces with the staged shim"
else
	say not-ok "a memsup staged with DESTDIR traces with the staged shim"
	sed 's/^/# /' "$log"
fi

# 3: no shim anywhere: said, with where memsup looked
rm -f "$p2/lib/memtrace/libmemtrace.so"
"$tmp/elsewhere/memsup" -o "$tmp/ev3" -- true >/dev/null 2>"$log"
if ! traced "$tmp/ev3" && grep -q "libmemtrace.so was not found (memsup looked .*$p2/lib/memtrace" "$log" &&
	! grep -q -- '--no-trace' "$log"; then
	say ok "without a shim memsup says it was not found and where it looked, not --no-trace"
else
	say not-ok "without a shim memsup says it was not found and where it looked, not --no-trace"
	sed 's/^/# /' "$log"
fi
if python3 -c '
import json, sys
r = json.load(open(sys.argv[1] + "/resources.json"))
u = [b for b in r["blind_spots"] if b["kind"] == "untraced"]
assert u and u[0]["untraced_why"] == "no_shim" and "--no-trace" not in u[0]["sentence"], u
' "$tmp/ev3" 2>"$log"; then
	say ok "the record's untraced finding says no_shim"
else
	say not-ok "the record's untraced finding says no_shim"
	sed 's/^/# /' "$log"
fi

# 4: memsup.py where Debian's python3 imports from
sys_py=/usr/bin/python3
if [ ! -x "$sys_py" ]; then
	say ok "memsup.py installs where $sys_py imports from # SKIP no $sys_py"
	say ok "memsup.py imports after make install # SKIP no $sys_py"
	exit "$fail"
fi
run ./configure --quiet --prefix=/usr/local PYTHON="$sys_py"
run make python/memsup.py
run make install-nodist_pythonPYTHON DESTDIR="$tmp/stage"
pydir=$(sed -n 's/^pythondir = //p' "$tmp/src/Makefile")
pydir=${pydir//\$\{prefix\}//usr/local}
if "$sys_py" -c 'import sys; sys.exit(0 if sys.argv[1] in sys.path else 1)' "$pydir" &&
	[ -f "$tmp/stage$pydir/memsup.py" ]; then
	say ok "memsup.py installs where $sys_py imports from ($pydir)"
else
	say not-ok "memsup.py installs where $sys_py imports from ($pydir)"
	"$sys_py" -c 'import sys; print("# sys.path:", sys.path)'
fi
if PYTHONPATH="$tmp/stage$pydir" "$sys_py" -c 'import memsup; memsup.measure_command' 2>"$log"; then
	say ok "memsup.py imports after make install"
else
	say not-ok "memsup.py imports after make install"
	sed 's/^/# /' "$log"
fi
exit "$fail"
