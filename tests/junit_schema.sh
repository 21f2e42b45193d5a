#!/bin/bash
# junit_schema.sh: every file `memsup diff --junit` writes is JUnit that CI
# systems read: it validates, with xmllint (Debian: libxml2-utils), against
# tests/data/junit/junit-10.xsd (the Jenkins format) and ant-junit.xsd (Ant's
# report, which requires every suite attribute), and each test case is
# named by what it compared.  The runs are real: one program of a hostile
# name (a quote, '<', '&', a tab, a control character and a byte that is not
# UTF-8) at two sizes, the pass and the regression both ways, a sweep of two
# labelled runs a side, and, where memsup is given a memory cgroup, a run
# the kernel's OOM killer cut short (skipped, saying why, where memsup
# refuses --mem-max).  Output: TAP.  Needs MEMSUP, MT_PROGS, MT_SRCDIR.
set -u

: "${MEMSUP:?MEMSUP is not set}" "${MT_PROGS:?MT_PROGS is not set}" "${MT_SRCDIR:?MT_SRCDIR is not set}"
if ! command -v xmllint >/dev/null 2>&1; then
	echo "1..0 # SKIP no xmllint (Debian: libxml2-utils)"
	exit 0
fi
for f in "$MEMSUP" "$MT_PROGS/steady" "$MT_PROGS/oom_three"; do
	if [ ! -x "$f" ]; then
		echo "1..0 # SKIP $f not built"
		exit 0
	fi
done
schemas=("$MT_SRCDIR/tests/data/junit/junit-10.xsd" "$MT_SRCDIR/tests/data/junit/ant-junit.xsd")

tmp=$(mktemp -d /tmp/junit-schema.XXXXXX)
trap 'rm -rf "$tmp"' EXIT

n=0
fail=0
ok() { n=$((n + 1)); echo "ok $n - $1"; }
not_ok() {
	n=$((n + 1))
	echo "not ok $n - $1"
	[ -s "$tmp/why" ] && sed 's/^/# /' "$tmp/why" | head -n 20
	fail=1
}
skip() { n=$((n + 1)); echo "ok $n - $1 # SKIP $2"; }

# memsup -q -o DIR ARGS...: a run that must succeed; its stderr said if not.
run() {
	local dir=$1
	shift
	if ! "$MEMSUP" -q -o "$tmp/$dir" "$@" >"$tmp/why" 2>&1; then
		not_ok "memsup -o $dir $*"
		return 1
	fi
}

# memsup diff --junit FILE BASE NEW, whose status must be WANT; then FILE
# validated against each schema, and its test case names checked.
diff_junit() {
	local file=$1 want=$2 base=$3 nw=$4 rc=0
	"$MEMSUP" diff --junit "$tmp/$file" "$tmp/$base" "$tmp/$nw" >"$tmp/why" 2>&1 || rc=$?
	if [ "$rc" -ne "$want" ]; then
		not_ok "memsup diff --junit $file $base $nw: exit $rc, wanted $want"
		return
	fi
	for xsd in "${schemas[@]}"; do
		if xmllint --noout --schema "$xsd" "$tmp/$file" >"$tmp/why" 2>&1; then
			ok "$file validates against ${xsd##*/}"
		else
			not_ok "$file validates against ${xsd##*/}"
		fi
	done
	# what each case compared, by its first words; nothing else
	local odd
	odd=$(xmllint --xpath "count(//testcase[not(@name = 'oom kills' or starts-with(@name, 'oom kills [')
		or @name = 'peak_mb' or starts-with(@name, 'peak_mb [')
		or starts-with(@name, 'live heap at exit: ') or starts-with(@name, 'process ')
		or starts-with(@name, 'site '))])" "$tmp/$file" 2>"$tmp/why")
	if [ "$odd" = 0 ]; then
		ok "$file: every test case is named by what it compared"
	else
		xmllint --xpath '//testcase/@name' "$tmp/$file" >"$tmp/why" 2>&1
		not_ok "$file: $odd test cases named otherwise"
	fi
}

# a program whose name holds what XML must escape or cannot carry
weird="$tmp/we\"ird'<&>"$'\t\x01\xff'"x"
ln -s "$MT_PROGS/steady" "$weird"
if ! run base -- "$weird" 10 250 || ! run new -- "$weird" 40 250; then
	echo "1..$n"
	exit 1
fi

diff_junit pass.xml 0 base base
diff_junit regress.xml 1 base new
diff_junit back.xml 0 new base
# the hostile name is kept, each byte XML cannot hold replaced (U+FFFD)
has=$(xmllint --xpath "count(//testcase[starts-with(@name, 'process ') and contains(@name, 'we\"ird')
	and contains(@name, \"'<&>\") and contains(@name, '"$'\t'"')
	and contains(@name, '"$'\xef\xbf\xbd\xef\xbf\xbd'"x')]/failure)" "$tmp/regress.xml" 2>"$tmp/why")
if [ "$has" = 1 ]; then
	ok "regress.xml: the hostile command's failed case, its name kept"
else
	xmllint --xpath '//testcase/@name' "$tmp/regress.xml" >"$tmp/why" 2>&1
	not_ok "regress.xml: the hostile command's failed case, its name kept (found $has)"
fi

# a sweep: <testsuites>, a suite per label
mkdir -p "$tmp/sweep-base" "$tmp/sweep-new"
run sweep-base/a --meta n=1 -- "$MT_PROGS/steady" 10 100 &&
	run sweep-base/b --meta n=2 -- "$MT_PROGS/steady" 20 100 &&
	run sweep-new/a --meta n=1 -- "$MT_PROGS/steady" 10 100 &&
	run sweep-new/b --meta n=2 -- "$MT_PROGS/steady" 50 100 &&
	diff_junit sweep.xml 1 sweep-base sweep-new

# a run the OOM killer cut short, against one that fit
rc=0
"$MEMSUP" -q -o "$tmp/fit" --poll-ms 20 --mem-max 400 -- "$MT_PROGS/oom_three" "$tmp/fit.pids" 20 40 100 50 \
	>"$tmp/why" 2>&1 || rc=$?
if [ "$rc" -eq 125 ] && grep -q -- '--mem-max' "$tmp/why"; then
	skip "oom.xml validates" "memsup refused --mem-max: $(head -n 1 "$tmp/why")"
elif [ "$rc" -ne 0 ]; then
	not_ok "memsup --mem-max 400 -- oom_three: exit $rc"
else
	rc=0
	"$MEMSUP" -q -o "$tmp/oom" --poll-ms 20 --mem-max 200 -- "$MT_PROGS/oom_three" "$tmp/oom.pids" \
		20 40 100 50 >"$tmp/why" 2>&1 || rc=$?
	if [ "$rc" -ne 123 ]; then
		not_ok "memsup --mem-max 200 -- oom_three: exit $rc, wanted 123 (an OOM kill)"
	else
		diff_junit oom.xml 1 fit oom
		has=$(xmllint --xpath "count(//testcase[@name = 'oom kills']/failure)" "$tmp/oom.xml" 2>"$tmp/why")
		if [ "$has" = 1 ]; then
			ok "oom.xml: the case 'oom kills' failed"
		else
			cp "$tmp/oom.xml" "$tmp/why"
			not_ok "oom.xml: the case 'oom kills' failed (found $has)"
		fi
	fi
fi

echo "1..$n"
exit "$fail"
