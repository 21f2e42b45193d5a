#!/bin/bash
# readme_tasks.sh: the README's "Tasks" run as a reader would type them.
# Each line of each ```sh block of that section runs, in order, with bash,
# in one fresh temporary directory, with the built memsup first on PATH (so
# `memsup` is this build's) and tests/progs there linking to the built
# workloads.  What stands for the reader's own is supplied and said: the
# installed shim's path becomes the built one, /tmp/ the temporary
# directory, a ./NAME that does not exist a stub script that exits 0, and
# `make` gets a Makefile of one trivial target.  A line is skipped, saying
# why, when it needs root or an install (sudo, make install), when a program
# it pipes into is not installed (flamegraph.pl), or when memsup says the
# machine lacks what it asks for (a memory cgroup for --mem-max).  Any other
# line that exits non-zero fails, with what it printed.
# Output: TAP, one line per README line.  Needs MEMSUP, MEMTRACE_SO,
# MT_PROGS, MT_SRCDIR.
set -u

: "${MEMSUP:?MEMSUP is not set}" "${MEMTRACE_SO:?MEMTRACE_SO is not set}"
: "${MT_PROGS:?MT_PROGS is not set}" "${MT_SRCDIR:?MT_SRCDIR is not set}"
readme=$MT_SRCDIR/README.md
for f in "$MEMSUP" "$MEMTRACE_SO" "$MT_PROGS/steady"; do
	if [ ! -e "$f" ]; then
		echo "1..0 # SKIP $f not built"
		exit 0
	fi
done

tmp=$(mktemp -d /tmp/readme-tasks.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/bin" "$tmp/work/tests"
ln -s "$MEMSUP" "$tmp/bin/memsup"
ln -s "$MT_PROGS" "$tmp/work/tests/progs"
printf 'all:\n\t@echo "a build of the test'"'"'s own"\n' >"$tmp/work/Makefile"

# The lines of the ```sh blocks between "## Tasks" and the next "## ",
# continuation lines joined.
mapfile -t lines < <(awk '
	/^## / { tasks = ($0 == "## Tasks") }
	tasks && /^```sh$/ { code = 1; next }
	code && /^```/ { code = 0; next }
	code {
		if (sub(/\\$/, "")) { held = held $0; next }
		print held $0; held = ""
	}' "$readme")
if [ "${#lines[@]}" -eq 0 ]; then
	echo "1..1"
	echo "not ok 1 - no \`\`\`sh block under \"## Tasks\" in $readme"
	exit 1
fi

echo "1..${#lines[@]}"
fail=0
n=0
for line in "${lines[@]}"; do
	n=$((n + 1))
	show=${line%%  #*} # the README's trailing comment, not the command
	show=${show%"${show##*[![:space:]]}"}
	if [[ $line =~ (^|[^[:alnum:]_])sudo[[:space:]] || $line =~ make[[:space:]]+install ]]; then
		echo "ok $n - $show # SKIP needs root or an install"
		continue
	fi
	# programs piped into: each must be installed
	missing=
	rest=$line
	while [[ $rest == *"|"* ]]; do
		rest=${rest#*|}
		word=$(printf '%s\n' "$rest" | awk '{ print $1 }')
		if [ -n "$word" ] && ! command -v "$word" >/dev/null 2>&1; then
			missing=$word
			break
		fi
	done
	if [ -n "$missing" ]; then
		echo "ok $n - $show # SKIP $missing is not installed"
		continue
	fi
	cmd=${line//\/usr\/local\/lib\/memtrace\/libmemtrace.so/$MEMTRACE_SO}
	cmd=${cmd//...\/libmemtrace.so/$MEMTRACE_SO}
	cmd=${cmd//\/tmp\//$tmp\/}
	# the reader's own programs, ./NAME: a stub each, said in the log
	for word in $cmd; do
		if [[ $word =~ ^\./[[:alnum:]_-]+$ && ! -e $tmp/work/$word ]]; then
			printf '#!/bin/sh\necho "%s: a stub for the README'"'"'s own program"\n' "$word" \
				>"$tmp/work/$word"
			chmod +x "$tmp/work/$word"
		fi
	done
	rc=0
	(cd "$tmp/work" && PATH=$tmp/bin:$PATH timeout 60 bash -o pipefail -c "$cmd") \
		>"$tmp/out" 2>&1 || rc=$?
	if [ "$rc" -eq 0 ]; then
		echo "ok $n - $show"
	elif [ "$rc" -eq 125 ] && grep -q 'memory cgroup' "$tmp/out"; then
		echo "ok $n - $show # SKIP no memory cgroup here: $(grep -m1 'memory cgroup' "$tmp/out")"
	else
		echo "not ok $n - $show (exit $rc)"
		echo "# ran: $cmd"
		sed 's/^/# /' "$tmp/out" | tail -n 40
		fail=1
	fi
done
exit "$fail"
