#!/bin/sh
# shim_secure.sh: under AT_SECURE the shim takes no path from the
# environment.  Where libmemtrace.so is installed so that the loader
# preloads it into secure-execution programs (a set-user-ID file in a
# standard library directory, named in LD_PRELOAD without a slash), an
# unprivileged user must not make a setuid-root program create files in a
# directory of the user's choosing: MEMTRACE_DIR (and MEMTRACE_OUT) are
# ignored there, and MEMTRACE_DEBUG=1 says so.  Without AT_SECURE the same
# program under the same variables still writes its record there.
#
# Root only: it installs a set-user-ID copy of the shim under a unique name
# in the system library directory for the length of the test (removed at
# the end, pass or fail), makes a setuid-root copy of tests/progs/x_argdump
# and runs it as user nobody.  Output: TAP.
set -u

: "${MEMTRACE_SO:?MEMTRACE_SO is not set}" "${MT_PROGS:?MT_PROGS is not set}"
if [ ! -f "$MEMTRACE_SO" ]; then
	echo "1..0 # SKIP $MEMTRACE_SO not built"
	exit 0
fi
if [ "$(id -u)" -ne 0 ]; then
	echo "1..0 # SKIP not root: a setuid-root program and a shim the loader trusts need root"
	exit 0
fi
if ! command -v setpriv >/dev/null || ! id nobody >/dev/null 2>&1; then
	echo "1..0 # SKIP needs setpriv (util-linux) and a user nobody"
	exit 0
fi
libdir=
for d in /usr/lib/x86_64-linux-gnu /usr/lib/aarch64-linux-gnu /lib64 /usr/lib; do
	[ -d "$d" ] && { libdir=$d; break; }
done
name=libmemtrace-secure-test-$$.so
tmp=$(mktemp -d "${TMPDIR:-/tmp}/shim_secure.XXXXXX") || exit 99
trap 'rm -rf "$tmp"; rm -f "$libdir/$name"' EXIT INT TERM
chmod 755 "$tmp"
cp "$MEMTRACE_SO" "$libdir/$name" && chmod 4755 "$libdir/$name" || exit 99
cp "$MT_PROGS/x_argdump" "$tmp/prog" && chown root:root "$tmp/prog" && chmod 4755 "$tmp/prog" || exit 99
mkdir "$tmp/rootonly" "$tmp/out" && chmod 700 "$tmp/rootonly" "$tmp/out" || exit 99
unset LD_PRELOAD MEMTRACE_OUT MEMTRACE_PARENT MEMTRACE_TREE MEMTRACE_FOLLOW

echo "1..3"
# 1: setuid-root program run by nobody, the shim preloaded by the loader
setpriv --reuid=nobody --regid=nogroup --clear-groups --inh-caps=-all \
	env LD_PRELOAD="$name" MEMTRACE_DIR="$tmp/rootonly" \
	MEMTRACE_OUT="$tmp/out/%p.json" MEMTRACE_DEBUG=1 "$tmp/prog" \
	>"$tmp/sec.out" 2>"$tmp/sec.err"
st=$?
made=$(find "$tmp/rootonly" "$tmp/out" -mindepth 1 | wc -l)
if [ "$st" -eq 0 ] && grep -q 'euid=0' "$tmp/sec.out" &&
   grep -q 'secure-execution mode (AT_SECURE): MEMTRACE_DIR ignored' "$tmp/sec.err" &&
   [ "$made" -eq 0 ]; then
	echo "ok 1 - setuid-root program as nobody: shim loaded, said so, no file in MEMTRACE_DIR or MEMTRACE_OUT's directory"
else
	echo "not ok 1 - setuid-root program as nobody: exit $st, $made file(s) created"
	sed 's/^/#   /' "$tmp/sec.out" "$tmp/sec.err"
	find "$tmp/rootonly" "$tmp/out" -mindepth 1 | sed 's/^/#   made: /'
fi
# 2: the same without the debug line: still nothing made
setpriv --reuid=nobody --regid=nogroup --clear-groups --inh-caps=-all \
	env LD_PRELOAD="$name" MEMTRACE_DIR="$tmp/rootonly" MEMTRACE_QUIET=1 "$tmp/prog" \
	>/dev/null 2>"$tmp/sec2.err"
made=$(find "$tmp/rootonly" -mindepth 1 | wc -l)
if [ "$made" -eq 0 ]; then
	echo "ok 2 - MEMTRACE_DIR ignored without MEMTRACE_DEBUG too"
else
	echo "not ok 2 - $made file(s) created in MEMTRACE_DIR under AT_SECURE"
fi
# 3: no AT_SECURE (a plain copy, run by root): the record is written as ever
cp "$MT_PROGS/x_argdump" "$tmp/plain"
env LD_PRELOAD="$MEMTRACE_SO" MEMTRACE_DIR="$tmp/rootonly" MEMTRACE_QUIET=1 "$tmp/plain" \
	>/dev/null 2>"$tmp/plain.err"
st=$?
recs=$(find "$tmp/rootonly" -name '*.mtr' | wc -l)
if [ "$st" -eq 0 ] && [ "$recs" -ge 1 ]; then
	echo "ok 3 - without AT_SECURE the record goes to MEMTRACE_DIR as before"
else
	echo "not ok 3 - without AT_SECURE: exit $st, $recs record(s) in MEMTRACE_DIR"
	sed 's/^/#   /' "$tmp/plain.err"
fi
