#!/usr/bin/env bash
# summarize-tests.sh LOG: turn automake's test-suite.log counters into one
# closing line, "N passed, N failed, N skipped" (TAP test points, not files).
# PASS and XFAIL count as passed; FAIL, XPASS and ERROR as failed.
set -euo pipefail
log=${1:-test-suite.log}
if [ ! -r "$log" ]; then
	echo "summarize-tests: no $log: the test run did not finish" >&2
	echo "0 passed, 1 failed"
	exit 0
fi
awk '
	/^# PASS:/  { pass += $3 }  /^# XFAIL:/ { pass += $3 }
	/^# FAIL:/  { fail += $3 }  /^# XPASS:/ { fail += $3 }
	/^# ERROR:/ { fail += $3 }  /^# SKIP:/  { skip += $3 }
	END { printf "%d passed, %d failed, %d skipped\n", pass, fail, skip }
' "$log"
