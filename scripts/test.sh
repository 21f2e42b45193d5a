#!/usr/bin/env bash
# test.sh: build what is needed, run the whole test suite (`make check`), and
# end with one total line, "N passed, N failed, N skipped", whatever happened.
# The suite runs inside a pids-limited cgroup (scripts/pids-guard.sh), so
# that no test can fill the machine's process table, and whatever a test
# leaves running is killed at the end.
set -uo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"

if ! scripts/setup.sh; then
	echo "test.sh: the build failed; no test ran" >&2
	echo "0 passed, 1 failed"
	exit 1
fi
rm -f test-suite.log
scripts/pids-guard.sh -- make -j"$(nproc)" check
rc=$?
# What each failure said, ahead of the closing line (CI shows a log's head
# and tail): automake copies a failing test's whole log into test-suite.log;
# its "not ok" lines and what follows each (Criterion's indented block of
# assertions; python's "#" traceback after the FAIL line), at most 60 lines.
if [ "$rc" -ne 0 ] && [ -r test-suite.log ]; then
	awk '/^not ok/ { keep = 1; print; next }
	     keep && (/^[ #]/ || /^(FAIL|ERROR|XPASS):/) { print; next }
	     { keep = 0 }' test-suite.log | cut -c1-400 | head -60
fi
scripts/summarize-tests.sh test-suite.log
exit "$rc"
