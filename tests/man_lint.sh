#!/bin/bash
# man_lint.sh: every man page formats without a warning from groff at its
# strictest (-ww): a stray backslash in an example (`\n` read as a number
# register) or a control character in the source otherwise vanishes from
# the page without a word.  Output: TAP.  Needs MT_SRCDIR.
set -u

: "${MT_SRCDIR:?MT_SRCDIR is not set}"
if ! command -v groff >/dev/null 2>&1; then
	echo "1..0 # SKIP no groff (Debian: groff-base)"
	exit 0
fi
pages=("$MT_SRCDIR"/man/*.[1-8])
echo "1..${#pages[@]}"
n=0
fail=0
for page in "${pages[@]}"; do
	n=$((n + 1))
	out=$(LC_ALL=C groff -man -ww -z "$page" 2>&1)
	if [ -z "$out" ]; then
		echo "ok $n - ${page##*/}"
	else
		echo "not ok $n - ${page##*/}"
		printf '%s\n' "$out" | sed 's/^/# /'
		fail=1
	fi
done
exit "$fail"
