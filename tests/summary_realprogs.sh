#!/bin/bash
# summary_realprogs.sh: `LD_PRELOAD=libmemtrace.so cmd` prints exactly one
# summary for every real program, coreutils included (most close stdout
# and stderr before the shim's report), with stderr a pipe and a file, and
# the programs' stdout, exit status and own stderr stay what they are bare.
#
# A summary is the shim's header line ("memtrace: pid N ..." for one image,
# "memtrace: N images in ..." for a tree).  No MEMTRACE_DIR, MEMTRACE_OUT or
# MEMTRACE_QUIET: the user's first run.  Output: TAP.
# Needs MEMTRACE_SO and MT_SRCDIR (AM_TESTS_ENVIRONMENT).
set -u

: "${MEMTRACE_SO:?MEMTRACE_SO is not set}"
: "${MT_SRCDIR:?MT_SRCDIR is not set}"
if [ ! -f "$MEMTRACE_SO" ]; then
	echo "1..0 # SKIP $MEMTRACE_SO not built"
	exit 0
fi
tmp=$(mktemp -d "${TMPDIR:-/tmp}/summary_realprogs.XXXXXX") || exit 99
trap 'rm -rf "$tmp"' EXIT INT TERM
unset MEMTRACE_DIR MEMTRACE_OUT MEMTRACE_QUIET MEMTRACE_SUMMARY MEMTRACE_TREE LD_PRELOAD \
	MAKEFLAGS MFLAGS MAKELEVEL
export LC_ALL=C TMPDIR=$tmp/t
mkdir -p "$TMPDIR" "$tmp/work"
cd "$tmp/work" || exit 99

# Inputs: a text file, a directory, a small make project, a git clone.
awk 'BEGIN { for (i = 0; i < 20000; i++) printf "%06d line %d\n", (i * 7919) % 100003, i }' >text
mkdir -p dir/sub && cp text dir/a && cp text dir/sub/b
for i in 1 2 3; do printf 'int f%d(void) { return %d; }\n' "$i" "$i" >"f$i.c"; done
printf 'int f1(void), f2(void), f3(void);\nint main(void) { return f1() + f2() + f3() - 6; }\n' >m.c
printf 'prog: m.o f1.o f2.o f3.o\n\t$(CC) -o $@ $^\nclean:\n\trm -f *.o prog\n' >Makefile
git clone -q --no-hardlinks "$MT_SRCDIR" repo 2>/dev/null || rm -rf repo

cases=(
	"ls /"
	"ls -la dir"
	"cat text"
	"sort -r text"
	"grep -c 7 text"
	"tar cf - dir"
	"gzip -n -c text"
	"xz -T2 -3 -c text"
	"zstd -q -c text"
	"pigz -n -p 2 -c text"
	"sed -n 5,10p text"
	"awk '{ n += \$1 } END { print n }' text"
	"find dir -type f"
	"wc -l text"
	"cut -c1-6 text"
	"head -3 text"
	"md5sum text"
	"perl -ne '\$n++; END { print \"\$n\\n\" }' text"
	"python3 -c 'import sys; print(sum(1 for _ in open(\"text\")))'"
	"make -s clean && make -s -j2 && ./prog"
	"sh -c 'sort text | uniq | wc -l'"
	"gcc -O2 -c f1.c -o /dev/null"
	"git -C repo log --oneline -n 5"
)
have() { command -v "$1" >/dev/null 2>&1; }

summaries() { grep -cE '^memtrace: (pid |[0-9]+ images in )' "$1"; }

echo "1..$((${#cases[@]} * 2))"
n=0
for c in "${cases[@]}"; do
	prog=${c%% *}
	for how in pipe file; do
		n=$((n + 1))
		if ! have "$prog" || { [ "$prog" = git ] && [ ! -d repo ]; }; then
			echo "ok $n - $c ($how) # SKIP $prog not available"
			continue
		fi
		bash -c "$c" >"$tmp/bare.out" 2>"$tmp/bare.err"
		rc_bare=$?
		if [ "$how" = pipe ]; then
			# stderr through a pipe, stdout to a file
			LD_PRELOAD=$MEMTRACE_SO bash -c "$c" 2>&1 >"$tmp/shim.out" | cat >"$tmp/shim.err"
			rc_shim=${PIPESTATUS[0]}
		else
			LD_PRELOAD=$MEMTRACE_SO bash -c "$c" >"$tmp/shim.out" 2>"$tmp/shim.err"
			rc_shim=$?
		fi
		got=$(summaries "$tmp/shim.err")
		grep -v '^memtrace: ' "$tmp/shim.err" >"$tmp/shim.err.own"
		if [ "$rc_bare" != "$rc_shim" ]; then
			echo "not ok $n - $c ($how): exit $rc_bare bare, $rc_shim traced"
		elif ! cmp -s "$tmp/bare.out" "$tmp/shim.out"; then
			echo "not ok $n - $c ($how): stdout differs"
		elif ! cmp -s "$tmp/bare.err" "$tmp/shim.err.own"; then
			echo "not ok $n - $c ($how): the program's own stderr differs"
			diff "$tmp/bare.err" "$tmp/shim.err.own" | head -5 | sed 's/^/# /'
		elif [ "$got" != 1 ]; then
			echo "not ok $n - $c ($how): $got summaries, want 1"
			sed 's/^/# /' "$tmp/shim.err" | head -20
		else
			echo "ok $n - $c ($how)"
		fi
	done
done
left=$(find "$TMPDIR" -maxdepth 1 -name 'memtrace-tree.*' | wc -l)
[ "$left" -eq 0 ] || echo "# $left tree directories left behind in $TMPDIR" >&2
