#!/bin/bash
# docs_guarantees.sh: every test that docs/guarantees.md names exists in the
# tree, so that a promise never points at a test that was renamed or removed.
# What it recognises, in backquotes unless said otherwise:
#   `suite::name`              a Criterion Test(suite, name ...) in the C file
#                              named last before it (test_x.c), else in any
#                              of tests/unit/*.c and tests/e2e/*.c
#   `TestClass.test_method`    a unittest method of that class in tests/python/*.py
#   `fuzz_name`                a libFuzzer harness, tests/fuzz/fuzz_name.c
#   `tests/...`, `scripts/...` a file or directory of the source tree
#   test_x.c, test_x.py        (bare) tests/unit/ or tests/e2e/test_x.c,
#                              tests/python/test_x.py
# Output: TAP, one line per distinct reference.  Needs MT_SRCDIR;
# MT_GUARANTEES names another file to check (default docs/guarantees.md).
set -u

: "${MT_SRCDIR:?MT_SRCDIR is not set}"
doc=${MT_GUARANTEES:-$MT_SRCDIR/docs/guarantees.md}
if [ ! -f "$doc" ]; then
	echo "1..1"
	echo "not ok 1 - $doc does not exist"
	exit 1
fi

refs=$(
	{
		# each Criterion test with the file named last before it: file|suite::name
		awk '{
			line = $0
			while (match(line, /test_[a-z_0-9]+\.c|`[a-z_][a-z_0-9]*::[a-z_][a-z_0-9]*`/)) {
				tok = substr(line, RSTART, RLENGTH)
				line = substr(line, RSTART + RLENGTH)
				if (tok ~ /^test_/)
					file = tok
				else {
					gsub(/`/, "", tok)
					print file "|" tok
				}
			}
		}' "$doc"
		grep -o '`Test[A-Za-z0-9_]*\.test_[a-z_0-9]*`' "$doc"
		grep -o '`fuzz_[a-z_0-9]*`' "$doc"
		grep -o '`\(tests\|scripts\)/[^` ]*`' "$doc"
		grep -o '\btest_[a-z_0-9]*\.\(c\|py\)\b' "$doc"
	} | tr -d '`' | LC_ALL=C sort -u
)
if [ -z "$refs" ]; then
	echo "1..1"
	echo "not ok 1 - $doc names no test at all"
	exit 1
fi

# A Criterion test: "Test(suite, name" at the start of a line, then "," or ")",
# in the C test file $3 when one is given, else in any C test file.
criterion_has() {
	local files
	if [ -n "$3" ]; then
		files=("$(c_test_file "$3")") || return 1
	else
		files=("$MT_SRCDIR"/tests/unit/*.c "$MT_SRCDIR"/tests/e2e/*.c)
	fi
	[ -f "${files[0]}" ] &&
		grep -Eq "^Test\([[:space:]]*$1[[:space:]]*,[[:space:]]*$2[[:space:]]*[,)]" "${files[@]}"
}

# A Criterion test file by its bare name: unit tests in tests/unit/,
# end-to-end ones in tests/e2e/.  Prints its path; fails when neither has it.
c_test_file() {
	local d
	for d in unit e2e; do
		[ -f "$MT_SRCDIR/tests/$d/$1" ] && printf '%s\n' "$MT_SRCDIR/tests/$d/$1" && return 0
	done
	return 1
}

# A unittest method: "def name(" after "class Class(" and before the next class.
python_has() {
	local f
	for f in "$MT_SRCDIR"/tests/python/*.py; do
		awk -v cls="$1" -v meth="$2" '
			/^class / { in_cls = ($0 ~ "^class " cls "[(:]") }
			in_cls && $0 ~ "^[[:space:]]+def " meth "\\(" { found = 1 }
			END { exit !found }' "$f" && return 0
	done
	return 1
}

n=0
fail=0
echo "1..$(printf '%s\n' "$refs" | wc -l)"
while IFS= read -r ref; do
	n=$((n + 1))
	case $ref in
	*::*)
		file=${ref%%|*}
		test=${ref#*|}
		what="Criterion test${file:+ in $file}"
		ref=$test
		criterion_has "${test%%::*}" "${test##*::}" "$file"
		;;
	Test*.test_*)
		what="Python test"
		python_has "${ref%%.*}" "${ref#*.}"
		;;
	fuzz_*)
		what="fuzz harness"
		[ -f "$MT_SRCDIR/tests/fuzz/$ref.c" ]
		;;
	tests/* | scripts/*)
		what="file"
		[ -e "$MT_SRCDIR/$ref" ]
		;;
	test_*.c)
		what="test file"
		c_test_file "$ref" >/dev/null
		;;
	test_*.py)
		what="test file"
		[ -f "$MT_SRCDIR/tests/python/$ref" ]
		;;
	*)
		what="reference"
		false
		;;
	esac
	if [ $? -eq 0 ]; then
		echo "ok $n - $what $ref"
	else
		echo "not ok $n - $what $ref: named in ${doc##*/}, not found in the tree"
		fail=1
	fi
done <<<"$refs"
exit "$fail"
