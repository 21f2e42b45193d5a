#!/bin/sh
# tests_am.sh: tests/tests.am, the Criterion tests' automake lines that
# Makefile.am includes, is what scripts/gen-tests-am.py makes of
# tests/tests.list -- so that a change to the table never goes unbuilt, nor
# a hand edit of the fragment unnoticed.  `make update-tests-am` rewrites
# it.  Reads the source tree only (distcheck's is read-only).  Output: TAP.
# Needs MT_SRCDIR; skips without python3.
: "${MT_SRCDIR:?MT_SRCDIR is not set}"
echo "1..1"
if ! command -v python3 >/dev/null 2>&1; then
	echo "ok 1 - tests/tests.am # SKIP no python3"
	exit 0
fi
out=$(python3 "$MT_SRCDIR/scripts/gen-tests-am.py" "$MT_SRCDIR/tests/tests.list" |
	diff -u "$MT_SRCDIR/tests/tests.am" - 2>&1)
if [ $? -eq 0 ]; then
	echo "ok 1 - tests/tests.am is what tests/tests.list says"
else
	echo "not ok 1 - tests/tests.am is stale: run \`make update-tests-am\` and commit it"
	printf '%s\n' "$out" | sed 's/^/# /'
	exit 1
fi
