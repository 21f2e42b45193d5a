#!/usr/bin/env bash
# extra-checks.sh: the checks CI runs beside the test suite, slow enough
# that the README's test command leaves them out.  Run after scripts/test.sh
# (it installs the packages and builds in the tree).
#
#   sanitizers  a second build, in a copy of the sources, with
#               ./configure --enable-sanitizers --enable-debug (ASan +
#               UBSan on memsup and the Criterion tests, and every MT_ASSERT of
#               common/invariant.h checked, the shim's too), whose
#               `make check` must pass whole
#   valgrind    memsup under memcheck on runs that end in each way (normal
#               exit, RSS budget kill, escaper clean-up, start failure) and
#               with each --output mode:
#               no error, no definite or indirect leak
#   distcheck   `make distcheck`: the tarball builds and passes from scratch
#   fuzz        scripts/fuzz.sh: each libFuzzer harness of tests/fuzz/ (the
#               /proc parsers, the record reader, JSON escaping, the command
#               line, the ELF symbol reader, the shim's maps parser, the
#               stacks file reader, a JIT's perf map) for 20 s
#               on its seed corpus: no crash, no sanitizer report, no broken
#               invariant
#   install     tests/install_paths.sh: after a configure with another
#               --prefix in a built tree, the installed memsup traces and the
#               installed memsup.py imports (it builds a copy: minutes)
#   allocators  tests/shim_fork_allocators.sh with 20 runs a case (the
#               suite runs 2): fork while threads allocate under jemalloc,
#               tcmalloc and mimalloc, preloaded both ways and linked
#   thorough    `make check-thorough`: the tests that repeat a run (fork
#               bombs, the sampler's shares, the spike, SIGTERM moments,
#               real programs in rounds) as many times as a rare failure
#               needs, and Slurm's one-minute --time case
#               (MT_THOROUGH=1, tests/common/test_repeat.h)
#   vm          tests/vm/run.sh: memsup in real kernels (Debian 12 under
#               qemu, pure cgroup v2 and cgroup v1 only), every guest case
#               passing; skipped, saying why, without qemu or the package
#               registry.  Its TAP is kept as "# " lines (the closing
#               total counts this check once)
#
# One "ok N - name" / "not ok N - name" line per check (a check that cannot
# run here: "ok N - name # SKIP why"), then one closing line "N passed,
# N failed, N skipped".  Exit status 1 if any check failed.
set -uo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
only=${1:-all}
# Everything below (the sanitizer suite, distcheck's suite) runs in a
# pids-limited cgroup of its own, as scripts/test.sh's suite does.
if [ -z "${MEMTRACE_EXTRA_GUARDED:-}" ]; then
	export MEMTRACE_EXTRA_GUARDED=1
	exec scripts/pids-guard.sh -- "$0" "$@"
fi

passed=0 failed=0 skipped=0 n=0
report() { # name status
	n=$((n + 1))
	if [ "$2" -eq 77 ]; then
		skipped=$((skipped + 1)); echo "ok $n - $1 # SKIP $skip_why"
	elif [ "$2" -eq 0 ]; then
		passed=$((passed + 1)); echo "ok $n - $1"
	else
		failed=$((failed + 1)); echo "not ok $n - $1"
	fi
}

check_sanitizers() {
	local dir=/tmp/memtrace-asan.$$ rc=0
	rm -rf "$dir" && mkdir -p "$dir/src" || return 1
	# A copy of what git knows (tracked, plus new files not ignored): the
	# source tree itself is configured in place, so no VPATH build from it.
	git ls-files -z --cached --others --exclude-standard \
		| xargs -0 cp --parents -t "$dir/src" || return 1
	(
		cd "$dir/src" &&
		autoreconf -fi &&
		./configure --quiet --enable-sanitizers --enable-debug &&
		make -j"$(nproc)" check
	) >"$dir/check.log" 2>&1 || rc=1
	echo "# sanitizers: $(scripts/summarize-tests.sh "$dir/src/test-suite.log")"
	if [ $rc -ne 0 ]; then # the failing tests, or the end of a failed build
		grep -E '^(FAIL|ERROR):' "$dir/check.log" | head -20 | sed 's/^/# /'
		grep -qE '^(FAIL|ERROR):' "$dir/check.log" || tail -20 "$dir/check.log" | sed 's/^/# /'
		# and what each failing test said: a rare failure is seen once
		local t
		for t in $(grep -E '^FAIL:' "$dir/check.log" | awk '{print $2}' | sort -u | head -3); do
			[ -f "$dir/src/$t.log" ] && grep -vE '^(ok|PASS:) ' "$dir/src/$t.log" \
				| tail -25 | sed 's/^/#   /'
		done
	fi
	rm -rf "$dir"
	return $rc
}

# valgrind_run EXPECTED_STATUS memsup-arguments...
valgrind_run() {
	local want=$1 out rc
	shift
	out=$(mktemp -d /tmp/memtrace-vg.XXXXXX) || return 1
	rmdir "$out"
	valgrind -q --leak-check=full --show-leak-kinds=definite,indirect \
		--errors-for-leak-kinds=definite,indirect --error-exitcode=99 \
		--trace-children=no supervisor/memsup-dynamic -q -o "$out" "$@" \
		>/dev/null 2>"$out.vg"
	rc=$?
	if [ "$rc" -ne "$want" ]; then
		echo "# valgrind: memsup $* exited $rc, expected $want"
		sed 's/^/#   /' "$out.vg" | head -30
		rm -rf "$out" "$out.vg"
		return 1
	fi
	rm -rf "$out" "$out.vg"
}

# memsup-dynamic: memsup linked against the shared C library (Makefile.am),
# since memcheck replaces malloc only there: under it the static-pie memsup
# would show no heap, and no leak could fail the check.
check_valgrind() {
	command -v valgrind >/dev/null || { echo "# valgrind not installed"; return 1; }
	# builds tests/progs and supervisor/memsup-dynamic
	make -j"$(nproc)" check TESTS= >/dev/null || return 1
	# the check must see memsup's heap: a run's allocations counted
	local probe
	probe=$(valgrind supervisor/memsup-dynamic --version 2>&1 | grep -o 'total heap usage: [0-9,]* allocs')
	case $probe in
	*": 0 allocs" | "") echo "# valgrind sees no heap in supervisor/memsup-dynamic: $probe"; return 1 ;;
	esac
	local p=tests/progs rc=0
	valgrind_run 0 -- "$p/forktree" 3 20 200 || rc=1
	valgrind_run 123 --rss-mb 40 -- "$p/grower" || rc=1
	valgrind_run 0 -- "$p/escaper" /tmp/memtrace-vg-escaper.$$ || rc=1
	rm -f /tmp/memtrace-vg-escaper.$$
	valgrind_run 127 -- /nonexistent/command || rc=1
	# the relay (--output tee, the default) moving 3 MB, and the other modes
	valgrind_run 0 -- "$p/chatty" 3000000 || rc=1
	valgrind_run 0 --output log -- "$p/chatty" 300000 || rc=1
	valgrind_run 0 --output inherit -- "$p/chatty" 300000 || rc=1
	return $rc
}

check_distcheck() {
	local log=/tmp/memtrace-distcheck.log
	make -j"$(nproc)" distcheck >"$log" 2>&1 && return 0
	# CI keeps only the end of what a check prints, so the end is what
	# matters: the last lines of make first, then each failing test point
	# with the assertion or error lines of its log.
	tail -12 "$log" | sed 's/^/# /'
	local t f
	for t in $(grep -E '^(FAIL|ERROR):' "$log" | awk '{print $2}' | sort -u | head -5); do
		f=$(find . -path "*/_build/*" -name "$(basename "$t").log" 2>/dev/null | head -1)
		[ -n "$f" ] || continue
		echo "#   $t:"
		grep -E '^(not ok|# .*(ssert|rror|expected|signal|timed out|FAIL))|rror:|Traceback' "$f" \
			| tail -12 | cut -c1-300 | sed 's/^/#     /'
	done
	grep -E '^(FAIL|ERROR):' "$log" | head -10 | sed 's/^/# /'
	return 1
}

check_fuzz() {
	local log=/tmp/memtrace-fuzz.$$.log
	scripts/fuzz.sh --seconds 20 >"$log" 2>&1 && { rm -f "$log"; return 0; }
	grep -vE '^(ok|#   (#|stat::))' "$log" | tail -30 | sed 's/^/# /'
	rm -f "$log"
	return 1
}

# The harness's own TAP and closing line must not reach CI's total as they
# are: every line of it becomes a "# " line here.  When it passes, its
# progress and case lines; when it fails, the boots' facts and what the
# failing cases and boots said (memsup's own summaries left out), then,
# last since CI keeps the end, the failing lines and the harness's total.
check_vm() {
	local log=/tmp/memtrace-vmcheck.$$.log rc
	tests/vm/run.sh >"$log" 2>&1
	rc=$?
	if grep -q '^1\.\.0 # SKIP' "$log"; then
		skip_why=$(sed -n 's/^1\.\.0 # SKIP //p' "$log" | head -1)
		rm -f "$log"
		return 77
	fi
	if [ $rc -eq 0 ]; then
		grep -E '^(ok|not ok) |^# vm: |^[0-9]+ passed' "$log" | sed 's/^/#   /'
	else
		# a failing case's lines, not a passing one's; each boot's facts
		awk '/^ok / { show = 0; next } /^not ok |^# (vm:|boot ) / { show = 1 }
		     show && !/^#   memsup:/' "$log" | tail -150 | cut -c1-300 | sed 's/^/#   /'
		grep -E '^not ok |^[0-9]+ passed' "$log" | sed 's/^/#   /'
	fi
	rm -f "$log"
	return $rc
}

check_install() {
	local log=/tmp/memtrace-install.$$.log rc
	MT_BUILDDIR=$top tests/install_paths.sh >"$log" 2>&1
	rc=$?
	grep -q '^not ok' "$log" && rc=1
	sed 's/^/#   /' "$log" | tail -40
	rm -f "$log"
	return $rc
}

check_allocators() {
	local log=/tmp/memtrace-alloc.$$.log rc
	MEMTRACE_SO=$top/preload/.libs/libmemtrace.so MT_PROGS=$top/tests/progs \
		FORK_ALLOC_RUNS=20 tests/shim_fork_allocators.sh >"$log" 2>&1
	rc=$?
	grep -q '^not ok' "$log" && rc=1
	sed 's/^/#   /' "$log"
	rm -f "$log"
	return $rc
}

check_thorough() {
	local log=/tmp/memtrace-thorough.$$.log rc
	make -j"$(nproc)" check-thorough >"$log" 2>&1
	rc=$?
	echo "# thorough: $(scripts/summarize-tests.sh test-suite.log)"
	grep -E '^(FAIL|ERROR):' "$log" | head -20 | sed 's/^/# /'
	[ $rc -ne 0 ] && ! grep -qE '^(FAIL|ERROR):' "$log" && tail -20 "$log" | sed 's/^/# /'
	rm -f "$log"
	return $rc
}

skip_why=
for check in sanitizers valgrind distcheck fuzz install allocators thorough vm; do
	[ "$only" = all ] || [ "$only" = "$check" ] || continue
	echo "# extra check: $check"
	"check_$check"
	report "$check" $?
done
echo "$passed passed, $failed failed, $skipped skipped"
[ "$failed" -eq 0 ]
