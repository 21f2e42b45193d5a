#!/usr/bin/env bash
# fuzz.sh: build the libFuzzer harnesses of tests/fuzz/ and run each for a
# while on a copy of its seed corpus.
#
#   scripts/fuzz.sh [--seconds N] [--build-dir DIR] [harness...]
#
# Harnesses: fuzz_procfs fuzz_recordfile fuzz_jsonw fuzz_jsonr fuzz_cli fuzz_elfsym
# fuzz_selfmaps fuzz_stackfile fuzz_perfmap (default: all, one after the other, at nice
# 19).  Each is built with clang
# -fsanitize=fuzzer,address,undefined from the few source files it needs and
# a private config header, so no configured tree is needed.  The committed
# corpus (tests/fuzz/corpus/<harness>/) is never grown: libFuzzer writes into
# a fresh copy under the build directory.  Exit status 0 when every harness
# ran its time without a finding, 1 when one crashed, leaked, timed out or
# broke an invariant (its input's path and the command that reproduces it are
# printed), 2 when the build failed or clang/libFuzzer is missing.
#
# A finding in code this script does not own is not fixed here: its minimized
# input goes to tests/fuzz/crashers/<harness>-<what> for the module's owner,
# and `$build/<harness> tests/fuzz/crashers/<file>` replays it (exits 0 once
# fixed).  Seeds are small hand-made cases and tests/data/proc captures.
#
#   CLANG      the compiler (default clang)
set -uo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=scripts/fuzz-options.sh
. "$top/scripts/fuzz-options.sh"
me=fuzz.sh
seconds=20
build=${TMPDIR:-/tmp}/memtrace-fuzz-$(id -u)
fuzz_options "$@"
((${#harnesses[@]})) || harnesses=(fuzz_procfs fuzz_recordfile fuzz_jsonw fuzz_jsonr fuzz_cli
	fuzz_elfsym fuzz_selfmaps fuzz_stackfile fuzz_perfmap)

# Sources each harness links (only what it needs) and its -max_len: a proc
# reader's buffer (4 KiB), a record file plus patches, twice the JSON
# writer's buffer (its flushes), an evidence file's worth of JSON, a long
# command line, a small ELF file, the shim's maps line buffer four times,
# a stacks file's header page plus patches.
sources() {
	case $1 in
	fuzz_procfs) echo supervisor/base/procfs.c ;;
	fuzz_recordfile) echo supervisor/collect/recordfile.c common/filecheck.c common/imagename.c common/decimal.c ;;
	fuzz_jsonw) echo common/jsonw.c ;;
	fuzz_jsonr) echo supervisor/evidence/jsonr.c common/jsonw.c ;;
	fuzz_cli) echo supervisor/cli.c supervisor/base/number.c supervisor/stdio/relay.c \
		supervisor/stdio/keep.c supervisor/contain/terminal.c ;;
	fuzz_elfsym) echo common/elfsym.c ;;
	fuzz_selfmaps) echo preload/base/selfmaps.c preload/base/sys.c common/decimal.c ;;
	fuzz_stackfile) echo supervisor/collect/stackfile.c supervisor/collect/recordfile.c \
		common/filecheck.c common/imagename.c common/decimal.c ;;
	fuzz_perfmap) echo supervisor/analyze/perfmap.c ;;
	*) return 1 ;;
	esac
}
max_len() {
	case $1 in
	fuzz_procfs) echo 4096 ;;
	fuzz_recordfile) echo 8448 ;;
	fuzz_jsonw) echo 8192 ;;
	fuzz_jsonr) echo 16384 ;;
	fuzz_cli) echo 2048 ;;
	fuzz_elfsym) echo 16384 ;;
	fuzz_selfmaps) echo 4096 ;;
	fuzz_stackfile) echo 8192 ;;
	fuzz_perfmap) echo 8192 ;;
	esac
}

CLANG=${CLANG:-clang}
if ! command -v "$CLANG" >/dev/null; then
	echo "fuzz.sh: $CLANG not found (scripts/setup.sh installs clang and libclang-rt-dev)" >&2
	exit 2
fi
mkdir -p "$build" || exit 2
# What configure's config.h gives the sources, for this Linux (glibc).
cat >"$build/config.h" <<'EOF'
/* config.h for the fuzz build (scripts/fuzz.sh): no configure run. */
#define _GNU_SOURCE 1
#define PACKAGE "memtrace"
#define PACKAGE_NAME "memtrace"
#define PACKAGE_VERSION "fuzz"
#define PACKAGE_STRING "memtrace fuzz"
#define HAVE_DECL_PR_SET_CHILD_SUBREAPER 1
#define HAVE_DECL_PR_SET_PDEATHSIG 1
#define HAVE_MALLOC_USABLE_SIZE 1
#define HAVE_SYS_SIGNALFD_H 1
EOF
# The warnings are configure's WARN_CFLAGS.
cflags=(-g -O1 -std=gnu11 "-fsanitize=fuzzer,address,undefined"
	-fno-sanitize-recover=undefined -fno-omit-frame-pointer
	-Wall -Wextra -Wshadow -Wpointer-arith -Wstrict-prototypes
	-Wmissing-prototypes -Wformat=2 -Wno-unused-parameter
	-Werror=missing-prototypes -Werror=format=2 -Werror=implicit-function-declaration
	-include "$build/config.h" -I"$top/supervisor" -I"$top/preload" -I"$top/common")

for h in "${harnesses[@]}"; do
	srcs=$(sources "$h") || { echo "fuzz.sh: no harness '$h'" >&2; exit 2; }
	# shellcheck disable=SC2086 # srcs is a list of paths without spaces
	if ! (cd "$top" && "$CLANG" "${cflags[@]}" -o "$build/$h" "tests/fuzz/$h.c" $srcs); then
		echo "fuzz.sh: building $h failed" >&2
		exit 2
	fi
done

failed=0
for h in "${harnesses[@]}"; do
	corpus=$build/corpus/$h art=$build/artifacts/$h
	# TMPDIR: where fuzz_cli makes its scratch directory (left behind
	# when a harness aborts, so kept out of /tmp itself).
	rm -rf "$corpus" "$art" "$build/tmp" && mkdir -p "$corpus" "$art" "$build/tmp" || exit 2
	cp "$top/tests/fuzz/corpus/$h/"* "$corpus/" 2>/dev/null
	# Every crasher once found must stay fixed: replay them first (a
	# libFuzzer binary given files runs each once and exits non-zero on a
	# finding).
	for crasher in "$top/tests/fuzz/crashers/$h"-*; do
		[ -f "$crasher" ] || continue
		if ! TMPDIR=$build/tmp "$build/$h" "$crasher" >"$build/$h.replay.log" 2>&1; then
			failed=1
			echo "not ok - $h: crasher $(basename "$crasher") crashes again"
			grep -E '^(==[0-9]+==ERROR|SUMMARY)|runtime error' "$build/$h.replay.log" \
				| head -3 | sed 's/^/#   /'
		fi
	done
	echo "# $h: ${seconds}s, -max_len=$(max_len "$h")"
	TMPDIR=$build/tmp UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
	nice -n 19 "$build/$h" -max_total_time="$seconds" -max_len="$(max_len "$h")" \
		-timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
		-artifact_prefix="$art/" "$corpus" >"$build/$h.log" 2>&1
	rc=$?
	grep -E '^(#[0-9]+.*DONE|stat::number_of_executed_units|stat::peak_rss_mb)|cov: ' \
		"$build/$h.log" | tail -3 | sed 's/^/#   /'
	found=$(find "$art" -type f | head -5)
	if [ "$rc" -ne 0 ] || [ -n "$found" ]; then
		failed=1
		echo "not ok - $h (exit $rc), log: $build/$h.log"
		grep -E '^(==[0-9]+==ERROR|SUMMARY|fuzz_[a-z]+: )|runtime error' "$build/$h.log" \
			| head -5 | sed 's/^/#   /'
		for f in $found; do
			echo "#   input: $f"
			echo "#   reproduce: $build/$h $f"
		done
	else
		echo "ok - $h"
	fi
done
exit $failed
