#!/usr/bin/env bash
# fuzz-long.sh: long libFuzzer runs of every harness of tests/fuzz/, not in CI
# (CI runs each for 20 s through scripts/extra-checks.sh).
#
#   bench/fuzz-long.sh [--seconds N] [--build-dir DIR] [harness...]
#
# Runs scripts/fuzz.sh once per harness (default: every tests/fuzz/fuzz_*.c,
# one after the other, at nice 19) for N seconds each (default 600) and prints one
# Markdown table row per harness for bench/RESULTS.md: executions,
# executions per second, coverage (libFuzzer's "cov" edges and "ft"
# features), the corpus it ended with (files and bytes; it started from the
# committed seeds), its peak RSS and the findings.  A finding's input stays in
# DIR/artifacts/<harness>/; fuzz.sh prints how to replay it.  Once fixed, copy
# it to tests/fuzz/crashers/<harness>-<what> so that every CI run replays it.
#
# Exit status: that of the worst fuzz.sh run (0 no finding, 1 a finding,
# 2 build failure or no clang).
set -uo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
# the options are fuzz.sh's, parsed by the same code
# shellcheck source=scripts/fuzz-options.sh
. "$top/scripts/fuzz-options.sh"
me=fuzz-long.sh
seconds=600
build=${TMPDIR:-/tmp}/memtrace-fuzz-long-$(id -u)
fuzz_options "$@"
if ((${#harnesses[@]} == 0)); then # every harness there is
	for f in "$top"/tests/fuzz/fuzz_*.c; do
		h=${f##*/}
		harnesses+=("${h%.c}")
	done
fi

worst=0
rows=()
for h in "${harnesses[@]}"; do
	echo "# $h: ${seconds}s (started $(date -u +%H:%M:%S))"
	"$top/scripts/fuzz.sh" --seconds "$seconds" --build-dir "$build" "$h" \
		| sed 's/^/#   /'
	rc=${PIPESTATUS[0]}
	((rc > worst)) && worst=$rc
	log=$build/$h.log
	# The last status line ("#N DONE cov: C ft: F corp: ..." or the last
	# pulse before a crash) and libFuzzer's final stats.
	last=$(grep -E '^#[0-9]+[[:space:]]+(DONE|pulse|NEW|REDUCE|INITED)' "$log" | tail -1)
	execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
	rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -1)
	rss=$(sed -n 's/^stat::peak_rss_mb: *//p' "$log" | tail -1)
	cov=$(sed -n 's/.* cov: \([0-9]*\).*/\1/p' <<<"$last")
	ft=$(sed -n 's/.* ft: \([0-9]*\).*/\1/p' <<<"$last")
	files=$(find "$build/corpus/$h" -type f | wc -l)
	bytes=$(du -sb "$build/corpus/$h" | cut -f1)
	seeds=$(find "$top/tests/fuzz/corpus/$h" -type f | wc -l)
	found=$(find "$build/artifacts/$h" -type f | wc -l)
	case $rc in
	0) verdict="none" ;;
	1) verdict="$found input(s), see $build/artifacts/$h" ;;
	*) verdict="build failed (exit $rc)" ;;
	esac
	rows+=("| $h | ${seconds} | ${execs:-?} | ${rate:-?} | ${cov:-?} | ${ft:-?} | $seeds -> $files ($bytes B) | ${rss:-?} | $verdict |")
done

echo
echo "| harness | s | execs | exec/s | cov | ft | corpus files (bytes) | peak RSS MB | findings |"
echo "|---|---|---|---|---|---|---|---|---|"
printf '%s\n' "${rows[@]}"
exit $worst
