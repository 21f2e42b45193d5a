#!/bin/sh
# shim_fork_allocators.sh: a program that forks again and again while other
# threads allocate (tests/progs/fork_alloc) must never hang under
# libmemtrace.so, whatever allocator serves it: jemalloc, tcmalloc and
# mimalloc, each preloaded before and after the shim, and jemalloc linked
# into the program.  Those allocators take their own locks in fork
# handlers of their own; the shim's fork handler must hold nothing their
# threads wait for (core/maps.h).  Each case runs FORK_ALLOC_RUNS times
# (default 2 in `make check`, where each run costs about 2 s; the shim
# before the fork queue hung about one run in two, so 2 runs of the three
# jemalloc cases miss it once in 64; CI's extra checks run 20) under
# `timeout`: a run killed at the timeout is a hang and
# fails the case, and so does output or an exit status other than the
# bare run's.  An allocator that is not installed is a SKIP, saying which.
# Runs only inside scripts/pids-guard.sh (each run makes 40 processes).
#   FORK_ALLOC_RUNS     runs a case (default 2; 20 with MT_THOROUGH=1)
#   FORK_ALLOC_TIMEOUT  seconds before a run counts as hung (default 30)
set -u

: "${MEMTRACE_SO:?MEMTRACE_SO is not set}" "${MT_PROGS:?MT_PROGS is not set}"
if [ ! -f "$MEMTRACE_SO" ]; then
	echo "1..0 # SKIP $MEMTRACE_SO not built"
	exit 0
fi
if [ -z "${MEMTRACE_PIDS_GUARD:-}" ] || ! grep -q "${MEMTRACE_PIDS_GUARD##*/}" /proc/self/cgroup; then
	echo "1..0 # SKIP not inside a pids-limited cgroup: run it through scripts/pids-guard.sh"
	exit 0
fi
default_runs=2
[ -n "${MT_THOROUGH:-}" ] && [ "$MT_THOROUGH" != 0 ] && default_runs=20
runs=${FORK_ALLOC_RUNS:-$default_runs}
tmo=${FORK_ALLOC_TIMEOUT:-30}
prog=$MT_PROGS/fork_alloc
tmp=$(mktemp -d "${TMPDIR:-/tmp}/shim_fork_allocators.XXXXXX") || exit 99
trap 'rm -rf "$tmp"' EXIT INT TERM
unset LD_PRELOAD MEMTRACE_OUT MEMTRACE_PARENT MEMTRACE_TREE
export MEMTRACE_QUIET=1

# The first of the usual places that has the library, or nothing.
lib() {
	for d in /usr/lib/x86_64-linux-gnu /usr/lib/aarch64-linux-gnu /usr/lib64 /usr/lib; do
		[ -f "$d/$1" ] && { echo "$d/$1"; return; }
	done
}
je=$(lib libjemalloc.so.2)
tc=$(lib libtcmalloc_minimal.so.4)
mi=$(lib libmimalloc.so.2)

echo "1..7"
n=0
# case NAME PROGRAM PRELOAD-OF-THE-BARE-RUN PRELOAD-OF-THE-TRACED-RUN
case_() {
	n=$((n + 1))
	name=$1 p=$2 bare=$3 traced=$4
	LD_PRELOAD=$bare "$p" 4 40 >"$tmp/bare.out" 2>&1
	bst=$?
	hangs=0 bad=0 i=0
	while [ "$i" -lt "$runs" ]; do
		i=$((i + 1))
		mkdir -p "$tmp/d"
		MEMTRACE_DIR=$tmp/d LD_PRELOAD=$traced timeout -s KILL "$tmo" "$p" 4 40 \
			>"$tmp/run.out" 2>&1
		st=$?
		rm -rf "$tmp/d"
		if [ "$st" -eq 137 ]; then
			hangs=$((hangs + 1))
		elif [ "$st" -ne "$bst" ] || ! cmp -s "$tmp/bare.out" "$tmp/run.out"; then
			bad=$((bad + 1))
			[ "$bad" -eq 1 ] && { echo "# $name: exit $st (bare $bst):"; sed 's/^/#   /' "$tmp/run.out"; }
		fi
	done
	if [ "$hangs" -eq 0 ] && [ "$bad" -eq 0 ]; then
		echo "ok $n - $name: $runs runs, none hung"
	else
		echo "not ok $n - $name: $hangs of $runs runs hung (killed after ${tmo}s), $bad differed from bare"
	fi
}
skip_() {
	n=$((n + 1))
	echo "ok $n - $1 # SKIP $2"
}

# both orders of one preloaded allocator, or two skips saying what to install
preloaded() { # NAME LIBRARY-PATH LIBRARY-NAME PACKAGE
	if [ -n "$2" ]; then
		case_ "$1 before the shim" "$prog" "$2" "$2:$MEMTRACE_SO"
		case_ "$1 after the shim" "$prog" "$2" "$MEMTRACE_SO:$2"
	else
		skip_ "$1 before the shim" "$3 not installed (Debian: $4)"
		skip_ "$1 after the shim" "$3 not installed (Debian: $4)"
	fi
}

preloaded jemalloc "$je" libjemalloc.so.2 libjemalloc2
if [ -x "$MT_PROGS/fork_alloc_je" ]; then
	case_ "jemalloc linked" "$MT_PROGS/fork_alloc_je" "" "$MEMTRACE_SO"
else
	skip_ "jemalloc linked" "built without -ljemalloc (Debian: libjemalloc-dev, then ./configure)"
fi
preloaded tcmalloc "$tc" libtcmalloc_minimal.so.4 libtcmalloc-minimal4
preloaded mimalloc "$mi" libmimalloc.so.2 libmimalloc2.0
