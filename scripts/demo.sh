#!/usr/bin/env bash
# demo.sh: build what is needed, then run memsup on the bundled demo workload
# (tests/progs/demo_tree: a parent and three children holding known amounts
# at the same time) and show the summary and the evidence directory.  The
# build it runs (plain `make`) also makes the programs the README's examples
# use (tests/progs/steady), so they run from a fresh clone after this.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
scripts/setup.sh
out="demo-run-$(date +%Y%m%d-%H%M%S)-$$"
rc=0
supervisor/memsup -o "$out" -- tests/progs/demo_tree || rc=$?
echo
echo "evidence directory: $top/$out"
echo "the run as a picture: $top/$out/timeline.svg (open it in a browser)"
ls -l "$out"
exit "$rc"
