#!/bin/bash
# layers_check.sh: scripts/layers.py on a tree of its own, so that the
# checker the shim's folders rely on (tests/shim_layers.sh) and memsup's
# later are held to what they promise: a clean tree passes; a call up (a
# weak reference among them) or an include up fails, naming the edge; an
# `allow` line lets one through; a call cycle of three files in one layer
# fails, of two passes; a spec it cannot read is status 2.  Output: TAP.
# Needs MT_SRCDIR; skips without python3, nm or cc.
set -u
: "${MT_SRCDIR:?MT_SRCDIR is not set}"
for tool in python3 nm "${CC:-cc}"; do
	if ! command -v "$tool" >/dev/null 2>&1; then
		echo "1..0 # SKIP no $tool"
		exit 0
	fi
done
work=$(mktemp -d "${TMPDIR:-/tmp}/memtrace-layers.XXXXXX") || exit 1
trap 'rm -rf "$work"' EXIT
src=$work/src
obj=$work/obj
mkdir -p "$src/low" "$src/high" "$obj/low" "$obj/high"

put() { # put FILE TEXT: a source, compiled when it is a .c
	printf '%s\n' "$2" >"$src/$1"
	case $1 in
	*.c) "${CC:-cc}" -c -I"$src" -o "$obj/${1%.c}.o" "$src/$1" || exit 1 ;;
	esac
}
spec() { # spec [EXTRA LINE]
	{
		echo "objects */*.o"
		echo "incdir ."
		echo "layer low low/*"
		echo "layer high high/*"
		[ $# -gt 0 ] && echo "$1"
	} >"$work/LAYERS"
}
n=0
fail=0
expect() { # expect STATUS PATTERN WHAT
	local out rc
	n=$((n + 1))
	out=$(python3 "$MT_SRCDIR/scripts/layers.py" --srcdir "$src" --objdir "$obj" "$work/LAYERS" 2>&1)
	rc=$?
	if [ "$rc" -eq "$1" ] && grep -q -- "$2" <<<"$out"; then
		echo "ok $n - $3"
	else
		echo "not ok $n - $3: status $rc, expected $1 and a line matching '$2'"
		sed 's/^/#   /' <<<"$out"
		fail=1
	fi
}

echo "1..7"
put low/a.h 'int a_fn(void);'
put low/a.c '#include "low/a.h"
int a_fn(void) { return 1; }'
put high/b.h 'int b_fn(void);'
put high/b.c '#include "low/a.h"
#include "high/b.h"
int b_fn(void) { return a_fn(); }'
spec
expect 0 ' 0 upward, largest cycle 1 files' "a call down passes"

put low/c.c '#include "high/b.h"
int c_fn(void) { return b_fn(); }'
expect 1 'upward: low/c (low) -> high/b (high): #include "high/b.h", b_fn' "a call up fails, naming the edge"

spec "allow low/c high/b the test's own reason"
expect 0 "allowed: low/c -> high/b: the test's own reason" "an allow line lets that edge through"

rm "$src/low/c.c" "$obj/low/c.o"
put low/w.c 'extern int b_fn(void) __attribute__((weak));
int w_fn(void) { return b_fn ? b_fn() : 0; }'
spec
expect 1 'upward: low/w (low) -> high/b (high): b_fn' "a weak reference up fails too"

rm "$src/low/w.c" "$obj/low/w.o"
put low/x.c 'int y_fn(void); int x_fn(int n) { return n ? y_fn() : 0; }'
put low/y.c 'int x_fn(int); int y_fn(void) { return x_fn(0); }'
expect 0 'cycle of 2 files: low/x low/y' "a cycle of two files in one layer passes"

put low/y.c 'int z_fn(void); int y_fn(void) { return z_fn(); }'
put low/z.c 'int x_fn(int); int z_fn(void) { return x_fn(0); }'
expect 1 'largest cycle 3 files' "a cycle of three files fails"

echo "layer" >"$work/LAYERS"
expect 2 'cannot read' "a spec it cannot read is status 2"
exit "$fail"
