#!/bin/sh
# realprogs.sh: real programs must behave the same under libmemtrace.so.
#
# Each case runs once bare and once with LD_PRELOAD=$MEMTRACE_SO
# (MEMTRACE_QUIET=1, MEMTRACE_DIR=<fresh dir>) and compares stdout byte for
# byte and the exit status.  It also counts the record files the shim left,
# so a case cannot pass because the preload silently did not load.
# Output: TAP.  Needs MEMTRACE_SO and MT_SRCDIR (AM_TESTS_ENVIRONMENT).
set -u

: "${MEMTRACE_SO:?MEMTRACE_SO is not set}"
: "${MT_SRCDIR:?MT_SRCDIR is not set}"
if [ ! -f "$MEMTRACE_SO" ]; then
	echo "1..0 # SKIP $MEMTRACE_SO not built"
	exit 0
fi

tmp=$(mktemp -d "${TMPDIR:-/tmp}/realprogs.XXXXXX") || exit 99
trap 'rm -rf "$tmp"' EXIT INT TERM
n=0
echo "1..8"

have() { command -v "$1" >/dev/null 2>&1; }

# check NAME MIN_RECORDS DIR CMD... : run CMD in DIR bare, then traced.
check() {
	name=$1 min=$2 dir=$3
	shift 3
	n=$((n + 1))
	rec="$tmp/rec.$n"
	mkdir -p "$rec"
	(cd "$dir" && "$@") >"$tmp/bare.$n" 2>"$tmp/bare.err.$n"
	rc_bare=$?
	(cd "$dir" && env LD_PRELOAD="$MEMTRACE_SO" MEMTRACE_QUIET=1 MEMTRACE_DIR="$rec" "$@") \
		>"$tmp/shim.$n" 2>"$tmp/shim.err.$n"
	rc_shim=$?
	records=$(find "$rec" -name '*.mtr' | wc -l)
	if [ "$rc_bare" != "$rc_shim" ]; then
		echo "not ok $n - $name: exit $rc_bare bare, $rc_shim traced"
		sed 's/^/# /' "$tmp/shim.err.$n" | head -20
	elif ! cmp -s "$tmp/bare.$n" "$tmp/shim.$n"; then
		echo "not ok $n - $name: stdout differs"
		diff "$tmp/bare.$n" "$tmp/shim.$n" | head -20 | sed 's/^/# /'
	elif [ "$records" -lt "$min" ]; then
		echo "not ok $n - $name: only $records records (want >= $min): shim not active?"
	else
		echo "ok $n - $name (exit $rc_bare, $(wc -c <"$tmp/bare.$n") bytes, $records records)"
	fi
}

skip() {
	n=$((n + 1))
	echo "ok $n - $1 # SKIP $2"
}

# 1. python3: threads and subprocess.
cat >"$tmp/py_case.py" <<'PY'
import subprocess, sys, threading
results = {}
def work(i):
    d = {k: k * i for k in range(50000)}
    results[i] = sum(d.values())
    del d
threads = [threading.Thread(target=work, args=(i,)) for i in range(4)]
for t in threads: t.start()
for t in threads: t.join()
for i in sorted(results): print(i, results[i])
print(subprocess.run([sys.executable, "-c", "print(6 * 7)"], capture_output=True, text=True).stdout.strip())
print(subprocess.check_output(["sh", "-c", "echo piped | tr a-z A-Z"], text=True).strip())
sys.exit(3)
PY
if have python3; then check "python3 threads + subprocess" 3 "$tmp" python3 "$tmp/py_case.py"
else skip "python3" "not installed"; fi

# 2. perl
if have perl; then
	check "perl hashes and sort" 1 "$tmp" perl -e 'my %h; $h{$_} = $_ * 2 for 1 .. 100000;
		my $s = 0; $s += $h{$_} for keys %h; print "$s\n";
		print join(",", sort { $b <=> $a } map { $_ * 3 } 1 .. 20), "\n"; exit 4'
else skip "perl" "not installed"; fi

# 3. gcc -O2 -c on a real source file; the objects must be identical too.
if have gcc; then
	mkdir -p "$tmp/gcc_bare" "$tmp/gcc_shim"
	check "gcc -O2 -c preload/core/maps.c" 2 "$tmp/gcc_bare" \
		gcc -O2 -I"$MT_SRCDIR/preload" -I"$MT_SRCDIR/common" -c "$MT_SRCDIR/preload/core/maps.c" -o maps.o
	# check() ran both in gcc_bare: redo the traced one elsewhere to compare.
	(cd "$tmp/gcc_shim" && env LD_PRELOAD="$MEMTRACE_SO" MEMTRACE_QUIET=1 \
		gcc -O2 -I"$MT_SRCDIR/preload" -I"$MT_SRCDIR/common" -c "$MT_SRCDIR/preload/core/maps.c" -o maps.o)
	(cd "$tmp/gcc_bare" && gcc -O2 -I"$MT_SRCDIR/preload" -I"$MT_SRCDIR/common" -c "$MT_SRCDIR/preload/core/maps.c" -o maps.o)
	n=$((n + 1))
	if cmp -s "$tmp/gcc_bare/maps.o" "$tmp/gcc_shim/maps.o"; then
		echo "ok $n - gcc object files identical"
	else
		echo "not ok $n - gcc object files differ"
	fi
else skip "gcc" "not installed"; skip "gcc objects" "not installed"; fi

# 4. make -j2 on a small generated project, then run what it built.
if have make && have cc; then
	mkdir -p "$tmp/proj"
	for i in 1 2 3 4; do
		printf 'int f%d(int x) { return x * %d + %d; }\n' "$i" "$i" "$i" >"$tmp/proj/f$i.c"
	done
	cat >"$tmp/proj/main.c" <<'C'
#include <stdio.h>
int f1(int), f2(int), f3(int), f4(int);
int main(void) { printf("%d %d %d %d\n", f1(10), f2(10), f3(10), f4(10)); return 0; }
C
	printf 'prog: main.o f1.o f2.o f3.o f4.o\n\t$(CC) -o $@ $^\n' >"$tmp/proj/Makefile"
	printf 'clean:\n\trm -f *.o prog\n' >>"$tmp/proj/Makefile"
	check "make -j2 + the program it built" 5 "$tmp/proj" \
		env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL sh -c 'make -s clean && make -s -j2 && ./prog'
else skip "make" "not installed"; fi

# 5. git on a clone of this repository (a clone: others may edit the tree).
# The clone is the test for "is the source tree a repository": rev-parse
# also says yes for an unpacked tarball that sits inside some other checkout
# (make distcheck in a clone), and git clone of that says no.
if have git && git clone -q --no-hardlinks "$MT_SRCDIR" "$tmp/repo" 2>/dev/null; then
	check "git log --stat -n 20; git status" 2 "$tmp/repo" \
		sh -c 'git log --stat -n 20 && git status && git status --porcelain'
else skip "git" "no git or no repository"; fi

# 6. sort of a large generated file.
awk 'BEGIN { for (i = 0; i < 200000; i++) printf "%08d %s\n", (i * 7919) % 1000003, i }' \
	>"$tmp/big.txt"
check "sort of 200000 lines" 1 "$tmp" sort -k1,1 -k2,2n "$tmp/big.txt"

# 7. sh -c pipelines with a non-zero exit.
check "sh -c pipelines" 4 "$tmp" sh -c \
	'seq 1 20000 | awk "{ s += \$1 } END { print s }" | tr 0-9 a-j; ls / | sort -r | head -3; echo done; exit 3'
